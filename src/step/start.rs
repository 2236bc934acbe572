//! How a run starts: fresh, resumed, or left as it is, decided from the checkpoint on
//! disk and the user's flags; a new run's checkpoint; what a resume continues under
//! the config found now (same phase, iteration, agent and session, within what the
//! config allows), with what changed said as run events.
//!
//! `--resume-or-start` is the entry point for job engines (a Kubernetes Job, a
//! Nomad batch job, a systemd service): any state a crash can leave behind (no
//! checkpoint yet, a `running` one, a `completed` one whose lock was never
//! released) leads to a started run, a resumed run or exit 0, never a refusal.

use crate::config::Loaded;
use crate::events::RunEvent;
use crate::outcome::RunEnd;
use crate::recovery::resume;
use crate::signal::StopCause;
use crate::state::checkpoint::{self, Checkpoint, Status};
use crate::supervise::note::{LastTool, ToolState, Trouble};
use crate::workflow::Progress;
use crate::workflow::advance::{self, UnknownPhase};

use super::record::{in_flight_tool, recovery_note};

/// What the user asked for about an existing checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResumeFlag {
    /// Neither flag: ask on a terminal, refuse otherwise.
    Ask,
    /// `--resume`
    Resume,
    /// `--no-resume`
    Fresh,
    /// `--resume-or-start`: resume an unfinished run, start one when there is none,
    /// leave a completed, paused, failed or blocked run as it is.
    ResumeOrStart,
}

/// What to do with the checkpoint found on disk.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// No checkpoint: a new run.
    Fresh,
    /// A checkpoint exists and is set aside; a new run starts.
    ArchiveThenFresh,
    /// Continue the checkpoint's run.
    Resume,
    /// Nothing to resume (`--resume` without an unfinished run).
    NothingToResume,
    /// Ask the user (terminal) or refuse (no terminal).
    Ask,
    /// `--resume-or-start` found a run that is over or waits for a person
    /// (completed, paused, failed, blocked): leave it as it is and exit with its code.
    Settled,
}

pub(crate) fn decide(existing: Option<&Checkpoint>, flag: ResumeFlag) -> Start {
    match (existing, flag) {
        (None, ResumeFlag::Resume) => Start::NothingToResume,
        (None, _) => Start::Fresh,
        (Some(_), ResumeFlag::Fresh) => Start::ArchiveThenFresh,
        (Some(cp), ResumeFlag::Resume) if cp.status.unfinished() => Start::Resume,
        (Some(_), ResumeFlag::Resume) => Start::NothingToResume,
        // A finished run's checkpoint is history: keep it, start anew.
        (Some(cp), ResumeFlag::Ask) if cp.status == Status::Completed => Start::ArchiveThenFresh,
        (Some(_), ResumeFlag::Ask) => Start::Ask,
        (Some(cp), ResumeFlag::ResumeOrStart) => match cp.status {
            // Unfinished without anyone's decision: a crash, a restart, a wait.
            Status::Running | Status::Waiting | Status::Interrupted => Start::Resume,
            // Done, or stopped on purpose: a job engine restarting ralph must not
            // undo a person's pause or retry what a cap ended.
            Status::Completed | Status::Paused | Status::Failed | Status::Blocked => Start::Settled,
        },
    }
}

/// An answer to the question on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Flag(ResumeFlag),
    /// Leave everything as it is and exit 0: the user decided, nothing failed.
    Quit,
}

/// The answer to the question on a terminal; `None` when it is not one.
pub(crate) fn parse_answer(line: &str) -> Option<Answer> {
    match line.trim().to_ascii_lowercase().as_str() {
        "" | "r" | "resume" | "y" | "yes" => Some(Answer::Flag(ResumeFlag::Resume)),
        "n" | "new" | "fresh" => Some(Answer::Flag(ResumeFlag::Fresh)),
        "q" | "quit" => Some(Answer::Quit),
        _ => None,
    }
}

/// A new run at `now` by ralph `pid`: at the first phase, or at `from` reusing the
/// earlier phases' results the last run left (those `has_artifact` finds).
pub(crate) fn fresh(
    loaded: &Loaded,
    prompt_checksum: &str,
    from: Option<&str>,
    has_artifact: impl Fn(&str) -> bool,
    now: jiff::Timestamp,
    pid: u32,
) -> Result<Checkpoint, UnknownPhase> {
    let progress = match from {
        Some(name) => advance::start_at(&loaded.phases, loaded.repeat, name, has_artifact)?,
        None => {
            let mut progress = Progress::new(loaded.phases.first().map_or("", |p| p.name.as_str()));
            advance::fit_pass(&mut progress.position, 1, loaded.repeat);
            progress
        }
    };
    let run_id = format!("{}-{pid}", now.strftime("%Y%m%dT%H%M%SZ"));
    Ok(Checkpoint {
        config_checksum: loaded.checksum.clone(),
        prompt_checksum: prompt_checksum.to_string(),
        ..blank(run_id, progress, loaded.path.display().to_string(), now)
    })
}

/// The checkpoint of run `run_id` before anything happened in it: at `progress`,
/// begun `now` with the config at `config_path` (its checksums are left empty).
pub(crate) fn blank(run_id: String, progress: Progress, config_path: String, now: jiff::Timestamp) -> Checkpoint {
    Checkpoint {
        version: checkpoint::VERSION,
        seq: 0,
        run_id,
        status: Status::Running,
        clean_stop: false,
        stop_cause: None,
        stop_reason: None,
        stopped_by: None,
        stop_sender: None,
        progress,
        in_flight: None,
        last_error: None,
        usage: Default::default(),
        phase_usage: Default::default(),
        elapsed_secs: 0.0,
        config_path,
        config_checksum: String::new(),
        prompt_checksum: String::new(),
        started_at: now,
        updated_at: now,
        git: None,
        agent_checkpoint: None,
        fleet_evictions: 0,
    }
}

/// The merge queue sent a fleet task back (docs/fleet.md): its eviction `number`,
/// with `text` (the conflict or the check's output, and what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Eviction<'a> {
    pub number: u32,
    pub text: &'a str,
}

/// An eviction the task's completed run has not taken yet reopens it: one more
/// iteration of its last phase, in the same run and (when its agent can resume) the
/// same session, with fresh budgets and the eviction as its recovery note; the run
/// is then resumed like any unfinished one. `None` (nothing changed) for a run that
/// is not completed, has taken this eviction already, or whose phase the config no
/// longer has.
pub(crate) fn reopen(cp: &mut Checkpoint, loaded: &Loaded, eviction: &Eviction<'_>) -> Option<RunEvent> {
    if cp.status != Status::Completed || cp.fleet_evictions >= eviction.number {
        return None;
    }
    let pos = cp.progress.position.clone();
    let phase = loaded.phases.get(pos.phase).filter(|p| p.name == pos.phase_name)?;
    let agent = phase.chain.get(pos.agent_index).or(phase.chain.first())?.clone();
    let progress = &mut cp.progress;
    progress.start_iteration();
    progress.renew_budgets();
    (progress.position.iteration, progress.position.cycle) = (pos.iteration + 1, 1);
    let resumable = loaded.config.agents.get(&agent).is_some_and(crate::config::AgentConfig::can_resume);
    progress.resume_session = progress.sessions.get(&agent).cloned().filter(|_| resumable);
    progress.recovery_note = Some(eviction.text.to_string());
    (cp.status, cp.clean_stop, cp.stop_reason, cp.stop_cause) = (Status::Running, false, None, None);
    cp.fleet_evictions = eviction.number;
    let iteration = progress.position.iteration;
    Some(RunEvent::FleetReopened { eviction: eviction.number, phase: phase.name.clone(), iteration, agent })
}

/// Why a checkpoint cannot be resumed under the config found now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The config no longer has the checkpoint's phase (the message says what to do).
    PhaseGone(String),
    /// `--from` names no phase of the workflow.
    From(UnknownPhase),
}

/// Continues `cp` under the current config and goal: same phase, iteration, agent and
/// session. Returns it with what a person should hear (what changed, a move with
/// `--from`, where it continues).
pub(crate) fn resume(
    mut cp: Checkpoint,
    loaded: &Loaded,
    goal: &str,
    prompt_checksum: &str,
    from: Option<&str>,
) -> Result<(Checkpoint, Vec<RunEvent>), Refused> {
    // An attempt still in flight means ralph ended without recording it (a crash,
    // kill -9, a power cut): it continues its session.
    let in_flight = cp.in_flight.take();
    if let Some(session) = in_flight.as_ref().and_then(|f| f.session.clone()) {
        cp.progress.resume_session = Some(session);
    }
    let plan = plan(&cp, loaded, prompt_checksum);
    let mut told: Vec<RunEvent> =
        plan.changes.iter().map(|change| RunEvent::ResumeChange { change: change.clone() }).collect();
    let pos = &mut cp.progress.position;
    let index = plan.phase.ok_or_else(|| {
        Refused::PhaseGone(format!(
            "the checkpoint stands in phase {}, which {} no longer has; restore that phase or run `ralph --no-resume`",
            pos.phase_name,
            loaded.path.display()
        ))
    })?;
    (pos.phase, pos.agent_index) = (index, plan.agent_index);
    if plan.agent_changed {
        cp.progress.counters.agent_failures = 0;
    }
    if !plan.keep_session {
        // Another agent (or kind) would not know the session: a fresh one starts.
        cp.progress.resume_session = None;
    }
    // The pass continues exactly, within what the (maybe changed) config allows.
    let pos = &mut cp.progress.position;
    let pass = pos.pass;
    advance::fit_pass(pos, pass, loaded.repeat);
    if matches!(cp.status, Status::Failed | Status::Blocked) {
        // The user resumes a stopped run after fixing something: the iteration gets
        // a fresh budget; the run's totals are kept.
        cp.progress.renew_budgets();
    }
    // The attempt ralph lost track of is told that the last tool call it started has
    // an unknown outcome. This replaces any older note: the crash is the latest thing
    // that happened to the iteration.
    if let Some(in_flight) = in_flight {
        let tool = in_flight.tool.map(|t| LastTool { state: ToolState::StartedNoResult, ..in_flight_tool(&t) });
        cp.progress.recovery_note = Some(recovery_note(&cp.progress, &loaded.phases, goal, Trouble::Interrupted, tool));
    }
    if let Some(name) = from {
        let old = cp.progress.position.phase_name.clone();
        advance::move_to(&mut cp.progress, &loaded.phases, loaded.repeat, name).map_err(Refused::From)?;
        told.push(RunEvent::RunMoved { from: old, to: name.to_string() });
    }
    let pos = &cp.progress.position;
    told.push(RunEvent::Resuming {
        run_id: cp.run_id.clone(),
        status: cp.status,
        phase: pos.phase_name.clone(),
        pass: pos.pass,
        passes: pos.passes,
        iteration: pos.iteration,
        agent_number: pos.agent_index + 1,
        agent: pos.chain.get(pos.agent_index).map(|a| a.name.clone()),
        session: cp.progress.resume_session.clone(),
    });
    (cp.status, cp.clean_stop, cp.stop_cause, cp.stop_reason) = (Status::Running, false, None, None);
    cp.stopped_by = None;
    cp.config_path = loaded.path.display().to_string();
    cp.config_checksum = loaded.checksum.clone();
    cp.prompt_checksum = prompt_checksum.to_string();
    Ok((cp, told))
}

/// What `--resume` of `cp` does under the config and goal found now (also shown by
/// `--inspect-checkpoint`).
pub(crate) fn plan(cp: &Checkpoint, loaded: &Loaded, prompt_checksum: &str) -> resume::Plan {
    let config_name = loaded.path.display().to_string();
    let kind = |name: &str| loaded.config.agents.get(name).map(|a| a.kind);
    resume::plan(
        resume::Recorded {
            progress: &cp.progress,
            config_checksum: &cp.config_checksum,
            goal_checksum: &cp.prompt_checksum,
        },
        resume::Current {
            config_name: &config_name,
            config_checksum: &loaded.checksum,
            goal_checksum: prompt_checksum,
            phases: &loaded.phases,
            kind: &kind,
        },
    )
}

/// The end of a run `--resume-or-start` leaves as it is, and its line.
pub(crate) fn settled(cp: &Checkpoint) -> (RunEnd, RunEvent) {
    let reason = cp.stop_reason.clone().unwrap_or_else(|| "no reason recorded".to_string());
    let end = match cp.status {
        Status::Failed => RunEnd::Failed(reason),
        Status::Blocked => RunEnd::Blocked(reason),
        Status::Paused => RunEnd::Stopped(cp.stop_cause.unwrap_or(StopCause::User)),
        _ => RunEnd::Completed,
    };
    let status = if end == RunEnd::Completed { Status::Completed } else { cp.status };
    let said = RunEvent::RunSettled {
        run_id: cp.run_id.clone(),
        status,
        reason: cp.stop_reason.clone(),
        phase: cp.progress.position.phase_name.clone(),
    };
    (end, said)
}

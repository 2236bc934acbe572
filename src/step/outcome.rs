//! The running attempt and its end: what its messages change (the session and the
//! tool call a resume must know, the escalation shown, its log's disk), then what its
//! outcome comes to: the usage counted, a stop or a forced exit carried out, the cost
//! cap, the control socket's stops, the done signal judged, a success recorded (and
//! committed), a doubt asked about, or a failure handed to [`super::failure`].

use crate::events::RunEvent;
use crate::recovery::classify::{EndedBy, Exit};
use crate::recovery::policy::Cap;
use crate::state::writes::DiskNews;
use crate::state::writes::Durability;
use crate::supervise::Detector;
use crate::supervise::completion::Claim;
use crate::supervise::note::{self, ToolState};
use crate::workflow::advance;
use crate::workflow::done::{self, Completion, Evidence, SignOff};

use super::effect::Show;
use super::input::{AttemptEnd, AttemptMsg, AttemptReport, artifact_changed};
use super::record::{intervene, signoff, tool_call};
use super::state::{Mode, RunState};
use super::{control, ending, failure, git};

/// A message of the running attempt.
pub(super) fn message(run: &mut RunState, msg: AttemptMsg) {
    match msg {
        AttemptMsg::Session(id) => {
            if let Some(in_flight) = run.cp.in_flight.as_mut() {
                in_flight.session = Some(id);
            }
            // A kill -9 from here on still resumes this session.
            run.save_with(Durability::Ordered);
        }
        // Only a start is worth a write: after a crash, the call named is one whose
        // outcome must be checked either way. The file alone: the agent's time dwarfs
        // a rename, and a snapshot per tool call would grow the journal by the
        // checkpoint's size each time.
        AttemptMsg::Tool(tool) if tool.state == ToolState::StartedNoResult => {
            let Some(in_flight) = run.cp.in_flight.as_mut() else { return };
            in_flight.tool = Some(tool_call(&tool));
            run.save_with(Durability::Unsynced);
        }
        AttemptMsg::Tool(_) => {}
        AttemptMsg::Escalating { why, sent, next } => {
            tracing::debug!(?why, sent, next = ?next.map(|(s, _)| s), "escalation step");
            run.show(Show::Escalating { agent: run.current_agent(), why, sent, next });
        }
        AttemptMsg::Disk(news) => run.emit(match news {
            DiskNews::Full { path, free } => RunEvent::DiskFull { path: path.display().to_string(), free },
            DiskNews::SpaceBack { path } => RunEvent::DiskSpaceBack { path: path.display().to_string() },
        }),
        AttemptMsg::Exited => {
            if let Mode::Attempt(running) = &mut run.mode {
                running.agent_running = false;
            }
        }
    }
}

/// The attempt is over: its usage counted, then what its end decides.
pub(super) fn ended(run: &mut RunState, report: AttemptReport) {
    let forced = matches!(std::mem::take(&mut run.mode), Mode::Attempt(running) if running.forced);
    // What a full disk held back is written before anything new starts.
    if let Some(full) = report.log_unsaved.clone() {
        run.disk_full.get_or_insert(full);
    }
    run.show(Show::Clear);
    run.touched.absorb(&report.touched);
    add_usage(run, &report);
    let agent = run.current_agent();
    match &report.end {
        _ if forced => ending::forced(run, report.output.session.clone()),
        AttemptEnd::ForceExit => ending::forced(run, report.output.session.clone()),
        AttemptEnd::Stopped(cause) => {
            // The attempt's own view of its last tool call is the freshest.
            if let (Some(in_flight), Some(tool)) = (run.cp.in_flight.as_mut(), &report.last_tool) {
                in_flight.tool = Some(tool_call(tool));
            }
            // The live line of the stop is gone: this line stays.
            run.show(Show::AgentStopped { agent, last_signal: report.last_signal });
            ending::stopped(run, *cause, report.output.session.clone());
        }
        AttemptEnd::SpawnFailed(error) => failure::spawn_failed(run, &agent, error),
        AttemptEnd::Exited { ended_by: EndedBy::Ralph(Detector::CostCap), .. } => {
            // The attempt was ended on the cost cap: the run stops on it.
            if let Some(found) = &report.intervention {
                intervene(run, found.detector, &found.evidence);
            }
            run.cp.in_flight = None;
            let cost = run.cp.usage.cost_usd;
            let stop = run.cap_reached().unwrap_or_else(|| Cap::Cost.stop(format!("the run has cost ${cost:.2}")));
            ending::stop(run, stop);
        }
        &AttemptEnd::Exited { exit, ended_by } => exited(run, report, exit, ended_by),
    }
}

/// Adds the attempt's cost and tokens to the run's and its phase's.
fn add_usage(run: &mut RunState, report: &AttemptReport) {
    let (phase, cp) = (run.phase().name.clone(), &mut run.cp);
    let usage = &report.output.usage;
    cp.usage.add(usage);
    cp.phase_usage.entry(phase).or_default().add(usage);
    if let Some(session) = &report.output.session {
        cp.progress.add_session_tokens(session, usage.input_tokens, usage.output_tokens);
    }
    let cost = cp.usage.cost_usd;
    run.show(Show::Cost(cost));
}

/// The agent exited (by itself, or ended by ralph's clock or a detector): the done
/// signal is judged, and the success, the question or the failure carried out.
fn exited(run: &mut RunState, report: AttemptReport, exit: Exit, ended_by: EndedBy) {
    let (agent, phase) = (run.current_agent(), run.phase().clone());
    if let Some(session) = &report.output.session {
        run.cp.progress.sessions.insert(agent.clone(), session.clone());
    }
    run.cp.in_flight = None;
    let claim = done::judge(report.output.final_message.as_deref());
    let changed = artifact_changed(&report.artifact.0, &report.artifact.1);
    let completion = completion(run, &report, exit, ended_by, &claim, changed);
    // A finished iteration is kept before the control socket's stop (`step::git`).
    if !matches!(completion, Completion::Done | Completion::Goal)
        && let Some(stop) = control::control_stop(run)
    {
        return ending::stop(run, stop);
    }
    let attempt = run.cp.progress.counters.attempts;
    tracing::debug!(
        attempt, ?exit, ?ended_by, ?claim, ?completion, done = ?phase.done,
        result_is_error = report.output.result_is_error, artifact_changed = changed, "judged the attempt"
    );
    match completion {
        Completion::Done | Completion::Goal => {
            if let Claim::Doubtful { why, .. } = &claim {
                signoff(run, SignOff::AcceptedWithDoubt, why);
            }
            let pos = &run.cp.progress.position;
            run.emit_after_save(RunEvent::AttemptSucceeded {
                attempt,
                agent,
                phase: phase.name.clone(),
                iteration: pos.iteration,
                goal: completion == Completion::Goal,
                until_complete: phase.until_complete,
                review: advance::is_review(pos.phase, run.setting.loaded.repeat),
                duration_ms: report.duration.as_millis() as u64,
                session: report.output.session.clone(),
                usage: report.output.usage.clone(),
                // An agent that crashed on its way out after its sign-off.
                exit: (exit != Exit::Code(0)).then(|| exit.describe()),
            });
            run.last_success = Some(report.output.final_message.clone().unwrap_or_default());
            git::iteration_done(run, completion, report);
        }
        Completion::Confirm => ask_to_confirm(run, &report, &claim, phase.until_complete),
        Completion::NotDone(missing) => failure::attempt_failed(run, report, exit, ended_by, claim, missing),
    }
}

/// Whether the attempt finished the iteration: the phase's done signal, judged by
/// the core on the attempt's evidence. An attempt ralph ended never did.
pub(crate) fn completion(
    run: &RunState,
    report: &AttemptReport,
    exit: Exit,
    ended_by: EndedBy,
    claim: &Claim,
    artifact_changed: bool,
) -> Completion {
    if ended_by != EndedBy::Agent {
        return Completion::NotDone("ended by ralph".into());
    }
    let agent = run.current_agent();
    let resumable = run.setting.loaded.config.agents.get(&agent).is_some_and(crate::config::AgentConfig::can_resume);
    let counters = &run.cp.progress.counters;
    let declared = run.control.declared.filter(|(attempt, _)| *attempt == counters.attempts);
    done::evaluate(
        &run.phase().done,
        &Evidence {
            exited_cleanly: exit == Exit::Code(0),
            tool_after_message: report.output.tool_after_message,
            claim,
            result_is_error: report.output.result_is_error,
            artifact_changed,
            session_known: report.output.session.is_some() && resumable,
            already_asked: counters.confirmations > 0,
            declared: declared.map(|(_, goal)| goal),
        },
    )
}

/// Resumes the agent's session with the confirmation question: no failure, no
/// budget, no backoff. The next attempt's reply is judged as usual.
fn ask_to_confirm(run: &mut RunState, report: &AttemptReport, claim: &Claim, until_complete: bool) {
    let (Some(session), Some((why, goal))) = (report.output.session.clone(), claim.doubt()) else { return };
    signoff(run, SignOff::Asked, &why);
    intervene(run, Detector::DoneConfirmation, &why.describe());
    let question = note::confirmation(&why, goal, until_complete);
    crate::recovery::policy::ask_to_confirm(&mut run.cp.progress, session, question);
    run.save();
}

//! The run's opening and the move before each attempt: the order of the checks that
//! may stop or delay it (a full disk, the run's caps, an offline pause or a
//! rate-limit reset carried over, a limited agent whose reset came, a stop asked
//! for), then the attempt itself: counted, its launch prepared,
//! recorded in flight and started.

use crate::config::{DoneSignal, OnRateLimit};
use crate::events::{self, RunEvent};
use crate::git::message;
use crate::recovery::classify::{EndedBy, Exit};
use crate::recovery::{policy, rate_limit};
use crate::secrets::redact;
use crate::signal::StopCause;
use crate::state::checkpoint::{InFlight, Status};
use crate::state::writes::Durability;
use crate::supervise::watch;
use crate::supervise::{excerpt, note};
use crate::workflow::done::Completion;
use crate::workflow::{advance, prompt};

use super::effect::{Effect, Fatal, Fleet, Launch, StartAttempt};
use super::input::{AttemptEnd, AttemptReport, Launched, SharedReset, SpawnError};
use super::state::{Committing, Mode, Online, RunState, Running};
use super::{ending, outcome, waits};

/// The run begins: its journal's opening, the first save, the background probes, and
/// on resume the commit a killed ralph left pending.
pub(super) fn start(run: &mut RunState) {
    // Set-up's lines are on the terminal already: they go to the journal only, the
    // takeover first (it is the first thing this ralph did to the run).
    if let Some(takeover) = run.opening.takeover.take() {
        run.effect(Effect::Record(takeover));
    }
    let (pos, resumed) = (&run.cp.progress.position, run.setting.resumed);
    let (run_id, pid, from) = (run.cp.run_id.clone(), run.setting.pid, run.setting.from.clone());
    let (phase, pass) = (pos.phase_name.clone(), pos.pass);
    run.emit(if resumed {
        RunEvent::RunResumed { run_id, pid, from, phase, pass }
    } else {
        RunEvent::RunStarted { run_id, pid, from, phase, pass }
    });
    for told in std::mem::take(&mut run.opening.told) {
        run.effect(Effect::Record(told));
    }
    if let Some(i) = run.opening.interrupted.take() {
        // The attempt that ran when the previous ralph died: it has no outcome line of
        // its own, and this one accounts for it once the checkpoint no longer holds
        // it in flight (else a kill right here would journal it twice).
        run.emit_after_save(RunEvent::AttemptInterrupted {
            attempt: i.attempt,
            agent: i.agent,
            session: i.session,
            started_at: Some(i.started_at.to_string()),
            signal: None,
        });
    }
    // A new run's git baseline (once: a resume keeps the first).
    if let Some(git) = run.cp.git.as_ref().filter(|_| !resumed && run.setting.git) {
        let commit = Some(run.setting.loaded.config.git.commit);
        let (top, baseline, branch, held) =
            (git.top.clone(), git.baseline.clone(), git.branch.clone(), git.held.clone());
        run.emit(RunEvent::GitBaseline { top, baseline, branch, held, commit });
    }
    run.save();
    waits::probe_in_background(run);
    resume_pending(run);
}

/// On resume: the commit a killed ralph left pending is made (unless it exists), and
/// the run carries on from the completion it recorded.
fn resume_pending(run: &mut RunState) {
    let pending = run.cp.git.as_ref().and_then(|g| g.pending.clone());
    let (Some(pending), true) = (pending, run.setting.git) else { return };
    let completion = if pending.goal { Completion::Goal } else { Completion::Done };
    run.effect(Effect::Commit { after_crash: true });
    // The attempt that finished the iteration ran in the ralph that died.
    let ended = AttemptEnd::Exited { exit: Exit::Code(0), ended_by: EndedBy::Agent };
    let report = AttemptReport::empty(ended);
    run.mode = Mode::Committing(Box::new(Committing { completion, report, after_crash: true }));
}

/// The move before the next attempt, in this order: a full disk is waited out (the
/// last good checkpoint stays on disk and nothing new starts until the current
/// state is written); the run's caps; an offline pause or a rate-limit wait that
/// survived a restart; an agent whose limit has reset takes its place again; a stop
/// that came meanwhile (`ralph stop` once its iteration ended, a signal as the last
/// attempt ended); else the attempt.
pub(super) fn next_move(run: &mut RunState) {
    if run.disk_full.is_some() {
        return ending::disk_wait(run, 0, None);
    }
    if let Some(stop) = run.cap_reached() {
        return ending::stop(run, stop);
    }
    if run.cp.progress.offline_since.is_some() {
        return waits::offline_check(run, Online::Ready);
    }
    if let Some(at) = run.cp.progress.rate_limit_until {
        return waits::rate_limit(run, at, "rate limit");
    }
    let now = run.now.unix();
    if let Some((from, to)) = rate_limit::return_after_reset(&mut run.cp.progress, &run.setting.loaded.phases, now) {
        run.emit(RunEvent::Fallback { from, to, why: "rate limit reset".to_string() });
    }
    if let Some((from, to)) = policy::skip_exhausted(&mut run.cp.progress, &run.setting.loaded.phases, now) {
        let (cycle, why) = (run.cp.progress.position.cycle, events::FalloverWhy::CoolingDown);
        run.emit(RunEvent::Fallover { from, to, cycle, why, new_cycle: false });
    }
    let asked = run.control.stop_after.is_some_and(|at| at != run.position_key()).then_some(StopCause::User);
    if let Some(cause) = asked.or(run.stopping) {
        return ending::stopped(run, cause, None);
    }
    if run.setting.task.is_some() && run.setting.loaded.config.retry.on_rate_limit == OnRateLimit::Wait {
        // A fleet task waits for a reset another task met on the same provider,
        // rather than meeting the limit itself (docs/fleet.md).
        run.effect(Effect::Fleet(Fleet::SharedReset { agent: run.current_agent() }));
        run.mode = Mode::Looking;
        return;
    }
    launch(run);
}

/// A fleet task looked for a rate-limit reset another task learned: it waits for one
/// still ahead, else the attempt starts.
pub(super) fn shared_reset(run: &mut RunState, shared: Option<SharedReset>) {
    if !matches!(run.mode, Mode::Looking) {
        return;
    }
    run.mode = Mode::Ready;
    match shared.filter(|s| s.until > run.now.unix()) {
        Some(SharedReset { until, provider, learned_by }) => {
            let why = format!("rate limit task {learned_by} met on {provider}");
            run.emit(RunEvent::FleetSharedReset { until, provider, learned_by });
            waits::rate_limit(run, until, &why);
        }
        None => launch(run),
    }
}

/// Counts the attempt and asks for its launch: which agent, which session, which
/// prompt.
fn launch(run: &mut RunState) {
    let agent = run.current_agent();
    if !run.setting.loaded.config.agents.contains_key(&agent) {
        return run.effect(Effect::Fail(Fatal::AgentGone(agent)));
    }
    let progress = &mut run.cp.progress;
    progress.counters.attempts += 1;
    let launches = progress.launches.entry(agent.clone()).or_insert(0);
    *launches += 1;
    let launch = *launches;
    let attempt = progress.counters.attempts;
    let resume = progress.resume_session.clone();
    let session_tokens = resume.as_ref().and_then(|s| progress.session_tokens.get(s).copied()).unwrap_or_default();
    let pos = &progress.position;
    let stem = format!("attempt-{attempt:04}-{}-{agent}", pos.phase_name);
    // A fleet task's isolation check: the window of this iteration.
    let window = run.setting.task.is_some().then(|| message::iteration_key(&pos.phase_name, pos.iteration, pos.pass));
    if let Some(key) = window {
        run.effect(Effect::Fleet(Fleet::OpenWindow { key }));
    }
    let plan =
        Launch { agent: agent.clone(), attempt, launch, stem: stem.clone(), resume: resume.clone(), session_tokens };
    run.effect(Effect::Launch(Box::new(plan)));
    run.mode = Mode::Launching { agent, resume, stem };
}

/// The attempt's prompt, rendered when the shell prepares its launch: the goal, where
/// the run stands, the previous phase's result (`previous` reads it by the phase's
/// name), how the run was started, and the recovery note with today's goal. A
/// resumed session gets the note alone.
pub(crate) fn attempt_prompt(run: &RunState, previous: &dyn Fn(&str) -> Option<String>) -> String {
    let (progress, phase, repeat) = (&run.cp.progress, run.phase(), run.setting.loaded.repeat);
    let pos = &progress.position;
    let previous_phase = advance::previous_phase(pos, repeat).and_then(|i| run.setting.loaded.phases.get(i));
    // What ralph adds to the goal quotes earlier agents: redacted (the goal, the
    // user's own, goes as written), and without ralph's control markup, whatever
    // wrote the result (a done file, a run before the markup was removed): a
    // review's goal tag would be the fix's own "nothing left" signal.
    let previous =
        previous_phase.and_then(|p| Some((p.name.as_str(), redact(&excerpt::without_markup(&previous(&p.name)?)))));
    let from_note =
        progress.from.as_ref().and_then(|from| prompt::from_note(from, previous_phase.map(|p| p.name.as_str())));
    // The note was written when the attempt failed; the goal is today's.
    let recovery = progress.recovery_note.as_deref().map(|n| note::with_goal(&redact(n), &run.setting.goal));
    let ctx = prompt::Context {
        goal: &run.setting.goal,
        phase: &phase.name,
        phase_number: pos.phase + 1,
        phase_count: run.setting.loaded.phases.len(),
        iteration: pos.iteration,
        iterations: phase.iterations,
        until_complete: phase.until_complete,
        pass: pos.passes.map(|passes| (pos.pass, passes)),
        review: advance::is_review(pos.phase, repeat),
        done: &phase.done,
        previous: previous.as_ref().map(|(name, text)| (*name, text.as_str())),
        from_note: from_note.as_deref(),
        recovery: recovery.as_deref(),
    };
    if progress.resume_session.is_some() {
        let note = recovery.as_deref().unwrap_or("Continue the task where the previous attempt stopped.");
        return prompt::render_continue(&ctx, note);
    }
    prompt::render(run.setting.templates.get(pos.phase).map_or("", String::as_str), &ctx)
}

/// The launch is prepared (or cannot be): the attempt is recorded in flight (saved,
/// then journaled), then started; a launch that cannot be prepared fails like an
/// agent that cannot be started.
pub(super) fn prepared(run: &mut RunState, launched: Result<Launched, String>) {
    let Mode::Launching { agent, resume, stem } = std::mem::take(&mut run.mode) else { return };
    let (started_at, iterations) = (run.now.wall, run.phase().iterations);
    let cp = &mut run.cp;
    cp.status = Status::Running;
    let attempt = cp.progress.counters.attempts;
    cp.in_flight = Some(InFlight { agent: agent.clone(), attempt, session: resume.clone(), started_at, tool: None });
    let pos = cp.progress.position.clone();
    // Losing this state to a power cut equals a crash just before the attempt.
    run.save_with(Durability::Ordered);
    run.emit(RunEvent::AttemptStarted {
        attempt,
        env_withheld: launched.as_ref().map(|l| l.withheld_env.clone()).unwrap_or_default(),
        phase: pos.phase_name.clone(),
        phase_number: pos.phase + 1,
        phase_count: run.setting.loaded.phases.len(),
        iteration: pos.iteration,
        iterations,
        pass: pos.pass,
        passes: pos.passes,
        agent: agent.clone(),
        cycle: pos.cycle,
        resume_session: resume,
    });
    // A new attempt: what the last one declared is its own.
    (run.control.declared, run.control.cancelled, run.control.interruption) = (None, None, None);
    let launched = match launched {
        Ok(launched) => launched,
        Err(message) => {
            let error = SpawnError { errno: None, not_found: true, message, program: String::new() };
            return outcome::ended(run, AttemptReport::not_started(error));
        }
    };
    run.last_log = Some(format!(".agent/logs/{}/attempts.log ({stem})", run.cp.run_id));
    let config = &run.setting.loaded.config;
    let limits = watch::attempt_limits(&config.timeouts, launched.quiet_tools, run.runtime_left());
    let cost_left =
        config.general.max_cost_usd.map(|max| max - run.cp.usage.cost_usd).filter(|_| launched.running_cost);
    let done_file = match &run.phase().done {
        DoneSignal::File(path) => Some(path.clone()),
        _ => None,
    };
    run.effect(Effect::Start(Box::new(StartAttempt { limits, cost_left, done_file, stem })));
    run.mode = Mode::Attempt(Running { agent_running: true, stopping: false, forced: false });
}

//! The run's decisions, as one pure step: `step(&mut RunState, Input, Now) ->
//! Vec<Effect>`. The shell (`run::dispatch`) owns one [`RunState`] and runs one
//! `select!` loop over everything that can happen to a run (the attempt's messages
//! and its end, signals, control-socket requests, timers, probe answers, disk space
//! back); each becomes an [`Input`], the step decides, and the shell carries out the
//! [`Effect`]s in order: write, show, launch, signal, wait, probe, commit, finish.
//! Effects that learn something (a commit, a probe, a prepared launch) answer with
//! another input. No callback saves state and no rule lives in the shell, so every
//! rule of docs/recovery.md is a function here or in the core it calls
//! ([`crate::recovery`], [`crate::workflow`], [`crate::supervise`]), tested with
//! paused time and no processes (`step/tests/`).
//!
//! Why a step and not decision enums returned to an async dispatcher: a run's rules
//! span waits (a failure's probe, a backoff, a commit), and an async shell that asks
//! the core at each point ends up deciding the order itself. Here the order is the
//! core's too: [`state::Mode`] says what the run waits for and what its answer
//! decides, so the shell is the same small loop whatever the rules become (issue
//! 30's caps and MCP interruptions, a fleet's isolation check before the commit are a
//! mode and an effect more: `Mode::Checking`, `effect::Fleet`).
//!
//! Why a top-level module: the step sits above the core it orchestrates (recovery,
//! workflow, supervise, the events) and imports no shell module (no processes, files,
//! terminal or tokio I/O: `tokio::time::Instant` is a value, as in the supervisor).
//! Placed inside `workflow/` or `recovery/` it would make them import each other.
//! From `state` it takes only pure files: the checkpoint, `writes` (`Durability`, an
//! attempt log's `DiskNews`, the full disk's backoff) and `format`'s verdicts.
//!
//! The files stand on floors, each importing only the ones below it (no circle: the
//! transitions call down, never back up): the types out and in, the run state, what
//! is recorded of an attempt, then the transitions, and `step` here on top, which
//! hands each input to the one that decides it.

pub(crate) mod begin;
pub(crate) mod carry;
pub(crate) mod chosen;
pub(crate) mod control;
pub(crate) mod effect;
pub(crate) mod ending;
pub(crate) mod failure;
pub(crate) mod git;
pub(crate) mod input;
pub(crate) mod outcome;
pub(crate) mod record;
pub(crate) mod start;
pub(crate) mod state;
pub(crate) mod trouble;
pub(crate) mod waits;

#[cfg(test)]
mod tests;

use crate::events::RunEvent;
use crate::recovery::probe::ProbeResult;
use crate::signal::StopCause;

pub(crate) use effect::{Command, Effect, EndWhy, Show};
pub(crate) use input::{Input, Now};
pub(crate) use state::RunState;

use state::{Mode, Probe};

/// One step: `input` happened at `now`; the run state changes and the effects say
/// what the shell does about it, in order.
pub(crate) fn step(run: &mut RunState, input: Input, now: Now) -> Vec<Effect> {
    run.begin(now);
    match input {
        Input::Start => begin::start(run),
        Input::Next if run.ready() => begin::next_move(run),
        Input::Next => {}
        Input::Stop(cause, sender) => stop_signal(run, cause, sender),
        Input::ForceExit => force_exit(run),
        Input::Control(inbox) => control::inbox(run, inbox),
        Input::Prepared { launch, moved } => {
            if let Some(socket) = moved {
                run.emit(RunEvent::ControlSocketMoved { socket });
            }
            begin::prepared(run, launch);
        }
        Input::Attempt(msg) => outcome::message(run, msg),
        Input::AttemptEnded(report) => outcome::ended(run, *report),
        Input::Timer => waits::timer(run),
        Input::Probed(result) => match std::mem::take(&mut run.mode) {
            Mode::Probing(Probe::Failure { failed, endpoints }) => failure::probed(run, failed, result, &endpoints),
            Mode::Probing(probe) => waits::probed(run, probe, result),
            other => run.mode = other,
        },
        Input::Heard(endpoint, ProbeResult::Online) => {
            run.unanswered.remove(&endpoint);
            run.answered.insert(endpoint);
        }
        Input::Heard(endpoint, ProbeResult::Offline { last_error }) => {
            run.unanswered.insert(endpoint, last_error);
        }
        Input::Versions(versions) => failure::versions(run, versions),
        Input::Committed(report) => git::committed(run, report),
        Input::DiskFull { path, free } => {
            run.disk_full.get_or_insert((path, free));
        }
        Input::DiskRetried(still_full) => ending::rewritten(run, still_full),
        Input::TreeRecorded(tree) => ending::tree_recorded(run, tree),
        Input::Isolated(breach) => git::isolated(run, breach),
        Input::SharedReset(shared) => begin::shared_reset(run, shared),
    }
    run.effects()
}

/// The first stop signal. While the agent runs, the user's intent (or the shutdown)
/// is saved before the agent is ended, so a second Ctrl+C or a crash during the
/// escalation cannot lose it; once the agent has exited, the stop is honoured after
/// its result is kept; a wait ends at once; between attempts the next move honours
/// it.
fn stop_signal(run: &mut RunState, cause: StopCause, sender: Option<crate::signal::origin::Sender>) {
    run.stopping = Some(cause);
    run.stop_sender = sender;
    match &mut run.mode {
        Mode::Attempt(running) if running.agent_running && !running.stopping => {
            running.stopping = true;
            run.stopped_by(cause);
            run.emit(RunEvent::StopRequested { signal: cause.signal_name().to_string() });
            run.save();
            run.tell(Command::Stop(cause));
        }
        Mode::Waiting(_) | Mode::Probing(_) => waits::interrupted(run, cause),
        _ => {}
    }
}

/// The second Ctrl+C: the running agent's group is killed (its attempt's end, however
/// it comes, then ends the run), or the run ends now.
fn force_exit(run: &mut RunState) {
    match &mut run.mode {
        Mode::Attempt(running) => {
            running.forced = true;
            run.tell(Command::Kill);
        }
        // The end is under way already; its answer comes next.
        Mode::Ended | Mode::Recording(_) => {}
        _ => ending::forced(run, None),
    }
}

//! Where a decision leads: the policy's [`Next`] carried out (the next iteration,
//! phase or agent, a retry, a wait), a phase's end (its artifact, the review/fix
//! passes), and the run's end: a stop by a signal (the session kept for `--resume`),
//! the second Ctrl+C, a cap or a person's problem, and the final save.

use crate::events::{self, RunEvent};
use crate::outcome::RunEnd;
use crate::recovery::policy::{FalloverWhy, Next, Stop};
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::supervise::note::Trouble;
use crate::workflow::advance::{GroupMove, PhaseEnd};

use super::effect::{ArtifactSource, Effect, Show};
use super::state::{Mode, Online, RunState, Wait};
use super::{failure, outcome, waits};

/// Carries out the policy's decision.
pub(super) fn carry_out(run: &mut RunState, next: Next) {
    tracing::debug!(?next, "carrying out");
    run.mode = Mode::Ready;
    match next {
        Next::Iteration => {
            let (phase, iteration) = (run.phase().name.clone(), run.cp.progress.position.iteration);
            run.emit(RunEvent::IterationStarted { phase, iteration });
            run.save();
        }
        Next::Phase { finished, end } => {
            phase_ended(run, finished, &end);
            run.save();
        }
        Next::Finished { end } => {
            phase_ended(run, run.phase().name.clone(), &end);
            self::end(run, RunEnd::Completed);
        }
        Next::Retry { delay, probe_first } => {
            let session = run.cp.progress.resume_session.clone();
            run.emit(RunEvent::Retry { delay_ms: delay.as_millis() as u64, resume_session: session });
            run.save();
            if probe_first {
                waits::offline_check(run, Online::Backoff(delay));
            } else if !delay.is_zero() {
                waits::wait(run, delay, "retrying after backoff".to_string(), Wait::Backoff);
            }
        }
        Next::Fallover { from, to, new_cycle, why } => {
            let cycle = run.cp.progress.position.cycle;
            let why = match why {
                FalloverWhy::Budget => events::FalloverWhy::RecoveryAttempts,
                FalloverWhy::RateLimit => events::FalloverWhy::RateLimit,
            };
            run.emit(RunEvent::Fallover { from, to, cycle, why, new_cycle });
            run.save();
        }
        Next::WaitUntil { at, reset, reason } => {
            run.emit(RunEvent::RateLimitWait { until: at, reset, reason: reason.clone() });
            waits::rate_limit(run, at, &reason);
        }
        Next::Stop(s) => stop(run, s),
    }
}

/// A phase ended: its artifact kept for the next phase's prompt (its done file, or the
/// final message of its last iteration), `phase_done`, and what it did to the
/// repeating review/fix group (decided by [`crate::workflow::advance`]).
fn phase_ended(run: &mut RunState, finished: String, end: &PhaseEnd) {
    let done = run.setting.loaded.phases.iter().find(|p| p.name == finished).map(|p| p.done.clone());
    let source = match done {
        Some(crate::config::DoneSignal::File(path)) => Some(ArtifactSource::File(path)),
        Some(_) => run.last_success.take().map(ArtifactSource::Text),
        None => None,
    };
    if let Some(source) = source {
        run.effect(Effect::KeepArtifact { phase: finished.clone(), source });
    }
    run.emit(RunEvent::PhaseDone { phase: finished });
    if let Some(v) = end.verdict {
        run.emit(RunEvent::ReviewVerdict { pass: v.pass, passes: v.passes, clean: v.clean });
    }
    match end.group {
        None => {}
        Some(GroupMove::NextPass { pass, passes }) => run.emit(RunEvent::PassStarted { pass, passes }),
        Some(GroupMove::Ended(v)) => {
            let why = if v.clean { "clean" } else { "passes_used" }.to_string();
            run.emit(RunEvent::PassesEnded { passes_run: v.pass, passes: v.passes, clean: v.clean, why });
        }
    }
}

/// An orderly stop by a signal (or `ralph stop`), and the run's end.
pub(super) fn stopped(run: &mut RunState, cause: StopCause, session: Option<String>) {
    let end_ = stop_by(run, cause, session);
    end(run, end_);
}

/// What an orderly stop records: the attempt in flight did not fail, it was stopped;
/// its session continues on `--resume`, told that the last tool call it started has
/// an unknown outcome. Returns the run's end.
pub(super) fn stop_by(run: &mut RunState, cause: StopCause, session: Option<String>) -> RunEnd {
    let last_tool = run.cp.in_flight.as_ref().and_then(|f| f.tool.as_ref()).map(outcome::in_flight_tool);
    let interrupted_note = failure::note_for(run, Trouble::Interrupted, last_tool);
    if let Some(in_flight) = run.cp.in_flight.take() {
        let session = session.or(in_flight.session);
        // The journal tells every attempt's end, this one included, once the
        // checkpoint no longer holds it in flight.
        run.emit_after_save(RunEvent::AttemptInterrupted {
            attempt: in_flight.attempt,
            agent: in_flight.agent.clone(),
            session: session.clone(),
            started_at: None,
            signal: Some(cause.signal_name().to_string()),
        });
        let progress = &mut run.cp.progress;
        if let Some(s) = session {
            progress.sessions.insert(in_flight.agent, s.clone());
            progress.resume_session = Some(s);
        }
        progress.recovery_note = Some(interrupted_note);
    }
    let cp = &mut run.cp;
    (cp.status, cp.stop_cause) = (Status::stopped_by(cause), Some(cause));
    RunEnd::Stopped(cause)
}

/// The second Ctrl+C: the agent's group is killed already. The run is recorded as
/// stopped by the first signal's cause, like an orderly stop, and ends at once.
pub(super) fn forced(run: &mut RunState, session: Option<String>) {
    let agent = run.cp.in_flight.as_ref().map(|f| f.agent.clone());
    run.show(Show::Killed { agent });
    let _ = stop_by(run, run.stopping.unwrap_or(StopCause::User), session);
    end(run, RunEnd::ForceExit);
}

/// A cap or a person's problem ends the run.
pub(super) fn stop(run: &mut RunState, stop: Stop) {
    let cp = &mut run.cp;
    cp.in_flight = None;
    let end_ = match stop {
        Stop::Failed { cap, message } => {
            (cp.status, cp.stop_reason) = (Status::Failed, Some(message.clone()));
            run.emit(RunEvent::CapReached { cap, message: message.clone() });
            RunEnd::Failed(message)
        }
        Stop::Blocked { message } => {
            (cp.status, cp.stop_reason) = (Status::Blocked, Some(message.clone()));
            RunEnd::Blocked(message)
        }
    };
    end(run, end_);
}

/// The run ends: its final state must reach the disk too, so a full disk is waited
/// out first (not after the second Ctrl+C, which leaves at once).
pub(super) fn end(run: &mut RunState, end: RunEnd) {
    if end != RunEnd::ForceExit && run.disk_full.is_some() {
        return waits::disk(run, 0, Some(end));
    }
    finish(run, end);
}

/// Writes the final state and hands the end to the shell (summary, lease, lock).
pub(super) fn finish(run: &mut RunState, end: RunEnd) {
    if end == RunEnd::Completed {
        run.cp.status = Status::Completed;
    }
    run.cp.clean_stop = true;
    run.save();
    let cp = &run.cp;
    let ended = RunEvent::RunEnded { status: cp.status, reason: cp.stop_reason.clone(), stop_cause: cp.stop_cause };
    run.emit(ended);
    run.effect(Effect::Finish(end));
    run.mode = Mode::Ended;
}

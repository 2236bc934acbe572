//! The policy's decision carried out: the next iteration, the next phase (its result
//! kept, the review/fix passes journaled) or the run complete, a retry (after the
//! offline check it asks for, and its backoff), the next agent, a rate-limit wait,
//! or the run's stop.

use crate::events::{self, RunEvent};
use crate::outcome::RunEnd;
use crate::recovery::policy::{FalloverWhy, Next};
use crate::secrets::redact;
use crate::supervise::excerpt::{self, Bounds};
use crate::workflow::advance::{GroupMove, PhaseEnd};

use super::effect::{ArtifactSource, Effect, Fleet};
use super::state::{Mode, Online, RunState, Wait};
use super::{ending, waits};

/// What the policy's decision answers: a stop it makes in answer to a failure is
/// that failure's (the summary shows it as what ended the run); one after a success
/// (the iteration cap) or on git's refusal had no error of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// The failure just recorded.
    Failure,
    /// A success, or git's own refusal to commit, or a fleet task's isolation
    /// breach (its message is the run's end).
    NoError,
}

/// Carries out the policy's decision.
pub(super) fn carry_out(run: &mut RunState, next: Next, answer: Answer) {
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
            ending::end(run, RunEnd::Completed);
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
            if run.setting.task.is_some() {
                // Every task of the fleet using this provider waits for it too.
                run.effect(Effect::Fleet(Fleet::PublishReset { agent: run.current_agent(), until: at }));
            }
            run.emit(RunEvent::RateLimitWait { until: at, reset, reason: reason.clone() });
            waits::rate_limit(run, at, &reason);
        }
        Next::Stop(s) if answer == Answer::Failure => ending::failed(run, s),
        Next::Stop(s) => ending::stop(run, s),
    }
}

/// A phase ended: its artifact kept for the next phase's prompt (its done file, or the
/// final message of its last iteration without ralph's markup and within `[general.workflow]
/// artifact_lines` and `artifact_chars`), `phase_done`, and what it did to the
/// repeating review/fix group (decided by [`crate::workflow::advance`]).
fn phase_ended(run: &mut RunState, finished: String, end: &PhaseEnd) {
    let done = run.setting.loaded.phases.iter().find(|p| p.name == finished).map(|p| p.done.clone());
    let source = match done {
        Some(crate::config::DoneSignal::File(path)) => Some(ArtifactSource::File(path)),
        Some(_) => {
            let workflow = &run.setting.loaded.config.general.workflow;
            let bounds = Bounds { lines: workflow.artifact_lines as usize, chars: workflow.artifact_chars as usize };
            // Redacted before it is cut (a secret cut in half no longer looks like one),
            // and after (the markup removed could join one).
            let kept = |text: String| redact(&excerpt::bounded(&redact(&text), bounds));
            run.last_success.take().map(|text| ArtifactSource::Text(kept(text)))
        }
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

//! Failed attempts: the classification, the journal and terminal record, the
//! interventions, the policy's decision with its continue-storm check, and the
//! self-contained recovery note the next attempt gets.

use crate::error::RalphError;
use crate::events::RunEvent;
use crate::recovery::classify::{self, EndedBy, Exit};
use crate::recovery::policy::{self, Facts, Limits, Next, Stop};
use crate::recovery::{Category, Classification, reset};
use crate::signal::Signals;
use crate::state::checkpoint::LastError;
use crate::supervise::completion::Claim;
use crate::supervise::note::{self, LastTool, NoteContext, Trouble};
use crate::supervise::{storm, trouble};

use super::RunEnd;
use super::attempt::Outcome;
use super::dispatch::{Dispatcher, unix_now};
use super::setup::now;

impl Dispatcher {
    /// The agent could not be started. A missing or forbidden binary needs a human;
    /// anything else (no memory, too many processes, a binary being replaced by its
    /// own auto-update) is retried like an outage.
    pub(super) async fn spawn_failed(
        &mut self,
        agent: &str,
        error: &std::io::Error,
        signals: &mut Signals,
    ) -> Result<Option<RunEnd>, RalphError> {
        use std::io::ErrorKind;
        self.r.checkpoint.in_flight = None;
        let message = format!("agent {agent}: cannot start it: {error}");
        if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) {
            return self.stop(Stop::Blocked { message }).map(Some);
        }
        let failure = Classification::new(Category::Environmental, "spawn_failed", message);
        self.record_failure(agent, &failure, &Outcome::empty());
        let limits = Limits { retry: &self.r.loaded.config.retry, max_cycles: self.r.loaded.config.general.max_cycles };
        let facts = Facts { session: None, rate_limit_reset: None, now: unix_now(), jitter: jitter() };
        let next = policy::on_failure(&mut self.r.checkpoint.progress, &self.r.loaded.phases, limits, &failure, facts);
        self.carry_out(next, signals).await
    }

    /// Classifies a failed attempt, records it, asks the policy what next, and leaves
    /// the recovery note for the next attempt.
    pub(super) fn after_failure(
        &mut self,
        outcome: &Outcome,
        exit: Exit,
        ended_by: EndedBy,
        claim: Claim,
        missing: &str,
    ) -> Next {
        let agent = self.current_agent();
        // `report_interruption`: the agent's own reason is evidence like its output.
        let text_tail = match self.control.interruption.take() {
            Some(reason) => format!("{}\nthe agent reported an interruption: {reason}\n", outcome.text_tail),
            None => outcome.text_tail.clone(),
        };
        let report = classify::Report {
            kind: self.r.loaded.config.agents.get(&agent).map_or(crate::config::AgentKind::Command, |a| a.kind),
            exit,
            ended_by,
            events: &outcome.events,
            text_tail: &text_tail,
            missing_done: missing,
        };
        let failure = classify::classify(&report);
        self.record_failure(&agent, &failure, outcome);
        if let Some(found) = &outcome.intervention {
            self.intervene(found.detector, &found.evidence);
        }
        let mut first_claim = false;
        if failure.rule == "no_done_signal" {
            match claim {
                Claim::ClaimedInWords(words) => {
                    let claims = &mut self.r.checkpoint.progress.counters.done_claims;
                    *claims += 1;
                    first_claim = *claims == 1;
                    if first_claim {
                        self.intervene("done_claim_nudge", &format!("said \"{words}\" without the done signal"));
                    }
                }
                Claim::ReadyToContinue(words) => {
                    self.intervene("ready_to_continue", &format!("said \"{words}\" and stopped"));
                }
                _ => {}
            }
        }
        let now = unix_now();
        let retry = &self.r.loaded.config.retry;
        let limits = Limits { retry, max_cycles: self.r.loaded.config.general.max_cycles };
        let facts = Facts {
            session: outcome.session.clone(),
            rate_limit_reset: reset::reset_time(&outcome.events, &outcome.text_tail, jiff::Timestamp::now())
                .map(|r| r.at.as_second()),
            now,
            jitter: jitter(),
        };
        let progress = &mut self.r.checkpoint.progress;
        let next = policy::on_failure(progress, &self.r.loaded.phases, limits, &failure, facts);
        let mut storm = None;
        if matches!(next, Next::Retry { .. }) && progress.resume_session.is_some() {
            let window = i64::try_from(retry.storm_window.as_secs()).unwrap_or(i64::MAX);
            progress.recoveries.push(now);
            storm::prune(&mut progress.recoveries, now, window);
            let threshold = usize::try_from(retry.storm_recoveries).unwrap_or(usize::MAX);
            if storm::is_storm(&progress.recoveries, now, window, threshold) {
                // Resuming keeps feeding the agent the context that went wrong.
                progress.resume_session = None;
                progress.recoveries.clear();
                storm = Some(format!(
                    "{threshold} recoveries of this iteration within {}",
                    humantime::format_duration(retry.storm_window)
                ));
            }
        }
        if let Some(evidence) = storm {
            self.intervene("continue_storm", &format!("{evidence}: the next attempt starts a fresh session"));
        }
        let trouble = trouble::trouble(&failure, outcome.intervention.as_ref(), claim, first_claim);
        let note = self.note(trouble, outcome.last_tool.clone());
        self.r.checkpoint.progress.recovery_note = Some(note);
        next
    }

    /// The self-contained recovery note for the next attempt.
    pub(super) fn note(&self, trouble: Trouble, last_tool: Option<LastTool>) -> String {
        let progress = &self.r.checkpoint.progress;
        let phase = self.phase();
        let done = trouble::done_summary(progress, &self.r.loaded.phases);
        let mut text = note::note(&NoteContext {
            goal: &self.r.goal,
            phase: &phase.name,
            iteration: progress.position.iteration,
            iterations: phase.iterations,
            done_summary: &done,
            what_went_wrong: trouble,
            last_tool,
        });
        // The agent's own `save_checkpoint` of this iteration: verified progress.
        if let Some(saved) = self
            .r
            .checkpoint
            .agent_checkpoint
            .as_ref()
            .filter(|c| c.phase == phase.name && c.iteration == progress.position.iteration)
        {
            text.push_str(&note::saved_progress(saved));
        }
        text
    }

    /// Records one of ralph's interventions (journal, counters, terminal).
    pub(super) fn intervene(&mut self, detector: &str, evidence: &str) {
        self.emit(RunEvent::Intervention { detector: detector.to_string(), evidence: evidence.to_string() });
    }

    pub(super) fn record_failure(&mut self, agent: &str, failure: &Classification, outcome: &Outcome) {
        let attempt_no = self.r.checkpoint.progress.counters.attempts;
        let tail = tail_chars(&outcome.text_tail, 2000);
        self.emit(RunEvent::AttemptFailed {
            attempt: attempt_no,
            agent: agent.to_string(),
            category: failure.category,
            rule: failure.rule.clone(),
            reason: failure.reason.clone(),
            session: outcome.session.clone(),
            evidence: tail.clone(),
            duration_ms: outcome.duration.as_millis() as u64,
            usage: outcome.usage.clone(),
        });
        if failure.category == Category::Ambiguous {
            tracing::warn!("flagged for review: attempt {attempt_no} failed in a way ralph cannot explain");
        }
        self.r.checkpoint.last_error =
            Some(LastError { classification: failure.clone(), agent: agent.to_string(), text_tail: tail, at: now() });
    }
}

/// A number in [0, 1) for the backoff's jitter. The clock's nanoseconds are random
/// enough to keep many runs hit by one outage from retrying in lockstep.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    f64::from(nanos) / 1e9
}

fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

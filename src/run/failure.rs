//! Failed attempts: the classification (checked against the network: a failure while
//! the providers do not answer is the outage's), the journal and terminal record, the
//! interventions, the policy's decision with its continue-storm check, and the
//! self-contained recovery note the next attempt gets. Launches that failed before
//! the agent ran are classified by `recovery::spawn`.

use crate::agent::{kinds, launch, versions};
use crate::config::{DoneSignal, Phase};
use crate::events::RunEvent;
use crate::process;
use crate::recovery::classify::{self, EndedBy, Exit};
use crate::recovery::policy::{self, Facts, Limits, Next, Stop};
use crate::recovery::probe::{self, ProbeResult};
use crate::recovery::{Category, Classification, Rule, reset, spawn};
use crate::signal::Signals;
use crate::state::checkpoint::LastError;
use crate::supervise::completion::{Claim, Why};
use crate::supervise::note::{self, LastTool, NoteContext, Trouble};
use crate::supervise::trouble;
use crate::workflow::Progress;
use crate::workflow::done::SignOff;

use super::attempt::Outcome;
use super::dispatch::{Dispatcher, Flow, Raced};

/// How a failed attempt ended, as the classifier needs it.
pub(super) struct Ending<'a> {
    pub exit: Exit,
    pub ended_by: EndedBy,
    pub claim: &'a Claim,
    pub missing: &'a str,
}

impl Dispatcher {
    /// The agent could not be started. A launch that can never succeed as configured
    /// (a missing or non-executable binary, a prompt too long for an argument) needs a
    /// person (exit 3); anything else (no memory, too many processes, a binary being
    /// replaced by its own auto-update) is retried like an outage.
    pub(super) async fn spawn_failed(
        &mut self,
        agent: &str,
        program: &str,
        error: &std::io::Error,
        signals: &mut Signals,
    ) -> Flow {
        use std::io::ErrorKind;
        self.r.checkpoint.in_flight = None;
        let failure = match error.raw_os_error() {
            // ralph's own checks before exec (the binary not on PATH) carry no errno.
            None if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => {
                Classification::new(Category::UserConfig, Rule::LaunchImpossible, format!("{error}"))
            }
            errno => spawn::classify(agent, program, errno, &error.to_string()),
        };
        self.record_failure(agent, &failure, &Outcome::empty());
        if failure.category == Category::UserConfig {
            return self.stop(Stop::Blocked { message: failure.reason }).map(Some);
        }
        let facts = Facts { session: None, rate_limit_reset: None, now: self.unix_now(), jitter: jitter(self.now()) };
        let next = self.on_failure(&failure, facts);
        self.carry_out(next, signals).await
    }

    /// Classifies a failed attempt, records it, asks the policy what next, and leaves
    /// the recovery note for the next attempt. A failure that is not a person's to fix
    /// is checked against the network first: when the providers do not answer, it
    /// was the outage's (`Err` when a signal stopped the run during that probe).
    pub(super) async fn after_failure(
        &mut self,
        outcome: &Outcome,
        ending: Ending<'_>,
        signals: &mut Signals,
    ) -> Raced<Next> {
        let Ending { exit, ended_by, claim, missing } = ending;
        let agent = self.current_agent();
        let agent_cfg = self.r.loaded.config.agents.get(&agent);
        // `report_interruption`: the agent's own reason is evidence like its output.
        let text_tail = match self.control.interruption.take() {
            Some(reason) => format!("{}\nthe agent reported an interruption: {reason}\n", outcome.text_tail),
            None => outcome.text_tail.clone(),
        };
        let report = classify::Report {
            kind: agent_cfg.map_or(crate::config::AgentKind::Command, |a| a.kind),
            exit,
            ended_by,
            events: &outcome.events,
            text_tail: &text_tail,
            stderr_tail: &outcome.stderr_tail,
            missing_done: missing,
            errors: agent_cfg.map_or(&[], |a| &a.errors),
            now: self.unix_now(),
        };
        let mut failure = classify::classify(&report);
        tracing::debug!(
            agent, ?exit, ?ended_by, missing, events = outcome.events.len(), tail_bytes = outcome.text_tail.len(),
            category = failure.category.as_str(), rule = %failure.rule, reason = %failure.reason,
            fresh_session = failure.fresh_session, "classified the failed attempt"
        );
        if probe::probe_after(&failure) {
            let endpoints = self.probe_endpoints();
            match self.probe_once(&endpoints, signals).await? {
                Err(end) => return Ok(Err(end)),
                Ok(ProbeResult::Offline { last_error }) => failure = probe::offline_failure(&failure, &last_error),
                Ok(ProbeResult::Online) => {}
            }
        }
        if failure.rule == Rule::CliRejectedArgument {
            failure.reason = self.with_versions(&agent, &failure.reason).await;
        }
        self.record_failure(&agent, &failure, outcome);
        if let Some(found) = &outcome.intervention {
            self.intervene(found.detector, &found.evidence);
        }
        if failure.rule == Rule::NoDoneSignal {
            match claim {
                // Only where a tag decides: a file phase's tag is no sign-off.
                Claim::Denied(why) if self.phase().done == DoneSignal::Tag || self.phase().until_complete => {
                    self.signoff(SignOff::Rejected, why);
                }
                Claim::ReadyToContinue(words) => {
                    self.intervene("ready_to_continue", &format!("said \"{words}\" and stopped"));
                }
                _ => {}
            }
        }
        let now = self.now();
        let facts = Facts {
            session: outcome.session.clone(),
            rate_limit_reset: failure
                .reset_at
                .or_else(|| reset::reset_time(&outcome.events, &outcome.text_tail, now).map(|r| r.at.as_second())),
            now: now.as_second(),
            jitter: jitter(now),
        };
        tracing::debug!(?facts, "policy inputs");
        let next = self.on_failure(&failure, facts);
        let progress = &mut self.r.checkpoint.progress;
        tracing::debug!(?next, counters = ?progress.counters, position = ?progress.position, "policy decision");
        let retry = &self.r.loaded.config.retry;
        if let Some(evidence) = policy::continue_storm(progress, retry, &failure, &next, now.as_second()) {
            self.intervene("continue_storm", &evidence);
        }
        // An outage explains the ending better than the detector that saw it.
        let intervention = outcome.intervention.as_ref().filter(|_| failure.rule != Rule::Offline);
        let trouble = trouble::trouble(&failure, intervention, claim);
        let note = self.note(trouble, outcome.last_tool.clone());
        self.r.checkpoint.progress.recovery_note = Some(note);
        Ok(Ok(next))
    }

    /// The policy's decision on a recorded failure.
    pub(super) fn on_failure(&mut self, failure: &Classification, facts: Facts) -> Next {
        let limits = Limits { retry: &self.r.loaded.config.retry, max_cycles: self.r.loaded.config.general.max_cycles };
        policy::on_failure(&mut self.r.checkpoint.progress, &self.r.loaded.phases, limits, failure, facts)
    }

    /// A CLI that refused an argument ralph passes was most likely updated: the
    /// message names its version and the one ralph was tested with.
    async fn with_versions(&self, agent: &str, reason: &str) -> String {
        let Some(cfg) = self.r.loaded.config.agents.get(agent) else { return reason.to_string() };
        let Some(cli) = kinds::descriptor(cfg.kind) else {
            return format!("{reason}; check the agent's command and its version");
        };
        let tested = cli.tested_version;
        let installed = match launch::find_binary(cfg, cli.binary, agent) {
            Ok(binary) => match process::version::installed(&binary).await {
                Ok(text) => versions::number(&text).unwrap_or(text.as_str()).to_string(),
                Err(e) => format!("unknown ({e})"),
            },
            Err(e) => format!("unknown ({e})"),
        };
        format!(
            "{reason}; the installed {} is version {installed}, ralph was tested with {tested}: \
             install {tested} or a ralph that supports {installed} (`ralph doctor` compares them)",
            cfg.kind.as_str()
        )
    }

    /// The self-contained recovery note for the next attempt.
    pub(super) fn note(&self, trouble: Trouble, last_tool: Option<LastTool>) -> String {
        let (progress, phase) = (&self.r.checkpoint.progress, self.phase());
        let mut text = recovery_note(progress, &self.r.loaded.phases, &self.r.goal, trouble, last_tool);
        // The agent's own `save_checkpoint` of this iteration: verified progress.
        let saved = self.r.checkpoint.agent_checkpoint.as_ref();
        if let Some(saved) = saved.filter(|c| c.phase == phase.name && c.iteration == progress.position.iteration) {
            text.push_str(&note::saved_progress(saved));
        }
        text
    }

    /// Records what the judge made of a sign-off it did not simply accept: the
    /// journal gets the rule and the agent's words, the terminal a line, the summary
    /// the last rejection.
    pub(super) fn signoff(&mut self, verdict: SignOff, why: &Why) {
        let attempt = self.r.checkpoint.progress.counters.attempts;
        self.emit(RunEvent::Signoff { attempt, verdict, rule: why.rule, words: why.words.clone() });
    }

    /// Records one of ralph's interventions (journal, counters, terminal).
    pub(super) fn intervene(&mut self, detector: &str, evidence: &str) {
        self.emit(RunEvent::Intervention { detector: detector.to_string(), evidence: evidence.to_string() });
    }

    pub(super) fn record_failure(&mut self, agent: &str, failure: &Classification, outcome: &Outcome) {
        let attempt_no = self.r.checkpoint.progress.counters.attempts;
        // The evidence a person reads first: the output's tail, or, when the agent
        // reported its error as a structured result, that result.
        let evidence = match (&outcome.final_message, outcome.result_is_error) {
            (Some(message), true) if outcome.text_tail.trim().is_empty() => crate::secrets::redact(message),
            _ => outcome.text_tail.clone(),
        };
        let tail = tail_chars(&evidence, 2000);
        self.emit_after_save(RunEvent::AttemptFailed {
            attempt: attempt_no,
            agent: agent.to_string(),
            category: failure.category,
            rule: failure.rule,
            reason: failure.reason.clone(),
            session: outcome.session.clone(),
            evidence: tail.clone(),
            duration_ms: outcome.duration.as_millis() as u64,
            usage: outcome.usage.clone(),
        });
        if failure.category == Category::Ambiguous {
            tracing::warn!("flagged for review: attempt {attempt_no} failed in a way ralph cannot explain");
        }
        let log = self.last_log.as_ref().map(|p| p.strip_prefix(&self.r.dir).unwrap_or(p).display().to_string());
        self.r.checkpoint.last_error = Some(LastError {
            classification: failure.clone(),
            agent: agent.to_string(),
            text_tail: tail,
            at: self.now(),
            log,
        });
    }
}

/// The recovery note of the iteration `progress` stands in, without the agent's
/// own checkpoint (see [`Dispatcher::note`]); also for an attempt a crash cut short.
pub(super) fn recovery_note(
    progress: &Progress,
    phases: &[Phase],
    goal: &str,
    trouble: Trouble,
    last_tool: Option<LastTool>,
) -> String {
    let phase = &phases[progress.position.phase];
    note::note(&NoteContext {
        goal,
        phase: &phase.name,
        iteration: progress.position.iteration,
        iterations: phase.iterations,
        done_summary: &trouble::done_summary(progress, phases),
        what_went_wrong: trouble,
        last_tool,
    })
}

/// A number in [0, 1) for the backoff's jitter. The clock's nanoseconds are random
/// enough to keep many runs hit by one outage from retrying in lockstep.
fn jitter(now: jiff::Timestamp) -> f64 {
    f64::from(now.subsec_nanosecond().unsigned_abs()) / 1e9
}

/// The last `max` characters of `text`.
pub(super) fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

//! The dispatcher: one loop that owns the run state. It asks the pure core what to
//! do (done signals, classification, policy), carries it out (attempts, waits), and
//! writes the checkpoint after every transition and the journal for every event.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::agent::AgentEvent;
use crate::agent::launch::{self, Request};
use crate::config::DoneSignal;
use crate::error::RalphError;
use crate::recovery::classify::{self, EndedBy, Exit};
use crate::recovery::policy::{self, Cap, Facts, FalloverWhy, Limits, Next, Stop};
use crate::recovery::probe::{self, ProbeResult};
use crate::recovery::{Category, Classification};
use crate::recovery::{rate_limit, reset};
use crate::report::{AttemptLine, Summary};
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::atomic::Durability;
use crate::state::checkpoint::{InFlight, LastError, Status};
use crate::state::store;
use crate::supervise::completion::Claim;
use crate::supervise::note::{self, LastTool, NoteContext, Trouble};
use crate::supervise::{storm, trouble};
use crate::workflow::done::{self, Completion, Evidence};
use crate::workflow::prompt;

use super::RunEnd;
use super::attempt::{self, End, Observer, Outcome};
use super::setup::{Ready, now};

pub struct Dispatcher {
    r: Ready,
    /// When this process started dispatching (for the runtime cap).
    started: Instant,
    /// Active time of earlier sessions of this run.
    elapsed_before: f64,
    summary: Summary,
    /// The final message of the last successful attempt: the phase's artifact when
    /// the phase ends (written then, not after every iteration: it is only read by
    /// the next phase).
    last_success: Option<String>,
}

impl Dispatcher {
    pub fn new(ready: Ready) -> Self {
        let elapsed_before = ready.checkpoint.elapsed_secs;
        Self { r: ready, started: Instant::now(), elapsed_before, summary: Summary::default(), last_success: None }
    }

    pub async fn run(mut self) -> Result<RunEnd, RalphError> {
        let mut signals = Signals::install().map_err(|e| RalphError::io("cannot install signal handlers", e))?;
        let kind = if self.r.resumed { "run_resumed" } else { "run_started" };
        self.journal(kind, json!({"run_id": self.r.checkpoint.run_id, "pid": std::process::id()}));
        self.save()?;
        let end = self.dispatch(&mut signals).await;
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                // ralph's own failure: what is on disk stays the last valid state.
                self.journal("run_error", json!({"error": e.to_string()}));
                return Err(e);
            }
        };
        if end != RunEnd::ForceExit {
            self.finish(&end)?;
        }
        Ok(end)
    }

    async fn dispatch(&mut self, signals: &mut Signals) -> Result<RunEnd, RalphError> {
        loop {
            if let Some(stop) = self.cap_reached() {
                return self.stop(stop);
            }
            // An offline pause survives a restart: probe before any attempt.
            if self.r.checkpoint.progress.offline_since.is_some()
                && let Offline::Stopped(end) = self.offline_pause(signals).await?
            {
                return Ok(end);
            }
            // A rate-limit wait survives a restart: a resumed run keeps waiting.
            if let Some(at) = self.r.checkpoint.progress.rate_limit_until
                && let Some(end) = self.wait_for_reset(at, "rate limit", signals).await?
            {
                return Ok(end);
            }
            if let Some((from, to)) =
                rate_limit::return_after_reset(&mut self.r.checkpoint.progress, &self.r.loaded.phases, unix_now())
            {
                self.journal("fallback", json!({"from": from, "to": to, "why": "rate limit reset"}));
                self.r.reporter.line(&format!("the rate limit of {to} has reset: back from {from} to {to}"));
            }
            // A signal that came while the last attempt was being handled stops the
            // run here, before anything new starts.
            let pending = tokio::select! {
                biased;
                action = signals.next() => Some(action),
                () = std::future::ready(()) => None,
            };
            match pending {
                Some(InterruptAction::Stop(cause)) => return self.stopped(cause, None),
                Some(InterruptAction::ForceExit) => return Ok(RunEnd::ForceExit),
                Some(InterruptAction::Ignore) | None => {}
            }
            let outcome = self.attempt(signals).await?;
            let agent = self.current_agent();
            self.add_usage(&outcome);
            match outcome.end {
                End::ForceExit => return Ok(RunEnd::ForceExit),
                End::Stopped(cause) => return self.stopped(cause, outcome.session),
                End::SpawnFailed(ref e) => {
                    if let Some(end) = self.spawn_failed(&agent, e, signals).await? {
                        return Ok(end);
                    }
                }
                End::Exited { exit, ended_by } => {
                    if let Some(end) = self.after_attempt(&outcome, exit, ended_by, signals).await? {
                        return Ok(end);
                    }
                }
            }
        }
    }

    /// Starts and runs one attempt of the current position.
    async fn attempt(&mut self, signals: &mut Signals) -> Result<Outcome, RalphError> {
        let agent = self.current_agent();
        let phase = self.phase().clone();
        let cp = &mut self.r.checkpoint;
        cp.progress.counters.attempts += 1;
        let launch_no = {
            let n = cp.progress.launches.entry(agent.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let attempt_no = cp.progress.counters.attempts;
        let resume = cp.progress.resume_session.clone();
        let prompt = self.prompt(resume.is_some());
        let agent_cfg = self.r.loaded.config.agents.get(&agent).cloned().ok_or_else(|| {
            RalphError::ResumeMismatch(format!("agent {agent} is no longer configured; run `ralph --no-resume`"))
        })?;
        let prepared = launch::prepare(
            &agent_cfg,
            Request {
                agent: &agent,
                prompt: &prompt,
                resume: resume.as_deref(),
                launch: launch_no,
                cwd: &self.r.dir,
                run_id: &self.r.checkpoint.run_id,
            },
        );
        let cp = &mut self.r.checkpoint;
        cp.status = Status::Running;
        cp.in_flight =
            Some(InFlight { agent: agent.clone(), attempt: attempt_no, session: resume.clone(), started_at: now() });
        let pos = cp.progress.position.clone();
        // Losing this state to a power cut equals a crash just before the attempt.
        self.save_with(Durability::Ordered)?;
        self.journal(
            "attempt_started",
            json!({"attempt": attempt_no, "phase": pos.phase_name, "iteration": pos.iteration, "agent": agent,
                   "cycle": pos.cycle, "resume_session": resume}),
        );
        let line = AttemptLine {
            phase: pos.phase_name.clone(),
            phase_number: pos.phase + 1,
            phase_count: self.r.loaded.phases.len(),
            iteration: pos.iteration,
            iterations: phase.iterations,
            agent: agent.clone(),
            attempt: attempt_no,
            resumed_session: resume.clone(),
        };
        self.r.reporter.attempt_started(&line);
        self.summary.attempts += 1;
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                return Ok(Outcome {
                    end: End::SpawnFailed(std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string())),
                    session: None,
                    final_message: None,
                    result_is_error: false,
                    events: Vec::new(),
                    text_tail: String::new(),
                    usage: Default::default(),
                    duration: Duration::ZERO,
                    artifact_changed: false,
                    intervention: None,
                    last_tool: None,
                });
            }
        };
        let artifact = artifact_stamp(&self.r.dir, &phase.done);
        let stem = format!("attempt-{attempt_no:04}-{}-{agent}", pos.phase_name);
        let log_path = self.r.logs_dir.join(format!("{stem}.log"));
        // What the agent was told, beside what it answered: the first thing to read
        // when a run goes wrong.
        if let Err(e) = std::fs::write(self.r.logs_dir.join(format!("{stem}.prompt.md")), &prompt) {
            tracing::warn!("cannot keep the prompt of attempt {attempt_no}: {e}");
        }
        let mut timeouts = self.r.loaded.config.timeouts.clone();
        if let Some(left) = self.runtime_left() {
            // An attempt never runs past the run's own time limit.
            timeouts.attempt = timeouts.attempt.min(left);
        }
        let mut outcome = attempt::run(prepared, &timeouts, signals, self, &log_path).await;
        self.r.reporter.attempt_finished();
        if artifact_stamp(&self.r.dir, &phase.done) != artifact && artifact.is_some_or_created(&self.r.dir, &phase.done)
        {
            outcome.artifact_changed = true;
        }
        Ok(outcome)
    }

    /// Evaluates a finished attempt and carries out the policy's decision.
    async fn after_attempt(
        &mut self,
        outcome: &Outcome,
        exit: Exit,
        ended_by: EndedBy,
        signals: &mut Signals,
    ) -> Result<Option<RunEnd>, RalphError> {
        let agent = self.current_agent();
        let phase = self.phase().clone();
        if let Some(session) = &outcome.session {
            self.r.checkpoint.progress.sessions.insert(agent.clone(), session.clone());
        }
        self.r.checkpoint.in_flight = None;
        let claim = done::judge(outcome.final_message.as_deref());
        let completion = if ended_by == EndedBy::Agent {
            done::evaluate(
                &phase.done,
                &Evidence {
                    exited_cleanly: exit == Exit::Code(0),
                    claim,
                    result_is_error: outcome.result_is_error,
                    artifact_changed: outcome.artifact_changed,
                },
            )
        } else {
            Completion::NotDone("ended by ralph")
        };
        let attempt_no = self.r.checkpoint.progress.counters.attempts;
        let next = match completion {
            Completion::Done | Completion::Goal => {
                self.journal(
                    "attempt_succeeded",
                    json!({"attempt": attempt_no, "agent": agent, "goal": completion == Completion::Goal,
                           "duration_ms": outcome.duration.as_millis() as u64, "session": outcome.session,
                           "usage": outcome.usage}),
                );
                self.last_success = Some(outcome.final_message.clone().unwrap_or_default());
                self.r.reporter.line(&format!(
                    "{} iteration {} done{}",
                    phase.name,
                    self.r.checkpoint.progress.position.iteration,
                    if completion == Completion::Goal { " (goal reached)" } else { "" }
                ));
                self.summary.iterations += 1;
                policy::on_success(&mut self.r.checkpoint.progress, &self.r.loaded.phases, completion)
            }
            Completion::NotDone(missing) => self.after_failure(outcome, exit, ended_by, claim, missing),
        };
        self.carry_out(next, signals).await
    }

    /// The agent could not be started. A missing or forbidden binary needs a human;
    /// anything else (no memory, too many processes, a binary being replaced by its
    /// own auto-update) is retried like an outage.
    async fn spawn_failed(
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
    fn after_failure(&mut self, outcome: &Outcome, exit: Exit, ended_by: EndedBy, claim: Claim, missing: &str) -> Next {
        let agent = self.current_agent();
        let report = classify::Report {
            kind: self.r.loaded.config.agents.get(&agent).map_or(crate::config::AgentKind::Command, |a| a.kind),
            exit,
            ended_by,
            events: &outcome.events,
            text_tail: &outcome.text_tail,
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
    fn note(&self, trouble: Trouble, last_tool: Option<LastTool>) -> String {
        let progress = &self.r.checkpoint.progress;
        let phase = self.phase();
        let done = trouble::done_summary(progress, &self.r.loaded.phases);
        note::note(&NoteContext {
            goal: &self.r.goal,
            phase: &phase.name,
            iteration: progress.position.iteration,
            iterations: phase.iterations,
            done_summary: &done,
            what_went_wrong: trouble,
            last_tool,
        })
    }

    /// Records one of ralph's interventions: journal, counters, terminal.
    fn intervene(&mut self, detector: &str, evidence: &str) {
        *self.r.checkpoint.progress.counters.interventions.entry(detector.to_string()).or_insert(0) += 1;
        *self.summary.interventions.entry(detector.to_string()).or_insert(0) += 1;
        self.journal("intervention", json!({"detector": detector, "evidence": evidence}));
        self.r.reporter.line(&format!("ralph stepped in ({detector}): {evidence}"));
    }

    async fn carry_out(&mut self, next: Next, signals: &mut Signals) -> Result<Option<RunEnd>, RalphError> {
        match next {
            Next::NextIteration => {
                self.journal(
                    "iteration_started",
                    json!({"phase": self.phase().name, "iteration": self.r.checkpoint.progress.position.iteration}),
                );
                self.save()?;
            }
            Next::NextPhase { finished } => {
                self.save_artifact(&finished);
                self.summary.phases += 1;
                self.journal("phase_done", json!({"phase": finished}));
                self.r.reporter.line(&format!("phase {finished} done"));
                self.save()?;
            }
            Next::Finished => {
                let name = self.phase().name.clone();
                self.save_artifact(&name);
                self.summary.phases += 1;
                self.journal("phase_done", json!({"phase": self.phase().name}));
                return Ok(Some(RunEnd::Completed));
            }
            Next::Retry { delay } => {
                let session = self.r.checkpoint.progress.resume_session.clone();
                self.journal("retry", json!({"delay_ms": delay.as_millis() as u64, "resume_session": session}));
                self.save()?;
                let environmental = self
                    .r
                    .checkpoint
                    .last_error
                    .as_ref()
                    .is_some_and(|e| e.classification.category == Category::Environmental);
                if environmental {
                    match self.offline_pause(signals).await? {
                        Offline::Stopped(end) => return Ok(Some(end)),
                        // Back online: the interrupted attempt is retried at once.
                        Offline::Recovered => return Ok(None),
                        Offline::Online => {}
                    }
                }
                if !delay.is_zero()
                    && let Some(end) = self.wait(delay, "retrying after backoff", signals).await?
                {
                    return Ok(Some(end));
                }
            }
            Next::Fallover { from, to, new_cycle, why } => {
                let cycle = self.r.checkpoint.progress.position.cycle;
                self.summary.fallovers += 1;
                let (why_key, why_text) = match why {
                    FalloverWhy::Budget => {
                        ("recovery_attempts", format!("recovery-attempt exhausted for agent {from}"))
                    }
                    FalloverWhy::RateLimit => ("rate_limit", format!("agent {from} is rate-limited")),
                };
                self.journal("fallover", json!({"from": from, "to": to, "cycle": cycle, "why": why_key}));
                self.r.reporter.line(&format!(
                    "{why_text}: falling over to {to}{}",
                    if new_cycle { format!(" (cycle {cycle})") } else { String::new() }
                ));
                self.save()?;
            }
            Next::WaitUntil { at, reason } => {
                self.journal("rate_limit_wait", json!({"until": at, "reason": reason}));
                return self.wait_for_reset(at, &reason, signals).await;
            }
            Next::Stop(stop) => return self.stop(stop).map(Some),
        }
        Ok(None)
    }

    /// Waits `delay` (status `waiting`), unless a signal stops the run first.
    async fn wait(&mut self, delay: Duration, why: &str, signals: &mut Signals) -> Result<Option<RunEnd>, RalphError> {
        // No wait outlasts the run's time limit; the cap is checked before the next attempt.
        let delay = self.runtime_left().map_or(delay, |left| delay.min(left));
        self.r.checkpoint.status = Status::Waiting;
        self.save()?;
        let until = Instant::now() + delay;
        self.r.reporter.waiting(why, delay);
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
                action = signals.next() => match action {
                    InterruptAction::Stop(cause) => return self.stopped(cause, None).map(Some),
                    InterruptAction::ForceExit => return Ok(Some(RunEnd::ForceExit)),
                    InterruptAction::Ignore => {}
                },
            }
        }
        self.r.reporter.waiting_done();
        self.r.checkpoint.status = Status::Running;
        Ok(None)
    }

    /// Waits until the unix second `at` (a rate-limit reset) with the status
    /// `waiting` and the reset in the checkpoint; then clears it.
    async fn wait_for_reset(
        &mut self,
        at: i64,
        why: &str,
        signals: &mut Signals,
    ) -> Result<Option<RunEnd>, RalphError> {
        self.r.checkpoint.progress.rate_limit_until = Some(at);
        let left = u64::try_from(at.saturating_sub(unix_now())).unwrap_or(0);
        if left > 0 {
            let until = jiff::Timestamp::from_second(at).map(|t| t.to_string()).unwrap_or_else(|_| at.to_string());
            let why = format!("{why}: waiting until {until}");
            if let Some(end) = self.wait(Duration::from_secs(left), &why, signals).await? {
                return Ok(Some(end));
            }
        }
        self.r.checkpoint.progress.rate_limit_until = None;
        self.save()?;
        Ok(None)
    }

    /// After an environmental failure: probe the providers, and while they are
    /// unreachable start nothing and spend nothing, probing every `[offline]
    /// interval`, until they answer or a signal stops the run.
    async fn offline_pause(&mut self, signals: &mut Signals) -> Result<Offline, RalphError> {
        let endpoints = self.probe_endpoints();
        let timeout = self.r.loaded.config.offline.timeout;
        let interval = self.r.loaded.config.offline.interval;
        let ProbeResult::Offline { last_error } = probe::probe(&endpoints, timeout).await else {
            if self.r.checkpoint.progress.offline_since.take().is_some() {
                self.back_online()?;
                return Ok(Offline::Recovered);
            }
            return Ok(Offline::Online);
        };
        let since = *self.r.checkpoint.progress.offline_since.get_or_insert_with(unix_now);
        let since_clock = jiff::Timestamp::from_second(since)
            .map(|t| t.to_zoned_datetime(jiff::tz::TimeZone::system()).strftime("%H:%M:%S").to_string())
            .unwrap_or_default();
        self.journal("offline", json!({"since": since, "endpoints": endpoints, "error": last_error}));
        self.r.reporter.line(&format!("Offline — paused (since {since_clock})"));
        self.r.checkpoint.status = Status::Waiting;
        self.save()?;
        loop {
            if let Some(stop) = self.cap_reached() {
                // A network that never returns is bounded by the run's time limit.
                return self.stop(stop).map(Offline::Stopped);
            }
            let round = async {
                tokio::time::sleep(interval).await;
                probe::probe(&endpoints, timeout).await
            };
            tokio::select! {
                result = round => {
                    if result == ProbeResult::Online {
                        break;
                    }
                }
                action = signals.next() => match action {
                    InterruptAction::Stop(cause) => return self.stopped(cause, None).map(Offline::Stopped),
                    InterruptAction::ForceExit => return Ok(Offline::Stopped(RunEnd::ForceExit)),
                    InterruptAction::Ignore => {}
                },
            }
        }
        self.r.checkpoint.progress.offline_since = None;
        self.back_online()?;
        Ok(Offline::Recovered)
    }

    fn back_online(&mut self) -> Result<(), RalphError> {
        self.journal("online", json!({}));
        self.r.reporter.line("Recovery resumed after offline");
        // The outage explained the failures: the next one starts a fresh backoff.
        self.r.checkpoint.progress.counters.retry_streak = 0;
        self.r.checkpoint.status = Status::Running;
        self.save()
    }

    /// `[offline] probe`, or the providers of the current phase's agents.
    fn probe_endpoints(&self) -> Vec<String> {
        let config = &self.r.loaded.config;
        if let Some(explicit) = &config.offline.probe {
            return explicit.clone();
        }
        let chain: std::collections::BTreeMap<String, crate::config::AgentConfig> = self
            .phase()
            .chain
            .iter()
            .filter_map(|name| config.agents.get(name).map(|a| (name.clone(), a.clone())))
            .collect();
        let env = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
        let endpoints = probe::default_endpoints(&chain, &env);
        // Through a proxy, the proxy is what must answer.
        let proxy = ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
            .iter()
            .find_map(|var| env(var))
            .and_then(|url| probe::proxy_endpoint(&url));
        match proxy {
            Some(proxy) if endpoints.iter().any(|e| !probe::is_loopback(e)) => vec![proxy],
            _ => endpoints,
        }
    }

    /// An orderly stop by a signal: the in-flight session is kept for `--resume`.
    fn stopped(&mut self, cause: StopCause, session: Option<String>) -> Result<RunEnd, RalphError> {
        let interrupted_note = self.note(Trouble::Interrupted, None);
        let cp = &mut self.r.checkpoint;
        if let Some(in_flight) = cp.in_flight.take() {
            // The attempt did not fail: it was stopped. Its session continues later.
            if let Some(s) = session.or(in_flight.session) {
                cp.progress.sessions.insert(in_flight.agent, s.clone());
                cp.progress.resume_session = Some(s);
            }
            cp.progress.recovery_note = Some(interrupted_note);
        }
        cp.status = if cause == StopCause::User { Status::Paused } else { Status::Interrupted };
        cp.stop_cause = Some(cause);
        Ok(RunEnd::Stopped(cause))
    }

    fn stop(&mut self, stop: Stop) -> Result<RunEnd, RalphError> {
        let cp = &mut self.r.checkpoint;
        cp.in_flight = None;
        Ok(match stop {
            Stop::Failed { cap, message } => {
                cp.status = Status::Failed;
                cp.stop_reason = Some(message.clone());
                self.summary.cap = Some(cap);
                RunEnd::Failed(message)
            }
            Stop::Blocked { message } => {
                cp.status = Status::Blocked;
                cp.stop_reason = Some(message.clone());
                RunEnd::Blocked(message)
            }
        })
    }

    /// Writes the final state, prints the summary and releases the lock.
    fn finish(&mut self, end: &RunEnd) -> Result<(), RalphError> {
        if *end == RunEnd::Completed {
            self.r.checkpoint.status = Status::Completed;
        }
        self.r.checkpoint.clean_stop = true;
        self.save()?;
        let cp = &self.r.checkpoint;
        self.journal(
            "run_ended",
            json!({"status": cp.status.as_str(), "reason": cp.stop_reason, "stop_cause": cp.stop_cause}),
        );
        self.summary.elapsed = Duration::from_secs_f64(self.r.checkpoint.elapsed_secs);
        self.summary.usage = self.r.checkpoint.usage.clone();
        self.summary.failures = self.r.checkpoint.progress.counters.failures.clone();
        self.r.reporter.summary(&self.summary, end, &self.r.checkpoint);
        if let Some(lock) = self.r.lock.take()
            && let Err(e) = lock.release()
        {
            tracing::warn!("cannot release the lock: {e}");
        }
        Ok(())
    }

    /// The runtime and cost caps, checked before every attempt.
    fn cap_reached(&self) -> Option<Stop> {
        let general = &self.r.loaded.config.general;
        let cp = &self.r.checkpoint;
        if let Some(max) = general.max_runtime
            && self.elapsed() >= max.as_secs_f64()
        {
            return Some(Stop::Failed {
                cap: Cap::Runtime,
                message: format!(
                    "{}: the run has been active for {}",
                    Cap::Runtime.phrase(),
                    humantime::format_duration(max)
                ),
            });
        }
        if let Some(max) = general.max_cost_usd
            && cp.usage.cost_usd >= max
        {
            return Some(Stop::Failed {
                cap: Cap::Cost,
                message: format!("{}: the run has cost ${:.2} of ${max:.2}", Cap::Cost.phrase(), cp.usage.cost_usd),
            });
        }
        None
    }

    fn record_failure(&mut self, agent: &str, failure: &Classification, outcome: &Outcome) {
        let attempt_no = self.r.checkpoint.progress.counters.attempts;
        let tail = tail_chars(&outcome.text_tail, 2000);
        self.journal(
            "attempt_failed",
            json!({"attempt": attempt_no, "agent": agent, "category": failure.category, "rule": failure.rule,
                   "reason": failure.reason, "session": outcome.session, "evidence": tail,
                   "duration_ms": outcome.duration.as_millis() as u64, "usage": outcome.usage}),
        );
        self.r.reporter.line(&format!(
            "attempt {attempt_no} failed ({}, {}): {}",
            failure.category.as_str(),
            failure.rule,
            failure.reason
        ));
        if failure.category == Category::Ambiguous {
            tracing::warn!("flagged for review: attempt {attempt_no} failed in a way ralph cannot explain");
        }
        self.r.checkpoint.last_error =
            Some(LastError { classification: failure.clone(), agent: agent.to_string(), text_tail: tail, at: now() });
    }

    /// Keeps the finished phase's artifact for the next phase's prompt: its done file,
    /// or the final message of its last iteration.
    fn save_artifact(&mut self, phase_name: &str) {
        let Some(phase) = self.r.loaded.phases.iter().find(|p| p.name == phase_name) else { return };
        let text = match &phase.done {
            DoneSignal::File(path) => std::fs::read_to_string(self.r.dir.join(path)).ok(),
            _ => self.last_success.take(),
        };
        let Some(text) = text else { return };
        let path = self.r.artifacts_dir.join(format!("{phase_name}.md"));
        if let Err(e) = std::fs::create_dir_all(&self.r.artifacts_dir)
            .and_then(|()| crate::state::atomic::write_atomic(&path, text.as_bytes()))
        {
            tracing::warn!("cannot keep the artifact of phase {phase_name}: {e}");
        }
    }

    fn prompt(&self, resuming: bool) -> String {
        let progress = &self.r.checkpoint.progress;
        let pos = &progress.position;
        let phase = self.phase();
        let previous_name = pos.phase.checked_sub(1).and_then(|i| self.r.loaded.phases.get(i)).map(|p| p.name.clone());
        let previous_text = previous_name
            .as_ref()
            .and_then(|name| std::fs::read_to_string(self.r.artifacts_dir.join(format!("{name}.md"))).ok());
        let ctx = prompt::Context {
            goal: &self.r.goal,
            phase: &phase.name,
            phase_number: pos.phase + 1,
            phase_count: self.r.loaded.phases.len(),
            iteration: pos.iteration,
            iterations: phase.iterations,
            until_complete: phase.until_complete,
            done: &phase.done,
            previous: previous_name.as_deref().zip(previous_text.as_deref()),
            recovery: progress.recovery_note.as_deref(),
        };
        match (resuming, progress.recovery_note.as_deref()) {
            (true, note) => {
                prompt::render_continue(&ctx, note.unwrap_or("Continue the task where the previous attempt stopped."))
            }
            (false, _) => prompt::render(&self.r.templates[pos.phase], &ctx),
        }
    }

    /// Adds the attempt's cost and tokens to the run's and its phase's.
    fn add_usage(&mut self, outcome: &Outcome) {
        let phase = self.phase().name.clone();
        let cp = &mut self.r.checkpoint;
        cp.usage.add(&outcome.usage);
        cp.phase_usage.entry(phase).or_default().add(&outcome.usage);
        self.r.reporter.set_cost(cp.usage.cost_usd);
    }

    /// What is left of `[general] max_runtime`, if set.
    fn runtime_left(&self) -> Option<Duration> {
        let max = self.r.loaded.config.general.max_runtime?;
        Some(max.saturating_sub(Duration::from_secs_f64(self.elapsed())))
    }

    fn elapsed(&self) -> f64 {
        self.elapsed_before + self.started.elapsed().as_secs_f64()
    }

    fn phase(&self) -> &crate::config::Phase {
        &self.r.loaded.phases[self.r.checkpoint.progress.position.phase]
    }

    fn current_agent(&self) -> String {
        let pos = &self.r.checkpoint.progress.position;
        self.phase().chain.get(pos.agent_index).cloned().unwrap_or_default()
    }

    /// Writes the checkpoint atomically and durably, unless checkpoints are off.
    fn save(&mut self) -> Result<(), RalphError> {
        self.save_with(Durability::Durable)
    }

    fn save_with(&mut self, durability: Durability) -> Result<(), RalphError> {
        let elapsed = self.elapsed();
        let cp = &mut self.r.checkpoint;
        cp.elapsed_secs = elapsed;
        cp.updated_at = now();
        let Some(path) = &self.r.checkpoint_path else { return Ok(()) };
        store::save_json_with(path, cp, durability)
            .map_err(|e| RalphError::io(format!("cannot write the checkpoint {}", path.display()), e))
    }

    fn journal(&mut self, kind: &str, fields: serde_json::Value) {
        tracing::info!(kind, %fields);
        if let Err(e) = self.r.journal.append(kind, &fields) {
            tracing::warn!("cannot append to the journal: {e}");
        }
    }
}

impl Observer for Dispatcher {
    fn session(&mut self, id: &str) {
        if let Some(in_flight) = self.r.checkpoint.in_flight.as_mut() {
            in_flight.session = Some(id.to_string());
        }
        // A kill -9 from here on still resumes this session.
        if let Err(e) = self.save_with(Durability::Ordered) {
            tracing::warn!("{e}");
        }
    }

    fn event(&mut self, event: Option<&AgentEvent>) {
        self.r.reporter.agent_event(event);
    }
}

/// How an offline check ended.
enum Offline {
    /// The providers answer; nothing was paused.
    Online,
    /// They did not, and now do again.
    Recovered,
    /// A signal stopped the run during the pause.
    Stopped(RunEnd),
}

/// A number in [0, 1) for the backoff's jitter. The clock's nanoseconds are random
/// enough to keep many runs hit by one outage from retrying in lockstep.
fn jitter() -> f64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    f64::from(nanos) / 1e9
}

fn unix_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

/// What the done artifact looked like before the attempt, to see it change.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stamp {
    NotApplicable,
    Missing,
    Content(String),
}

impl Stamp {
    fn is_some_or_created(&self, dir: &std::path::Path, done: &DoneSignal) -> bool {
        !matches!(self, Stamp::NotApplicable) && matches!(artifact_stamp(dir, done), Stamp::Content(_))
    }
}

fn artifact_stamp(dir: &std::path::Path, done: &DoneSignal) -> Stamp {
    match done {
        DoneSignal::File(path) => match std::fs::read(dir.join(path)) {
            Ok(bytes) => Stamp::Content(super::setup::checksum(&bytes)),
            Err(_) => Stamp::Missing,
        },
        _ => Stamp::NotApplicable,
    }
}

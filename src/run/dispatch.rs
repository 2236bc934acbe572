//! The dispatcher: one loop that owns the run state. It asks the pure core what to
//! do (done signals, classification, policy), carries it out (attempts, waits), and
//! writes the checkpoint after every transition and the journal for every event.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::agent::AgentEvent;
use crate::agent::launch::{self, Request};
use crate::error::RalphError;
use crate::recovery::Category;
use crate::recovery::classify::{EndedBy, Exit};
use crate::recovery::policy::{self, Cap, FalloverWhy, Next, Stop};
use crate::recovery::rate_limit;
use crate::report::{AttemptLine, Summary};
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::atomic::Durability;
use crate::state::checkpoint::{InFlight, Status};
use crate::state::store;
use crate::supervise::note::Trouble;
use crate::workflow::done::{self, Completion, Evidence};
use crate::workflow::prompt;

use super::RunEnd;
use super::artifact::artifact_stamp;
use super::attempt::{self, End, Observer, Outcome};
use super::setup::{Ready, now};
use super::waits::Offline;

pub struct Dispatcher {
    pub(super) r: Ready,
    /// When this process started dispatching (for the runtime cap).
    pub(super) started: Instant,
    /// Active time of earlier sessions of this run.
    pub(super) elapsed_before: f64,
    pub(super) summary: Summary,
    /// The final message of the last successful attempt: the phase's artifact when
    /// the phase ends (written then, not after every iteration: it is only read by
    /// the next phase).
    pub(super) last_success: Option<String>,
    /// Journal lines about a transition that the next checkpoint save records
    /// (attempt outcomes), appended right after that save: a kill between the two
    /// loses a line, never lets the journal claim what the checkpoint does not hold
    /// (an iteration journaled done and then run again).
    pub(super) after_save: Vec<(&'static str, serde_json::Value)>,
}

impl Dispatcher {
    pub fn new(ready: Ready) -> Self {
        let elapsed_before = ready.checkpoint.elapsed_secs;
        Self {
            r: ready,
            started: Instant::now(),
            elapsed_before,
            summary: Summary::default(),
            last_success: None,
            after_save: Vec::new(),
        }
    }

    pub async fn run(mut self) -> Result<RunEnd, RalphError> {
        let mut signals = Signals::install().map_err(|e| RalphError::io("cannot install signal handlers", e))?;
        if let Some(t) = self.r.takeover.take() {
            let from = t.from.as_ref();
            self.journal(
                "lease_taken_over",
                json!({"from_host": from.map(|f| &f.host), "from_pid": from.map(|f| f.pid),
                       "from_boot_id": from.map(|f| &f.boot_id), "from_renewals": from.map(|f| f.renewals),
                       "waited_ms": t.waited.as_millis() as u64, "why": t.why}),
            );
        }
        let kind = if self.r.resumed { "run_resumed" } else { "run_started" };
        self.journal(kind, json!({"run_id": self.r.checkpoint.run_id, "pid": std::process::id()}));
        if let Some(i) = self.r.interrupted.take() {
            // The attempt that ran when the previous ralph died: it has no outcome
            // line of its own, and this one accounts for it once the checkpoint no
            // longer holds it in flight (else a kill right here would journal it twice).
            self.journal_after_save(
                "attempt_interrupted",
                json!({"attempt": i.attempt, "agent": i.agent, "session": i.session, "started_at": i.started_at}),
            );
        }
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

    pub(super) async fn dispatch(&mut self, signals: &mut Signals) -> Result<RunEnd, RalphError> {
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
            // A stop that came as the last attempt ended, after its result was kept.
            if let Some(cause) = signals.stopping() {
                return self.stopped(cause, None);
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
    pub(super) async fn attempt(&mut self, signals: &mut Signals) -> Result<Outcome, RalphError> {
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
                session_tokens: resume
                    .as_ref()
                    .and_then(|s| self.r.checkpoint.progress.session_tokens.get(s).copied())
                    .unwrap_or_default(),
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
    pub(super) async fn after_attempt(
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
                self.journal_after_save(
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

    pub(super) async fn carry_out(&mut self, next: Next, signals: &mut Signals) -> Result<Option<RunEnd>, RalphError> {
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

    /// An orderly stop by a signal: the in-flight session is kept for `--resume`.
    pub(super) fn stopped(&mut self, cause: StopCause, session: Option<String>) -> Result<RunEnd, RalphError> {
        let interrupted_note = self.note(Trouble::Interrupted, None);
        let cp = &mut self.r.checkpoint;
        if let Some(in_flight) = cp.in_flight.take() {
            self.after_save.push((
                "attempt_interrupted",
                json!({"attempt": in_flight.attempt, "agent": in_flight.agent, "signal": cause.signal_name()}),
            ));
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

    pub(super) fn stop(&mut self, stop: Stop) -> Result<RunEnd, RalphError> {
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
    pub(super) fn finish(&mut self, end: &RunEnd) -> Result<(), RalphError> {
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
        if let Some(lease) = self.r.lease.take()
            && let Err(e) = lease.release()
        {
            tracing::warn!("cannot release the lease: {e}");
        }
        if let Some(lock) = self.r.lock.take()
            && let Err(e) = lock.release()
        {
            tracing::warn!("cannot release the lock: {e}");
        }
        Ok(())
    }

    /// The runtime and cost caps, checked before every attempt.
    pub(super) fn cap_reached(&self) -> Option<Stop> {
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

    pub(super) fn prompt(&self, resuming: bool) -> String {
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
    pub(super) fn add_usage(&mut self, outcome: &Outcome) {
        let phase = self.phase().name.clone();
        let cp = &mut self.r.checkpoint;
        cp.usage.add(&outcome.usage);
        cp.phase_usage.entry(phase).or_default().add(&outcome.usage);
        if let Some(session) = &outcome.session {
            let tokens = cp.progress.session_tokens.entry(session.clone()).or_default();
            tokens.0 += outcome.usage.input_tokens;
            tokens.1 += outcome.usage.output_tokens;
        }
        self.r.reporter.set_cost(cp.usage.cost_usd);
    }

    /// What is left of `[general] max_runtime`, if set.
    pub(super) fn runtime_left(&self) -> Option<Duration> {
        let max = self.r.loaded.config.general.max_runtime?;
        Some(max.saturating_sub(Duration::from_secs_f64(self.elapsed())))
    }

    pub(super) fn elapsed(&self) -> f64 {
        self.elapsed_before + self.started.elapsed().as_secs_f64()
    }

    pub(super) fn phase(&self) -> &crate::config::Phase {
        &self.r.loaded.phases[self.r.checkpoint.progress.position.phase]
    }

    pub(super) fn current_agent(&self) -> String {
        let pos = &self.r.checkpoint.progress.position;
        self.phase().chain.get(pos.agent_index).cloned().unwrap_or_default()
    }

    /// Writes the checkpoint atomically and durably, unless checkpoints are off.
    pub(super) fn save(&mut self) -> Result<(), RalphError> {
        self.save_with(Durability::Durable)
    }

    pub(super) fn save_with(&mut self, durability: Durability) -> Result<(), RalphError> {
        if let Some(lease) = &self.r.lease {
            lease.ensure_held();
        }
        let elapsed = self.elapsed();
        let cp = &mut self.r.checkpoint;
        cp.elapsed_secs = elapsed;
        cp.updated_at = now();
        if let Some(path) = &self.r.checkpoint_path {
            store::save_json_with(path, cp, durability)
                .map_err(|e| RalphError::io(format!("cannot write the checkpoint {}", path.display()), e))?;
        }
        for (kind, fields) in std::mem::take(&mut self.after_save) {
            self.journal(kind, fields);
        }
        Ok(())
    }

    /// Journals a line about a transition once the checkpoint holding it is saved.
    pub(super) fn journal_after_save(&mut self, kind: &'static str, fields: serde_json::Value) {
        self.after_save.push((kind, fields));
    }

    pub(super) fn journal(&mut self, kind: &str, fields: serde_json::Value) {
        if let Some(lease) = &self.r.lease {
            lease.ensure_held();
        }
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

pub(super) fn unix_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

//! The dispatcher: one loop that owns the run state. It asks the pure core what to
//! do (done signals, classification, policy), carries it out (attempts, waits), and
//! writes the checkpoint after every transition and the journal for every event.

use std::time::Duration;

use tokio::time::Instant;

use crate::agent::AgentEvent;
use crate::agent::launch::{self, Request};
use crate::error::RalphError;
use crate::events::{self, RunEvent};
use crate::notify::Notifier;
use crate::recovery::Category;
use crate::recovery::classify::{EndedBy, Exit};
use crate::recovery::policy::{self, Cap, FalloverWhy, Next, Stop};
use crate::recovery::rate_limit;
use crate::report::Summary;
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::atomic::Durability;
use crate::state::checkpoint::{InFlight, Status};
use crate::state::store;
use crate::supervise::note::Trouble;
use crate::workflow::done::{self, Completion, Evidence};
use crate::workflow::{advance, prompt};

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
    /// The status last written to the run registry.
    pub(super) registered: Option<Status>,
    pub(super) notifier: Notifier,
    /// The control socket and what the agent told ralph through it.
    pub(super) control: super::control::ControlState,
}

impl Dispatcher {
    pub fn new(ready: Ready) -> Self {
        let elapsed_before = ready.checkpoint.elapsed_secs;
        let notifier = Notifier::new(&ready.loaded.config.notify, &ready.dir);
        Self {
            r: ready,
            started: Instant::now(),
            elapsed_before,
            summary: Summary::default(),
            last_success: None,
            registered: None,
            notifier,
            control: Default::default(),
        }
    }

    pub async fn run(mut self) -> Result<RunEnd, RalphError> {
        let mut signals = Signals::install().map_err(|e| RalphError::io("cannot install signal handlers", e))?;
        self.listen(&mut signals);
        let (run_id, pid, from) = (self.r.checkpoint.run_id.clone(), std::process::id(), self.r.from.clone());
        let pos = &self.r.checkpoint.progress.position;
        let (phase, pass) = (pos.phase_name.clone(), pos.pass);
        self.emit(if self.r.resumed {
            RunEvent::RunResumed { run_id, pid, from, phase, pass }
        } else {
            RunEvent::RunStarted { run_id, pid, from, phase, pass }
        });
        self.save()?;
        let end = self.dispatch(&mut signals).await;
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                // ralph's own failure: what is on disk stays the last valid state.
                self.emit(RunEvent::RunError { error: e.to_string() });
                return Err(e);
            }
        };
        if end != RunEnd::ForceExit {
            self.finish(&end)?;
            self.notifier.flush().await;
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
                self.emit(RunEvent::Fallback { from, to, why: "rate limit reset".to_string() });
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
                Some(InterruptAction::Control) => {
                    let _ = self.serve_inbox(signals);
                }
                Some(InterruptAction::Ignore) | None => {}
            }
            // `ralph stop`: the iteration it came in has ended.
            if self.iteration_ended_since_stop() {
                return self.stopped(StopCause::User, None);
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
                control: self.control.server.as_ref().filter(|_| agent_cfg.mcp).map(|s| (s.socket(), attempt_no)),
            },
        );
        let cp = &mut self.r.checkpoint;
        cp.status = Status::Running;
        cp.in_flight =
            Some(InFlight { agent: agent.clone(), attempt: attempt_no, session: resume.clone(), started_at: now() });
        let pos = cp.progress.position.clone();
        // Losing this state to a power cut equals a crash just before the attempt.
        self.save_with(Durability::Ordered)?;
        self.emit(RunEvent::AttemptStarted {
            attempt: attempt_no,
            phase: pos.phase_name.clone(),
            phase_number: pos.phase + 1,
            phase_count: self.r.loaded.phases.len(),
            iteration: pos.iteration,
            iterations: phase.iterations,
            pass: pos.pass,
            passes: pos.passes,
            agent: agent.clone(),
            cycle: pos.cycle,
            resume_session: resume.clone(),
        });
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
        if std::mem::take(&mut self.control.restarts_exhausted) {
            let (used, cap) =
                (self.r.checkpoint.progress.counters.mcp_restarts, self.r.loaded.config.retry.mcp_restarts);
            let message = format!(
                "{}: ralph mcp crashed {used} times in the run ([retry] mcp_restarts = {cap})",
                Cap::McpRestarts.phrase()
            );
            return self.stop(Stop::Failed { cap: Cap::McpRestarts, message }).map(Some);
        }
        if let Some(reason) = self.control.cancelled.take() {
            // The agent's own judgement that no one but a person can go on.
            let message = format!("the agent cancelled the task: {reason}");
            return self.stop(Stop::Blocked { message }).map(Some);
        }
        let claim = done::judge(outcome.final_message.as_deref());
        let completion = if ended_by == EndedBy::Agent {
            done::evaluate(
                &phase.done,
                &Evidence {
                    exited_cleanly: exit == Exit::Code(0),
                    claim,
                    result_is_error: outcome.result_is_error,
                    artifact_changed: outcome.artifact_changed,
                    declared: self
                        .control
                        .declared
                        .filter(|(attempt, _)| *attempt == self.r.checkpoint.progress.counters.attempts)
                        .map(|(_, goal)| goal),
                },
            )
        } else {
            Completion::NotDone("ended by ralph")
        };
        let attempt_no = self.r.checkpoint.progress.counters.attempts;
        let next = match completion {
            Completion::Done | Completion::Goal => {
                self.emit(RunEvent::AttemptSucceeded {
                    attempt: attempt_no,
                    agent,
                    phase: phase.name.clone(),
                    iteration: self.r.checkpoint.progress.position.iteration,
                    goal: completion == Completion::Goal,
                    review: advance::is_review(self.r.checkpoint.progress.position.phase, self.r.loaded.repeat),
                    duration_ms: outcome.duration.as_millis() as u64,
                    session: outcome.session.clone(),
                    usage: outcome.usage.clone(),
                });
                self.last_success = Some(outcome.final_message.clone().unwrap_or_default());
                policy::on_success(
                    &mut self.r.checkpoint.progress,
                    &self.r.loaded.phases,
                    self.r.loaded.repeat,
                    completion,
                )
            }
            Completion::NotDone(missing) => self.after_failure(outcome, exit, ended_by, claim, missing),
        };
        self.carry_out(next, signals).await
    }

    pub(super) async fn carry_out(&mut self, next: Next, signals: &mut Signals) -> Result<Option<RunEnd>, RalphError> {
        match next {
            Next::NextIteration => {
                let (phase, iteration) = (self.phase().name.clone(), self.r.checkpoint.progress.position.iteration);
                self.emit(RunEvent::IterationStarted { phase, iteration });
                self.save()?;
            }
            Next::NextPhase { finished, end } => {
                self.save_artifact(&finished);
                self.emit(RunEvent::PhaseDone { phase: finished });
                self.phase_ended(&end);
                self.save()?;
            }
            Next::Finished { end } => {
                let name = self.phase().name.clone();
                self.save_artifact(&name);
                self.emit(RunEvent::PhaseDone { phase: name });
                self.phase_ended(&end);
                return Ok(Some(RunEnd::Completed));
            }
            Next::Retry { delay } => {
                let session = self.r.checkpoint.progress.resume_session.clone();
                self.emit(RunEvent::Retry { delay_ms: delay.as_millis() as u64, resume_session: session });
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
                let why = match why {
                    FalloverWhy::Budget => events::FalloverWhy::RecoveryAttempts,
                    FalloverWhy::RateLimit => events::FalloverWhy::RateLimit,
                };
                self.emit(RunEvent::Fallover { from, to, cycle, why, new_cycle });
                self.save()?;
            }
            Next::WaitUntil { at, reason } => {
                self.emit(RunEvent::RateLimitWait { until: at, reason: reason.clone() });
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
                self.emit(RunEvent::CapReached { cap, message: message.clone() });
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
        let ended = RunEvent::RunEnded { status: cp.status, reason: cp.stop_reason.clone(), stop_cause: cp.stop_cause };
        self.emit(ended);
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
        let repeat = self.r.loaded.repeat;
        let previous_name =
            advance::previous_phase(pos, repeat).and_then(|i| self.r.loaded.phases.get(i)).map(|p| p.name.clone());
        let previous_text = previous_name
            .as_ref()
            .and_then(|name| std::fs::read_to_string(self.r.artifacts_dir.join(format!("{name}.md"))).ok());
        let from_note = progress.from.as_ref().and_then(|from| prompt::from_note(from, previous_name.as_deref()));
        let ctx = prompt::Context {
            goal: &self.r.goal,
            phase: &phase.name,
            phase_number: pos.phase + 1,
            phase_count: self.r.loaded.phases.len(),
            iteration: pos.iteration,
            iterations: phase.iterations,
            until_complete: phase.until_complete,
            pass: pos.passes.map(|passes| (pos.pass, passes)),
            review: advance::is_review(pos.phase, repeat),
            done: &phase.done,
            previous: previous_name.as_deref().zip(previous_text.as_deref()),
            from_note: from_note.as_deref(),
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
            cp.progress.add_session_tokens(session, outcome.usage.input_tokens, outcome.usage.output_tokens);
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
        let elapsed = self.elapsed();
        let cp = &mut self.r.checkpoint;
        cp.elapsed_secs = elapsed;
        cp.updated_at = now();
        let Some(path) = &self.r.checkpoint_path else { return Ok(()) };
        store::save_json_with(path, cp, durability)
            .map_err(|e| RalphError::io(format!("cannot write the checkpoint {}", path.display()), e))?;
        self.register_status();
        Ok(())
    }

    /// Hands a run event to every subscriber: the tracing log, the journal, the
    /// session's counters and the terminal.
    pub(super) fn emit(&mut self, event: RunEvent) {
        tracing::info!(kind = event.kind(), ?event);
        if let Err(e) = self.r.journal.record(&event) {
            tracing::warn!("cannot append to the journal: {e}");
        }
        self.summary.observe(&event);
        self.notifier.observe(&event, &self.r.checkpoint.run_id);
        if let RunEvent::Intervention { detector, .. } = &event {
            *self.r.checkpoint.progress.counters.interventions.entry(detector.clone()).or_insert(0) += 1;
        }
        self.publish(&event);
        self.r.reporter.event(&event);
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

    fn control(&mut self, inbox: Vec<crate::control::Inbound>, agent_running: bool) -> bool {
        self.apply_inbox(inbox, agent_running)
    }
}

pub(super) fn unix_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

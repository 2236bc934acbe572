//! The dispatcher: one loop that owns the run state. It asks the pure core what to
//! do (done signals, classification, policy), carries it out (attempts, waits), and
//! writes the checkpoint after every transition and the journal for every event.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::time::Instant;

use crate::agent::AgentEvent;
use crate::agent::descriptor::{LaunchError, Request};
use crate::agent::launch;
use crate::error::RalphError;
use crate::events::{self, RunEvent};
use crate::notify::Notifier;
use crate::recovery::classify::{EndedBy, Exit};
use crate::recovery::policy::{self, Cap, FalloverWhy, Next, Stop};
use crate::recovery::rate_limit;
use crate::report::Summary;
use crate::report::lines::{self, EndWhy, Escalating};
use crate::secrets::redact;
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::atomic::Durability;
use crate::state::checkpoint::{InFlight, Status, ToolCall};
use crate::state::store;
use crate::supervise::completion::Claim;
use crate::supervise::note::{self, LastTool, ToolState, Trouble};
use crate::supervise::watch;
use crate::workflow::done::{self, Completion, Evidence, SignOff};
use crate::workflow::{advance, prompt};

use super::RunEnd;
use super::artifact::artifact_stamp;
use super::attempt::{self, End, Observer, Outcome};
use super::failure::Ending;
use super::git_step::Step;
use super::setup::Ready;
use super::waits::Offline;

/// What a step of the loop comes to: `Some` when the run ends there.
pub(super) type Flow = Result<Option<RunEnd>, RalphError>;
/// A `T`, unless the run ended first (`Err` with how it ended).
pub(super) type Raced<T> = Result<Result<T, RunEnd>, RalphError>;

pub(crate) struct Dispatcher {
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
    /// The files the agent reported editing in the current iteration (git attribution).
    pub(super) touched: crate::git::attribution::Touched,
    /// The transcript of the attempt last started, for the last error's record.
    pub(super) last_log: Option<std::path::PathBuf>,
    /// A state file the disk had no room for: nothing new starts until it is written.
    pub(super) disk_full: Option<std::path::PathBuf>,
    /// The last attempt's log, part of which a full disk refused.
    pub(super) unsaved_log: Option<super::attempt_log::AttemptLog>,
    /// Default probe endpoints that answered during this run (filled in the
    /// background): only those count as evidence of being offline.
    pub(super) answered: Arc<Mutex<BTreeSet<String>>>,
    /// Events about a transition that the next checkpoint save records (attempt
    /// outcomes), emitted right after that save: a kill between the two loses a
    /// journal line, never lets the journal claim what the checkpoint does not hold
    /// (an iteration journaled done and then run again).
    pub(super) after_save: Vec<RunEvent>,
    /// The control socket and what the agent told ralph through it.
    pub(super) control: super::control::ControlState,
    /// The run's one clock: the shell reads it and hands the time to the core.
    pub(super) clock: fn() -> jiff::Timestamp,
    /// The last light save, in the journal but not yet in `checkpoint.json`.
    pub(super) behind: Option<serde_json::Value>,
}

impl Dispatcher {
    pub(crate) fn new(ready: Ready) -> Self {
        Self {
            elapsed_before: ready.checkpoint.elapsed_secs,
            notifier: Notifier::new(&ready.loaded.config.notify, &ready.dir),
            touched: crate::git::attribution::Touched::at_start(ready.resumed),
            r: ready,
            started: Instant::now(),
            summary: Summary::default(),
            last_success: None,
            registered: None,
            last_log: None,
            disk_full: None,
            unsaved_log: None,
            answered: Arc::default(),
            after_save: Vec::new(),
            control: Default::default(),
            clock: jiff::Timestamp::now,
            behind: None,
        }
    }

    /// The time, from the run's clock.
    pub(super) fn now(&self) -> jiff::Timestamp {
        (self.clock)()
    }

    /// [`Self::now`] in unix seconds, as the core's rate-limit and backoff rules count.
    pub(super) fn unix_now(&self) -> i64 {
        self.now().as_second()
    }

    /// Dispatches until the workflow ends. `signals` were installed when the lock
    /// was taken, so nothing that came since is lost.
    pub(crate) async fn run(mut self, mut signals: Signals) -> Result<RunEnd, RalphError> {
        self.listen(&mut signals)?;
        if let Some(t) = self.r.takeover.take() {
            let from = t.from.as_ref();
            self.emit(RunEvent::LeaseTakenOver {
                from_host: from.map(|f| f.host.clone()),
                from_pid: from.map(|f| f.pid),
                from_boot_id: from.map(|f| f.boot_id.clone()),
                from_renewals: from.map(|f| f.renewals),
                waited_ms: t.waited.as_millis() as u64,
                why: t.why.to_string(),
            });
        }
        let (run_id, pid, from) = (self.r.checkpoint.run_id.clone(), std::process::id(), self.r.from.clone());
        let pos = &self.r.checkpoint.progress.position;
        let (phase, pass) = (pos.phase_name.clone(), pos.pass);
        self.emit(if self.r.resumed {
            RunEvent::RunResumed { run_id, pid, from, phase, pass }
        } else {
            RunEvent::RunStarted { run_id, pid, from, phase, pass }
        });
        if let Some(i) = self.r.interrupted.take() {
            // The attempt that ran when the previous ralph died: it has no outcome
            // line of its own, and this one accounts for it once the checkpoint no
            // longer holds it in flight (else a kill right here would journal it twice).
            self.emit_after_save(RunEvent::AttemptInterrupted {
                attempt: i.attempt,
                agent: i.agent,
                session: i.session,
                started_at: Some(i.started_at.to_string()),
                signal: None,
            });
        }
        self.journal_git_start();
        self.save()?;
        self.probe_defaults_in_background();
        let end = match self.resume_pending(&mut signals).await.transpose() {
            Some(end) => end,
            None => self.dispatch(&mut signals).await,
        };
        let end = match end {
            // The final state must reach the disk too.
            Ok(end) if end != RunEnd::ForceExit => self.disk_wait(&mut signals).await?.unwrap_or(end),
            Ok(end) => end,
            Err(e) => {
                // ralph's own failure: what is on disk stays the last valid state.
                self.emit(RunEvent::RunError { error: e.to_string() });
                return Err(e);
            }
        };
        // A forced exit saves too: the intent was recorded at the first Ctrl+C, the
        // last attempt's usage is added now, and the lock is released, so the next
        // run sees a paused run and not a crash.
        self.finish(&end)?;
        if end != RunEnd::ForceExit {
            self.notifier.flush().await;
        }
        Ok(end)
    }

    /// The loop: whatever must happen before an attempt, the attempt, and what its
    /// outcome decides, until one of them ends the run.
    pub(super) async fn dispatch(&mut self, signals: &mut Signals) -> Result<RunEnd, RalphError> {
        loop {
            if let Some(end) = self.before_attempt(signals).await? {
                return Ok(end);
            }
            let outcome = self.attempt(signals).await?;
            if let Some(end) = self.after_outcome(outcome, signals).await? {
                return Ok(end);
            }
        }
    }

    /// The waits and stops that come before the next attempt; `Some` when the run
    /// ends there.
    async fn before_attempt(&mut self, signals: &mut Signals) -> Flow {
        // A full disk is an outage: the last good checkpoint stays on disk and
        // nothing new starts until the current state is written.
        if let Some(end) = self.disk_wait(signals).await? {
            return Ok(Some(end));
        }
        if let Some(stop) = self.cap_reached() {
            return self.stop(stop).map(Some);
        }
        // An offline pause survives a restart: probe before any attempt.
        if self.r.checkpoint.progress.offline_since.is_some()
            && let Offline::Stopped(end) = self.offline_pause(signals).await?
        {
            return Ok(Some(end));
        }
        // A fleet task waits for a reset another task learned for its provider.
        if let Some(fleet) = &self.r.fleet
            && let Some(agent) = self.r.loaded.config.agents.get(&self.current_agent())
            && let Some(at) = fleet.shared_reset(&self.current_agent(), agent, self.unix_now())
        {
            self.r.checkpoint.progress.rate_limit_until.get_or_insert(at);
        }
        // A rate-limit wait survives a restart: a resumed run keeps waiting.
        if let Some(at) = self.r.checkpoint.progress.rate_limit_until
            && let Some(end) = self.wait_for_reset(at, "rate limit", signals).await?
        {
            return Ok(Some(end));
        }
        let now = self.unix_now();
        if let Some((from, to)) =
            rate_limit::return_after_reset(&mut self.r.checkpoint.progress, &self.r.loaded.phases, now)
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
            Some(InterruptAction::Stop(cause)) => return self.stopped(cause, None).map(Some),
            Some(InterruptAction::ForceExit) => return self.forced(signals, None).map(Some),
            Some(InterruptAction::Control) => {
                let _ = self.serve_inbox(signals);
            }
            Some(InterruptAction::Ignore) | None => {}
        }
        // `ralph stop`: the iteration it came in has ended.
        if self.iteration_ended_since_stop() {
            return self.stopped(StopCause::User, None).map(Some);
        }
        // A stop that came as the last attempt ended, after its result was kept.
        if let Some(cause) = signals.stopping() {
            return self.stopped(cause, None).map(Some);
        }
        Ok(None)
    }

    /// Records an attempt's outcome and carries out what it decides; `Some` when the
    /// run ends there.
    async fn after_outcome(&mut self, outcome: Outcome, signals: &mut Signals) -> Flow {
        let agent = self.current_agent();
        self.add_usage(&outcome);
        match outcome.end {
            End::ForceExit => self.forced(signals, outcome.session).map(Some),
            End::Stopped(cause) => {
                // The attempt's own view of its last tool call is the freshest.
                if let (Some(in_flight), Some(tool)) = (self.r.checkpoint.in_flight.as_mut(), &outcome.last_tool) {
                    in_flight.tool = Some(tool_call(tool));
                }
                // The live line of the stop is gone: this line stays.
                self.r.reporter.line(&lines::agent_stopped(&agent, outcome.last_signal.map(|s| s.as_str())));
                self.stopped(cause, outcome.session).map(Some)
            }
            End::SpawnFailed { ref error, ref program } => self.spawn_failed(&agent, program, error, signals).await,
            End::Exited { ended_by: EndedBy::CostCap, .. } => {
                // The attempt was ended on the cost cap: the run stops on it.
                if let Some(found) = &outcome.intervention {
                    self.intervene(found.detector, &found.evidence);
                }
                self.r.checkpoint.in_flight = None;
                let cost = self.r.checkpoint.usage.cost_usd;
                let stop = self.cap_reached().unwrap_or_else(|| Cap::Cost.stop(format!("the run has cost ${cost:.2}")));
                self.stop(stop).map(Some)
            }
            End::Exited { exit, ended_by } => self.after_attempt(&outcome, exit, ended_by, signals).await,
        }
    }

    /// Starts and runs one attempt of the current position.
    pub(super) async fn attempt(&mut self, signals: &mut Signals) -> Result<Outcome, RalphError> {
        let (prepared, stem) = self.begin_attempt()?;
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                let error = std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string());
                return Ok(Outcome::not_started(error, String::new()));
            }
        };
        let done = self.phase().done.clone();
        let (artifact, log_path) = (artifact_stamp(&self.r.dir, &done), self.r.logs_dir.join(format!("{stem}.log")));
        self.last_log = Some(log_path.clone());
        let config = &self.r.loaded.config;
        let limits = watch::attempt_limits(&config.timeouts, prepared.quiet_tools, self.runtime_left());
        let max_log = config.logs.max_attempt_log;
        let cost_left = config.general.max_cost_usd.map(|max| max - self.r.checkpoint.usage.cost_usd);
        let mut outcome = attempt::run(prepared, &limits, cost_left, signals, self, &log_path, max_log).await;
        // What a full disk held back is written before anything new starts.
        if let Some(log) = outcome.unsaved_log.take() {
            self.disk_full.get_or_insert_with(|| log.current().to_path_buf());
            self.unsaved_log = Some(log);
        }
        self.r.reporter.clear();
        if artifact_stamp(&self.r.dir, &done) != artifact && artifact.is_some_or_created(&self.r.dir, &done) {
            outcome.artifact_changed = true;
        }
        Ok(outcome)
    }

    /// Counts the attempt, renders its prompt, prepares its launch, and records it
    /// in flight (saved, then journaled). Returns the launch and the name stem of its logs.
    fn begin_attempt(&mut self) -> Result<(Result<launch::Prepared, LaunchError>, String), RalphError> {
        let (agent, iterations) = (self.current_agent(), self.phase().iterations);
        let cp = &mut self.r.checkpoint;
        cp.progress.counters.attempts += 1;
        let launches = cp.progress.launches.entry(agent.clone()).or_insert(0);
        *launches += 1;
        let launch_no = *launches;
        let attempt_no = cp.progress.counters.attempts;
        let resume = cp.progress.resume_session.clone();
        let session_tokens =
            resume.as_ref().and_then(|s| cp.progress.session_tokens.get(s).copied()).unwrap_or_default();
        let prompt = self.prompt(resume.is_some());
        let agent_cfg = self.r.loaded.config.agents.get(&agent).cloned().ok_or_else(|| {
            RalphError::ResumeMismatch(format!("agent {agent} is no longer configured; run `ralph --no-resume`"))
        })?;
        let pos_name = self.r.checkpoint.progress.position.phase_name.clone();
        let (iteration_no, pass_no) =
            (self.r.checkpoint.progress.position.iteration, self.r.checkpoint.progress.position.pass);
        let stem = format!("attempt-{attempt_no:04}-{pos_name}-{agent}");
        // What the agent was told, beside what it answered: the first thing to read
        // when a run goes wrong. A `command` agent may read it as {prompt_file}.
        let prompt_file = self.r.logs_dir.join(format!("{stem}.prompt.md"));
        crate::state::private::create_file(&prompt_file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, redact(&prompt).as_bytes()))
            .unwrap_or_else(|e| tracing::warn!("cannot keep the prompt of attempt {attempt_no}: {e}"));
        self.keep_channel()?;
        let prepared = launch::prepare(
            &agent_cfg,
            Request {
                agent: &agent,
                prompt: &prompt,
                prompt_file: &prompt_file,
                resume: resume.as_deref(),
                launch: launch_no,
                cwd: &self.r.dir,
                run_id: &self.r.checkpoint.run_id,
                session_tokens,
                control: self.control.server.as_ref().filter(|_| agent_cfg.mcp).map(|s| (s.socket(), attempt_no)),
            },
        );
        if let Some(fleet) = &self.r.fleet {
            // The isolation check's window of this iteration (docs/fleet.md).
            fleet.open_window(&crate::git::message::iteration_key(&pos_name, iteration_no, pass_no));
        }
        let (started_at, cp) = (self.now(), &mut self.r.checkpoint);
        cp.status = Status::Running;
        cp.in_flight = Some(InFlight {
            agent: agent.clone(),
            attempt: attempt_no,
            session: resume.clone(),
            started_at,
            tool: None,
        });
        let pos = cp.progress.position.clone();
        // Losing this state to a power cut equals a crash just before the attempt.
        self.save_with(Durability::Ordered)?;
        self.emit(RunEvent::AttemptStarted {
            attempt: attempt_no,
            env_withheld: prepared.as_ref().map(|p| p.withheld_env.clone()).unwrap_or_default(),
            phase: pos.phase_name.clone(),
            phase_number: pos.phase + 1,
            phase_count: self.r.loaded.phases.len(),
            iteration: pos.iteration,
            iterations,
            pass: pos.pass,
            passes: pos.passes,
            agent: agent.clone(),
            cycle: pos.cycle,
            resume_session: resume.clone(),
        });
        Ok((prepared, stem))
    }

    /// Evaluates a finished attempt and carries out the policy's decision.
    pub(super) async fn after_attempt(
        &mut self,
        outcome: &Outcome,
        exit: Exit,
        ended_by: EndedBy,
        signals: &mut Signals,
    ) -> Flow {
        let (agent, phase) = (self.current_agent(), self.phase().clone());
        if let Some(session) = &outcome.session {
            self.r.checkpoint.progress.sessions.insert(agent.clone(), session.clone());
        }
        self.r.checkpoint.in_flight = None;
        if let Some(stop) = self.control_stop() {
            return self.stop(stop).map(Some);
        }
        let claim = done::judge(outcome.final_message.as_deref());
        let completion = self.completion(outcome, exit, ended_by, &claim);
        let attempt_no = self.r.checkpoint.progress.counters.attempts;
        tracing::debug!(
            attempt = attempt_no, ?exit, ?ended_by, ?claim, ?completion, done = ?phase.done,
            result_is_error = outcome.result_is_error, artifact_changed = outcome.artifact_changed,
            "judged the attempt"
        );
        let next = match completion {
            Completion::Done | Completion::Goal => {
                if let Claim::Doubtful { why, .. } = &claim {
                    self.signoff(SignOff::AcceptedWithDoubt, why);
                }
                self.emit_after_save(RunEvent::AttemptSucceeded {
                    attempt: attempt_no,
                    agent,
                    phase: phase.name.clone(),
                    iteration: self.r.checkpoint.progress.position.iteration,
                    goal: completion == Completion::Goal,
                    until_complete: phase.until_complete,
                    review: advance::is_review(self.r.checkpoint.progress.position.phase, self.r.loaded.repeat),
                    duration_ms: outcome.duration.as_millis() as u64,
                    session: outcome.session.clone(),
                    usage: outcome.usage.clone(),
                });
                let final_message = outcome.final_message.as_deref().unwrap_or_default();
                self.last_success = Some(final_message.to_string());
                // A fleet task that changed things outside its worktree commits nothing.
                if let Some(why) = self.r.fleet.as_ref().and_then(|f| {
                    let pos = &self.r.checkpoint.progress.position;
                    f.close_window(&crate::git::message::iteration_key(&pos.phase_name, pos.iteration, pos.pass))
                }) {
                    return self.stop(Stop::Blocked { message: why }).map(Some);
                }
                let step = self.commit_done(completion.clone(), final_message)?;
                if matches!(step, Step::Done) {
                    self.probe_defaults_in_background();
                }
                self.after_commit(step, completion, outcome)
            }
            Completion::Confirm => {
                self.ask_to_confirm(outcome, &claim, phase.until_complete)?;
                return Ok(None);
            }
            Completion::NotDone(missing) => {
                let ending = Ending { exit, ended_by, claim: &claim, missing: &missing };
                match self.after_failure(outcome, ending, signals).await? {
                    Ok(next) => next,
                    Err(end) => return Ok(Some(end)),
                }
            }
        };
        self.carry_out(next, signals).await
    }

    /// What the agent said through the control socket that ends the run: `ralph mcp`
    /// crashed too often, or the agent cancelled the task.
    fn control_stop(&mut self) -> Option<Stop> {
        if std::mem::take(&mut self.control.restarts_exhausted) {
            let (used, cap) =
                (self.r.checkpoint.progress.counters.mcp_restarts, self.r.loaded.config.retry.mcp_restarts);
            return Some(
                Cap::McpRestarts
                    .stop(format!("ralph mcp crashed {used} times in the run ([retry] mcp_restarts = {cap})")),
            );
        }
        // The agent's own judgement that no one but a person can go on.
        let reason = self.control.cancelled.take()?;
        Some(Stop::Blocked { message: format!("the agent cancelled the task: {reason}") })
    }

    /// Whether the attempt finished the iteration (the phase's done signal, judged
    /// by the core on the attempt's evidence).
    fn completion(&self, outcome: &Outcome, exit: Exit, ended_by: EndedBy, claim: &Claim) -> Completion {
        if ended_by != EndedBy::Agent {
            return Completion::NotDone("ended by ralph".into());
        }
        let agent = self.current_agent();
        let resumable = self.r.loaded.config.agents.get(&agent).is_some_and(crate::config::AgentConfig::can_resume);
        let counters = &self.r.checkpoint.progress.counters;
        let declared = self.control.declared.filter(|(attempt, _)| *attempt == counters.attempts);
        done::evaluate(
            &self.phase().done,
            &Evidence {
                exited_cleanly: exit == Exit::Code(0),
                claim,
                result_is_error: outcome.result_is_error,
                artifact_changed: outcome.artifact_changed,
                session_known: outcome.session.is_some() && resumable,
                already_asked: counters.confirmations > 0,
                declared: declared.map(|(_, goal)| goal),
            },
        )
    }

    /// Resumes the agent's session with the confirmation question: no failure, no
    /// budget, no backoff. The next attempt's reply is judged as usual.
    fn ask_to_confirm(&mut self, outcome: &Outcome, claim: &Claim, until_complete: bool) -> Result<(), RalphError> {
        let (Some(session), Some((why, goal))) = (outcome.session.clone(), claim.doubt()) else { return Ok(()) };
        self.signoff(SignOff::Asked, &why);
        self.intervene("done_confirmation", &why.describe());
        let question = note::confirmation(&why, goal, until_complete);
        policy::ask_to_confirm(&mut self.r.checkpoint.progress, session, question);
        self.save()
    }

    pub(super) async fn carry_out(&mut self, next: Next, signals: &mut Signals) -> Flow {
        tracing::debug!(?next, "carrying out");
        match next {
            Next::Iteration => {
                let (phase, iteration) = (self.phase().name.clone(), self.r.checkpoint.progress.position.iteration);
                self.emit(RunEvent::IterationStarted { phase, iteration });
                self.save()?;
            }
            Next::Phase { finished, end } => {
                self.phase_ended(finished, &end);
                self.save()?;
            }
            Next::Finished { end } => {
                self.phase_ended(self.phase().name.clone(), &end);
                return Ok(Some(RunEnd::Completed));
            }
            Next::Retry { delay, probe_first } => {
                let session = self.r.checkpoint.progress.resume_session.clone();
                self.emit(RunEvent::Retry { delay_ms: delay.as_millis() as u64, resume_session: session });
                self.save()?;
                if probe_first {
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
            Next::WaitUntil { at, reset, reason } => {
                if let (Some(fleet), agent) = (&self.r.fleet, self.current_agent())
                    && let Some(cfg) = self.r.loaded.config.agents.get(&agent)
                {
                    // Every task using this provider waits for the same reset.
                    fleet.publish_reset(&agent, cfg, at);
                }
                self.emit(RunEvent::RateLimitWait { until: at, reset, reason: reason.clone() });
                return self.wait_for_reset(at, &reason, signals).await;
            }
            Next::Stop(stop) => return self.stop(stop).map(Some),
        }
        Ok(None)
    }

    /// The second Ctrl+C: the agent's group is already killed. The run is recorded
    /// as stopped by the first signal's cause, like an orderly stop.
    fn forced(&mut self, signals: &Signals, session: Option<String>) -> Result<RunEnd, RalphError> {
        self.r.reporter.killed(self.r.checkpoint.in_flight.as_ref().map(|f| f.agent.as_str()));
        self.stopped(signals.stopping().unwrap_or(StopCause::User), session)?;
        Ok(RunEnd::ForceExit)
    }

    /// An orderly stop by a signal: the in-flight session is kept for `--resume`.
    pub(super) fn stopped(&mut self, cause: StopCause, session: Option<String>) -> Result<RunEnd, RalphError> {
        let last_tool = self.r.checkpoint.in_flight.as_ref().and_then(|f| f.tool.as_ref()).map(in_flight_tool);
        let interrupted_note = self.note(Trouble::Interrupted, last_tool);
        if let Some(in_flight) = self.r.checkpoint.in_flight.take() {
            let session = session.or(in_flight.session);
            // The journal tells every attempt's end, this one included, once the
            // checkpoint no longer holds it in flight.
            self.emit_after_save(RunEvent::AttemptInterrupted {
                attempt: in_flight.attempt,
                agent: in_flight.agent.clone(),
                session: session.clone(),
                started_at: None,
                signal: Some(cause.signal_name().to_string()),
            });
            // The attempt did not fail: it was stopped. Its session continues later.
            let progress = &mut self.r.checkpoint.progress;
            if let Some(s) = session {
                progress.sessions.insert(in_flight.agent, s.clone());
                progress.resume_session = Some(s);
            }
            progress.recovery_note = Some(interrupted_note);
        }
        let cp = &mut self.r.checkpoint;
        (cp.status, cp.stop_cause) = (Status::stopped_by(cause), Some(cause));
        Ok(RunEnd::Stopped(cause))
    }

    pub(super) fn stop(&mut self, stop: Stop) -> Result<RunEnd, RalphError> {
        let cp = &mut self.r.checkpoint;
        cp.in_flight = None;
        Ok(match stop {
            Stop::Failed { cap, message } => {
                (cp.status, cp.stop_reason) = (Status::Failed, Some(message.clone()));
                self.emit(RunEvent::CapReached { cap, message: message.clone() });
                RunEnd::Failed(message)
            }
            Stop::Blocked { message } => {
                (cp.status, cp.stop_reason) = (Status::Blocked, Some(message.clone()));
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
        self.summary.next = crate::report::next_step(
            end,
            self.summary.cap,
            self.r.checkpoint.last_error.as_ref(),
            &self.r.loaded.config,
            &self.r.loaded.path,
            &self.phase().name,
        );
        self.r.reporter.summary(&self.summary, end, &self.r.checkpoint);
        if let Some(lease) = self.r.lease.take() {
            lease.release().unwrap_or_else(|e| tracing::warn!("cannot release the lease: {e}"));
        }
        // A final state the disk had no room for is not a clean stop: the lock keeps
        // its content, as the checkpoint on disk still says `running`.
        if self.disk_full.is_some() {
            return Ok(());
        }
        if let Some(lock) = self.r.lock.take() {
            lock.release().unwrap_or_else(|e| tracing::warn!("cannot release the lock: {e}"));
        }
        Ok(())
    }

    /// The runtime and cost caps, checked before every attempt.
    pub(super) fn cap_reached(&self) -> Option<Stop> {
        policy::run_cap(&self.r.loaded.config.general, self.elapsed(), self.r.checkpoint.usage.cost_usd)
    }

    pub(super) fn prompt(&self, resuming: bool) -> String {
        let progress = &self.r.checkpoint.progress;
        let pos = &progress.position;
        let (phase, repeat) = (self.phase(), self.r.loaded.repeat);
        let previous_name =
            advance::previous_phase(pos, repeat).and_then(|i| self.r.loaded.phases.get(i)).map(|p| p.name.clone());
        // What ralph adds to the goal quotes earlier agents: redacted (the goal, the
        // user's own, goes as written).
        let previous_text = previous_name
            .as_ref()
            .and_then(|name| std::fs::read_to_string(self.r.artifacts_dir.join(format!("{name}.md"))).ok())
            .map(|text| redact(&text));
        let from_note = progress.from.as_ref().and_then(|from| prompt::from_note(from, previous_name.as_deref()));
        // The note was written when the attempt failed; the goal is today's.
        let recovery = progress.recovery_note.as_deref().map(|n| note::with_goal(&redact(n), &self.r.goal));
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
            recovery: recovery.as_deref(),
        };
        match (resuming, recovery.as_deref()) {
            (true, note) => {
                prompt::render_continue(&ctx, note.unwrap_or("Continue the task where the previous attempt stopped."))
            }
            (false, _) => prompt::render(&self.r.templates[pos.phase], &ctx),
        }
    }

    /// Adds the attempt's cost and tokens to the run's and its phase's.
    pub(super) fn add_usage(&mut self, outcome: &Outcome) {
        let (phase, cp) = (self.phase().name.clone(), &mut self.r.checkpoint);
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
    /// Durably means its snapshot appended to the journal and synced, then
    /// `checkpoint.json` replaced without a sync: one `fdatasync` per transition
    /// (resume takes the newer of the two, `state::format::read_newest`). When the
    /// journal cannot take it, the file is made durable itself.
    pub(super) fn save(&mut self) -> Result<(), RalphError> {
        self.save_with(Durability::Durable)
    }

    /// `Ordered` (attempt started, session known): the snapshot appended to the journal
    /// unsynced and no new file; a kill keeps it, a power cut loses it as if it came
    /// just before. `checkpoint.json` catches up at the next save or once the agent
    /// has run a moment (`Observer::catch_up`): a file per light save was a new inode
    /// and a rename per agent call. `Unsynced` (tool started): the file alone.
    pub(super) fn save_with(&mut self, durability: Durability) -> Result<(), RalphError> {
        if let Some(lease) = &self.r.lease {
            lease.ensure_held();
        }
        let elapsed = self.elapsed();
        // The chain the position refers to, so a resume under another config can
        // tell which agent owns the session.
        let agents = &self.r.loaded.config.agents;
        let chain = crate::recovery::resume::chain_of(self.phase(), &|name| agents.get(name).map(|a| a.kind));
        let (now, cp) = (self.now(), &mut self.r.checkpoint);
        cp.progress.position.chain = chain;
        cp.elapsed_secs = elapsed;
        cp.updated_at = now;
        cp.seq += 1;
        let Some(path) = self.r.checkpoint_path.clone() else {
            self.emit_saved();
            return Ok(());
        };
        let path = &path;
        // Reasons, errors and recovery notes quote the agent (its last tool call's
        // input among them): on disk they are redacted like every log.
        let mut value = serde_json::to_value(&*cp)
            .map_err(|e| RalphError::Internal(format!("cannot encode the checkpoint: {e}")))?;
        crate::secrets::redact_json(&mut value);
        let durable = durability == Durability::Durable;
        let journaled = durability != Durability::Unsynced
            && (self.r.journal.snapshot(&value, durable))
                .inspect_err(|e| tracing::warn!("cannot append the checkpoint to the journal, writing the file: {e}"))
                .is_ok();
        let written = if journaled && !durable {
            self.behind = Some(value);
            Ok(())
        } else {
            self.behind = None;
            let file = if durable && !journaled { durability } else { Durability::Unsynced };
            store::save_json_with(path, &value, file)
        };
        match written {
            Ok(()) => {
                self.register_status();
                self.emit_saved();
                Ok(())
            }
            // Not a failure: the previous checkpoint is intact, and the dispatcher
            // waits for space before it starts anything new.
            Err(e) if crate::state::disk::is_full(&e) => {
                tracing::warn!("disk full writing the checkpoint {}: {e}", path.display());
                self.disk_full = Some(path.clone());
                self.emit_saved();
                Ok(())
            }
            Err(e) => Err(RalphError::io(format!("cannot write the checkpoint {}", path.display()), e)),
        }
    }

    /// Emits `event` right after the next checkpoint save (see `after_save`).
    pub(super) fn emit_after_save(&mut self, event: RunEvent) {
        self.after_save.push(event);
    }

    fn emit_saved(&mut self) {
        for event in std::mem::take(&mut self.after_save) {
            self.emit(event);
        }
    }

    /// Hands a run event to every subscriber: the tracing log, the journal, the
    /// session's counters and the terminal.
    pub(super) fn emit(&mut self, event: RunEvent) {
        // Behind an event that waits for the save, so the journal and the terminal
        // keep the order things happened in (an iteration's end before its phase's).
        if !self.after_save.is_empty() {
            self.after_save.push(event);
            return;
        }
        // Fencing: a ralph whose lease another host took writes nothing more.
        if let Some(lease) = &self.r.lease {
            lease.ensure_held();
        }
        tracing::info!(kind = event.kind(), ?event);
        if let Err(e) = self.r.journal.record(&event) {
            tracing::warn!("cannot append to the journal: {e}");
            if crate::state::disk::is_full(&e) {
                self.disk_full = self.disk_full.take().or_else(|| self.r.journal.path().map(|p| p.to_path_buf()));
            }
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
        self.save_with(Durability::Ordered).unwrap_or_else(|e| tracing::warn!("{e}"));
    }

    fn event(&mut self, event: Option<&AgentEvent>) {
        if let Some(e) = event {
            self.touched.observe(e);
        }
        self.r.reporter.agent_event();
    }

    fn stopping(&mut self, cause: StopCause) {
        let cp = &mut self.r.checkpoint;
        (cp.status, cp.stop_cause) = (Status::stopped_by(cause), Some(cause));
        self.emit(RunEvent::StopRequested { signal: cause.signal_name().to_string() });
        self.save().unwrap_or_else(|e| tracing::warn!("{e}"));
        #[cfg(debug_assertions)]
        super::test_hooks::hang_if_asked("RALPH_TEST_HANG_AFTER_STOP");
    }

    fn tool(&mut self, tool: &LastTool) {
        // Only a start is worth a write: after a crash, the call named is one whose
        // outcome must be checked either way.
        let started = tool.state == ToolState::StartedNoResult;
        let Some(in_flight) = self.r.checkpoint.in_flight.as_mut().filter(|_| started) else { return };
        in_flight.tool = Some(tool_call(tool));
        // The file alone: the agent's time dwarfs a rename, and a snapshot per tool
        // call would grow the journal by the checkpoint's size each time.
        self.save_with(Durability::Unsynced).unwrap_or_else(|e| tracing::warn!("{e}"));
    }

    fn escalating(&mut self, why: EndWhy, sent: Signal, next: Option<(Signal, Instant)>) {
        tracing::debug!(?why, %sent, next = ?next.map(|(s, _)| s), "escalation step");
        let view =
            Escalating { agent: self.current_agent(), why, sent: sent.as_str(), next: next.map(|(s, _)| s.as_str()) };
        self.r.reporter.escalating(&view, next.map(|(_, at)| at.into_std()));
    }

    fn control(&mut self, inbox: Vec<crate::control::Inbound>, agent_running: bool) -> bool {
        self.apply_inbox(inbox, agent_running)
    }

    fn log_disk(&mut self, event: RunEvent) {
        self.emit(event);
    }

    fn catch_up(&mut self) {
        let (Some(value), Some(path)) = (self.behind.take(), self.r.checkpoint_path.as_ref()) else { return };
        store::save_json_with(path, &value, Durability::Unsynced)
            .unwrap_or_else(|e| tracing::warn!("cannot write the checkpoint {}: {e}", path.display()));
    }
}

/// A tool call as the checkpoint keeps it (its input redacted).
fn tool_call(tool: &LastTool) -> ToolCall {
    ToolCall {
        name: tool.name.clone(),
        input: redact(&tool.input_summary),
        finished: tool.state == ToolState::Finished,
    }
}

/// The tool call recorded in the checkpoint, as the note names it.
fn in_flight_tool(tool: &ToolCall) -> LastTool {
    LastTool {
        name: tool.name.clone(),
        input_summary: tool.input.clone(),
        state: if tool.finished { ToolState::Finished } else { ToolState::StartedNoResult },
    }
}

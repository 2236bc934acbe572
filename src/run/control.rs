//! The dispatcher's side of the control socket: it starts the server, publishes the
//! live state after every event, and applies what `ralph stop` and the agent's MCP
//! tools sent (journaled as run events, read back when the attempt ends).

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::control::server::{QUEUE, Server};
use crate::control::{Inbound, Live};
use crate::error::RalphError;
use crate::events::RunEvent;
use crate::signal::Signals;
use crate::state::checkpoint::AgentCheckpoint;

use super::dispatch::Dispatcher;

/// What the socket brought in that the dispatcher keeps.
#[derive(Default)]
pub(super) struct ControlState {
    pub live: Arc<Mutex<Live>>,
    pub server: Option<Server>,
    /// `ralph stop`: the (phase, iteration, pass) it came in.
    pub stop_after: Option<(usize, u32, u32)>,
    /// `declare_complete` of the running attempt: (attempt, goal_complete).
    pub declared: Option<(u32, bool)>,
    /// `cancel_task` of the running attempt.
    pub cancelled: Option<String>,
    /// `report_interruption` of the running attempt.
    pub interruption: Option<String>,
    /// `ralph mcp` crashed more often than `[retry] mcp_restarts` allows; the run
    /// stops when the attempt ends.
    pub restarts_exhausted: bool,
}

impl Dispatcher {
    /// Starts serving the control socket bound in set-up and records where it is.
    /// Without the record `ralph status` and `ralph stop` could not find the run: the
    /// run does not start then, and leaves the directory as it found it.
    pub(super) fn listen(&mut self, signals: &mut Signals) -> Result<(), RalphError> {
        let Some(bound) = self.r.control.take() else { return Ok(()) };
        let (tx, rx) = mpsc::channel(QUEUE);
        let mut live = lock(&self.control.live);
        (live.run_id, live.pid) = (self.r.checkpoint.run_id.clone(), std::process::id());
        drop(live);
        self.refresh_live();
        let run_id = self.r.checkpoint.run_id.clone();
        match Server::start(bound, &self.r.dir, &run_id, self.control.live.clone(), tx) {
            Ok(server) => {
                tracing::info!("control socket at {}", server.socket().display());
                self.control.server = Some(server);
                signals.attach(rx);
                Ok(())
            }
            Err(e) => {
                // Nothing of the run changed yet: a clean release, as set-up does.
                if let Some(lease) = self.r.lease.take() {
                    let _ = lease.release();
                }
                if let Some(lock) = self.r.lock.take() {
                    let _ = lock.release();
                }
                let record = crate::control::path::record_of(&self.r.dir);
                Err(RalphError::setup(format!("cannot record the control socket in {}", record.display()), e))
            }
        }
    }

    /// Before an attempt: the socket is still where the agent's `ralph mcp` and the
    /// clients will look for it, or it is bound anew (a cleaner of the temp dir may
    /// have removed it while the run waited). With no place left the run stops: it
    /// does not run an attempt that may need the channel without it.
    pub(super) fn keep_channel(&mut self) -> Result<(), RalphError> {
        let Some(server) = self.control.server.as_mut() else { return Ok(()) };
        match server.keep_in_place() {
            Ok(false) => Ok(()),
            Ok(true) => {
                let line = format!("the control socket was gone; listening again at {}", server.socket().display());
                self.r.reporter.line(&line);
                tracing::warn!("{line}");
                Ok(())
            }
            Err(e) => Err(RalphError::io("the control socket is gone", std::io::Error::other(e.to_string()))),
        }
    }

    /// Applies the socket's messages; true when the run should stop now (a
    /// `ralph stop` while nothing of the iteration runs).
    pub(super) fn serve_inbox(&mut self, signals: &mut Signals) -> bool {
        let inbox = signals.take_inbox();
        self.apply_inbox(inbox, false);
        self.control.stop_after.is_some()
    }

    /// Applies the socket's messages; true when one was the agent's heartbeat.
    pub(super) fn apply_inbox(&mut self, inbox: Vec<Inbound>, agent_running: bool) -> bool {
        let mut heartbeat = false;
        for msg in inbox {
            heartbeat |= !matches!(msg, Inbound::Stop { .. });
            match msg {
                Inbound::Stop { .. } => {
                    if self.control.stop_after.is_none() {
                        self.control.stop_after = Some(self.position_key());
                        self.emit(RunEvent::StopAfterIteration {});
                    }
                }
                // The socket answers status requests itself.
                Inbound::Hello { .. } | Inbound::Bye { .. } | Inbound::Status {} | Inbound::TaskStatus { .. } => {}
                // Only a server lost while its agent still runs is a crash: the
                // agent's own exit (and ralph's cleanup of its group) ends it too.
                Inbound::McpLost { attempt }
                    if agent_running && attempt == self.r.checkpoint.progress.counters.attempts =>
                {
                    let counters = &mut self.r.checkpoint.progress.counters;
                    counters.mcp_restarts += 1;
                    let (restarts, cap) = (counters.mcp_restarts, self.r.loaded.config.retry.mcp_restarts);
                    self.control.restarts_exhausted |= restarts > cap;
                    self.emit(RunEvent::McpLost { attempt, restarts, cap });
                }
                Inbound::McpLost { .. } => {}
                Inbound::Progress { attempt, message } => self.emit(RunEvent::AgentProgress { attempt, message }),
                Inbound::Checkpoint { attempt, summary, files_touched, steps_done, next_steps } => {
                    let pos = &self.r.checkpoint.progress.position;
                    self.r.checkpoint.agent_checkpoint = Some(AgentCheckpoint {
                        phase: pos.phase_name.clone(),
                        iteration: pos.iteration,
                        summary: summary.clone(),
                        steps_done: steps_done.clone(),
                        next_steps: next_steps.clone(),
                    });
                    self.emit(RunEvent::AgentCheckpoint { attempt, summary, files_touched, steps_done, next_steps });
                    self.save().unwrap_or_else(|e| tracing::warn!("{e}"));
                }
                Inbound::Interruption { attempt, reason } => {
                    self.control.interruption = Some(reason.clone());
                    self.emit(RunEvent::AgentInterruption { attempt, reason });
                }
                Inbound::Complete { attempt, summary, evidence, goal_complete } => {
                    self.control.declared = Some((attempt, goal_complete));
                    self.emit(RunEvent::CompletionDeclared { attempt, summary, evidence, goal_complete });
                }
                Inbound::Cancel { attempt, reason } => {
                    self.control.cancelled = Some(reason.clone());
                    self.emit(RunEvent::TaskCancelled { attempt, reason });
                }
            }
        }
        heartbeat
    }

    /// A `ralph stop` came and the iteration it came in is over.
    pub(super) fn iteration_ended_since_stop(&self) -> bool {
        self.control.stop_after.is_some_and(|at| at != self.position_key())
    }

    fn position_key(&self) -> (usize, u32, u32) {
        let pos = &self.r.checkpoint.progress.position;
        (pos.phase, pos.iteration, pos.pass)
    }

    /// Publishes the live state for `ralph status` and `get_task_status`.
    pub(super) fn publish(&mut self, event: &RunEvent) {
        if let RunEvent::AttemptStarted { attempt, .. } = event {
            // A new attempt: what the last one declared is its own.
            (self.control.declared, self.control.cancelled, self.control.interruption) = (None, None, None);
            lock(&self.control.live).attempt = *attempt;
        }
        self.refresh_live();
        lock(&self.control.live).last_event = Some(event.kind().to_string());
    }

    fn refresh_live(&self) {
        let cp = &self.r.checkpoint;
        let (pos, phase) = (&cp.progress.position, self.phase());
        let mut live = lock(&self.control.live);
        live.phase = pos.phase_name.clone();
        live.iteration = pos.iteration;
        live.iterations = phase.iterations;
        live.agent = self.current_agent();
        live.status = cp.status.as_str().to_string();
        live.waiting_for = (cp.status == crate::state::checkpoint::Status::Waiting).then(|| {
            match (cp.progress.rate_limit_until, cp.progress.offline_since) {
                (Some(at), _) => format!("a rate-limit reset at unix second {at}"),
                (None, Some(_)) => "the providers to come back online".to_string(),
                (None, None) => "a backoff before the next attempt".to_string(),
            }
        });
        live.stop_requested = self.control.stop_after.is_some();
        live.recovery_note = cp.progress.recovery_note.clone();
        live.last_checkpoint = cp
            .agent_checkpoint
            .as_ref()
            .filter(|c| c.phase == pos.phase_name && c.iteration == pos.iteration)
            .map(|c| c.summary.clone());
        let max_cost = self.r.loaded.config.general.max_cost_usd;
        live.budget = max_cost.map(|max| format!("${:.2} of ${max:.2} spent", cp.usage.cost_usd));
    }
}

fn lock(live: &Mutex<Live>) -> std::sync::MutexGuard<'_, Live> {
    live.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

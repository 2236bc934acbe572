//! The run's side of the control socket: it starts the server (whose messages reach
//! the loop with the signals) and publishes the live state `ralph status` and the
//! agent's `get_task_status` read. What the messages change, and what the live state
//! says, is the step's (`step::control`).

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::control::Live;
use crate::control::server::{QUEUE, Server};
use crate::events::RunEvent;
use crate::signal::Signals;
use crate::step::RunState;

/// The socket and the live state it answers with.
#[derive(Default)]
pub(super) struct ControlSocket {
    live: Arc<Mutex<Live>>,
    server: Option<Server>,
}

impl ControlSocket {
    /// Starts the control socket; a run without one still runs (with a warning).
    pub(super) fn listen(&mut self, dir: &std::path::Path, run: &RunState, signals: &mut Signals) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let mut live = lock(&self.live);
        (live.run_id, live.pid) = (run.cp.run_id.clone(), std::process::id());
        drop(live);
        self.refresh(run);
        match Server::start(dir, self.live.clone(), tx) {
            Ok(server) => {
                tracing::info!("control socket at {}", server.socket().display());
                self.server = Some(server);
                signals.attach(rx);
            }
            Err(e) => {
                tracing::warn!("no control socket (ralph status/stop and ralph mcp will not reach this run): {e}")
            }
        }
    }

    /// The socket `ralph mcp` connects to.
    pub(super) fn socket(&self) -> Option<&std::path::Path> {
        self.server.as_ref().map(Server::socket)
    }

    /// Publishes the live state after an event.
    pub(super) fn publish(&self, event: &RunEvent, run: &RunState) {
        if let RunEvent::AttemptStarted { attempt, .. } = event {
            lock(&self.live).attempt = *attempt;
        }
        self.refresh(run);
        lock(&self.live).last_event = Some(event.kind().to_string());
    }

    /// The live state, from the run state.
    pub(super) fn refresh(&self, run: &RunState) {
        crate::step::control::live(run, &mut lock(&self.live));
    }
}

fn lock(live: &Mutex<Live>) -> std::sync::MutexGuard<'_, Live> {
    live.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

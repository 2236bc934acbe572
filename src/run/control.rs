//! The run's side of the control socket: it serves the socket set-up bound (whose
//! messages reach the loop with the signals), keeps it in place before each attempt,
//! and publishes the live state `ralph status` and the agent's `get_task_status` read. What the messages change, and what the live state
//! says, is the step's (`step::control`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::control::Live;
use crate::control::output_clock::OutputClock;
use crate::control::server::{Bound, NoPlace, QUEUE, Server};
use crate::events::RunEvent;
use crate::listeners::Signals;
use crate::state::identity::Identity;
use crate::step::RunState;

/// The socket and the live state it answers with.
#[derive(Default)]
pub(super) struct ControlSocket {
    live: Arc<Mutex<Live>>,
    /// The running agent's last output, which the socket reads itself.
    output: OutputClock,
    server: Option<Server>,
}

impl ControlSocket {
    /// Starts serving the control socket `bound` in set-up and records where it is.
    /// Without the record `ralph status` and `ralph stop` could not find the run: the
    /// run does not start then (the error).
    pub(super) fn listen(
        &mut self,
        bound: Option<Bound>,
        dir: &Path,
        run: &RunState,
        signals: &mut Signals,
    ) -> std::io::Result<()> {
        let Some(bound) = bound else { return Ok(()) };
        let (tx, rx) = mpsc::channel(QUEUE);
        let mut live = lock(&self.live);
        (live.run_id, live.pid) = (run.cp.run_id.clone(), std::process::id());
        drop(live);
        self.refresh(run);
        let server = Server::start(bound, dir, &run.cp.run_id, self.live.clone(), self.output.clone(), tx)?;
        tracing::info!("control socket at {}", server.socket().display());
        self.server = Some(server);
        signals.attach(rx);
        Ok(())
    }

    /// Before an attempt: the socket is still where the agent's `ralph mcp` and the
    /// clients look for it, or it is bound anew (a cleaner of the temp dir may have
    /// removed it while the run waited); its new place when it moved. With no place
    /// left, an error: the run does not run an attempt that may need the channel
    /// without it.
    pub(super) fn keep(&mut self) -> Result<Option<String>, NoPlace> {
        let Some(server) = self.server.as_mut() else { return Ok(None) };
        Ok(server.keep_in_place()?.then(|| server.socket().display().to_string()))
    }

    /// The socket `ralph mcp` connects to.
    pub(super) fn socket(&self) -> Option<&Path> {
        self.server.as_ref().map(Server::socket)
    }

    /// The run directory's identity, as the socket serves it (for the registry).
    pub(super) fn identity(&self) -> Option<Identity> {
        self.server.as_ref().map(|s| s.serving().dir)
    }

    /// The clock the running attempt marks when its agent prints.
    pub(super) fn output(&self) -> OutputClock {
        self.output.clone()
    }

    /// Publishes the live state after an event, stamped with the time it was told.
    pub(super) fn publish(&self, event: &RunEvent, run: &RunState) {
        if let RunEvent::AttemptStarted { attempt, .. } = event {
            self.output.clear();
            lock(&self.live).attempt = *attempt;
        }
        self.refresh(run);
        let mut live = lock(&self.live);
        (live.last_event, live.last_event_at) =
            (Some(event.kind().to_string()), Some(jiff::Timestamp::now().as_second()));
    }

    /// The live state, from the run state.
    pub(super) fn refresh(&self, run: &RunState) {
        crate::step::control::live(run, &mut lock(&self.live));
    }
}

fn lock(live: &Mutex<Live>) -> std::sync::MutexGuard<'_, Live> {
    live.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

//! The signal machine's listeners, the shell half of [`crate::signal`] (a module of
//! its own, above the control socket whose messages it hands on, while the pure
//! machine stays on the floor below): the
//! process's SIGINT, SIGTERM, SIGHUP and SIGTSTP streams (and the control socket's
//! messages) turned into [`Incoming`] values for the pure [`InterruptState`]; the
//! backstop armed at the first stop, so a second Ctrl+C works even when the event
//! loop is blocked; a suspension carried out, its length the [`Suspension`] the
//! attempt's clocks leave out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc;

use crate::control::Inbound;
use crate::process::agent_group;
use crate::signal::origin;
use crate::signal::{Incoming, InterruptAction, InterruptState};

/// The process's SIGINT, SIGTERM, SIGHUP and SIGTSTP streams, plus the state
/// machine, plus the control socket's messages (`ralph stop --now` is a first
/// Ctrl+C; the rest are handed to the dispatcher, which waits on this one stream
/// wherever it waits).
pub(crate) struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
    tstp: Signal,
    pub state: InterruptState,
    suspension: Suspension,
    control: Option<mpsc::Receiver<Inbound>>,
    inbox: Vec<Inbound>,
    /// `[watch] service_managers`: more programs whose SIGTERM is the machine's.
    managers: Vec<String>,
}

impl Signals {
    /// Installs the handlers, and the record of who sends SIGTERM and SIGHUP;
    /// `managers` are the programs of `[watch] service_managers`. From here on these
    /// signals no longer kill ralph.
    pub(crate) fn install(managers: &[String]) -> std::io::Result<Self> {
        crate::os::origin::record()?;
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            tstp: signal(SignalKind::from_raw(nix::libc::SIGTSTP))?,
            state: InterruptState::default(),
            suspension: Suspension::default(),
            control: None,
            inbox: Vec::new(),
            managers: managers.to_vec(),
        })
    }

    /// Listens to the control socket's messages too.
    pub(crate) fn attach(&mut self, control: mpsc::Receiver<Inbound>) {
        self.control = Some(control);
    }

    /// The control messages received since the last call.
    pub(crate) fn take_inbox(&mut self) -> Vec<Inbound> {
        std::mem::take(&mut self.inbox)
    }

    /// Waits for the next signal and returns what to do about it. Ctrl+Z, whatever
    /// else is under way, is carried out here (the call returns after `fg`) and
    /// reported as [`InterruptAction::Ignore`]; [`Signals::suspension`] adds how long
    /// it took.
    pub(crate) async fn next(&mut self) -> InterruptAction {
        let incoming = tokio::select! {
            _ = self.int.recv() => Incoming::Interrupt,
            _ = self.term.recv() => Incoming::Terminate { deliberate: origin::found(&self.managers) },
            _ = self.hup.recv() => Incoming::Hangup,
            _ = self.tstp.recv() => {
                self.suspension.add(agent_group::suspend());
                return InterruptAction::Ignore;
            }
            Some(msg) = recv(&mut self.control) => match msg {
                Inbound::Stop { now: true } => Incoming::Interrupt,
                other => {
                    self.inbox.push(other);
                    return InterruptAction::Control;
                }
            },
        };
        let action = self.state.on_signal(incoming);
        // From now on a second Ctrl+C works even if the loop never gets to it.
        if matches!(action, InterruptAction::Stop(_))
            && let Err(e) = agent_group::arm_backstop()
        {
            tracing::warn!("cannot arm the second-Ctrl+C backstop: {e}");
        }
        action
    }

    /// The time ralph spends suspended, as it grows; the attempt's clocks leave it out.
    pub(crate) fn suspension(&self) -> Suspension {
        self.suspension.clone()
    }
}

/// The total time ralph spent stopped by Ctrl+Z, shared with whoever keeps a clock
/// that must leave it out (the running attempt's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Suspension(Arc<AtomicU64>);

impl Suspension {
    pub(crate) fn get(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    fn add(&self, stopped: Duration) {
        let nanos = u64::try_from(stopped.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::Relaxed);
    }
}

async fn recv(control: &mut Option<mpsc::Receiver<Inbound>>) -> Option<Inbound> {
    match control {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

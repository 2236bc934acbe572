//! Ending an agent's process group with grace: the [`Escalation`]'s steps sent as
//! signals, each with the time the next one is due.

use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::time::Instant;

use super::escalation::{Escalation, Step};
use super::group::signal_group;

/// An escalation under way against one process group.
#[derive(Debug)]
pub(crate) struct Ending {
    esc: Escalation,
    pgid: u32,
    /// When the next, stronger signal is due.
    next_at: Option<Instant>,
}

impl Ending {
    /// Sends `first` to the group (the agent's stop signal), the next after `grace`.
    pub(crate) fn start(first: Signal, grace: Duration, pgid: u32) -> Self {
        let (esc, step) = Escalation::start_with(first, grace);
        Self { esc, pgid, next_at: send(step, pgid) }
    }

    /// The grace period ran out: the next signal is sent. True when it is a new one
    /// (a repeated SIGKILL is no news for the person watching).
    pub(crate) fn grace_elapsed(&mut self) -> bool {
        let before = self.esc.last_signal();
        self.next_at = send(self.esc.grace_elapsed(), self.pgid);
        self.esc.last_signal() != before
    }

    /// When the next signal is due.
    pub(crate) fn next_at(&self) -> Option<Instant> {
        self.next_at
    }

    /// Time stopped (Ctrl+Z) is no grace: the next signal moves on by `paused`.
    pub(crate) fn pause(&mut self, paused: Duration) {
        if let Some(at) = self.next_at.as_mut() {
            *at += paused;
        }
    }

    /// The signal sent last.
    pub(crate) fn sent(&self) -> Signal {
        self.esc.last_signal()
    }

    /// The signal that follows with its time, if the group is still there then
    /// (none after SIGKILL, which is only repeated).
    pub(crate) fn next(&self) -> Option<(Signal, Instant)> {
        let next = match self.sent() {
            Signal::SIGINT => Some(Signal::SIGTERM),
            Signal::SIGKILL => None,
            _ => Some(Signal::SIGKILL),
        };
        next.zip(self.next_at)
    }
}

/// Sends the step's signal; returns when to escalate next.
fn send(step: Step, pgid: u32) -> Option<Instant> {
    let Step::Send { signal, wait } = step;
    tracing::info!("sending {signal} to the agent's process group {pgid}");
    signal_group(pgid, signal).unwrap_or_else(|e| tracing::warn!("cannot signal process group {pgid}: {e}"));
    wait.map(|w| Instant::now() + w)
}

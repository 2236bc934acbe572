//! How an agent is ended: SIGINT, then SIGTERM, then SIGKILL, each after a grace
//! period. Pure: the shell sends the signals and runs the timers.

use std::time::Duration;

use nix::sys::signal::Signal;

/// Where an escalation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Escalation {
    sent: Signal,
    grace: Duration,
}

/// The next thing to do.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send this signal to the group, then wait up to `wait` for the exit.
    Send { signal: Signal, wait: Option<Duration> },
}

impl Escalation {
    /// Begins with `first` (SIGINT, or SIGTERM for an agent known to ignore SIGINT).
    pub(crate) fn start_with(first: Signal, grace: Duration) -> (Self, Step) {
        (Self { sent: first, grace }, Step::Send { signal: first, wait: Some(grace) })
    }

    /// The grace period ran out and the agent is still there.
    pub(crate) fn grace_elapsed(&mut self) -> Step {
        // After SIGKILL there is nothing stronger: wait for the exit unbounded
        // (the kernel delivers it), but keep re-sending in case a new process
        // joined the group meanwhile.
        let signal = if self.sent == Signal::SIGINT { Signal::SIGTERM } else { Signal::SIGKILL };
        self.sent = signal;
        Step::Send { signal, wait: Some(self.grace) }
    }

    pub(crate) fn last_signal(&self) -> Signal {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escalates_int_term_kill() {
        let g = Duration::from_secs(10);
        let (mut e, first) = Escalation::start_with(Signal::SIGINT, g);
        assert_eq!(first, Step::Send { signal: Signal::SIGINT, wait: Some(g) });
        assert_eq!(e.grace_elapsed(), Step::Send { signal: Signal::SIGTERM, wait: Some(g) });
        assert_eq!(e.grace_elapsed(), Step::Send { signal: Signal::SIGKILL, wait: Some(g) });
        assert_eq!(e.grace_elapsed(), Step::Send { signal: Signal::SIGKILL, wait: Some(g) });
        assert_eq!(e.last_signal(), Signal::SIGKILL);
    }

    #[test]
    fn an_agent_that_ignores_sigint_starts_at_sigterm() {
        let g = Duration::from_secs(10);
        let (mut e, first) = Escalation::start_with(Signal::SIGTERM, g);
        assert_eq!(first, Step::Send { signal: Signal::SIGTERM, wait: Some(g) });
        assert_eq!(e.grace_elapsed(), Step::Send { signal: Signal::SIGKILL, wait: Some(g) });
    }
}

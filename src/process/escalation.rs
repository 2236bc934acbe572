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

    /// An escalation started at `first` whose grace runs out `times` times: the
    /// signals it sent, each with the grace to wait (checked), and the escalation.
    fn escalated(first: Signal, times: usize) -> (Escalation, Vec<Signal>) {
        let g = Duration::from_secs(10);
        let (mut e, step) = Escalation::start_with(first, g);
        let steps: Vec<Step> = std::iter::once(step).chain((0..times).map(|_| e.grace_elapsed())).collect();
        let signals = steps
            .into_iter()
            .map(|step| match step {
                Step::Send { signal, wait } if wait == Some(g) => signal,
                other => panic!("{other:?}"),
            })
            .collect();
        (e, signals)
    }

    #[test]
    fn escalates_int_term_kill() {
        let (e, sent) = escalated(Signal::SIGINT, 3);
        assert_eq!(sent, [Signal::SIGINT, Signal::SIGTERM, Signal::SIGKILL, Signal::SIGKILL]);
        assert_eq!(e.last_signal(), Signal::SIGKILL);
    }

    #[test]
    fn an_agent_that_ignores_sigint_starts_at_sigterm() {
        assert_eq!(escalated(Signal::SIGTERM, 1).1, [Signal::SIGTERM, Signal::SIGKILL]);
    }
}

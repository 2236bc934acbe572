//! The two-stage interrupt, as a state machine that needs no real signals.
//!
//! The first SIGINT asks for an orderly stop that the user chose (the run is saved as
//! `paused`), and so does a SIGTERM sent by a process of the user's own ([`origin`]);
//! a SIGTERM of the machine and SIGHUP ask for the same orderly stop on its behalf
//! (saved as `interrupted`, so a watchdog may resume it). A second SIGINT
//! while stopping means "now": the agent's group is killed and ralph exits at once.
//! Ctrl+Z (SIGTSTP) suspends ralph together with the agent's group; the clocks of
//! the attempt do not count the time stopped.
//!
//! This file is the pure machine ([`InterruptState`]: an [`Incoming`] signal in, an
//! [`InterruptAction`] out), part of the decision core. Its listeners are the shell,
//! `crate::listeners`: `listeners::Signals` turns the process's signal streams into
//! [`Incoming`] values, arms the backstop at the first stop (so a second Ctrl+C
//! works even when the event loop is blocked) and carries out a suspension (its
//! length is the `listeners::Suspension` the attempt's clocks leave out).

/// Why a stop was asked for: a type of the floor below (`outcome`), which the run's
/// end, the error table and the exit codes share without importing this module.
pub(crate) use crate::outcome::StopCause;

pub(crate) mod origin;

/// A signal ralph reacts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Incoming {
    Interrupt,
    /// SIGTERM; `deliberate`: sent by a process of the user's own.
    Terminate {
        deliberate: bool,
    },
    Hangup,
}

/// What the shell must do about a signal.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InterruptAction {
    /// Start nothing new, end the agent with grace, save, exit.
    Stop(StopCause),
    /// Kill the agent's group and exit immediately.
    ForceExit,
    /// Already stopping; nothing more to do.
    Ignore,
    /// Messages from the control socket wait in `listeners::Signals::take_inbox`.
    Control,
}

/// Remembers whether an orderly stop is already under way.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct InterruptState {
    stopping: Option<StopCause>,
}

impl InterruptState {
    pub(crate) fn on_signal(&mut self, incoming: Incoming) -> InterruptAction {
        match (self.stopping, incoming) {
            (None, Incoming::Interrupt) => self.begin(StopCause::User),
            (None, Incoming::Terminate { deliberate: false }) => self.begin(StopCause::Terminate),
            (None, Incoming::Terminate { deliberate: true }) => self.begin(StopCause::Deliberate),
            (None, Incoming::Hangup) => self.begin(StopCause::Hangup),
            // Only the user's second Ctrl+C hurries the stop: a service manager
            // repeats SIGTERM and a dying terminal may send SIGHUP more than once,
            // and neither means "skip the cleanup".
            (Some(_), Incoming::Interrupt) => InterruptAction::ForceExit,
            (Some(_), Incoming::Terminate { .. } | Incoming::Hangup) => InterruptAction::Ignore,
        }
    }

    fn begin(&mut self, cause: StopCause) -> InterruptAction {
        self.stopping = Some(cause);
        InterruptAction::Stop(cause)
    }

    #[cfg(test)]
    pub(crate) fn stopping(&self) -> Option<StopCause> {
        self.stopping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_ctrl_c_is_the_users_orderly_stop() {
        let mut s = InterruptState::default();
        assert_eq!(s.on_signal(Incoming::Interrupt), InterruptAction::Stop(StopCause::User));
        assert_eq!(s.stopping(), Some(StopCause::User));
    }

    #[test]
    fn second_ctrl_c_forces_exit() {
        let mut s = InterruptState::default();
        let _ = s.on_signal(Incoming::Interrupt);
        assert_eq!(s.on_signal(Incoming::Interrupt), InterruptAction::ForceExit);
    }

    #[test]
    fn sigterm_and_sighup_stop_in_order_and_are_not_a_pause() {
        let mut s = InterruptState::default();
        let term = Incoming::Terminate { deliberate: false };
        assert_eq!(s.on_signal(term), InterruptAction::Stop(StopCause::Terminate));
        assert_eq!(s.on_signal(term), InterruptAction::Ignore);
        assert_eq!(s.on_signal(Incoming::Hangup), InterruptAction::Ignore);
        let mut h = InterruptState::default();
        assert_eq!(h.on_signal(Incoming::Hangup), InterruptAction::Stop(StopCause::Hangup));
    }

    #[test]
    fn a_sigterm_of_the_users_own_pauses_like_ctrl_c_and_reads_back_as_sigterm() {
        let mut s = InterruptState::default();
        assert_eq!(s.on_signal(Incoming::Terminate { deliberate: true }), InterruptAction::Stop(StopCause::Deliberate));
        assert_eq!(s.on_signal(Incoming::Terminate { deliberate: false }), InterruptAction::Ignore);
        assert_eq!(StopCause::Deliberate.signal_name(), "SIGTERM");
        let saved = serde_json::to_string(&StopCause::Deliberate).unwrap_or_default();
        assert_eq!(saved, "\"terminate\"");
        assert_eq!(serde_json::from_str::<StopCause>(&saved).ok(), Some(StopCause::Terminate));
    }

    #[test]
    fn ctrl_c_during_a_sigterm_stop_hurries_it() {
        let mut s = InterruptState::default();
        let _ = s.on_signal(Incoming::Terminate { deliberate: false });
        assert_eq!(s.on_signal(Incoming::Interrupt), InterruptAction::ForceExit);
        assert_eq!(s.stopping(), Some(StopCause::Terminate));
    }
}

//! How a run ended. A plain value shared by the dispatcher that produces it, the
//! reporter that describes it and the exit-code table that maps it, so none of them
//! imports another for it.

use crate::signal::StopCause;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunEnd {
    Completed,
    /// A cap or budget ran out.
    Failed(String),
    /// A human must act.
    Blocked(String),
    /// Stopped by a signal, with an orderly save.
    Stopped(StopCause),
    /// The user's second Ctrl+C: killed and left at once.
    ForceExit,
    /// The user answered "quit" to the resume question: nothing started or changed.
    Declined,
}

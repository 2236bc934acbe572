//! How a run ended, and why a stop was asked for. Plain values shared by the
//! dispatcher that produces them, the signal machine ([`StopCause`]), the reporter
//! that describes them, the errors and the exit-code table that maps them, so none
//! of them imports another for it.
//!
//! A leaf: this file imports nothing of the crate, so every floor may use it.

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

/// Why an orderly stop was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StopCause {
    /// Ctrl+C: the user's decision; the run stays paused until `--resume`.
    User,
    /// SIGTERM: a shutdown or a service manager.
    Terminate,
    /// SIGHUP: the terminal went away.
    Hangup,
    /// SIGTERM sent by a process of the user's own (`kill PID`, a script): as much
    /// the user's decision as Ctrl+C, so the run is paused. Saved as `"terminate"`,
    /// which every ralph reads (the checkpoint's `stop_sender` says who sent it).
    #[serde(rename = "terminate", skip_deserializing)]
    Deliberate,
}

impl StopCause {
    pub(crate) fn signal_name(self) -> &'static str {
        match self {
            StopCause::User => "SIGINT",
            StopCause::Terminate | StopCause::Deliberate => "SIGTERM",
            StopCause::Hangup => "SIGHUP",
        }
    }
}

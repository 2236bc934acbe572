//! The process exit codes of ralph (design.md §2), a leaf every floor may use: which
//! ending gets which code is the one table in `exit`, which re-exports them.

/// The workflow finished: every phase reached its done signal.
pub(crate) const DONE: i32 = 0;
/// The run failed: a budget or cap was exhausted, or an agent failure ended it.
pub(crate) const FAILED: i32 = 1;
/// A problem found before the first attempt (usage, configuration, pre-flight,
/// state ralph cannot use).
pub(crate) const USAGE: i32 = 2;
/// Blocked: a person must act after the run started (credentials, billing, a
/// binary gone).
pub(crate) const BLOCKED: i32 = 3;
/// An internal error: a bug, an I/O failure ralph cannot wait out, or the run
/// directory's lease taken over by another host.
pub(crate) const INTERNAL: i32 = 4;
/// Stopped by the user's Ctrl+C (SIGINT); the checkpoint is `paused`.
pub(crate) const INTERRUPTED: i32 = 130;
/// Stopped by SIGHUP (a closed terminal); the checkpoint is `interrupted`.
pub(crate) const HANGUP: i32 = 129;
/// Stopped by SIGTERM (shutdown, service manager); the checkpoint is `interrupted`.
pub(crate) const TERMINATED: i32 = 143;

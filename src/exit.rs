//! The process exit codes of ralph, in one place (design.md §2).

/// The workflow finished: every phase reached its done signal.
pub const DONE: i32 = 0;
/// The run failed: a budget or cap was exhausted, or an agent failure ended it.
pub const FAILED: i32 = 1;
/// A usage or configuration error, found before anything ran.
pub const USAGE: i32 = 2;
/// Blocked: a human must act (credentials, billing, a missing binary).
pub const BLOCKED: i32 = 3;
/// An internal error: a bug, or a state ralph cannot wait out (its lease on the run
/// directory was taken over by another host).
pub const INTERNAL: i32 = 4;
/// Stopped by the user's Ctrl+C (SIGINT); the checkpoint is `paused`.
pub const INTERRUPTED: i32 = 130;
/// Stopped by SIGHUP (a closed terminal); the checkpoint is `interrupted`.
pub const HANGUP: i32 = 129;
/// Stopped by SIGTERM (shutdown, service manager); the checkpoint is `interrupted`.
pub const TERMINATED: i32 = 143;

use crate::error::RalphError;

/// The exit code for an error that stopped ralph outside a run's own outcome.
pub fn for_error(error: &RalphError) -> i32 {
    match error {
        RalphError::Config(_)
        | RalphError::Prompt { .. }
        | RalphError::Locked(_)
        | RalphError::CheckpointCorrupt { .. }
        | RalphError::ResumeChoiceNeeded { .. }
        | RalphError::NothingToResume(_)
        | RalphError::ResumeMismatch(_)
        | RalphError::Usage(_) => USAGE,
        RalphError::Io { .. } => FAILED,
    }
}

//! The process exit codes of ralph and the one table that maps every way a command
//! can end to one of them (design.md §2). Nothing else in the crate picks a code.
//! The codes themselves are the leaf [`crate::exit_codes`] (re-exported here), so a
//! file below `error` (the lease that exits when another host took the run over,
//! the second Ctrl+C's forced exit) takes one without importing the table.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | a cap or budget ran out (agent failures included) |
//! | 2 | a problem found before the first attempt: usage, configuration, the agent pre-flight, an unwritable `.agent/`, a checkpoint ralph cannot use |
//! | 3 | a person must act after the run started: credentials, billing, a binary gone, a launch that can never succeed; a git lock another process keeps |
//! | 4 | an internal error: a bug, or an I/O failure ralph cannot wait out |
//! | 130 / 143 / 129 | stopped by Ctrl+C / SIGTERM / SIGHUP |

pub(crate) use crate::exit_codes::*;

use crate::error::RalphError;
use crate::outcome::{RunEnd, StopCause};

/// How a command ended: a run's own outcome, a subcommand's chosen code, or an error.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ending<'a> {
    Run(&'a RunEnd),
    Error(&'a RalphError),
}

/// The exit-code table: one exhaustive match, so a new outcome or error variant does
/// not compile until it has a code.
pub(crate) fn code(ending: Ending<'_>) -> i32 {
    match ending {
        Ending::Run(RunEnd::Completed | RunEnd::Declined) => DONE,
        Ending::Run(RunEnd::Failed(_)) => FAILED,
        Ending::Run(RunEnd::Blocked(_)) => BLOCKED,
        Ending::Run(RunEnd::Stopped(StopCause::User) | RunEnd::ForceExit) => INTERRUPTED,
        Ending::Run(RunEnd::Stopped(StopCause::Terminate | StopCause::Deliberate)) => TERMINATED,
        Ending::Run(RunEnd::Stopped(StopCause::Hangup)) => HANGUP,
        Ending::Error(
            RalphError::Config(_)
            | RalphError::Prompt { .. }
            | RalphError::Goal { .. }
            // Every lock problem (held, or its file unusable) is found before the first attempt.
            | RalphError::Lock(_)
            | RalphError::CheckpointCorrupt { .. }
            | RalphError::CheckpointTooNew { .. }
            | RalphError::CheckpointInvalid { .. }
            | RalphError::ResumeChoiceNeeded { .. }
            | RalphError::Usage(_)
            | RalphError::Setup { .. }
            | RalphError::Preflight(_)
            | RalphError::Git(_)
            | RalphError::Refused(_),
        ) => USAGE,
        // Another process holds a git lock: a person must see to it.
        Ending::Error(RalphError::GitLocked(_)) => BLOCKED,
        Ending::Error(RalphError::StoppedBeforeStart(cause)) => code(Ending::Run(&RunEnd::Stopped(*cause))),
        Ending::Error(RalphError::Io { .. } | RalphError::Internal(_)) => INTERNAL,
    }
}

/// The code for an error (shorthand for [`code`]).
pub(crate) fn for_error(error: &RalphError) -> i32 {
    code(Ending::Error(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_endings_follow_the_table() {
        assert_eq!(code(Ending::Run(&RunEnd::Completed)), 0);
        assert_eq!(code(Ending::Run(&RunEnd::Failed("cap".into()))), 1);
        assert_eq!(code(Ending::Run(&RunEnd::Blocked("401".into()))), 3);
        assert_eq!(code(Ending::Run(&RunEnd::Stopped(StopCause::User))), 130);
        assert_eq!(code(Ending::Run(&RunEnd::ForceExit)), 130);
        assert_eq!(code(Ending::Run(&RunEnd::Stopped(StopCause::Terminate))), 143);
        assert_eq!(code(Ending::Run(&RunEnd::Stopped(StopCause::Hangup))), 129);
    }

    #[test]
    fn setup_problems_are_2_and_internal_failures_are_4() {
        let io = || std::io::Error::other("x");
        assert_eq!(for_error(&RalphError::setup("cannot create .agent", io())), 2);
        assert_eq!(for_error(&RalphError::Usage("bad".into())), 2);
        assert_eq!(for_error(&RalphError::io("cannot write the checkpoint", io())), 4);
        assert_eq!(for_error(&RalphError::Internal("bug".into())), 4);
        let held = crate::state::lock::LockError::Held { path: "x".into(), info: None };
        assert_eq!(for_error(&RalphError::Lock(held)), 2);
        let git = crate::git::repo::GitError::Locked { path: "/r/.git/index.lock".into(), holder: "git".into() };
        assert_eq!(for_error(&RalphError::git(git)), 3);
    }
}

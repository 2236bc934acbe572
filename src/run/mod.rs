//! Running a workflow: [`setup`] turns the directory, the config and any checkpoint
//! into a ready run (or a precise error), [`dispatch`] is the one loop that owns the
//! run state and drives attempts, and [`attempt`] runs one agent process.

mod artifact;
pub mod attempt;
pub mod dispatch;
mod failure;
pub mod ownership;
pub mod setup;
pub mod start;
mod waits;

use std::path::PathBuf;

use crate::error::RalphError;
use crate::signal::StopCause;

/// What the user asked for about an existing checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeFlag {
    /// Neither flag: ask on a terminal, refuse otherwise.
    Ask,
    /// `--resume`
    Resume,
    /// `--no-resume`
    Fresh,
    /// `--resume-or-start`: resume an unfinished run, start one when there is none,
    /// leave a completed, paused, failed or blocked run as it is.
    ResumeOrStart,
}

/// How `ralph run` was invoked.
#[derive(Debug, Clone)]
pub struct Options {
    pub dir: PathBuf,
    pub config: Option<PathBuf>,
    pub resume: ResumeFlag,
    pub quiet: bool,
    pub verbose: u8,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    Completed,
    /// A cap or budget ran out.
    Failed(String),
    /// A human must act.
    Blocked(String),
    /// Stopped by a signal, with an orderly save.
    Stopped(StopCause),
    /// The user's second Ctrl+C: killed and left at once.
    ForceExit,
}

impl RunEnd {
    pub fn exit_code(&self) -> i32 {
        match self {
            RunEnd::Completed => crate::exit::DONE,
            RunEnd::Failed(_) => crate::exit::FAILED,
            RunEnd::Blocked(_) => crate::exit::BLOCKED,
            RunEnd::Stopped(cause) => cause.exit_code(),
            RunEnd::ForceExit => crate::exit::INTERRUPTED,
        }
    }
}

/// `ralph run`: set up, then dispatch until the workflow ends.
pub async fn run(options: Options) -> Result<RunEnd, RalphError> {
    match setup::prepare(&options)? {
        setup::Prepared::Ready(ready) => dispatch::Dispatcher::new(*ready).run().await,
        setup::Prepared::Settled(end) => Ok(end),
    }
}

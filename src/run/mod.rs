//! Running a workflow: [`setup`] turns the directory, the config and any checkpoint
//! into a ready run (or a precise error), [`dispatch`] is the one loop that owns the
//! run state and drives attempts, and [`attempt`] runs one agent process.

mod artifact;
pub mod attempt;
mod control;
pub mod dispatch;
mod failure;
mod passes;
mod registration;
pub mod setup;
pub mod start;
mod waits;

use std::path::PathBuf;

use crate::error::RalphError;

/// What the user asked for about an existing checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeFlag {
    /// Neither flag: ask on a terminal, refuse otherwise.
    Ask,
    /// `--resume`
    Resume,
    /// `--no-resume`
    Fresh,
}

/// How `ralph run` was invoked.
#[derive(Debug, Clone)]
pub struct Options {
    pub dir: PathBuf,
    pub config: Option<PathBuf>,
    pub resume: ResumeFlag,
    /// `--from PHASE`: a new run starts there, or (with `--resume`) the run moves there.
    pub from: Option<String>,
    pub quiet: bool,
    pub verbose: u8,
}

pub use crate::outcome::RunEnd;

/// `ralph run`: set up, then dispatch until the workflow ends.
pub async fn run(options: Options) -> Result<RunEnd, RalphError> {
    let ready = setup::prepare(&options)?;
    dispatch::Dispatcher::new(ready).run().await
}

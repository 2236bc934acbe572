//! Running a workflow, the shell around the pure core: [`setup`] turns the directory,
//! the config ([`config_file`] reads it) and any checkpoint ([`start`]: fresh or
//! resume) into a ready run (or a precise error), [`dispatch`] is the one loop that
//! owns the run state and drives attempts, and [`attempt`] runs one agent process
//! and writes its log (`attempt_log`). Around the loop, each carrying out decisions
//! made elsewhere: failed attempts (`failure`), waits (`waits`, `disk_wait`, the
//! probe's TCP connect in [`connect`]), phase artifacts (`artifact`), the repeating
//! passes (`passes`), git steps ([`git_step`]), the lease ([`ownership`]), the
//! registry entry (`registration`) and the control socket (`control`).

mod artifact;
pub(crate) mod attempt;
mod attempt_log;
pub(crate) mod config_file;
pub(crate) mod connect;
mod control;
mod disk_wait;
pub(crate) mod dispatch;
mod failure;
pub(crate) mod git_step;
pub(crate) mod ownership;
mod passes;
pub(crate) mod registration;
pub(crate) mod setup;
pub(crate) mod start;
#[cfg(debug_assertions)]
mod test_hooks;
mod waits;

use std::path::PathBuf;

use crate::error::RalphError;

/// What the user asked for about an existing checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResumeFlag {
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
pub(crate) struct Options {
    pub dir: PathBuf,
    pub config: Option<PathBuf>,
    pub resume: ResumeFlag,
    /// `--from PHASE`: a new run starts there, or (with `--resume`) the run moves there.
    pub from: Option<String>,
    pub quiet: bool,
    pub verbose: u8,
    /// `--allow-dirty`: a new run in a dirty git working tree keeps those changes out.
    pub allow_dirty: bool,
    pub log_format: crate::report::log::LogFormat,
}

pub(crate) use crate::outcome::RunEnd;

/// `ralph run`: set up, then dispatch until the workflow ends.
pub(crate) async fn run(options: Options) -> Result<RunEnd, RalphError> {
    // Orphans of agents (a daemon that called setsid) come back to ralph, which ends
    // them with their attempt; see `process::escaped`.
    if !crate::os::become_subreaper() {
        tracing::warn!("cannot become a child subreaper: escaped agent processes are found by their environment only");
    }
    match setup::prepare(&options).await? {
        setup::Prepared::Ready(ready, signals) => dispatch::Dispatcher::new(*ready).run(signals).await,
        setup::Prepared::Settled(end) => Ok(end),
    }
}

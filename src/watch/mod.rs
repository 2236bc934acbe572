//! `ralph watch`: the watchdog that resumes runs interrupted by a crash, a kill, an
//! OOM kill or a reboot (design.md §10). It reads the run registry
//! ([`crate::state::registry`]), decides per run with [`decide`], and carries the
//! decision out: a detached `ralph --resume` in the run's directory (output to the
//! run's log directory), or the run marked `blocked` with what is missing.
//!
//! It reacts to registry changes through inotify (the `notify` crate) with a
//! periodic scan as the fallback, resumes the most recently active runs first, at
//! most `--max-concurrent` at a time, and never runs two ralphs on one directory:
//! the run's own lock decides, and the watcher's bookkeeping of a run is updated
//! under a lock of its own, so two watchers resume a run once. Ctrl+C and SIGTERM
//! stop the watcher; the runs it started go on.

pub(crate) mod decide;
mod pass;
mod seen;
pub(crate) mod unit;

use std::path::PathBuf;
use std::time::Duration;

use crate::error::RalphError;

/// How `ralph watch` was invoked.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// One pass, then exit.
    pub once: bool,
    /// The periodic scan, in case an inotify event was missed.
    pub interval: Duration,
    pub max_concurrent: usize,
    /// Resume only runs under these directories (all when empty).
    pub roots: Vec<PathBuf>,
}

pub(crate) fn main(options: &Options) -> Result<i32, RalphError> {
    let registry = crate::state::registry::dir().ok_or_else(|| {
        RalphError::Usage("cannot find the run registry: neither XDG_STATE_HOME nor HOME is set".into())
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RalphError::io("cannot start the runtime", e))?;
    runtime.block_on(pass::watch(&registry, options))
}

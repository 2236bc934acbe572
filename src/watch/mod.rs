//! `ralph watch`: the watchdog that resumes runs interrupted by a crash, a kill, an
//! OOM kill or a reboot (design.md §10). It reads the run registry
//! ([`crate::state::registry`]), decides per run with [`decide`], carries the
//! decision out (`act`: a detached `ralph --resume` in the run's directory, output
//! to the run's log directory, or the run marked `blocked` with what is missing),
//! and says every decision in words ([`words`]), keeping the last one of each run
//! for `ralph status --all` (`book`). `--root` also finds interrupted runs the
//! registry lost (`scan`); `--hold` keeps it from resuming anything.
//!
//! It reacts to registry changes through inotify (the `notify` crate) with a
//! periodic scan as the fallback, resumes the most recently active runs first, at
//! most `--max-concurrent` at a time, and never runs two ralphs on one directory:
//! the run's own lock decides, and the watcher's bookkeeping of a run is updated
//! under a lock of its own, so two watchers resume a run once. Ctrl+C and SIGTERM
//! stop the watcher; the runs it started go on.

mod act;
pub(crate) mod book;
pub(crate) mod decide;
mod pass;
pub(crate) mod scan;
mod seen;
pub(crate) mod unit;
pub(crate) mod words;

pub(crate) use act::last_active;

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
    /// Resume only runs under these directories (all when empty); also scanned for
    /// interrupted runs the registry lost.
    pub roots: Vec<PathBuf>,
    /// Levels below each root the scan looks.
    pub scan_depth: usize,
    /// `-q`: no decisions, only errors.
    pub quiet: bool,
}

/// `ralph watch --hold`: the watchdog resumes nothing until released. Taken under
/// the lock of a pass, so that no pass under way resumes anything once it returns.
pub(crate) fn hold() -> Result<i32, RalphError> {
    let registry = registry()?;
    let _pass = pass::pass_lock(&registry);
    let held = book::set_hold(&registry)
        .map_err(|e| RalphError::io(format!("cannot put the watchdog on hold in {}", registry.display()), e))?;
    let since = crate::text::clock::stamp(&held.since, &crate::report::zone());
    println!(
        "ralph watch is on hold since {since}: it resumes and blocks nothing until `ralph watch --release`; \
         `ralph status --all` shows it"
    );
    Ok(crate::exit::DONE)
}

/// `ralph watch --release`: lifts the hold; the watchers wake at once.
pub(crate) fn release() -> Result<i32, RalphError> {
    let registry = registry()?;
    let released = book::release(&registry)
        .map_err(|e| RalphError::io(format!("cannot release the hold in {}", registry.display()), e))?;
    println!("{}", if released { "ralph watch: hold released" } else { "ralph watch was not on hold" });
    Ok(crate::exit::DONE)
}

/// The run registry's folder; an error when there is none.
pub(crate) fn registry() -> Result<PathBuf, RalphError> {
    crate::state::registry::dir()
        .ok_or_else(|| RalphError::Usage("cannot find the run registry: neither XDG_STATE_HOME nor HOME is set".into()))
}

pub(crate) fn main(options: &Options) -> Result<i32, RalphError> {
    let registry = registry()?;
    let runtime = crate::process::runtime().map_err(|e| RalphError::io("cannot start the runtime", e))?;
    runtime.block_on(pass::watch(&registry, options))
}

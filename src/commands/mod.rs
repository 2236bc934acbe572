//! The subcommands other than `run`: each takes parsed arguments and returns an exit
//! code or an error; [`in_dir`] and [`report`] turn that into the exit code, an error
//! said on stderr (for `app` and for `ralph fleet`'s own subcommands).

use std::path::{Path, PathBuf};

use crate::cli::Place;
use crate::error::RalphError;
use crate::exit;

pub(crate) mod clean;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod dry_run;
pub(crate) mod fleet;
mod fleet_find;
pub(crate) mod fleet_status;
pub(crate) mod init;
pub(crate) mod inspect;
pub(crate) mod logs;
pub(crate) mod mcp;
mod mcp_stdio;
pub(crate) mod sim;
pub(crate) mod status;
pub(crate) mod status_all;
pub(crate) mod stop;
pub(crate) mod watch;

/// The directory `place` names (`--dir`), else the current one.
pub(crate) fn dir(place: &Place) -> Result<PathBuf, RalphError> {
    match &place.dir {
        Some(d) => std::fs::canonicalize(d).map_err(|e| RalphError::setup(format!("cannot use {}", d.display()), e)),
        None => std::env::current_dir().map_err(|e| RalphError::setup("cannot read the current directory", e)),
    }
}

/// A command run in the directory `place` names.
pub(crate) fn in_dir(place: &Place, command: impl FnOnce(&Path) -> Result<i32, RalphError>) -> i32 {
    dir(place).map_or_else(fail, |d| report(command(&d)))
}

/// The exit code of a command's result; an error is said on stderr, redacted.
pub(crate) fn report(result: Result<i32, RalphError>) -> i32 {
    result.unwrap_or_else(fail)
}

fn fail(error: RalphError) -> i32 {
    eprintln!("ralph: {}", crate::secrets::redact(&error.to_string()));
    exit::for_error(&error)
}

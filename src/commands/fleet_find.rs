//! The fleet of the repository a command runs in ([`find`]), and what `ralph stop`
//! asks of a fleet: below both `ralph fleet`'s subcommands (`fleet`,
//! `fleet_status`) and `ralph stop`, so none of them imports another for it.

use std::path::{Path, PathBuf};

use crate::error::RalphError;
use crate::fleet::control::{self, Request};
use crate::fleet::paths::Paths;

/// The fleet of the repository a command runs in.
pub(crate) struct Found {
    pub top: PathBuf,
    pub paths: Paths,
}

/// The main checkout's fleet directory.
pub(crate) fn find(dir: &Path) -> Result<Found, RalphError> {
    let (_, top) = crate::fleet::setup::top(dir)?;
    Ok(Found { paths: Paths::new(&top), top })
}

/// `ralph stop --all` and a fleet: its supervisor is asked to stop (each running
/// task pauses in order, the fleet is saved `stopped`, and `ralph fleet` continues
/// it); returns what it said, or why no supervisor took the stop.
pub(crate) fn ask_to_stop(repo: &Path, now: bool) -> Result<String, String> {
    let record = find(repo).map_err(|e| e.to_string())?.paths.socket_record;
    control::call(&record, &Request::Stop { task: None, now })
        .unwrap_or_else(|| Err(format!("no fleet supervisor answers in {}", repo.display())))
}

/// Whether a supervisor runs the fleet of `repo` (it holds the fleet's lock).
pub(crate) fn supervised(repo: &Path) -> bool {
    crate::state::lock::is_held(&Paths::new(repo).lock)
}

/// The status a stopped fleet reads as for `ralph stop` (a fleet archived meanwhile:
/// completed).
pub(crate) fn stopped_as(repo: &Path) -> crate::state::checkpoint::Status {
    let state = crate::fleet::state::read(&Paths::new(repo).state).ok().flatten();
    state.map_or(crate::state::checkpoint::Status::Completed, |f| f.status.as_run_status())
}

//! `ralph stop [--now] [--timeout D]`: asks the running ralph of a directory, through
//! its control socket, to stop after the current iteration (`paused`, resumable,
//! never resumed by the watchdog) or at once like a first Ctrl+C; then waits for the
//! run to end and answers with its exit status.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::control::client;
use crate::control::protocol::Request;
use crate::error::RalphError;
use crate::exit;
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::state::lock;

pub(crate) fn main(dir: &Path, now: bool, timeout: Duration) -> Result<i32, RalphError> {
    let socket = client::socket_of(dir).map_err(|e| RalphError::Usage(e.to_string()))?;
    // Only to this directory's run: a record copied with the project leads to the
    // original's socket, which refuses a stop meant for a copy.
    let reply = client::call_run(dir, &Request::Stop { now }).map_err(|e| RalphError::Usage(e.to_string()))?;
    if !reply.ok {
        return Err(RalphError::Usage(format!("the run refused: {}", reply.error.unwrap_or_default())));
    }
    eprintln!("ralph: {}", reply.message.unwrap_or_default());
    let lock_path = dir.join(".agent").join("ralph.lock");
    let started = Instant::now();
    // The run has ended when its socket is gone and its lock released.
    while socket.exists() || lock::is_held(&lock_path) {
        if started.elapsed() >= timeout {
            eprintln!(
                "ralph: the run has not stopped after {}; it is still {}. Wait with `ralph status`, \
                 or use `ralph stop --now`",
                humantime::format_duration(timeout),
                if now { "ending its agent" } else { "finishing its iteration" }
            );
            return Ok(exit::FAILED);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(cp) = super::inspect::read(dir)? else {
        eprintln!("ralph: the run stopped and left no checkpoint");
        return Ok(exit::DONE);
    };
    let code = status_code(cp.status, cp.stop_cause);
    println!("stopped: {} (exit status {code})", cp.status.as_str());
    Ok(code)
}

/// The exit status a run that ended with this checkpoint status had.
fn status_code(status: Status, cause: Option<StopCause>) -> i32 {
    match (status, cause) {
        (Status::Completed, _) => exit::DONE,
        (Status::Failed, _) => exit::FAILED,
        (Status::Blocked, _) => exit::BLOCKED,
        (_, Some(StopCause::Terminate)) => exit::TERMINATED,
        (_, Some(StopCause::Hangup)) => exit::HANGUP,
        _ => exit::INTERRUPTED,
    }
}

//! `ralph stop [--now] [--timeout D] [--all]`: asks the running ralph of a directory
//! (with `--all`, every live run of the run registry), through its control socket,
//! to stop after the current iteration (`paused`, resumable, never resumed by the
//! watchdog) or at once like a first Ctrl+C; then waits for the runs to end and
//! exits like `systemctl stop` ([`exit_code`]): 0 when a run ended paused or
//! completed, the run's own code when it ended failed, blocked or interrupted, 1
//! when it did not end in time, 2 when no run answered.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::control::client;
use crate::control::protocol::Request;
use crate::error::RalphError;
use crate::exit;
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::state::lock;

/// How one run came out of `ralph stop`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// It ended with this checkpoint.
    Ended { status: Status, cause: Option<StopCause> },
    /// It ended and left no checkpoint (`checkpoint_enabled = false`).
    NoCheckpoint,
    /// It is still running at the end of `--timeout`.
    TimedOut,
    /// No ralph answered for it (none runs, or its socket serves another run).
    NoAnswer,
}

/// The exit status of `ralph stop` for one run, as `systemctl stop` has it: the stop
/// worked (0) when the run ended paused or completed; a run that ended failed,
/// blocked or interrupted meanwhile keeps its own code; a run still running at the
/// timeout is 1; nothing to stop is 2.
pub(crate) fn exit_code(stopped: &Stopped) -> i32 {
    match stopped {
        Stopped::Ended { status: Status::Paused | Status::Completed, .. } | Stopped::NoCheckpoint => exit::DONE,
        Stopped::Ended { status: Status::Failed, .. } => exit::FAILED,
        Stopped::Ended { status: Status::Blocked, .. } => exit::BLOCKED,
        Stopped::Ended { status: Status::Interrupted, cause: Some(StopCause::Hangup) } => exit::HANGUP,
        Stopped::Ended { status: Status::Interrupted, .. } => exit::TERMINATED,
        // It ended without a clean stop (killed meanwhile): the stop did not happen.
        Stopped::Ended { status: Status::Running | Status::Waiting, .. } | Stopped::TimedOut => exit::FAILED,
        Stopped::NoAnswer => exit::USAGE,
    }
}

/// The exit status of stopping several runs (`--all`, a fleet): the highest of theirs.
pub(crate) fn combined(codes: impl IntoIterator<Item = i32>) -> i32 {
    codes.into_iter().max().unwrap_or(exit::USAGE)
}

pub(crate) fn main(dir: &Path, now: bool, timeout: Duration) -> Result<i32, RalphError> {
    let asked = ask(dir, now).map_err(RalphError::Usage)?;
    let stopped = wait(&[asked], timeout, now).pop().unwrap_or(Stopped::NoAnswer);
    println!("{}", said(&stopped));
    Ok(exit_code(&stopped))
}

/// `ralph stop --all`: every run of the registry that a ralph runs now.
pub(crate) fn all(now: bool, timeout: Duration) -> Result<i32, RalphError> {
    let registry = crate::watch::registry()?;
    let (entries, _) = crate::state::registry::read_all(&registry);
    let live: Vec<(PathBuf, bool)> =
        entries.into_iter().filter_map(|e| target(&e).map(|fleet| (e.dir, fleet))).collect();
    if live.is_empty() {
        return Err(RalphError::Usage(format!("no running ralph among the runs registered in {}", registry.display())));
    }
    let (mut asked, mut codes) = (Vec::new(), Vec::new());
    for (dir, fleet) in &live {
        let answered = if *fleet {
            super::fleet_find::ask_to_stop(dir, now).map(|said| {
                eprintln!("ralph: {}: {said}", dir.display());
                Asked { dir: dir.clone(), socket: PathBuf::new(), fleet: true }
            })
        } else {
            ask(dir, now)
        };
        match answered {
            Ok(a) => asked.push(a),
            Err(e) => {
                eprintln!("ralph: {e}");
                println!("{}: {}", dir.display(), said(&Stopped::NoAnswer));
                codes.push(exit_code(&Stopped::NoAnswer));
            }
        }
    }
    for (a, stopped) in asked.iter().zip(wait(&asked, timeout, now)) {
        println!("{}: {}", a.dir.display(), said(&stopped));
        codes.push(exit_code(&stopped));
    }
    Ok(combined(codes))
}

/// A run that accepted the stop.
struct Asked {
    dir: PathBuf,
    socket: PathBuf,
    /// A fleet's supervisor, which stops its tasks in order and leaves.
    fleet: bool,
}

/// Whether `ralph stop --all` asks the entry's ralph now: `Some(true)` a running
/// fleet's supervisor (it stops its tasks in order: the fleet is `stopped` and `ralph
/// fleet` continues it), `Some(false)` a running run, `None` nothing runs there or it
/// is a task whose supervisor runs (stopped through it, never behind its back).
fn target(entry: &crate::state::registry::Entry) -> Option<bool> {
    if entry.fleet_supervisor() {
        return super::fleet_find::supervised(&entry.dir).then_some(true);
    }
    if let Some(mark) = entry.fleet.as_ref().filter(|_| entry.fleet_task())
        && super::fleet_find::supervised(&mark.repo)
    {
        return None;
    }
    lock::is_held(&entry.dir.join(".agent").join("ralph.lock")).then_some(false)
}

/// Sends the stop to the run of `dir`; why not, when no run answers.
fn ask(dir: &Path, now: bool) -> Result<Asked, String> {
    let socket = client::socket_of(dir).map_err(|e| e.to_string())?;
    // Only to this directory's run: a record copied with the project leads to the
    // original's socket, which refuses a stop meant for a copy.
    let reply = client::call_run(dir, &Request::Stop { now }).map_err(|e| e.to_string())?;
    if !reply.ok {
        return Err(format!("the run of {} refused: {}", dir.display(), reply.error.unwrap_or_default()));
    }
    eprintln!("ralph: {}: {}", dir.display(), reply.message.unwrap_or_default());
    Ok(Asked { dir: dir.to_path_buf(), socket, fleet: false })
}

/// Waits until every run asked has ended (its socket gone and its lock released),
/// at most `timeout` in all; how each came out, in order.
fn wait(asked: &[Asked], timeout: Duration, now: bool) -> Vec<Stopped> {
    let started = Instant::now();
    let running = |a: &Asked| {
        if a.fleet {
            super::fleet_find::supervised(&a.dir)
        } else {
            a.socket.exists() || lock::is_held(&a.dir.join(".agent").join("ralph.lock"))
        }
    };
    while asked.iter().any(running) && started.elapsed() < timeout {
        std::thread::sleep(Duration::from_millis(100));
    }
    asked
        .iter()
        .map(|a| {
            if running(a) {
                eprintln!(
                    "ralph: {}: the run has not stopped after {}; it is still {}. Wait with `ralph status`, or use \
                     `ralph stop --now`",
                    a.dir.display(),
                    humantime::format_duration(timeout),
                    if now { "ending its agent" } else { "finishing its iteration" }
                );
                return Stopped::TimedOut;
            }
            if a.fleet {
                return Stopped::Ended { status: super::fleet_find::stopped_as(&a.dir), cause: None };
            }
            match super::inspect::read(&a.dir) {
                Ok(Some(cp)) => Stopped::Ended { status: cp.status, cause: cp.stop_cause },
                Ok(None) => Stopped::NoCheckpoint,
                Err(e) => {
                    eprintln!("ralph: {}: {e}", a.dir.display());
                    Stopped::NoCheckpoint
                }
            }
        })
        .collect()
}

/// What became of a run, in words.
fn said(stopped: &Stopped) -> String {
    let code = exit_code(stopped);
    match stopped {
        Stopped::Ended { status: status @ (Status::Running | Status::Waiting), .. } => {
            format!("ended without a clean stop (still {}; killed meanwhile?) (exit status {code})", status.into_str())
        }
        Stopped::Ended { status, .. } => format!("stopped: {} (exit status {code})", status.into_str()),
        Stopped::NoCheckpoint => format!("stopped; it left no checkpoint (exit status {code})"),
        Stopped::TimedOut => format!("still running at the timeout (exit status {code})"),
        Stopped::NoAnswer => format!("no running ralph answered (exit status {code})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_exits_like_systemctl_stop() {
        let ended = |status, cause| exit_code(&Stopped::Ended { status, cause });
        assert_eq!(ended(Status::Paused, Some(StopCause::User)), 0);
        assert_eq!(ended(Status::Completed, None), 0);
        assert_eq!(ended(Status::Failed, None), 1);
        assert_eq!(ended(Status::Blocked, None), 3);
        assert_eq!(ended(Status::Interrupted, Some(StopCause::Terminate)), 143);
        assert_eq!(ended(Status::Interrupted, Some(StopCause::Hangup)), 129);
        assert_eq!(ended(Status::Running, None), 1);
        assert_eq!(exit_code(&Stopped::TimedOut), 1);
        assert_eq!(exit_code(&Stopped::NoAnswer), 2);
        assert_eq!(exit_code(&Stopped::NoCheckpoint), 0);
        assert_eq!(combined([0, 0]), 0);
        assert_eq!(combined([0, 3, 1]), 3);
        assert_eq!(combined([]), 2);
    }
}

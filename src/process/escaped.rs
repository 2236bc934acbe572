//! Processes that escaped an attempt's process group (`setsid`, a double fork) end
//! with the attempt. ralph is a child subreaper (`PR_SET_CHILD_SUBREAPER`) while it
//! runs, so every orphan of an agent comes back to ralph instead of init; at the end
//! of each attempt ralph ends every process whose environment carries the
//! attempt's [`ATTEMPT_ID_VAR`], and every orphan it inherited (found as its own
//! child even if it cleared its environment), then reaps those it ended.
//!
//! Reaping never uses `waitpid(-1)`: tokio owns the agent's pid and must get its
//! exit status. Only pids that are not the agent's are reaped, each one checked
//! with `waitid(…, WNOWAIT)` first. Selection is pure (over a snapshot of `/proc`);
//! the shell reads `/proc`, signals and reaps.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;

/// The variable that marks every process of one attempt.
pub(crate) const ATTEMPT_ID_VAR: &str = "RALPH_ATTEMPT_ID";

/// How long the attempt's end waits for what it killed to go.
const END_WAIT: Duration = Duration::from_secs(2);

/// One process, as much as the decision needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    /// Its process group: ralph's own helpers (a notifier) share ralph's.
    pub pgid: i32,
    pub zombie: bool,
    /// Its environment carries the attempt's id.
    pub marked: bool,
}

/// Who ralph is: its pid and its process group.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Me {
    pub pid: i32,
    pub pgid: i32,
}

/// An orphan that came back to the subreaper: ralph's child, but not one ralph
/// started itself. ralph's own helpers (notifiers) run in ralph's process group;
/// an agent and everything it started are in the agent's group or a session of
/// their own.
fn inherited(p: &Proc, me: Me, owned: &[i32]) -> bool {
    p.ppid == me.pid && p.pgid != me.pgid && !owned.contains(&p.pid)
}

/// The live processes to end: the attempt's marked ones, and the orphans that came
/// back to the subreaper; never a pid tokio owns, never ralph's own helpers.
pub(crate) fn to_end(procs: &[Proc], me: Me, owned: &[i32]) -> Vec<i32> {
    procs
        .iter()
        .filter(|p| !p.zombie && p.pid != me.pid && !owned.contains(&p.pid))
        .filter(|p| (p.marked && p.pgid != me.pgid) || inherited(p, me, owned))
        .map(|p| p.pid)
        .collect()
}

/// The dead orphans to reap: never a pid tokio owns (the agent, a notifier).
pub(crate) fn to_reap(procs: &[Proc], me: Me, owned: &[i32]) -> Vec<i32> {
    procs.iter().filter(|p| p.zombie && inherited(p, me, owned)).map(|p| p.pid).collect()
}

/// A snapshot of `proc_root` (normally `/proc`), marking processes whose
/// environment holds `ATTEMPT_ID_VAR=attempt_id`.
pub(crate) fn scan(proc_root: &Path, attempt_id: &str) -> Vec<Proc> {
    let needle = format!("{ATTEMPT_ID_VAR}={attempt_id}");
    let Ok(entries) = std::fs::read_dir(proc_root) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(|pid| {
            let dir = proc_root.join(pid.to_string());
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let (state, ppid, pgid) = parse_stat(&stat)?;
            let marked = std::fs::read(dir.join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()));
            Some(Proc { pid, ppid, pgid, zombie: state == 'Z' || state == 'X', marked })
        })
        .collect()
}

/// The state, parent pid and process group from `/proc/PID/stat`
/// (`pid (comm) S ppid pgrp …`; the command name may hold spaces and parentheses,
/// so fields count from the last `)`).
fn parse_stat(stat: &str) -> Option<(char, i32, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, ppid, pgid))
}

/// Ends and reaps what escaped the attempt `attempt_id`; `owned` are the pids tokio
/// owns (the agent). Returns the pids it killed.
pub(crate) fn end_attempt(attempt_id: &str, owned: &[i32]) -> Vec<i32> {
    let me = Me { pid: i32::try_from(std::process::id()).unwrap_or(i32::MAX), pgid: nix::unistd::getpgrp().as_raw() };
    let deadline = Instant::now() + END_WAIT;
    let mut killed: Vec<i32> = Vec::new();
    loop {
        let procs = scan(crate::os::proc_root(), attempt_id);
        for pid in to_reap(&procs, me, owned) {
            reap(pid);
        }
        let alive = to_end(&procs, me, owned);
        if alive.is_empty() || Instant::now() >= deadline {
            return killed;
        }
        for pid in alive {
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() && !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaps `pid` if it is an exited child: looked at with `WNOWAIT` first, so a pid
/// that is not a dead child of ours is left alone.
fn reap(pid: i32) {
    let pid = Pid::from_raw(pid);
    let peek = waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT);
    if matches!(peek, Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..))) {
        let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process in its own group (as an agent's and its orphans are).
    fn p(pid: i32, ppid: i32, zombie: bool, marked: bool) -> Proc {
        Proc { pid, ppid, pgid: pid, zombie, marked }
    }

    const ME: Me = Me { pid: 10, pgid: 10 };

    #[test]
    fn ends_marked_processes_and_inherited_orphans_but_never_the_agent() {
        let me = ME;
        let procs = [
            p(10, 1, false, false),  // ralph
            p(20, 10, false, true),  // the agent (tokio's)
            p(30, 1, false, true),   // escaped with setsid, reparented elsewhere
            p(40, 10, false, false), // an orphan that cleared its environment
            p(50, 10, true, true),   // already dead: reaped, not killed
            p(60, 1, false, false),  // someone else's
        ];
        assert_eq!(to_end(&procs, me, &[20]), [30, 40]);
        assert_eq!(to_reap(&procs, me, &[20]), [50]);
        // The agent's zombie is tokio's to reap.
        assert_eq!(to_reap(&[p(20, 10, true, true)], me, &[20]), Vec::<i32>::new());
    }

    #[test]
    fn ralphs_own_helpers_are_neither_ended_nor_reaped() {
        // A notifier ralph started: its child, in ralph's own process group; tokio
        // waits for it, so even its zombie is not ours to reap.
        let helper = Proc { pid: 70, ppid: 10, pgid: 10, zombie: false, marked: false };
        assert!(to_end(std::slice::from_ref(&helper), ME, &[]).is_empty());
        assert!(to_reap(&[Proc { zombie: true, ..helper }], ME, &[]).is_empty());
    }

    #[test]
    fn reads_state_and_parent_from_stat_with_odd_names() {
        assert_eq!(parse_stat("123 (my (odd) name) Z 45 123 123 0"), Some(('Z', 45, 123)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn scans_a_proc_tree() {
        let root = tempfile::tempdir().expect("tempdir");
        let mk = |pid: &str, stat: &str, env: &[u8]| {
            let d = root.path().join(pid);
            std::fs::create_dir(&d).expect("mkdir");
            std::fs::write(d.join("stat"), stat).expect("write");
            std::fs::write(d.join("environ"), env).expect("write");
        };
        mk("7", "7 (sleep) S 1 7 7", b"A=1\0RALPH_ATTEMPT_ID=r:a:1\0");
        mk("8", "8 (sh) Z 3 8 8", b"");
        assert_eq!(
            {
                let mut v = scan(root.path(), "r:a:1");
                v.sort_by_key(|p| p.pid);
                v
            },
            [p(7, 1, false, true), p(8, 3, true, false)]
        );
    }
}

//! Processes that escaped an attempt's process group (`setsid`, a double fork) end
//! with the attempt. ralph is a child subreaper (`PR_SET_CHILD_SUBREAPER`) while it
//! runs, so every orphan of an agent comes back to ralph instead of init; at the end
//! of each attempt ralph ends every process whose environment carries the
//! attempt's [`ATTEMPT_ID_VAR`], and every orphan it inherited (found as its own
//! child even if it cleared its environment), then reaps those it ended.
//!
//! Reaping never uses `waitpid(-1)`: the agent's handle (`group::Agent`) must get its
//! exit status. Only pids that are not the agent's are reaped, each one checked
//! with `waitid(…, WNOWAIT)` first. Selection is pure (over a snapshot of `/proc`);
//! the shell reads `/proc`, signals and reaps.
//!
//! The scan runs after every attempt, so it is kept small. While ralph is the
//! subreaper, everything an agent started and left behind is ralph's descendant, so
//! only those are read (found through `task/TID/children`), not every process of the
//! machine; otherwise all of `/proc`. And a process's environment is read only when
//! it started during the attempt (its start time is in the `stat` read anyway): one
//! that started before cannot carry the attempt's id.

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
    /// Its process group: ralph's own helpers share ralph's, or have one of their own
    /// that [`spawn_helper`] made known (a notifier).
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
/// started itself. ralph's own helpers run in ralph's process group (or in a group
/// of their own, left out of the scan: see [`spawn_helper`]); an agent and everything
/// it started are in the agent's group or a session of their own.
fn inherited(p: &Proc, me: Me, owned: &[i32]) -> bool {
    p.ppid == me.pid && p.pgid != me.pgid && !owned.contains(&p.pid)
}

/// The live processes to end: the attempt's marked ones, and the orphans that came
/// back to the subreaper; never a pid with a waiter of its own (the agent), never
/// ralph's own helpers.
pub(crate) fn to_end(procs: &[Proc], me: Me, owned: &[i32]) -> Vec<i32> {
    procs
        .iter()
        .filter(|p| !p.zombie && p.pid != me.pid && !owned.contains(&p.pid))
        .filter(|p| (p.marked && p.pgid != me.pgid) || inherited(p, me, owned))
        .map(|p| p.pid)
        .collect()
}

/// The dead orphans to reap: never a pid with a waiter of its own (the agent; a
/// notifier, which tokio waits for).
pub(crate) fn to_reap(procs: &[Proc], me: Me, owned: &[i32]) -> Vec<i32> {
    procs.iter().filter(|p| p.zombie && inherited(p, me, owned)).map(|p| p.pid).collect()
}

/// Every pid in `proc_root` (normally `/proc`).
pub(crate) fn all_pids(proc_root: &Path) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir(proc_root) else { return Vec::new() };
    entries.filter_map(Result::ok).filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect()
}

/// The descendants of `root`, from every thread's `task/TID/children`; `None` when
/// the kernel does not show those (then scan [`all_pids`]). A process forked
/// meanwhile may be missed: the caller scans until nothing is left.
pub(crate) fn descendants(proc_root: &Path, root: i32) -> Option<Vec<i32>> {
    let mut found = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(proc_root.join(pid.to_string()).join("task")) else {
            // Gone meanwhile; for ralph itself, no such files.
            if pid == root {
                return None;
            }
            continue;
        };
        for task in tasks.filter_map(Result::ok) {
            match std::fs::read_to_string(task.path().join("children")) {
                Ok(children) => {
                    for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                        if !found.contains(&child) {
                            found.push(child);
                            todo.push(child);
                        }
                    }
                }
                Err(_) if pid == root => return None,
                Err(_) => {}
            }
        }
    }
    Some(found)
}

/// A snapshot of `pids` in `proc_root` (normally `/proc`), marking processes whose
/// environment holds `ATTEMPT_ID_VAR=attempt_id`; with `since` (clock ticks since
/// boot) only those that started then or later can be marked.
pub(crate) fn scan(proc_root: &Path, pids: Vec<i32>, attempt_id: &str, since: Option<u64>) -> Vec<Proc> {
    let needle = format!("{ATTEMPT_ID_VAR}={attempt_id}");
    pids.into_iter()
        .filter_map(|pid| {
            let dir = proc_root.join(pid.to_string());
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let (state, ppid, pgid, start) = parse_stat(&stat)?;
            let candidate = since.zip(start).is_none_or(|(since, start)| start >= since);
            let marked = candidate
                && std::fs::read(dir.join("environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()));
            Some(Proc { pid, ppid, pgid, zombie: state == 'Z' || state == 'X', marked })
        })
        .collect()
}

/// The state, parent pid, process group and start time (field 22, if present) from
/// `/proc/PID/stat` (`pid (comm) S ppid pgrp …`; the command name may hold spaces
/// and parentheses, so fields count from the last `)`).
fn parse_stat(stat: &str) -> Option<(char, i32, i32, Option<u64>)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    // Fields 6 to 21 lie between the process group and the start time.
    let start = fields.nth(16).and_then(|f| f.parse().ok());
    Some((state, ppid, pgid, start))
}

/// The clock ticks since boot at which an attempt that has run for `ran` began,
/// a second early: a margin for the clocks' rounding.
fn attempt_start(ran: Duration) -> Option<u64> {
    let per_second = crate::os::ticks_per_second()?;
    let ran = (ran + Duration::from_secs(1)).as_millis().saturating_mul(u128::from(per_second)) / 1000;
    Some(crate::os::ticks_since_boot()?.saturating_sub(u64::try_from(ran).ok()?))
}

/// The process groups of ralph's own helpers that run in a group of their own (a
/// notifier, so that what it leaves behind ends with it): they are no agent's
/// orphans, and not reaped here (tokio waits for the helper itself).
static HELPERS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn helpers() -> std::sync::MutexGuard<'static, Vec<i32>> {
    HELPERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A helper's process group, left alone by [`end_attempt`] until dropped.
#[derive(Debug)]
pub(crate) struct Helper(i32);

impl Helper {
    /// The helper's process group.
    pub(crate) fn group(&self) -> i32 {
        self.0
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        helpers().retain(|group| *group != self.0);
    }
}

/// Starts a helper: `spawn` puts it in a process group of its own and returns it
/// with its pid (its group's id). The group is known to [`end_attempt`] before the
/// helper can be seen by it: an attempt that ends meanwhile does not take it for an
/// orphan.
pub(crate) fn spawn_helper<T>(
    spawn: impl FnOnce() -> std::io::Result<(T, Option<i32>)>,
) -> std::io::Result<(T, Option<Helper>)> {
    let mut groups = helpers();
    let (spawned, pid) = spawn()?;
    groups.extend(pid);
    Ok((spawned, pid.map(Helper)))
}

/// Ends and reaps what escaped the attempt `attempt_id`, which started at
/// `started`; `owned` are the pids with a waiter of their own (the agent). Returns
/// the pids it killed.
pub(crate) fn end_attempt(attempt_id: &str, started: Instant, owned: &[i32]) -> Vec<i32> {
    let since = attempt_start(started.elapsed());
    let me = Me { pid: i32::try_from(std::process::id()).unwrap_or(i32::MAX), pgid: nix::unistd::getpgrp().as_raw() };
    let deadline = Instant::now() + END_WAIT;
    let mut killed: Vec<i32> = Vec::new();
    let (root, subreaper) = (crate::os::proc_root(), crate::os::is_subreaper());
    loop {
        let pids = subreaper.then(|| descendants(root, me.pid)).flatten();
        let mut procs = scan(root, pids.unwrap_or_else(|| all_pids(root)), attempt_id, since);
        // After the scan: a helper started since is in the list, or was not scanned.
        let groups = helpers().clone();
        procs.retain(|p| !groups.contains(&p.pgid));
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
            p(20, 10, false, true),  // the agent (its handle's)
            p(30, 1, false, true),   // escaped with setsid, reparented elsewhere
            p(40, 10, false, false), // an orphan that cleared its environment
            p(50, 10, true, true),   // already dead: reaped, not killed
            p(60, 1, false, false),  // someone else's
        ];
        assert_eq!(to_end(&procs, me, &[20]), [30, 40]);
        assert_eq!(to_reap(&procs, me, &[20]), [50]);
        // The agent's zombie is its handle's to reap.
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
        assert_eq!(parse_stat("123 (my (odd) name) Z 45 123 123 0"), Some(('Z', 45, 123, None)));
        let full = "9 (a b) S 1 9 9 0 -1 4194560 90 0 0 0 0 0 0 0 20 0 1 0 4242 2260992 166";
        assert_eq!(parse_stat(full), Some(('S', 1, 9, Some(4242))));
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
                let mut v = scan(root.path(), all_pids(root.path()), "r:a:1", None);
                v.sort_by_key(|p| p.pid);
                v
            },
            [p(7, 1, false, true), p(8, 3, true, false)]
        );
    }

    #[test]
    fn only_a_process_started_during_the_attempt_can_be_marked() {
        let root = tempfile::tempdir().expect("tempdir");
        let mk = |pid: u32, start: u32| {
            let d = root.path().join(pid.to_string());
            std::fs::create_dir(&d).expect("mkdir");
            let stat = format!("{pid} (sh) S 1 {pid} {pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 0 0");
            std::fs::write(d.join("stat"), stat).expect("write");
            std::fs::write(d.join("environ"), b"RALPH_ATTEMPT_ID=r:a:1\0").expect("write");
        };
        mk(7, 999);
        mk(8, 1000);
        mk(9, 1001);
        let mut v = scan(root.path(), all_pids(root.path()), "r:a:1", Some(1000));
        v.sort_by_key(|p| p.pid);
        assert_eq!(v.iter().map(|p| p.marked).collect::<Vec<_>>(), [false, true, true]);
    }

    #[test]
    fn descendants_are_found_through_every_threads_children() {
        let root = tempfile::tempdir().expect("tempdir");
        let children = |pid: u32, tid: u32, kids: &str| {
            let d = root.path().join(pid.to_string()).join("task").join(tid.to_string());
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("children"), kids).expect("write");
        };
        children(10, 10, "20 ");
        children(10, 11, "30 40 ");
        children(30, 30, "50 ");
        children(40, 40, "");
        // 20 and 50 went away meanwhile: no directory.
        let mut found = descendants(root.path(), 10).expect("shown");
        found.sort_unstable();
        assert_eq!(found, [20, 30, 40, 50]);
        // A kernel without the children files: the caller falls back to every pid.
        std::fs::remove_file(root.path().join("10/task/11/children")).expect("rm");
        assert_eq!(descendants(root.path(), 10), None);
        assert_eq!(descendants(root.path(), 99), None);
    }

    #[test]
    fn the_attempt_start_is_on_the_clock_of_proc_stat() {
        // This test process started before now, on the same clock.
        let stat = std::fs::read_to_string(crate::os::proc_root().join("self").join("stat")).expect("own stat");
        let own_start = parse_stat(&stat).and_then(|s| s.3).expect("start time");
        let now = crate::os::ticks_since_boot().expect("the clock");
        assert!(own_start <= now, "{own_start} > {now}");
        let (just_now, a_minute_ago) = (attempt_start(Duration::ZERO), attempt_start(Duration::from_secs(60)));
        assert!(a_minute_ago < just_now && just_now < Some(now), "{a_minute_ago:?} {just_now:?} {now}");
    }
}

//! The run lock `.agent/ralph.lock`: at most one ralph per directory, and a record
//! that tells the next ralph whether the previous one stopped cleanly.
//!
//! The truth is the kernel's `flock` on the file, not its content: the kernel
//! drops the lock whenever the holder dies (kill -9, OOM, crash) and a reboot
//! drops every lock. The content (pid, host, boot id, start time) is for people
//! and for crash detection:
//!
//! * empty file: the previous run released the lock cleanly;
//! * content but the flock is free: the previous holder died without releasing
//!   it, so its run was interrupted ([`Acquired::stale`]).
//!
//! The file is never unlinked: a ralph that unlinks it on exit races with one that
//! has just opened the old inode and locks a file nobody else can see any more.
//! The descriptor is close-on-exec (std's default), so agents spawned by ralph do
//! not inherit the lock and cannot keep it alive after ralph died.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

/// Who holds (or held) the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LockInfo {
    pub pid: u32,
    pub host: String,
    /// `/proc/sys/kernel/random/boot_id` at start; empty when unreadable.
    pub boot_id: String,
    /// RFC 3339, UTC.
    pub started_at: String,
}

impl LockInfo {
    pub(crate) fn current() -> LockInfo {
        LockInfo {
            pid: std::process::id(),
            host: nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default(),
            boot_id: boot_id(),
            started_at: jiff::Timestamp::now().to_string(),
        }
    }

    /// A hint without taking the lock: does a process with this pid run on this
    /// host in this boot ([`crate::os::process_runs`]: a killed one its parent has
    /// not reaped yet does not)? Only a hint, because pids are reused; [`acquire`]
    /// never relies on it (the flock decides).
    pub(crate) fn process_alive(&self) -> bool {
        let here = LockInfo::current();
        let other_boot = !self.boot_id.is_empty() && !here.boot_id.is_empty() && self.boot_id != here.boot_id;
        let Ok(pid) = i32::try_from(self.pid) else { return false };
        self.host == here.host && !other_boot && crate::os::process_runs(pid)
    }
}

pub(crate) use crate::os::boot_id;

#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    /// Another live process holds the flock.
    #[error("{}", held_message(path, info.as_ref().map(|i| (i.pid, i.host.as_str()))))]
    Held { path: PathBuf, info: Option<LockInfo> },
    #[error("cannot lock {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// What a held lock means for the person, with its holder (pid, host) when known.
pub(crate) fn held_message(path: &Path, holder: Option<(u32, &str)>) -> String {
    let path = path.display();
    match holder {
        Some((pid, host)) => format!(
            "another ralph (pid {pid} on {}) is running in this directory; \
             wait for it to finish or stop it (lock: {path})",
            if host.is_empty() { "unknown host" } else { host }
        ),
        None => format!(
            "another ralph is running in this directory (lock {path} is held); \
             wait for it to finish or stop it"
        ),
    }
}

/// How long the lock may stay held after the ralph recorded in it died: the kernel
/// frees it when the last process sharing the dead ralph's descriptor is gone, and
/// a child it was starting (between clone and exec) dies by its parent-death signal
/// only a moment later. A restart right after a kill -9 waits that out.
pub(crate) const DEAD_HOLDER_GRACE: Duration = Duration::from_secs(3);

/// What a held lock says about its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Holding {
    /// Nobody holds it.
    Free,
    /// A live ralph holds it, or one that cannot be told apart from a live one.
    Live,
    /// The holder it records has gone but the lock is not free yet: ask again soon.
    Going,
}

/// The one rule of a lock's holder: held by a ralph that no longer runs, it is
/// waited for, up to `grace`, before it counts as live (whoever holds it then, a
/// ralph on it is refused).
pub(crate) fn holding(held: bool, holder_runs: bool, waited: Duration, grace: Duration) -> Holding {
    match (held, holder_runs) {
        (false, _) => Holding::Free,
        (true, false) if waited < grace => Holding::Going,
        (true, _) => Holding::Live,
    }
}

/// Whether a live ralph holds the lock at `path`: the watchdog's question. A ralph
/// just killed holds it a moment longer (its threads end, a child it was starting
/// dies), so one whose recorded holder no longer runs is waited for up to `grace`:
/// a resume is not put off for a whole watch interval.
pub(crate) fn held_by_a_live_ralph(path: &Path, grace: Duration) -> bool {
    let started = Instant::now();
    loop {
        let held = is_held(path);
        let runs = held && read_info(path).is_none_or(|holder| holder.process_alive());
        match holding(held, runs, started.elapsed(), grace) {
            Holding::Free => return false,
            Holding::Live => return true,
            Holding::Going => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Takes the lock at `path` for a run: while another ralph of this host holds it,
/// waits when `wait` (`--resume-or-start`, telling `waiting` once who holds it) or
/// refuses, after [`DEAD_HOLDER_GRACE`] when the recorded holder is dead.
pub(crate) fn take(
    path: &Path,
    wait: bool,
    waiting: &mut dyn FnMut(&Path, Option<LockInfo>),
) -> Result<Acquired, LockError> {
    let (mut told, started) = (false, Instant::now());
    loop {
        match acquire(path) {
            Err(LockError::Held { path, info }) => {
                let runs = info.as_ref().is_none_or(LockInfo::process_alive);
                match holding(true, runs, started.elapsed(), DEAD_HOLDER_GRACE) {
                    Holding::Going => std::thread::sleep(Duration::from_millis(50)),
                    _ if wait => {
                        if !std::mem::replace(&mut told, true) {
                            waiting(&path, info);
                        }
                        std::thread::sleep(Duration::from_millis(500));
                    }
                    _ => return Err(LockError::Held { path, info }),
                }
            }
            taken => return taken,
        }
    }
}

/// A successfully taken lock, and what it says about the previous run.
#[derive(Debug)]
pub(crate) struct Acquired {
    pub lock: RunLock,
    /// The previous holder, when it went away without a clean release (killed,
    /// crashed, or the machine rebooted): its run was interrupted.
    pub stale: Option<LockInfo>,
    /// The file had content that does not parse (torn write during a crash, or
    /// edited by hand): the previous run did not stop cleanly, but who it was is
    /// unknown. `stale` is then `None`.
    pub stale_unreadable: bool,
}

/// The held run lock. Release with [`RunLock::release`] once the final state is
/// saved. Dropping it unlocks but keeps the content: a drop is never a clean stop
/// (a second Ctrl+C, an I/O error, a panic leave the checkpoint `running`), so the
/// next run reports it as stale.
#[derive(Debug)]
pub(crate) struct RunLock {
    file: Flock<File>,
    /// What the file held before this ralph wrote itself in: put back by
    /// [`RunLock::give_back`] when the run refuses to start.
    previous: Vec<u8>,
}

impl RunLock {
    /// Clean release: empty the file (the "stopped cleanly" mark, made durable),
    /// then unlock. The file stays, see the module doc.
    pub(crate) fn release(mut self) -> io::Result<()> {
        self.previous.clear();
        self.give_back()
    }

    /// A command that refuses changes nothing: the file gets back what it held
    /// before (a crashed run's record stays the mark of that crash), then unlocks.
    pub(crate) fn give_back(self) -> io::Result<()> {
        let mut file = self.file;
        let restored = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(&self.previous))
            .and_then(|()| file.sync_all());
        // Unlock even when the write failed: holding on helps nobody.
        let unlocked = file.unlock().map(drop).map_err(|(_, e)| io::Error::from(e));
        restored.and(unlocked)
    }
}

/// Takes the run lock at `path` without blocking, creating the file (mode 0600)
/// if needed, and records this process in it.
///
/// A pid in the file that is alive (same boot) while the flock is free is still
/// treated as stale: the kernel releases a flock only when every descriptor of
/// the holder's open file is closed, so a live ralph would still hold it; the
/// pid has been reused, or the file was copied in (backup restore, rsync).
pub(crate) fn acquire(path: &Path) -> Result<Acquired, LockError> {
    let io_err = |source: io::Error| LockError::Io { path: path.to_path_buf(), source };
    // A file unlinked and recreated by someone else between our open and our
    // flock would leave us locking an orphan inode; retry a few times.
    for _ in 0..5 {
        // Never through a planted symbolic link (it would truncate its target).
        let file = super::private::open(path, OpenOptions::new().read(true).write(true).create(true).truncate(false))
            .map_err(io_err)?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(f) => f,
            Err((mut file, Errno::EWOULDBLOCK)) => {
                let info = read_bytes(&mut file).ok().and_then(|bytes| parse(&String::from_utf8_lossy(&bytes)));
                return Err(LockError::Held { path: path.to_path_buf(), info });
            }
            Err((_, e)) => return Err(io_err(e.into())),
        };
        if !same_inode(&file, path) {
            continue;
        }
        let bytes = read_bytes(&mut file).map_err(io_err)?;
        // Lossy: garbage (non-UTF-8) content is a stale lock, not an error that
        // blocks every start.
        let content = String::from_utf8_lossy(&bytes);
        // `Some(None)`: content that does not parse.
        let previous = (!content.trim().is_empty()).then(|| parse(&content));
        write_info(&mut file, &LockInfo::current()).map_err(io_err)?;
        let stale_unreadable = previous == Some(None);
        let lock = RunLock { file, previous: bytes };
        return Ok(Acquired { lock, stale: previous.flatten(), stale_unreadable });
    }
    Err(io_err(io::Error::other("the lock file keeps being replaced while locking it")))
}

/// The lock file's content, without locking: for `ralph status`. `None` when the
/// file is missing, empty (clean stop) or unparseable. Whether that process is
/// still running is a separate question, see [`LockInfo::process_alive`].
pub(crate) fn read_info(path: &Path) -> Option<LockInfo> {
    std::fs::read_to_string(path).ok().and_then(|c| parse(&c))
}

/// Whether a process holds the lock now, asked without writing or keeping it: a
/// shared flock succeeds only when nobody holds the exclusive one. The kernel's
/// answer, not the record's: a record copied with its project (`cp -a`, a backup
/// restore) names a live pid, and a pid is reused after a reboot; a flock is neither.
pub(crate) fn is_held(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let open = OpenOptions::new().read(true).custom_flags(nix::libc::O_NOFOLLOW).open(path);
    let Ok(file) = open else { return false };
    matches!(Flock::lock(file, FlockArg::LockSharedNonblock), Err((_, Errno::EWOULDBLOCK)))
}

/// The ralph that holds the lock now ([`is_held`]), as its record names it.
pub(crate) fn holder(path: &Path) -> Option<LockInfo> {
    is_held(path).then(|| read_info(path)).flatten()
}

fn parse(content: &str) -> Option<LockInfo> {
    serde_json::from_str(content.trim()).ok()
}

fn read_bytes(file: &mut File) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn write_info(file: &mut File, info: &LockInfo) -> io::Result<()> {
    let line = format!("{}\n", serde_json::to_string(info).map_err(io::Error::other)?);
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    // Not synced: a kill keeps it (the page cache), and after a power cut, where it
    // could be lost, every lock is free and the checkpoint tells the interruption.
    // The clean release's empty file is synced (it must not read as a crash).
    file.write_all(line.as_bytes())
}

fn same_inode(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::wait::WaitPidFlag;
    use std::process::{Command, Stdio};

    fn lock_path() -> (tempfile::TempDir, PathBuf) {
        crate::testkit::temp_file("ralph.lock")
    }

    #[test]
    fn acquire_release_acquire_is_clean() {
        let (_d, p) = lock_path();
        let a = acquire(&p).unwrap();
        assert!(a.stale.is_none() && !a.stale_unreadable);
        let info = read_info(&p).unwrap();
        assert_eq!(info.pid, std::process::id());
        a.lock.release().unwrap();
        assert!(p.exists(), "lock file is kept");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
        assert!(read_info(&p).is_none());

        let b = acquire(&p).unwrap();
        assert!(b.stale.is_none() && !b.stale_unreadable);
        b.lock.release().unwrap();
        let c = acquire(&p).unwrap();
        assert!(c.stale.is_none() && !c.stale_unreadable);
    }

    #[test]
    fn a_lock_given_back_holds_what_it_held_before() {
        let (_d, p) = lock_path();
        let crashed = LockInfo { pid: 999_999_999, ..LockInfo::current() };
        let old = format!("{}\n", serde_json::to_string(&crashed).unwrap());
        std::fs::write(&p, &old).unwrap();
        let a = acquire(&p).unwrap();
        assert_eq!(a.stale.as_ref().map(|s| s.pid), Some(crashed.pid));
        a.lock.give_back().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), old, "the crash's mark is kept");
        assert_eq!(acquire(&p).unwrap().stale.map(|s| s.pid), Some(crashed.pid));
        // A clean stop's empty file stays empty.
        let (_e, q) = lock_path();
        acquire(&q).unwrap().lock.release().unwrap();
        acquire(&q).unwrap().lock.give_back().unwrap();
        assert_eq!(std::fs::metadata(&q).unwrap().len(), 0);
    }

    #[test]
    fn a_drop_is_not_a_clean_stop() {
        // A second Ctrl+C or an I/O-error exit drops the lock without the final
        // save: the next ralph must see an interrupted run.
        let (_d, p) = lock_path();
        drop(acquire(&p).unwrap());
        assert_eq!(acquire(&p).unwrap().stale.map(|i| i.pid), Some(std::process::id()));
    }

    #[test]
    fn non_utf8_content_is_stale_not_an_error() {
        let (_d, p) = lock_path();
        std::fs::write(&p, b"\xff\xfe\x00garbage").unwrap();
        let a = acquire(&p).unwrap();
        assert!(a.stale_unreadable && a.stale.is_none());
    }

    #[test]
    fn a_planted_link_is_not_followed() {
        let (d, p) = lock_path();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let err = acquire(&p).unwrap_err().to_string();
        assert!(err.contains("ralph.lock is a symbolic link"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn second_acquire_while_held_names_our_pid() {
        let (_d, p) = lock_path();
        let a = acquire(&p).unwrap();
        // flock locks belong to the open file description: a second open in the
        // same process conflicts like another process would.
        let err = acquire(&p).unwrap_err();
        match &err {
            LockError::Held { info: Some(i), .. } => assert_eq!(i.pid, std::process::id()),
            other => panic!("expected held, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("another ralph (pid {} on ", std::process::id())), "{msg}");
        // The failed attempt must not have disturbed the holder's record.
        assert_eq!(read_info(&p).map(|i| i.pid), Some(std::process::id()));
        a.lock.release().unwrap();
        assert!(acquire(&p).is_ok());
    }

    #[test]
    fn leftover_content_is_reported_stale() {
        let (_d, p) = lock_path();
        // A crashed holder: its info is in the file, its flock went with it.
        let old = LockInfo {
            pid: 999_999,
            host: "elsewhere".into(),
            boot_id: "old-boot".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
        };
        std::fs::write(&p, serde_json::to_string(&old).unwrap()).unwrap();
        let a = acquire(&p).unwrap();
        assert_eq!(a.stale, Some(old));
        assert!(a.stale.is_some() || a.stale_unreadable);
        assert_eq!(read_info(&p).unwrap().pid, std::process::id());
    }

    #[test]
    fn live_pid_with_free_flock_is_stale() {
        let (_d, p) = lock_path();
        // Our own pid, this boot: alive, but nobody holds the flock.
        let copied = LockInfo::current();
        assert!(copied.process_alive());
        std::fs::write(&p, serde_json::to_string(&copied).unwrap()).unwrap();
        let a = acquire(&p).unwrap();
        assert_eq!(a.stale, Some(copied));
    }

    #[test]
    fn panic_drop_keeps_content_as_stale() {
        let (_d, p) = lock_path();
        let p2 = p.clone();
        let r = std::thread::spawn(move || {
            let a = acquire(&p2).unwrap();
            let _held = a.lock;
            panic!("simulated crash");
        })
        .join();
        assert!(r.is_err());
        let a = acquire(&p).unwrap();
        assert_eq!(a.stale.map(|i| i.pid), Some(std::process::id()));
    }

    #[test]
    fn garbage_content_is_stale_unreadable() {
        let (_d, p) = lock_path();
        std::fs::write(&p, "{\"pid\": 12").unwrap();
        let a = acquire(&p).unwrap();
        assert!(a.stale.is_none());
        assert!(a.stale_unreadable);
        assert!(a.stale.is_some() || a.stale_unreadable);
        assert!(read_info(&p).is_some());
    }

    #[test]
    fn only_a_held_flock_makes_a_holder_not_a_copied_record() {
        let (_d, p) = lock_path();
        // A record copied from a live run (this process, this boot) without its flock.
        std::fs::write(&p, serde_json::to_string(&LockInfo::current()).unwrap()).unwrap();
        assert!(read_info(&p).is_some_and(|i| i.process_alive()));
        assert!(!is_held(&p) && holder(&p).is_none());
        let a = acquire(&p).unwrap();
        assert_eq!(holder(&p).map(|i| i.pid), Some(std::process::id()));
        a.lock.release().unwrap();
        assert!(!is_held(&p));
        assert!(!is_held(&p.with_file_name("missing")));
    }

    #[test]
    fn lock_file_mode_is_0600() {
        let (_d, p) = lock_path();
        let _a = acquire(&p).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn held_without_info_still_names_the_lock() {
        let err = LockError::Held { path: PathBuf::from(".agent/ralph.lock"), info: None };
        assert!(err.to_string().contains(".agent/ralph.lock"));
    }

    /// One process that holds the flock of `p` on its own descriptor: the shell
    /// opens the file, util-linux `flock` locks that shared open file, the shell
    /// becomes `sleep` keeping the descriptor. Killing that pid releases the lock.
    fn flock_holder(p: &Path) -> std::process::Child {
        let mut child = Command::new("sh")
            .args(["-c", "exec 9<>\"$1\" && flock -n 9 && echo locked && exec sleep 30", "sh"])
            .arg(p)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        io::BufRead::read_line(&mut io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line, "locked\n");
        child
    }

    #[test]
    fn a_killed_holder_its_parent_has_not_reaped_is_not_alive() {
        let (_d, p) = lock_path();
        let mut child = flock_holder(&p);
        let theirs = LockInfo { pid: child.id(), ..LockInfo::current() };
        std::fs::write(&p, serde_json::to_string(&theirs).unwrap()).unwrap();
        assert!(theirs.process_alive() && held_by_a_live_ralph(&p, Duration::ZERO));
        child.kill().unwrap();
        // Waited for without reaping it: a zombie until `child.wait()`.
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::wait::waitid(nix::sys::wait::Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT).unwrap();
        assert!(!theirs.process_alive(), "a zombie is no live ralph");
        assert!(!held_by_a_live_ralph(&p, DEAD_HOLDER_GRACE));
        assert_eq!(acquire(&p).unwrap().stale, Some(theirs));
        child.wait().unwrap();
    }

    #[test]
    fn a_holder_that_no_longer_runs_is_waited_for_until_the_grace_ends() {
        let grace = DEAD_HOLDER_GRACE;
        for waited in [Duration::ZERO, grace] {
            assert_eq!(holding(false, false, waited, grace), Holding::Free);
            assert_eq!(holding(false, true, waited, grace), Holding::Free);
            assert_eq!(holding(true, true, waited, grace), Holding::Live);
        }
        assert_eq!(holding(true, false, Duration::ZERO, grace), Holding::Going);
        assert_eq!(holding(true, false, grace - Duration::from_millis(1), grace), Holding::Going);
        assert_eq!(holding(true, false, grace, grace), Holding::Live, "whoever holds it then");
    }

    #[test]
    fn a_lock_held_by_no_running_ralph_is_live_once_the_grace_is_over() {
        let (_d, p) = lock_path();
        let a = acquire(&p).unwrap();
        // The record names a process gone (its flock kept by another descriptor).
        let gone = LockInfo { pid: 999_999_999, ..LockInfo::current() };
        std::fs::write(&p, serde_json::to_string(&gone).unwrap()).unwrap();
        assert!(held_by_a_live_ralph(&p, Duration::from_millis(100)));
        a.lock.release().unwrap();
        assert!(!held_by_a_live_ralph(&p, DEAD_HOLDER_GRACE));
    }

    /// A real other process holding the lock, then killed with SIGKILL: held while
    /// it lives, stale with its record once it is gone. Uses util-linux `flock`.
    #[test]
    fn killed_child_process_leaves_stale_lock() {
        if Command::new("flock").arg("--version").output().is_err() {
            eprintln!("skipped: no flock binary");
            return;
        }
        let (_d, p) = lock_path();
        let theirs =
            LockInfo { pid: 4242, host: "child".into(), boot_id: boot_id(), started_at: "2026-01-01T00:00:00Z".into() };
        std::fs::write(&p, serde_json::to_string(&theirs).unwrap()).unwrap();
        let mut child = flock_holder(&p);
        let held = match acquire(&p) {
            Err(LockError::Held { info, .. }) => info,
            other => panic!("expected held, got {other:?}"),
        };
        assert_eq!(held.map(|i| i.pid), Some(4242));
        child.kill().unwrap();
        child.wait().unwrap();
        let a = acquire(&p).unwrap();
        assert_eq!(a.stale, Some(theirs));
    }
}

//! The Linux-specific calls, in one place: `prctl` (the subreaper, the parent-death
//! signal), the `/proc` file system and its clock, the kernel's boot id, signalling
//! a process group, a socket peer's credentials, ralph's own executable, the file
//! system type of a directory, a process watched by its pidfd (the fleet's), who sent
//! a signal ([`origin`]). Everything else reaches the operating system through
//! portable APIs; a port to another system starts here. A test below fails when one
//! of these calls appears anywhere else in `src/`.
//!
//! Every `unsafe` block of ralph's is here too (the `unsafe_code` lint refuses one
//! anywhere else): a child's parent-death signal, a signal's disposition, a pidfd's
//! registration with tokio, and the handler that records a signal's sender
//! ([`origin`]). What safe crates do stays out of here: the pidfd itself (rustix),
//! the second-Ctrl+C backstop's handler and exit (signal-hook, in
//! `process::agent_group`).

pub(crate) mod origin;

use std::path::{Path, PathBuf};

use nix::sys::signal::{SigHandler, Signal};
use nix::unistd::Pid;

/// Where the kernel shows its processes.
pub(crate) fn proc_root() -> &'static Path {
    Path::new("/proc")
}

/// The kernel's IPv4 and IPv6 route tables (`/proc/net/route`, `/proc/net/ipv6_route`),
/// an empty text for one that cannot be read; `None` when neither can (not Linux, a
/// restricted `/proc`).
pub(crate) fn route_tables() -> Option<(String, String)> {
    let read = |name: &str| std::fs::read_to_string(proc_root().join("net").join(name)).ok();
    match (read("route"), read("ipv6_route")) {
        (None, None) => None,
        (v4, v6) => Some((v4.unwrap_or_default(), v6.unwrap_or_default())),
    }
}

/// Makes ralph the reaper of its descendants' orphans; false when the kernel refuses.
pub(crate) fn become_subreaper() -> bool {
    nix::sys::prctl::set_child_subreaper(true).is_ok()
}

/// Whether ralph is the reaper of its descendants' orphans now.
pub(crate) fn is_subreaper() -> bool {
    nix::sys::prctl::get_child_subreaper().unwrap_or(false)
}

/// Sends `signal` (or, with `None`, only checks) to every process of group `pgid`.
pub(crate) fn signal_group(pgid: i32, signal: impl Into<Option<Signal>>) -> nix::Result<()> {
    nix::sys::signal::killpg(Pid::from_raw(pgid), signal)
}

/// Whether process `pid` still runs: one of its threads is neither a zombie (`Z`),
/// dead (`X`) nor exiting (`PF_EXITING`), by `/proc/PID/task/*/stat`. A killed
/// process that its parent has not reaped yet is a zombie, which `kill(pid, 0)`
/// still finds; and a process's first thread may be a zombie while the others
/// still run (and hold its descriptors). Without `/proc`, `kill(pid, 0)` answers.
pub(crate) fn process_runs(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let Ok(threads) = std::fs::read_dir(proc_root().join(pid.to_string()).join("task")) else {
        return matches!(nix::sys::signal::kill(Pid::from_raw(pid), None), Ok(()) | Err(nix::errno::Errno::EPERM));
    };
    // A thread that ended between the listing and its read is not running.
    threads.flatten().any(|t| std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| thread_runs(&s)))
}

/// Whether the thread of a `/proc/.../stat` line runs: "pid (comm) STATE ppid ...
/// flags ...", the command name may hold spaces and parentheses, so the fields are
/// counted after the last `)`.
fn thread_runs(stat: &str) -> bool {
    /// The kernel's flag of a task in `do_exit` (include/linux/sched.h).
    const PF_EXITING: u64 = 0x4;
    let mut fields = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace();
    let state = fields.next();
    // state, ppid, pgrp, session, tty_nr, tpgid, then flags.
    let flags = fields.nth(5).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    !matches!(state, Some("Z" | "X" | "x") | None) && flags & PF_EXITING == 0
}

/// The user id of the process at the other end of a Unix socket (`SO_PEERCRED`).
pub(crate) fn peer_uid(stream: &std::os::unix::net::UnixStream) -> std::io::Result<u32> {
    Ok(nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)?.uid())
}

/// ralph's own executable, to start itself again (`ralph sim`, `ralph mcp`, the
/// watchdog's unit). When the file was replaced while ralph runs (an upgrade in the
/// middle of a night's run), the kernel names the old one `PATH (deleted)`, which
/// cannot be started; the new file at `PATH` is the one to start.
pub(crate) fn self_exe() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let replaced = exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")).map(PathBuf::from);
    Ok(replaced.filter(|r| r.is_file()).unwrap_or(exe))
}

/// A descriptor that becomes readable when process `pid` ends (`pidfd_open`, Linux
/// 5.3): how the fleet's supervisor waits for a task's ralph it did not start (one
/// left running by a supervisor that crashed) without polling. Bound to the process,
/// not the number: a pid reused later is never mistaken for it.
pub(crate) fn process_fd(pid: i32) -> std::io::Result<std::os::fd::OwnedFd> {
    let pid = (pid > 0).then(|| rustix::process::Pid::from_raw(pid)).flatten();
    let pid = pid.ok_or_else(|| std::io::Error::from_raw_os_error(nix::libc::EINVAL))?;
    Ok(rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?)
}

/// A future that is ready when the process of `pidfd` has ended (the kernel makes
/// a pidfd readable then). Needs a tokio runtime with I/O enabled.
pub(crate) fn exited(pidfd: std::os::fd::OwnedFd) -> std::io::Result<impl std::future::Future<Output = ()>> {
    // SAFETY: the `OwnedFd` is an open descriptor that the `AsyncFd` owns, and
    // nothing else closes, for as long as it lives. (tokio's safe `with_interest` is
    // deprecated as unsound: it cannot know that of any descriptor it is given.)
    let watched = unsafe { tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }
        .map_err(std::io::Error::from)?;
    Ok(async move {
        let _ = watched.readable().await;
    })
}

/// The kernel's boot id, which changes on every boot; empty when unreadable
/// (non-Linux, restricted /proc).
///
/// `RALPH_BOOT_ID_FILE` names another file to read it from: a test hook that
/// simulates a reboot (documented in docs/operations.md as test-only).
pub(crate) fn boot_id() -> String {
    let path = std::env::var_os("RALPH_BOOT_ID_FILE")
        .map_or_else(|| PathBuf::from("/proc/sys/kernel/random/boot_id"), PathBuf::from);
    std::fs::read_to_string(path).map(|s| s.trim().to_owned()).unwrap_or_default()
}

/// Clock ticks since boot now: the unit and the clock of a process's start time in
/// `/proc/PID/stat` (both count the time suspended). `None` when unknown.
pub(crate) fn ticks_since_boot() -> Option<u64> {
    let uptime = std::fs::read_to_string(proc_root().join("uptime")).ok()?;
    let secs: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    Some((secs * ticks_per_second()? as f64) as u64)
}

/// The kernel's clock ticks per second (`USER_HZ`), the unit of `/proc` times.
pub(crate) fn ticks_per_second() -> Option<u64> {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    u64::try_from(ticks).ok().filter(|t| *t > 0)
}

/// Makes the child of `command` get SIGKILL when ralph dies: if ralph is killed
/// outright (kill -9, the OOM killer), its agent dies with it instead of editing
/// files unsupervised. The kernel sends the signal when the *thread* that started
/// the child ends, so a command given this is spawned only from a thread that lives
/// as long as ralph (the runtime's own, never tokio's blocking pool, whose idle
/// threads end). A ralph that died before the signal was set is seen through
/// `getppid`, and the launch fails with `ESRCH`.
pub(crate) fn die_with_parent(command: &mut tokio::process::Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the child between fork and exec, and makes only
    // async-signal-safe system calls (prctl, getppid); it neither allocates nor
    // takes a lock (a raw OS error needs no allocation).
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Sets `signal` back to its default action (`ignore == false`) or to be ignored.
pub(crate) fn set_disposition(signal: Signal, ignore: bool) -> nix::Result<()> {
    let handler = if ignore { SigHandler::SigIgn } else { SigHandler::SigDfl };
    // SAFETY: SIG_DFL and SIG_IGN install no handler function, so nothing runs in a
    // signal's context; the call fails harmlessly for SIGKILL and SIGSTOP.
    unsafe { nix::sys::signal::signal(signal, handler) }.map(drop)
}

/// Whether `dir` is on a file system that other hosts can mount at the same time
/// (NFS, SMB, CephFS, a cluster or FUSE file system), by its `statfs` type; a
/// directory whose type cannot be read counts as shared. On a local file system only
/// this kernel sees the directory, whose flock already says who owns it.
pub(crate) fn is_shared_fs(dir: &Path) -> bool {
    const SHARED: [u32; 17] = [
        0x6969,      // NFS
        0x517b,      // SMB
        0xff53_4d42, // CIFS
        0xfe53_4d42, // SMB2
        0x00c3_6400, // CephFS
        0x7375_7245, // Coda
        0x5346_414f, // AFS
        0x6b41_4653, // kAFS
        0x0102_1997, // 9p
        0x6573_5546, // FUSE (sshfs, GlusterFS, s3fs, virtiofs)
        0x0bd0_0bd0, // Lustre
        0x4750_4653, // GPFS
        0x7461_636f, // OCFS2
        0x0116_1970, // GFS2
        0x564c,      // NCP
        0x2003_0528, // OrangeFS
        0x1983_0326, // BeeGFS
    ];
    // The type's bits as the kernel's 32-bit magic numbers, whatever the width of
    // the C type on this target.
    nix::sys::statfs::statfs(dir).map_or(true, |fs| SHARED.contains(&(fs.filesystem_type().0 as u32)))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// What only this module may call, as it is spelled in code.
    const LINUX_ONLY: [&str; 9] = [
        "prctl",
        "\"/proc",
        "random/boot_id",
        "killpg",
        "setpgid",
        "PeerCredentials",
        "current_exe",
        "statfs",
        "pidfd_open",
    ];

    #[test]
    fn a_killed_child_not_yet_reaped_does_not_run() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("spawn sleep");
        let pid = i32::try_from(child.id()).expect("pid");
        assert!(super::process_runs(pid));
        child.kill().expect("kill sleep");
        // Not reaped: a zombie until the wait below.
        let zombie = std::time::Instant::now();
        while super::process_runs(pid) {
            assert!(zombie.elapsed() < std::time::Duration::from_secs(10), "still runs after its SIGKILL");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok(), "a zombie, not reaped");
        let _ = child.wait();
        assert!(!super::process_runs(pid) && !super::process_runs(0) && !super::process_runs(-1));
        assert!(super::process_runs(i32::try_from(std::process::id()).expect("own pid")));
    }

    #[test]
    fn a_stat_line_says_whether_its_thread_runs() {
        let line = |state: &str, flags: u64| format!("12 (a (b) c) {state} 1 12 12 0 -1 {flags} 0 0");
        assert!(super::thread_runs(&line("S", 0x40_0000)));
        assert!(super::thread_runs(&line("R", 0)));
        assert!(!super::thread_runs(&line("Z", 0)));
        assert!(!super::thread_runs(&line("X", 0)));
        assert!(!super::thread_runs(&line("D", 0x40_0004)), "exiting");
        assert!(!super::thread_runs("garbage"));
    }

    #[test]
    fn a_local_directory_is_not_shared() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The test's temp directory is on a local disk or a tmpfs on every machine
        // the suite runs on.
        assert!(!super::is_shared_fs(dir.path()));
    }

    #[test]
    fn a_pidfd_is_ready_when_its_process_ends_and_refused_for_no_process() {
        assert!(super::process_fd(0).is_err());
        assert!(super::process_fd(-1).is_err());
        assert!(super::process_fd(i32::MAX).is_err(), "no such process");
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("spawn sleep");
        let fd = super::process_fd(i32::try_from(child.id()).expect("pid")).expect("pidfd of a live child");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let exited = super::exited(fd).expect("registered");
            tokio::pin!(exited);
            let early = tokio::time::timeout(std::time::Duration::from_millis(100), &mut exited).await;
            assert!(early.is_err(), "ready while the process runs");
            child.kill().expect("kill sleep");
            tokio::time::timeout(std::time::Duration::from_secs(10), exited).await.expect("ready once it ended");
        });
        let _ = child.wait();
    }

    #[test]
    fn linux_specific_calls_live_only_here() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let files = crate::testkit::rust_files(&src);
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.ends_with("src/os.rs") && !f.starts_with(src.join("os"))) {
            let text = std::fs::read_to_string(file).expect("read a source file");
            for (n, line) in text.lines().enumerate() {
                // Comments may name them; code may not.
                let code = line.split("//").next().unwrap_or_default();
                for call in LINUX_ONLY.iter().filter(|c| code.contains(*c)) {
                    found.push(format!("{}:{}: {call}", file.strip_prefix(&src).unwrap_or(file).display(), n + 1));
                }
            }
        }
        assert!(found.is_empty(), "Linux-specific calls outside src/os.rs:\n{}", found.join("\n"));
        assert!(files.len() > 50, "the scan found only {} files", files.len());
    }
}

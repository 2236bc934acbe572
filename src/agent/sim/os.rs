//! The scripted agent's process-level misbehaviour: dying by a signal, ignoring
//! signals, hanging, leaving a grandchild behind, writing pid files.
//!
//! These only make sense in the real `ralph __sim` child process; unit tests never
//! call `crash`, `hang` or `ignore` (they would take the test runner with them).

use std::fs;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};

/// "SIGSEGV", "sigsegv", "SEGV" and "segv" all name the same signal.
pub(super) fn parse_signal(name: &str) -> Option<Signal> {
    let upper = name.trim().to_ascii_uppercase();
    let full = if upper.starts_with("SIG") { upper } else { format!("SIG{upper}") };
    full.parse().ok()
}

/// Dies by `name` (SIGSEGV when empty or unknown), so the parent sees
/// `ExitStatus::signal()`. Never returns.
pub(super) fn crash(name: &str) -> ! {
    let sig = if name.trim().is_empty() { Signal::SIGSEGV } else { parse_signal(name).unwrap_or(Signal::SIGSEGV) };
    // The Rust runtime installs a SIGSEGV/SIGBUS handler for stack-overflow reports
    // that swallows a raised (non-fault) SIGSEGV, and an earlier `ignore` step may have
    // set SIG_IGN: restore the default action so the signal really terminates us.
    let _ = crate::os::set_disposition(sig, false);
    // A blocked signal would stay pending and `raise` would return.
    let mut set = SigSet::empty();
    set.add(sig);
    let _ = signal::pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
    let _ = signal::raise(sig);
    // Only reached for signals whose default action is not to terminate (e.g. a
    // misconfigured "SIGCHLD"), or after SIGSTOP/SIGCONT: still die by a signal.
    std::process::abort()
}

/// Sets each named signal to SIG_IGN; returns one message per name it could not ignore.
/// The disposition is inherited by children spawned afterwards (a later `grandchild`
/// ignores them too), which is what a stubborn real agent tree looks like.
pub(super) fn ignore(names: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for name in names {
        let Some(sig) = parse_signal(name) else {
            problems.push(format!("unknown signal {name:?}"));
            continue;
        };
        if let Err(e) = crate::os::set_disposition(sig, true) {
            problems.push(format!("cannot ignore {sig}: {e}"));
        }
    }
    problems
}

/// Never returns on its own; only a signal ends it.
pub(super) fn hang() -> ! {
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

/// Writes `pid` to `path`, creating parent directories.
pub(super) fn write_pidfile(path: &Path, pid: u32) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, format!("{pid}\n"))
}

/// Starts `sleep LIVES` in our process group (no setsid, so a group kill reaches it)
/// with no handle on our stdout/stderr (so its survival cannot hold the parent's pipe
/// open), and returns its pid. Signal dispositions are inherited: SIGINT/SIGTERM stay
/// at their default unless an earlier `ignore` step changed them.
pub(super) fn spawn_grandchild(cwd: &Path, lives: Duration) -> io::Result<u32> {
    let mut child = Command::new("sleep")
        .arg(format!("{:.3}", lives.as_secs_f64()))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id();
    // Reap it if it dies before we do, so a test probing the pid with kill(0) does not
    // mistake a zombie for a live leftover.
    thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names() {
        assert_eq!(parse_signal("SIGSEGV"), Some(Signal::SIGSEGV));
        assert_eq!(parse_signal("abrt"), Some(Signal::SIGABRT));
        assert_eq!(parse_signal(" SigTerm "), Some(Signal::SIGTERM));
        assert_eq!(parse_signal("SIGKILL"), Some(Signal::SIGKILL));
        assert_eq!(parse_signal("nope"), None);
    }
}

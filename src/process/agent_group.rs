//! The agent process group ralph is running right now, for the signal paths that
//! must not depend on the event loop: the second-Ctrl+C backstop and Ctrl+Z.
//!
//! The backstop is armed at the first stop signal. From then on a SIGINT kills the
//! agent's group with SIGKILL from a thread of its own, woken by the signal handler
//! (the parent-death signal reaches only the direct child, so the group kill must
//! come first), which ends ralph with exit 130 if the event loop has not managed
//! its own orderly exit shortly after: a loop blocked in an fsync on a hung network
//! file system cannot trap the user.

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, raise};

/// The running agent's process group id; 0 when none runs.
static GROUP: AtomicI32 = AtomicI32::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

/// How long the event loop gets to finish its own (saving) exit after the second
/// Ctrl+C before the backstop ends the process.
const LOOP_GRACE: Duration = Duration::from_secs(2);

/// Records the group of the agent that was just started.
pub(crate) fn set(pgid: u32) {
    GROUP.store(i32::try_from(pgid).unwrap_or(0), Ordering::SeqCst);
}

/// The agent's group is gone (or about to be): nothing to signal any more.
pub(crate) fn clear() {
    GROUP.store(0, Ordering::SeqCst);
}

fn signal_current(signal: Signal) {
    let pgid = GROUP.load(Ordering::SeqCst);
    if pgid > 0 {
        let _ = crate::os::signal_group(pgid, signal);
    }
}

/// Ctrl+Z: stops the agent's group, then ralph itself; returns after `fg` (SIGCONT)
/// with the time spent stopped, once the agent's group is continued too.
pub(crate) fn suspend() -> Duration {
    signal_current(Signal::SIGSTOP);
    let stopped = Instant::now();
    raise(Signal::SIGSTOP).unwrap_or_else(|e| tracing::warn!("cannot stop ralph for Ctrl+Z: {e}"));
    signal_current(Signal::SIGCONT);
    stopped.elapsed()
}

/// Arms the backstop (once; later calls do nothing).
pub(crate) fn arm_backstop() -> std::io::Result<()> {
    if ARMED.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    // The handler only writes a byte to the socket; the thread, independent of the
    // event loop, does the rest.
    let (mut wake, notify) = std::os::unix::net::UnixStream::pair()?;
    std::thread::Builder::new().name("ralph-backstop".into()).spawn(move || {
        let mut byte = [0u8; 1];
        if matches!(wake.read(&mut byte), Ok(1)) {
            // The group first: the parent-death signal reaches only the direct child.
            signal_current(Signal::SIGKILL);
            std::thread::sleep(LOOP_GRACE);
            // The loop did not get out in time: leave now. The user's intent was
            // written at the first Ctrl+C; the group is killed again in case the loop
            // started another meanwhile. Destructors and exit handlers are skipped
            // (`_exit`): the loop that owns them is stuck.
            signal_current(Signal::SIGKILL);
            signal_hook::low_level::exit(crate::exit_codes::INTERRUPTED);
        }
    })?;
    signal_hook::low_level::pipe::register(signal_hook::consts::SIGINT, notify).map(drop)
}

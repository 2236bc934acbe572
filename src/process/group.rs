//! Spawning an agent in its own process group and signalling that group.

use std::path::PathBuf;
use std::process::Stdio;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// Everything needed to start one agent process.
#[derive(Debug, Clone)]
pub struct Launch {
    /// argv[0] is the program; never interpreted by a shell.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment of the child (already scrubbed).
    pub env: Vec<(String, String)>,
}

/// Starts the agent: own process group (so a terminal's Ctrl+C reaches ralph only,
/// and ralph can end the agent with everything it started), stdin `/dev/null`
/// (agents that read stdin when it is not a terminal would otherwise hang),
/// stdout and stderr piped to ralph.
pub fn spawn(launch: &Launch) -> std::io::Result<Child> {
    let (program, args) =
        launch.argv.split_first().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        // ralph ends the group itself with grace; this is the last resort when the
        // future is dropped on an error path.
        .kill_on_drop(true);
    die_with_ralph(&mut cmd);
    cmd.spawn()
}

/// If ralph itself dies without ending the attempt (kill -9, OOM), nobody is left to
/// supervise the agent: the kernel kills it (`PR_SET_PDEATHSIG`), so a `--resume`
/// never runs a second agent beside an orphaned one in the same workspace. The
/// signal follows the thread that spawned the child, which is why ralph runs a
/// single-threaded runtime.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn die_with_ralph(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: between fork and exec the closure only makes async-signal-safe system
    // calls (prctl, getppid) and allocates nothing on the success path.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            // ralph may have died between fork and prctl: then the signal never comes.
            if u32::try_from(nix::unistd::getppid().as_raw()).ok() != Some(parent) {
                return Err(std::io::Error::other("ralph exited before the agent started"));
            }
            Ok(())
        });
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn die_with_ralph(_cmd: &mut Command) {}

/// Sends `signal` to the whole process group `pgid`. A group that is already gone
/// is not an error.
pub fn signal_group(pgid: u32, signal: Signal) -> std::io::Result<()> {
    let Ok(raw) = i32::try_from(pgid) else {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "pgid out of range"));
    };
    match killpg(Pid::from_raw(raw), signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(std::io::Error::from(e)),
    }
}

/// Whether any process of the group `pgid` is still alive.
pub fn group_alive(pgid: u32) -> bool {
    i32::try_from(pgid).is_ok_and(|raw| killpg(Pid::from_raw(raw), None).is_ok())
}

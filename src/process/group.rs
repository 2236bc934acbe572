//! Starting an agent in its own process group, waiting for it, and signalling
//! that group.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;

use nix::sys::signal::Signal;
use tokio::net::unix::pipe;
use tokio::signal::unix;

use crate::os;

/// Everything needed to start one agent process.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    /// `argv[0]` is the program; never interpreted by a shell.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment of the child (already scrubbed).
    pub env: Vec<(String, String)>,
    /// Text for the child's stdin (the prompt, which no argument could hold when
    /// long), written by the caller and then closed; `None` is `/dev/null`.
    pub stdin: Option<String>,
}

/// The agent's ends of its standard streams, held by ralph.
pub(crate) struct Pipes {
    /// Where the prompt is written, when [`Launch::stdin`] has one.
    pub stdin: Option<pipe::Sender>,
    pub stdout: pipe::Receiver,
    pub stderr: pipe::Receiver,
}

/// A started agent, its process group's leader. Dropped before it was reaped (an
/// error path gave up on the attempt), it is killed: an agent never runs on
/// unsupervised.
pub(crate) struct Agent {
    pid: i32,
    status: Option<ExitStatus>,
    /// Waiting failed: the pid may no longer be ralph's child, so it is not killed.
    lost: bool,
    /// A child exit was signalled since the agent was last looked at.
    look: bool,
    /// Made before the agent started, so that no exit goes unseen.
    child_exits: unix::Signal,
}

/// Starts the agent: own process group (so a terminal's Ctrl+C reaches ralph only,
/// and ralph can end the agent with everything it started), killed when ralph dies
/// (`SIGKILL` as its parent-death signal), stdin `/dev/null` (agents that read
/// stdin when it is not a terminal would otherwise hang) or a pipe the caller writes
/// the prompt to and closes, stdout and stderr piped to ralph.
///
/// Started without a `fork` (see `os::spawn`); the error is the errno the OS gave,
/// which decides whether the launch can ever succeed (`recovery::spawn`).
pub(crate) fn spawn(launch: &Launch) -> std::io::Result<(Agent, Pipes)> {
    let (program, args) =
        launch.argv.split_first().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"))?;
    // Resolve the program once here: left to exec, every PATH entry before the right
    // one costs a failed execve in the child (measured: ~0.4 ms per launch).
    let path_var = launch.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str());
    let path = if program.contains('/') {
        std::path::PathBuf::from(program)
    } else {
        which::which_in(program, path_var, &launch.cwd).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("{program} was not found on PATH"))
        })?
    };
    let (stdin, prompt) = match launch.stdin {
        Some(_) => {
            let (ours, theirs) = agent_pipe(PipeEnd::Write)?;
            (theirs, Some(ours))
        }
        None => (std::fs::File::open("/dev/null")?.into(), None),
    };
    let (stdout, out_write) = agent_pipe(PipeEnd::Read)?;
    let (stderr, err_write) = agent_pipe(PipeEnd::Read)?;
    let child_exits = unix::signal(unix::SignalKind::child())?;
    let stdio = [stdin.as_fd(), out_write.as_fd(), err_write.as_fd()];
    let pid = os::spawn::spawn(&os::spawn::Program { path: &path, args, env: &launch.env, cwd: &launch.cwd, stdio })?;
    let agent = Agent { pid, status: None, lost: false, look: true, child_exits };
    let pipes = Pipes {
        stdin: prompt.map(pipe::Sender::from_owned_fd_unchecked).transpose()?,
        stdout: pipe::Receiver::from_owned_fd_unchecked(stdout)?,
        stderr: pipe::Receiver::from_owned_fd_unchecked(stderr)?,
    };
    Ok((agent, pipes))
}

/// Which end of a new pipe is ralph's.
#[derive(Clone, Copy)]
enum PipeEnd {
    Read,
    Write,
}

/// A pipe whose `ours` end is ralph's (non-blocking, for tokio) and whose other end
/// is the agent's (blocking, as a program expects its stdio). Returns (ralph's
/// end, the agent's end); both close on exec (the agent gets its copy by `dup2`).
fn agent_pipe(ours: PipeEnd) -> std::io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
    let (ours, theirs) = match ours {
        PipeEnd::Read => (read, write),
        PipeEnd::Write => (write, read),
    };
    fcntl(&theirs, FcntlArg::F_SETFL(OFlag::empty()))?;
    Ok((ours, theirs))
}

impl Agent {
    /// Its pid, which is also its process group's id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Waits for the agent to exit and reaps it. Cancel-safe, and cheap to call on
    /// every turn of the attempt's loop: the agent is looked at (`waitpid`) only
    /// after a child exit was signalled, and every one since the agent started is.
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            if self.look {
                match os::spawn::try_wait(self.pid) {
                    Ok(Some(raw)) => self.status = Some(ExitStatus::from_raw(raw)),
                    Ok(None) => self.look = false,
                    Err(e) => {
                        self.lost = true;
                        return Err(e);
                    }
                }
                continue;
            }
            if self.child_exits.recv().await.is_none() {
                return Err(std::io::Error::other("the runtime stopped watching for child exits"));
            }
            self.look = true;
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.status.is_some() || self.lost {
            return;
        }
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), Signal::SIGKILL);
        if let Ok(Some(_)) = os::spawn::try_wait(self.pid) {
            return;
        }
        // Reaped once it is gone, by a handle of its own; without a runtime ralph is
        // exiting, and init reaps.
        let pid = self.pid;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let Ok(child_exits) = unix::signal(unix::SignalKind::child()) else { return };
                let _ = Agent { pid, status: None, lost: false, look: true, child_exits }.wait().await;
            });
        }
    }
}

/// Sends `signal` to the whole process group `pgid`. A group that is already gone
/// is not an error.
pub(crate) fn signal_group(pgid: u32, signal: Signal) -> std::io::Result<()> {
    let raw =
        i32::try_from(pgid).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "pgid out of range"))?;
    match crate::os::signal_group(raw, signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(std::io::Error::from(e)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    fn launch(argv: &[&str], cwd: &std::path::Path) -> Launch {
        Launch {
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            cwd: cwd.to_path_buf(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into()), ("RALPH_TEST_MARK".into(), "m=1".into())],
            stdin: None,
        }
    }

    async fn read_all(mut from: pipe::Receiver) -> String {
        let mut text = String::new();
        tokio::time::timeout(LIMIT, from.read_to_string(&mut text)).await.expect("output ends").expect("read");
        text
    }

    async fn wait(agent: &mut Agent) -> ExitStatus {
        tokio::time::timeout(LIMIT, agent.wait()).await.expect("the agent exits").expect("wait")
    }

    /// One line of `/proc/PID/status`, e.g. `SigBlk`.
    fn status_field(pid: u32, name: &str) -> String {
        let status = std::fs::read_to_string(os::proc_root().join(pid.to_string()).join("status")).expect("status");
        let line = status.lines().find(|l| l.starts_with(&format!("{name}:"))).expect("the field");
        line[name.len() + 1..].trim().to_owned()
    }

    #[tokio::test]
    async fn the_agent_gets_its_arguments_stdin_and_exit_code() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut l = launch(&["sh", "-c", "cat; echo \" $1\"; echo err >&2; exit 3", "sh", "a b"], dir.path());
        l.stdin = Some("the prompt".into());
        let (mut agent, pipes) = spawn(&l).expect("spawn");
        let mut stdin = pipes.stdin.expect("a stdin pipe");
        tokio::io::AsyncWriteExt::write_all(&mut stdin, b"the prompt").await.expect("write");
        drop(stdin);
        assert_eq!(read_all(pipes.stdout).await, "the prompt a b\n");
        assert_eq!(read_all(pipes.stderr).await, "err\n");
        assert_eq!(wait(&mut agent).await.code(), Some(3));
    }

    /// The test process's descriptors without close-on-exec: inherited from whoever
    /// started it (Rust opens everything with close-on-exec).
    fn inherited_fds() -> Vec<std::ffi::OsString> {
        let fds = std::fs::read_dir(os::proc_root().join("self/fd")).expect("fds").flatten().map(|e| e.file_name());
        fds.filter(|fd| {
            let info = std::fs::read_to_string(os::proc_root().join("self/fdinfo").join(fd)).unwrap_or_default();
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).map(str::trim).unwrap_or("0");
            u32::from_str_radix(flags, 8).is_ok_and(|f| f & 0o2_000_000 == 0)
        })
        .collect()
    }

    #[tokio::test]
    async fn the_agent_starts_clean_in_its_own_group_and_directory() {
        let inherited = inherited_fds();
        let dir = tempfile::tempdir().expect("tempdir");
        let mut l = launch(&["sleep", "30"], dir.path());
        // A name given twice counts once, with its last value.
        l.env.insert(0, ("RALPH_TEST_MARK".into(), "first".into()));
        let (agent, _pipes) = spawn(&l).expect("spawn");
        let pid = agent.pid();
        let proc = os::proc_root().join(pid.to_string());
        // The clone returns once the exec has replaced ralph's memory; the kernel
        // closes the close-on-exec descriptors a moment later, before it names the
        // process after its program.
        let deadline = std::time::Instant::now() + LIMIT;
        while std::fs::read_to_string(proc.join("comm")).is_ok_and(|c| c.trim() != "sleep")
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let stat = std::fs::read_to_string(proc.join("stat")).expect("stat");
        let pgid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(2)).expect("the pgid");
        assert_eq!(pgid, pid.to_string(), "its own process group");
        // Only stdin, stdout and stderr, and what ralph inherited without
        // close-on-exec (a job server's pipe, say), as with any program.
        for fd in std::fs::read_dir(proc.join("fd")).expect("fds").flatten().map(|e| e.file_name()) {
            let passed_on = ["0", "1", "2"].iter().any(|s| fd == *s) || inherited.contains(&fd);
            assert!(passed_on, "fd {fd:?} of ralph's leaked to the agent");
        }
        assert_eq!(std::fs::read_link(proc.join("cwd")).expect("cwd"), dir.path().canonicalize().expect("dir"));
        let env = std::fs::read(proc.join("environ")).expect("environ");
        assert_eq!(env, b"PATH=/usr/bin:/bin\0RALPH_TEST_MARK=m=1\0");
        assert_eq!(status_field(pid, "SigBlk"), "0000000000000000", "no signal blocked");
        let ignored = u64::from_str_radix(&status_field(pid, "SigIgn"), 16).expect("hex");
        assert_eq!(ignored & (1 << (Signal::SIGPIPE as u32 - 1)), 0, "SIGPIPE at its default");
        // Dropped unreaped: killed, then reaped.
        drop(agent);
        let deadline = std::time::Instant::now() + LIMIT;
        while proc.exists() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!proc.exists(), "the dropped agent was killed and reaped");
    }

    #[tokio::test]
    async fn a_launch_that_cannot_work_says_why_by_its_errno() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = dir.path().join("plain.txt");
        std::fs::write(&plain, "not a program\n").expect("write");
        let long = "x".repeat(200_000);
        let too_long = spawn(&launch(&["true", &long], dir.path())).err().and_then(|e| e.raw_os_error());
        assert_eq!(too_long, Some(nix::libc::E2BIG), "one argument over 128 KiB");
        let cases: [(&str, i32); 3] = [
            ("/nonexistent/agent", nix::libc::ENOENT),
            (plain.to_str().expect("utf-8"), nix::libc::EACCES),
            ("/", nix::libc::EACCES),
        ];
        for (program, errno) in cases {
            let error = spawn(&launch(&[program], dir.path())).err().expect("no start");
            assert_eq!(error.raw_os_error(), Some(errno), "{program}: {error}");
        }
        let mut gone = launch(&["true"], dir.path());
        gone.cwd = dir.path().join("missing");
        assert_eq!(spawn(&gone).err().and_then(|e| e.raw_os_error()), Some(nix::libc::ENOENT));
        let error = spawn(&launch(&["no-such-agent-anywhere"], dir.path())).err().expect("not found");
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn a_script_without_a_shebang_runs_under_sh() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("agent");
        std::fs::write(&script, "echo \"ran $1\"\n").expect("write");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let (mut agent, pipes) = spawn(&launch(&[script.to_str().expect("utf-8"), "x"], dir.path())).expect("spawn");
        assert_eq!(read_all(pipes.stdout).await, "ran x\n");
        assert!(wait(&mut agent).await.success());
    }
}

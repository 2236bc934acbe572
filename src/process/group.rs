//! Starting an agent in its own process group, waiting for it, and signalling
//! that group.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

use nix::sys::signal::Signal;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

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
    pub stdin: Option<ChildStdin>,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// A started agent, its process group's leader. Dropped before it was reaped (an
/// error path gave up on the attempt), it is killed (and reaped by the runtime): an
/// agent never runs on unsupervised.
pub(crate) struct Agent {
    child: Child,
    pid: u32,
}

/// Starts the agent: own process group (so a terminal's Ctrl+C reaches ralph only,
/// and ralph can end the agent with everything it started), killed when ralph dies
/// (`os::die_with_parent`: call this from the runtime's own thread), stdin
/// `/dev/null` (agents that read stdin when it is not a terminal would otherwise
/// hang) or a pipe the caller writes the prompt to and closes, stdout and stderr
/// piped to ralph, SIGPIPE at its default, nothing of ralph's open but what it
/// inherited without close-on-exec.
///
/// The error is the errno the OS gave, which decides whether the launch can ever
/// succeed (`recovery::spawn`). A file without a `#!` line runs under `/bin/sh`, as
/// `execvp` runs it.
pub(crate) fn spawn(launch: &Launch) -> std::io::Result<(Agent, Pipes)> {
    let (program, args) =
        launch.argv.split_first().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"))?;
    // Resolve the program once here: left to exec, every PATH entry before the right
    // one costs a failed execve in the child (measured: ~0.4 ms per launch).
    let path_var = launch.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str());
    let path = if program.contains('/') {
        PathBuf::from(program)
    } else {
        which::which_in(program, path_var, &launch.cwd).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("{program} was not found on PATH"))
        })?
    };
    let mut command = Command::new(path);
    command
        .args(args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(if launch.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    crate::os::die_with_parent(&mut command);
    let mut child = command.spawn()?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (Some(stdout), Some(stderr), Some(pid)) = (stdout, stderr, child.id()) else {
        return Err(std::io::Error::other("the agent started without its output pipes"));
    };
    let pipes = Pipes { stdin: child.stdin.take(), stdout, stderr };
    Ok((Agent { child, pid }, pipes))
}

impl Agent {
    /// Its pid, which is also its process group's id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the agent to exit and reaps it. Cancel-safe, and cheap to call on
    /// every turn of the attempt's loop (the runtime is told of the exit).
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
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

    use std::os::unix::process::ExitStatusExt;

    use tokio::io::{AsyncRead, AsyncReadExt};

    use super::*;
    use crate::os;

    /// Bounds a hang only: a loaded machine is slow to start and end a process.
    const LIMIT: Duration = Duration::from_secs(60);

    fn launch(argv: &[&str], cwd: &std::path::Path) -> Launch {
        Launch {
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            cwd: cwd.to_path_buf(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into()), ("RALPH_TEST_MARK".into(), "m=1".into())],
            stdin: None,
        }
    }

    async fn read_all(mut from: impl AsyncRead + Unpin) -> String {
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

    /// The open descriptors of process `pid` (`self` for this one) and what each
    /// points to (`pipe:[…]`, a path, `anon_inode:[eventpoll]`).
    fn fd_targets(pid: &str) -> Vec<(std::ffi::OsString, PathBuf)> {
        let fds = std::fs::read_dir(os::proc_root().join(pid).join("fd")).expect("fds").flatten();
        fds.filter_map(|e| Some((e.file_name(), std::fs::read_link(e.path()).ok()?))).collect()
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
        // The spawn returns once the exec has replaced the child's memory; the kernel
        // closes the close-on-exec descriptors a moment later, then names the process
        // after its program, then lays out its arguments and environment.
        let deadline = std::time::Instant::now() + LIMIT;
        while !(std::fs::read_to_string(proc.join("comm")).is_ok_and(|c| c.trim() == "sleep")
            && std::fs::read(proc.join("environ")).is_ok_and(|e| !e.is_empty()))
        {
            assert!(std::time::Instant::now() < deadline, "the agent's exec did not complete");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let stat = std::fs::read_to_string(proc.join("stat")).expect("stat");
        let pgid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(2)).expect("the pgid");
        assert_eq!(pgid, pid.to_string(), "its own process group");
        // Only stdin, stdout and stderr, and what ralph inherited without
        // close-on-exec (a job server's pipe, say), as with any program. What the
        // agent opens itself is its own: `sleep`'s loader holds libc open as fd 3 for
        // a moment after the exec (seen on a loaded machine), so a leak is a
        // descriptor that points where one of ralph's does.
        let ralphs = fd_targets("self");
        for (fd, target) in fd_targets(&pid.to_string()) {
            let passed_on = ["0", "1", "2"].iter().any(|s| fd == *s) || inherited.contains(&fd);
            let leaked = !passed_on && ralphs.iter().any(|(_, t)| *t == target);
            assert!(!leaked, "fd {fd:?} of ralph's ({}) leaked to the agent", target.display());
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

    /// The parent-death signal comes when the *thread* that started the agent ends:
    /// started from tokio's blocking pool, whose idle threads end after a keep-alive,
    /// an agent would be killed in the middle of its work. Started the way ralph
    /// starts it, from the runtime's own thread, it runs on past that.
    #[test]
    fn an_agent_outlives_the_blocking_pools_idle_threads() {
        let keep_alive = Duration::from_millis(100);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_keep_alive(keep_alive)
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let dir = tempfile::tempdir().expect("tempdir");
            let sleeper = launch(&["sleep", "30"], dir.path());
            let (mut ours, _pipes) = spawn(&sleeper).expect("spawn");
            let pooled = tokio::task::spawn_blocking(move || spawn(&sleeper)).await.expect("the pool ran it");
            let (mut pooled, _pooled_pipes) = pooled.expect("spawn");
            let status = wait(&mut pooled).await;
            assert_eq!(status.signal(), Some(Signal::SIGKILL as i32), "killed when its idle thread ended");
            tokio::time::sleep(keep_alive * 3).await;
            assert!(ours.child.try_wait().expect("try_wait").is_none(), "the agent ralph started still runs");
        });
    }
}

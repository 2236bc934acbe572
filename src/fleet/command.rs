//! A command of the merge queue (`[fleet] check`, a `regenerate` command): an argv,
//! never a shell string, run in its own process group with the supervisor's
//! environment, killed with its group at its timeout and when the supervisor dies
//! (its parent-death signal), its output appended to a log file.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::process::group::{self, Launch};

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    Code(i32),
    Signal(i32),
    TimedOut,
}

impl Ended {
    pub(crate) fn passed(self) -> bool {
        self == Ended::Code(0)
    }

    pub(crate) fn describe(self, timeout: Duration) -> String {
        match self {
            Ended::Code(code) => format!("exit status {code}"),
            Ended::Signal(signal) => format!("killed by signal {signal}"),
            Ended::TimedOut => {
                format!("timed out after {} ([fleet] check_timeout)", humantime::format_duration(timeout))
            }
        }
    }
}

/// How long a command gets between SIGTERM and SIGKILL at its timeout.
const GRACE: Duration = Duration::from_secs(5);

/// Runs `argv` in `cwd`, its stdout and stderr appended to `log`.
pub(crate) async fn run(argv: &[String], cwd: &Path, timeout: Duration, log: &Path) -> std::io::Result<Ended> {
    use std::os::unix::process::ExitStatusExt;
    let file = crate::state::private::append_file(log)?;
    let launch = Launch { argv: argv.to_vec(), cwd: cwd.to_path_buf(), env: std::env::vars().collect(), stdin: None };
    let (mut child, pipes) = group::spawn(&launch)?;
    let copies = tokio::spawn(async move {
        let err = file.try_clone();
        tokio::join!(drain(pipes.stdout, Ok(file)), drain(pipes.stderr, err));
    });
    let ended = tokio::select! {
        status = child.wait() => {
            let status = status?;
            status.code().map_or_else(|| Ended::Signal(status.signal().unwrap_or(0)), Ended::Code)
        }
        () = tokio::time::sleep(timeout) => {
            let pgid = child.pid();
            let _ = group::signal_group(pgid, Signal::SIGTERM);
            if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                let _ = group::signal_group(pgid, Signal::SIGKILL);
                let _ = child.wait().await;
            }
            Ended::TimedOut
        }
    };
    // What is still running of its group goes with it.
    let _ = group::signal_group(child.pid(), Signal::SIGKILL);
    let _ = tokio::time::timeout(Duration::from_secs(5), copies).await;
    Ok(ended)
}

/// Appends what comes out of `pipe` to `file` until the pipe closes.
async fn drain(mut pipe: impl tokio::io::AsyncRead + Unpin, file: std::io::Result<std::fs::File>) {
    use std::io::Write;
    use tokio::io::AsyncReadExt;
    let Ok(mut file) = file else { return };
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 || file.write_all(&buf[..n]).is_err() {
            break;
        }
    }
}

/// The last `lines` lines of a log (redacted, as everything ralph shows).
pub(crate) fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read(log).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let tail = all[all.len().saturating_sub(lines)..].join("\n");
    crate::secrets::redact(&crate::step::record::tail_chars(&tail, 4000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_is_timed_out_with_its_group_and_its_output_kept() {
        let (dir, log) = crate::testkit::temp_file("check.log");
        let argv = ["sh", "-c", "echo one; echo two >&2; exit 3"].map(String::from);
        let ended = run(&argv, dir.path(), Duration::from_secs(30), &log).await.unwrap();
        assert_eq!(ended, Ended::Code(3));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("one") && text.contains("two"), "{text}");
        let hang = ["sh", "-c", "sleep 30 & echo started; wait"].map(String::from);
        let started = std::time::Instant::now();
        let ended = run(&hang, dir.path(), Duration::from_millis(300), &log).await.unwrap();
        assert_eq!(ended, Ended::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(ended.describe(Duration::from_secs(1800)).contains("timed out after 30m"));
        assert_eq!(tail(&log, 1), "started");
    }
}

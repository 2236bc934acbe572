//! The tasks' ralph processes: started by the supervisor (its children), or adopted
//! from a supervisor that died (found by the flock on the task's `ralph.lock`, waited
//! for through a pidfd). Their ends are one future the supervisor's loop selects on
//! ([`Procs::next`]), polled by the loop itself rather than by a task of each one's
//! that reports on a channel: such a task runs only once the loop yields, so an end
//! was heard only after whatever else the loop found to do (a landing's git, other
//! tasks' starts), hundreds of milliseconds on a loaded machine. Nothing is polled
//! on a timer: the kernel's pidfd readiness wakes the loop.

use std::collections::BTreeMap;
use std::future::Future;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::task::Poll;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::core::Exit;
use super::task::{ENV_SUPERVISOR, ENV_TASK};

/// A task's ralph that ended.
#[derive(Debug)]
pub(super) struct Ended {
    pub task: String,
    pub pid: u32,
    pub exit: Exit,
}

/// A live task's ralph: its pid, and its end to wait for.
struct Live {
    pid: u32,
    end: Pin<Box<dyn Future<Output = Exit>>>,
}

/// The live task processes, by task.
#[derive(Default)]
pub(super) struct Procs {
    live: BTreeMap<String, Live>,
}

/// What starting a task's ralph needs.
pub(super) struct Start<'a> {
    pub task: &'a str,
    pub worktree: &'a Path,
    pub config: &'a Path,
    /// `--resume` or `--resume-or-start`.
    pub flag: &'a str,
    /// Its output, appended.
    pub log: &'a Path,
}

impl Procs {
    pub(super) fn count(&self) -> usize {
        self.live.len()
    }

    /// The next task's ralph that ends (it is forgotten: no longer signalled);
    /// pending while none runs.
    pub(super) async fn next(&mut self) -> Ended {
        std::future::poll_fn(|cx| {
            let ended = self.live.iter_mut().find_map(|(task, live)| match live.end.as_mut().poll(cx) {
                Poll::Ready(exit) => Some((task.clone(), live.pid, exit)),
                Poll::Pending => None,
            });
            match ended {
                Some((task, pid, exit)) => {
                    self.live.remove(&task);
                    Poll::Ready(Ended { task, pid, exit })
                }
                None => Poll::Pending,
            }
        })
        .await
    }

    /// Starts a task's ralph: an ordinary run in the task's worktree, in its own
    /// process group (a Ctrl+C at the terminal reaches the supervisor only, which
    /// passes it on in order), its output appended to the task's log.
    pub(super) fn start(&mut self, s: &Start<'_>) -> std::io::Result<u32> {
        let log = crate::state::private::append_file(s.log)?;
        let exe = crate::os::self_exe()?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg(s.flag)
            .arg("-C")
            .arg(s.worktree)
            .arg("-c")
            .arg(s.config)
            .env(ENV_TASK, s.task)
            .env(ENV_SUPERVISOR, std::process::id().to_string())
            .env_remove(crate::notify::RESUMED_BY)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .kill_on_drop(false);
        let mut child = cmd.spawn()?;
        let pid = child.id().ok_or_else(|| std::io::Error::other("the task's ralph has no pid"))?;
        let end = Box::pin(async move {
            match child.wait().await {
                Ok(status) => match (status.code(), status.signal()) {
                    (Some(code), _) => Exit::Code(code),
                    (None, Some(signal)) => Exit::Signal(signal),
                    (None, None) => Exit::Unknown,
                },
                Err(_) => Exit::Unknown,
            }
        });
        self.live.insert(s.task.to_string(), Live { pid, end });
        Ok(pid)
    }

    /// Adopts the ralph running in `worktree`, when there is one: its lock is held.
    /// Returns its pid.
    pub(super) fn adopt(&mut self, task: &str, worktree: &Path) -> Option<u32> {
        let lock = worktree.join(".agent").join("ralph.lock");
        if !crate::state::lock::is_held(&lock) {
            return None;
        }
        let pid = crate::state::lock::read_info(&lock)?.pid;
        let fd: OwnedFd = crate::os::process_fd(i32::try_from(pid).ok()?).ok()?;
        // The pidfd is that process's for good: if the lock is still held now, the
        // holder is the process it names (no other ralph starts a task's run).
        if !crate::state::lock::is_held(&lock) {
            return None;
        }
        let exited = crate::os::exited(fd).ok()?;
        let end = Box::pin(async move {
            exited.await;
            Exit::Unknown
        });
        self.live.insert(task.to_string(), Live { pid, end });
        Some(pid)
    }

    /// Sends `signal` to a task's ralph (not its group: the ralph ends its agent in
    /// order).
    pub(super) fn signal(&self, task: &str, signal: Signal) {
        if let Some(pid) = self.live.get(task).and_then(|l| i32::try_from(l.pid).ok()) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
        }
    }

    /// Sends `signal` to every live task's ralph.
    pub(super) fn signal_all(&self, signal: Signal) {
        for task in self.live.keys() {
            self.signal(task, signal);
        }
    }

    /// Every live task.
    pub(super) fn tasks(&self) -> Vec<String> {
        self.live.keys().cloned().collect()
    }
}

//! The tasks' ralph processes: started by the supervisor (its children), or adopted
//! from a supervisor that died (found by the flock on the task's `ralph.lock`, waited
//! for through a pidfd). Each is waited for by a task of its own that reports the end
//! on one channel, which the supervisor's loop selects on: nothing is polled.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::sync::mpsc;

use super::core::Exit;
use super::task::{ENV_SUPERVISOR, ENV_TASK};

/// A task's ralph that ended.
#[derive(Debug)]
pub(super) struct Ended {
    pub task: String,
    pub pid: u32,
    pub exit: Exit,
}

/// The live task processes, by task.
pub(super) struct Procs {
    live: BTreeMap<String, u32>,
    tx: mpsc::UnboundedSender<Ended>,
    pub rx: mpsc::UnboundedReceiver<Ended>,
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
    pub(super) fn new() -> Procs {
        let (tx, rx) = mpsc::unbounded_channel();
        Procs { live: BTreeMap::new(), tx, rx }
    }

    pub(super) fn count(&self) -> usize {
        self.live.len()
    }

    /// A task's ralph has ended: it is no longer signalled.
    pub(super) fn forget(&mut self, ended: &Ended) {
        if self.live.get(&ended.task) == Some(&ended.pid) {
            self.live.remove(&ended.task);
        }
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
        self.live.insert(s.task.to_string(), pid);
        let (tx, task) = (self.tx.clone(), s.task.to_string());
        tokio::spawn(async move {
            let exit = match child.wait().await {
                Ok(status) => match (status.code(), status.signal()) {
                    (Some(code), _) => Exit::Code(code),
                    (None, Some(signal)) => Exit::Signal(signal),
                    (None, None) => Exit::Unknown,
                },
                Err(_) => Exit::Unknown,
            };
            let _ = tx.send(Ended { task, pid, exit });
        });
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
        self.live.insert(task.to_string(), pid);
        let (tx, task) = (self.tx.clone(), task.to_string());
        tokio::spawn(async move {
            exited.await;
            let _ = tx.send(Ended { task, pid, exit: Exit::Unknown });
        });
        Some(pid)
    }

    /// Sends `signal` to a task's ralph (not its group: the ralph ends its agent in
    /// order).
    pub(super) fn signal(&self, task: &str, signal: Signal) {
        if let Some(pid) = self.live.get(task).and_then(|p| i32::try_from(*p).ok()) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
        }
    }

    /// Every live task.
    pub(super) fn tasks(&self) -> Vec<String> {
        self.live.keys().cloned().collect()
    }
}

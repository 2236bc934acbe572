//! Where a fleet keeps things. In the main checkout, under `.agent/fleet/` (ignored
//! by git with the rest of `.agent/`): the state, the lock, each task's output, the
//! isolation windows, the shared rate-limit resets, the ledger of ralph's own ref
//! updates, the archive of finished fleets. Outside it: the worktrees, a sibling
//! folder of the repository by default, so no tool that walks up the tree from a
//! task's worktree (a cargo workspace, node's module lookup, direnv) finds the main
//! checkout.

use std::path::{Path, PathBuf};

use crate::git::attribution::normalize;

/// The task's descriptor in its worktree's `.agent/` (see `task`).
pub(crate) const DESCRIPTOR: &str = "fleet-task.json";

/// The places of one fleet in its main checkout (where its worktrees go is the
/// fleet state's `worktrees`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Paths {
    /// The main checkout's top.
    pub repo: PathBuf,
    /// `.agent/fleet` in it, and its files and folders.
    pub dir: PathBuf,
    pub state: PathBuf,
    pub lock: PathBuf,
    pub logs: PathBuf,
    pub windows: PathBuf,
    pub limits: PathBuf,
    pub ledger: PathBuf,
    pub archive: PathBuf,
    /// The file recording the supervisor's control socket.
    pub socket_record: PathBuf,
}

impl Paths {
    pub(crate) fn new(repo: &Path) -> Paths {
        let dir = fleet_dir(repo);
        let at = |name: &str| dir.join(name);
        Paths {
            repo: repo.to_path_buf(),
            state: at("fleet.json"),
            lock: at("fleet.lock"),
            logs: at("logs"),
            windows: at("windows"),
            limits: at("limits"),
            ledger: at("ledger.jsonl"),
            archive: at("archive"),
            socket_record: at("control.sock.path"),
            dir,
        }
    }

    /// The output of task `name`'s ralph (every start appends).
    pub(crate) fn task_log(&self, name: &str) -> PathBuf {
        self.logs.join(format!("{name}.log"))
    }
}

/// `.agent/fleet` of a main checkout.
pub(crate) fn fleet_dir(repo: &Path) -> PathBuf {
    repo.join(".agent").join("fleet")
}

/// A task's descriptor, in its worktree.
pub(crate) fn descriptor(worktree: &Path) -> PathBuf {
    worktree.join(".agent").join(DESCRIPTOR)
}

/// Where the worktrees go: `[fleet] worktrees` relative to the top, or the sibling
/// `<repository>-fleet`. An error when that is inside the main checkout.
pub(crate) fn worktrees(repo: &Path, configured: Option<&Path>) -> Result<PathBuf, String> {
    let chosen = match configured {
        Some(dir) => normalize(&repo.join(dir)),
        None => {
            let name = repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "repo".into());
            repo.parent().unwrap_or(Path::new("/")).join(format!("{name}-fleet"))
        }
    };
    if chosen.starts_with(repo) {
        return Err(format!(
            "[fleet] worktrees {} is inside the main checkout {}: tools that walk up the tree would mix a task with \
             it; choose a folder outside it, like \"../{}-fleet\"",
            chosen.display(),
            repo.display(),
            repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktrees_go_beside_the_repository_and_never_inside_it() {
        let repo = Path::new("/home/me/proj");
        assert_eq!(worktrees(repo, None).unwrap(), Path::new("/home/me/proj-fleet"));
        assert_eq!(worktrees(repo, Some(Path::new("../wt"))).unwrap(), Path::new("/home/me/wt"));
        assert_eq!(worktrees(repo, Some(Path::new("/srv/wt"))).unwrap(), Path::new("/srv/wt"));
        let err = worktrees(repo, Some(Path::new(".worktrees"))).unwrap_err();
        assert!(err.contains("inside the main checkout"), "{err}");
        assert!(worktrees(repo, Some(Path::new("sub/.."))).is_err());
    }
}

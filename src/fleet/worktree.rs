//! A task's worktree made, away from the supervisor's loop (a checkout of a large
//! tree takes seconds): what a crash left at its place cleared first, then `git
//! worktree add --lock` on its branch with the repository's own git (its hooks and
//! config apply). The place and the branch's start were saved before (`ops`), so a
//! kill at any moment leaves a worktree the next start recognises as half-made.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::git::repo::{GitError, Repo, half_made_worktree};

use super::git;

/// Why a worktree was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotMade {
    /// Not now (a ralph still runs there): the task waits and is looked at again.
    Later(String),
    /// Not without a person: the task is blocked with this.
    Block(String),
}

impl NotMade {
    /// A git failure: a worktree record git cannot read that the stale-lock rule
    /// kept (a git may still be writing it; doubt keeps) is a later look, which
    /// clears it once no git works in the repository; anything else needs a person.
    fn git(what: &str, e: GitError) -> Self {
        match &e {
            GitError::Failed { output, .. } if half_made_worktree(output.as_bytes()) => {
                Self::Later(format!("{what}: a worktree record is being written or was cut short: {e}"))
            }
            _ => Self::Block(format!("{what}: {e}")),
        }
    }
}

/// A worktree to make.
#[derive(Debug, Clone)]
pub(crate) struct Make {
    pub task: String,
    pub(super) repo: Repo,
    pub(super) path: PathBuf,
    pub(super) branch: String,
    /// The commit a new branch starts at.
    pub(super) from: String,
    /// The branch is not there yet (as git said when the start was planned).
    pub(super) new_branch: bool,
    /// The worktree's lock reason.
    pub(super) reason: String,
}

impl Make {
    /// Makes it; how long `git worktree add` took (git's own creation, the
    /// benchmark's measure), or why not.
    pub(crate) fn run(&self) -> Result<Duration, NotMade> {
        if self.path.exists() {
            self.clear_half_made()?;
        }
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| NotMade::Block(format!("cannot create {}: {e}", parent.display())))?;
        }
        // The branch is made here unless a worktree a kill cut short made it already
        // (this fleet's: its start was recorded before); the plan looked.
        let mut took = Duration::ZERO;
        let mut add = |new_branch: bool| {
            let started = Instant::now();
            let added = git::add_worktree(&self.repo, &self.path, &self.branch, &self.from, &self.reason, new_branch);
            took += started.elapsed();
            added
        };
        // A folder removed by hand leaves git's (locked) record of it, and an add a kill cut
        // short leaves a record git cannot read: cleared and pruned, then again (a
        // failed add may have made the branch: git is asked again).
        let tidy =
            || git::clear_half_made_records(&self.repo).and_then(|_| git::forget_missing(&self.repo, &self.path));
        if add(self.new_branch).is_err()
            && let Err(e) = tidy().and_then(|_| git::tip(&self.repo, &self.branch)).and_then(|tip| add(tip.is_none()))
        {
            return Err(NotMade::git("git cannot create its worktree", e));
        }
        Ok(took)
    }

    /// Removes what a crash left at the place before the task ran there (a
    /// half-made worktree, an empty folder).
    fn clear_half_made(&self) -> Result<(), NotMade> {
        let (path, name) = (&self.path, &self.task);
        if crate::state::lock::is_held(&path.join(".agent").join("ralph.lock")) {
            return Err(NotMade::Later(format!("a ralph still runs in {}", path.display())));
        }
        let git_failed = |e| NotMade::git("git", e);
        let listed = git::worktrees(&self.repo).map_err(git_failed)?;
        if !listed.iter().any(|w| w.path == *path) {
            return std::fs::remove_dir(path).map_err(|_| {
                NotMade::Block(format!(
                    "{} exists and is not this task's worktree; move it away, then `ralph fleet retry {name}`",
                    path.display()
                ))
            });
        }
        let p = path.display().to_string();
        let _ = self.repo.git_output(&["worktree", "unlock", &p]);
        if self.repo.git(&["worktree", "remove", "--force", &p]).is_err() {
            // Killed before git wrote its `.git` file: git cannot remove what it
            // cannot validate. Nothing but git's checkout is in it (its task never
            // ran: a ralph there holds its lock).
            std::fs::remove_dir_all(path)
                .map_err(|e| NotMade::Block(format!("cannot remove the half-made worktree {}: {e}", path.display())))?;
            self.repo.git(&["worktree", "prune"]).map_err(git_failed)?;
        }
        Ok(())
    }
}

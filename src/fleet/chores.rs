//! The supervisor's slow work, on the runtime's blocking threads so that its loop
//! never waits for it: a task's ralph that ends, a signal, a request are heard at
//! once while git makes a task's worktree (`worktree`), the merge queue rebases a
//! task (`rebase`), a merged task's worktree is deleted (`tidy`), or a worktree's
//! disk use is walked. Each chore only reads and
//! writes git and files; what it found comes back as a [`Chore`] and the loop
//! writes it into the fleet's state (the one writer). A chore a crash cuts short is
//! done again at the next start (a landing starts again, a cleanup is finished by
//! `tidy::tidy`).

use tokio::task::JoinSet;

use crate::git::repo::GitError;

use super::rebase::{self, Prep, Rebased};
use super::tidy::{Tidied, Tidy};
use super::worktree::{Make, NotMade};

/// What a chore came to.
#[derive(Debug)]
pub(super) enum Chore {
    /// A landing's rebase in new objects.
    Rebased(Prep, Result<Rebased, GitError>),
    /// A merged task's worktree and branch removed (or kept, and why).
    Tidied(Tidied),
    /// A task's worktree made: how long git took, or why not.
    Made(String, Result<std::time::Duration, NotMade>),
    /// The bytes a task's worktree takes.
    Measured(String, u64),
    /// A cleanup or a walk that panicked (a bug): said; a cleanup is done again at
    /// the next start.
    Lost(String),
}

/// The chores under way: the worktrees being made apart, heard first (a task
/// waits on each to start).
#[derive(Default)]
pub(super) struct Chores {
    makes: JoinSet<Chore>,
    set: JoinSet<Chore>,
}

impl Chores {
    pub(super) fn is_empty(&self) -> bool {
        self.makes.is_empty() && self.set.is_empty()
    }

    pub(super) fn rebase(&mut self, prep: Prep) {
        self.set.spawn_blocking(move || {
            // Its end always comes back: the queue waits for it.
            let rebased = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rebase::rebase(&prep)))
                .unwrap_or_else(|_| {
                    Err(GitError::Failed { args: "rebase".into(), output: "ralph's rebase failed (a bug)".into() })
                });
            Chore::Rebased(prep, rebased)
        });
    }

    pub(super) fn make(&mut self, make: Make) {
        self.makes.spawn_blocking(move || {
            // Its end always comes back: the task holds a slot until it does.
            let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make.run()))
                .unwrap_or_else(|_| Err(NotMade::Block("ralph failed making its worktree (a bug)".into())));
            Chore::Made(make.task, made)
        });
    }

    pub(super) fn tidy(&mut self, tidy: Tidy) {
        self.set.spawn_blocking(move || Chore::Tidied(tidy.run()));
    }

    pub(super) fn measure(&mut self, task: String, worktree: std::path::PathBuf) {
        self.set.spawn_blocking(move || {
            let bytes = super::git::disk_use(&worktree);
            Chore::Measured(task, bytes)
        });
    }

    /// The next chore that ended, a worktree made first; pending while there is
    /// none.
    pub(super) async fn next(&mut self) -> Chore {
        let joined = tokio::select! {
            biased;
            Some(joined) = self.makes.join_next() => joined,
            Some(joined) = self.set.join_next() => joined,
            else => return std::future::pending().await,
        };
        joined.unwrap_or_else(|e| Chore::Lost(e.to_string()))
    }
}

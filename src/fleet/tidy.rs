//! What a merged task no longer needs, removed: its worktree (never one that holds
//! changes in no commit; its `.agent/` kept in the fleet's logs) and its branch
//! (moved to the landed commits first, so `into` contains it when it goes). The
//! removal needs no fleet state: [`Tidy`] is taken from the book, [`Tidy::run`]
//! runs anywhere (the supervisor runs it on a blocking thread: a worktree's files
//! take a while to delete), [`Tidied::apply`] writes what came of it. At a start,
//! [`tidy`] finishes cleanups a kill cut short.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::RalphError;
use crate::git::repo::{GitError, Repo};

use super::git::{self, Swap};
use super::ops::{self, Book};
use super::state::{Task, TaskState};

/// A merged task's cleanup, ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Tidy {
    pub task: String,
    repo: Repo,
    worktree: Option<PathBuf>,
    /// Where the worktree's `.agent/` goes.
    keep_agent: PathBuf,
    branch: String,
    /// The commit the task landed as.
    landed: Option<String>,
    into: String,
    ledger: PathBuf,
}

/// What a cleanup did.
#[derive(Debug)]
pub(crate) struct Tidied {
    pub task: String,
    /// What to tell.
    pub lines: Vec<String>,
    /// The worktree is gone (or there was none).
    pub worktree_gone: bool,
    pub took: Duration,
}

impl Tidy {
    pub(crate) fn of(book: &Book, name: &str) -> Option<Tidy> {
        let t = book.fleet.tasks.get(name)?;
        Some(Tidy {
            task: name.to_string(),
            repo: book.repo.clone(),
            worktree: t.worktree.clone(),
            keep_agent: book.paths.logs.join(format!("{name}.agent")),
            branch: t.branch.clone(),
            landed: t.landed.clone(),
            into: book.fleet.into.clone(),
            ledger: book.paths.ledger.clone(),
        })
    }

    /// Removes the worktree, then the branch once `into` contains it.
    pub(crate) fn run(self) -> Tidied {
        let started = Instant::now();
        let name = self.task.as_str();
        let removed = match &self.worktree {
            None => Ok(None),
            Some(w) => ops::remove_worktree_at(&self.repo, name, w, &self.keep_agent).map(Some),
        };
        let mut lines = Vec::new();
        let worktree_gone = match removed {
            Ok(line) => {
                lines.extend(line);
                match self.delete_branch() {
                    Ok(Some(line)) => lines.push(line),
                    Ok(None) => {}
                    Err(e) => lines.push(format!("task {name}: git cannot remove its branch {}: {e}", self.branch)),
                }
                true
            }
            Err(why) => {
                lines.push(why);
                false
            }
        };
        Tidied { task: self.task.clone(), lines, worktree_gone, took: started.elapsed() }
    }

    fn delete_branch(&self) -> Result<Option<String>, GitError> {
        let (repo, name, branch) = (&self.repo, &self.task, &self.branch);
        let Some(mut tip) = git::tip(repo, branch)? else { return Ok(None) };
        let name_ref = format!("refs/heads/{branch}");
        let into = git::tip(repo, &self.into)?.unwrap_or_default();
        let moved = || format!("task {name}: its branch {branch} moved meanwhile; it is kept");
        if !git::is_ancestor(repo, &tip, &into)?
            && let Some(landed) = self.landed.as_deref().filter(|l| git::is_ancestor(repo, l, &into).unwrap_or(false))
        {
            // Its rebased commits are what landed: the branch names them first.
            if git::swap(repo, &self.ledger, &name_ref, Some(landed), Some(&tip), "ralph fleet: landed as")?
                != Swap::Done
            {
                return Ok(Some(moved()));
            }
            tip = landed.to_string();
        }
        if !git::is_ancestor(repo, &tip, &into)? {
            return Ok(Some(format!(
                "task {name}: its branch {branch} holds commits that {} does not; kept",
                self.into
            )));
        }
        Ok(Some(match git::swap(repo, &self.ledger, &name_ref, None, Some(&tip), "ralph fleet: merged")? {
            Swap::Done => format!("task {name}: deleted its branch {branch} ({} contains it)", self.into),
            Swap::Moved => moved(),
        }))
    }
}

impl Tidied {
    /// Writes what the cleanup came to: a worktree that is gone is forgotten.
    pub(crate) fn apply(&self, book: &mut Book) -> Result<(), RalphError> {
        match book.fleet.tasks.get_mut(&self.task) {
            Some(t) if self.worktree_gone && t.worktree.is_some() => {
                t.worktree = None;
                book.save()
            }
            _ => Ok(()),
        }
    }
}

/// A merged task's cleanup, here and now. Says what it did.
pub(crate) fn cleanup(book: &mut Book, name: &str) -> Result<Vec<String>, RalphError> {
    let Some(tidy) = Tidy::of(book, name) else { return Ok(Vec::new()) };
    let done = tidy.run();
    done.apply(book)?;
    Ok(done.lines)
}

/// Cleans up after merged tasks whose worktree or branch is still there (a cleanup
/// a kill cut short, or a git that refused then).
pub(crate) fn tidy(book: &mut Book) -> Result<Vec<String>, RalphError> {
    let branches =
        book.repo.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads/ralph/"]).map_err(RalphError::git)?;
    let branches: Vec<&str> = branches.lines().collect();
    let untidy =
        |t: &Task| t.state == TaskState::Merged && (t.worktree.is_some() || branches.contains(&t.branch.as_str()));
    let mut said = Vec::new();
    for name in book.fleet.names(untidy) {
        said.extend(cleanup(book, &name)?);
    }
    Ok(said)
}

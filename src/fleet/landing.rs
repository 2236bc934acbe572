//! The merge queue, the shell: one landing carried out with git, as `queue` decides
//! it (the steps and why they are exactly once are there). [`begin`] finds the
//! conflicts and rebases without touching a worktree and saves the landing; [`job`]
//! (async, the one slow part) makes generated files again and runs `[fleet] check`
//! in the landing worktree; [`finish`] moves `into` with a compare-and-swap and asks
//! git whether it contains the head; [`cleanup`] removes what a merged task no
//! longer needs; [`recover`] settles a landing a crash interrupted.
//!
//! Every git failure that is not a conflict stops the landing with git's own words
//! and blocks the task; nothing is counted as merged that git does not confirm.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::RalphError;
use crate::git::message::{TASK_TRAILER, with_trailer};
use crate::git::repo::{GitError, Repo};

use super::git::{self, Swap};
use super::ops::{Book, git_error};
use super::queue::{self, Merge, Plan, Trouble};
use super::state::{Landing, LandingStep, TaskState};

/// What starting a landing came to.
#[derive(Debug)]
pub(crate) enum Begun {
    /// `into` is checked out somewhere: the queue waits (the text says where).
    Paused(String),
    /// `into` contains the task's work already: it is merged.
    Landed(String),
    /// Its agent must fix something.
    Trouble(Trouble),
    /// git failed: the task is blocked with this.
    Failed(String),
    /// Saved; the job runs next.
    Ready(Job),
}

/// The slow part of a landing: generated files made again, then the check.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub task: String,
    pub head: String,
    repo: Repo,
    land: PathBuf,
    regenerate: Vec<(String, Vec<String>)>,
    check: Option<Vec<String>>,
    timeout: Duration,
    log: PathBuf,
}

impl Job {
    /// Nothing to run: the landing goes on at once.
    pub(crate) fn is_empty(&self) -> bool {
        self.regenerate.is_empty() && self.check.is_none()
    }
}

/// What the job came to.
#[derive(Debug)]
pub(crate) enum Done {
    /// The head to land (a commit of regenerated files on top, when there was one).
    Passed(String),
    Trouble(Trouble),
    Failed(String),
}

/// The landing worktree: one for the fleet, so build caches stay warm.
pub(crate) fn land_dir(book: &Book) -> PathBuf {
    book.paths.worktrees.join(".land")
}

/// Starts landing `name`: compares its branch with `into`, rebases it in new objects
/// when needed, saves the landing and marks the task merging.
pub(crate) fn begin(book: &mut Book, name: &str) -> Result<Begun, RalphError> {
    let began = jiff::Timestamp::now();
    let into = book.fleet.into.clone();
    let list = git::worktrees(&book.repo).map_err(git_error)?;
    if let Some(at) = git::checked_out(&list, &into) {
        return Ok(Begun::Paused(format!(
            "the fleet's branch {into} is checked out in {}; ralph never moves a branch someone has checked out. \
             Switch that worktree to another branch (`git -C {} switch --detach`); the queue goes on by itself",
            at.display(),
            at.display()
        )));
    }
    let branch = book.task(name).map_err(RalphError::Internal)?.branch.clone();
    let found = (git::tip(&book.repo, &into), git::tip(&book.repo, &branch));
    let (onto, head) = match found {
        (Ok(Some(onto)), Ok(Some(head))) => (onto, head),
        (Ok(None), _) => return Ok(Begun::Failed(format!("the fleet's branch {into} is gone"))),
        (_, Ok(None)) => return Ok(Begun::Failed(format!("its branch {branch} is gone"))),
        (Err(e), _) | (_, Err(e)) => return Ok(Begun::Failed(e.to_string())),
    };
    match rebase(book, name, &onto, &head) {
        Ok(Rebased::Contained) => Ok(Begun::Landed(head)),
        Ok(Rebased::Trouble(t)) => Ok(Begun::Trouble(t)),
        Ok(Rebased::Made { head: landed, pairs, regenerate }) => {
            book.fleet.landing = Some(Landing {
                task: name.to_string(),
                step: LandingStep::Prepared,
                onto,
                head: landed.clone(),
                task_head: head,
                rebased: pairs,
                started_at: began,
            });
            book.set(name, TaskState::Merging, None)?;
            Ok(Begun::Ready(job(book, name, &landed, regenerate)))
        }
        Err(e) => Ok(Begun::Failed(e.to_string())),
    }
}

fn job(book: &Book, name: &str, head: &str, globs: Vec<String>) -> Job {
    let f = &book.loaded.config.fleet;
    let regenerate = globs.iter().filter_map(|g| f.regenerate.get(g).map(|argv| (g.clone(), argv.clone()))).collect();
    let n = book.fleet.landings + 1;
    Job {
        task: name.to_string(),
        head: head.to_string(),
        repo: book.repo.clone(),
        land: land_dir(book),
        regenerate,
        check: f.check.clone(),
        timeout: f.check_timeout,
        log: book.paths.logs().join(format!("check-{name}-{n}.log")),
    }
}

enum Rebased {
    /// The branch's head is in `into` already.
    Contained,
    Trouble(Trouble),
    /// The head to land, the commits it was made of `(task's, new)`, and the globs
    /// whose generated files must be made again.
    Made {
        head: String,
        pairs: Vec<(String, String)>,
        regenerate: Vec<String>,
    },
}

/// The task's commits on top of `onto`, made without a worktree (`merge-tree`,
/// `commit-tree`): as they are when the branch contains `onto`.
fn rebase(book: &Book, name: &str, onto: &str, head: &str) -> Result<Rebased, GitError> {
    let repo = &book.repo;
    if git::is_ancestor(repo, head, onto)? {
        return Ok(Rebased::Contained);
    }
    let base = repo.git(&["merge-base", onto, head])?.trim().to_string();
    let merge = match merge_tree(repo, &[onto, head])? {
        // The branch contains `into`: a task that merged or rebased it itself.
        _ if base == onto => Merge::Contains,
        (_, files) if files.is_empty() => Merge::Clean,
        (_, files) => Merge::Conflicts(files),
    };
    let range = format!("{base}..{head}");
    let merges = repo.git(&["rev-list", "--merges", "--count", &range])?.trim() != "0";
    let globs: Vec<String> = book.loaded.config.fleet.regenerate.keys().cloned().collect();
    let regenerate = match queue::plan(&merge, merges, &globs) {
        Plan::AsIs => return Ok(Rebased::Made { head: head.to_string(), pairs: Vec::new(), regenerate: Vec::new() }),
        Plan::Evict if merges => return Ok(Rebased::Trouble(Trouble::MergeCommits)),
        Plan::Evict => return conflict(book, onto, head, &base).map(Rebased::Trouble),
        Plan::Rebase => Vec::new(),
        Plan::Regenerate(globs) => globs,
    };
    let commits = repo.git(&["rev-list", "--reverse", "--topo-order", &range])?;
    let mut tip = onto.to_string();
    let mut pairs = Vec::new();
    for commit in commits.lines() {
        let parent = format!("{commit}^");
        let (tree, files) = merge_tree(repo, &[&format!("--merge-base={parent}"), &tip, commit])?;
        let tree = match files.as_slice() {
            [] => tree,
            _ if files.iter().all(|f| regenerate.iter().any(|g| queue::matches(g, f))) => {
                take_ours(repo, &tree, &tip, &files)?
            }
            // Clean as a whole, not commit by commit: its agent rebases it.
            _ => return conflict(book, onto, head, &base).map(Rebased::Trouble),
        };
        tip = commit_like(repo, &tree, &tip, commit, name)?;
        pairs.push((commit.to_string(), tip.clone()));
    }
    Ok(Rebased::Made { head: tip, pairs, regenerate })
}

/// The files that conflict when `a` and `b` merge (none: it merges cleanly).
pub(crate) fn conflicts_between(repo: &Repo, a: &str, b: &str) -> Result<Vec<String>, GitError> {
    merge_tree(repo, &[a, b]).map(|(_, files)| files)
}

/// `git merge-tree --write-tree` of `args`: the tree (with conflict markers where
/// there are conflicts) and the conflicting files.
fn merge_tree(repo: &Repo, args: &[&str]) -> Result<(String, Vec<String>), GitError> {
    let mut all = vec!["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages"];
    all.extend(args);
    let out = repo.git_output(&all)?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stdout));
        return Err(GitError::Failed { args: "merge-tree".into(), output: text.trim().to_string() });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split('\0').filter(|f| !f.is_empty());
    let tree = fields.next().unwrap_or_default().trim().to_string();
    let mut files: Vec<String> = fields.map(str::to_string).collect();
    files.dedup();
    Ok((tree, files))
}

/// `tree` with the landing side's (`ours`) version of `files`.
fn take_ours(repo: &Repo, tree: &str, ours: &str, files: &[String]) -> Result<String, GitError> {
    let index = tempfile::NamedTempFile::new().map_err(GitError::Spawn)?;
    let path = index.path().display().to_string();
    let env = [("GIT_INDEX_FILE", path.as_str())];
    repo.git_env(&["read-tree", tree], &env)?;
    for file in files {
        let entry = repo.git(&["ls-tree", ours, "--", file])?;
        match entry.split_once('\t').map(|(meta, _)| meta.split_whitespace().collect::<Vec<_>>()) {
            Some(meta) if meta.len() == 3 => {
                let info = format!("{},{},{file}", meta[0], meta[2]);
                repo.git_env(&["update-index", "--add", "--cacheinfo", &info], &env)?;
            }
            _ => drop(repo.git_env(&["update-index", "--force-remove", "--", file], &env)?),
        }
    }
    Ok(repo.git_env(&["write-tree"], &env)?.trim().to_string())
}

/// A commit of `tree` on `parent` with `like`'s author, date and message, and the
/// `Ralph-Task:` trailer (the agent's own commits lack it).
fn commit_like(repo: &Repo, tree: &str, parent: &str, like: &str, task: &str) -> Result<String, GitError> {
    let info = repo.git(&["log", "-1", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw", like])?;
    let mut parts = info.splitn(4, '\0');
    let (name, email, date, message) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let message = with_trailer(message.trim_end(), TASK_TRAILER, task);
    let env = [("GIT_AUTHOR_NAME", name), ("GIT_AUTHOR_EMAIL", email), ("GIT_AUTHOR_DATE", date)];
    Ok(repo.git_env(&["commit-tree", tree, "-p", parent, "-m", &message], &env)?.trim().to_string())
}

/// What the agent is told of a conflict: the files, the commits on `into` that
/// touched them, the conflicting hunks.
fn conflict(book: &Book, onto: &str, head: &str, base: &str) -> Result<Trouble, GitError> {
    let repo = &book.repo;
    let (tree, files) = merge_tree(repo, &[onto, head])?;
    let mut args = vec!["log".to_string(), "--format=  %h %s".into(), format!("{base}..{onto}"), "--".into()];
    args.extend(files.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let commits = repo.git(&args)?.lines().take(20).map(str::to_string).collect();
    let mut hunks = String::new();
    for file in files.iter().take(5) {
        let text = repo.git(&["show", &format!("{tree}:{file}")]).unwrap_or_default();
        hunks.push_str(&format!("--- {file}\n{}", conflict_hunks(&text)));
    }
    Ok(Trouble::Conflict { files, commits, hunks: super::command::chars_tail(&hunks, 6000) })
}

/// The conflict regions of a file with markers, with two lines around each.
pub(crate) fn conflict_hunks(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = vec![false; lines.len()];
    let mut inside = false;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("<<<<<<<") {
            inside = true;
        }
        if inside {
            (i.saturating_sub(2)..=(i + 2).min(lines.len().saturating_sub(1))).for_each(|j| keep[j] = true);
        }
        if line.starts_with(">>>>>>>") {
            inside = false;
        }
    }
    let mut out = String::new();
    let mut last = None;
    for (i, line) in lines.iter().enumerate().filter(|(i, _)| keep[*i]) {
        if last.is_some_and(|l: usize| i > l + 1) {
            out.push_str("...\n");
        }
        out.push_str(line);
        out.push('\n');
        last = Some(i);
    }
    out
}

/// Regenerates and checks the head in the landing worktree.
pub(crate) async fn run(job: Job) -> Done {
    if job.is_empty() {
        return Done::Passed(job.head.clone());
    }
    let prepared = {
        let job = job.clone();
        tokio::task::spawn_blocking(move || checkout(&job.repo, &job.land, &job.head)).await
    };
    if let Err(e) = prepared.unwrap_or_else(|e| Err(GitError::Spawn(std::io::Error::other(e)))) {
        return Done::Failed(format!("git cannot prepare the landing worktree: {e}"));
    }
    let mut head = job.head.clone();
    if !job.regenerate.is_empty() {
        match regenerate(&job).await {
            Ok(made) => head = made,
            Err(done) => return done,
        }
    }
    let Some(check) = &job.check else { return Done::Passed(head) };
    match super::command::run(check, &job.land, job.timeout, &job.log).await {
        Ok(ended) if ended.passed() => Done::Passed(head),
        Ok(ended) => Done::Trouble(Trouble::Check {
            command: check.join(" "),
            ended: ended.describe(job.timeout),
            tail: super::command::tail(&job.log, 40),
            log: job.log.display().to_string(),
        }),
        Err(e) => Done::Failed(format!("cannot run the check `{}`: {e}", check.join(" "))),
    }
}

/// The landing worktree at `head`, detached, without files of an earlier landing
/// (ignored files stay: they are the warm build caches).
fn checkout(repo: &Repo, land: &Path, head: &str) -> Result<(), GitError> {
    if !land.join(".git").exists() {
        let _ = repo.git_output(&["worktree", "prune"]);
        std::fs::create_dir_all(land.parent().unwrap_or(land)).map_err(GitError::Spawn)?;
        let path = land.display().to_string();
        repo.git(&[
            "worktree",
            "add",
            "--quiet",
            "--lock",
            "--reason",
            "ralph fleet: landings",
            "--detach",
            &path,
            head,
        ])?;
    }
    let wt = Repo::at(land);
    wt.git(&["checkout", "--quiet", "--detach", "--force", head])?;
    wt.git(&["clean", "-ffdq"]).map(drop)
}

/// Runs the `regenerate` commands and commits what they changed on top of the
/// head; returns the new head.
async fn regenerate(job: &Job) -> Result<String, Done> {
    for (glob, argv) in &job.regenerate {
        match super::command::run(argv, &job.land, job.timeout, &job.log).await {
            Ok(ended) if ended.passed() => {}
            Ok(ended) => {
                return Err(Done::Trouble(Trouble::Check {
                    command: argv.join(" "),
                    ended: format!("{} (making {glob} again)", ended.describe(job.timeout)),
                    tail: super::command::tail(&job.log, 40),
                    log: job.log.display().to_string(),
                }));
            }
            Err(e) => return Err(Done::Failed(format!("cannot run `{}`: {e}", argv.join(" ")))),
        }
    }
    let job = job.clone();
    let made = tokio::task::spawn_blocking(move || commit_regenerated(&job)).await;
    made.unwrap_or_else(|e| Err(GitError::Spawn(std::io::Error::other(e))))
        .map_err(|e| Done::Failed(format!("git cannot commit the regenerated files: {e}")))
}

fn commit_regenerated(job: &Job) -> Result<String, GitError> {
    let wt = Repo::at(&job.land);
    let changed = wt.status()?;
    let files: Vec<String> = changed
        .into_iter()
        .map(|c| c.path)
        .filter(|p| job.regenerate.iter().any(|(g, _)| queue::matches(g, p)))
        .collect();
    if files.is_empty() {
        return Ok(job.head.clone());
    }
    let mut add = vec!["add", "-A", "--"];
    add.extend(files.iter().map(String::as_str));
    wt.git(&add)?;
    let message =
        format!("ralph fleet: make {} again for task {}\n\n{TASK_TRAILER}: {}\n", files.join(", "), job.task, job.task);
    wt.git(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    Ok(wt.git(&["rev-parse", "HEAD"])?.trim().to_string())
}

/// How the compare-and-swap of `into` came out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Finished {
    /// `into` contains the head: the task is merged.
    Landed,
    /// `into` moved meanwhile: the task lands again, first, on the new tip.
    Moved,
    /// git refused (a hook, permissions, a lock that stayed): the task is blocked.
    Failed(String),
}

/// Moves `into` to the landing's head (`head`: the job's, when it made a commit on
/// top), only if it is still where the landing began.
pub(crate) fn finish(book: &mut Book, head: &str) -> Result<Finished, RalphError> {
    let Some(mut landing) = book.fleet.landing.clone() else { return Ok(Finished::Moved) };
    (landing.step, landing.head) = (LandingStep::Swapping, head.to_string());
    book.fleet.landing = Some(landing.clone());
    book.save()?;
    let into_ref = format!("refs/heads/{}", book.fleet.into);
    let count = landing.rebased.len().max(1);
    let reason = format!(
        "ralph fleet: land {} ({count} commit(s) of {})",
        landing.task,
        crate::report::lines::short(&landing.task_head)
    );
    let swapped = git::swap(&book.repo, &book.paths.ledger(), &into_ref, Some(head), Some(&landing.onto), &reason);
    let outcome = match swapped {
        Ok(Swap::Done) => match git::tip(&book.repo, &book.fleet.into).and_then(|tip| match tip {
            Some(tip) => git::is_ancestor(&book.repo, head, &tip),
            None => Ok(false),
        }) {
            Ok(true) => Finished::Landed,
            Ok(false) => Finished::Moved,
            Err(e) => {
                Finished::Failed(format!("git cannot tell whether {} contains the landing: {e}", book.fleet.into))
            }
        },
        Ok(Swap::Moved) => Finished::Moved,
        Err(e) => Finished::Failed(format!("git refused to move {}: {e}", book.fleet.into)),
    };
    match &outcome {
        Finished::Landed => merged(book, &landing.task, head, landing.started_at)?,
        Finished::Moved => again(book, &landing.task)?,
        Finished::Failed(why) => {
            book.fleet.landing = None;
            book.set(&landing.task, TaskState::Blocked, Some(why.clone()))?;
        }
    }
    Ok(outcome)
}

/// The task is merged: `into` contains `head`.
pub(crate) fn merged(book: &mut Book, name: &str, head: &str, since: jiff::Timestamp) -> Result<(), RalphError> {
    let secs = jiff::Timestamp::now().duration_since(since).as_secs_f64().max(0.0);
    book.fleet.landing = None;
    book.fleet.landings += 1;
    book.fleet.landing_secs += secs;
    if let Some(t) = book.fleet.tasks.get_mut(name) {
        (t.landed, t.eviction) = (Some(head.to_string()), None);
    }
    book.set(name, TaskState::Merged, None)
}

/// The landing is dropped; the task lands again (its `finished_seq` keeps it first).
pub(crate) fn again(book: &mut Book, name: &str) -> Result<(), RalphError> {
    book.fleet.landing = None;
    book.set(name, TaskState::Finished, None)
}

/// What a merged task no longer needs: its worktree (unless it holds changes in no
/// commit) and its branch (moved to the landed head first, so `into` contains it
/// when it is deleted). Says what it did.
pub(crate) fn cleanup(book: &mut Book, name: &str) -> Vec<String> {
    let mut said = Vec::new();
    let kept = match book.remove_worktree(name) {
        Ok(line) => {
            said.push(line);
            false
        }
        Err(why) => {
            said.push(why);
            true
        }
    };
    if kept {
        return said;
    }
    let (branch, landed) = match book.fleet.tasks.get(name) {
        Some(t) => (t.branch.clone(), t.landed.clone()),
        None => return said,
    };
    let name_ref = format!("refs/heads/{branch}");
    let ledger = book.paths.ledger();
    let repo = book.repo.clone();
    let step = || -> Result<Option<String>, GitError> {
        let Some(tip) = git::tip(&repo, &branch)? else { return Ok(None) };
        let into = git::tip(&repo, &book.fleet.into)?.unwrap_or_default();
        let mut tip = tip;
        if !git::is_ancestor(&repo, &tip, &into)?
            && let Some(landed) = landed.as_deref().filter(|l| git::is_ancestor(&repo, l, &into).unwrap_or(false))
        {
            // Its rebased commits are what landed: the branch names them first.
            if git::swap(&repo, &ledger, &name_ref, Some(landed), Some(&tip), "ralph fleet: landed as")? != Swap::Done {
                return Ok(Some(format!("task {name}: its branch {branch} moved meanwhile; it is kept")));
            }
            tip = landed.to_string();
        }
        if !git::is_ancestor(&repo, &tip, &into)? {
            return Ok(Some(format!(
                "task {name}: its branch {branch} holds commits that {} does not; kept",
                book.fleet.into
            )));
        }
        match git::swap(&repo, &ledger, &name_ref, None, Some(&tip), "ralph fleet: merged")? {
            Swap::Done => {
                Ok(Some(format!("task {name}: deleted its branch {branch} ({} contains it)", book.fleet.into)))
            }
            Swap::Moved => Ok(Some(format!("task {name}: its branch {branch} moved meanwhile; it is kept"))),
        }
    };
    match step() {
        Ok(Some(line)) => said.push(line),
        Ok(None) => {}
        Err(e) => said.push(format!("task {name}: git cannot remove its branch {branch}: {e}")),
    }
    said
}

/// At a start: a landing a crash interrupted is settled by asking git, merged tasks
/// are cleaned up, a task left merging lands again. Says what it did.
pub(crate) fn recover(book: &mut Book) -> Result<Vec<String>, RalphError> {
    let mut said = Vec::new();
    if let Some(l) = book.fleet.landing.clone() {
        let into = git::tip(&book.repo, &book.fleet.into).map_err(git_error)?;
        let contains = match into {
            Some(tip) => git::is_ancestor(&book.repo, &l.head, &tip).map_err(git_error)?,
            None => false,
        };
        match queue::recover(contains) {
            queue::Recovered::Landed => {
                said.push(format!("task {}: its landing was done when the supervisor stopped: merged", l.task));
                merged(book, &l.task, &l.head, l.started_at)?;
            }
            queue::Recovered::Again => {
                said.push(format!("task {}: its landing was cut short; it lands again", l.task));
                again(book, &l.task)?;
            }
        }
    }
    let stuck: Vec<String> =
        book.fleet.tasks.iter().filter(|(_, t)| t.state == TaskState::Merging).map(|(n, _)| n.clone()).collect();
    for name in stuck {
        again(book, &name)?;
    }
    remove_stale_locks(book, &mut said);
    said.extend(tidy(book)?);
    Ok(said)
}

/// Cleans up after merged tasks whose worktree or branch is still there (a cleanup
/// a kill cut short, or a git that refused then).
pub(crate) fn tidy(book: &mut Book) -> Result<Vec<String>, RalphError> {
    let branches =
        book.repo.git(&["for-each-ref", "--format=%(refname:short)", "refs/heads/ralph/"]).map_err(git_error)?;
    let branches: Vec<&str> = branches.lines().collect();
    let untidy: Vec<String> = book
        .fleet
        .tasks
        .iter()
        .filter(|(_, t)| {
            t.state == TaskState::Merged && (t.worktree.is_some() || branches.contains(&t.branch.as_str()))
        })
        .map(|(n, _)| n.clone())
        .collect();
    Ok(untidy.iter().flat_map(|name| cleanup(book, name)).collect())
}

/// Lock files a killed git left (a supervisor killed with its process group kills
/// the git it runs): the landing worktree's (only the supervisor uses it),
/// and the locks of `into`, of the branches of tasks whose ralph is not running,
/// and of `packed-refs`. git holds a lock for milliseconds; one that is still there,
/// unchanged, two seconds later has no owner any more.
fn remove_stale_locks(book: &Book, said: &mut Vec<String>) {
    let land = land_dir(book);
    let mut locks = Vec::new();
    // The landing worktree's own locks (its index, its HEAD, …).
    if land.join(".git").exists()
        && let Ok(admin) = Repo::at(&land).git(&["rev-parse", "--absolute-git-dir"])
        && let Ok(listing) = std::fs::read_dir(admin.trim())
    {
        locks.extend(listing.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "lock")));
    }
    if let Ok(common) = book.repo.git(&["rev-parse", "--git-common-dir"]) {
        let common = book.paths.repo.join(common.trim());
        locks.push(common.join("packed-refs.lock"));
        let idle = book.fleet.tasks.values().filter(|t| !t.state.active()).map(|t| t.branch.clone());
        for branch in std::iter::once(book.fleet.into.clone()).chain(idle) {
            locks.push(common.join("refs/heads").join(format!("{branch}.lock")));
        }
    }
    let stamp = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(p).ok().map(|m| (m.ino(), m.mtime(), m.mtime_nsec()))
    };
    let found: Vec<(PathBuf, (u64, i64, i64))> = locks.into_iter().filter_map(|p| stamp(&p).map(|s| (p, s))).collect();
    if found.is_empty() {
        return;
    }
    std::thread::sleep(Duration::from_secs(2));
    for (path, before) in found {
        if stamp(&path) == Some(before) && std::fs::remove_file(&path).is_ok() {
            said.push(format!("removed {}, left by a git that was killed", path.display()));
        }
    }
}

/// The task goes back to its agent with `trouble` (queued, its eviction pending), or
/// is blocked when its evictions are spent. Returns the line to tell and whether it
/// was sent back.
pub(crate) fn evict(book: &mut Book, name: &str, trouble: &Trouble) -> Result<(String, bool), RalphError> {
    book.fleet.landing = None;
    let task = book.task(name).map_err(RalphError::Internal)?.clone();
    let (into, max) = (book.fleet.into.clone(), book.loaded.config.fleet.max_evictions);
    let short = queue::short(trouble);
    match queue::evict(name, &task, &into, max, trouble) {
        queue::Evicted::Back(eviction) => {
            let number = eviction.number;
            if let Some(t) = book.fleet.tasks.get_mut(name) {
                (t.evictions, t.eviction) = (number, Some(eviction));
            }
            book.set(name, TaskState::Queued, Some(short.clone()))?;
            Ok((format!("task {name}: evicted ({number} of at most {max}): {short}; back to its agent"), true))
        }
        queue::Evicted::Blocked(why) => {
            book.set(name, TaskState::Blocked, Some(why.clone()))?;
            Ok((format!("task {name}: blocked: {why}"), false))
        }
    }
}

/// A landing git could not carry out: the task is blocked, never merged.
pub(crate) fn block(book: &mut Book, name: &str, why: &str) -> Result<String, RalphError> {
    book.fleet.landing = None;
    let why = format!("the merge queue cannot land it: {why}");
    book.set(name, TaskState::Blocked, Some(why.clone()))?;
    Ok(format!("task {name}: blocked: {why}"))
}

/// Whether a task may land now: finished, or blocked with its run complete (the
/// queue gave up on it and a person resolved it by hand). A blocked one is made
/// finished.
pub(crate) fn may_land(book: &mut Book, name: &str) -> Result<(), String> {
    let task = book.task(name)?.clone();
    let completed = book.run_view(name).is_some_and(|v| v.status == crate::state::checkpoint::Status::Completed);
    match task.state {
        TaskState::Finished => Ok(()),
        TaskState::Blocked if completed => book.set(name, TaskState::Finished, None).map_err(|e| e.to_string()),
        state => Err(format!("task {name} is {}; only a finished task lands", state.as_str())),
    }
}

/// `ralph fleet land TASK` with no supervisor running: the whole landing here.
/// Returns whether it landed, and what to tell.
pub(crate) async fn land_now(book: &mut Book, name: &str) -> Result<(bool, Vec<String>), RalphError> {
    let mut said = recover(book)?;
    if let Err(why) = may_land(book, name) {
        said.push(why);
        return Ok((false, said));
    }
    for _ in 0..5 {
        let head = match begin(book, name)? {
            Begun::Paused(why) => return Ok((false, [said, vec![why]].concat())),
            Begun::Landed(head) => {
                merged(book, name, &head, jiff::Timestamp::now())?;
                said.push(format!("task {name}: merged (its work was in {} already)", book.fleet.into));
                said.extend(cleanup(book, name));
                return Ok((true, said));
            }
            Begun::Trouble(trouble) => {
                said.push(evict(book, name, &trouble)?.0 + "; `ralph fleet` runs it");
                return Ok((false, said));
            }
            Begun::Failed(why) => return Ok((false, [said, vec![block(book, name, &why)?]].concat())),
            Begun::Ready(job) => match run(job).await {
                Done::Passed(head) => head,
                Done::Trouble(trouble) => {
                    said.push(evict(book, name, &trouble)?.0 + "; `ralph fleet` runs it");
                    return Ok((false, said));
                }
                Done::Failed(why) => return Ok((false, [said, vec![block(book, name, &why)?]].concat())),
            },
        };
        match finish(book, &head)? {
            Finished::Landed => {
                said.push(format!(
                    "task {name}: merged into {} at {}",
                    book.fleet.into,
                    crate::report::lines::short(&head)
                ));
                said.extend(cleanup(book, name));
                return Ok((true, said));
            }
            Finished::Moved => said.push(format!("{} moved while landing; again on its new tip", book.fleet.into)),
            Finished::Failed(why) => return Ok((false, [said, vec![format!("task {name}: blocked: {why}")]].concat())),
        }
    }
    Ok((false, said))
}

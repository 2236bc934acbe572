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
use crate::git::message::TASK_TRAILER;
use crate::git::repo::{GitError, Repo};

use super::git::{self, Swap};
use super::ops::Book;
use super::queue::{self, Trouble};
use super::rebase::{self, Prep, Rebased};
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
    /// git failed, or a branch is gone: the task is blocked with this.
    Failed(String),
    /// Saved; the job runs next.
    Ready(Job),
    /// The task is no longer finished: nothing to land.
    Gone,
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

    /// The trouble of its command `argv` that ended as `ended`: the end of its log.
    fn failed(&self, argv: &[String], ended: String) -> Trouble {
        let (tail, log) = (super::command::tail(&self.log, 40), self.log.display().to_string());
        Trouble::Check { command: argv.join(" "), ended, tail, log }
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

/// Opens the landing of `name`: `into` must not be checked out anywhere; the tips
/// of `into` and of the task's branch are what the landing starts from. `Ok` the
/// rebase to make, away from the supervisor's loop ([`rebase::rebase`]); `Err` what
/// it came to at once: the queue waits ([`Begun::Paused`]), or git failed or a
/// branch is gone ([`Begun::Failed`]).
pub(crate) fn open(book: &Book, name: &str) -> Result<Result<Prep, Begun>, RalphError> {
    let started_at = jiff::Timestamp::now();
    let into = book.fleet.into.clone();
    let list = git::worktrees(&book.repo).map_err(RalphError::git)?;
    if let Some(at) = git::checked_out(&list, &into) {
        return Ok(Err(Begun::Paused(format!(
            "the fleet's branch {into} is checked out in {}; ralph never moves a branch someone has checked out. \
             Switch that worktree to another branch (`git -C {} switch --detach`); the queue goes on by itself",
            at.display(),
            at.display()
        ))));
    }
    let branch = book.task(name).map_err(RalphError::Internal)?.branch.clone();
    let found = match git::tips(&book.repo, &[&into, &branch]) {
        Ok(found) => found,
        Err(e) => return Ok(Err(Begun::Failed(e.to_string()))),
    };
    let (onto, head) = match (found[0].clone(), found[1].clone()) {
        (Some(onto), Some(head)) => (onto, head),
        (None, _) => return Ok(Err(Begun::Failed(format!("the fleet's branch {into} is gone")))),
        (_, None) => return Ok(Err(Begun::Failed(format!("its branch {branch} is gone")))),
    };
    let globs = book.loaded.config.fleet.regenerate.keys().cloned().collect();
    Ok(Ok(Prep { task: name.to_string(), repo: book.repo.clone(), onto, head, globs, started_at }))
}

/// The landing once its rebase is made: saved and the task marked merging, with the
/// job to run; or what else it came to. A task no longer finished (a person
/// discarded it meanwhile) is left as it is.
pub(crate) fn begun(book: &mut Book, prep: Prep, rebased: Result<Rebased, GitError>) -> Result<Begun, RalphError> {
    let name = prep.task.as_str();
    if book.fleet.tasks.get(name).is_none_or(|t| t.state != TaskState::Finished) {
        return Ok(Begun::Gone);
    }
    match rebased {
        Ok(Rebased::Contained) => Ok(Begun::Landed(prep.head)),
        Ok(Rebased::Trouble(t)) => Ok(Begun::Trouble(t)),
        Ok(Rebased::Made { head: landed, pairs, regenerate }) => {
            book.fleet.landing = Some(Landing {
                task: name.to_string(),
                step: LandingStep::Prepared,
                onto: prep.onto,
                head: landed.clone(),
                task_head: prep.head,
                rebased: pairs,
                started_at: prep.started_at,
            });
            book.set(name, TaskState::Merging, None)?;
            Ok(Begun::Ready(job(book, name, &landed, regenerate)))
        }
        Err(e) => Ok(Begun::Failed(e.to_string())),
    }
}

/// [`open`], the rebase and [`begun`] in one go, here and now (`ralph fleet land`
/// without a supervisor).
pub(crate) fn begin(book: &mut Book, name: &str) -> Result<Begun, RalphError> {
    match open(book, name)? {
        Ok(prep) => {
            let rebased = rebase::rebase(&prep);
            begun(book, prep, rebased)
        }
        Err(begun) => Ok(begun),
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
        // One for the fleet, so build caches stay warm.
        land: book.fleet.worktrees.join(".land"),
        regenerate,
        check: f.check.clone(),
        timeout: f.check_timeout,
        log: book.paths.logs.join(format!("check-{name}-{n}.log")),
    }
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
        Ok(ended) => Done::Trouble(job.failed(check, ended.describe(job.timeout))),
        Err(e) => Done::Failed(format!("cannot run the check `{}`: {e}", check.join(" "))),
    }
}

/// The landing worktree at `head`, detached, without files of an earlier landing
/// (ignored files stay: they are the warm build caches). What a kill during a
/// landing left there (a folder without a worktree, one git no longer knows, a
/// record without its folder) is removed and made again: only the supervisor uses it.
pub(super) fn checkout(repo: &Repo, land: &Path, head: &str) -> Result<(), GitError> {
    let wt = Repo::at(land);
    let reset = || {
        wt.git(&["checkout", "--quiet", "--detach", "--force", head])?;
        wt.git(&["clean", "-ffdq"]).map(drop)
    };
    if land.join(".git").exists() {
        match reset() {
            Err(e @ GitError::Locked { .. }) => return Err(e),
            Err(e) => tracing::warn!("the landing worktree is made again: {e}"),
            Ok(()) => return Ok(()),
        }
    }
    if land.exists() {
        std::fs::remove_dir_all(land)?;
    }
    git::forget_missing(repo, land)?;
    std::fs::create_dir_all(land.parent().unwrap_or(land))?;
    let path = land.display().to_string();
    let why = "ralph fleet: landings";
    repo.git(&["worktree", "add", "--quiet", "--lock", "--reason", why, "--detach", &path, head])?;
    reset()
}

/// Runs the `regenerate` commands and commits what they changed on top of the
/// head; returns the new head.
async fn regenerate(job: &Job) -> Result<String, Done> {
    for (glob, argv) in &job.regenerate {
        match super::command::run(argv, &job.land, job.timeout, &job.log).await {
            Ok(ended) if ended.passed() => {}
            Ok(ended) => {
                let ended = format!("{} (making {glob} again)", ended.describe(job.timeout));
                return Err(Done::Trouble(job.failed(argv, ended)));
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
    let reason =
        format!("ralph fleet: land {} ({count} commit(s) of {})", landing.task, crate::text::short(&landing.task_head));
    let swapped = git::swap(&book.repo, &book.paths.ledger, &into_ref, Some(head), Some(&landing.onto), &reason);
    let outcome = match swapped {
        Ok(Swap::Done) => match into_contains(book, head) {
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

/// Whether `into` contains `head` (an `into` that is gone contains nothing).
fn into_contains(book: &Book, head: &str) -> Result<bool, GitError> {
    git::tip(&book.repo, &book.fleet.into)?.map_or(Ok(false), |tip| git::is_ancestor(&book.repo, head, &tip))
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

/// At a start: a landing a crash interrupted is settled by asking git, merged tasks
/// are cleaned up, a task left merging lands again. Says what it did.
pub(crate) fn recover(book: &mut Book) -> Result<Vec<String>, RalphError> {
    let mut said = Vec::new();
    if let Some(l) = book.fleet.landing.clone() {
        // Merged only when git says `into` contains the landing's head; else again.
        if into_contains(book, &l.head).map_err(RalphError::git)? {
            said.push(format!("task {}: its landing was done when the supervisor stopped: merged", l.task));
            merged(book, &l.task, &l.head, l.started_at)?;
        } else {
            said.push(format!("task {}: its landing was cut short; it lands again", l.task));
            again(book, &l.task)?;
        }
    }
    for name in book.fleet.names(|t| t.state == TaskState::Merging) {
        again(book, &name)?;
    }
    said.extend(super::tidy::tidy(book)?);
    Ok(said)
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
        state => Err(format!("task {name} is {}; only a finished task lands", state.into_str())),
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
        let ended = match begin(book, name)? {
            Begun::Landed(head) => {
                merged(book, name, &head, jiff::Timestamp::now())?;
                Ok(format!("task {name}: merged (its work was in {} already)", book.fleet.into))
            }
            Begun::Paused(why) => Err(why),
            Begun::Gone => Err(format!("task {name} is no longer finished")),
            Begun::Trouble(trouble) => Err(evict(book, name, &trouble)?.0 + "; `ralph fleet` runs it"),
            Begun::Failed(why) => Err(block(book, name, &why)?),
            Begun::Ready(job) => match run(job).await {
                Done::Passed(head) => match finish(book, &head)? {
                    Finished::Landed => {
                        Ok(format!("task {name}: merged into {} at {}", book.fleet.into, crate::text::short(&head)))
                    }
                    Finished::Moved => {
                        said.push(format!("{} moved while landing; again on its new tip", book.fleet.into));
                        continue;
                    }
                    Finished::Failed(why) => Err(format!("task {name}: blocked: {why}")),
                },
                Done::Trouble(trouble) => Err(evict(book, name, &trouble)?.0 + "; `ralph fleet` runs it"),
                Done::Failed(why) => Err(block(book, name, &why)?),
            },
        };
        let landed = ended.is_ok();
        said.push(ended.unwrap_or_else(|line| line));
        if landed {
            said.extend(super::tidy::cleanup(book, name)?);
        }
        return Ok((landed, said));
    }
    Ok((false, said))
}

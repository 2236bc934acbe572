//! Everything before the supervisor's loop: the repository, the config, the checks
//! of a first start (nothing is created before they pass: exit 2), the fleet's lock,
//! and the state, new or continued.

use std::path::{Path, PathBuf};

use crate::config::{CommitMode, Loaded, MaxCost};
use crate::error::RalphError;
use crate::git::preflight::list;
use crate::git::repo::{Discovery, Repo};
use crate::state::lock::{self, RunLock};

use super::core;
use super::git::{self, Swap};
use super::names;
use super::ops::{self, Book};
use super::paths::{self, Paths};
use super::state::{self, Fleet, StateError, Task};
use super::task;

/// How `ralph fleet` was invoked.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub dir: PathBuf,
    pub config: Option<PathBuf>,
    /// A first start in a main checkout with changes: they stay out of every task.
    pub allow_dirty: bool,
    /// Tasks stop at finished; a person lands them (kept for the fleet's life).
    pub no_land: bool,
    pub quiet: bool,
}

/// What `ralph fleet` found.
pub(super) enum Open {
    Fleet(Box<Opened>),
    /// No fleet runs and every task file was a task of a finished fleet: nothing to
    /// do (a restart after the end of a fleet exits 0, as a job engine expects).
    Nothing(String),
}

/// The fleet, opened under its lock.
pub(super) struct Opened {
    pub book: Book,
    pub lock: RunLock,
    /// It was created now.
    pub fresh: bool,
    /// Lines worth telling at the start.
    pub notes: Vec<String>,
}

/// The main checkout's top, where the fleet is: refused inside a task's agent or
/// worktree, and outside a repository.
pub(crate) fn top(dir: &Path) -> Result<(Repo, PathBuf), RalphError> {
    let repo = match Repo::discover(dir) {
        Discovery::Repo(repo) => repo,
        Discovery::NotARepo => {
            return Err(RalphError::Usage(format!(
                "{} is not in a git repository; a fleet runs each task on a branch of one (`git init` and a first \
                 commit make one)",
                dir.display()
            )));
        }
        Discovery::NoGit => return Err(RalphError::Usage("git is not installed; a fleet needs it".into())),
    };
    let top = std::fs::canonicalize(repo.top()).unwrap_or_else(|_| repo.top().to_path_buf());
    task::admit_fleet(&top)?;
    let repo = Repo::at(&top);
    let version = repo.git(&["--version"]).map_err(RalphError::git)?;
    if let Some(old) = too_old(&version) {
        return Err(RalphError::Usage(format!(
            "{old} is too old for a fleet: its merge queue needs git {}.{} or newer (`git merge-tree --write-tree \
             --merge-base`); upgrade git",
            MIN_GIT.0, MIN_GIT.1
        )));
    }
    Ok((repo, top))
}

/// The oldest git a fleet runs with: `merge-tree --write-tree --merge-base`.
const MIN_GIT: (u32, u32) = (2, 40);

/// `git version 2.39.2` when it is older than [`MIN_GIT`].
fn too_old(version: &str) -> Option<String> {
    let number = version.split_whitespace().nth(2)?;
    let mut parts = number.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next()??, parts.next()??);
    ((major, minor) < MIN_GIT).then(|| version.trim().to_string())
}

/// The config of the main checkout, checked for what a fleet needs.
pub(crate) fn config(top: &Path, explicit: Option<&Path>) -> Result<Loaded, RalphError> {
    let path = crate::config::file::find(top, explicit)?;
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let loaded = crate::config::file::load(&path)?;
    if loaded.config.git.commit == CommitMode::Off {
        return Err(RalphError::Usage(format!(
            "[git] commit = \"off\" in {}: a fleet's tasks would commit nothing, so nothing could land; remove the \
             key (or set \"iteration\" or \"phase\")",
            loaded.path.display()
        )));
    }
    Ok(loaded)
}

/// Opens the fleet of the repository at `dir`: continues the one there, or creates
/// one after the checks of a first start.
pub(super) fn open(options: &Options) -> Result<Open, RalphError> {
    let (repo, top) = top(&options.dir)?;
    let loaded = config(&top, options.config.as_deref())?;
    let worktrees = paths::worktrees(&top, loaded.config.fleet.worktrees.as_deref()).map_err(RalphError::Usage)?;
    let paths = Paths::new(&top);
    let agent = top.join(".agent");
    crate::state::store::ensure_gitignore(&agent)
        .map_err(|e| RalphError::setup(format!("cannot create {}", agent.display()), e))?;
    for sub in ["fleet/logs", "fleet/windows", "fleet/limits"] {
        crate::state::private::ensure_dirs(&agent, Path::new(sub))
            .map_err(|e| RalphError::setup(format!("cannot create {}", agent.join(sub).display()), e))?;
    }
    let (lock, mut notes) = take_lock(&paths)?;
    let existing = read_state(&paths.state)?;
    let max_cost = match loaded.config.fleet.max_cost {
        Some(MaxCost::Usd(usd)) => Some(usd),
        Some(MaxCost::Unlimited) => None,
        None => {
            let count = existing.as_ref().map_or_else(|| count_tasks(&top, &loaded), |f| f.tasks.len());
            return Err(RalphError::Usage(core::worst_case(count, loaded.config.general.max_cost_usd)));
        }
    };
    let silent: Vec<&String> =
        loaded.config.agents.iter().filter(|(_, a)| !task::reports_cost(a)).map(|(n, _)| n).collect();
    if !silent.is_empty() && max_cost.is_some() {
        let list = silent.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
        notes.push(format!("note: agent(s) {list} report no cost: [fleet] max_cost cannot count what they spend"));
    }
    // A finished fleet whose tasks all landed is archived: one still here has work.
    let (mut fleet, fresh) = match existing {
        Some(fleet) => (fleet, false),
        None => match create(&repo, &top, &loaded, &paths, worktrees, options.allow_dirty)? {
            Ok(fleet) => (fleet, true),
            Err(nothing) => {
                lock.release().map_err(|e| RalphError::io("cannot release the fleet's lock", e))?;
                return Ok(Open::Nothing(nothing));
            }
        },
    };
    if options.no_land && !fleet.no_land {
        fleet.no_land = true;
        notes.push("--no-land: each task stops at finished; `ralph fleet land TASK` lands one".into());
    }
    // Every task file is a goal, checked at every start like a run's.
    for t in fleet.tasks.values().filter(|t| !t.state.settled()) {
        notes.extend(task::secrets_in_task_file(&top, &t.file));
    }
    let mut book = Book::new(repo, paths, loaded, fleet, max_cost);
    if fresh {
        book.save()?;
    }
    Ok(Open::Fleet(Box::new(Opened { book, lock, fresh, notes })))
}

fn take_lock(paths: &Paths) -> Result<(RunLock, Vec<String>), RalphError> {
    // A supervisor killed a moment ago may still hold it through a child it was
    // starting (between clone and exec): waited out.
    match lock::take(&paths.lock, false, &mut |_, _| {}) {
        Ok(acquired) => {
            let notes = match (&acquired.stale, acquired.stale_unreadable) {
                (Some(prev), _) => vec![format!(
                    "the previous supervisor (pid {} on {}) ended without a clean stop; continuing its fleet",
                    prev.pid, prev.host
                )],
                (None, true) => vec!["the previous supervisor ended without a clean stop; continuing its fleet".into()],
                (None, false) => Vec::new(),
            };
            Ok((acquired.lock, notes))
        }
        Err(lock::LockError::Held { info, .. }) => Err(RalphError::Usage(format!(
            "another ralph fleet{} supervises this repository ({}); `ralph fleet status` shows it, `ralph fleet stop` \
             stops it",
            info.map(|i| format!(" (pid {} on {})", i.pid, i.host)).unwrap_or_default(),
            paths.repo.display()
        ))),
        Err(e) => Err(RalphError::Lock(e)),
    }
}

/// The state on disk: a file that does not parse is set aside (never overwritten)
/// and the start refused; a newer or impossible one is refused and left in place.
pub(crate) fn read_state(path: &Path) -> Result<Option<Fleet>, RalphError> {
    match state::read(path) {
        Ok(found) => Ok(found),
        Err(StateError::Corrupt { message, .. }) => {
            let aside = crate::state::store::set_aside(path, "corrupt")
                .map_err(|e| RalphError::setup(format!("cannot set {} aside", path.display()), e))?;
            Err(RalphError::Usage(format!(
                "the fleet's state {} does not parse ({message}); it was kept aside as {}. Repair it and move it back \
                 to continue that fleet, or run `ralph fleet` again to start a new one",
                path.display(),
                aside.display()
            )))
        }
        Err(e @ StateError::Io { .. }) => {
            Err(RalphError::setup("cannot read the fleet's state", std::io::Error::other(e.to_string())))
        }
        Err(e) => Err(RalphError::Usage(format!("{e}; it was left in place (a newer ralph may read it)"))),
    }
}

fn count_tasks(top: &Path, loaded: &Loaded) -> usize {
    let files = names::expand(top, &loaded.config.fleet.tasks);
    names::tasks(&files, &loaded.config.fleet.into).0.len()
}

/// A new fleet: the first start's checks, then `into` from HEAD and the tasks queued;
/// `Err` with what to say when every task file is a task of a finished fleet.
fn create(
    repo: &Repo,
    top: &Path,
    loaded: &Loaded,
    paths: &Paths,
    worktrees: PathBuf,
    allow_dirty: bool,
) -> Result<Result<Fleet, String>, RalphError> {
    let f = &loaded.config.fleet;
    let head = check_first_start(repo, top, loaded, allow_dirty)?;
    let earlier = ops::earlier_tasks(&paths.archive, "");
    let (tasks, skipped) = first_tasks(repo, top, loaded, &earlier)?;
    if tasks.is_empty() && !skipped.is_empty() {
        return Ok(Err(format!(
            "nothing to do: every task file was a task of a finished fleet ({}); write new task files to start a \
             new fleet",
            list(&skipped)
        )));
    }
    ensure_into(repo, paths, &f.into, &head)?;
    let now = jiff::Timestamp::now();
    Ok(Ok(Fleet {
        version: state::VERSION,
        fleet_id: format!("{}-{}", now.strftime("%Y%m%dT%H%M%SZ"), std::process::id()),
        repo: top.to_path_buf(),
        base: head,
        base_branch: repo.branch().map_err(RalphError::git)?,
        into: f.into.clone(),
        worktrees,
        config: loaded.path.clone(),
        tasks_glob: f.tasks.clone(),
        discovered: u32::try_from(tasks.len()).unwrap_or(u32::MAX),
        created_at: now,
        updated_at: now,
        tasks: tasks.into_iter().collect(),
        ..Fleet::default()
    }))
}

/// What a first start refuses before it creates anything: no commit, an operation in
/// progress, changes of the person's (without `--allow-dirty`), `into` checked out
/// somewhere. Returns HEAD, the fleet's base.
fn check_first_start(repo: &Repo, top: &Path, loaded: &Loaded, allow_dirty: bool) -> Result<String, RalphError> {
    let f = &loaded.config.fleet;
    let head = repo.head().map_err(RalphError::git)?.ok_or_else(|| {
        RalphError::Usage("the repository has no commit yet; a fleet branches every task from one: commit first".into())
    })?;
    if let Some(op) = repo.in_progress().map_err(RalphError::git)?.first() {
        return Err(RalphError::Git(crate::git::preflight::Refusal::InProgress(op)));
    }
    let exempt = task::main_exempt(&f.tasks, &ops::own_files(top, loaded));
    let dirty = crate::git::plan::dirty_at_start(&repo.status().map_err(RalphError::git)?, &exempt);
    if !dirty.is_empty() && !allow_dirty {
        return Err(RalphError::Usage(format!(
            "the main checkout has changes of yours ({}); commit or stash them, or run `ralph fleet --allow-dirty`: \
             every task branches from the last commit, so they stay out of every task either way",
            list(&dirty)
        )));
    }
    if let Some(at) = git::checked_out(&git::worktrees(repo).map_err(RalphError::git)?, &f.into) {
        return Err(RalphError::Usage(format!(
            "the fleet's branch {} ([fleet] into) is checked out in {}; ralph never moves a branch someone has checked \
             out: switch that worktree to another branch (`git -C {} switch --detach`), or set [fleet] into",
            f.into,
            at.display(),
            at.display()
        )));
    }
    Ok(head)
}

/// `into` at the base: created, or moved forward when HEAD contains it (an earlier
/// fleet's, merged since); refused when it holds commits HEAD does not.
fn ensure_into(repo: &Repo, paths: &Paths, into: &str, head: &str) -> Result<(), RalphError> {
    let old = git::tip(repo, into).map_err(RalphError::git)?;
    if let Some(tip) = &old
        && tip != head
        && !git::is_ancestor(repo, tip, head).map_err(RalphError::git)?
    {
        return Err(RalphError::Usage(format!(
            "the branch {into} ([fleet] into) exists and holds commits that HEAD does not: merge it first, or delete \
             it (`git branch -D {into}`), or set [fleet] into to another branch"
        )));
    }
    if old.as_deref() == Some(head) {
        return Ok(());
    }
    let reason = "ralph fleet: the fleet's branch, from its base";
    let into_ref = format!("refs/heads/{into}");
    match git::swap(repo, &paths.ledger, &into_ref, Some(head), old.as_deref(), reason).map_err(RalphError::git)? {
        Swap::Done => Ok(()),
        Swap::Moved => Err(RalphError::Refused(format!("the branch {into} moved while the fleet started; try again"))),
    }
}

/// The tasks of a first start and the task files that were done by finished fleets.
type FirstTasks = (Vec<(String, Task)>, Vec<String>);

/// The tasks of a first start, refused as a whole when any task file cannot be one;
/// the files that were tasks of a finished fleet are left out (and listed).
fn first_tasks(
    repo: &Repo,
    top: &Path,
    loaded: &Loaded,
    earlier: &std::collections::BTreeMap<String, String>,
) -> Result<FirstTasks, RalphError> {
    let f = &loaded.config.fleet;
    let files = names::expand(top, &f.tasks);
    let (found, unusable) = names::tasks(&files, &f.into);
    let mut problems: Vec<String> = unusable.iter().map(|u| format!("{}: {}", u.file, u.problem)).collect();
    let mut tasks = Vec::new();
    let (found, skipped): (Vec<_>, Vec<_>) = found.into_iter().partition(|t| !earlier.contains_key(&t.name));
    let skipped: Vec<String> = skipped.into_iter().map(|t| t.file).collect();
    for (i, found) in found.into_iter().enumerate() {
        let branch = names::branch_of(&found.name);
        if git::tip(repo, &branch).map_err(RalphError::git)?.is_some() {
            problems.push(format!("{}: {}", found.file, ops::branch_taken(&branch)));
        }
        let seq = u32::try_from(i + 1).unwrap_or(u32::MAX);
        tasks.push((found.name, Task::new(&found.file, seq, branch)));
    }
    if !problems.is_empty() {
        return Err(RalphError::Usage(format!(
            "{} task file(s) cannot be tasks; nothing was started:\n  {}",
            problems.len(),
            problems.join("\n  ")
        )));
    }
    if tasks.is_empty() && skipped.is_empty() {
        return Err(RalphError::Usage(format!(
            "no task files match [fleet] tasks = {:?} in {}; write one Markdown file per task there (its file is the \
             task's goal)",
            f.tasks,
            top.display()
        )));
    }
    Ok((tasks, skipped))
}

#[cfg(test)]
mod tests {
    #[test]
    fn gits_older_than_2_40_are_refused() {
        assert_eq!(super::too_old("git version 2.39.5\n").as_deref(), Some("git version 2.39.5"));
        assert_eq!(super::too_old("git version 2.40.0"), None);
        assert_eq!(super::too_old("git version 3.0.1 (Apple Git-1)"), None);
        assert_eq!(super::too_old("something else"), None);
    }
}

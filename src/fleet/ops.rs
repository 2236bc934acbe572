//! The fleet's book, the shell around the pure core: the state with the repository,
//! the places and the config, and every change to it carried out with git and saved
//! before it counts. The supervisor owns one; a `ralph fleet` command that finds no
//! supervisor running takes the fleet's lock and uses one of its own, so a person's
//! command does the same whether a supervisor runs or not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Loaded;
use crate::error::RalphError;
use crate::git::repo::Repo;

use super::core::{self, RunView};
use super::git;
use super::names;
use super::paths::Paths;
use super::state::{self, Fleet, Task, TaskState};
use super::task::{self, Descriptor};
use super::worktree::{Make, NotMade};

use crate::git::preflight::list;

/// The fleet, its repository, its places and its config.
pub(crate) struct Book {
    pub repo: Repo,
    pub paths: Paths,
    pub loaded: Loaded,
    pub fleet: Fleet,
    /// `[fleet] max_cost` in dollars; `None` for "none".
    pub max_cost: Option<f64>,
    /// Task files already reported as unusable (said once).
    told: BTreeSet<String>,
    /// Tasks of earlier (archived) fleets, with their fleet: their files are done.
    earlier: BTreeMap<String, String>,
    /// Changed since the last save (see [`Book::set_later`]).
    dirty: bool,
}

/// Whether a task can start now.
#[derive(Debug)]
pub(crate) enum Ready {
    /// Its worktree, with the descriptor written; the flag to start its ralph with;
    /// how long git took to create the worktree, when it was created now.
    Go { worktree: PathBuf, flag: &'static str, created_in: Option<Duration> },
    /// Its worktree is to be made (by a chore, [`Make::run`]); the task is starting
    /// (saved), and [`Book::made`] goes on once git is done.
    Make(Make),
    /// Its run is already complete: it finished while nobody recorded it.
    Finished,
    /// Not now (the text says why); the supervisor tries again later.
    Later(String),
    /// It cannot start: blocked with this reason.
    Block(String),
}

impl Book {
    pub(crate) fn new(repo: Repo, paths: Paths, loaded: Loaded, fleet: Fleet, max_cost: Option<f64>) -> Book {
        let earlier = earlier_tasks(&paths.archive, &fleet.fleet_id);
        Book { repo, paths, loaded, fleet, max_cost, told: BTreeSet::new(), earlier, dirty: false }
    }

    /// Writes the state; a failure is ralph's own I/O failing (exit 4).
    pub(crate) fn save(&mut self) -> Result<(), RalphError> {
        let path = &self.paths.state;
        state::save(path, &mut self.fleet)
            .map_err(|e| RalphError::io(format!("cannot write {}", path.display()), e))?;
        self.dirty = false;
        Ok(())
    }

    /// The state changed in memory: the next [`Book::flush`] saves it.
    pub(crate) fn changed(&mut self) {
        self.dirty = true;
    }

    /// Saves what [`Book::set_later`] changed, if anything.
    pub(crate) fn flush(&mut self) -> Result<(), RalphError> {
        if self.dirty { self.save() } else { Ok(()) }
    }

    pub(crate) fn task(&self, name: &str) -> Result<&Task, String> {
        task_of(&self.fleet, name)
    }

    fn task_mut(&mut self, name: &str) -> &mut Task {
        self.fleet.tasks.entry(name.to_string()).or_insert_with(|| Task::new("", 0, names::branch_of(name)))
    }

    /// Sets a task's state and reason, and saves.
    pub(crate) fn set(&mut self, name: &str, to: TaskState, reason: Option<String>) -> Result<(), RalphError> {
        self.set_later(name, to, reason);
        self.save()
    }

    /// [`Book::set`], saved with the next save ([`Book::flush`] at the latest): for a
    /// change the tasks' checkpoints and locks tell again after a crash (a task's
    /// ralph started or ended), so the next task starts without waiting for a sync.
    pub(crate) fn set_later(&mut self, name: &str, to: TaskState, reason: Option<String>) {
        let t = self.task_mut(name);
        (t.state, t.reason, t.updated_at) = (to, reason, Some(jiff::Timestamp::now()));
        if to == TaskState::Finished && t.finished_seq.is_none() {
            self.fleet.finished += 1;
            let seq = self.fleet.finished;
            self.task_mut(name).finished_seq = Some(seq);
        }
        self.dirty = true;
    }

    /// Finds task files added since the last look: new tasks join the queue (or are
    /// blocked when their branch exists already). Returns what to tell the person.
    pub(crate) fn discover(&mut self) -> Result<Vec<String>, RalphError> {
        let files = names::expand(&self.paths.repo, &self.fleet.tasks_glob);
        let (found, unusable) = names::tasks(&files, &self.fleet.into);
        let mut said = Vec::new();
        for u in unusable {
            if self.told.insert(u.file.clone()) {
                said.push(format!("task file {}: {}", u.file, u.problem));
            }
        }
        let mut added = false;
        let new: Vec<names::Found> = found.into_iter().filter(|f| !self.fleet.tasks.contains_key(&f.name)).collect();
        for f in new {
            if let Some(fleet) = self.earlier.get(&f.name) {
                if self.told.insert(f.file.clone()) {
                    said.push(done_before(&f.file, &f.name, fleet));
                }
                continue;
            }
            self.fleet.discovered += 1;
            let mut t = Task::new(&f.file, self.fleet.discovered, names::branch_of(&f.name));
            if git::tip(&self.repo, &t.branch).map_err(RalphError::git)?.is_some() {
                t.state = TaskState::Blocked;
                t.reason = Some(branch_taken(&t.branch));
            }
            said.push(match t.state {
                TaskState::Blocked => format!("task {}: blocked: {}", f.name, t.reason.clone().unwrap_or_default()),
                _ => format!("task {}: queued ({})", f.name, f.file),
            });
            said.extend(task::secrets_in_task_file(&self.paths.repo, &f.file));
            self.fleet.tasks.insert(f.name, t);
            added = true;
        }
        if added {
            self.save()?;
        }
        Ok(said)
    }

    /// What the task's run's checkpoint says (`None`: no readable checkpoint).
    pub(crate) fn run_view(&self, name: &str) -> Option<RunView> {
        let worktree = self.fleet.tasks.get(name)?.worktree.clone()?;
        run_view(&worktree)
    }

    /// Gets a queued task ready to start: its file is there, its worktree exists
    /// (created now: locked, on a new branch from the tip of `into`), its descriptor
    /// is written.
    pub(crate) fn ready(&mut self, name: &str) -> Result<Ready, RalphError> {
        let t = self.fleet.tasks.get(name).cloned().ok_or_else(|| RalphError::Internal(format!("no task {name}")))?;
        let file = self.paths.repo.join(&t.file);
        if !file.is_file() {
            return Ok(Ready::Block(format!("its task file {} is gone (ralph never deletes one)", t.file)));
        }
        match t.worktree.clone().filter(|w| w.join(".git").exists()) {
            Some(worktree) => self.go(name, &t, worktree, None),
            None => self.plan_worktree(name, &t),
        }
    }

    /// A task's worktree was made (or not, and why): the task goes on to start, or
    /// waits, or is blocked.
    pub(crate) fn made(&mut self, name: &str, made: Result<Duration, NotMade>) -> Result<Ready, RalphError> {
        let t = self.fleet.tasks.get(name).cloned().ok_or_else(|| RalphError::Internal(format!("no task {name}")))?;
        match (made, t.worktree.clone()) {
            (Ok(took), Some(worktree)) => self.go(name, &t, worktree, Some(took)),
            (Ok(_), None) => Err(RalphError::Internal(format!("task {name} has no worktree"))),
            (Err(not), _) => {
                // Nothing of it was made: the next try makes it again.
                self.task_mut(name).worktree = None;
                self.set_later(name, TaskState::Queued, None);
                Ok(match not {
                    NotMade::Later(why) => Ready::Later(why),
                    NotMade::Block(why) => Ready::Block(why),
                })
            }
        }
    }

    /// Its worktree is there: the descriptor is written and its ralph may start.
    fn go(&mut self, name: &str, t: &Task, worktree: PathBuf, took: Option<Duration>) -> Result<Ready, RalphError> {
        let view = run_view(&worktree);
        let status = view.as_ref().map(|v| v.status);
        let flag = match (&t.eviction, core::start_flag(status)) {
            // A completed run the merge queue sent back: its ralph reopens it.
            (Some(_), None) => "--resume-or-start",
            (_, Some(flag)) => flag,
            (None, None) => return Ok(Ready::Finished),
        };
        self.write_descriptor(name, t, &worktree)?;
        Ok(Ready::Go { worktree, flag, created_in: took })
    }

    fn write_descriptor(&self, name: &str, t: &Task, worktree: &Path) -> Result<(), RalphError> {
        let file = self.paths.repo.join(&t.file);
        let mut d = Descriptor::new(&self.fleet.fleet_id, name, &self.paths.repo, file, self.fleet.config.clone());
        d.tasks_glob = self.fleet.tasks_glob.clone();
        d.own_files = own_files(&self.paths.repo, &self.loaded);
        d.eviction = t.eviction.clone();
        let others: f64 = self.fleet.tasks.iter().filter(|(n, _)| n.as_str() != name).map(|(_, t)| t.cost_usd).sum();
        // The task's own spending so far counts against its own cap, which is
        // over the run's whole life: its share is the rest plus what it spent.
        let cap = core::task_cap(self.loaded.config.general.max_cost_usd, self.max_cost, others);
        d.max_cost_usd = cap.map(|c| c.max(t.cost_usd));
        task::write_descriptor(worktree, &d)
            .map_err(|e| RalphError::io(format!("cannot write the task descriptor in {}", worktree.display()), e))
    }

    /// What making the task's branch and worktree takes: enough free disk, and its
    /// branch made by this fleet or not there yet. The task is saved as starting
    /// (its branch's start and its worktree's place recorded) before git makes
    /// anything; [`Make::run`] then makes them.
    fn plan_worktree(&mut self, name: &str, t: &Task) -> Result<Ready, RalphError> {
        let path = self.fleet.worktrees.join(name);
        let need = self.loaded.config.fleet.min_free_disk.0;
        let probe = path.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
        match crate::state::disk::free_bytes(probe) {
            Some(free) if free < need => {
                return Ok(Ready::Later(format!(
                    "{} has {} free, less than [fleet] min_free_disk ({})",
                    probe.display(),
                    crate::state::disk::human(free),
                    crate::state::disk::human(need)
                )));
            }
            Some(_) => {}
            None => tracing::warn!("fleet: cannot read the free space of {}", probe.display()),
        }
        // Both tips from one git process: this is between a task's end and the
        // next task's start.
        let found = git::tips(&self.repo, &[&t.branch, &self.fleet.into]).map_err(RalphError::git)?;
        let (existing, into) = (found[0].clone(), found[1].clone());
        // The branch was made by this fleet when `from` was recorded before it.
        if existing.is_some() && t.from.is_none() {
            return Ok(Ready::Block(branch_taken(&t.branch)));
        }
        let from = match (&existing, &t.from) {
            (Some(_), Some(from)) => from.clone(),
            _ => into.ok_or_else(|| RalphError::Refused(format!("the fleet's branch {} is gone", self.fleet.into)))?,
        };
        let task = self.task_mut(name);
        (task.from, task.state, task.worktree) = (Some(from.clone()), TaskState::Starting, Some(path.clone()));
        self.save()?;
        Ok(Ready::Make(Make {
            task: name.to_string(),
            repo: self.repo.clone(),
            path,
            branch: t.branch.clone(),
            from,
            new_branch: existing.is_none(),
            reason: format!("ralph fleet {}: task {name}", self.fleet.fleet_id),
        }))
    }

    /// Compares the state with `git worktree list`: a task's worktree that git no
    /// longer has (its folder removed by hand) is forgotten, so the task gets a new
    /// one on its branch; a worktree under the fleet's folder that no task has is
    /// named and left alone. Returns what to tell.
    pub(crate) fn reconcile(&mut self) -> Result<Vec<String>, RalphError> {
        let listed = git::worktrees(&self.repo).map_err(RalphError::git)?;
        let present = |p: &Path| listed.iter().any(|w| w.path == p && !w.prunable);
        let mut said = Vec::new();
        let gone = self.fleet.names(|t| t.worktree.as_deref().is_some_and(|w| !present(w) || !w.exists()));
        if !gone.is_empty() {
            let _ = self.repo.git_output(&["worktree", "prune"]);
        }
        for name in gone {
            let t = self.task_mut(&name);
            said.push(format!(
                "task {name}: its worktree {} is gone (git no longer lists it); it gets a new one on its branch {}",
                t.worktree.as_deref().map(|w| w.display().to_string()).unwrap_or_default(),
                t.branch
            ));
            t.worktree = None;
        }
        let known: Vec<PathBuf> = self.fleet.tasks.values().filter_map(|t| t.worktree.clone()).collect();
        for w in listed.iter().filter(|w| w.path.starts_with(&self.fleet.worktrees) && !known.contains(&w.path)) {
            let ours = self.fleet.tasks.keys().any(|n| self.fleet.worktrees.join(n) == w.path);
            if !ours && !w.path.ends_with(".land") {
                said.push(format!(
                    "note: git lists the worktree {} in the fleet's folder; no task has it, so it is left alone",
                    w.path.display()
                ));
            }
        }
        if !said.is_empty() {
            self.save()?;
        }
        Ok(said)
    }

    /// Removes the worktree of a merged or discarded task when it holds nothing of a
    /// person's; says what it did.
    pub(crate) fn remove_worktree(&mut self, name: &str) -> Result<String, String> {
        let Some(worktree) = self.fleet.tasks.get(name).and_then(|t| t.worktree.clone()) else {
            return Ok(format!("task {name} has no worktree"));
        };
        let keep = self.paths.logs.join(format!("{name}.agent"));
        let line = remove_worktree_at(&self.repo, name, &worktree, &keep)?;
        self.task_mut(name).worktree = None;
        self.save().map_err(|e| e.to_string())?;
        Ok(line)
    }

    /// Deletes a discarded task's branch (its worktree gone first).
    pub(crate) fn delete_branch(&mut self, name: &str) -> Result<String, String> {
        let branch = names::branch_of(name);
        let Some(tip) = git::tip(&self.repo, &branch).map_err(|e| e.to_string())? else {
            return Ok(format!("task {name}: its branch {branch} is gone already"));
        };
        let reason = format!("ralph fleet discard {name}");
        match git::swap(&self.repo, &self.paths.ledger, &format!("refs/heads/{branch}"), None, Some(&tip), &reason) {
            Ok(git::Swap::Done) => {
                Ok(format!("task {name}: deleted its branch {branch} (was {})", &tip[..12.min(tip.len())]))
            }
            Ok(git::Swap::Moved) => Err(format!("task {name}: its branch {branch} moved meanwhile; it is kept")),
            Err(e) => Err(format!("task {name}: git cannot delete its branch {branch}: {e}")),
        }
    }

    /// `ralph fleet retry`: a failed, blocked or stopped task goes back to the queue
    /// (one whose run is complete, which the queue gave up on, lands again), its
    /// restarts and evictions forgotten.
    pub(crate) fn retry(&mut self, name: &str) -> Result<String, String> {
        let state = match core::retry(name, self.task(name)?) {
            core::Command::Set(state) => state,
            core::Command::AskRun => return Err(format!("task {name} is running")),
            core::Command::Refuse(why) => return Err(why),
        };
        let completed = self.run_view(name).is_some_and(|v| v.status == crate::state::checkpoint::Status::Completed);
        let state = if state == TaskState::Queued && completed { TaskState::Finished } else { state };
        let t = self.task_mut(name);
        (t.restarts, t.evictions, t.eviction) = (0, 0, None);
        self.set(name, state, None).map_err(|e| e.to_string())?;
        let again = if state == TaskState::Finished { "queued to land again" } else { "queued again" };
        Ok(format!("task {name}: {again}"))
    }

    /// A discarded task: its worktree goes when it holds nothing of a person's, its
    /// branch too when asked (and the worktree went). Returns what to tell.
    pub(crate) fn discarded(&mut self, name: &str, delete_branch: bool) -> Vec<String> {
        let removed = self.remove_worktree(name);
        let mut said = vec![removed.clone().unwrap_or_else(|e| e)];
        if delete_branch && removed.is_ok() {
            said.push(self.delete_branch(name).unwrap_or_else(|e| e));
        }
        said
    }

    /// `ralph fleet clean`: the worktrees of merged and discarded tasks, one line
    /// each. The answer with or without a supervisor: a worktree kept (it holds
    /// changes) or that git cannot remove fails the whole, every line still said.
    pub(crate) fn clean(&mut self) -> Result<String, String> {
        let names =
            self.fleet.names(|t| matches!(t.state, TaskState::Merged | TaskState::Discarded) && t.worktree.is_some());
        let results: Vec<_> = names.iter().map(|n| self.remove_worktree(n)).collect();
        let ok = results.iter().all(Result::is_ok);
        let text = results.into_iter().map(|r| r.unwrap_or_else(|e| e)).collect::<Vec<_>>().join("\n");
        let text = if text.is_empty() { "nothing to clean".to_string() } else { text };
        if ok { Ok(text) } else { Err(text) }
    }
}

/// Task `name` of `fleet`; the error names the tasks there are.
pub(crate) fn task_of<'a>(fleet: &'a Fleet, name: &str) -> Result<&'a Task, String> {
    fleet.tasks.get(name).ok_or_else(|| {
        let known = fleet.tasks.keys().cloned().collect::<Vec<_>>().join(", ");
        format!("no task {name} in this fleet (tasks: {known})")
    })
}

/// The tasks of the archived fleets (but `current`), by name, with their fleet's id.
pub(crate) fn earlier_tasks(archive: &Path, current: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for path in archived(archive) {
        if let Ok(Some(fleet)) = state::read(&path).map_err(drop)
            && fleet.fleet_id != current
        {
            out.extend(fleet.tasks.into_keys().map(|name| (name, fleet.fleet_id.clone())));
        }
    }
    out
}

/// The states of the archived fleets, oldest first (a fleet's id starts with its
/// creation time).
pub(crate) fn archived(archive: &Path) -> Vec<PathBuf> {
    let Ok(listing) = std::fs::read_dir(archive) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        listing.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    files
}

/// Why a task file does not start a task again.
pub(crate) fn done_before(file: &str, name: &str, fleet: &str) -> String {
    format!("task file {file} was task {name} of the finished fleet {fleet}; rename it to run it again")
}

/// What a task's checkpoint says, from the newer of the file and its journal.
pub(crate) fn run_view(worktree: &Path) -> Option<RunView> {
    let path = worktree.join(".agent").join("checkpoint.json");
    let cp = crate::state::format::read_newest(&path).ok().flatten()?.checkpoint;
    Some(RunView {
        status: cp.status,
        run_id: cp.run_id,
        iterations_done: cp.progress.counters.iterations_done,
        cost_usd: cp.usage.cost_usd,
        stop_reason: cp.stop_reason,
    })
}

/// ralph's own files of the main checkout, relative to its top: the config and the
/// single run's goal.
pub(crate) fn own_files(repo: &Path, loaded: &Loaded) -> Vec<String> {
    let rel = |p: &Path| p.strip_prefix(repo).ok().map(|r| r.to_string_lossy().into_owned());
    let goal = repo.join(&loaded.config.general.prompt);
    [loaded.path.as_path(), goal.as_path()].into_iter().filter_map(rel).collect()
}

pub(crate) fn branch_taken(branch: &str) -> String {
    format!(
        "the branch {branch} exists already and this fleet did not create it; rename the task file, or delete the \
         branch (`git branch -D {branch}`) if nothing in it is needed"
    )
}

/// Removes the worktree of task `name` at `worktree` when it holds nothing of a
/// person's, its `.agent/` (the run's checkpoint, journal, transcripts) moved to
/// `keep_agent` first; `Err` says why it is kept.
pub(crate) fn remove_worktree_at(
    repo: &Repo,
    name: &str,
    worktree: &Path,
    keep_agent: &Path,
) -> Result<String, String> {
    if !worktree.exists() {
        let _ = super::git::forget_missing(repo, worktree);
        return Ok(format!("task {name}: its worktree is gone already"));
    }
    let changes = git::changes_in(worktree).map_err(|e| e.to_string())?;
    if !changes.is_empty() {
        return Err(format!(
            "task {name}: its worktree {} is kept: it holds changes that are in no commit ({}); save or remove them, \
             then `ralph fleet clean`",
            worktree.display(),
            list(&changes)
        ));
    }
    // git then removes the rest, refusing anything new.
    let _ = std::fs::remove_dir_all(keep_agent);
    if std::fs::rename(worktree.join(".agent"), keep_agent).is_err() {
        let _ = std::fs::remove_dir_all(worktree.join(".agent"));
    }
    git::remove_worktree(repo, worktree).map_err(|e| format!("task {name}: git cannot remove its worktree: {e}"))?;
    Ok(format!("task {name}: removed its worktree {}", worktree.display()))
}

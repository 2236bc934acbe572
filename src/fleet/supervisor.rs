//! The supervisor: one `select!` loop that owns the fleet's state (nextest's
//! dispatcher is the model) and only carries out the core's decisions. It wakes for
//! a task's ralph ending (its own child, or an adopted one's pidfd), a file-system
//! event (a task's checkpoint changed: the live line and the cost; a task file
//! added), a signal, a request on its socket, or the one timer it may have (waiting
//! for free disk). While every task waits on its agent it sleeps: no polling.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, oneshot};

use crate::error::RalphError;
use crate::signal::{Incoming, InterruptAction, InterruptState, StopCause};
use crate::state::checkpoint::Status;
use crate::state::journal::Journal;
use crate::state::lock::RunLock;
use serde_json::json;

use super::chores::Chore;
use super::control::{self, Inbound, Reply, Request};
use super::core::{self, Asked, Command, FleetEnd};
use super::landing::Done;
use super::ops::{Book, Ready};
use super::procs::{Ended, Procs, Start};
use super::report::{self, Reporter};
use super::state::{FleetStatus, TaskState};
use super::task;
use super::worktree::NotMade;

pub(crate) use super::setup::Options;

/// How long a task waits for free disk before the supervisor looks again.
const DISK_RETRY: Duration = Duration::from_secs(60);

/// `ralph fleet`: supervise until every task is done or nothing more can happen.
pub(crate) fn main(options: Options) -> Result<i32, RalphError> {
    let runtime = crate::process::runtime().map_err(|e| RalphError::io("cannot start the runtime", e))?;
    let code = runtime.block_on(run(options));
    runtime.shutdown_background();
    code
}

async fn run(options: Options) -> Result<i32, RalphError> {
    let opened = match super::setup::open(&options)? {
        super::setup::Open::Fleet(opened) => opened,
        super::setup::Open::Nothing(why) => {
            eprintln!("ralph: {why}");
            return Ok(crate::exit::DONE);
        }
    };
    let reporter = Reporter::new(options.quiet, std::io::stderr().is_terminal());
    let (fs_tx, fs_rx) = mpsc::unbounded_channel();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Opening and reading are events too (the supervisor's own reads of a
        // checkpoint among them): only what changes a file counts.
        let event = event.ok().filter(|e| !matches!(e.kind, notify::EventKind::Access(_)));
        for path in event.map(|e| e.paths).unwrap_or_default() {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name == "checkpoint.json" || name.ends_with(".md") {
                let _ = fs_tx.send(path);
            }
        }
    })
    .map_err(|e| RalphError::io("cannot watch files", std::io::Error::other(e)))?;
    let (control_tx, control_rx) = mpsc::channel(16);
    let socket = control::serve(&opened.book.paths.repo, &opened.book.paths.socket_record, control_tx)
        .map_err(|e| RalphError::setup("cannot open the fleet's control socket", e))?;
    let events = opened.book.paths.dir.join(crate::state::journal::FILE);
    let journal =
        Journal::open(&events).map_err(|e| RalphError::setup(format!("cannot open {}", events.display()), e))?;
    let sup = Supervisor {
        book: opened.book,
        lock: Some(opened.lock),
        procs: Procs::default(),
        reporter,
        asked: BTreeMap::new(),
        delete_branch: BTreeMap::new(),
        stopping: None,
        later: None,
        interrupt: InterruptState::default(),
        watcher,
        fs_rx,
        control_rx,
        socket,
        journal,
        job: None,
        queue_paused: None,
        land_first: None,
        moved_in_a_row: 0,
        chores: super::chores::Chores::default(),
        preparing: None,
    };
    sup.reporter.lines(&opened.notes);
    sup.run(opened.fresh).await
}

/// Why the fleet is stopping.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Stopping {
    Signal(StopCause),
    /// `[fleet] max_cost` is reached.
    Cost(String),
}

pub(super) struct Supervisor {
    pub(super) book: Book,
    pub(super) lock: Option<RunLock>,
    pub(super) procs: Procs,
    pub(super) reporter: Reporter,
    /// What each task's ralph was asked to do.
    pub(super) asked: BTreeMap<String, Asked>,
    /// Discarded tasks whose branch goes too.
    pub(super) delete_branch: BTreeMap<String, bool>,
    pub(super) stopping: Option<Stopping>,
    /// Why queued tasks wait (free disk), until the timer looks again.
    pub(super) later: Option<String>,
    pub(super) interrupt: InterruptState,
    pub(super) watcher: notify::RecommendedWatcher,
    pub(super) fs_rx: mpsc::UnboundedReceiver<PathBuf>,
    pub(super) control_rx: mpsc::Receiver<Inbound>,
    pub(super) socket: PathBuf,
    pub(super) journal: Journal,
    /// The landing's slow part (regenerate, check) under way.
    pub(super) job: Option<tokio::task::JoinHandle<super::landing::Done>>,
    /// Why the merge queue waits (`into` checked out somewhere), until the timer
    /// looks again.
    pub(super) queue_paused: Option<String>,
    /// `ralph fleet land TASK`: lands next.
    pub(super) land_first: Option<String>,
    /// Landings in a row whose compare-and-swap found `into` moved.
    pub(super) moved_in_a_row: u32,
    /// The slow git and file work under way (rebases, cleanups, disk use).
    pub(super) chores: super::chores::Chores,
    /// The task whose landing's rebase is under way.
    pub(super) preparing: Option<String>,
}

impl Supervisor {
    async fn run(mut self, fresh: bool) -> Result<i32, RalphError> {
        let f = &self.book.fleet;
        let what = if fresh { "started" } else { "continues" };
        let head = format!(
            "fleet {} {what} in {}: {} task(s), branch {}",
            f.fleet_id,
            f.repo.display(),
            f.tasks.len(),
            f.into
        );
        self.reporter.line(&head);
        (self.book.fleet.status, self.book.fleet.clean_stop, self.book.fleet.stop_reason) =
            (FleetStatus::Running, false, None);
        self.book.save()?;
        let id = self.book.fleet.fleet_id.clone();
        self.event("fleet_started", json!({"fleet": id, "pid": std::process::id(), "fresh": fresh}));
        self.register(Status::Running);
        self.watch_task_files();
        // The locks a killed git left (the one rule: never one a live process may own).
        for lock in self.book.repo.sweep_locks() {
            let path = lock.path.display().to_string();
            self.reporter.line(&format!("removed the git lock {path}: {}", lock.why));
            self.event("git_lock_removed", json!({"path": path, "why": lock.why}));
        }
        self.reporter.lines(&self.book.reconcile()?);
        self.settle_left_behind()?;
        self.reporter.lines(&super::landing::recover(&mut self.book)?);
        self.discover()?;
        // Who sends a SIGTERM decides what it is (a process of the person's own: their
        // stop, like Ctrl+C; a service manager or a shutdown: an interruption the
        // watchdog resumes), as for a run (docs/operations.md).
        crate::os::origin::record().map_err(|e| RalphError::io("cannot record who sends SIGTERM", e))?;
        let managers = self.book.loaded.config.watch.service_managers.clone();
        let mut int = signal(SignalKind::interrupt()).map_err(|e| RalphError::io("cannot handle SIGINT", e))?;
        let mut term = signal(SignalKind::terminate()).map_err(|e| RalphError::io("cannot handle SIGTERM", e))?;
        let mut hup = signal(SignalKind::hangup()).map_err(|e| RalphError::io("cannot handle SIGHUP", e))?;
        let landing = !self.book.fleet.no_land;
        let end = loop {
            // A landing settled at once (no job to wait for) may free a slot or
            // queue an evicted task: both are looked at again before sleeping.
            while self.stopping.is_none() {
                self.start_what_fits()?;
                // Saved before anything slow (a landing's git, a worktree's walk).
                self.book.flush()?;
                if !self.land_next()? {
                    break;
                }
            }
            self.book.flush()?;
            if self.procs.count() == 0 && self.job.is_none() && self.chores.is_empty() {
                if self.stopping.is_some() {
                    break None;
                }
                if let Some(end) = core::outcome(&self.book.fleet, landing) {
                    break Some(end);
                }
            }
            let (wait_disk, wait_queue) = (self.later.is_some(), self.queue_paused.is_some());
            // The runtime hears the kernel (a task's pidfd, a chore's end) only when
            // the loop yields to it; a loop that always finds something ready would
            // otherwise hear a task's end only once it runs dry.
            tokio::task::yield_now().await;
            // A task's end first, then the chores (a worktree made before a
            // landing's rebase): they start the next task. A landing, a file event
            // or a person's request can wait a moment; none waits for ever.
            tokio::select! {
                biased;
                ended = self.procs.next() => self.on_ended(ended),
                chore = self.chores.next() => self.on_chore(chore)?,
                _ = int.recv() => if self.on_signal(Incoming::Interrupt) { break None },
                _ = term.recv() => {
                    let deliberate = crate::signal::origin::found(&managers);
                    if self.on_signal(Incoming::Terminate { deliberate }) { break None }
                }
                _ = hup.recv() => if self.on_signal(Incoming::Hangup) { break None },
                Some((request, reply)) = self.control_rx.recv() => self.on_request(request, reply),
                done = job_done(&mut self.job) => self.on_job(done)?,
                Some(path) = self.fs_rx.recv() => self.on_file(&path)?,
                () = tokio::time::sleep(DISK_RETRY), if wait_disk => self.later = None,
                () = tokio::time::sleep(QUEUE_RETRY), if wait_queue => self.queue_paused = None,
            }
        };
        self.finish(end.as_ref())
    }

    /// Tasks a previous supervisor left as starting or running: each one's ralph is
    /// adopted when it still runs, else its end is taken from its checkpoint.
    fn settle_left_behind(&mut self) -> Result<(), RalphError> {
        let active: Vec<(String, Option<PathBuf>, TaskState)> = self
            .book
            .fleet
            .tasks
            .iter()
            // A queued one too: a supervisor that died before it saved a start.
            .filter(|(_, t)| t.state.active() || t.state == TaskState::Queued && t.worktree.is_some())
            .map(|(n, t)| (n.clone(), t.worktree.clone(), t.state))
            .collect();
        for (name, worktree, state) in active {
            if let Some(pid) = worktree.as_deref().and_then(|w| self.procs.adopt(&name, w)) {
                self.reporter.line(&format!("task {name}: its ralph (pid {pid}) still runs; watching it"));
                self.event("task_adopted", json!({"task": name, "pid": pid}));
                if state == TaskState::Queued {
                    let evicted = self.book.fleet.tasks[&name].eviction.is_some();
                    self.book.set_later(&name, if evicted { TaskState::Evicted } else { TaskState::Running }, None);
                }
                self.watch_task(&name, true);
                continue;
            }
            if state == TaskState::Queued {
                continue;
            }
            // Killed while its worktree was made, or before its run saved anything:
            // no run happened there, and the worktree is made again.
            let ran = worktree.as_deref().is_some_and(|w| w.join(".agent").join("checkpoint.json").exists());
            if state == TaskState::Starting && !ran {
                if let Some(t) = self.book.fleet.tasks.get_mut(&name) {
                    t.worktree = None;
                }
                self.book.set(&name, TaskState::Queued, None)?;
                continue;
            }
            self.on_ended(Ended { task: name, pid: 0, exit: core::Exit::Unknown });
        }
        Ok(())
    }

    /// A chore ended: what it found goes into the state.
    fn on_chore(&mut self, chore: Chore) -> Result<(), RalphError> {
        match chore {
            Chore::Rebased(prep, rebased) => self.on_rebased(prep, rebased)?,
            Chore::Tidied(done) => self.on_tidied(&done)?,
            Chore::Made(name, made) => self.on_made(&name, made)?,
            Chore::Measured(name, bytes) => {
                if let Some(t) = self.book.fleet.tasks.get_mut(&name) {
                    t.disk_bytes = Some(bytes);
                    self.book.changed();
                }
            }
            Chore::Lost(why) => self.reporter.line(&format!("note: a cleanup failed ({why}); the next start does it")),
        }
        Ok(())
    }

    /// A line in the fleet's journal (`.agent/fleet/events.jsonl`): what the
    /// supervisor did, with times to the nanosecond.
    pub(super) fn event(&mut self, kind: &str, fields: serde_json::Value) {
        if let Err(e) = self.journal.append(kind, &fields) {
            tracing::warn!("cannot write the fleet's journal: {e}");
        }
    }

    fn discover(&mut self) -> Result<(), RalphError> {
        self.reporter.lines(&self.book.discover()?);
        Ok(())
    }

    /// Starts queued tasks while there are slots.
    fn start_what_fits(&mut self) -> Result<(), RalphError> {
        if self.later.is_some() || self.over_budget() {
            return Ok(());
        }
        for name in core::next_to_start(&self.book.fleet, self.book.loaded.config.fleet.max_parallel) {
            let ready = self.book.ready(&name)?;
            if !self.act(&name, ready)? {
                break;
            }
        }
        Ok(())
    }

    /// Carries out whether a task can start; `false` when no other task can now.
    fn act(&mut self, name: &str, ready: Ready) -> Result<bool, RalphError> {
        match ready {
            Ready::Go { worktree, flag, created_in } => {
                if let Some(took) = created_in {
                    self.event("worktree_created", json!({"task": name, "ms": took.as_millis() as u64}));
                }
                self.spawn(name, &worktree, flag)?;
            }
            // The task is starting (it holds its slot) while git makes it.
            Ready::Make(make) => self.chores.make(make),
            Ready::Finished => {
                self.book.set(name, TaskState::Finished, None)?;
                self.reporter.line(&format!("task {name}: finished"));
            }
            Ready::Block(why) => self.block_task(name, why)?,
            Ready::Later(why) => {
                self.reporter.line(&format!("task {name} waits: {why}; looking again in a minute"));
                self.later = Some(why);
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A task's worktree is made (or not): it starts, unless the fleet or the task
    /// was stopped meanwhile (then it waits, queued, in its worktree) or discarded.
    fn on_made(&mut self, name: &str, made: Result<std::time::Duration, NotMade>) -> Result<(), RalphError> {
        let asked = self.asked.remove(name);
        let ready = self.book.made(name, made)?;
        match (asked, ready) {
            (Some(asked @ (Asked::Discard | Asked::TaskStop)), _) => self.settle(name, asked)?,
            (_, Ready::Go { .. }) if self.stopping.is_some() => self.book.set(name, TaskState::Queued, None)?,
            (_, ready) => {
                self.act(name, ready)?;
            }
        }
        Ok(())
    }

    fn spawn(&mut self, name: &str, worktree: &Path, flag: &str) -> Result<(), RalphError> {
        let log = self.book.paths.task_log(name);
        let config = self.book.fleet.config.clone();
        let started = self.procs.start(&Start { task: name, worktree, config: &config, flag, log: &log });
        let iterations = self.book.run_view(name).map_or(0, |v| v.iterations_done);
        match started {
            Ok(pid) => {
                self.event("task_started", json!({"task": name, "pid": pid, "flag": flag}));
                let t = self.book.fleet.tasks.get_mut(name).ok_or_else(|| RalphError::Internal(name.into()))?;
                (t.started, t.paused, t.iterations_at_start, t.reason) = (true, false, iterations, None);
                let resuming = flag == "--resume" || iterations > 0;
                let evicted = t.eviction.is_some();
                // Its lock says it runs if the supervisor dies before the next save.
                self.book.set_later(name, if evicted { TaskState::Evicted } else { TaskState::Running }, None);
                let how = if resuming { "resumed" } else { "started" };
                self.reporter.line(&format!("task {name}: {how} (pid {pid}) in {}", worktree.display()));
                self.watch_task(name, true);
                self.reporter.live(name, None);
            }
            Err(e) => self.block_task(name, format!("cannot start its ralph: {e}"))?,
        }
        Ok(())
    }

    fn block_task(&mut self, name: &str, why: String) -> Result<(), RalphError> {
        self.reporter.line(&format!("task {name}: blocked: {why}"));
        self.book.set(name, TaskState::Blocked, Some(why))
    }

    /// A task's ralph ended: the core says what that means for the task.
    fn on_ended(&mut self, ended: Ended) {
        let name = ended.task.clone();
        self.event("task_exited", json!({"task": name, "pid": ended.pid}));
        self.reporter.done(&name);
        self.watch_task(&name, false);
        task::close_window_of(&self.book.paths, &name);
        let Some(t) = self.book.fleet.tasks.get(&name).cloned() else { return };
        let view = self.book.run_view(&name);
        let asked = match (self.asked.remove(&name), &self.stopping) {
            (Some(asked), _) => asked,
            (None, Some(Stopping::Signal(cause))) => Asked::FleetStop(*cause),
            (None, Some(Stopping::Cost(_))) => Asked::FleetStop(StopCause::User),
            (None, None) => Asked::Nothing,
        };
        let log = self.book.paths.task_log(&name).display().to_string();
        let next = core::on_exit(&t, view.as_ref(), ended.exit, asked, &log);
        if let Some(t) = self.book.fleet.tasks.get_mut(&name) {
            (t.paused, t.restarts) = (next.paused, next.restarts);
            if let Some(v) = &view {
                (t.iterations, t.cost_usd, t.run_id) = (v.iterations_done, v.cost_usd, Some(v.run_id.clone()));
            }
        }
        // Walking a worktree takes a while: a chore.
        if let Some(worktree) = self.book.fleet.tasks.get(&name).and_then(|t| t.worktree.clone()) {
            self.chores.measure(name.clone(), worktree);
        }
        self.book.set_later(&name, next.state, next.reason.clone());
        let exit = core::describe_exit(ended.exit);
        self.event(
            "task_ended",
            json!({"task": name, "exit": exit, "state": next.state.into_str(), "reason": next.reason}),
        );
        self.tell_end(&name, &next, ended.exit);
        if next.state == TaskState::Discarded {
            self.discarded(&name);
        }
        self.check_budget();
    }

    fn tell_end(&mut self, name: &str, next: &core::Ended, exit: core::Exit) {
        let t = &self.book.fleet.tasks[name];
        let text = match next.state {
            TaskState::Finished => format!("task {name}: finished ({} iteration(s), ${:.2})", t.iterations, t.cost_usd),
            TaskState::Queued if next.paused => format!("task {name}: paused; the next `ralph fleet` resumes it"),
            TaskState::Queued => {
                format!("task {name}: its ralph ended without a clean stop ({}); it goes on", core::describe_exit(exit))
            }
            state => {
                let why = next.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                format!("task {name}: {}{why}", state.into_str())
            }
        };
        self.reporter.line(&text);
    }

    /// A discarded task: its worktree goes when it holds nothing of a person's, its
    /// branch when asked.
    fn discarded(&mut self, name: &str) {
        let delete_branch = self.delete_branch.remove(name) == Some(true);
        self.reporter.lines(&self.book.discarded(name, delete_branch));
    }

    /// A file changed: a task's checkpoint (its live line, its cost) or a task file.
    fn on_file(&mut self, path: &Path) -> Result<(), RalphError> {
        let task = self.procs.tasks().into_iter().find(|name| {
            let wt = self.book.fleet.tasks.get(name).and_then(|t| t.worktree.clone());
            wt.is_some_and(|w| path.starts_with(w.join(".agent")))
        });
        let Some(name) = task else { return self.discover() };
        let cp = crate::state::format::read_newest(path).ok().flatten().map(|newest| newest.checkpoint);
        if let (Some(cp), Some(t)) = (&cp, self.book.fleet.tasks.get_mut(&name)) {
            (t.cost_usd, t.iterations) = (cp.usage.cost_usd, cp.progress.counters.iterations_done);
        }
        self.reporter.live(&name, cp.as_ref());
        self.check_budget();
        Ok(())
    }

    fn over_budget(&self) -> bool {
        self.book.max_cost.is_some_and(|cap| core::spent(&self.book.fleet) >= cap)
    }

    /// At `[fleet] max_cost` every task stops at once and the fleet ends unfinished.
    fn check_budget(&mut self) {
        if self.stopping.is_some() || !self.over_budget() {
            return;
        }
        let (spent, cap) = (core::spent(&self.book.fleet), self.book.max_cost.unwrap_or_default());
        let why = format!(
            "[fleet] max_cost is reached: the tasks have cost ${spent:.2} of ${cap:.2}; raise it and run `ralph fleet` \
             to go on"
        );
        self.reporter.line(&why);
        self.stop_tasks(true);
        self.abort_job();
        self.stopping = Some(Stopping::Cost(why));
    }

    /// Asks every running task to stop: after its iteration, or now.
    fn stop_tasks(&mut self, now: bool) {
        for name in self.procs.tasks() {
            self.stop_task(&name, now);
        }
    }

    fn stop_task(&mut self, name: &str, now: bool) {
        let asked = self.book.fleet.tasks.get(name).and_then(|t| t.worktree.clone()).and_then(|w| {
            let socket = crate::control::client::socket_of(&w).ok()?;
            crate::control::client::call(&socket, &crate::control::Request::Stop { now }).ok().filter(|r| r.ok)
        });
        if asked.is_none() {
            self.procs.signal(name, Signal::SIGINT);
        }
    }

    /// A signal: returns whether the supervisor leaves at once (a second Ctrl+C).
    fn on_signal(&mut self, incoming: Incoming) -> bool {
        let signal = match incoming {
            Incoming::Interrupt => Signal::SIGINT,
            Incoming::Terminate { .. } => Signal::SIGTERM,
            Incoming::Hangup => Signal::SIGHUP,
        };
        match self.interrupt.on_signal(incoming) {
            InterruptAction::Stop(cause) => {
                self.reporter
                    .line(&format!("{}: stopping every task in order (again to stop at once)", cause.signal_name()));
                // Each task's ralph stops its agent in order and saves its run; a
                // landing's check is ended (the landing starts again next time).
                self.procs.signal_all(signal);
                self.abort_job();
                self.stopping = Some(Stopping::Signal(cause));
                false
            }
            InterruptAction::ForceExit => {
                self.procs.signal_all(Signal::SIGINT);
                true
            }
            InterruptAction::Ignore | InterruptAction::Control => false,
        }
    }

    fn on_request(&mut self, request: Request, reply: oneshot::Sender<Reply>) {
        let answer = match request {
            Request::Stop { task: None, now } => {
                self.stop_tasks(now);
                self.abort_job();
                self.stopping.get_or_insert(Stopping::Signal(StopCause::User));
                let n = self.procs.count();
                Ok(format!(
                    "stopping the fleet: {n} running task(s) stop {}",
                    if now { "now" } else { "after their iteration" }
                ))
            }
            Request::Stop { task: Some(name), now } => self.stop_or_discard(&name, Asked::TaskStop, now),
            Request::Retry { task } => {
                self.book.retry(&task).inspect(|_| (self.later, self.queue_paused) = (None, None))
            }
            Request::Discard { task, delete_branch } => {
                self.delete_branch.insert(task.clone(), delete_branch);
                self.stop_or_discard(&task, Asked::Discard, true)
            }
            Request::Clean {} => self.book.clean(),
            Request::Land { task } => self.land_request(&task),
        };
        let ok = answer.is_ok();
        let message = answer.unwrap_or_else(|refused| refused);
        if ok {
            self.reporter.line(&message);
        }
        let _ = reply.send(Reply { ok, message });
    }

    /// `ralph fleet stop TASK` (`asked` is [`Asked::TaskStop`]) or `ralph fleet discard
    /// TASK` ([`Asked::Discard`]): a running task's ralph is asked to stop first.
    fn stop_or_discard(&mut self, name: &str, asked: Asked, now: bool) -> Result<String, String> {
        let t = self.book.task(name)?.clone();
        let discard = asked == Asked::Discard;
        match if discard { core::discard(name, &t) } else { core::stop(name, &t) } {
            Command::AskRun => {
                self.asked.insert(name.to_string(), asked);
                self.stop_task(name, now);
                Ok(match discard {
                    true => format!("task {name}: stopping it, then discarding it"),
                    false => format!("task {name}: stopping {}", if now { "now" } else { "after its iteration" }),
                })
            }
            Command::Set(_) => {
                self.settle(name, asked).map_err(|e| e.to_string())?;
                Ok(format!("task {name}: {}", if discard { "discarded" } else { "stopped" }))
            }
            Command::Refuse(why) => Err(why),
        }
    }

    /// A person's stop or discard of a task whose ralph does not run: its state.
    fn settle(&mut self, name: &str, asked: Asked) -> Result<(), RalphError> {
        if asked == Asked::Discard {
            self.book.set(name, TaskState::Discarded, Some("discarded by `ralph fleet discard`".into()))?;
            self.discarded(name);
            return Ok(());
        }
        self.book.set(name, TaskState::Stopped, Some("stopped by `ralph fleet stop`".into()))
    }

    fn watch_task_files(&mut self) {
        let glob = &self.book.fleet.tasks_glob;
        let fixed: Vec<&str> = glob.split('/').take_while(|c| !c.contains(['*', '?'])).collect();
        let deep = glob.split('/').count() > fixed.len() + 1;
        let dir = self.book.paths.repo.join(fixed.join("/"));
        let dir = if dir.is_dir() { dir } else { self.book.paths.repo.clone() };
        let mode = if deep { notify::RecursiveMode::Recursive } else { notify::RecursiveMode::NonRecursive };
        if let Err(e) = notify::Watcher::watch(&mut self.watcher, &dir, mode) {
            self.reporter.line(&format!("note: cannot watch {} for new task files ({e})", dir.display()));
        }
    }

    /// Starts (`on`) or ends watching the `.agent/` of a task's worktree.
    fn watch_task(&mut self, name: &str, on: bool) {
        let Some(dir) = self.book.fleet.tasks.get(name).and_then(|t| Some(t.worktree.as_ref()?.join(".agent"))) else {
            return;
        };
        let _ = match on {
            true => notify::Watcher::watch(&mut self.watcher, &dir, notify::RecursiveMode::NonRecursive),
            false => notify::Watcher::unwatch(&mut self.watcher, &dir),
        };
    }

    fn register(&self, status: Status) {
        let Some(dir) = crate::state::registry::dir() else { return };
        let f = &self.book.fleet;
        let run = (f.fleet_id.as_str(), status, jiff::Timestamp::now().to_string());
        let me = crate::state::lock::LockInfo::current();
        let env = |name: &str| std::env::var_os(name);
        let needs = crate::agent::preflight::needs(&self.book.loaded, &env);
        let mut entry = crate::state::registry::Entry::of_run(&f.repo, &self.book.loaded, run, me, needs, &env);
        entry.fleet = Some(crate::state::registry::FleetMark {
            role: crate::state::registry::FleetRole::Supervisor,
            repo: f.repo.clone(),
            task: None,
        });
        if let Err(e) = crate::state::registry::write(&dir, &entry) {
            tracing::warn!("cannot write the fleet's registry entry: {e}");
        }
    }

    /// The final state, the summary, the exit code.
    fn finish(mut self, end: Option<&FleetEnd>) -> Result<i32, RalphError> {
        let cause = if let Some(Stopping::Signal(cause)) = self.stopping { Some(cause) } else { None };
        let mut status = core::final_status(cause, end);
        if let Some(Stopping::Cost(why)) = &self.stopping {
            status = FleetStatus::Unfinished;
            self.book.fleet.stop_reason = Some(why.clone());
        }
        (self.book.fleet.status, self.book.fleet.clean_stop) = (status, true);
        self.book.save()?;
        self.event("fleet_ended", json!({"status": status.into_str(), "reason": self.book.fleet.stop_reason}));
        self.register(status.as_run_status());
        if status == FleetStatus::Finished {
            self.reporter.lines(&super::tidy::tidy(&mut self.book)?);
        }
        let landing = !self.book.fleet.no_land;
        let headline = headline(&self.book.fleet, status);
        let logs = |name: &str| self.book.paths.task_log(name).display().to_string();
        let text = report::summary(&self.book.fleet, &headline, landing, &logs);
        self.reporter.summary(&text);
        let all_done =
            self.book.fleet.tasks.values().all(|t| matches!(t.state, TaskState::Merged | TaskState::Discarded));
        if status == FleetStatus::Finished && all_done {
            self.archive();
        }
        // Nothing of the fleet runs now: git's own housekeeping, which the tasks'
        // and the queue's git calls kept off, as the repository's config has it.
        if cause.is_none()
            && let Err(e) = self.book.repo.gc_auto()
        {
            self.reporter.line(&format!("note: git gc --auto failed: {e}"));
        }
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.book.paths.socket_record);
        if let Some(lock) = self.lock.take() {
            lock.release().unwrap_or_else(|e| tracing::warn!("cannot release the fleet's lock: {e}"));
        }
        Ok(match (status, cause) {
            (_, Some(cause)) => crate::exit::code(crate::exit::Ending::Run(&crate::outcome::RunEnd::Stopped(cause))),
            (FleetStatus::Finished, None) => crate::exit::DONE,
            _ => crate::exit::FAILED,
        })
    }

    /// A finished fleet's state goes to the archive; the next `ralph fleet` here
    /// starts a new one.
    fn archive(&mut self) {
        let paths = &self.book.paths;
        let to = paths.archive.join(format!("{}.json", self.book.fleet.fleet_id));
        let moved = crate::state::private::ensure_dir(&paths.archive).and_then(|()| std::fs::rename(&paths.state, &to));
        match moved {
            Ok(()) => {
                let _ = std::fs::rename(&paths.ledger, to.with_extension("ledger.jsonl"));
                let _ = std::fs::rename(paths.dir.join(crate::state::journal::FILE), to.with_extension("events.jsonl"));
                for dir in [&paths.windows, &paths.limits] {
                    if let Ok(listing) = std::fs::read_dir(dir) {
                        listing.flatten().for_each(|e| drop(std::fs::remove_file(e.path())));
                    }
                }
                self.reporter.line(&format!("fleet {} is archived as {}", self.book.fleet.fleet_id, to.display()));
            }
            Err(e) => self.reporter.line(&format!("note: cannot archive the finished fleet: {e}")),
        }
    }
}

fn headline(fleet: &super::state::Fleet, status: FleetStatus) -> String {
    let done = fleet.tasks.values().filter(|t| matches!(t.state, TaskState::Finished | TaskState::Merged)).count();
    let total = fleet.tasks.len();
    match status {
        FleetStatus::Finished => format!("finished: {done} of {total} task(s) done"),
        FleetStatus::Stopped => format!("stopped: {done} of {total} task(s) done; `ralph fleet` continues"),
        FleetStatus::Interrupted => format!("interrupted: {done} of {total} task(s) done; `ralph fleet` continues"),
        _ => format!("unfinished: {done} of {total} task(s) done; the others need a person"),
    }
}

/// How long the queue waits before it looks again at an `into` someone has
/// checked out.
pub(super) const QUEUE_RETRY: Duration = Duration::from_secs(10);

/// The job's end; pending while there is none.
pub(super) async fn job_done(job: &mut Option<tokio::task::JoinHandle<Done>>) -> Done {
    match job.as_mut() {
        Some(handle) => handle.await.unwrap_or_else(|e| Done::Failed(format!("the landing's job failed: {e}"))),
        None => std::future::pending().await,
    }
}

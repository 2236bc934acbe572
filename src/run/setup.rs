//! Everything before the first attempt: how `ralph run` was invoked, the inputs
//! (read by `crate::inputs`, checked against `--from` and the pre-flight), the lock
//! and the lease (held by `state::hold`), the checkpoint decision (fresh, resume,
//! ask, or leave a settled run as it is), git, logging and the journal. Every problem
//! found here is reported before anything runs, and before anything changes: every
//! check that can refuse (config, goal, pre-flight, lock, lease, checkpoint, git,
//! planted links) comes first, and what set-up changes (a restored or archived
//! checkpoint, a dead run's leftovers, a branch, the journal, the logs) comes after
//! them all; a refusal gives the lock and the lease back as they were.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::config::Loaded;
use crate::error::RalphError;
use crate::events::RunEvent;
use crate::git::session::{self, GitSession, OpenError};
use crate::listeners::Signals;
use crate::report::Reporter;
use crate::state::checkpoint::{Checkpoint, InFlight};
use crate::state::format::{self, ReadError, Stale};
use crate::state::hold::Hold;
use crate::state::journal::Journal;
use crate::state::lease_file;
use crate::state::retention;
use crate::state::store;
use crate::workflow::advance;

use crate::outcome::RunEnd;
use crate::recovery::probe;
use crate::state::ownership::WhenHeld;
use crate::step::chosen::{self, Aside, Chosen, NotStarted};
use crate::step::start::{self, Refused, ResumeFlag, Start};
use crate::step::state::{Opening, Setting};

/// How `ralph run` was invoked.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub dir: PathBuf,
    pub config: Option<PathBuf>,
    pub resume: ResumeFlag,
    /// `--from PHASE`: a new run starts there, or (with `--resume`) the run moves there.
    pub from: Option<String>,
    pub quiet: bool,
    pub verbose: u8,
    /// `--allow-dirty`: a new run in a dirty git working tree keeps those changes out.
    pub allow_dirty: bool,
    pub log_format: crate::report::log::LogFormat,
}

/// A run ready to dispatch: what it was set up with and opens with, its checkpoint,
/// and what it writes to.
pub(crate) struct Ready {
    pub setting: Setting,
    pub opening: Opening,
    pub checkpoint: Checkpoint,
    pub dir: PathBuf,
    /// `None` when `checkpoint_enabled = false`.
    pub checkpoint_path: Option<PathBuf>,
    pub journal: Journal,
    pub logs_dir: PathBuf,
    pub artifacts_dir: PathBuf,
    pub reporter: Reporter,
    pub hold: Hold,
    /// Git features, when the project is in a repository (docs/git.md).
    pub git: Option<GitSession>,
    /// The control socket, bound before anything of the run changed; the run serves
    /// it once it starts.
    pub control: Option<crate::control::server::Bound>,
    /// The run is a task of a fleet (docs/fleet.md): what carries out its hooks.
    pub fleet: Option<crate::fleet::task::TaskRun>,
}

/// What setup found: a run to dispatch (with the signal handlers installed as soon
/// as the lock was taken, so a Ctrl+C from then on, at the resume question too,
/// ends ralph in order and releases the lock), or a run that stays as it is: the
/// user quit at the resume question, or (`--resume-or-start`) the run is settled
/// and keeps its exit code.
pub(crate) enum Prepared {
    Ready(Box<Ready>, Signals),
    Settled(RunEnd),
}

/// What set-up says: each event shown at once, and kept for the run's journal, which
/// opens only once the checkpoint is chosen.
pub(crate) struct Told {
    reporter: Reporter,
    events: Vec<RunEvent>,
}

impl Told {
    pub(crate) fn tell(&mut self, event: RunEvent) {
        self.reporter.event(&event);
        self.events.push(event);
    }
}

pub(crate) async fn prepare(options: &Options) -> Result<Prepared, RalphError> {
    let dir = options.dir.clone();
    // A task's worktree runs only under its fleet; nothing starts inside a task's agent.
    let fleet = crate::fleet::task::join(&dir)?;
    let (loaded, goal, templates) = read_inputs(&dir, options)?;
    let agent_dir = dir.join(".agent");
    let agent_dir_existed = agent_dir.symlink_metadata().is_ok();
    store::ensure_gitignore(&agent_dir)
        .map_err(|e| RalphError::setup(format!("cannot create {}", agent_dir.display()), e))?;
    let reporter = Reporter::new(options.quiet, std::io::stderr().is_terminal());
    reporter.header(&dir);
    let mut told = Told { reporter, events: Vec::new() };
    tell_secrets_in_inputs(&dir, &loaded, &mut told);
    // Until the run starts nothing changed: whatever stops it before then gives the
    // lock and the lease back as they were (a crashed run's record stays its mark),
    // and a `.agent/` made for it goes again.
    let mut held = GiveBack { hold: Hold::default(), made: (!agent_dir_existed).then(|| agent_dir.clone()) };
    let (mut signals, takeover) = held.take(&agent_dir, &loaded.config.watch, options.resume, &mut told)?;
    // The run's channel (ralph status, ralph stop, the agent's MCP tools), bound
    // before anything changes: a run never goes on without it.
    let control = crate::control::server::Bound::bind(&dir).map_err(|e| RalphError::Refused(e.to_string()))?;
    let enabled = loaded.config.general.workflow.checkpoint_enabled;
    let checkpoint_path = enabled.then(|| agent_dir.join("checkpoint.json"));
    // Every check that can refuse, before anything changes: what becomes of the
    // checkpoint (read, decided, resumed in memory), then git for that start.
    let chosen = choose_checkpoint(options, &loaded, &goal, checkpoint_path.as_deref(), (&mut told, &mut signals));
    let chosen = match chosen.await? {
        Ok(chosen) => chosen,
        Err((end, said)) => {
            said.into_iter().for_each(|event| told.tell(event));
            // A settled run's ralph stops cleanly (the crash of the one before it is
            // over: the run is settled); a quit at the question changes nothing.
            if end != RunEnd::Declined {
                held.release();
            }
            return Ok(Prepared::Settled(end));
        }
    };
    let tasks_glob = fleet.as_ref().map(|f| f.d.tasks_glob.as_str());
    let (resumed, git) = last_checks(&dir, &loaded, &chosen, options.allow_dirty, tasks_glob)?;
    // From here on the run changes things: it has passed every check.
    remove_leftover_temp_files(&agent_dir);
    let (mut checkpoint, interrupted, clean_stop) = carry_out(chosen, checkpoint_path.as_deref(), &mut told)?;
    let git =
        git.open(&loaded, &mut checkpoint.git, clean_stop, &mut |event| told.tell(event)).map_err(RalphError::git)?;
    let (logs_dir, journal) = open_logs(&agent_dir, &loaded, &checkpoint, enabled && !resumed, options, &mut told)?;
    let Told { reporter, events: told } = told;
    let setting = Setting {
        // Read once: the agents' configuration and environment stay as they are.
        endpoints: probe::by_phase(&loaded, &|var| std::env::var(var).ok().filter(|v| !v.is_empty()), &|path| {
            std::fs::read_to_string(path).ok()
        }),
        goal,
        templates,
        resumed,
        from: options.from.clone(),
        git: git.is_some(),
        pid: std::process::id(),
        task: fleet.as_ref().map(|f| f.d.task.clone()),
        tz: crate::report::zone(),
        loaded,
    };
    let ready = Ready {
        setting,
        opening: Opening { interrupted, takeover, told },
        checkpoint,
        dir,
        checkpoint_path,
        journal,
        logs_dir,
        artifacts_dir: agent_dir.join("artifacts"),
        reporter,
        hold: held.keep(),
        git,
        control: Some(control),
        fleet,
    };
    Ok(Prepared::Ready(Box::new(ready), signals))
}

/// The last checks before set-up changes anything: git for the start chosen (whether
/// it resumes is returned with it), and links planted where the run's state goes
/// (refused now, not half-way).
fn last_checks(
    dir: &Path,
    loaded: &Loaded,
    chosen: &Chosen,
    allow_dirty: bool,
    tasks_glob: Option<&str>,
) -> Result<(bool, session::Checked), RalphError> {
    let (resumed, git_state) = match chosen {
        Chosen::Fresh { .. } => (false, None),
        Chosen::Resume { cp, .. } => (true, cp.git.as_ref()),
    };
    let git = session::check(dir, loaded, git_state, (resumed, allow_dirty), tasks_glob).map_err(git_error)?;
    let state_files = ["events.jsonl", "logs", "artifacts"].map(|name| dir.join(".agent").join(name));
    crate::state::private::refuse_links(&state_files).map_err(|e| RalphError::setup("the state directory", e))?;
    Ok((resumed, git))
}

/// Writes killed half-way leave their temporary files; only the lock holder writes
/// here, so whatever is left is garbage.
fn remove_leftover_temp_files(agent_dir: &Path) {
    let removed =
        store::remove_leftover_temp_files(agent_dir) + store::remove_leftover_temp_files(&agent_dir.join("artifacts"));
    if removed > 0 {
        tracing::info!("removed {removed} temporary file(s) of interrupted writes");
    }
}

/// Says where the goal file or the config holds a credential (file and line).
fn tell_secrets_in_inputs(dir: &Path, loaded: &Loaded, told: &mut Told) {
    for found in crate::inputs::credentials(dir, loaded) {
        let (file, line, family) = (found.file, found.finding.line, found.finding.family.to_string());
        told.tell(RunEvent::SecretInInput { file, line, family });
    }
}

/// Git's refusal (exit 2) or failure, as set-up reports it.
fn git_error(e: OpenError) -> RalphError {
    match e {
        OpenError::Refused(refusal) => RalphError::Git(refusal),
        OpenError::Git(e) => RalphError::git(e),
    }
}

/// The config, the goal and the phases' templates, checked (an unknown `--from`
/// phase and every agent the chains may reach among them) before anything is touched.
fn read_inputs(dir: &Path, options: &Options) -> Result<(Loaded, String, Vec<String>), RalphError> {
    let (loaded, goal, templates) = crate::inputs::read_config_and_goal(dir, options.config.as_deref())?;
    if let Some(name) = options.from.as_deref() {
        // An unknown phase is a usage error before anything is touched.
        advance::start_at(&loaded.phases, loaded.repeat, name, |_| false).map_err(|e| from_error(&e, &loaded.path))?;
    }
    // Every agent the chains may reach, checked now rather than when the chain
    // gets there in the middle of the night.
    let problems = crate::agent::preflight::check_used(&loaded, dir);
    if !problems.is_empty() {
        return Err(RalphError::Preflight(problems));
    }
    Ok((loaded, goal, templates))
}

/// What set-up settles on when the run stays as it is: its end and what to say.
type Settles = (RunEnd, Vec<RunEvent>);

/// The checkpoint this run goes on with (a new one, or the one on disk resumed),
/// decided (by [`chosen::choose`]) without changing anything; `Err` when the run is
/// settled as it is (the user quit at the question, or `--resume-or-start` found it
/// over).
async fn choose_checkpoint(
    options: &Options,
    loaded: &Loaded,
    goal: &str,
    cp_path: Option<&Path>,
    (told, signals): (&mut Told, &mut Signals),
) -> Result<Result<Chosen, Settles>, RalphError> {
    let (from, agent_dir) = (options.from.as_deref(), options.dir.join(".agent"));
    let (prompt_checksum, artifacts_dir) = (crate::config::checksum(goal.as_bytes()), agent_dir.join("artifacts"));
    let has_artifact = |phase: &str| artifacts_dir.join(format!("{phase}.md")).is_file();
    // The new run's clock is read when it is chosen (after the question, if asked).
    let inputs = || chosen::Inputs {
        loaded,
        goal,
        prompt_checksum: &prompt_checksum,
        from,
        has_artifact: &has_artifact,
        now: jiff::Timestamp::now(),
        pid: std::process::id(),
    };
    let Some(cp_path) = cp_path else { return not_started(inputs().fresh(None, None), loaded) };
    let (mut existing, stale) = match read_checkpoint(cp_path, options.resume)? {
        Found::Nothing => (None, None),
        Found::Checkpoint(newest) => (Some(newest.checkpoint), newest.stale),
        Found::Unusable { label, problem } => {
            return not_started(inputs().fresh(Some(Aside::Unusable { label, problem }), None), loaded);
        }
    };
    // What the journal's newer snapshot puts in place of the file, as it is on disk.
    let restore = stale.and_then(|stale| Some((Box::new(existing.clone()?), stale)));
    // A fleet task the merge queue sent back: its completed run takes one more iteration.
    if let Some(reopened) = existing.as_mut().and_then(|cp| crate::fleet::task::reopen(&options.dir, cp, loaded)) {
        told.tell(reopened);
    }
    let mut flag = options.resume;
    let mut decision = start::decide(existing.as_ref(), flag);
    if decision == Start::Ask {
        let Some(answer) = crate::report::ask::resume(cp_path, existing.as_ref(), from, signals).await? else {
            return Ok(Err((RunEnd::Declined, Vec::new())));
        };
        flag = answer;
        decision = start::decide(existing.as_ref(), flag);
    }
    let over_nothing = existing.is_none() && flag == ResumeFlag::ResumeOrStart;
    let corrupt_aside = over_nothing.then(|| store::newest_aside(cp_path, "corrupt")).flatten();
    let chosen = chosen::choose((decision, flag), existing, restore, (cp_path, corrupt_aside), &inputs());
    not_started(chosen, loaded)
}

/// The choice as set-up reports it: a run settled as it is, or a refusal.
fn not_started(chosen: Result<Chosen, NotStarted>, loaded: &Loaded) -> Result<Result<Chosen, Settles>, RalphError> {
    match chosen {
        Ok(chosen) => Ok(Ok(chosen)),
        Err(NotStarted::Settled(end, said)) => Ok(Err((end, vec![*said]))),
        Err(NotStarted::NothingToResume(why)) => {
            Err(RalphError::Refused(format!("nothing to resume: {why}; run `ralph` to start a new run")))
        }
        Err(NotStarted::OverCorrupt(aside)) => Err(RalphError::Refused(format!(
            "there is no checkpoint, but one that did not parse is kept aside as {}; --resume-or-start does not \
             start a new run over it: repair it and move it back to checkpoint.json, or run `ralph --no-resume` once",
            aside.display()
        ))),
        Err(NotStarted::Refused(Refused::PhaseGone(message))) => Err(RalphError::Refused(message)),
        Err(NotStarted::Refused(Refused::From(e))) => Err(from_error(&e, &loaded.path)),
    }
}

/// Carries out what was chosen, now that every check has passed: the journal's
/// newer snapshot put in place, the old checkpoint set aside, the dead run's
/// leftovers ended. Returns the checkpoint, the attempt that was in flight, and
/// whether the resumed run had stopped in order.
fn carry_out(
    chosen: Chosen,
    cp_path: Option<&Path>,
    told: &mut Told,
) -> Result<(Checkpoint, Option<InFlight>, bool), RalphError> {
    match chosen {
        Chosen::Resume { cp, interrupted, said, restore, clean_stop } => {
            if let (Some((on_disk, stale)), Some(path)) = (restore, cp_path) {
                self::restore(path, &on_disk, &stale, told)?;
            }
            end_leftovers(&cp.run_id, told);
            said.into_iter().for_each(|event| told.tell(event));
            Ok((*cp, interrupted, clean_stop))
        }
        Chosen::Fresh { cp, aside, old_run } => {
            if let Some(run_id) = &old_run {
                end_leftovers(run_id, told);
            }
            match (aside, cp_path) {
                (Some(Aside::Archive), Some(path)) => {
                    let aside = store::set_aside(path, "archived")
                        .map_err(|e| RalphError::setup("cannot archive the old checkpoint", e))?;
                    told.tell(RunEvent::CheckpointArchived { aside: aside.display().to_string() });
                }
                (Some(Aside::Unusable { label, problem }), Some(path)) => {
                    let aside = store::set_aside(path, label).map_err(|io| {
                        RalphError::setup(format!("cannot set the checkpoint {} aside", path.display()), io)
                    })?;
                    let (path, aside) = (path.display().to_string(), aside.display().to_string());
                    told.tell(RunEvent::CheckpointSetAside { path, aside, problem });
                }
                _ => {}
            }
            Ok((*cp, None, false))
        }
    }
}

/// The run's logs directory (older runs' pruned, the previous journal moved in when
/// `new_run` keeps one), ralph's own log, and the journal.
fn open_logs(
    agent_dir: &Path,
    loaded: &Loaded,
    checkpoint: &Checkpoint,
    new_run: bool,
    options: &Options,
    told: &mut Told,
) -> Result<(PathBuf, Journal), RalphError> {
    if new_run {
        // The previous run's history goes with its logs, so it is pruned with them.
        match retention::move_previous_journal(agent_dir) {
            Ok(Some(to)) => tracing::info!("moved the previous run's journal to {}", to.display()),
            Ok(None) => {}
            // A planted link is refused, never moved along or followed.
            Err(e) if crate::state::private::is_refused(&e) => return Err(RalphError::setup("the journal", e)),
            Err(e) => told.tell(RunEvent::SetupWarning {
                warning: format!("cannot move the previous journal into its run's logs: {e}"),
            }),
        }
    }
    let logs_dir = agent_dir.join("logs").join(&checkpoint.run_id);
    crate::state::private::ensure_dirs(agent_dir, &Path::new("logs").join(&checkpoint.run_id))
        .map_err(|e| RalphError::setup(format!("cannot create {}", logs_dir.display()), e))?;
    let keep = loaded.config.logs.keep_runs as usize;
    match retention::prune(&agent_dir.join("logs"), Some(&checkpoint.run_id), keep) {
        Ok(pruned) if !pruned.is_empty() => {
            tracing::info!("removed the logs of {} older run(s) ([logs] keep_runs = {keep})", pruned.len());
        }
        Ok(_) => {}
        Err(e) => told.tell(RunEvent::SetupWarning { warning: format!("cannot remove old run logs: {e}") }),
    }
    let log_path = logs_dir.join("ralph.log");
    if let Some(warning) = crate::report::log::init(&log_path, options.verbose, options.log_format) {
        told.tell(RunEvent::SetupWarning { warning });
    }
    if options.verbose > 0 {
        told.tell(RunEvent::LogFile { path: log_path.display().to_string() });
    }
    let journal = if loaded.config.general.workflow.checkpoint_enabled {
        Journal::open(&agent_dir.join(crate::state::journal::FILE))
            .map_err(|e| RalphError::setup("cannot open the journal", e))?
    } else {
        Journal::disabled()
    };
    Ok((logs_dir, journal))
}

/// We hold the lock, so no ralph of that run is alive: whatever still carries its
/// run id was left behind by a crash (an agent's children outlive a kill -9 of
/// ralph) and must not go on editing the work tree.
fn end_leftovers(run_id: &str, told: &mut Told) {
    let pids = crate::process::leftovers::kill_all(run_id);
    if !pids.is_empty() {
        told.tell(RunEvent::LeftoversEnded { run_id: run_id.to_string(), pids });
    }
}

/// What is on disk for a run.
enum Found {
    Nothing,
    /// The newer of `checkpoint.json` and the journal's snapshot.
    Checkpoint(Box<format::Newest>),
    /// `--no-resume` over a checkpoint that cannot be used: it is set aside (with this
    /// label, for this problem) and the run starts fresh, in the same call.
    Unusable {
        label: &'static str,
        problem: String,
    },
}

/// Reads the checkpoint for a run, changing nothing. One that cannot be used is
/// refused and left in place, unless `--no-resume` asks to start over.
fn read_checkpoint(path: &Path, flag: ResumeFlag) -> Result<Found, RalphError> {
    match format::read_newest(path) {
        Ok(None) => Ok(Found::Nothing),
        Ok(Some(newest)) => Ok(Found::Checkpoint(Box::new(newest))),
        Err(ReadError::Format(e)) if flag == ResumeFlag::Fresh => {
            let (label, problem) = chosen::unusable(&e);
            Ok(Found::Unusable { label, problem })
        }
        Err(e) => Err(RalphError::checkpoint(path, e)),
    }
}

/// Replaces `checkpoint.json` with the journal's newer snapshot (one that does not
/// parse is set aside first, never lost) and says so.
fn restore(path: &Path, cp: &Checkpoint, stale: &Stale, told: &mut Told) -> Result<(), RalphError> {
    let why = match stale {
        Stale::Missing => "is missing".to_string(),
        Stale::Older(seq) => format!("holds save {seq}, an older one"),
        Stale::Corrupt(message) => {
            let stuck = format!("the checkpoint {} does not parse and cannot be moved aside", path.display());
            let aside = store::set_aside(path, "corrupt").map_err(|e| RalphError::setup(stuck, e))?;
            format!("does not parse ({message}) and was kept aside as {}", aside.display())
        }
    };
    store::save_json(path, cp)
        .map_err(|e| RalphError::setup(format!("cannot restore the checkpoint {}", path.display()), e))?;
    let path = path.display().to_string();
    told.tell(RunEvent::CheckpointRestored { path, why, seq: cp.seq, run_id: cp.run_id.clone() });
    Ok(())
}

/// `--from` names a phase the workflow does not have.
fn from_error(e: &advance::UnknownPhase, config: &Path) -> RalphError {
    RalphError::Usage(format!("{e} ({})", config.display()))
}

/// The lock and the lease while set-up runs: given back as they were when the run
/// does not start (a refusal, the question quit), with a `.agent/` made for it
/// removed again; kept by [`GiveBack::keep`] when it starts, released by
/// [`GiveBack::release`] when `--resume-or-start` finds the run settled.
struct GiveBack {
    hold: Hold,
    /// `.agent/`, when set-up made it.
    made: Option<PathBuf>,
}

impl GiveBack {
    /// Takes the lock of this host, then the lease (`--resume-or-start` waits for
    /// either), saying what it waits for and what it finds; the signal handlers are
    /// installed as soon as the lock is held. The lease's takeover is shown at once,
    /// and journaled first when the run starts.
    fn take(
        &mut self,
        agent_dir: &Path,
        watch: &crate::config::Watch,
        flag: ResumeFlag,
        told: &mut Told,
    ) -> Result<(Signals, Option<RunEvent>), RalphError> {
        let when_held = if flag == ResumeFlag::ResumeOrStart { WhenHeld::Wait } else { WhenHeld::Refuse };
        // A simulated host (tests) has no kernel in common with the others: only the
        // lease protects the directory then.
        if lease_file::simulated_host().is_none() {
            let path = agent_dir.join("ralph.lock");
            self.hold.take_lock(&path, when_held, &mut |e| told.tell(e)).map_err(RalphError::Lock)?;
        }
        let signals = Signals::install(&watch.service_managers)
            .map_err(|e| RalphError::io("cannot install signal handlers", e))?;
        let takeover = self.hold.take_lease(&agent_dir.join("ralph.lease"), watch, when_held, &mut |e| told.tell(e))?;
        Ok((signals, takeover.map(|t| t.event()).inspect(|event| told.reporter.event(event))))
    }

    fn keep(mut self) -> Hold {
        self.made = None;
        std::mem::take(&mut self.hold)
    }

    /// A clean stop of this ralph: the lease and the lock released (emptied).
    fn release(mut self) {
        self.made = None;
        self.hold.release(true);
    }
}

impl Drop for GiveBack {
    fn drop(&mut self) {
        self.hold.give_back();
        if let Some(dir) = self.made.take() {
            // Only what set-up itself writes there; anything else keeps the directory.
            for name in [".gitignore", "ralph.lock", "ralph.lease"] {
                let _ = std::fs::remove_file(dir.join(name));
            }
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

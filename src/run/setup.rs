//! Everything before the first attempt: the config, the goal, the templates, the
//! lock and the lease (see `ownership`), the checkpoint decision (fresh, resume,
//! ask, or leave a settled run as it is), logging and the journal. Every problem
//! found here is reported before anything runs.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::config::Loaded;
use crate::error::RalphError;
use crate::recovery::resume;
use crate::report::Reporter;
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::checkpoint::{self, Checkpoint, InFlight, Status};
use crate::state::format::{self, FormatError, ReadError, Stale};
use crate::state::journal::Journal;
use crate::state::lease_file;
use crate::state::lock::{DEAD_HOLDER_GRACE, RunLock};
use crate::state::retention;
use crate::state::store;
use crate::supervise::note::{LastTool, ToolState, Trouble};
use crate::workflow::Progress;
use crate::workflow::{advance, prompt};

use super::failure::recovery_note;
use super::ownership::{self, Lease, Takeover, WhenHeld};
use super::start::{self, Answer, Start};
use super::{Options, ResumeFlag, RunEnd};

/// A run ready to dispatch.
pub(crate) struct Ready {
    pub dir: PathBuf,
    pub loaded: Loaded,
    pub goal: String,
    /// The prompt template of each phase, in phase order.
    pub templates: Vec<String>,
    /// `None` when `checkpoint_enabled = false`.
    pub checkpoint_path: Option<PathBuf>,
    pub checkpoint: Checkpoint,
    pub journal: Journal,
    pub logs_dir: PathBuf,
    pub artifacts_dir: PathBuf,
    pub reporter: Reporter,
    pub lock: Option<RunLock>,
    pub lease: Option<Lease>,
    /// The lease was taken over from a ralph that went away (journaled at start).
    pub takeover: Option<Takeover>,
    pub resumed: bool,
    /// `--from`: the phase the run started at or was moved to, for the journal.
    pub from: Option<String>,
    /// Git features, when the project is in a repository (docs/git.md).
    pub git: Option<super::git_step::GitSession>,
    /// The attempt that was running when the previous ralph of this run died or
    /// was stopped (journaled at start as `attempt_interrupted`).
    pub interrupted: Option<InFlight>,
    /// The control socket, bound before anything of the run changed; the run serves
    /// it once it starts.
    pub control: Option<crate::control::server::Bound>,
    /// The run is a task of a fleet (docs/fleet.md): its hooks.
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

pub(crate) async fn prepare(options: &Options) -> Result<Prepared, RalphError> {
    let dir = options.dir.clone();
    // A task's worktree runs only under its fleet; nothing starts inside a task's agent.
    let fleet = crate::fleet::task::join(&dir)?;
    let (loaded, goal, templates) = read_inputs(&dir, options)?;
    let agent_dir = dir.join(".agent");
    store::ensure_gitignore(&agent_dir)
        .map_err(|e| RalphError::setup(format!("cannot create {}", agent_dir.display()), e))?;
    let reporter = Reporter::new(options.quiet, std::io::stderr().is_terminal());
    reporter.header(&dir);
    for warning in secrets_in_inputs(&dir, &loaded) {
        tracing::warn!("{warning}");
        reporter.line(&warning);
    }
    let when_held = if options.resume == ResumeFlag::ResumeOrStart { WhenHeld::Wait } else { WhenHeld::Refuse };
    // A simulated host (tests) has no kernel in common with the others: only the
    // lease protects the directory then.
    let taken = match lease_file::simulated_host() {
        Some(_) => None,
        None => Some(take_lock(&agent_dir.join("ralph.lock"), when_held, &reporter)?),
    };
    let mut signals = Signals::install().map_err(|e| RalphError::io("cannot install signal handlers", e))?;
    // Until the run starts nothing changed: a problem found before then releases
    // the lock cleanly (a dropped lock otherwise counts as an interrupted run).
    let mut lock = ReleaseUnlessKept(taken);
    // The lease on the run directory (see `ownership`), said when taken over.
    let (lease, takeover) = ownership::acquire(
        &agent_dir.join("ralph.lease"),
        &lease_file::identity(),
        &loaded.config.watch,
        when_held,
        &|line| reporter.line(line),
    )?;
    if let Some(t) = takeover.as_ref().filter(|t| !t.waited.is_zero())
        && let Some(from) = &t.from
    {
        let (pid, host, why) = (from.pid, &from.host, &t.why);
        reporter.line(&format!("took the run directory over from ralph pid {pid} on host {host}: its lease was {why}"));
    }
    // Writes killed half-way leave their temporary files; only the lock holder
    // writes here, so whatever is left is garbage.
    let removed =
        store::remove_leftover_temp_files(&agent_dir) + store::remove_leftover_temp_files(&agent_dir.join("artifacts"));
    if removed > 0 {
        tracing::info!("removed {removed} temporary file(s) of interrupted writes");
    }
    // The run's channel (ralph status, ralph stop, the agent's MCP tools), bound
    // before anything changes: a run never goes on without it.
    let control = crate::control::server::Bound::bind(&dir).map_err(|e| RalphError::ControlSocket(e.to_string()))?;
    let enabled = loaded.config.general.workflow.checkpoint_enabled;
    let checkpoint_path = enabled.then(|| agent_dir.join("checkpoint.json"));
    let chosen = choose_checkpoint(options, &loaded, &goal, checkpoint_path.as_deref(), &reporter, &mut signals);
    let (mut checkpoint, resumed, interrupted) = match chosen.await? {
        Ok(chosen) => chosen,
        Err(end) => return Ok(Prepared::Settled(end)),
    };
    let git = super::git_step::setup(&dir, &loaded, &mut checkpoint, resumed, options.allow_dirty, &reporter)?;
    let (logs_dir, journal) = open_logs(&agent_dir, &loaded, &checkpoint, enabled && !resumed, options, &reporter)?;
    Ok(Prepared::Ready(
        Box::new(Ready {
            dir,
            loaded,
            goal,
            templates,
            checkpoint_path,
            checkpoint,
            journal,
            logs_dir,
            artifacts_dir: agent_dir.join("artifacts"),
            reporter,
            lock: lock.0.take(),
            lease: Some(lease),
            takeover,
            resumed,
            from: options.from.clone(),
            git,
            interrupted,
            control: Some(control),
            fleet,
        }),
        signals,
    ))
}

/// The config, the goal and the phases' templates, checked (an unknown `--from`
/// phase and every agent the chains may reach among them) before anything is touched.
fn read_inputs(dir: &Path, options: &Options) -> Result<(Loaded, String, Vec<String>), RalphError> {
    let (loaded, goal, templates) = read_config_and_goal(dir, options.config.as_deref())?;
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

/// The config, the goal in the prompt file (checked) and the phases' templates: what
/// a run and `--dry-run` both start from.
pub(crate) fn read_config_and_goal(
    dir: &Path,
    config: Option<&Path>,
) -> Result<(Loaded, String, Vec<String>), RalphError> {
    let mut loaded = super::config_file::load(&super::config_file::find(dir, config)?)?;
    // A fleet task's goal is its task file; the rest resolves in the main checkout.
    crate::fleet::task::adapt(dir, &mut loaded);
    let prompt_path = dir.join(&loaded.config.general.prompt);
    let goal = read_prompt(&prompt_path, &loaded.path)?;
    if let Some(problem) = crate::workflow::goal::check(&goal) {
        return Err(RalphError::Goal { path: prompt_path, problem });
    }
    let templates = load_templates(dir, &loaded)?;
    Ok((loaded, goal, templates))
}

/// A credential in the goal file or the config, named by file and line (never by
/// value). The agent gets the goal as written; from here on everything ralph writes
/// hides the values found. Any goal file (a fleet's task file too) goes through
/// `secrets::found::check_goal_file`.
pub(crate) fn secrets_in_inputs(dir: &Path, loaded: &Loaded) -> Vec<String> {
    let goal = &loaded.config.general.prompt;
    let config = loaded.path.strip_prefix(dir).unwrap_or(&loaded.path);
    [(dir.join(goal), goal.as_path()), (loaded.path.clone(), config)]
        .iter()
        .flat_map(|(path, shown)| crate::secrets::found::check_goal_file(path, &shown.display().to_string()))
        .map(|found| found.to_string())
        .collect()
}

/// The checkpoint this run goes on with: a new one, or the one on disk resumed
/// (with the attempt that was in flight); `Err` when the run is settled as it is.
async fn choose_checkpoint(
    options: &Options,
    loaded: &Loaded,
    goal: &str,
    cp_path: Option<&Path>,
    reporter: &Reporter,
    signals: &mut Signals,
) -> Result<Result<(Checkpoint, bool, Option<InFlight>), RunEnd>, RalphError> {
    let (from, agent_dir) = (options.from.as_deref(), options.dir.join(".agent"));
    let (prompt_checksum, artifacts_dir) = (checksum(goal.as_bytes()), agent_dir.join("artifacts"));
    let fresh = || fresh_checkpoint(loaded, &prompt_checksum, from, &artifacts_dir).map(|cp| Ok((cp, false, None)));
    let Some(cp_path) = cp_path else { return fresh() };
    let mut existing = load_checkpoint(cp_path, options.resume, reporter)?;
    if let Some(cp) = &existing {
        end_leftovers(&cp.run_id, reporter);
    }
    // A fleet task the merge queue sent back: its completed run takes one more iteration.
    if let Some(line) = existing.as_mut().and_then(|cp| crate::fleet::task::reopen(&options.dir, cp, loaded)) {
        reporter.line(&line);
    }
    let mut flag = options.resume;
    let mut decision = start::decide(existing.as_ref(), flag);
    if decision == Start::Ask {
        let Some(answer) = ask(cp_path, existing.as_ref(), from, signals).await? else {
            return Ok(Err(RunEnd::Declined));
        };
        flag = answer;
        decision = start::decide(existing.as_ref(), flag);
    }
    match (decision, existing) {
        (Start::Resume, Some(cp)) => {
            let interrupted = cp.in_flight.clone();
            Ok(Ok((resume(cp, loaded, goal, &prompt_checksum, from, reporter)?, true, interrupted)))
        }
        (Start::ArchiveThenFresh, Some(_)) => {
            let aside = store::set_aside(cp_path, "archived")
                .map_err(|e| RalphError::setup("cannot archive the old checkpoint", e))?;
            reporter.line(&format!("archived the previous checkpoint as {}", aside.display()));
            fresh()
        }
        (Start::Settled, Some(cp)) => Ok(Err(settled(&cp, reporter))),
        (Start::NothingToResume, existing) => {
            let why = match existing {
                Some(cp) => format!("the run {} is {}", cp.run_id, cp.status.as_str()),
                None => format!("there is no checkpoint at {}", cp_path.display()),
            };
            Err(RalphError::NothingToResume(format!("nothing to resume: {why}; run `ralph` to start a new run")))
        }
        (_, None) if flag == ResumeFlag::ResumeOrStart => {
            refuse_over_corrupt(&agent_dir)?;
            fresh()
        }
        _ => fresh(),
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
    reporter: &Reporter,
) -> Result<(PathBuf, Journal), RalphError> {
    if new_run {
        // The previous run's history goes with its logs, so it is pruned with them.
        match retention::move_previous_journal(agent_dir) {
            Ok(Some(to)) => tracing::info!("moved the previous run's journal to {}", to.display()),
            Ok(None) => {}
            // A planted link is refused, never moved along or followed.
            Err(e) if crate::state::private::is_refused(&e) => return Err(RalphError::setup("the journal", e)),
            Err(e) => reporter.line(&format!("note: cannot move the previous journal into its run's logs: {e}")),
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
        Err(e) => reporter.line(&format!("note: cannot remove old run logs: {e}")),
    }
    let log_path = logs_dir.join("ralph.log");
    if let Some(warning) = crate::report::log::init(&log_path, options.verbose, options.log_format) {
        reporter.line(&format!("note: {warning}"));
    }
    if options.verbose > 0 {
        reporter.line(&format!("log: {}", log_path.display()));
    }
    let journal = if loaded.config.general.workflow.checkpoint_enabled {
        Journal::open(&agent_dir.join(crate::state::journal::FILE))
            .map_err(|e| RalphError::setup("cannot open the journal", e))?
    } else {
        Journal::disabled()
    };
    Ok((logs_dir, journal))
}

/// No checkpoint, but one that did not parse was kept aside: that run is not over,
/// and a job engine restarting ralph must not start a new one over its work tree
/// (a crash never leaves a torn checkpoint; a person has to look).
fn refuse_over_corrupt(agent_dir: &Path) -> Result<(), RalphError> {
    let Ok(entries) = std::fs::read_dir(agent_dir) else { return Ok(()) };
    let newest = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("checkpoint.corrupt-"))
        .max();
    match newest {
        None => Ok(()),
        Some(name) => Err(RalphError::ResumeMismatch(format!(
            "there is no checkpoint, but one that did not parse is kept aside as {}; --resume-or-start does not \
             start a new run over it: repair it and move it back to checkpoint.json, or run `ralph --no-resume` once",
            agent_dir.join(name).display()
        ))),
    }
}

/// The end of a run `--resume-or-start` leaves as it is, said in one line.
fn settled(cp: &Checkpoint, reporter: &Reporter) -> RunEnd {
    let reason = cp.stop_reason.clone().unwrap_or_else(|| "no reason recorded".to_string());
    let end = match cp.status {
        Status::Failed => RunEnd::Failed(reason),
        Status::Blocked => RunEnd::Blocked(reason),
        Status::Paused => RunEnd::Stopped(cp.stop_cause.unwrap_or(StopCause::User)),
        _ => RunEnd::Completed,
    };
    if end == RunEnd::Completed {
        reporter.line(&format!("the run {} is already completed; nothing to do", cp.run_id));
    } else {
        reporter.line(&format!(
            "the run {} is {}{}; --resume-or-start leaves it as it is (`ralph --resume` continues it)",
            cp.run_id,
            cp.status.as_str(),
            cp.stop_reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
        ));
    }
    end
}

/// Takes the flock of this host; `--resume-or-start` waits while another ralph of
/// this host holds it, the other modes refuse (after [`DEAD_HOLDER_GRACE`] when the
/// recorded holder is dead).
fn take_lock(path: &Path, when_held: WhenHeld, reporter: &Reporter) -> Result<RunLock, RalphError> {
    let mut told = false;
    let started = std::time::Instant::now();
    loop {
        match crate::state::lock::acquire(path) {
            Ok(acquired) => {
                if let Some(stale) = &acquired.stale {
                    reporter.line(&format!(
                        "the previous ralph here (pid {} on {}, started {}) ended without a clean stop: its run was interrupted",
                        stale.pid,
                        stale.host,
                        crate::report::clock::stamp(&stale.started_at, &crate::report::clock::zone())
                    ));
                } else if acquired.stale_unreadable {
                    reporter.line(
                        "the previous ralph here ended without a clean stop (its lock file does not parse): its run was interrupted",
                    );
                }
                return Ok(acquired.lock);
            }
            Err(crate::state::lock::LockError::Held { info: Some(holder), .. })
                if !holder.process_alive() && started.elapsed() < DEAD_HOLDER_GRACE =>
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e @ crate::state::lock::LockError::Held { .. }) if when_held == WhenHeld::Wait => {
                if !told {
                    reporter.line(&format!("{e}; waiting for it (--resume-or-start)"));
                    told = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            Err(e) => return Err(RalphError::Lock(e)),
        }
    }
}

/// We hold the lock, so no ralph of that run is alive: whatever still carries its
/// run id was left behind by a crash (an agent's children outlive a kill -9 of
/// ralph) and must not go on editing the work tree.
fn end_leftovers(run_id: &str, reporter: &Reporter) {
    let killed = crate::process::leftovers::kill_all(run_id);
    if !killed.is_empty() {
        reporter.line(&format!(
            "ended {} left behind by the interrupted run {run_id}: pids {killed:?}",
            if killed.len() == 1 { "1 process".to_string() } else { format!("{} processes", killed.len()) }
        ));
    }
}

/// The prompt template of each phase: its file, or the built-in one.
pub(crate) fn load_templates(dir: &Path, loaded: &Loaded) -> Result<Vec<String>, RalphError> {
    loaded
        .phases
        .iter()
        .map(|phase| match &phase.prompt {
            None => Ok(prompt::builtin(&phase.name).to_string()),
            Some(rel) => read_prompt(&dir.join(rel), &loaded.path),
        })
        .collect()
}

/// A prompt file (the goal or a phase's template); its error names the config too.
fn read_prompt(path: &Path, config: &Path) -> Result<String, RalphError> {
    std::fs::read_to_string(path).map_err(|source| RalphError::Prompt {
        path: path.to_path_buf(),
        config: config.to_path_buf(),
        source,
    })
}

/// Reads the checkpoint for a run: the newer of `checkpoint.json` and the journal's
/// snapshot, put in place of the file when it is the journal's. With `--no-resume` a
/// checkpoint that cannot be used is set aside and the run starts fresh in the same
/// call: the user asked to start over, and the file is kept.
fn load_checkpoint(path: &Path, flag: ResumeFlag, reporter: &Reporter) -> Result<Option<Checkpoint>, RalphError> {
    match format::read_newest(path) {
        Ok(None) => Ok(None),
        Ok(Some(newest)) => {
            if let Some(stale) = &newest.stale {
                restore(path, &newest.checkpoint, stale, reporter)?;
            }
            Ok(Some(newest.checkpoint))
        }
        Err(ReadError::Format(e)) if flag == ResumeFlag::Fresh => {
            let (label, problem) = match &e {
                FormatError::Corrupt(message) => ("corrupt", format!("does not parse ({message})")),
                other => ("archived", format!("cannot be used ({other})")),
            };
            let aside = store::set_aside(path, label)
                .map_err(|io| RalphError::setup(format!("cannot set the checkpoint {} aside", path.display()), io))?;
            reporter.line(&format!(
                "the checkpoint {} {problem}; it was kept aside as {}; starting fresh",
                path.display(),
                aside.display()
            ));
            Ok(None)
        }
        // Only a file that does not parse is set aside; the others are left in place.
        Err(ReadError::Format(FormatError::Corrupt(message))) => Err(match store::set_aside(path, "corrupt") {
            Ok(aside) => RalphError::CheckpointCorrupt { path: path.to_path_buf(), aside, message },
            Err(e) => RalphError::setup(
                format!("the checkpoint {} does not parse ({message}) and cannot be moved aside", path.display()),
                e,
            ),
        }),
        Err(e) => Err(refusal(path, e)),
    }
}

/// Replaces `checkpoint.json` with the journal's newer snapshot (one that does not
/// parse is set aside first, never lost) and says so.
fn restore(path: &Path, cp: &Checkpoint, stale: &Stale, reporter: &Reporter) -> Result<(), RalphError> {
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
    reporter.line(&format!(
        "note: the checkpoint {} {why}; restored save {} of run {} from the journal (ralph or the machine stopped \
         before the file reached the disk)",
        path.display(),
        cp.seq,
        cp.run_id
    ));
    Ok(())
}

/// The error for a checkpoint that is refused and left where it is.
pub(crate) fn refusal(path: &Path, error: ReadError) -> RalphError {
    match error {
        ReadError::Format(FormatError::TooNew { version }) => {
            RalphError::CheckpointTooNew { path: path.to_path_buf(), version, supported: checkpoint::VERSION }
        }
        ReadError::Format(FormatError::Invalid { field, problem }) => {
            RalphError::CheckpointInvalid { path: path.to_path_buf(), field, problem }
        }
        ReadError::Format(FormatError::Corrupt(message)) => RalphError::Usage(format!(
            "the checkpoint {} does not parse ({message}); `ralph --no-resume` sets it aside and starts fresh",
            path.display()
        )),
        ReadError::Io { path, source } => RalphError::setup(format!("cannot read {}", path.display()), source),
    }
}

/// The user's choice; `None` for "quit".
async fn ask(
    path: &Path,
    existing: Option<&Checkpoint>,
    from: Option<&str>,
    signals: &mut Signals,
) -> Result<Option<ResumeFlag>, RalphError> {
    let Some(cp) = existing else { return Ok(Some(ResumeFlag::Fresh)) };
    let needed = || RalphError::ResumeChoiceNeeded {
        path: path.to_path_buf(),
        status: cp.status.as_str().to_string(),
        phase: cp.progress.position.phase_name.clone(),
        iteration: cp.progress.position.iteration,
        from: from.map(str::to_string),
    };
    let at = from.map(|p| format!(" at phase {p}")).unwrap_or_default();
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(needed());
    }
    let mut stderr = std::io::stderr();
    for _ in 0..3 {
        let _ = write!(
            stderr,
            "An unfinished run ({}, phase {}, iteration {}) is here. [r]esume it{at}, start [n]ew{at} (archives it), \
             or [q]uit? [r] ",
            cp.status.as_str(),
            cp.progress.position.phase_name,
            cp.progress.position.iteration
        );
        let _ = stderr.flush();
        let Some(line) = read_answer(signals).await? else { break };
        match start::parse_answer(&line) {
            Some(Answer::Flag(flag)) => return Ok(Some(flag)),
            Some(Answer::Quit) => return Ok(None),
            None => {}
        }
    }
    Err(needed())
}

/// One line from the terminal, or `None` at its end. The read blocks, so it runs on
/// its own thread while the signals are watched here: a Ctrl+C at the question
/// stops ralph at once (the thread ends with the process).
async fn read_answer(signals: &mut Signals) -> Result<Option<String>, RalphError> {
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line);
        let _ = tx.send(read.is_ok_and(|n| n > 0).then_some(line));
    });
    loop {
        tokio::select! {
            answer = &mut rx => return Ok(answer.unwrap_or(None)),
            action = signals.next() => match action {
                InterruptAction::Stop(cause) => return Err(RalphError::StoppedBeforeStart(cause)),
                // The control socket listens only once the run has started.
                InterruptAction::ForceExit | InterruptAction::Ignore | InterruptAction::Control => {}
            },
        }
    }
}

/// A new run: at the first phase, or at `from` reusing the earlier phases' results
/// that the last run left in `artifacts_dir`.
fn fresh_checkpoint(
    loaded: &Loaded,
    prompt_checksum: &str,
    from: Option<&str>,
    artifacts_dir: &Path,
) -> Result<Checkpoint, RalphError> {
    let (now, first) = (jiff::Timestamp::now(), loaded.phases.first().map(|p| p.name.as_str()).unwrap_or(""));
    let has_artifact = |phase: &str| artifacts_dir.join(format!("{phase}.md")).is_file();
    let progress = match from {
        Some(name) => advance::start_at(&loaded.phases, loaded.repeat, name, has_artifact)
            .map_err(|e| from_error(&e, &loaded.path))?,
        None => {
            let mut progress = Progress::new(first);
            advance::fit_pass(&mut progress.position, 1, loaded.repeat);
            progress
        }
    };
    Ok(Checkpoint {
        version: checkpoint::VERSION,
        seq: 0,
        run_id: format!("{}-{}", now.strftime("%Y%m%dT%H%M%SZ"), std::process::id()),
        status: Status::Running,
        clean_stop: false,
        stop_cause: None,
        stop_reason: None,
        progress,
        in_flight: None,
        last_error: None,
        usage: Default::default(),
        phase_usage: Default::default(),
        elapsed_secs: 0.0,
        config_path: loaded.path.display().to_string(),
        config_checksum: loaded.checksum.clone(),
        prompt_checksum: prompt_checksum.to_string(),
        started_at: now,
        updated_at: now,
        git: None,
        agent_checkpoint: None,
        fleet_evictions: 0,
    })
}

/// `--from` names a phase the workflow does not have.
fn from_error(e: &advance::UnknownPhase, config: &Path) -> RalphError {
    RalphError::Usage(format!("{e} ({})", config.display()))
}

/// Continues `cp` under the current config: same phase, iteration, agent and session.
fn resume(
    mut cp: Checkpoint,
    loaded: &Loaded,
    goal: &str,
    prompt_checksum: &str,
    from: Option<&str>,
    reporter: &Reporter,
) -> Result<Checkpoint, RalphError> {
    // An attempt still in flight means ralph ended without recording it (a crash,
    // kill -9, a power cut): it continues its session.
    let in_flight = cp.in_flight.take();
    if let Some(session) = in_flight.as_ref().and_then(|f| f.session.clone()) {
        cp.progress.resume_session = Some(session);
    }
    let plan = resume_plan(&cp, loaded, prompt_checksum);
    for change in &plan.changes {
        reporter.line(&format!("note: {change}"));
    }
    let pos = &mut cp.progress.position;
    let index = plan.phase.ok_or_else(|| {
        RalphError::ResumeMismatch(format!(
            "the checkpoint stands in phase {}, which {} no longer has; restore that phase or run `ralph --no-resume`",
            pos.phase_name,
            loaded.path.display()
        ))
    })?;
    (pos.phase, pos.agent_index) = (index, plan.agent_index);
    if plan.agent_changed {
        cp.progress.counters.agent_failures = 0;
    }
    if !plan.keep_session {
        // Another agent (or kind) would not know the session: a fresh one starts.
        cp.progress.resume_session = None;
    }
    let pos = &mut cp.progress.position;
    // The pass continues exactly, within what the (maybe changed) config allows.
    let pass = pos.pass;
    advance::fit_pass(pos, pass, loaded.repeat);
    if matches!(cp.status, Status::Failed | Status::Blocked) {
        // The user resumes a stopped run after fixing something: the iteration gets
        // a fresh budget; the run's totals are kept.
        cp.progress.renew_budgets();
    }
    // The attempt ralph lost track of is told that the last tool call it started
    // has an unknown outcome. This replaces any older note: the crash is the latest
    // thing that happened to the iteration.
    if let Some(in_flight) = in_flight {
        let tool = in_flight.tool.map(|t| LastTool {
            name: t.name,
            input_summary: t.input,
            state: ToolState::StartedNoResult,
        });
        cp.progress.recovery_note = Some(recovery_note(&cp.progress, &loaded.phases, goal, Trouble::Interrupted, tool));
    }
    if let Some(name) = from {
        let old = cp.progress.position.phase_name.clone();
        advance::move_to(&mut cp.progress, &loaded.phases, loaded.repeat, name)
            .map_err(|e| from_error(&e, &loaded.path))?;
        reporter.line(&format!("moving the run from phase {old} to phase {name} (--from)"));
    }
    let pos = &cp.progress.position;
    reporter.line(&format!(
        "resuming run {} ({}): phase {}{}, iteration {}, agent #{}{}",
        cp.run_id,
        cp.status.as_str(),
        pos.phase_name,
        pos.passes.map(|n| format!(", pass {} of {n}", pos.pass)).unwrap_or_default(),
        pos.iteration,
        pos.agent_index + 1,
        cp.progress.resume_session.as_ref().map(|s| format!(", session {s}")).unwrap_or_default()
    ));
    (cp.status, cp.clean_stop, cp.stop_cause, cp.stop_reason) = (Status::Running, false, None, None);
    cp.config_path = loaded.path.display().to_string();
    cp.config_checksum = loaded.checksum.clone();
    cp.prompt_checksum = prompt_checksum.to_string();
    Ok(cp)
}

/// What `--resume` of `cp` does under the config and goal found now (also shown
/// by `--inspect-checkpoint`).
pub(crate) fn resume_plan(cp: &Checkpoint, loaded: &Loaded, prompt_checksum: &str) -> resume::Plan {
    let config_name = loaded.path.display().to_string();
    let kind = |name: &str| loaded.config.agents.get(name).map(|a| a.kind);
    resume::plan(
        resume::Recorded {
            progress: &cp.progress,
            config_checksum: &cp.config_checksum,
            goal_checksum: &cp.prompt_checksum,
        },
        resume::Current {
            config_name: &config_name,
            config_checksum: &loaded.checksum,
            goal_checksum: prompt_checksum,
            phases: &loaded.phases,
            kind: &kind,
        },
    )
}

/// sha256, hex.
pub(crate) fn checksum(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Releases the run lock cleanly when set-up fails before the run starts.
struct ReleaseUnlessKept(Option<crate::state::lock::RunLock>);

impl Drop for ReleaseUnlessKept {
    fn drop(&mut self) {
        if let Some(lock) = self.0.take() {
            let _ = lock.release();
        }
    }
}

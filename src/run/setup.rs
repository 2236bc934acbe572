//! Everything before the first attempt: the config, the goal, the templates, the
//! lock and the lease (see `ownership`), the checkpoint decision (fresh, resume,
//! ask, or leave a settled run as it is), logging and the journal. Every problem
//! found here is reported before anything runs.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::config::{self, Loaded};
use crate::error::RalphError;
use crate::report::Reporter;
use crate::state::checkpoint::{self, Checkpoint, InFlight, Status};
use crate::state::journal::Journal;
use crate::state::lock::{LockError, RunLock};
use crate::state::store::{self, StoreError};
use crate::workflow::Progress;
use crate::workflow::prompt;

use super::ownership::{self, Lease, Takeover, WhenHeld};
use super::start::{self, Start};
use super::{Options, ResumeFlag, RunEnd};
use crate::signal::StopCause;
use crate::state::lease_file;

/// A run ready to dispatch.
pub struct Ready {
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
    /// The attempt that was running when the previous ralph of this run died or
    /// was stopped (journaled at start as `attempt_interrupted`).
    pub interrupted: Option<InFlight>,
}

/// What setup found: a run to dispatch, or (`--resume-or-start`) a run that is
/// already settled and keeps its exit code.
pub enum Prepared {
    Ready(Box<Ready>),
    Settled(RunEnd),
}

pub fn prepare(options: &Options) -> Result<Prepared, RalphError> {
    let dir = options.dir.clone();
    let path = config::find(&dir, options.config.as_deref())?;
    let loaded = config::load(&path)?;
    let prompt_path = dir.join(&loaded.config.general.prompt);
    let goal = std::fs::read_to_string(&prompt_path).map_err(|source| RalphError::Prompt {
        path: prompt_path.clone(),
        config: path.clone(),
        source,
    })?;
    let templates = load_templates(&dir, &loaded)?;

    let agent_dir = dir.join(".agent");
    store::ensure_gitignore(&agent_dir)
        .map_err(|e| RalphError::io(format!("cannot create {}", agent_dir.display()), e))?;
    let reporter = Reporter::new(options.quiet, std::io::stderr().is_terminal());
    let when_held = if options.resume == ResumeFlag::ResumeOrStart { WhenHeld::Wait } else { WhenHeld::Refuse };
    // A simulated host (tests) has no kernel in common with the others: only the
    // lease protects the directory then.
    let lock = match lease_file::simulated_host() {
        Some(_) => None,
        None => Some(take_lock(&agent_dir.join("ralph.lock"), when_held, &reporter)?),
    };
    let (lease, takeover) = ownership::acquire(
        &agent_dir.join("ralph.lease"),
        &lease_file::identity(),
        loaded.config.watch.lease_timeout,
        when_held,
        &|line| reporter.line(line),
    )?;
    if let Some(t) = takeover.as_ref().filter(|t| !t.waited.is_zero())
        && let Some(from) = &t.from
    {
        reporter.line(&format!(
            "took the run directory over from ralph pid {} on host {}: its lease was {}",
            from.pid, from.host, t.why
        ));
    }

    let enabled = loaded.config.general.workflow.checkpoint_enabled;
    let checkpoint_path = enabled.then(|| agent_dir.join("checkpoint.json"));
    let prompt_checksum = checksum(goal.as_bytes());
    let mut interrupted = None;
    let (checkpoint, resumed) = match &checkpoint_path {
        None => (fresh_checkpoint(&loaded, &prompt_checksum), false),
        Some(cp_path) => {
            let existing = load_checkpoint(cp_path)?;
            if let Some(cp) = &existing {
                end_leftovers(&cp.run_id, &reporter);
            }
            let mut flag = options.resume;
            let mut decision = start::decide(existing.as_ref(), flag);
            if decision == Start::Ask {
                flag = ask(cp_path, existing.as_ref())?;
                decision = start::decide(existing.as_ref(), flag);
            }
            match (decision, existing) {
                (Start::Resume, Some(cp)) => {
                    interrupted = cp.in_flight.clone();
                    (resume(cp, &loaded, &prompt_checksum, &reporter)?, true)
                }
                (Start::ArchiveThenFresh, Some(_)) => {
                    let aside = store::set_aside(cp_path, "archived")
                        .map_err(|e| RalphError::io("cannot archive the old checkpoint", e))?;
                    reporter.line(&format!("archived the previous checkpoint as {}", aside.display()));
                    (fresh_checkpoint(&loaded, &prompt_checksum), false)
                }
                (Start::Settled, Some(cp)) => return Ok(Prepared::Settled(settled(&cp, &reporter))),
                (Start::NothingToResume, existing) => {
                    let why = match existing {
                        Some(cp) => format!("the run {} is {}", cp.run_id, cp.status.as_str()),
                        None => format!("there is no checkpoint at {}", cp_path.display()),
                    };
                    return Err(RalphError::NothingToResume(format!(
                        "nothing to resume: {why}; run `ralph` to start a new run"
                    )));
                }
                (_, None) if flag == ResumeFlag::ResumeOrStart => {
                    refuse_over_corrupt(&agent_dir)?;
                    (fresh_checkpoint(&loaded, &prompt_checksum), false)
                }
                _ => (fresh_checkpoint(&loaded, &prompt_checksum), false),
            }
        }
    };

    let logs_dir = agent_dir.join("logs").join(&checkpoint.run_id);
    std::fs::create_dir_all(&logs_dir)
        .map_err(|e| RalphError::io(format!("cannot create {}", logs_dir.display()), e))?;
    crate::report::log::init(&logs_dir.join("ralph.log"), options.verbose);
    let journal = if enabled {
        Journal::open(&agent_dir.join("events.jsonl")).map_err(|e| RalphError::io("cannot open the journal", e))?
    } else {
        Journal::disabled()
    };
    Ok(Prepared::Ready(Box::new(Ready {
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
        lock,
        lease: Some(lease),
        takeover,
        resumed,
        interrupted,
    })))
}

/// No checkpoint, but one that did not parse was kept aside: that run is not over,
/// and a job engine restarting ralph must not start a new one over its work tree
/// (a crash never leaves a torn checkpoint; a person has to look).
fn refuse_over_corrupt(agent_dir: &Path) -> Result<(), RalphError> {
    let Ok(entries) = std::fs::read_dir(agent_dir) else { return Ok(()) };
    let mut corrupt: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("checkpoint.corrupt-"))
        .collect();
    corrupt.sort();
    match corrupt.last() {
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
/// this host holds it, the other modes refuse.
fn take_lock(path: &Path, when_held: WhenHeld, reporter: &Reporter) -> Result<RunLock, RalphError> {
    let mut told = false;
    loop {
        match crate::state::lock::acquire(path) {
            Ok(acquired) => {
                if let Some(stale) = &acquired.stale {
                    reporter.line(&format!(
                        "the previous ralph here (pid {} on {}, started {}) ended without a clean stop: its run was interrupted",
                        stale.pid, stale.host, stale.started_at
                    ));
                }
                return Ok(acquired.lock);
            }
            Err(e @ LockError::Held { .. }) if when_held == WhenHeld::Wait => {
                if !told {
                    reporter.line(&format!("{e}; waiting for it (--resume-or-start)"));
                    told = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            Err(e @ LockError::Held { .. }) => return Err(RalphError::Locked(e.to_string())),
            Err(other) => {
                return Err(RalphError::io("cannot take the run lock", std::io::Error::other(other.to_string())));
            }
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
            "ended {} process(es) left behind by the interrupted run {run_id}: pids {killed:?}",
            killed.len()
        ));
    }
}

fn load_templates(dir: &Path, loaded: &Loaded) -> Result<Vec<String>, RalphError> {
    loaded
        .phases
        .iter()
        .map(|phase| match &phase.prompt {
            None => Ok(prompt::builtin(&phase.name).to_string()),
            Some(rel) => {
                let path = dir.join(rel);
                std::fs::read_to_string(&path).map_err(|source| RalphError::Prompt {
                    path,
                    config: loaded.path.clone(),
                    source,
                })
            }
        })
        .collect()
}

fn load_checkpoint(path: &Path) -> Result<Option<Checkpoint>, RalphError> {
    let corrupt = |message: String| match store::set_aside(path, "corrupt") {
        Ok(aside) => RalphError::CheckpointCorrupt { path: path.to_path_buf(), aside, message },
        Err(e) => RalphError::io(
            format!("the checkpoint {} does not parse ({message}) and cannot be moved aside", path.display()),
            e,
        ),
    };
    match store::load_json::<serde_json::Value>(path) {
        Ok(None) => Ok(None),
        Ok(Some(value)) => {
            let version = value.get("version").and_then(serde_json::Value::as_u64);
            if version != Some(u64::from(checkpoint::VERSION)) {
                return Err(corrupt(format!(
                    "format version {} is not the version {} this ralph reads",
                    version.map_or_else(|| "(none)".to_string(), |v| v.to_string()),
                    checkpoint::VERSION
                )));
            }
            serde_json::from_value(value).map(Some).map_err(|e| corrupt(e.to_string()))
        }
        Err(StoreError::Corrupt { message, .. }) => Err(corrupt(message)),
        Err(StoreError::Io { path, source }) => Err(RalphError::io(format!("cannot read {}", path.display()), source)),
    }
}

fn ask(path: &Path, existing: Option<&Checkpoint>) -> Result<ResumeFlag, RalphError> {
    let Some(cp) = existing else { return Ok(ResumeFlag::Fresh) };
    let needed = || RalphError::ResumeChoiceNeeded {
        path: path.to_path_buf(),
        status: cp.status.as_str().to_string(),
        phase: cp.progress.position.phase_name.clone(),
        iteration: cp.progress.position.iteration,
    };
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(needed());
    }
    let mut stderr = std::io::stderr();
    let mut line = String::new();
    for _ in 0..3 {
        let _ = write!(
            stderr,
            "An unfinished run ({}, phase {}, iteration {}) is here. [r]esume it, start [n]ew (archives it), or [q]uit? [r] ",
            cp.status.as_str(),
            cp.progress.position.phase_name,
            cp.progress.position.iteration
        );
        let _ = stderr.flush();
        line.clear();
        if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(flag) = start::parse_answer(&line) {
            return Ok(flag);
        }
        if line.trim().eq_ignore_ascii_case("q") {
            break;
        }
    }
    Err(needed())
}

fn fresh_checkpoint(loaded: &Loaded, prompt_checksum: &str) -> Checkpoint {
    let now = now();
    let first = loaded.phases.first().map(|p| p.name.as_str()).unwrap_or("");
    Checkpoint {
        version: checkpoint::VERSION,
        run_id: new_run_id(),
        status: Status::Running,
        clean_stop: false,
        stop_cause: None,
        stop_reason: None,
        progress: Progress::new(first),
        in_flight: None,
        last_error: None,
        usage: Default::default(),
        phase_usage: Default::default(),
        elapsed_secs: 0.0,
        config_path: loaded.path.display().to_string(),
        config_checksum: loaded.checksum.clone(),
        prompt_checksum: prompt_checksum.to_string(),
        started_at: now.clone(),
        updated_at: now,
    }
}

/// Continues `cp` under the current config: same phase, iteration, agent and session.
fn resume(
    mut cp: Checkpoint,
    loaded: &Loaded,
    prompt_checksum: &str,
    reporter: &Reporter,
) -> Result<Checkpoint, RalphError> {
    if cp.config_checksum != loaded.checksum {
        reporter.line(&format!(
            "note: {} changed since this run started; resuming with the new version",
            loaded.path.display()
        ));
    }
    if cp.prompt_checksum != prompt_checksum {
        reporter.line("note: the goal file changed since this run started; the next attempt gets the new text");
    }
    let pos = &mut cp.progress.position;
    let index = loaded.phases.iter().position(|p| p.name == pos.phase_name).ok_or_else(|| {
        RalphError::ResumeMismatch(format!(
            "the checkpoint stands in phase {}, which {} no longer has; restore that phase or run `ralph --no-resume`",
            pos.phase_name,
            loaded.path.display()
        ))
    })?;
    pos.phase = index;
    if pos.agent_index >= loaded.phases[index].chain.len() {
        pos.agent_index = 0;
    }
    if matches!(cp.status, Status::Failed | Status::Blocked) {
        // The user resumes a stopped run after fixing something: the iteration gets
        // a fresh budget; the run's totals are kept.
        let c = &mut cp.progress.counters;
        c.agent_failures = 0;
        c.ambiguous_failures = 0;
        c.retry_streak = 0;
        pos.cycle = 1;
    }
    // An attempt that was running when ralph stopped continues its session.
    if let Some(in_flight) = cp.in_flight.take() {
        if in_flight.session.is_some() {
            cp.progress.resume_session = in_flight.session;
        }
        if cp.progress.recovery_note.is_none() {
            cp.progress.recovery_note = Some("ralph was stopped while the attempt ran".to_string());
        }
    }
    reporter.line(&format!(
        "resuming run {} ({}): phase {}, iteration {}, agent #{}{}",
        cp.run_id,
        cp.status.as_str(),
        cp.progress.position.phase_name,
        cp.progress.position.iteration,
        cp.progress.position.agent_index + 1,
        cp.progress.resume_session.as_ref().map(|s| format!(", session {s}")).unwrap_or_default()
    ));
    cp.status = Status::Running;
    cp.clean_stop = false;
    cp.stop_cause = None;
    cp.stop_reason = None;
    cp.config_path = loaded.path.display().to_string();
    cp.config_checksum = loaded.checksum.clone();
    cp.prompt_checksum = prompt_checksum.to_string();
    Ok(cp)
}

/// sha256, hex.
pub fn checksum(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn new_run_id() -> String {
    let ts = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    format!("{ts}-{}", std::process::id())
}

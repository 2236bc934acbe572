//! Everything before the first attempt: the config, the goal, the templates, the
//! lock, the checkpoint decision (fresh, resume, ask), logging and the journal. Every
//! problem found here is reported before anything runs.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::config::{self, Loaded};
use crate::error::RalphError;
use crate::report::Reporter;
use crate::state::checkpoint::{self, Checkpoint, Status};
use crate::state::format::{self, FormatError, ReadError};
use crate::state::journal::Journal;
use crate::state::lock::RunLock;
use crate::state::store;
use crate::workflow::Progress;
use crate::workflow::{advance, prompt};

use super::start::{self, Start};
use super::{Options, ResumeFlag};

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
    pub resumed: bool,
    /// `--from`: the phase the run started at or was moved to, for the journal.
    pub from: Option<String>,
}

pub fn prepare(options: &Options) -> Result<Ready, RalphError> {
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
    let from = options.from.as_deref();
    if let Some(name) = from {
        // An unknown phase is a usage error before anything is touched.
        advance::start_at(&loaded.phases, loaded.repeat, name, |_| false).map_err(|e| from_error(&e, &path))?;
    }
    let artifacts_dir = agent_dir_of(&dir).join("artifacts");
    let fresh = |prompt_checksum: &str| fresh_checkpoint(&loaded, prompt_checksum, from, &artifacts_dir);

    let agent_dir = agent_dir_of(&dir);
    store::ensure_gitignore(&agent_dir)
        .map_err(|e| RalphError::setup(format!("cannot create {}", agent_dir.display()), e))?;
    let acquired = crate::state::lock::acquire(&agent_dir.join("ralph.lock"))?;
    let reporter = Reporter::new(options.quiet, std::io::stderr().is_terminal());
    if let Some(stale) = &acquired.stale {
        reporter.line(&format!(
            "the previous ralph here (pid {} on {}, started {}) ended without a clean stop: its run was interrupted",
            stale.pid, stale.host, stale.started_at
        ));
    }

    let enabled = loaded.config.general.workflow.checkpoint_enabled;
    let checkpoint_path = enabled.then(|| agent_dir.join("checkpoint.json"));
    let prompt_checksum = checksum(goal.as_bytes());
    let (checkpoint, resumed) = match &checkpoint_path {
        None => (fresh(&prompt_checksum)?, false),
        Some(cp_path) => {
            let existing = load_checkpoint(cp_path, options.resume, &reporter)?;
            if let Some(cp) = &existing {
                end_leftovers(&cp.run_id, &reporter);
            }
            let mut flag = options.resume;
            let mut decision = start::decide(existing.as_ref(), flag);
            if decision == Start::Ask {
                flag = ask(cp_path, existing.as_ref(), from)?;
                decision = start::decide(existing.as_ref(), flag);
            }
            match (decision, existing) {
                (Start::Resume, Some(cp)) => (resume(cp, &loaded, &prompt_checksum, from, &reporter)?, true),
                (Start::ArchiveThenFresh, Some(_)) => {
                    let aside = store::set_aside(cp_path, "archived")
                        .map_err(|e| RalphError::setup("cannot archive the old checkpoint", e))?;
                    reporter.line(&format!("archived the previous checkpoint as {}", aside.display()));
                    (fresh(&prompt_checksum)?, false)
                }
                (Start::NothingToResume, existing) => {
                    let why = match existing {
                        Some(cp) => format!("the run {} is {}", cp.run_id, cp.status.as_str()),
                        None => format!("there is no checkpoint at {}", cp_path.display()),
                    };
                    return Err(RalphError::NothingToResume(format!(
                        "nothing to resume: {why}; run `ralph` to start a new run"
                    )));
                }
                _ => (fresh(&prompt_checksum)?, false),
            }
        }
    };

    let logs_dir = agent_dir.join("logs").join(&checkpoint.run_id);
    std::fs::create_dir_all(&logs_dir)
        .map_err(|e| RalphError::setup(format!("cannot create {}", logs_dir.display()), e))?;
    crate::report::log::init(&logs_dir.join("ralph.log"), options.verbose);
    let journal = if enabled {
        Journal::open(&agent_dir.join("events.jsonl")).map_err(|e| RalphError::setup("cannot open the journal", e))?
    } else {
        Journal::disabled()
    };
    Ok(Ready {
        dir,
        loaded,
        goal,
        templates,
        checkpoint_path,
        checkpoint,
        journal,
        logs_dir,
        artifacts_dir,
        reporter,
        lock: Some(acquired.lock),
        resumed,
        from: options.from.clone(),
    })
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

/// Reads the checkpoint for a run. With `--no-resume` a checkpoint that cannot be
/// used is set aside and the run starts fresh in the same call: the user asked to
/// start over, and the file is kept.
fn load_checkpoint(path: &Path, flag: ResumeFlag, reporter: &Reporter) -> Result<Option<Checkpoint>, RalphError> {
    match format::read(path) {
        Ok(cp) => Ok(cp),
        Err(ReadError::Format(e)) if flag == ResumeFlag::Fresh => {
            let label = if matches!(e, FormatError::Corrupt(_)) { "corrupt" } else { "archived" };
            let aside = store::set_aside(path, label)
                .map_err(|io| RalphError::setup(format!("cannot set the checkpoint {} aside", path.display()), io))?;
            reporter.line(&format!("the checkpoint could not be used ({e}); kept it aside as {}", aside.display()));
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

fn ask(path: &Path, existing: Option<&Checkpoint>, from: Option<&str>) -> Result<ResumeFlag, RalphError> {
    let Some(cp) = existing else { return Ok(ResumeFlag::Fresh) };
    let needed = || RalphError::ResumeChoiceNeeded {
        path: path.to_path_buf(),
        status: cp.status.as_str().to_string(),
        phase: cp.progress.position.phase_name.clone(),
        iteration: cp.progress.position.iteration,
        from: from.map(str::to_string),
    };
    let (resume_it, new_run) = match from {
        None => ("[r]esume it".to_string(), "start [n]ew (archives it)".to_string()),
        Some(p) => (format!("[r]esume it at phase {p}"), format!("start [n]ew at phase {p} (archives it)")),
    };
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(needed());
    }
    let mut stderr = std::io::stderr();
    let mut line = String::new();
    for _ in 0..3 {
        let _ = write!(
            stderr,
            "An unfinished run ({}, phase {}, iteration {}) is here. {resume_it}, {new_run}, or [q]uit? [r] ",
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

fn agent_dir_of(dir: &Path) -> PathBuf {
    dir.join(".agent")
}

/// A new run: at the first phase, or at `from` reusing the earlier phases' results
/// that the last run left in `artifacts_dir`.
fn fresh_checkpoint(
    loaded: &Loaded,
    prompt_checksum: &str,
    from: Option<&str>,
    artifacts_dir: &Path,
) -> Result<Checkpoint, RalphError> {
    let now = now();
    let first = loaded.phases.first().map(|p| p.name.as_str()).unwrap_or("");
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
        run_id: new_run_id(),
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
        started_at: now.clone(),
        updated_at: now,
        agent_checkpoint: None,
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
    prompt_checksum: &str,
    from: Option<&str>,
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
    // The pass continues exactly, within what the (maybe changed) config allows.
    let pass = pos.pass;
    advance::fit_pass(pos, pass, loaded.repeat);
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

//! The run's I/O, which carries out the step's effects: the checkpoint written (a
//! snapshot in the journal, the file caught up later or at once by its durability),
//! every run event handed to its subscribers (journal, log, summary, notifier, live
//! state, terminal), the live display, the launch prepared, the artifacts kept, the
//! git session's commit, the versions asked, a full disk's writes tried again, and
//! the run's end (summary, lease, lock). Decides nothing: what it learns goes back to
//! the step as an [`Input`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::agent::descriptor::Request;
use crate::agent::launch::{self, Prepared};
use crate::agent::{kinds, versions};
use crate::error::RalphError;
use crate::events::RunEvent;
use crate::git::session::GitSession;
use crate::notify::Notifier;
use crate::outcome::RunEnd;
use crate::report::lines::{self, Escalating};
use crate::report::{Reporter, Summary};
use crate::secrets::redact;
use crate::state::attempt_log::AttemptLog;
use crate::state::checkpoint::Checkpoint;
use crate::state::disk;
use crate::state::hold::Hold;
use crate::state::journal::Journal;
use crate::state::prompt_log::PromptLog;
use crate::state::writes::Durability;
use crate::step::effect::{ArtifactSource, Launch};
use crate::step::input::{Launched, Versions};
use crate::step::{Input, RunState, Show};

use super::checkpoint_file::CheckpointFile;
use super::control::ControlSocket;
use super::registration::Registration;

/// What the run writes to and talks through.
pub(super) struct Io {
    pub dir: PathBuf,
    pub logs_dir: PathBuf,
    /// The prompts of the run's attempts, in `logs_dir`.
    pub prompts: PromptLog,
    pub artifacts_dir: PathBuf,
    /// `checkpoint.json`; `None` when `checkpoint_enabled = false`.
    pub checkpoint: Option<CheckpointFile>,
    pub journal: Journal,
    pub reporter: Reporter,
    pub notifier: Notifier,
    pub summary: Summary,
    pub hold: Hold,
    pub git: Option<GitSession>,
    pub control: ControlSocket,
    pub registration: Registration,
    /// A state file the disk had no room for.
    pub disk_full: Option<PathBuf>,
    /// The last attempt's log, part of which a full disk refused.
    pub unsaved_log: Option<AttemptLog>,
    /// The offline pause's next probe, as the live line counts down to it.
    pub next_probe: Option<Arc<AtomicU64>>,
    /// The launch prepared for the attempt about to start.
    pub prepared: Option<Prepared>,
    /// The run's end, once the step finished it.
    pub finished: Option<RunEnd>,
    /// The run is a fleet task: what carries out its `Effect::Fleet`.
    pub fleet: Option<crate::fleet::task::TaskRun>,
}

impl Io {
    /// Writes the checkpoint, unless checkpoints are off. Its snapshot goes to the
    /// journal, synced when `durability` is `Durable` (one `fdatasync` per
    /// transition) and unsynced when `Ordered` (an attempt started, a session known):
    /// a kill keeps either, a power cut loses only the unsynced one, as if it came
    /// just before. `checkpoint.json` follows it without a sync ([`CheckpointFile`]:
    /// at a status change, else later, so an agent call adds no file). `Unsynced` (a
    /// tool started): the file alone. When the journal cannot take it, the file is
    /// made durable itself.
    pub(super) fn save(&mut self, cp: &Checkpoint, durability: Durability) -> Result<(), RalphError> {
        self.hold.ensure_held();
        let Some(file) = self.checkpoint.as_mut() else { return Ok(()) };
        // Reasons, errors and recovery notes quote the agent (its last tool call's
        // input among them): on disk they are redacted like every log.
        let mut value =
            serde_json::to_value(cp).map_err(|e| RalphError::Internal(format!("cannot encode the checkpoint: {e}")))?;
        crate::secrets::redact_json(&mut value);
        let durable = durability == Durability::Durable;
        let journaled = durability != Durability::Unsynced
            && (self.journal.snapshot(&value, durable))
                .inspect_err(|e| tracing::warn!("cannot append to the journal, writing the file: {e}"))
                .is_ok();
        let written = if journaled {
            file.journaled(value, cp.status)
        } else {
            file.write(&value, cp.status, if durable { durability } else { Durability::Unsynced })
        };
        match written {
            Ok(()) => {
                self.registration.update(&self.dir, cp, self.control.identity());
                Ok(())
            }
            // Not a failure: the previous checkpoint is intact, and the run waits for
            // space before it starts anything new.
            Err(e) if disk::is_full(&e) => {
                let path = file.path().to_path_buf();
                tracing::warn!("disk full writing the checkpoint {}: {e}", path.display());
                self.disk_full.get_or_insert(path);
                Ok(())
            }
            Err(e) => Err(RalphError::io(format!("cannot write the checkpoint {}", file.path().display()), e)),
        }
    }

    /// Brings `checkpoint.json` up to the journal's newest snapshot: once it is due,
    /// or (`at_once`) now.
    pub(super) fn catch_up(&mut self, at_once: bool) {
        if let Some(file) = self.checkpoint.as_mut() {
            file.catch_up(at_once);
        }
    }

    /// Hands a run event to every subscriber: the tracing log, the journal, the
    /// session's counters, the notifier, the live state and the terminal.
    pub(super) fn emit(&mut self, event: &RunEvent, run: &RunState) {
        self.record(event);
        self.summary.observe(event);
        self.notifier.observe(event, &run.cp.run_id);
        self.control.publish(event, run);
        self.reporter.event(event);
    }

    /// Journals (and logs) an event; fencing first: a ralph whose lease another host
    /// took writes nothing more.
    pub(super) fn record(&mut self, event: &RunEvent) {
        self.hold.ensure_held();
        tracing::info!(kind = event.kind(), ?event);
        if let Err(e) = self.journal.record(event) {
            tracing::warn!("cannot append to the journal: {e}");
            if disk::is_full(&e) {
                self.disk_full = self.disk_full.take().or_else(|| self.journal.path().map(Path::to_path_buf));
            }
        }
    }

    /// The live display.
    pub(super) fn show(&mut self, show: Show) {
        let reporter = &mut self.reporter;
        match show {
            Show::Waiting { why, delay } => reporter.waiting(&why, delay),
            Show::Offline { since, endpoints, next_probe } => {
                let clock = Arc::new(AtomicU64::new(reporter.probe_clock(next_probe)));
                reporter.offline(since, &endpoints, Arc::clone(&clock));
                self.next_probe = Some(clock);
            }
            Show::NextProbe(next_in) => {
                if let Some(clock) = &self.next_probe {
                    clock.store(reporter.probe_clock(next_in), Ordering::Relaxed);
                }
            }
            Show::Escalating { agent, why, sent, next } => {
                let view = Escalating { agent, why, sent, next: next.map(|(s, _)| s) };
                reporter.escalating(&view, next.map(|(_, at)| at.into_std()));
            }
            Show::AgentStopped { agent, last_signal } => reporter.line(&lines::agent_stopped(&agent, last_signal)),
            Show::Killed { agent } => reporter.killed(agent.as_deref()),
            Show::Cost(cost) => reporter.set_cost(cost),
            Show::Clear => reporter.clear(),
        }
    }

    /// Prepares the attempt's launch: its prompt (with the previous phase's result),
    /// kept with the run's prompts, the control socket still in place, and its argv and
    /// environment.
    pub(super) fn launch(&mut self, plan: &Launch, run: &RunState) -> Result<Input, RalphError> {
        let artifact = |phase: &str| std::fs::read_to_string(self.artifacts_dir.join(format!("{phase}.md"))).ok();
        let prompt = crate::step::begin::attempt_prompt(run, &artifact);
        // What the agent was told, beside what it answered: the first thing to read
        // when a run goes wrong.
        let kept = redact(&prompt);
        let warn = |e| tracing::warn!("cannot keep the prompt of attempt {}: {e}", plan.attempt);
        self.prompts.append(&plan.stem, &kept).unwrap_or_else(warn);
        let moved = (self.control.keep())
            .map_err(|e| RalphError::io("the control socket is gone", std::io::Error::other(e.to_string())))?;
        let Some(agent_cfg) = run.setting.loaded.config.agents.get(&plan.agent) else {
            return Ok(Input::Prepared { launch: Err(format!("agent {} is not configured", plan.agent)), moved });
        };
        // A `command` agent may read it as {prompt_file}: a file of its own.
        let prompt_file = self.logs_dir.join(format!("{}.prompt.md", plan.stem));
        if agent_cfg.command.iter().chain(&agent_cfg.resume).flatten().any(|arg| arg.contains("{prompt_file}")) {
            crate::state::private::create_file(&prompt_file)
                .and_then(|mut f| std::io::Write::write_all(&mut f, kept.as_bytes()))
                .unwrap_or_else(warn);
        }
        let request = Request {
            agent: &plan.agent,
            prompt: &prompt,
            prompt_file: &prompt_file,
            resume: plan.resume.as_deref(),
            launch: plan.launch,
            cwd: &self.dir,
            run_id: &run.cp.run_id,
            session_tokens: plan.session_tokens,
            control: self.control.socket().filter(|_| agent_cfg.mcp).map(|s| (s, plan.attempt)),
            settings_file: crate::control::path::write_settings,
        };
        let launch = match launch::prepare(agent_cfg, request) {
            Ok(prepared) => {
                let launched = Launched {
                    withheld_env: prepared.withheld_env.clone(),
                    quiet_tools: prepared.quiet_tools,
                    running_cost: prepared.running_cost,
                };
                self.prepared = Some(prepared);
                Ok(launched)
            }
            Err(e) => Err(e.to_string()),
        };
        Ok(Input::Prepared { launch, moved })
    }

    /// The installed version of `agent` beside the one ralph was tested with.
    pub(super) async fn versions(&self, agent: &str, run: &RunState) -> Input {
        let Some(cfg) = run.setting.loaded.config.agents.get(agent) else { return Input::Versions(None) };
        let Some(cli) = kinds::descriptor(cfg.kind) else { return Input::Versions(None) };
        let installed = match launch::find_binary(cfg, cli.binary, agent) {
            Ok(binary) => match crate::process::version::installed(&binary).await {
                Ok(text) => versions::number(&text).unwrap_or(text.as_str()).to_string(),
                Err(e) => format!("unknown ({e})"),
            },
            Err(e) => format!("unknown ({e})"),
        };
        Input::Versions(Some(Versions { kind: cfg.kind.into_str(), installed, tested: cli.tested_version }))
    }

    /// Keeps a finished phase's result for the next phase's prompt, redacted.
    pub(super) fn keep_artifact(&self, phase: &str, source: ArtifactSource) {
        let text = match source {
            ArtifactSource::File(path) => std::fs::read_to_string(self.dir.join(path)).ok(),
            ArtifactSource::Text(text) => Some(text),
        };
        let Some(text) = text else { return };
        let path = self.artifacts_dir.join(format!("{phase}.md"));
        crate::state::private::ensure_dir(&self.artifacts_dir)
            .and_then(|()| crate::state::atomic::write_atomic(&path, redact(&text).as_bytes()))
            .unwrap_or_else(|e| tracing::warn!("cannot keep the artifact of phase {phase}: {e}"));
    }

    /// Writes again what a full disk refused: the checkpoint first (it is what a
    /// restart resumes from), then the journal lines that were refused, then the last
    /// attempt's log. Answers with the file still refused, if any.
    pub(super) fn retry_writes(&mut self, cp: &Checkpoint) -> Result<Input, RalphError> {
        self.disk_full = None;
        self.save(cp, Durability::Durable)?;
        if self.disk_full.is_none()
            && let Err(e) = self.journal.flush_pending()
        {
            if !disk::is_full(&e) {
                tracing::warn!("cannot append to the journal: {e}");
            }
            self.disk_full = disk::is_full(&e).then(|| self.journal.path().map(Path::to_path_buf)).flatten();
        }
        if self.disk_full.is_none()
            && let Some(log) = self.unsaved_log.as_mut()
        {
            log.flush();
            let _ = log.take_news();
            if log.on_disk() {
                self.unsaved_log = None;
            } else {
                self.disk_full = Some(log.current().to_path_buf());
            }
        }
        Ok(Input::DiskRetried(self.disk_full.as_deref().map(full)))
    }

    /// The run is over: the summary, then the lease and the lock released. A final
    /// state the disk had no room for is not a clean stop: the lock keeps its
    /// content, as the checkpoint on disk still says `running`.
    pub(super) fn finish(&mut self, end: &RunEnd, run: &RunState) {
        self.catch_up(true);
        self.summary.close(end, run);
        self.reporter.summary(&self.summary, end, &run.cp);
        self.hold.release(self.disk_full.is_none());
        self.finished = Some(end.clone());
    }
}

/// A file the disk has no room for, with the free space the file system reports.
pub(super) fn full(path: &Path) -> (String, String) {
    let free = disk::free_bytes(path).map_or_else(|| "unknown".to_string(), disk::human);
    (path.display().to_string(), free)
}

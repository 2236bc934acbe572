//! The run state the loop owns and the step changes: the checkpoint (what the shell
//! saves), what the run was set up with, what the loop is doing now ([`Mode`]), and
//! what lives only as long as this process (the control socket's news, the files
//! the agent reported editing, the endpoints that answered). Its methods are the
//! step's vocabulary: emit, save, the clocks, where the run stands.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::config::{Loaded, Phase};
use crate::events::RunEvent;
use crate::git::attribution::Touched;
use crate::outcome::RunEnd;
use crate::recovery::probe::Candidates;
use crate::signal::StopCause;
use crate::state::checkpoint::{Checkpoint, LastError};
use crate::state::writes::Durability;
use crate::workflow::done::Completion;

use crate::recovery::Classification;
use crate::recovery::policy::{self, Stop};
use crate::supervise::completion::Claim;

use super::effect::{Command, Effect, Show};
use super::input::{AttemptReport, Now};

/// What the run was set up with; fixed while it runs.
#[derive(Debug, Clone)]
pub(crate) struct Setting {
    pub loaded: Loaded,
    pub goal: String,
    /// The prompt template of each phase, in phase order.
    pub templates: Vec<String>,
    pub resumed: bool,
    /// `--from`: the phase the run started at or was moved to.
    pub from: Option<String>,
    /// Git features are on (a repository, and a baseline for this run).
    pub git: bool,
    /// The default probe endpoints of each phase's agents, and of all of them.
    pub endpoints: Candidates,
    /// This ralph's pid, for the journal.
    pub pid: u32,
    /// The run is this fleet task (docs/fleet.md): the isolation check before each
    /// commit, the rate-limit resets shared with the other tasks, the `Ralph-Task:`
    /// trailer.
    pub task: Option<String>,
    /// The zone times are shown in, read once by the shell at set-up.
    pub tz: jiff::tz::TimeZone,
}

/// What the loop is doing now, and what the next answer it waits for decides.
#[derive(Debug, Default)]
pub(crate) enum Mode {
    /// Between attempts: `Input::Next` decides the next move.
    #[default]
    Ready,
    /// The launch of an attempt is being prepared.
    Launching { agent: String, resume: Option<String>, stem: String },
    /// An attempt runs.
    Attempt(Running),
    /// Waiting for a timer.
    Waiting(Wait),
    /// Waiting for a probe's answer.
    Probing(Probe),
    /// Waiting for the agent's version, before the failure is recorded.
    Versions(Box<Failed>),
    /// A fleet task waits for the isolation check of the iteration it finished,
    /// before anything of it is committed.
    Checking(Box<Committing>),
    /// A fleet task looks for a rate-limit reset another task learned, before an
    /// attempt.
    Looking,
    /// Waiting for the commit step.
    Committing(Box<Committing>),
    /// Writing again what a full disk refused.
    Rewriting { tries: u32, then: Option<RunEnd> },
    /// The run ends in order: the working tree it leaves is being recorded before
    /// the final save (`ending::records_tree`).
    Recording(RunEnd),
    /// The run ended.
    Ended,
}

/// The running attempt, as the step knows it.
#[derive(Debug, Clone)]
pub(crate) struct Running {
    /// The agent process is still there (its output may drain after it exits).
    pub agent_running: bool,
    /// A stop was sent to it.
    pub stopping: bool,
    /// The second Ctrl+C came: however the attempt ends (the backstop may have
    /// killed the agent before the attempt heard the kill), the run leaves at once.
    pub forced: bool,
}

/// What a timer ends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Wait {
    /// A backoff before the next attempt.
    Backoff,
    /// A rate-limit reset, waited for since the unix second `started`.
    RateLimit { started: i64 },
    /// The pause between two probes while offline.
    Offline { endpoints: Vec<String>, paused_at: i64 },
    /// A full disk, the `tries`th time; `then` is the run's end, when it ended.
    Disk { tries: u32, then: Option<RunEnd> },
}

/// What a probe's answer decides.
#[derive(Debug)]
pub(crate) enum Probe {
    /// Whether a failed attempt was the network's.
    Failure { failed: Box<Failed>, endpoints: Vec<String> },
    /// Whether the run pauses offline; then (when online) this.
    Offline { endpoints: Vec<String>, then: Online },
    /// A round of the offline pause.
    Round { endpoints: Vec<String>, paused_at: i64 },
}

/// What follows an offline check that finds the providers answering.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Online {
    /// The next move (before an attempt).
    Ready,
    /// The backoff of a retry; a pause that ended retries at once instead.
    Backoff(Duration),
}

/// A commit under way, and what the iteration comes to after it.
#[derive(Debug)]
pub(crate) struct Committing {
    pub completion: Completion,
    /// The attempt that finished the iteration (empty for a commit a crash left
    /// pending), for the record of a rejected commit.
    pub report: AttemptReport,
    /// The commit was left pending by a ralph that died.
    pub after_crash: bool,
}

/// A failed attempt between its classification and its decision.
#[derive(Debug)]
pub(crate) struct Failed {
    pub report: AttemptReport,
    pub claim: Claim,
    pub failure: Classification,
}

/// What the control socket brought in that the step keeps.
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// `ralph stop`: the (phase, iteration, pass) it came in.
    pub stop_after: Option<(usize, u32, u32)>,
    /// `declare_complete` of the running attempt: (attempt, goal_complete).
    pub declared: Option<(u32, bool)>,
    /// `cancel_task` of the running attempt.
    pub cancelled: Option<String>,
    /// `report_interruption` of the running attempt.
    pub interruption: Option<String>,
    /// `ralph mcp` crashed more often than `[retry] mcp_restarts` allows (this many
    /// times in the iteration: the count starts afresh once a finished iteration is
    /// kept, before the stop); the run stops when the attempt ends.
    pub restarts_exhausted: Option<u32>,
    /// When the wait under way ends (unix seconds), for `ralph status`.
    pub wait_until: Option<i64>,
}

/// The run, as the loop owns it.
#[derive(Debug)]
pub(crate) struct RunState {
    pub setting: Setting,
    pub cp: Checkpoint,
    pub mode: Mode,
    pub control: Control,
    /// The first stop signal, once it came.
    pub stopping: Option<StopCause>,
    /// Who sent the SIGTERM that stopped the run, when one did.
    pub stop_sender: Option<crate::signal::origin::Sender>,
    /// The files the agent reported editing in the current iteration.
    pub touched: Touched,
    /// The final message of the last successful attempt: the phase's artifact when
    /// the phase ends (kept then, not after every iteration: only the next phase reads it).
    pub last_success: Option<String>,
    /// The transcript of the attempt last started, relative to the project.
    pub last_log: Option<String>,
    /// Default probe endpoints that answered during this run: only those count as
    /// evidence of being offline.
    pub answered: BTreeSet<String>,
    /// Endpoints (and the host) probed in the background that did not answer, with
    /// why: the summary's words for a run that never saw the network.
    pub unanswered: BTreeMap<String, String>,
    /// A state file the disk had no room for, and the free space seen: nothing new
    /// starts until it is written.
    pub disk_full: Option<(String, String)>,
    /// Iterations this process finished without an attempt of its own (a commit a
    /// crash left pending), for the summary.
    pub carried: u32,
    /// The error that ended the run, for the summary: the failure the stop answered.
    /// None when a cap, a signal, a person's request or the finished work ended it:
    /// an older failure is history then, not the cause (`ralph --inspect-checkpoint`
    /// still shows the last error with its time).
    pub ending_error: Option<LastError>,
    /// The setting's interrupted attempt and set-up's events, for the start.
    pub opening: Opening,
    /// Active time of earlier sessions of this run, and when this one started.
    elapsed_before: f64,
    started: tokio::time::Instant,
    /// Events about a transition that the next save records, emitted right after it.
    after_save: Vec<RunEvent>,
    /// The time of the input being handled.
    pub(super) now: Now,
    /// The effects of the step under way.
    out: Vec<Effect>,
}

/// What the run opens with.
#[derive(Debug, Default)]
pub(crate) struct Opening {
    /// The attempt that ran when the previous ralph died (`attempt_interrupted`).
    pub interrupted: Option<crate::state::checkpoint::InFlight>,
    /// `lease_taken_over`, shown already.
    pub takeover: Option<RunEvent>,
    /// Set-up's events, shown already.
    pub told: Vec<RunEvent>,
}

impl RunState {
    pub(crate) fn new(setting: Setting, cp: Checkpoint, opening: Opening, now: Now) -> Self {
        Self {
            elapsed_before: cp.elapsed_secs,
            touched: Touched::at_start(setting.resumed),
            setting,
            cp,
            mode: Mode::Ready,
            control: Control::default(),
            stopping: None,
            stop_sender: None,
            last_success: None,
            last_log: None,
            answered: BTreeSet::new(),
            unanswered: BTreeMap::new(),
            disk_full: None,
            carried: 0,
            ending_error: None,
            opening,
            started: now.mono,
            after_save: Vec::new(),
            now,
            out: Vec::new(),
        }
    }

    /// Starts a step at `now`.
    pub(super) fn begin(&mut self, now: Now) {
        self.now = now;
    }

    /// The effects of the step, in order.
    pub(super) fn effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.out)
    }

    pub(super) fn effect(&mut self, effect: Effect) {
        self.out.push(effect);
    }

    pub(super) fn show(&mut self, show: Show) {
        self.out.push(Effect::Show(show));
    }

    /// Hands `event` to the subscribers; behind an event that waits for the save, so
    /// the journal and the terminal keep the order things happened in (an
    /// iteration's end before its phase's).
    pub(super) fn emit(&mut self, event: RunEvent) {
        if !self.after_save.is_empty() {
            self.after_save.push(event);
            return;
        }
        if let RunEvent::Intervention { detector, .. } = &event {
            *self.cp.progress.counters.interventions.entry(detector.into_str().to_string()).or_insert(0) += 1;
        }
        self.out.push(Effect::Emit(event));
    }

    /// Emits `event` right after the next save: a kill between the two loses a
    /// journal line, never lets the journal claim what the checkpoint does not hold
    /// (an iteration journaled done and then run again).
    pub(super) fn emit_after_save(&mut self, event: RunEvent) {
        self.after_save.push(event);
    }

    /// Records a stop by `cause` in the checkpoint: its status (a SIGTERM of the
    /// user's own pauses, one of the machine interrupts) and, for a SIGTERM, who sent it.
    pub(super) fn stopped_by(&mut self, cause: StopCause) {
        let sigterm = matches!(cause, StopCause::Terminate | StopCause::Deliberate);
        let cp = &mut self.cp;
        (cp.status, cp.stop_cause) = (crate::state::checkpoint::Status::stopped_by(cause), Some(cause));
        cp.stop_sender = self.stop_sender.clone().filter(|_| sigterm);
    }

    /// Saves the checkpoint durably.
    pub(super) fn save(&mut self) {
        self.save_with(Durability::Durable);
    }

    /// Saves the checkpoint as it stands now, stamped, then emits what waited for it.
    pub(super) fn save_with(&mut self, durability: Durability) {
        let snapshot = self.stamped();
        self.saved(Effect::Save(snapshot, durability));
    }

    /// Writes again what a full disk refused, the checkpoint first; what waited for a
    /// save follows, as after any save.
    pub(super) fn rewrite(&mut self) {
        let snapshot = self.stamped();
        self.saved(Effect::RetryWrites(snapshot));
    }

    fn saved(&mut self, save: Effect) {
        self.out.push(save);
        for event in std::mem::take(&mut self.after_save) {
            self.emit(event);
        }
    }

    /// The checkpoint stamped for a save: its time, its active time, its sequence
    /// number and the chain its position refers to (so a resume under another config
    /// can tell which agent owns the session).
    fn stamped(&mut self) -> Box<Checkpoint> {
        let agents = &self.setting.loaded.config.agents;
        let chain = crate::recovery::resume::chain_of(self.phase(), &|name| agents.get(name).map(|a| a.kind));
        let elapsed = self.elapsed();
        let cp = &mut self.cp;
        cp.progress.position.chain = chain;
        cp.elapsed_secs = elapsed;
        cp.updated_at = self.now.wall;
        cp.seq += 1;
        Box::new(cp.clone())
    }

    /// Active seconds of the run over all its sessions.
    pub(crate) fn elapsed(&self) -> f64 {
        self.elapsed_before + self.now.mono.saturating_duration_since(self.started).as_secs_f64()
    }

    /// What is left of `[general] max_runtime`, if set.
    pub(super) fn runtime_left(&self) -> Option<Duration> {
        let max = self.setting.loaded.config.general.max_runtime?;
        Some(max.saturating_sub(Duration::from_secs_f64(self.elapsed())))
    }

    pub(crate) fn phase(&self) -> &Phase {
        &self.setting.loaded.phases[self.cp.progress.position.phase]
    }

    /// The agent of the chain the position stands at.
    pub(crate) fn current_agent(&self) -> String {
        self.phase().chain.get(self.cp.progress.position.agent_index).cloned().unwrap_or_default()
    }

    /// Where the run stands, as `ralph stop` remembers it.
    pub(super) fn position_key(&self) -> (usize, u32, u32) {
        let pos = &self.cp.progress.position;
        (pos.phase, pos.iteration, pos.pass)
    }

    /// The runtime and cost caps, checked before every attempt and on every round of
    /// an offline pause.
    pub(super) fn cap_reached(&self) -> Option<Stop> {
        policy::run_cap(&self.setting.loaded.config.general, self.elapsed(), self.cp.usage.cost_usd)
    }

    /// Tells the running attempt, unless it is over.
    pub(super) fn tell(&mut self, command: Command) {
        if matches!(self.mode, Mode::Attempt(_)) {
            self.out.push(Effect::Attempt(command));
        }
    }

    /// Whether the step waits for `Input::Next` (nothing else is under way).
    pub(crate) fn ready(&self) -> bool {
        matches!(self.mode, Mode::Ready)
    }
}

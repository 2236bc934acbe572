//! What the step asks the shell to do: one typed [`Effect`] for every act of I/O
//! (write, show, launch, signal, wait, probe, commit, finish), carried out in the
//! order given. Effects that learn something answer with an [`Input`]
//! (`super::Input`); nothing the shell does decides anything.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::Timeouts;
use crate::events::RunEvent;
use crate::outcome::RunEnd;
use crate::signal::StopCause;
use crate::state::checkpoint::Checkpoint;
use crate::state::writes::Durability;
use crate::supervise::Detector;

/// One act of I/O, decided by the step.
#[must_use]
#[derive(Debug)]
pub(crate) enum Effect {
    /// Write this checkpoint (stamped for this save) with this durability; the
    /// registry entry follows its status.
    Save(Box<Checkpoint>, Durability),
    /// Hand a run event to every subscriber: the journal, the log, the terminal, the
    /// summary, the notifier, the live state.
    Emit(RunEvent),
    /// Journal (and log) an event the terminal showed already (set-up's lines).
    Record(RunEvent),
    /// The live display.
    Show(Show),
    /// Prepare the attempt's launch: its prompt file, argv and environment
    /// (answered by `Input::Prepared`).
    Launch(Box<Launch>),
    /// Start the prepared attempt.
    Start(Box<StartAttempt>),
    /// Tell the running attempt.
    Attempt(Command),
    /// Wake the step at this instant (`Input::Timer`); replaces any timer set before.
    Timer(Instant),
    /// Probe these endpoints (`Input::Probed`), raced with the signals.
    Probe(Vec<String>),
    /// Probe each of these default endpoints on its own, in the background; those
    /// that answer come back as `Input::Answered`.
    ProbeInBackground(Vec<String>),
    /// Ask the agent's binary for its version (`Input::Versions`).
    AskVersions(String),
    /// Keep the finished phase's result for the next phase's prompt.
    KeepArtifact { phase: String, source: ArtifactSource },
    /// Make the commit the run's git state holds pending, unless it exists, with the
    /// files the agent reported editing (`Input::Committed`); `after_crash`: a ralph
    /// was killed with it pending, its stale git locks go first.
    Commit { after_crash: bool },
    /// Write again what a full disk refused: this checkpoint, then the journal's held
    /// lines, then the last attempt's log (`Input::DiskRetried`).
    RetryWrites(Box<Checkpoint>),
    /// Record the working tree (its changed paths and their content) the run's
    /// orderly end leaves, for the resume to tell a person's edits from the
    /// agent's (`Input::TreeRecorded`).
    RecordTree,
    /// The run is over: the summary, the lease, the lock.
    Finish(RunEnd),
    /// ralph's own failure ends the run (exit 4 or 2, by its kind).
    Fail(Fatal),
    /// What a fleet task's run asks of its fleet (docs/fleet.md).
    Fleet(Fleet),
}

/// What a fleet task's run asks of its fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fleet {
    /// An attempt of iteration `key` starts: the isolation check's window opens with
    /// a snapshot of the world outside the worktree (kept open across the
    /// iteration's retries and resumes).
    OpenWindow { key: String },
    /// Iteration `key` is done, before its commit: the window closes and the world
    /// is compared with its snapshot (`Input::Isolated`).
    CheckIsolation { key: String },
    /// Before an attempt of `agent`: a rate-limit reset another task learned for
    /// its provider (`Input::SharedReset`).
    SharedReset { agent: String },
    /// The run waits for `agent`'s rate-limit reset until the unix second `until`:
    /// every task using that provider waits for it too.
    PublishReset { agent: String, until: i64 },
}

/// What the live display shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Show {
    /// A wait begins: why and how long.
    Waiting { why: String, delay: Duration },
    /// The offline pause: since when (unix seconds), what is probed, and when next.
    Offline { since: i64, endpoints: Vec<String>, next_probe: Duration },
    /// The next probe of the offline pause is due in this long.
    NextProbe(Duration),
    /// ralph is ending the agent.
    Escalating { agent: String, why: EndWhy, sent: &'static str, next: Option<(&'static str, Instant)> },
    /// The agent is gone after an orderly stop (the live line of the stop goes).
    AgentStopped { agent: String, last_signal: Option<&'static str> },
    /// The second Ctrl+C: what was killed.
    Killed { agent: Option<String> },
    /// The run's cost so far.
    Cost(f64),
    /// The live line (an attempt's, a wait's) goes.
    Clear,
}

/// Why ralph is ending the agent, as the live display says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EndWhy {
    /// Ctrl+C: a second one kills at once.
    User,
    /// SIGTERM or SIGHUP: an orderly stop for the machine.
    Signal(&'static str),
    /// A detector of ralph's (stall, tool timeout, loop...).
    Intervention(Detector),
    /// The agent reported an interruption (MCP `report_interruption`).
    Reported,
}

impl EndWhy {
    /// The stop a signal asks for.
    pub(crate) fn stop(cause: StopCause) -> EndWhy {
        match cause {
            StopCause::User => EndWhy::User,
            other => EndWhy::Signal(other.signal_name()),
        }
    }
}

/// What the step tells the running attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    /// End the agent with grace (its stop signal, then stronger ones): the run stops.
    Stop(StopCause),
    /// Kill the agent's group now: the user's second Ctrl+C.
    Kill,
    /// The agent is alive (a heartbeat through its MCP tools): not a stall.
    Alive,
    /// The agent reported an interruption (MCP `report_interruption`): it gave up, so
    /// its attempt ends now, with grace, and recovery starts (nobody waits out the
    /// stall limit for an agent that said why it stopped).
    Interrupted,
}

/// The attempt to prepare.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub agent: String,
    /// The run-wide attempt number.
    pub attempt: u32,
    /// The launches of this agent in the run (selects a scripted agent's script).
    pub launch: u32,
    /// The name stem of its files under the run's logs.
    pub stem: String,
    /// The session it resumes, if any.
    pub resume: Option<String>,
    /// The tokens counted to that session so far (agents that report running totals).
    pub session_tokens: (u64, u64),
}

/// How the prepared attempt runs.
#[derive(Debug, Clone)]
pub(crate) struct StartAttempt {
    /// Its limits: the configured ones for its kind, within the run's time left.
    pub limits: Timeouts,
    /// What the run may still spend, for an agent that reports cost while it runs.
    pub cost_left: Option<f64>,
    /// The done artifact, whose change the attempt reports.
    pub done_file: Option<PathBuf>,
    /// The name stem of its log.
    pub stem: String,
}

/// Where a finished phase's result comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArtifactSource {
    /// Its done file (`done = "file:PATH"`), relative to the project.
    File(PathBuf),
    /// The final message of its last iteration.
    Text(String),
}

/// ralph's own failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fatal {
    /// The checkpoint names an agent the config no longer has.
    AgentGone(String),
    /// `max_runtime` ran out while the disk was full.
    NoSpace(String),
}

/// ralph's own failure, as the error that ends the run.
impl From<Fatal> for crate::error::RalphError {
    fn from(fatal: Fatal) -> Self {
        match fatal {
            Fatal::AgentGone(agent) => {
                Self::Refused(format!("agent {agent} is no longer configured; run `ralph --no-resume`"))
            }
            Fatal::NoSpace(why) => Self::io(why, std::io::Error::from_raw_os_error(nix::libc::ENOSPC)),
        }
    }
}

//! What the loop hands the step: one typed [`Input`] for everything that can happen
//! to a run (a signal, a control message, a message of the running attempt, its end,
//! a timer, a probe's answer, what git or the disk did), and the time it happened.

use crate::git::plan::Tree;
use std::time::Duration;

use tokio::time::Instant;

use crate::control::Inbound;
use crate::git::record::CommitReport;
use crate::recovery::classify::{EndedBy, Exit};
use crate::recovery::probe::ProbeResult;
use crate::signal::StopCause;
use crate::state::writes::DiskNews;
use crate::supervise::Intervention;
use crate::supervise::collected::Gathered;
use crate::supervise::note::LastTool;

use super::effect::EndWhy;

/// The time of an input: the wall clock (unix seconds for resets, timestamps for the
/// record) and the monotonic clock (timers, the runtime cap).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    pub wall: jiff::Timestamp,
    pub mono: Instant,
}

impl Now {
    /// The clocks' readings now.
    pub(crate) fn read() -> Now {
        Now { wall: jiff::Timestamp::now(), mono: Instant::now() }
    }

    /// In unix seconds, as the rate-limit and backoff rules count.
    pub(crate) fn unix(&self) -> i64 {
        self.wall.as_second()
    }
}

/// One thing that happened to the run.
#[derive(Debug)]
pub(crate) enum Input {
    /// The run begins (set-up is done, the control socket listens).
    Start,
    /// The effects of the last step are carried out and nothing else arrived: the
    /// next move, when the run is between attempts.
    Next,
    /// The first stop signal (Ctrl+C, SIGTERM, SIGHUP, `ralph stop --now`), and who
    /// sent the SIGTERM when one came (`signal::origin`).
    Stop(StopCause, Option<crate::signal::origin::Sender>),
    /// A second Ctrl+C during a stop: kill and leave now.
    ForceExit,
    /// Messages from the control socket (`ralph stop`, the agent's MCP tools).
    Control(Vec<Inbound>),
    /// The launch of the attempt is prepared (its argv, environment, prompt file), or
    /// it cannot be (the message says why); `moved` is the control socket's new place
    /// when it was gone and is bound anew.
    Prepared { launch: Result<Launched, String>, moved: Option<String> },
    /// A message of the running attempt.
    Attempt(AttemptMsg),
    /// The attempt is over.
    AttemptEnded(Box<AttemptReport>),
    /// The timer the step set went off.
    Timer,
    /// The answer of the probe the step asked for.
    Probed(ProbeResult),
    /// A default endpoint (or the host) probed in the background answered, or not.
    Heard(String, ProbeResult),
    /// The installed version of the agent, asked for after it refused an argument;
    /// `None` for a kind ralph has no descriptor of.
    Versions(Option<Versions>),
    /// What the commit step did.
    Committed(CommitReport),
    /// A write of the run's state found the disk full (`free` as the file system says).
    DiskFull { path: String, free: String },
    /// The writes a full disk refused were tried again: `None` when they went through.
    DiskRetried(Option<(String, String)>),
    /// The working tree the run's end leaves (`None`: git could not say).
    TreeRecorded(Option<Tree>),
    /// A fleet task's isolation check of the iteration it finished: `None` when
    /// nothing outside its worktree changed, else what was touched (and by whom it
    /// may have been).
    Isolated(Option<String>),
    /// A rate-limit reset another task of the fleet learned for the provider of the
    /// agent about to run, if one is still ahead.
    SharedReset(Option<SharedReset>),
}

/// A rate-limit reset another task of the fleet learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedReset {
    /// The unix second it holds until (with ralph's margin).
    pub until: i64,
    pub provider: String,
    /// The task that met the limit.
    pub learned_by: String,
}

/// What the prepared launch says about the attempt.
#[derive(Debug, Clone, Default)]
pub(crate) struct Launched {
    /// Names in ralph's environment the agent does not get (for the journal).
    pub withheld_env: Vec<String>,
    /// The agent prints nothing while a tool runs (its silence is bounded by the tool
    /// limit).
    pub quiet_tools: bool,
    /// The agent reports its cost while it runs (the cost cap can end the attempt).
    pub running_cost: bool,
}

/// A message of the running attempt.
#[derive(Debug)]
pub(crate) enum AttemptMsg {
    /// The agent reported a (new) session id.
    Session(String),
    /// A tool call started or finished.
    Tool(LastTool),
    /// ralph sent `sent` to the agent's group to end it, and sends `next` at its time
    /// if the agent is still there.
    Escalating { why: EndWhy, sent: &'static str, next: Option<(&'static str, Instant)> },
    /// The attempt's log found the disk full, or space back.
    Disk(DiskNews),
    /// The agent process is gone (its output may still be draining).
    Exited,
}

/// How the attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttemptEnd {
    /// The agent process is gone (by itself, or ended by ralph's clock or detectors).
    Exited { exit: Exit, ended_by: EndedBy },
    /// A stop signal ended it; the agent was ended with grace.
    Stopped(StopCause),
    /// The second Ctrl+C: the group was killed.
    ForceExit,
    /// The agent could not be started.
    SpawnFailed(SpawnError),
}

/// Why the agent could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpawnError {
    pub errno: Option<i32>,
    /// ralph's own check before exec found the binary missing or not executable.
    pub not_found: bool,
    pub message: String,
    pub program: String,
}

impl SpawnError {
    /// The error of starting `program`.
    #[must_use]
    pub(crate) fn of(error: &std::io::Error, program: String) -> Self {
        use std::io::ErrorKind;
        SpawnError {
            errno: error.raw_os_error(),
            not_found: matches!(error.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied),
            message: error.to_string(),
            program,
        }
    }
}

/// An endpoint (or the host) probed in the background, and what it said.
pub(crate) type Heard = (String, ProbeResult);

/// What the done artifact (`done = "file:PATH"`) looked like, before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stamp {
    NotApplicable,
    Missing,
    /// Its checksum.
    Content(String),
}

/// Whether the done artifact changed during the attempt: it exists now, with content
/// other than before.
pub(crate) fn artifact_changed(before: &Stamp, after: &Stamp) -> bool {
    before != &Stamp::NotApplicable && after != before && matches!(after, Stamp::Content(_))
}

/// Everything the attempt left behind.
#[derive(Debug, Clone)]
pub(crate) struct AttemptReport {
    pub end: AttemptEnd,
    /// What its output comes to (tails redacted).
    pub output: Gathered,
    pub duration: Duration,
    /// Why ralph ended it, when one of its detectors did.
    pub intervention: Option<Intervention>,
    /// The last tool call and whether its result came.
    pub last_tool: Option<LastTool>,
    /// The last signal ralph sent to end the agent, if it had to.
    pub last_signal: Option<&'static str>,
    /// The files the agent reported editing.
    pub touched: crate::git::attribution::Touched,
    /// The done artifact before and after.
    pub artifact: (Stamp, Stamp),
    /// The log a full disk still holds part of back, with the free space seen.
    pub log_unsaved: Option<(String, String)>,
}

impl AttemptReport {
    /// An attempt that never ran: its agent could not be started.
    pub(crate) fn not_started(error: SpawnError) -> Self {
        Self::empty(AttemptEnd::SpawnFailed(error))
    }

    /// An attempt that left nothing behind, ended by `end`.
    pub(crate) fn empty(end: AttemptEnd) -> Self {
        AttemptReport {
            end,
            output: Gathered::default(),
            duration: Duration::ZERO,
            intervention: None,
            last_tool: None,
            last_signal: None,
            touched: Default::default(),
            artifact: (Stamp::NotApplicable, Stamp::NotApplicable),
            log_unsaved: None,
        }
    }
}

/// An agent's installed version beside the one ralph was tested with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Versions {
    pub kind: &'static str,
    /// Its version, or "unknown (why)".
    pub installed: String,
    pub tested: &'static str,
}

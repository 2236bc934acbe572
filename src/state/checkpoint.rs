//! The checkpoint: everything needed to resume a run without loss, versioned and
//! bounded in size (history goes to the journal). Written atomically after every
//! transition by the dispatcher.

use serde::{Deserialize, Serialize};

use crate::outcome::StopCause;
pub(crate) use crate::outcome::{Status, Usage};
use crate::recovery::Classification;
use crate::workflow::Progress;

/// The format version this ralph writes. It changes only for an incompatible change
/// (the state-format policy in `docs/operations.md`): a new field is optional with a
/// default and keeps the version. [`super::format`] reads every version ever written.
pub(crate) const VERSION: u32 = 1;

/// The attempt under way when the checkpoint was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InFlight {
    pub agent: String,
    /// The run-wide attempt number.
    pub attempt: u32,
    /// The session the attempt resumed or reported, if known yet.
    pub session: Option<String>,
    #[serde(deserialize_with = "timestamp")]
    pub started_at: jiff::Timestamp,
    /// The last tool call the agent started: after a crash its outcome is unknown,
    /// and the resumed attempt is told to check it before redoing it.
    pub tool: Option<ToolCall>,
}

/// A tool call, as the recovery note names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ToolCall {
    pub name: String,
    /// A short, single-line form of its input (a command, a path).
    pub input: String,
    /// Its result was seen (recorded at an orderly stop; after a crash the outcome
    /// is unknown).
    #[serde(default)]
    pub finished: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LastError {
    #[serde(flatten)]
    pub classification: Classification,
    pub agent: String,
    /// The end of the agent's output, redacted.
    pub text_tail: String,
    #[serde(deserialize_with = "timestamp")]
    pub at: jiff::Timestamp,
    /// The failed attempt's transcript, for the summary and `status`.
    pub log: Option<String>,
}

/// `.agent/checkpoint.json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    pub version: u32,
    /// Counts this run's saves: of `checkpoint.json` and the journal's newest
    /// `checkpoint` snapshot, the higher one is the newer (absent before it existed).
    #[serde(default)]
    pub seq: u64,
    pub run_id: String,
    pub status: Status,
    /// True when ralph itself wrote the final state (stop, finish); false while
    /// running, so a crash leaves `clean_stop: false` behind.
    pub clean_stop: bool,
    /// The signal that stopped the run (`Paused` or `Interrupted`).
    pub stop_cause: Option<StopCause>,
    /// Who sent the SIGTERM that stopped the run, and what that made it (a
    /// deliberate stop is `paused`; see `signal::origin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sender: Option<crate::signal::origin::Sender>,
    /// Why the run failed or is blocked.
    pub stop_reason: Option<String>,
    /// The cap that ended a failed run: its config key and stable phrase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<crate::recovery::policy::StoppedBy>,
    pub progress: Progress,
    pub in_flight: Option<InFlight>,
    pub last_error: Option<LastError>,
    pub usage: Usage,
    #[serde(default)]
    pub phase_usage: std::collections::BTreeMap<String, Usage>,
    /// Active run time over all resumes, seconds.
    pub elapsed_secs: f64,
    pub config_path: String,
    pub config_checksum: String,
    pub prompt_checksum: String,
    #[serde(deserialize_with = "timestamp")]
    pub started_at: jiff::Timestamp,
    #[serde(deserialize_with = "timestamp")]
    pub updated_at: jiff::Timestamp,
    /// Git-aware runs: the baseline, the commits made, a commit pending (absent when
    /// git features are off or the checkpoint predates them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<crate::git::record::GitState>,
    /// The agent's latest `save_checkpoint` (MCP); its history is in the journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_checkpoint: Option<AgentCheckpoint>,
    /// A fleet task's run: the merge queue's evictions it has taken (each reopens
    /// the completed run for one more iteration, docs/fleet.md).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fleet_evictions: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Verified progress the agent saved through `save_checkpoint`, bounded by the
/// control protocol's text limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentCheckpoint {
    pub phase: String,
    pub iteration: u32,
    pub summary: String,
    pub steps_done: Vec<String>,
    pub next_steps: Vec<String>,
}

/// A timestamp as every ralph wrote it, an RFC 3339 string. The reader before they
/// were typed took any string: one that does not parse reads as the epoch rather
/// than making the whole checkpoint unreadable.
fn timestamp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<jiff::Timestamp, D::Error> {
    Ok(String::deserialize(d)?.parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

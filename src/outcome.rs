//! How a run ended, why a stop was asked for, what kind of failure an attempt was,
//! a run's status and its cost ([`Status`], [`Usage`], saved in the checkpoint and
//! carried by the run's events). Plain values shared by the dispatcher that produces them, the signal machine
//! ([`StopCause`]), the reporter that describes them, the errors and the exit-code
//! table that maps them, the config (a `[[classify]]` rule names a [`Category`]) and
//! the checkpoint's counts, so none of them imports another for it.
//!
//! A leaf: this file imports nothing of the crate, so every floor may use it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunEnd {
    Completed,
    /// A cap or budget ran out.
    Failed(String),
    /// A human must act.
    Blocked(String),
    /// Stopped by a signal, with an orderly save.
    Stopped(StopCause),
    /// The user's second Ctrl+C: killed and left at once.
    ForceExit,
    /// The user answered "quit" to the resume question: nothing started or changed.
    Declined,
}

/// Why an orderly stop was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StopCause {
    /// Ctrl+C: the user's decision; the run stays paused until `--resume`.
    User,
    /// SIGTERM: a shutdown or a service manager.
    Terminate,
    /// SIGHUP: the terminal went away.
    Hangup,
    /// SIGTERM sent by a process of the user's own (`kill PID`, a script): as much
    /// the user's decision as Ctrl+C, so the run is paused. Saved as `"terminate"`,
    /// which every ralph reads (the checkpoint's `stop_sender` says who sent it).
    #[serde(rename = "terminate", skip_deserializing)]
    Deliberate,
}

impl StopCause {
    pub(crate) fn signal_name(self) -> &'static str {
        match self {
            StopCause::User => "SIGINT",
            StopCause::Terminate | StopCause::Deliberate => "SIGTERM",
            StopCause::Hangup => "SIGHUP",
        }
    }
}

/// The four failure categories of design.md §4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub enum Category {
    /// Network, provider overload, rate limits: no budget, retry with backoff.
    Environmental,
    /// The agent misbehaved: counts against its budget; resume, then fall over.
    Agent,
    /// A human must fix something: stop at once (exit 3).
    UserConfig,
    /// Cannot tell: retried, flagged, bounded by its own cap.
    Ambiguous,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub(crate) enum Status {
    /// An attempt is running or about to (also what a crashed run leaves behind).
    Running,
    /// The user stopped the run (Ctrl+C, `ralph stop`, a SIGTERM of theirs); it
    /// waits for `--resume`.
    Paused,
    /// Waiting for a rate-limit reset or a backoff to end.
    Waiting,
    /// Stopped by a SIGTERM of the machine or SIGHUP; a watchdog may resume it.
    Interrupted,
    Completed,
    /// A cap or budget ran out.
    Failed,
    /// A human must act.
    Blocked,
}

impl Status {
    /// The status of a run stopped by `cause`: the user's Ctrl+C pauses it (it waits
    /// for `--resume`); SIGTERM and SIGHUP interrupt it (a watchdog may resume it).
    pub(crate) fn stopped_by(cause: StopCause) -> Status {
        match cause {
            StopCause::User | StopCause::Deliberate => Status::Paused,
            StopCause::Terminate | StopCause::Hangup => Status::Interrupted,
        }
    }

    /// Whether a run in this status can be continued with `--resume`.
    pub(crate) fn unfinished(self) -> bool {
        !matches!(self, Status::Completed)
    }
}

/// Cost and tokens so far, over all resumes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Usage {
    pub cost_usd: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// "$0.1234, 1200 input / 300 output tokens", or `None` when nothing was reported.
    pub(crate) fn describe(&self) -> Option<String> {
        (self.cost_usd > 0.0 || self.input_tokens > 0).then(|| {
            format!("${:.4}, {} input / {} output tokens", self.cost_usd, self.input_tokens, self.output_tokens)
        })
    }

    pub(crate) fn add(&mut self, other: &Usage) {
        self.cost_usd += other.cost_usd;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

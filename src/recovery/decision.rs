//! The decisions the recovery policy returns and the facts it reads: what the
//! dispatcher does next ([`Next`]), why a run stops ([`Stop`], [`Cap`]), and the
//! backoff. A leaf that `policy` and `rate_limit` both build on, so neither imports
//! the other for its types.

use std::time::Duration;

use crate::config::Retry;
use crate::workflow::advance::PhaseEnd;

/// A cap that ended the run. Each has a stable message prefix users can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Cap {
    MaxCycles,
    ToolRegistryResets,
    /// Crashes of `ralph mcp` while its agent ran.
    McpRestarts,
    AmbiguousAttempts,
    Iterations,
    Runtime,
    Cost,
    /// One unbroken streak of environmental failures ran past `max_environmental_wait`.
    EnvironmentalWait,
    /// No agent of the chain can run before `max_rate_limit_wait`.
    RateLimitWait,
}

impl Cap {
    /// The stable phrase that names the cap in messages.
    pub(crate) fn phrase(self) -> &'static str {
        match self {
            Cap::MaxCycles => "max_cycles exhausted",
            Cap::ToolRegistryResets => "tool-registry-reset exhausted",
            Cap::McpRestarts => "restart budget exhausted",
            Cap::AmbiguousAttempts => "ambiguous-attempt exhausted",
            Cap::Iterations => "iteration cap exhausted",
            Cap::Runtime => "max_runtime exhausted",
            Cap::Cost => "max_cost_usd exhausted",
            Cap::EnvironmentalWait => "max_environmental_wait exhausted",
            Cap::RateLimitWait => "max_rate_limit_wait exhausted",
        }
    }

    /// The config key that sets the cap, as a person would look it up in
    /// `ralph.toml` (`phase` names the table of a phase's iterations).
    pub(crate) fn key(self, phase: &str) -> String {
        match self {
            Cap::MaxCycles => "[general] max_cycles".into(),
            Cap::ToolRegistryResets => "[retry] tool_registry_resets".into(),
            Cap::McpRestarts => "[retry] mcp_restarts".into(),
            Cap::AmbiguousAttempts => "[retry] ambiguous_attempts".into(),
            Cap::Iterations => format!("[phases.{phase}] iterations"),
            Cap::Runtime => "[general] max_runtime".into(),
            Cap::Cost => "[general] max_cost_usd".into(),
            Cap::EnvironmentalWait => "[retry] max_environmental_wait".into(),
            Cap::RateLimitWait => "[retry] max_rate_limit_wait".into(),
        }
    }

    /// What the run's record says of the cap that ended it.
    pub(crate) fn named(self, phase: &str) -> StoppedBy {
        StoppedBy { cap: self, key: self.key(phase), phrase: self.phrase().to_string() }
    }

    /// The cap whose phrase a stop reason starts with (as [`Cap::stop`] wrote it).
    pub(crate) fn of_reason(reason: &str) -> Option<Cap> {
        const ALL: [Cap; 9] = [
            Cap::MaxCycles,
            Cap::ToolRegistryResets,
            Cap::McpRestarts,
            Cap::AmbiguousAttempts,
            Cap::Iterations,
            Cap::Runtime,
            Cap::Cost,
            Cap::EnvironmentalWait,
            Cap::RateLimitWait,
        ];
        ALL.into_iter().find(|cap| reason.starts_with(cap.phrase()))
    }

    /// The run stops `failed` on this cap: its phrase, then `detail`.
    pub(crate) fn stop(self, detail: impl std::fmt::Display) -> Stop {
        Stop::Failed { cap: self, message: format!("{}: {detail}", self.phrase()) }
    }
}

/// The cap that ended a run, as the checkpoint (`--json`) and the journal's
/// `cap_reached` name it: the cap, its config key and its stable phrase
/// (docs/recovery.md).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct StoppedBy {
    pub cap: Cap,
    pub key: String,
    pub phrase: String,
}

/// Why a run stops before finishing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stop {
    /// A budget or cap ran out (exit 1).
    Failed { cap: Cap, message: String },
    /// A human must act (exit 3).
    Blocked { message: String },
}

/// What the run does next (carried out by `step::carry::carry_out`).
#[must_use]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// The iteration is done; the next one of the same phase follows.
    Iteration,
    /// The phase is done; the next phase (or the next pass) follows.
    Phase {
        finished: String,
        end: PhaseEnd,
    },
    /// Every phase is done.
    Finished {
        end: PhaseEnd,
    },
    /// Try the same agent again after `delay` (resuming its session if one is set).
    /// With `probe_first` the providers are probed before the delay, and while they
    /// do not answer the run pauses (the offline pause) instead of retrying.
    Retry {
        delay: Duration,
        probe_first: bool,
    },
    /// The agent's budget is spent (or it is rate-limited and the config says
    /// fallover): the next agent of the chain takes over.
    Fallover {
        from: String,
        to: String,
        new_cycle: bool,
        why: FalloverWhy,
    },
    /// Wait until the unix second `at` (a rate-limit reset plus a margin), then try
    /// again; `reset` is the time the provider reported, the one shown.
    WaitUntil {
        at: i64,
        reset: i64,
        reason: String,
    },
    Stop(Stop),
}

/// Why the chain moved to another agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FalloverWhy {
    /// The agent used its `agent_attempts` (`recovery-attempt exhausted`).
    Budget,
    /// The agent is rate-limited and `on_rate_limit = "fallover"`.
    RateLimit,
}

/// What else the policy needs to know about a failed attempt.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    /// The session id the attempt reported, if any.
    pub session: Option<String>,
    /// When the provider's rate limit resets (unix seconds), if it said.
    pub rate_limit_reset: Option<i64>,
    /// Now, in unix seconds.
    pub now: i64,
    /// A random number in [0, 1) for the backoff's jitter.
    pub jitter: f64,
}

/// Exponential backoff with jitter: `base · 2^(streak−1)`, capped at `max`, then
/// scaled into [50 %, 100 %] by `jitter` ∈ [0, 1) so that many runs hitting one
/// outage do not retry in lockstep.
pub(crate) fn backoff(retry: &Retry, streak: u32, jitter: f64) -> Duration {
    let exp = streak.saturating_sub(1).min(30);
    let raw = retry.backoff_base.saturating_mul(1u32 << exp);
    let capped = raw.min(retry.backoff_max);
    capped.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

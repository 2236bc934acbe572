//! Recovery: what kind of failure an attempt was ([`classify`], and [`spawn`] for a
//! launch that failed before the agent ran), what to do next ([`policy`],
//! [`rate_limit`]), and which endpoints tell whether the network is gone ([`probe`];
//! the TCP connect itself is the shell's). All pure; the dispatcher executes their
//! decisions.

pub mod classify;
#[cfg(test)]
mod corpus;
pub mod policy;
pub mod probe;
pub mod rate_limit;
pub mod reset;
pub mod spawn;

use serde::{Deserialize, Serialize};

/// The four failure categories of design.md §4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Environmental => "environmental",
            Category::Agent => "agent",
            Category::UserConfig => "user_config",
            Category::Ambiguous => "ambiguous",
        }
    }
}

/// A classified failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    pub category: Category,
    /// The name of the rule that matched; it appears in the journal and summary.
    pub rule: String,
    /// A short human reason ("the agent crashed (SIGSEGV)").
    pub reason: String,
    /// The next attempt must start a new session: resuming this one cannot work (the
    /// session is unknown to the agent, or its context is full).
    #[serde(default)]
    pub fresh_session: bool,
    /// The agent lost a tool it was given: the next attempt starts fresh with the
    /// tool registry rebuilt, counted against the `tool-registry-reset` cap.
    #[serde(default)]
    pub reset_tool_registry: bool,
    /// When a limit resets (unix seconds), as a configured error pattern captured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_at: Option<i64>,
}

impl Classification {
    /// A classification that carries no instruction for the next attempt.
    pub fn new(category: Category, rule: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            category,
            rule: rule.into(),
            reason: reason.into(),
            fresh_session: false,
            reset_tool_registry: false,
            reset_at: None,
        }
    }
}

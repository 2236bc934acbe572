//! Recovery: what kind of failure an attempt was ([`classify`], and [`spawn`] for a
//! launch that failed before the agent ran), what to do next ([`policy`],
//! [`rate_limit`], returning the [`decision`] types), when a provider's limit resets
//! ([`reset`]), what a resume continues under the current config ([`resume`]), and
//! which endpoints tell whether the network is gone ([`probe`]; the TCP connect
//! itself is the shell's). All pure; the dispatcher executes their decisions.

pub(crate) mod classify;
#[cfg(test)]
mod corpus;
pub(crate) mod decision;
pub(crate) mod policy;
pub(crate) mod probe;
pub(crate) mod rate_limit;
pub(crate) mod reset;
pub(crate) mod resume;
pub(crate) mod spawn;

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

/// The classifier's rules, by name: journal, terminal and checkpoint show the
/// snake_case name; code compares the variants, never the names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    StallInProviderRetry,
    Stall,
    ToolTimeout,
    AttemptTimeout,
    ToolCallLoop,
    ToolText,
    ToolTextInThinking,
    CostCap,
    RepeatedPermissionDenials,
    BinaryMissing,
    AuthFailed,
    BillingDisabled,
    RateLimited,
    ProviderOverloaded,
    ProviderError,
    SessionNotFound,
    ConfiguredError,
    CliRejectedArgument,
    ModelInvalid,
    ContextTooLong,
    DnsFailure,
    ConnectionReset,
    ConnectionRefused,
    RequestTimeout,
    StreamStalled,
    StreamInterrupted,
    ToolUnavailable,
    Crashed,
    KilledFromOutside,
    ExitNonzero,
    NoDoneSignal,
    Unexplained,
    Offline,
    LaunchImpossible,
    SpawnFailed,
    /// A git hook rejected the commit of the iteration's work (an agent failure).
    CommitRejected,
    /// A name this version does not know (a checkpoint written by a newer ralph).
    #[serde(other)]
    Other,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::StallInProviderRetry => "stall_in_provider_retry",
            Rule::Stall => "stall",
            Rule::ToolTimeout => "tool_timeout",
            Rule::AttemptTimeout => "attempt_timeout",
            Rule::ToolCallLoop => "tool_call_loop",
            Rule::ToolText => "tool_text",
            Rule::ToolTextInThinking => "tool_text_in_thinking",
            Rule::CostCap => "cost_cap",
            Rule::RepeatedPermissionDenials => "repeated_permission_denials",
            Rule::BinaryMissing => "binary_missing",
            Rule::AuthFailed => "auth_failed",
            Rule::BillingDisabled => "billing_disabled",
            Rule::RateLimited => "rate_limited",
            Rule::ProviderOverloaded => "provider_overloaded",
            Rule::ProviderError => "provider_error",
            Rule::SessionNotFound => "session_not_found",
            Rule::ConfiguredError => "configured_error",
            Rule::CliRejectedArgument => "cli_rejected_argument",
            Rule::ModelInvalid => "model_invalid",
            Rule::ContextTooLong => "context_too_long",
            Rule::DnsFailure => "dns_failure",
            Rule::ConnectionReset => "connection_reset",
            Rule::ConnectionRefused => "connection_refused",
            Rule::RequestTimeout => "request_timeout",
            Rule::StreamStalled => "stream_stalled",
            Rule::StreamInterrupted => "stream_interrupted",
            Rule::ToolUnavailable => "tool_unavailable",
            Rule::Crashed => "crashed",
            Rule::KilledFromOutside => "killed_from_outside",
            Rule::ExitNonzero => "exit_nonzero",
            Rule::NoDoneSignal => "no_done_signal",
            Rule::Unexplained => "unexplained",
            Rule::Offline => "offline",
            Rule::LaunchImpossible => "launch_impossible",
            Rule::SpawnFailed => "spawn_failed",
            Rule::CommitRejected => "commit_rejected",
            Rule::Other => "other",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A classified failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    pub category: Category,
    /// The rule that matched; its name appears in the journal and summary.
    pub rule: Rule,
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
    pub fn new(category: Category, rule: Rule, reason: impl Into<String>) -> Self {
        Self { category, rule, reason: reason.into(), fresh_session: false, reset_tool_registry: false, reset_at: None }
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;

    #[test]
    fn rule_names_round_trip_and_unknown_ones_are_kept_readable() {
        let json = serde_json::to_string(&Rule::NoDoneSignal).unwrap();
        assert_eq!(json, "\"no_done_signal\"");
        assert_eq!(serde_json::from_str::<Rule>(&json).unwrap(), Rule::NoDoneSignal);
        assert_eq!(serde_json::from_str::<Rule>("\"from_the_future\"").unwrap(), Rule::Other);
    }

    /// Rules are compared as variants: no module compares a rule's name as a string.
    #[test]
    fn no_module_compares_rule_names_as_strings() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut stack = vec![src];
        let mut offenders = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    // Built from pieces so that this file does not match itself.
                    let bads =
                        [["rule", " == \""].concat(), ["rule", " != \""].concat(), ["rule", ".as_str() =="].concat()]
                            .into_iter()
                            .chain([["match (failure", ".rule.as_str()"].concat()]);
                    for bad in bads {
                        if text.contains(&bad) {
                            offenders.push(format!("{}: {bad}", path.display()));
                        }
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}

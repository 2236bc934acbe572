//! Recovery: what kind of failure an attempt was ([`classify`], and [`spawn`] for a
//! launch that failed before the agent ran), what to do next ([`policy`],
//! [`rate_limit`], returning the [`decision`] types), when a provider's limit resets
//! ([`reset`]), what a resume continues under the current config ([`resume`]), and
//! which endpoints tell whether the network is gone ([`probe`]; the TCP connect
//! itself is the shell's). All pure; the run's step (`step::step`) acts on their
//! decisions.

pub(crate) mod classify;
#[cfg(test)]
mod corpus;
pub(crate) mod decision;
pub(crate) mod host;
pub(crate) mod policy;
pub(crate) mod probe;
pub(crate) mod rate_limit;
pub(crate) mod reset;
pub(crate) mod resume;
pub(crate) mod spawn;

use serde::{Deserialize, Serialize};

pub(crate) use crate::outcome::Category;

/// The classifier's rules, by name: journal, terminal and checkpoint show the
/// snake_case name; code compares the variants, never the names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
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
    /// The agent's MCP `report_interruption` ended its attempt, and no other rule
    /// explains its reason.
    ReportedInterruption,
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

//! ralph's internal names in the words a person reads on the terminal and in the
//! summary: the detectors that step in, the sign-off rules, the failure categories,
//! the caps (by the config key that sets them) and a place in the chain. The names
//! themselves stay where tools read them: the journal, `ralph.log` with `-v`, and
//! the `--json` views (docs/recovery.md, "Where the names are").

use crate::recovery::Category;
use crate::recovery::policy::Cap;
use crate::supervise::Detector;

/// What a detector saw, as the line that ends an attempt says it.
pub(crate) fn detector(d: Detector) -> &'static str {
    match d {
        Detector::Stall => "the agent was silent longer than [timeouts] stall",
        Detector::ToolTimeout => "a tool call ran longer than [timeouts] tool",
        Detector::AttemptTimeout => "the attempt ran longer than [timeouts] attempt",
        Detector::ToolCallLoop => "the agent repeated the same tool calls",
        Detector::ToolText => "the agent wrote a tool call as text instead of making it",
        Detector::ToolTextInThinking => "the agent wrote a tool call in its thinking instead of making it",
        Detector::PermissionDenials => "the agent's own permission settings denied its tools again and again",
        Detector::ContinueStorm => {
            "the iteration needed [retry] storm_recoveries recoveries within [retry] storm_window: the next \
             attempt starts a fresh session"
        }
        Detector::ReadyToContinue => "the agent stopped to announce or ask instead of going on",
        Detector::DoneConfirmation => "the agent's sign-off was in doubt: asking it to confirm",
        Detector::CostCap => "the run reached [general] max_cost_usd",
    }
}

/// A detector in the summary's counts: what ralph did.
pub(crate) fn stepped_in(d: Detector) -> &'static str {
    match d {
        Detector::Stall => "ended a silent agent",
        Detector::ToolTimeout => "ended a tool call that ran too long",
        Detector::AttemptTimeout => "ended an attempt that ran too long",
        Detector::ToolCallLoop => "broke a loop of tool calls",
        Detector::ToolText | Detector::ToolTextInThinking => "ended a tool call written as text",
        Detector::PermissionDenials => "ended an agent its permissions kept denying",
        Detector::ContinueStorm => "started a fresh session after many recoveries",
        Detector::ReadyToContinue => "told an agent that stopped to go on",
        Detector::DoneConfirmation => "asked the agent to confirm it was done",
        Detector::CostCap => "ended an attempt at the cost cap",
    }
}

/// Failures of a category, in the summary's counts.
pub(crate) fn category(c: Category) -> &'static str {
    match c {
        Category::Agent => "by the agent",
        Category::Environmental => "of the network or provider",
        Category::UserConfig => "for you to fix (credentials, setup)",
        Category::Ambiguous => "unexplained",
    }
}

/// A run's stop reason as the summary's headline says it: the cap's stable phrase
/// (kept in the checkpoint and the journal) becomes the key that sets the cap.
pub(crate) fn stop_reason(reason: &str, phase: &str) -> String {
    match Cap::of_reason(reason) {
        Some(cap) => {
            let detail = reason[cap.phrase().len()..].trim_start_matches(':').trim();
            let limit = format!("the limit {} was reached", cap.key(phase));
            if detail.is_empty() { limit } else { format!("{detail} ({limit})") }
        }
        None => reason.to_string(),
    }
}

/// The agent a fallover left, where it went, and the round through the chain.
pub(crate) fn fallover(from: &str, to: &str, rate_limited: bool, round: Option<u32>) -> String {
    let why = if rate_limited {
        format!("agent {from} is rate-limited")
    } else {
        format!("agent {from} failed [retry] agent_attempts times in this iteration")
    };
    let next =
        if from == to { format!("trying {to} again with a fresh budget") } else { format!("falling over to {to}") };
    let round = round.map(|n| format!(" (round {n} through the chain, of [general] max_cycles)")).unwrap_or_default();
    format!("{why}: {next}{round}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_is_named_by_its_key() {
        let reason =
            "max_cycles exhausted: phase develop went through its chain [a] 2 times without finishing iteration 1";
        assert_eq!(
            stop_reason(reason, "develop"),
            "phase develop went through its chain [a] 2 times without finishing iteration 1 (the limit [general] \
             max_cycles was reached)"
        );
        assert_eq!(stop_reason("iteration cap exhausted", "fix"), "the limit [phases.fix] iterations was reached");
        assert_eq!(stop_reason("the agent cancelled the task", "p"), "the agent cancelled the task");
    }

    #[test]
    fn a_one_agent_chain_does_not_fall_over() {
        assert_eq!(
            fallover("a", "a", false, Some(2)),
            "agent a failed [retry] agent_attempts times in this iteration: trying a again with a fresh budget \
             (round 2 through the chain, of [general] max_cycles)"
        );
        assert_eq!(fallover("a", "b", true, None), "agent a is rate-limited: falling over to b");
    }
}

//! The names of ralph's detectors: what stepped in, as the journal's `intervention`
//! events, the terminal, the summary and the checkpoint's counters name it. One enum,
//! so that no module compares a detector's name as a string; which of them end an
//! attempt is [`EndedBy::fired`](super::ended_by::EndedBy::fired)'s to say.

use serde::Serialize;

/// A detector of ralph's, by the name the journal gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub enum Detector {
    /// No output and no tool running for `[timeouts] stall`.
    Stall,
    /// One tool call ran past `[timeouts] tool`.
    ToolTimeout,
    /// The attempt ran past `[timeouts] attempt`.
    AttemptTimeout,
    /// The same tool calls again and again.
    ToolCallLoop,
    /// A tool call printed as text.
    ToolText,
    /// A tool call written in the thinking.
    ToolTextInThinking,
    /// The cost the agent reported while it ran reached `max_cost_usd`.
    #[serde(rename = "max_cost_usd")]
    #[strum(serialize = "max_cost_usd")]
    CostCap,
    /// Tool calls refused permission again and again.
    #[serde(rename = "repeated_permission_denials")]
    #[strum(serialize = "repeated_permission_denials")]
    PermissionDenials,
    /// Too many recoveries of one iteration: the next attempt starts fresh.
    ContinueStorm,
    /// The final message stopped to announce or ask about the next step.
    ReadyToContinue,
    /// A doubtful sign-off: the session is asked to confirm.
    DoneConfirmation,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_names_each_detector_as_before() {
        let names: Vec<String> = [Detector::CostCap, Detector::PermissionDenials, Detector::DoneConfirmation]
            .iter()
            .map(|d| serde_json::to_string(d).unwrap())
            .collect();
        assert_eq!(names, ["\"max_cost_usd\"", "\"repeated_permission_denials\"", "\"done_confirmation\""]);
        assert_eq!(Detector::ToolCallLoop.to_string(), "tool_call_loop");
    }
}

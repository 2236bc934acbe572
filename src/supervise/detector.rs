//! The names of ralph's detectors: what stepped in, as the journal's `intervention`
//! events, the terminal, the summary and the checkpoint's counters name it. One enum,
//! so that no module compares a detector's name as a string; which of them end an
//! attempt is [`EndedBy::fired`](super::ended_by::EndedBy::fired)'s to say.

use serde::Serialize;

crate::named::named! {
    /// A detector of ralph's, by the name the journal gives it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
    pub enum Detector {
        /// No output and no tool running for `[timeouts] stall`.
        Stall = "stall",
        /// One tool call ran past `[timeouts] tool`.
        ToolTimeout = "tool_timeout",
        /// The attempt ran past `[timeouts] attempt`.
        AttemptTimeout = "attempt_timeout",
        /// The same tool calls again and again.
        ToolCallLoop = "tool_call_loop",
        /// A tool call printed as text.
        ToolText = "tool_text",
        /// A tool call written in the thinking.
        ToolTextInThinking = "tool_text_in_thinking",
        /// The cost the agent reported while it ran reached `max_cost_usd`.
        CostCap = "max_cost_usd",
        /// Tool calls refused permission again and again.
        PermissionDenials = "repeated_permission_denials",
        /// Too many recoveries of one iteration: the next attempt starts fresh.
        ContinueStorm = "continue_storm",
        /// The final message stopped to announce or ask about the next step.
        ReadyToContinue = "ready_to_continue",
        /// A doubtful sign-off: the session is asked to confirm.
        DoneConfirmation = "done_confirmation",
    }
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

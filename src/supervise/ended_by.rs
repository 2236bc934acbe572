//! Who ended an attempt: the agent by itself, or ralph's supervision and which of
//! its detectors. Decided here, where the watching happens; the classifier reads it.

use super::detector::Detector;

/// Who ended the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// The agent exited on its own.
    Agent,
    /// ralph, because this detector fired: the stall, tool or attempt timeout, a
    /// loop of tool calls, a tool call written as text (in the message or the
    /// thinking), the cost cap, permission denials again and again.
    Ralph(Detector),
    /// ralph, at the agent's word: it reported an interruption (MCP
    /// `report_interruption`), so its attempt ends now and recovery starts.
    Interruption,
}

impl EndedBy {
    /// Who ended the attempt when `detector` fired during it: ralph for the
    /// detectors that end attempts, the agent for those that only note (a storm, a
    /// question).
    pub fn fired(detector: Detector) -> EndedBy {
        match detector {
            Detector::ContinueStorm | Detector::ReadyToContinue | Detector::DoneConfirmation => EndedBy::Agent,
            Detector::Stall
            | Detector::ToolTimeout
            | Detector::AttemptTimeout
            | Detector::ToolCallLoop
            | Detector::ToolText
            | Detector::ToolTextInThinking
            | Detector::CostCap
            | Detector::PermissionDenials => EndedBy::Ralph(detector),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_detectors_that_end_an_attempt_name_ralph() {
        assert_eq!(EndedBy::fired(Detector::Stall), EndedBy::Ralph(Detector::Stall));
        assert_eq!(EndedBy::fired(Detector::ContinueStorm), EndedBy::Agent);
    }
}

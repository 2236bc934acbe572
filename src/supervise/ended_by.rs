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

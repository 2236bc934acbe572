//! Who ended an attempt: the agent by itself, or ralph's supervision and for which
//! reason. Decided here, where the watching happens; the classifier reads it.

/// Who ended the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// The agent exited on its own.
    Agent,
    /// ralph: no event for the stall timeout while no tool was running.
    Stall,
    /// ralph: one tool call ran past the tool timeout.
    ToolTimeout,
    /// ralph: the attempt ran past the attempt timeout.
    AttemptTimeout,
    /// ralph: the agent repeated the same tool calls.
    Loop,
    /// ralph: the agent printed a tool call as text instead of making it.
    ToolText,
    /// ralph: the agent wrote a tool call in its thinking instead of making it.
    ToolTextInThinking,
    /// ralph: the cost the agent reported during the attempt reached `max_cost_usd`.
    CostCap,
    /// ralph: the agent's tool calls were refused permission again and again.
    PermissionDenials,
    /// ralph, at the agent's word: it reported an interruption (MCP
    /// `report_interruption`), so its attempt ends now and recovery starts.
    Interruption,
}

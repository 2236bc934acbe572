//! `AgentEvent`: the one event type every agent's output is parsed into.
//!
//! Parsers (one per output format) turn lines into events; the supervisor, the
//! classifier and the done-signal rules only ever see these.

use serde::{Deserialize, Serialize};

/// One thing an agent reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The session id the agent reports (it may change on resume).
    Session { id: String },
    /// Assistant text (one message or block).
    Text { text: String },
    /// Thinking / reasoning text.
    Thinking { text: String },
    /// A tool call started.
    ToolStarted { id: String, name: String, input: serde_json::Value },
    /// A tool call finished.
    ToolFinished { id: String, is_error: bool, output: String },
    /// The provider reported a rate or usage limit.
    RateLimit {
        /// "rejected", "allowed_warning", ...
        status: String,
        /// Unix seconds of the reset, when reported.
        resets_at: Option<i64>,
        /// "five_hour", "seven_day", ...
        limit_type: Option<String>,
    },
    /// The CLI is retrying a provider request on its own.
    ApiRetry { attempt: u32, error: String, status: Option<u16> },
    /// An error the agent reported in its stream.
    Error { message: String },
    /// Token usage and cost (cumulative for the attempt when `cumulative`).
    Usage { input_tokens: u64, output_tokens: u64, cost_usd: Option<f64> },
    /// The final result of the run.
    Result {
        text: String,
        is_error: bool,
        subtype: String,
        /// HTTP status of the provider error, when reported.
        api_error_status: Option<u16>,
    },
    /// An event kind the parser does not know; tolerated and logged.
    Unknown { kind: String },
}

/// Turns one output line into zero or more events. One implementation per format.
pub trait LineParser: Send {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent>;

    /// [`parse_line`](Self::parse_line) into `out` (empty on entry), a buffer the
    /// caller keeps from line to line.
    fn parse_into(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        out.extend(self.parse_line(line));
    }
}

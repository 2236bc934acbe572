//! Parser for Claude Code's headless `--output-format stream-json` (one JSON object
//! per line), also spoken by the built-in scripted agent.

use super::event::{AgentEvent, LineParser};

/// Stateless apart from nothing yet; one per attempt.
#[derive(Debug, Default)]
pub struct ClaudeStreamParser;

impl LineParser for ClaudeStreamParser {
    fn parse_line(&mut self, _line: &str) -> Vec<AgentEvent> {
        Vec::new()
    }
}

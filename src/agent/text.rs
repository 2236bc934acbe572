//! Parser for plain-text agents (`output = "text"`): every line is assistant text.
//! The final message is the end of stdout, kept by the attempt.

use super::event::{AgentEvent, LineParser};

#[derive(Debug, Default)]
pub struct TextParser;

impl LineParser for TextParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        vec![AgentEvent::Text { text: line.to_string() }]
    }
}

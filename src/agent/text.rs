//! Parser for plain-text agents (`output = "text"`): every line is assistant text.
//! The final message is the end of stdout, kept by the attempt.

use super::event::{AgentEvent, LineParser, Spare};

#[derive(Debug, Default)]
pub struct TextParser {
    spare: Spare,
}

impl LineParser for TextParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        vec![AgentEvent::Text { text: line.to_string() }]
    }

    fn parse_into(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        out.push(AgentEvent::Text { text: self.spare.text(line) });
    }

    fn recycle(&mut self, text: String) {
        self.spare.keep(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recycled_buffer_reads_like_a_new_one() {
        let (mut p, mut out) = (TextParser::default(), Vec::new());
        let long = "x".repeat(20_000);
        for line in ["a longer line first", "short", "", "é and more", &long, "after"] {
            p.parse_into(line, &mut out);
            assert_eq!(out, p.parse_line(line));
            for event in out.drain(..) {
                if let AgentEvent::Text { text } = event {
                    p.recycle(text);
                }
            }
        }
    }
}

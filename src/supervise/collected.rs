//! What an attempt keeps of its agent's output for the judge, the classifier and the
//! record: the session it reported, its result and last text (the final message is
//! chosen from them by [`final_message`]), its last structured events, the ends of its
//! stderr and of what it printed outside its stream format, and the usage it reported.
//! Pure and bounded: lines and events in, a [`Gathered`] out, however long the agent
//! talks.

use std::collections::VecDeque;

use crate::agent::AgentEvent;
use crate::outcome::Usage;

use super::final_message;

/// Structured events kept for the classifier.
const EVENTS_KEPT: usize = 64;
/// Bytes of text kept for the classifier and the final message of text agents.
const TAIL_BYTES: usize = 8 * 1024;

/// The output of one attempt, as far as it is kept.
#[derive(Default)]
pub(crate) struct Collected {
    /// The agent's final message is the end of its stdout (plain text output).
    text_output: bool,
    session: Option<String>,
    last_text: Option<String>,
    result: Option<(String, bool)>,
    /// A tool call started after the last text or result: the agent worked on after
    /// what is its final message.
    tool_after_message: bool,
    events: VecDeque<AgentEvent>,
    /// stderr and unparsed stdout, for the classifier.
    tail: String,
    /// The end of stdout alone: a text agent's final message.
    stdout_tail: String,
    /// The end of stderr alone.
    stderr_tail: String,
    usage: Usage,
}

/// What the output of an attempt comes to.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Gathered {
    /// The last session id the agent reported.
    pub session: Option<String>,
    /// The agent's own final message.
    pub final_message: Option<String>,
    pub result_is_error: bool,
    /// A tool call started after the final message (structured output only): a done
    /// tag in it was not the agent's last act.
    pub tool_after_message: bool,
    /// The last structured (non-text) events.
    pub events: Vec<AgentEvent>,
    /// The end of stderr and of unparsed stdout (not redacted yet: the shell keeps
    /// only redacted text).
    pub text_tail: String,
    /// The end of stderr alone: where an agent words its own error.
    pub stderr_tail: String,
    pub usage: Usage,
}

impl Collected {
    pub(crate) fn new(text_output: bool) -> Self {
        Self { text_output, ..Self::default() }
    }

    /// A line of stderr: evidence for the classifier. Lines come as the attempt's log
    /// wrote them (redacted with what the lines before them left).
    pub(crate) fn stderr_line(&mut self, line: &str) {
        push_bounded(&mut self.tail, line);
        push_bounded(&mut self.stderr_tail, line);
    }

    /// A line of stdout, after its events were absorbed; `unparsed` when it held
    /// nothing of the agent's stream format (a CLI's own error printout).
    pub(crate) fn stdout_line(&mut self, line: &str, unparsed: bool) {
        if self.text_output {
            push_bounded(&mut self.stdout_tail, line);
        }
        if self.text_output || unparsed {
            push_bounded(&mut self.tail, line);
        }
    }

    /// Takes in one event; returns a session id when it is new.
    pub(crate) fn absorb(&mut self, event: AgentEvent) -> Option<String> {
        if let AgentEvent::Text { text } = event {
            if !self.text_output {
                self.last_text = Some(text);
                self.tool_after_message = false;
            }
            return None;
        }
        let mut new_session = None;
        match &event {
            AgentEvent::ToolStarted { .. } => self.tool_after_message = true,
            AgentEvent::Session { id } if self.session.as_deref() != Some(id) => {
                self.session = Some(id.clone());
                new_session = Some(id.clone());
            }
            AgentEvent::Result { text, is_error, .. } => {
                self.result = Some((text.clone(), *is_error));
                self.tool_after_message = false;
            }
            AgentEvent::Usage { input_tokens, output_tokens, cost_usd } => {
                self.usage.input_tokens += input_tokens;
                self.usage.output_tokens += output_tokens;
                self.usage.cost_usd += cost_usd.unwrap_or(0.0);
            }
            AgentEvent::Error { message } => push_bounded(&mut self.tail, message),
            _ => {}
        }
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(event);
        new_session
    }

    pub(crate) fn finish(self) -> Gathered {
        let stdout_tail = self.text_output.then_some(self.stdout_tail);
        let (final_message, result_is_error) = final_message::choose(self.result, self.last_text, stdout_tail);
        Gathered {
            session: self.session,
            final_message,
            result_is_error,
            tool_after_message: self.tool_after_message,
            events: self.events.into(),
            text_tail: self.tail,
            stderr_tail: self.stderr_tail,
            usage: self.usage,
        }
    }
}

/// Appends a line, keeping the last `TAIL_BYTES` or so, cut where a line starts (a
/// cut inside a line could part a secret from its name, or a key's body from its
/// `BEGIN` line, before the tail is redacted) or else on a char boundary.
fn push_bounded(buf: &mut String, line: &str) {
    buf.push_str(line);
    buf.push('\n');
    if buf.len() > TAIL_BYTES * 2 {
        let mut cut = buf.len() - TAIL_BYTES;
        while !buf.is_char_boundary(cut) {
            cut += 1;
        }
        if let Some(next) = buf[cut..buf.len() - 1].find('\n') {
            cut += next + 1;
        }
        buf.drain(..cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_call_after_the_final_message_is_told() {
        let tool = || AgentEvent::ToolStarted { id: "t".into(), name: "Bash".into(), input: serde_json::json!({}) };
        let mut c = Collected::new(false);
        let _ = c.absorb(AgentEvent::Text { text: "done".into() });
        assert!(!c.tool_after_message);
        let _ = c.absorb(tool());
        assert!(c.tool_after_message);
        let _ = c.absorb(AgentEvent::Text { text: "done now".into() });
        assert!(!c.finish().tool_after_message);
        let mut c = Collected::new(false);
        let _ = c.absorb(tool());
        let _ = c.absorb(AgentEvent::Result {
            text: "ok".into(),
            is_error: false,
            subtype: "success".into(),
            api_error_status: None,
        });
        assert!(!c.finish().tool_after_message, "a result after the call is the final message");
    }

    #[test]
    fn without_a_result_the_last_text_is_the_final_message() {
        let mut c = Collected::new(false);
        assert_eq!(c.absorb(AgentEvent::Session { id: "s1".into() }), Some("s1".into()));
        assert_eq!(c.absorb(AgentEvent::Session { id: "s1".into() }), None, "not new");
        let _ = c.absorb(AgentEvent::Text { text: "first".into() });
        let _ = c.absorb(AgentEvent::Text { text: "second".into() });
        let usage = AgentEvent::Usage { input_tokens: 3, output_tokens: 2, cost_usd: Some(0.5) };
        let _ = c.absorb(usage.clone());
        let _ = c.absorb(usage);
        let g = c.finish();
        assert_eq!((g.session.as_deref(), g.final_message.as_deref()), (Some("s1"), Some("second")));
        assert_eq!((g.usage.input_tokens, g.usage.output_tokens, g.usage.cost_usd), (6, 4, 1.0));
    }

    #[test]
    fn a_text_agent_ends_with_its_stdout_and_the_classifier_sees_stderr() {
        let mut c = Collected::new(true);
        c.stdout_line("tick 1", false);
        c.stdout_line("all done", false);
        c.stderr_line("warning: slow disk");
        let g = c.finish();
        assert_eq!(g.final_message.as_deref(), Some("tick 1\nall done\n"));
        assert_eq!(g.stderr_tail, "warning: slow disk\n");
        assert!(g.text_tail.contains("all done") && g.text_tail.contains("slow disk"));
    }

    #[test]
    fn the_tails_and_the_events_stay_bounded() {
        let mut c = Collected::new(false);
        for n in 0..10_000 {
            c.stdout_line(&format!("é unparsed line {n}"), true);
            let _ = c.absorb(AgentEvent::Error { message: format!("error {n}") });
        }
        let g = c.finish();
        assert!(g.text_tail.len() <= 2 * TAIL_BYTES, "{}", g.text_tail.len());
        assert!(g.text_tail.ends_with("error 9999\n"));
        // Cut where a line starts: no secret is parted from its name.
        assert!(
            g.text_tail.starts_with("é unparsed line ") || g.text_tail.starts_with("error "),
            "{}",
            &g.text_tail[..40]
        );
        assert_eq!(g.events.len(), EVENTS_KEPT);
    }
}

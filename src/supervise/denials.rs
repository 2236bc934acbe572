//! Repeated policy violations (design.md §4, an `agent` failure): tool calls that the
//! agent's permission settings refused. Claude's `permission_denials` arrive only in
//! its final result, so the tool results that report a denial are counted while the
//! attempt runs; at [`LIMIT`] in one attempt, ralph ends it with a note naming the
//! denied tool. A refused shell command ("Permission denied" from the file system) is
//! not a policy violation and does not count.

use std::collections::HashMap;

use crate::agent::AgentEvent;

/// Denials in one attempt that end it.
pub(crate) const LIMIT: u32 = 3;

/// Words of a tool result that reports a denial by the agent's own permission
/// settings, each with a second word the same result must hold: Claude Code ("Claude
/// requested permissions to use Bash, but you haven't granted it yet"; "Permission to
/// use Bash has been denied"), Gemini CLI ("denied by policy"), OpenCode ("a rule which
/// prevents you from using this specific tool call").
const DENIAL: &[(&str, &str)] = &[
    ("requested permissions to use", "granted"),
    ("permission to use", "denied"),
    ("denied by policy", "denied"),
    ("prevents you from using this specific tool call", "rule"),
    ("the tool use was rejected", "rejected"),
];

#[derive(Debug, Default)]
pub(crate) struct Denials {
    /// Tool names by call id, to name the denied tool.
    names: HashMap<String, String>,
    count: u32,
}

impl Denials {
    /// Takes in one event; at the limit, the evidence naming the denied tool.
    pub(crate) fn on_event(&mut self, event: &AgentEvent) -> Option<String> {
        match event {
            AgentEvent::ToolStarted { id, name, .. } => {
                self.names.insert(id.clone(), name.clone());
                None
            }
            AgentEvent::ToolFinished { id, is_error: true, output } if is_denial(output) => {
                self.count += 1;
                let tool = self.names.get(id).map_or("a tool", String::as_str);
                (self.count == LIMIT).then(|| {
                    format!(
                        "{LIMIT} tool calls were refused permission in this attempt, the last one to {tool}: \
                         work within the permissions you have, or stop and say what you need"
                    )
                })
            }
            _ => None,
        }
    }
}

fn is_denial(output: &str) -> bool {
    let lower = output.to_ascii_lowercase();
    DENIAL.iter().any(|(phrase, also)| lower.contains(phrase) && lower.contains(also))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn started(id: &str, name: &str) -> AgentEvent {
        AgentEvent::ToolStarted { id: id.into(), name: name.into(), input: json!({}) }
    }

    fn finished(id: &str, output: &str) -> AgentEvent {
        AgentEvent::ToolFinished { id: id.into(), is_error: true, output: output.into() }
    }

    #[test]
    fn three_denials_in_one_attempt_end_it_naming_the_tool() {
        let mut d = Denials::default();
        let denied = "Claude requested permissions to use Bash, but you haven't granted it yet.";
        let mut fired = None;
        for i in 0..3 {
            let id = format!("t{i}");
            assert_eq!(d.on_event(&started(&id, "Bash")), None);
            fired = d.on_event(&finished(&id, denied));
            if i < 2 {
                assert_eq!(fired, None);
            }
        }
        assert!(fired.is_some_and(|e| e.contains("to Bash")));
    }

    #[test]
    fn a_file_system_permission_error_is_not_a_policy_violation() {
        let mut d = Denials::default();
        for i in 0..5 {
            let id = format!("t{i}");
            let _ = d.on_event(&started(&id, "Bash"));
            assert_eq!(d.on_event(&finished(&id, "cat: /root/secret: Permission denied")), None);
            assert_eq!(d.on_event(&finished(&id, "curl: you do not have permission to use this API")), None);
        }
    }
}

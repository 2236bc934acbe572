//! Reading the agents' JSON lines: one line to an object (or why not), lenient field
//! getters (CLIs write numbers as floats or strings in places), and the HTTP status a
//! CLI quotes inside an error text. Shared by every stream parser.

use std::collections::HashSet;

use serde_json::Value;

use super::event::AgentEvent;

/// What one output line is.
pub(crate) enum Line {
    /// Nothing but whitespace: not an event, not activity.
    Blank,
    /// Not a JSON object (a stray log line, a bare scalar): no event, but proof that
    /// the process is alive.
    NotJson,
    Object(Value),
}

pub(crate) fn line(text: &str) -> Line {
    let text = text.trim();
    if text.is_empty() {
        return Line::Blank;
    }
    match serde_json::from_str(text) {
        Ok(v @ Value::Object(_)) => Line::Object(v),
        _ => Line::NotJson,
    }
}

/// The event for an event kind a parser does not know (tolerated, logged); a line
/// without a kind is "untyped".
pub(crate) fn unknown(kind: &str) -> AgentEvent {
    AgentEvent::Unknown { kind: if kind.is_empty() { "untyped" } else { kind }.to_owned() }
}

/// The frame of a stream parser: `parse` gets the line's object and its `type`. A
/// blank line yields nothing; anything that is not an object (a stray log line, a
/// bare scalar) is noise that still proves the process alive, and so is an object in
/// which `parse` recognised nothing: every non-blank line yields at least one event.
pub(crate) fn each_object(text: &str, parse: impl FnOnce(&Value, &str, &mut Vec<AgentEvent>)) -> Vec<AgentEvent> {
    let obj = match line(text) {
        Line::Object(obj) => obj,
        Line::Blank => return Vec::new(),
        Line::NotJson => return vec![unknown("non-json")],
    };
    let kind = str_field(&obj, "type").unwrap_or("");
    let mut out = Vec::new();
    parse(&obj, kind, &mut out);
    if out.is_empty() {
        out.push(unknown(kind));
    }
    out
}

/// The session id a stream last reported, so that `Session` is emitted only when the
/// id first appears or changes.
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionId(Option<String>);

impl SessionId {
    pub(crate) fn note(&mut self, id: Option<&str>, out: &mut Vec<AgentEvent>) {
        let Some(id) = id.filter(|id| !id.is_empty() && self.0.as_deref() != Some(id)) else { return };
        self.0 = Some(id.to_owned());
        out.push(AgentEvent::Session { id: id.to_owned() });
    }
}

/// A value as text: nothing for null, a string as is, with a `sep` the text parts of
/// an array (strings, or the parts' `text`) joined by it, anything else as JSON.
pub(crate) fn text(v: Option<&Value>, sep: Option<&str>) -> String {
    match (v, sep) {
        (None | Some(Value::Null), _) => String::new(),
        (Some(Value::String(s)), _) => s.clone(),
        (Some(Value::Array(parts)), Some(sep)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => str_field(p, "text"),
            })
            .collect::<Vec<_>>()
            .join(sep),
        (Some(other), _) => other.to_string(),
    }
}

/// The `Usage` of an object of token counts and a cost, when either is there: input
/// tokens under the first of the `input` keys present, output tokens the sum of the
/// `output` keys' counts.
pub(crate) fn usage(tokens: Option<&Value>, input: &[&str], output: &[&str], cost: Option<f64>) -> Option<AgentEvent> {
    let tokens = tokens.filter(|t| t.is_object());
    let count = |key: &&str| tokens.and_then(|t| u64_field(t, key));
    (tokens.is_some() || cost.is_some()).then(|| AgentEvent::Usage {
        input_tokens: input.iter().find_map(count).unwrap_or(0),
        output_tokens: output.iter().filter_map(count).fold(0, u64::saturating_add),
        cost_usd: cost,
    })
}

/// Tool calls reported as started and not finished yet, so that a call a stream
/// reports again (running, then completed) starts once.
#[derive(Debug, Default)]
pub(crate) struct OpenTools(pub(super) HashSet<String>);

impl OpenTools {
    /// `ToolStarted` for call `id` (its name and input) unless it is open already,
    /// then `ToolFinished` when it has `ended` (whether it failed, its output).
    pub(crate) fn note(&mut self, id: String, call: (String, Value), ended: Option<(bool, String)>) -> Vec<AgentEvent> {
        // Bounded: a stream of starts with no completions cannot grow it forever.
        // Only a new call clears it: an open one's update never starts it twice.
        if self.0.len() >= 1024 && !self.0.contains(&id) {
            self.0.clear();
        }
        let mut out = Vec::new();
        if self.0.insert(id.clone()) {
            out.push(AgentEvent::ToolStarted { id: id.clone(), name: call.0, input: call.1 });
        }
        if let Some((is_error, output)) = ended {
            self.0.remove(&id);
            out.push(AgentEvent::ToolFinished { id, is_error, output });
        }
        out
    }
}

pub(crate) fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(crate) fn string_or_empty(v: &Value, key: &str) -> String {
    str_field(v, key).unwrap_or("").to_owned()
}

/// Non-negative integers, tolerating floats and numeric strings (seen in the wild for
/// timestamps and status codes).
pub(crate) fn u64_field(v: &Value, key: &str) -> Option<u64> {
    match v.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| f.is_finite() && *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn i64_field(v: &Value, key: &str) -> Option<i64> {
    match v.get(key)? {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64().filter(|f| f.is_finite() && *f >= i64::MIN as f64 && *f <= i64::MAX as f64).map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An HTTP status field (100–599).
pub(crate) fn status_field(v: &Value, key: &str) -> Option<u16> {
    u64_field(v, key).and_then(|n| u16::try_from(n).ok()).filter(is_status)
}

/// The HTTP status right after one of `markers` in an error text, e.g. Codex's
/// "unexpected status 401 Unauthorized" or a quoted body's `"code":401`.
pub(crate) fn status_after(message: &str, markers: &[&str]) -> Option<u16> {
    markers.iter().find_map(|marker| {
        let at = message.find(marker)? + marker.len();
        let digits: String = message[at..].trim_start().chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().filter(is_status)
    })
}

fn is_status(n: &u16) -> bool {
    (100..600).contains(n)
}

/// Robustness checks every parser runs on itself: odd values in every field,
/// truncated real lines, junk. A parser passes by not panicking.
#[cfg(test)]
pub(crate) mod fuzz {
    use serde_json::{Value, json};

    use crate::agent::event::LineParser;

    /// Values of every JSON shape, including ones no CLI sends.
    pub(crate) fn odd_values() -> Vec<Value> {
        vec![
            json!(null),
            json!(1e300),
            json!(-5),
            json!(70000),
            json!(true),
            json!("x"),
            json!([1, "a", {}]),
            json!({}),
            json!({"nested": {"deep": [null]}}),
        ]
    }

    /// Every event type with every key set to every odd value.
    pub(crate) fn each_field(p: &mut dyn LineParser, types: &[&str], keys: &[&str]) {
        for t in types {
            for k in keys {
                for v in odd_values() {
                    let mut obj = json!({"type": t});
                    obj[*k] = v;
                    p.parse_line(&obj.to_string());
                }
            }
        }
    }

    /// Every prefix of a real line.
    pub(crate) fn truncations(p: &mut dyn LineParser, line: &str) {
        for i in (0..line.len()).filter(|i| line.is_char_boundary(*i)) {
            p.parse_line(&line[..i]);
        }
    }

    /// Broken JSON and 2000 lines of deterministic byte soup.
    pub(crate) fn junk(p: &mut dyn LineParser, mut seed: u32) {
        for junk in ["{", "}", "[]", "\u{fffd}\u{0}", "{\"type\":", "{\"type\":null}", "nul"] {
            p.parse_line(junk);
        }
        for _ in 0..2000 {
            let s: String = (0..40)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    let alphabet = b"{}[]\":,01 truefalsnl\\abcxyz-.e";
                    alphabet[(seed >> 16) as usize % alphabet.len()] as char
                })
                .collect();
            p.parse_line(&s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_open_call_at_the_bound_is_not_started_again() {
        let mut open = OpenTools::default();
        for i in 0..1024 {
            let _ = open.note(i.to_string(), ("shell".to_string(), json!({})), None);
        }
        let call = || ("shell".to_string(), json!({}));
        let again = open.note("7".to_string(), call(), None);
        assert!(again.is_empty(), "{again:?}");
        let done = open.note("7".to_string(), call(), Some((false, "ok".to_string())));
        assert!(matches!(done.as_slice(), [AgentEvent::ToolFinished { id, .. }] if id == "7"), "{done:?}");
        // A new call past the bound starts, and the set stays bounded.
        let _ = open.note("a".to_string(), call(), None);
        let _ = open.note("b".to_string(), call(), None);
        assert!(open.0.len() <= 1024);
    }

    #[test]
    fn lines_are_blank_not_json_or_objects() {
        assert!(matches!(line("  "), Line::Blank));
        assert!(matches!(line("Reading additional input from stdin..."), Line::NotJson));
        assert!(matches!(line("42"), Line::NotJson));
        assert!(matches!(line(r#"{"type":"x"}"#), Line::Object(_)));
    }

    #[test]
    fn numbers_are_read_leniently() {
        let v = json!({"a": 3.0, "b": "17", "c": -1, "d": 529, "e": 9999});
        assert_eq!(u64_field(&v, "a"), Some(3));
        assert_eq!(u64_field(&v, "b"), Some(17));
        assert_eq!(u64_field(&v, "c"), None);
        assert_eq!(i64_field(&v, "c"), Some(-1));
        assert_eq!(status_field(&v, "d"), Some(529));
        assert_eq!(status_field(&v, "e"), None);
    }

    #[test]
    fn statuses_in_error_texts() {
        let codex = "unexpected status 401 Unauthorized: Incorrect API key";
        assert_eq!(status_after(codex, &["unexpected status ", "last status: "]), Some(401));
        let gemini = r#"[API Error: {"error":{"code": 500,"message":"x"}}]"#;
        assert_eq!(status_after(gemini, &["\"code\":"]), Some(500));
        assert_eq!(status_after("500 lines changed", &["unexpected status "]), None);
    }
}

//! A tool call printed as text: the model wrote the syntax of a call (XML-ish tags,
//! special tokens or a JSON call object) into its message or its thinking instead of
//! making the call, so nothing ran and the turn ends idle.
//!
//! Code is never a call: fenced blocks, inline code, and everything after a fence
//! that is never closed are ignored (see `supervise::markdown`). Thinking gets
//! stricter rules, because models reason *about* the calls they are about to make:
//! there a tag counts only with its closing tag, and a cut-off tail does not count.
//! Whether a call in thinking was then made for real is the caller's to check.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use serde_json::{Map, Value};

use super::markdown::mask_code;

/// A printed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolText {
    /// The rule that matched, for the journal.
    pub pattern: &'static str,
    /// At most 200 characters of the original text around the match.
    pub excerpt: String,
}

impl ToolText {
    /// "pattern: excerpt", as the journal shows it.
    pub(crate) fn evidence(&self) -> String {
        format!("{}: {}", self.pattern, self.excerpt)
    }
}

/// Texts this short are a word or a tag name, never a whole failed call.
const MIN_CHARS: usize = 20;
const EXCERPT_BEFORE: usize = 40;
const EXCERPT_CHARS: usize = 200;
/// Bounds the JSON scan of a pathological text full of braces.
const MAX_JSON_STARTS: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Message,
    Thinking,
}

/// A tool call printed in the agent's message text.
#[must_use]
pub fn detect(text: &str) -> Option<ToolText> {
    scan(text, Mode::Message)
}

/// A tool call trapped in the agent's thinking.
#[must_use]
pub(crate) fn detect_in_thinking(text: &str) -> Option<ToolText> {
    scan(text, Mode::Thinking)
}

/// What every pattern below needs, literally: masking code only turns characters
/// into spaces, so it never makes one. A tag, a cut-off tag or a token starts with
/// `<` and the start of a tool word, `</`, `<|` or `<antml:`; a JSON call has a
/// `"name"`, `"tool…"`, `"action"`, `"function"` or `"type"` key, unless its keys
/// are `\u` escapes. Most lines, of prose and of code alike, hold none of them.
/// (Separated by spaces: no needle holds one.)
const NEEDLES: &str =
    r#"<func <invo <para <tool </ <| <｜ <antml: [TOOL_CALLS] "name" "tool "action" "function" "type" \u"#;

/// Whether `text` may hold a printed tool call: one of [`NEEDLES`] or a named tool
/// tag ([`TOOL_TAGS`]) is in it. A text without one skips the full scan (a masked
/// copy, a dozen searches, a JSON parse at every `{`), which a flood of source code
/// would otherwise pay on nearly every line. Every call holds `<`, `[` or `"` (a
/// `\u` escape counts only in a JSON key, between quotes): a text without any, as
/// most prose, costs one byte scan.
fn may_hold_a_call(text: &str) -> bool {
    static FINDER: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| {
        let tags = TOOL_TAGS.iter().map(|(open, _)| open.as_str());
        AhoCorasick::new(NEEDLES.split_whitespace().chain(tags)).ok()
    });
    memchr::memchr3(b'<', b'[', b'"', text.as_bytes()).is_some()
        // Without the finder (it is built from constants: never), every text is scanned.
        && FINDER.as_ref().is_none_or(|finder| finder.is_match(text))
}

fn scan(text: &str, mode: Mode) -> Option<ToolText> {
    if may_hold_a_call(text) { scan_masked(text, mode) } else { None }
}

/// [`scan`] without the [`may_hold_a_call`] shortcut.
fn scan_masked(text: &str, mode: Mode) -> Option<ToolText> {
    if text.chars().filter(|c| !c.is_whitespace()).count() < MIN_CHARS {
        return None;
    }
    let m = mask_code(text);
    let (at, pattern) = [xml_tags(&m, mode), named_tool_tags(&m, mode), special_tokens(&m), json_calls(&m, mode)]
        .into_iter()
        .flatten()
        .chain(if mode == Mode::Message { truncated_tag(&m) } else { None })
        .min_by_key(|(at, _)| *at)?;
    Some(ToolText { pattern, excerpt: excerpt(text, at) })
}

/// How much context a tag needs before it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Nobody writes this in prose: the tag alone is enough.
    Distinct,
    /// Needs its closing tag (attribute-style tags that XML configs also use).
    Closed,
    /// A plain tag name prose may mention: it must open a line or a block.
    Block,
}

struct Tag {
    open: String,
    close: String,
    pattern: &'static str,
    shape: Shape,
}

/// The namespace Claude's own call tags carry (`<invoke>`), which models print too.
const CLAUDE_NS: &str = "antml:";

/// Each tag as models print it (open, close, pattern, shape, and whether it is one of
/// Claude's, which counts with [`CLAUDE_NS`] too), made once.
static TAGS: LazyLock<Vec<Tag>> = LazyLock::new(|| {
    let rows = [
        ("function=", "function>", "xml-function-equals", Shape::Distinct, false),
        ("parameter=", "parameter>", "xml-parameter-equals", Shape::Distinct, false),
        ("function_calls>", "function_calls>", "xml-function-calls", Shape::Distinct, true),
        ("invoke name=", "invoke>", "xml-invoke", Shape::Distinct, true),
        ("parameter name=", "parameter>", "xml-parameter-name", Shape::Closed, true),
        ("tool_call>", "tool_call>", "xml-tool-call", Shape::Block, false),
        ("tool_calls>", "tool_calls>", "xml-tool-call", Shape::Block, false),
        ("tool_use>", "tool_use>", "xml-tool-use", Shape::Block, false),
        ("function_call>", "function_call>", "xml-function-call", Shape::Block, false),
    ];
    let namespaces = |claude: bool| if claude { ["", CLAUDE_NS].as_slice() } else { &[""] };
    rows.into_iter()
        .flat_map(|(open, close, pattern, shape, claude)| {
            namespaces(claude).iter().map(move |ns| Tag {
                open: format!("<{ns}{open}"),
                close: format!("</{ns}{close}"),
                pattern,
                shape,
            })
        })
        .collect()
});

fn xml_tags(m: &str, mode: Mode) -> Option<(usize, &'static str)> {
    TAGS.iter()
        .filter_map(|tag| {
            m.match_indices(tag.open.as_str())
                .map(|(at, _)| at)
                .find(|&at| {
                    let after = &m[at + tag.open.len()..];
                    let closed = after.contains(tag.close.as_str());
                    let shaped = match tag.shape {
                        Shape::Distinct => !tag.open.ends_with('=') || after.starts_with(is_value_start),
                        Shape::Closed => closed,
                        Shape::Block => opens_block(m, at, after),
                    };
                    shaped && (mode == Mode::Message || closed)
                })
                .map(|at| (at, tag.pattern))
        })
        .min_by_key(|(at, _)| *at)
}

/// `<tool_call>` at the start of a line, or followed by a JSON body, a line break,
/// the end of the text, or GLM's `<arg_key>` body: not "the <tool_call> tag" in a
/// sentence.
fn opens_block(m: &str, at: usize, after: &str) -> bool {
    let next = after.trim_start_matches([' ', '\t']);
    starts_line(m, at)
        || next.is_empty()
        || next.starts_with(['{', '\n', '\r'])
        || after.get(..after.len().min(200)).is_some_and(|head| head.contains("<arg_key>"))
}

/// Tool names of the XML tool protocols (Cline, Roo) that models trained on them
/// print as tags. A tag counts when it opens a line and its next line opens a
/// parameter tag, so an HTML element like `<search>` never matches.
const TOOL_NAMES: &[&str] = &[
    "read_file",
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "execute_command",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "attempt_completion",
    "browser_action",
];

/// Each of [`TOOL_NAMES`] as its opening and its closing tag, made once.
static TOOL_TAGS: LazyLock<Vec<(String, String)>> =
    LazyLock::new(|| TOOL_NAMES.iter().map(|name| (format!("<{name}>"), format!("</{name}>"))).collect());

fn named_tool_tags(m: &str, mode: Mode) -> Option<(usize, &'static str)> {
    TOOL_TAGS
        .iter()
        .filter_map(|(open, close)| {
            m.match_indices(open.as_str())
                .map(|(at, _)| at)
                .find(|&at| {
                    let after = &m[at + open.len()..];
                    let child = after.trim_start().strip_prefix('<').is_some_and(|c| c.starts_with(is_name_start));
                    starts_line(m, at) && child && (mode == Mode::Message || after.contains(close.as_str()))
                })
                .map(|at| (at, "xml-tool-name"))
        })
        .min_by_key(|(at, _)| *at)
}

/// Chat-template tokens that only a tool call produces: `<|tool_call|>`,
/// DeepSeek's `<｜tool▁calls▁begin｜>`, Llama's `<|python_tag|>`, Mistral's
/// `[TOOL_CALLS]`.
fn special_tokens(m: &str) -> Option<(usize, &'static str)> {
    let bracketed = ["<|", "<｜"].iter().filter_map(|open| {
        m.match_indices(open).map(|(at, _)| at).find(|&at| {
            let inner = &m[at + open.len()..];
            let end = inner.find("|>").into_iter().chain(inner.find("｜>")).min();
            end.filter(|&e| e <= 48).is_some_and(|e| {
                let word = inner[..e].to_ascii_lowercase();
                ["tool", "function", "call", "python_tag", "action"].iter().any(|w| word.contains(w))
            })
        })
    });
    bracketed.chain(m.find("[TOOL_CALLS]")).min().map(|at| (at, "special-token"))
}

/// A message that ends in the middle of a call's opening tag: `<function=edit`,
/// `<invoke name="Bash"`, `<tool_c`. The output was cut off while the model was
/// writing the call as text.
fn truncated_tag(m: &str) -> Option<(usize, &'static str)> {
    const STARTS: &[&str] = &["function", "invoke", "parameter", "tool_call", "tool_use", "function_calls"];
    let t = m.trim_end();
    let at = t.rfind('<')?;
    let frag = &t[at + 1..];
    if frag.contains('>') {
        return None;
    }
    let f = frag.trim_start_matches(['/', '|']);
    let f = f.strip_prefix(CLAUDE_NS).unwrap_or(f);
    STARTS.iter().any(|s| f.starts_with(s) || (f.len() >= 4 && s.starts_with(f))).then_some((at, "xml-truncated"))
}

/// Keys a JSON tool call is made of. An object with any other key (`version`,
/// `description`, `price`) is data, not a call.
const CALL_KEYS: &[&str] = &[
    "name",
    "arguments",
    "parameters",
    "input",
    "args",
    "id",
    "type",
    "tool",
    "tool_name",
    "function",
    "call_id",
    "action",
    "action_input",
];
const ARG_KEYS: &[&str] = &["arguments", "parameters", "input", "args", "action_input"];
const CALL_TYPES: &[&str] = &["function", "tool_use", "function_call", "tool_call"];

fn json_calls(m: &str, mode: Mode) -> Option<(usize, &'static str)> {
    for (at, _) in m.match_indices('{').take(MAX_JSON_STARTS) {
        let mut values = serde_json::Deserializer::from_str(&m[at..]).into_iter::<Value>();
        let found = match values.next() {
            Some(Ok(Value::Object(map))) => classify(&map),
            Some(Err(e)) if e.is_eof() && mode == Mode::Message => classify_cut(&m[at..]),
            _ => None,
        };
        if let Some(pattern) = found {
            return Some((at, pattern));
        }
    }
    None
}

fn classify(map: &Map<String, Value>) -> Option<&'static str> {
    if !map.keys().all(|k| CALL_KEYS.contains(&k.as_str())) {
        return None;
    }
    let typed = match map.get("type") {
        None => false,
        Some(Value::String(t)) if CALL_TYPES.contains(&t.as_str()) => true,
        Some(_) => return None,
    };
    if let Some(Value::Object(f)) = map.get("function") {
        // OpenAI's shape; a `description` in it makes it a tool definition instead.
        let inner = f.keys().all(|k| ["name", "arguments", "parameters", "input"].contains(&k.as_str()));
        let call = inner && is_tool_name(f.get("name")) && has_args(f);
        return call.then_some(if typed { "json-type-function" } else { "json-function-object" });
    }
    let named = ["name", "tool", "tool_name", "action"].into_iter().find(|k| is_tool_name(map.get(*k)))?;
    if !has_args(map) {
        return None;
    }
    Some(match named {
        _ if typed => "json-type-function",
        "tool" | "tool_name" => "json-tool-input",
        "action" => "json-action-input",
        _ => "json-name-arguments",
    })
}

fn has_args(map: &Map<String, Value>) -> bool {
    ARG_KEYS.iter().any(|k| match map.get(*k) {
        Some(Value::Object(o)) => !is_schema(o),
        // OpenAI sends arguments as a JSON string.
        Some(Value::String(s)) if *k == "arguments" => serde_json::from_str::<Value>(s).is_ok_and(|v| v.is_object()),
        Some(Value::String(_)) => *k == "action_input",
        _ => false,
    })
}

/// `{"name": ..., "parameters": {"type": "object", "properties": ...}}` declares a
/// tool, it does not call one.
fn is_schema(o: &Map<String, Value>) -> bool {
    o.contains_key("$schema") || (o.get("type").is_some_and(|t| t == "object") && o.contains_key("properties"))
}

fn is_tool_name(v: Option<&Value>) -> bool {
    let Some(Value::String(s)) = v else { return false };
    s.len() <= 64
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
}

/// A JSON call cut off at the end of the message: the keys seen so far must start
/// like a call and include its arguments.
fn classify_cut(rest: &str) -> Option<&'static str> {
    let keys = json_keys(rest);
    let first = keys.first()?;
    let starts = ["name", "tool", "tool_name", "type", "function", "action"].contains(first);
    // The keys inside the arguments are the tool's own; only those before count.
    let args = keys.iter().position(|k| ARG_KEYS.contains(k))?;
    let known = keys[..args].iter().all(|k| CALL_KEYS.contains(k));
    (starts && known).then_some("json-truncated")
}

/// Every `"key":` in the text, at any depth, in order.
fn json_keys(s: &str) -> Vec<&str> {
    let mut keys = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('"') {
        let body = &rest[open + 1..];
        let Some(close) = body.find('"') else { break };
        let key = &body[..close];
        let after = body[close + 1..].trim_start();
        if after.starts_with(':') {
            keys.push(key);
            rest = after;
        } else {
            rest = &body[close + 1..];
        }
    }
    keys
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_value_start(c: char) -> bool {
    is_name_start(c) || c == '"' || c == '\''
}

fn starts_line(m: &str, at: usize) -> bool {
    m[..at].rsplit('\n').next().is_none_or(|head| head.trim().is_empty())
}

fn excerpt(text: &str, at: usize) -> String {
    let back: usize = text[..at].chars().rev().take(EXCERPT_BEFORE).map(char::len_utf8).sum();
    text[at - back..].chars().take(EXCERPT_CHARS).collect::<String>().trim().to_owned()
}

#[cfg(test)]
mod tests;

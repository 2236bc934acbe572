//! Parser for Claude Code's headless `--output-format stream-json` (one JSON object
//! per line), also spoken by the built-in scripted agent (`agent::sim`).
//!
//! The format is not versioned and grows fields over time, so everything is read
//! through `serde_json::Value` with the lenient accessors every stream parser uses
//! ([`json`]): a missing or oddly typed field degrades to a default instead of
//! dropping the line, and no input can panic. Every non-blank line yields at least
//! one event (an `Unknown` when nothing else is recognised), so callers can measure
//! liveness on events as well as on lines.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::event::{AgentEvent, LineParser};
use super::json::{self, SessionId, i64_field, str_field, string_or_empty, u64_field, unknown};

/// One per attempt; remembers the last session id so `Session` is only emitted when
/// the id first appears or changes.
#[derive(Debug, Default)]
pub struct ClaudeStreamParser {
    session_id: SessionId,
}

impl ClaudeStreamParser {
    pub fn new() -> Self {
        Self::default()
    }
}

impl LineParser for ClaudeStreamParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        json::each_object(line, |obj, kind, out| {
            self.session_id.note(str_field(obj, "session_id"), out);
            match kind {
                "system" => system(obj, out),
                "assistant" => {
                    out.extend(blocks(obj).iter().filter_map(assistant_block));
                    // Synthetic assistant messages (e.g. an authentication failure)
                    // carry an error code next to the message; surface it so the
                    // classifier need not guess from text.
                    if let Some(message) = str_field(obj, "error").filter(|e| !e.is_empty()) {
                        out.push(AgentEvent::Error { message: message.to_owned() });
                    }
                }
                "user" => out.extend(blocks(obj).iter().filter_map(tool_result)),
                "rate_limit_event" => rate_limit(obj, out),
                "result" => result(obj, out),
                _ => {}
            }
        })
    }
}

/// The content blocks of `message.content` (borrowed: every line of a stream comes
/// through here); a bare string counts as one text block.
fn blocks(obj: &Value) -> Cow<'_, [Value]> {
    match obj.get("message").and_then(|m| m.get("content")) {
        Some(Value::Array(blocks)) => Cow::Borrowed(blocks),
        Some(Value::String(s)) => Cow::Owned(vec![json!({"type": "text", "text": s})]),
        _ => Cow::Borrowed(&[]),
    }
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// An assistant message's block, when it is one ralph reads.
fn assistant_block(block: &Value) -> Option<AgentEvent> {
    Some(match str_field(block, "type").unwrap_or("") {
        "text" => AgentEvent::Text { text: string_or_empty(block, "text") },
        "thinking" => AgentEvent::Thinking { text: string_or_empty(block, "thinking") },
        // Encrypted reasoning: nothing to show, but it is still model output.
        "redacted_thinking" => AgentEvent::Thinking { text: String::new() },
        "tool_use" | "server_tool_use" => AgentEvent::ToolStarted {
            id: string_or_empty(block, "id"),
            name: string_or_empty(block, "name"),
            input: block.get("input").cloned().unwrap_or(Value::Null),
        },
        _ => return None,
    })
}

/// A user message's block, when it is a tool result.
fn tool_result(block: &Value) -> Option<AgentEvent> {
    (str_field(block, "type") == Some("tool_result")).then(|| AgentEvent::ToolFinished {
        id: string_or_empty(block, "tool_use_id"),
        is_error: flag(block, "is_error"),
        output: json::text(block.get("content"), Some("\n")),
    })
}

fn system(obj: &Value, out: &mut Vec<AgentEvent>) {
    match str_field(obj, "subtype").unwrap_or("") {
        "init" => {
            // A resumed session may report the id the parser already holds; the init
            // line still gets its own event because it marks the start of the attempt.
            if out.is_empty()
                && let Some(id) = str_field(obj, "session_id").filter(|s| !s.is_empty())
            {
                out.push(AgentEvent::Session { id: id.to_owned() });
            }
        }
        "api_retry" => out.push(AgentEvent::ApiRetry {
            attempt: u64_field(obj, "attempt").and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            error: string_or_empty(obj, "error"),
            status: json::status_field(obj, "error_status"),
        }),
        other => out.push(unknown(&format!("system/{other}"))),
    }
}

fn rate_limit(obj: &Value, out: &mut Vec<AgentEvent>) {
    let Some(info) = obj.get("rate_limit_info").filter(|i| i.is_object()) else { return };
    out.push(AgentEvent::RateLimit {
        status: string_or_empty(info, "status"),
        resets_at: i64_field(info, "resetsAt"),
        limit_type: str_field(info, "rateLimitType").map(str::to_owned),
    });
}

fn result(obj: &Value, out: &mut Vec<AgentEvent>) {
    let cost = obj.get("total_cost_usd").and_then(Value::as_f64);
    out.extend(json::usage(obj.get("usage"), &["input_tokens"], &["output_tokens"], cost));
    // `error_during_execution` results list their causes here instead of in `result`.
    if let Some(Value::Array(errors)) = obj.get("errors") {
        for e in errors {
            out.push(AgentEvent::Error { message: e.as_str().map_or_else(|| e.to_string(), str::to_owned) });
        }
    }
    out.push(AgentEvent::Result {
        text: string_or_empty(obj, "result"),
        is_error: flag(obj, "is_error"),
        subtype: string_or_empty(obj, "subtype"),
        api_error_status: json::status_field(obj, "api_error_status"),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::json::fuzz;
    use serde_json::json;

    use crate::testkit::{result, session, text, thinking, tool_started, unknowns_of};

    fn parse_all(lines: &[&str]) -> Vec<AgentEvent> {
        crate::testkit::parse_all::<ClaudeStreamParser>(lines)
    }

    const SID: &str = "4f0b1c2e-9a3d-4c5e-8f61-2b7a9d0e1f23";

    #[test]
    fn init_emits_session() {
        let line = r#"{"type":"system","subtype":"init","cwd":"/tmp/ws","session_id":"4f0b1c2e-9a3d-4c5e-8f61-2b7a9d0e1f23","tools":["Task","Bash","Glob","Grep","Read","Edit","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"acceptEdits","slash_commands":["compact"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.197","output_style":"default","agents":[],"skills":[],"plugins":[],"uuid":"0c1d2e3f-aaaa-bbbb-cccc-000000000001"}"#;
        assert_eq!(parse_all(&[line]), vec![session(SID)]);
    }

    #[test]
    fn session_only_on_change() {
        let a = format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"a"}}]}},"session_id":"{SID}"}}"#
        );
        let b = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"b"}]},"session_id":"other"}"#;
        let ev = parse_all(&[&a, &a, b]);
        assert_eq!(ev, vec![session(SID), text("a"), text("a"), session("other"), text("b")]);
    }

    #[test]
    fn repeated_init_still_yields_session() {
        let init = format!(r#"{{"type":"system","subtype":"init","session_id":"{SID}"}}"#);
        // The second init carries the same id: it still marks an attempt start.
        assert_eq!(parse_all(&[&init, &init]), vec![session(SID); 2]);
    }

    #[test]
    fn assistant_blocks() {
        let lines = [
            r#"{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Let me look.","signature":"EqQBCkYI"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":8}},"parent_tool_use_id":null,"session_id":"s1","uuid":"u1"}"#,
            r#"{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"I'll write the plan."}],"stop_reason":null,"stop_sequence":null},"parent_tool_use_id":null,"session_id":"s1","uuid":"u2"}"#,
            r##"{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_01XYZ","name":"Write","input":{"file_path":"/tmp/ws/PLAN.md","content":"# Plan\n"}}],"stop_reason":"tool_use"},"parent_tool_use_id":null,"session_id":"s1","uuid":"u3"}"##,
        ];
        assert_eq!(
            parse_all(&lines),
            vec![
                session("s1"),
                thinking("Let me look."),
                text("I'll write the plan."),
                tool_started("toolu_01XYZ", "Write", json!({"file_path":"/tmp/ws/PLAN.md","content":"# Plan\n"})),
            ]
        );
    }

    #[test]
    fn tool_results_string_and_array() {
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01XYZ","type":"tool_result","content":"File created successfully at: /tmp/ws/PLAN.md"}]},"parent_tool_use_id":null,"session_id":"s1","uuid":"u4","tool_use_result":{"type":"create","filePath":"/tmp/ws/PLAN.md"}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_02","type":"tool_result","content":[{"type":"text","text":"line one"},{"type":"image","source":{}},{"type":"text","text":"line two"}],"is_error":true}]},"session_id":"s1"}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_03","type":"tool_result"}]},"session_id":"s1"}"#,
        ];
        assert_eq!(
            parse_all(&lines),
            vec![
                session("s1"),
                AgentEvent::ToolFinished {
                    id: "toolu_01XYZ".into(),
                    is_error: false,
                    output: "File created successfully at: /tmp/ws/PLAN.md".into(),
                },
                AgentEvent::ToolFinished { id: "toolu_02".into(), is_error: true, output: "line one\nline two".into() },
                AgentEvent::ToolFinished { id: "toolu_03".into(), is_error: false, output: "".into() },
            ]
        );
    }

    #[test]
    fn plain_user_message_is_unknown() {
        let line = r#"{"type":"user","message":{"role":"user","content":"hello"},"session_id":"s1"}"#;
        let ev = parse_all(&[line]);
        assert_eq!(ev, vec![session("s1")]);
        let mut p = ClaudeStreamParser::new();
        p.parse_line(line);
        assert_eq!(p.parse_line(line), vec![AgentEvent::Unknown { kind: "user".into() }]);
    }

    #[test]
    fn api_retry() {
        let line = r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1130,"error_status":529,"error":"overloaded","session_id":"s1","uuid":"u"}"#;
        let null_status = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":null,"error":"unknown","session_id":"s1"}"#;
        assert_eq!(
            parse_all(&[line, null_status]),
            vec![
                session("s1"),
                AgentEvent::ApiRetry { attempt: 2, error: "overloaded".into(), status: Some(529) },
                AgentEvent::ApiRetry { attempt: 1, error: "unknown".into(), status: None },
            ]
        );
    }

    #[test]
    fn rate_limit_event() {
        let line = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1767225600,"rateLimitType":"five_hour","utilization":1.0,"isUsingOverage":false,"overageStatus":"rejected"},"uuid":"u","session_id":"s1"}"#;
        let ev = parse_all(&[line]);
        assert_eq!(
            ev[1],
            AgentEvent::RateLimit {
                status: "rejected".into(),
                resets_at: Some(1_767_225_600),
                limit_type: Some("five_hour".into()),
            }
        );
        let bare = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}"#;
        assert_eq!(
            parse_all(&[bare]),
            vec![AgentEvent::RateLimit { status: "allowed".into(), resets_at: None, limit_type: None }]
        );
    }

    #[test]
    fn success_result() {
        let line = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":5123,"duration_api_ms":4800,"num_turns":3,"result":"All done. <promise>DONE</promise>","session_id":"s1","total_cost_usd":0.0421,"usage":{"input_tokens":1200,"cache_creation_input_tokens":0,"cache_read_input_tokens":9000,"output_tokens":340,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","uuid":"u"}"#;
        assert_eq!(
            parse_all(&[line]),
            vec![
                session("s1"),
                AgentEvent::Usage { input_tokens: 1200, output_tokens: 340, cost_usd: Some(0.0421) },
                result("All done. <promise>DONE</promise>", false, "success", None),
            ]
        );
    }

    #[test]
    fn error_results() {
        let overloaded = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"duration_ms":40000,"num_turns":1,"result":"API Error: Repeated 529 Overloaded errors. The API is at capacity","session_id":"s1","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}"#;
        let ev = parse_all(&[overloaded]);
        assert_eq!(
            ev.last(),
            Some(&result(
                "API Error: Repeated 529 Overloaded errors. The API is at capacity",
                true,
                "success",
                Some(529)
            ))
        );
        // No `result` text, no usage: only the Result.
        let during = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom"]}"#;
        assert_eq!(
            parse_all(&[during]),
            vec![AgentEvent::Error { message: "boom".into() }, result("", true, "error_during_execution", None),]
        );
    }

    #[test]
    fn synthetic_assistant_error() {
        let line = r#"{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Invalid API key · Fix external API key"}]},"error":"authentication_failed","session_id":"s1"}"#;
        let ev = parse_all(&[line]);
        assert_eq!(ev[2], AgentEvent::Error { message: "authentication_failed".into() });
    }

    #[test]
    fn unknowns() {
        assert_eq!(
            parse_all(&[
                "not json at all",
                "42",
                r#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#,
                r#"{"type":"system","subtype":"compact_boundary"}"#,
                r#"{"foo":1}"#,
                "   ",
            ]),
            unknowns_of(&["non-json", "non-json", "stream_event", "system/compact_boundary", "untyped"])
        );
    }

    /// The parser, held at every line to what each stream parser promises
    /// ([`json::each_object`]): a blank line yields nothing, any other at least one
    /// event, and no line panics. The corpora below are its regression tests.
    #[derive(Default)]
    struct Checked(ClaudeStreamParser);

    impl LineParser for Checked {
        fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
            let events = self.0.parse_line(line);
            assert_eq!(events.is_empty(), line.trim().is_empty(), "{line}: {events:?}");
            events
        }
    }

    #[test]
    fn lines_of_every_shape_keep_the_parsers_promise() {
        let common = [
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a \"quoted\"\nline é"}]},"session_id":"s1"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}},{"type":"thinking","thinking":"hm"},{"type":"redacted_thinking"},{"type":"image"}]},"error":"authentication_failed"}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},"b"],"is_error":true}]},"session_id":"s2"}"#,
            r#"{"type":"assistant","message":{"content":[]},"error":""}"#,
            r#"{"type":"assistant","message":null}"#,
            r#"{"type":"user","message":{"content":null},"session_id":""}"#,
        ];
        let odd = [
            // Arrays where objects belong: a derived struct would read them by position.
            r#"{"type":"assistant","message":[[{"type":"text","text":"x"}]]}"#,
            r#"{"type":"assistant","message":{"content":[["text","x",null,null,null,null,null,null,null]]}}"#,
            r#"["assistant",null,{"content":[{"type":"text","text":"x"}]},null]"#,
            // Repeated keys: the last one wins in a `Value`.
            r#"{"type":"assistant","type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a","text":"b"}]}}"#,
            r#"{"type":"user","message":{"content":"hello"}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","is_error":"yes"}]}}"#,
            r#"{"type":"assistant","session_id":7,"message":{"content":[{"type":"text","text":"x"}]}}"#,
            r#"  {"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}  "#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}} trailing"#,
        ];
        let mut both = Checked::default();
        for line in common.iter().chain(&odd) {
            both.parse_line(line);
        }
        let types = ["assistant", "user", "system", "result", ""];
        let keys = ["message", "content", "session_id", "error", "text", "is_error", "input", "type"];
        fuzz::each_field(&mut both, &types, &keys);
        for t in types {
            for s in fuzz::odd_values() {
                for block in [
                    json!(s),
                    json!({"type": "text", "text": s}),
                    json!({"type": "tool_use", "id": s, "input": s}),
                    json!({"type": "tool_result", "content": s, "is_error": s, "tool_use_id": s}),
                ] {
                    both.parse_line(&json!({"type": t, "message": {"content": [block]}, "session_id": s}).to_string());
                }
            }
        }
        fuzz::truncations(&mut both, common[1]);
        fuzz::truncations(&mut both, common[2]);
        fuzz::junk(&mut both, 777);
    }

    type Members = Vec<(String, String)>;

    fn members(pairs: &[(&str, &str)]) -> Members {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn object(members: &Members) -> String {
        let inner: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", inner.join(","))
    }

    /// Values of every JSON kind, valid or not, including what serde_json accepts only
    /// in a field it skips.
    fn odd_texts() -> Vec<String> {
        let mut texts: Vec<String> = [
            "null",
            "true",
            "false",
            "nul",
            "0",
            "-0",
            "01",
            "-",
            "1.5e+3",
            "1.",
            "1e400",
            "-2E-7",
            "\"\"",
            "\"x\"",
            "\"assistant\"",
            "\"text\"",
            "\"thinking\"",
            "\"redacted_thinking\"",
            "\"tool_use\"",
            "\"image\"",
            r#""a\"b\n\/\u00e9\ud83d\ude00""#,
            r#""\ud83d""#,
            r#""\uZZZZ""#,
            r#""\x""#,
            "\"tab\there\"",
            "\"é 😀\u{7f}\"",
            "[]",
            "[1,]",
            "[null,{}]",
            "{}",
            r#"{"a":}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"content":[]}"#,
            r#"{"type":"text","text":"y"}"#,
            r#"[{"type":"thinking","thinking":"t"}]"#,
            "",
        ]
        .map(str::to_owned)
        .to_vec();
        texts.push(format!("{}{}", "[".repeat(200), "]".repeat(200)));
        texts
    }

    /// A member list changed in every way at once: each member dropped, repeated,
    /// given every odd value, its key escaped; an extra member of every kind first and
    /// last, unknown or a tool's; the order reversed.
    fn mutations(base: &Members) -> Vec<Members> {
        let mut out = vec![base.iter().rev().cloned().collect()];
        for i in 0..base.len() {
            let mut m = base.clone();
            m.remove(i);
            out.push(m);
            let mut m = base.clone();
            m.push(base[i].clone());
            out.push(m);
            let mut m = base.clone();
            m[i].0 = m[i].0.replacen('t', r"\u0074", 1).replacen('e', r"\u0065", 1);
            out.push(m);
            for v in odd_texts() {
                let mut m = base.clone();
                m[i].1 = v;
                out.push(m);
            }
        }
        for v in odd_texts() {
            for (at, key) in [(0, "extra"), (base.len(), "extra"), (base.len(), "id")] {
                let mut m = base.clone();
                m.insert(at, (key.into(), v.clone()));
                out.push(m);
            }
        }
        out
    }

    #[test]
    fn mutated_real_lines_keep_the_parsers_promise() {
        let blocks = [
            members(&[("type", "\"text\""), ("text", r#""I'll \"look\"\n é""#), ("citations", "null")]),
            members(&[("type", "\"thinking\""), ("thinking", "\"hm\""), ("signature", "\"EqQBCkYI\"")]),
            members(&[("type", "\"redacted_thinking\""), ("data", "\"abc\"")]),
            members(&[
                ("type", "\"tool_use\""),
                ("id", "\"toolu_01\""),
                ("name", "\"Bash\""),
                ("input", r#"{"command":"ls \"a b\"","n":[1,-2.5e3,null,true],"o":{}}"#),
            ]),
        ];
        let message = |block: &Members| {
            members(&[
                ("id", "\"msg_01\""),
                ("type", "\"message\""),
                ("role", "\"assistant\""),
                ("content", &format!("[{}]", object(block))),
                ("stop_reason", "null"),
                ("usage", r#"{"input_tokens":12,"output_tokens":40,"server_tool_use":{"web_search_requests":0}}"#),
            ])
        };
        let top = |message: &Members| {
            members(&[
                ("type", "\"assistant\""),
                ("message", &object(message)),
                ("parent_tool_use_id", "null"),
                ("session_id", "\"s1\""),
                ("error", "\"authentication_failed\""),
                ("uuid", "\"u\""),
            ])
        };
        let mut lines = Vec::new();
        for block in &blocks {
            lines.extend(mutations(&top(&message(block))).iter().map(object));
            lines.extend(mutations(&message(block)).iter().map(|m| object(&top(m))));
            lines.extend(mutations(block).iter().map(|b| object(&top(&message(b)))));
        }
        let mut p = Checked::default();
        for line in &lines {
            // Every line twice: once with a new session id, once with the same.
            p.parse_line(line);
            p.parse_line(line);
            p.parse_line(&line.replace("\"s1\"", "\"s2\""));
        }
        for block in &blocks {
            let line = object(&top(&message(block)));
            fuzz::truncations(&mut p, &line);
            for ws in [" ", "\t\r\n", "\u{a0}", "\u{b}"] {
                let spaced: String = line.chars().flat_map(|c| [ws.to_owned(), c.to_string()]).collect();
                p.parse_line(&spaced);
                p.parse_line(&format!("{ws}{line}{ws}"));
                p.parse_line(&format!("{line}{ws}}}"));
            }
        }
        let typed = ["assistant", "user", "system", "result", ""];
        fuzz::each_field(&mut p, &typed, &["message", "content", "session_id", "error", "text", "type"]);
        fuzz::junk(&mut p, 4242);

        let common = [
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}}"#,
            r#"{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"Reading src/run/attempt.rs."}],"usage":{"input_tokens":12,"output_tokens":40}},"session_id":"0b5c6a1e"}"#,
            r#" {"type":"assistant","message":{"content":[{"type":"thinking","thinking":"a\nb","signature":"E"},{"type":"redacted_thinking","data":"x"},{"type":"image"}]},"error":"x"} "#,
            r#"{"type":"assistant","message":null,"session_id":null,"error":null}"#,
            r#"{"type":"assistant","message":{"content":[]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}"#,
        ];
        for line in common {
            assert!(!p.parse_line(line).contains(&unknown("non-json")), "{line}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut p = ClaudeStreamParser::new();
        let types = ["system", "assistant", "user", "rate_limit_event", "result", "stream_event", ""];
        let keys = [
            "subtype",
            "message",
            "content",
            "session_id",
            "rate_limit_info",
            "usage",
            "result",
            "is_error",
            "api_error_status",
            "attempt",
            "error_status",
            "errors",
            "total_cost_usd",
            "error",
        ];
        fuzz::each_field(&mut p, &types, &keys);
        for t in types {
            for s in fuzz::odd_values() {
                // Content blocks with odd shapes.
                let msg = json!({"type": t, "message": {"content": [s, {"type": "text", "text": s},
                    {"type": "tool_result", "content": s, "is_error": s, "tool_use_id": s},
                    {"type": "tool_use", "id": s, "name": s, "input": s}]},
                    "rate_limit_info": {"status": s, "resetsAt": s, "rateLimitType": s},
                    "usage": {"input_tokens": s}, "subtype": s});
                p.parse_line(&msg.to_string());
            }
        }
        let full = r#"{"type":"result","subtype":"success","is_error":false,"result":"x","usage":{"input_tokens":1}}"#;
        fuzz::truncations(&mut p, full);
        fuzz::junk(&mut p, 12345);
    }
}

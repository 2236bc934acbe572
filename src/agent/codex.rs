//! The Codex CLI (`@openai/codex`): its descriptor (how it is launched and resumed
//! headless, and the rest ralph knows about it), and the parser for its
//! `codex exec --json` output (one JSON object per line).
//!
//! Observed with Codex CLI 0.171.0 against a fake Responses provider:
//!
//! ```text
//! {"type":"thread.started","thread_id":"01a22d66-…"}            the session id
//! {"type":"item.completed","item":{"type":"error","message":…}}  a non-fatal notice
//! {"type":"turn.started"}
//! {"type":"item.started","item":{"id":"item_1","type":"command_execution","command":…,"status":"in_progress"}}
//! {"type":"item.completed","item":{"id":"item_1","type":"command_execution",…,"exit_code":0,"status":"completed"}}
//! {"type":"item.completed","item":{"id":"item_2","type":"reasoning","text":…}}
//! {"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":…}}
//! {"type":"turn.completed","usage":{"input_tokens":…,"cached_input_tokens":…,"output_tokens":…,…}}
//! ```
//!
//! and on failure `{"type":"error","message":…}` then
//! `{"type":"turn.failed","error":{"message":…}}`, exit 1. Codex announces its own
//! retries as `error` events whose message starts with "Reconnecting... n/N (…)".
//!
//! Like the Claude parser, everything is read through `serde_json::Value` with lenient
//! accessors, no input can panic, and every non-blank line yields at least one event.

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use super::descriptor::{Descriptor, Lookup, ReadFile, Request, flag, host_port, mcp_args};
use super::event::{AgentEvent, LineParser};
use super::json::{self, OpenTools, str_field, string_or_empty, u64_field, unknown};
use crate::config::types::{AgentConfig, AgentKind};

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    kind: AgentKind::Codex,
    binary: "codex",
    product: "Codex CLI",
    package: "@openai/codex",
    tested_version: "0.171.0",
    argv: |cfg, req, binary| Ok(argv(cfg, req, binary)),
    // Codex 0.171 has no environment switch for telemetry or updates: `codex exec`
    // never checks for updates, and analytics are off on the command line (see
    // `argv`). Its request retries are the user's `config.toml`'s.
    env: |_| Ok(Vec::new()),
    passes: &["OPENAI_*", "CODEX_*", "AZURE_OPENAI_*"],
    credentials: &["OPENAI_API_KEY", "CODEX_API_KEY"],
    login: None,
    nesting_markers: &["CODEX_SANDBOX"],
    endpoint,
    stop_signal: Signal::SIGINT,
    quiet_tools: false,
    running_cost: false,
    parser: |(input, output)| Box::new(CodexParser::with_baseline(input, output)),
    unknown_session_exit: None,
};

/// The argv of one launch:
///
/// - fresh: `codex exec --json --skip-git-repo-check
///   --dangerously-bypass-approvals-and-sandbox -c analytics.enabled=false [-m MODEL]
///   [args…] -- PROMPT`
/// - resume: `codex exec resume --json --skip-git-repo-check
///   --dangerously-bypass-approvals-and-sandbox -c analytics.enabled=false [-m MODEL]
///   [args…] -- SESSION PROMPT`
///
/// `exec resume` takes its options after `resume` (it has no `--sandbox` or `--cd`),
/// so both forms use only options the two share. The bypass flag is the one way to
/// run tools without approval prompts that works as root and without a sandbox
/// helper (ralph owns the isolation); `--` keeps a prompt starting with `-` a
/// prompt. Analytics are off (otherwise every run also talks to `ab.chatgpt.com`).
pub(crate) fn argv(cfg: &AgentConfig, req: &Request<'_>, binary: &Path) -> Vec<String> {
    let mut argv = vec![binary.display().to_string(), "exec".to_string()];
    if req.resume.is_some() {
        argv.push("resume".to_string());
    }
    argv.extend(["--json", "--skip-git-repo-check"].map(str::to_string));
    // `-c` works for `exec` and `exec resume` alike (resume has no `--sandbox`).
    match DESCRIPTOR.permission_mode(cfg) {
        "bypass" => argv.push("--dangerously-bypass-approvals-and-sandbox".to_string()),
        sandbox => argv.extend([
            "-c".to_string(),
            format!("sandbox_mode=\"{sandbox}\""),
            "-c".to_string(),
            "approval_policy=\"never\"".to_string(),
        ]),
    }
    argv.extend(["-c", "analytics.enabled=false"].map(str::to_string));
    if let Some((socket, attempt)) = req.control
        && let Ok(exe) = crate::os::self_exe()
    {
        // `ralph mcp` for this run only, as `-c` overrides (never the user's
        // config.toml); an argv, since Codex starts MCP servers with a cleared
        // environment. Values are TOML: JSON strings are valid TOML basic strings.
        let args = json!(mcp_args(socket, attempt));
        argv.extend([
            "-c".to_string(),
            format!("mcp_servers.ralph.command={}", serde_json::Value::from(exe.display().to_string())),
            "-c".to_string(),
            format!("mcp_servers.ralph.args={args}"),
        ]);
    }
    argv.extend(flag("-m", cfg.model.as_deref()));
    argv.extend(cfg.args.iter().cloned());
    argv.push("--".to_string());
    if let Some(session) = req.resume {
        argv.push(session.to_string());
    }
    // `-`: the prompt is read from stdin (see `launch::prepare`), whatever its length.
    argv.push("-".to_string());
    argv
}

/// `OPENAI_BASE_URL`, else the selected provider's `base_url` in
/// `$CODEX_HOME/config.toml` (default `~/.codex`), else OpenAI's host for the
/// built-in `openai` provider; another provider without a `base_url` has none.
fn endpoint(_: &AgentConfig, lookup: Lookup<'_>, read: ReadFile<'_>) -> Option<String> {
    if let Some(url) = lookup("OPENAI_BASE_URL") {
        return host_port(&url);
    }
    let home = lookup("CODEX_HOME").map(PathBuf::from).or_else(|| lookup("HOME").map(|h| Path::new(&h).join(".codex")));
    let config: Option<toml::Table> =
        home.and_then(|h| read(&h.join("config.toml"))).and_then(|text| toml::from_str(&text).ok());
    let key = |key: &str| config.as_ref().and_then(|c| c.get(key));
    let provider = key("model_provider").and_then(toml::Value::as_str).unwrap_or("openai");
    let provider_table = key("model_providers").and_then(|p| p.get(provider));
    let base_url = provider_table.and_then(|p| p.get("base_url")).and_then(toml::Value::as_str);
    match base_url {
        Some(url) => host_port(url),
        None if provider == "openai" => Some("api.openai.com:443".to_string()),
        None => None,
    }
}

/// One per attempt.
#[derive(Debug, Default)]
pub(crate) struct CodexParser {
    /// The last `agent_message` of the current turn: the final answer at `turn.completed`.
    last_message: Option<String>,
    /// Tool items that got a `ToolStarted` and no `ToolFinished` yet.
    open_tools: OpenTools,
    /// Usage reported by the last `turn.completed` (input, output).
    usage_seen: (u64, u64),
}

impl CodexParser {
    /// A parser for a resumed thread whose earlier launches already reported
    /// `input_tokens`/`output_tokens` in total: Codex's usage is cumulative over the
    /// thread, so the resumed launch's first `turn.completed` includes them.
    pub(crate) fn with_baseline(input_tokens: u64, output_tokens: u64) -> Self {
        Self { usage_seen: (input_tokens, output_tokens), ..Self::default() }
    }

    fn item(&mut self, obj: &Value, completed: bool, out: &mut Vec<AgentEvent>) {
        let Some(item) = obj.get("item").filter(|i| i.is_object()) else { return };
        let kind = str_field(item, "type").unwrap_or("");
        match kind {
            // Text and reasoning are reported whole at completion (no deltas in 0.171).
            "agent_message" if completed => {
                let text = string_or_empty(item, "text");
                self.last_message = Some(text.clone());
                out.push(AgentEvent::Text { text });
            }
            "reasoning" if completed => out.push(AgentEvent::Thinking { text: string_or_empty(item, "text") }),
            "command_execution" | "file_change" | "mcp_tool_call" | "web_search" | "collab_tool_call" => {
                let ended = completed.then(|| tool_result(kind, item));
                out.extend(self.open_tools.note(string_or_empty(item, "id"), tool_call(kind, item), ended));
            }
            _ => {}
        }
    }

    fn turn_completed(&mut self, obj: &Value, out: &mut Vec<AgentEvent>) {
        if let Some(usage) = obj.get("usage").filter(|u| u.is_object()) {
            // After `codex exec resume` the usage is cumulative over the whole thread,
            // not per turn: emit only what is new since the last `turn.completed` this
            // parser saw (or its baseline), so that summing Usage events stays right.
            let input = u64_field(usage, "input_tokens").unwrap_or(0);
            let output = u64_field(usage, "output_tokens").unwrap_or(0);
            let (seen_in, seen_out) = self.usage_seen;
            // A smaller total than before (a counter reset) counts from zero.
            let delta_in = if input >= seen_in { input - seen_in } else { input };
            let delta_out = if output >= seen_out { output - seen_out } else { output };
            self.usage_seen = (input, output);
            out.push(AgentEvent::Usage { input_tokens: delta_in, output_tokens: delta_out, cost_usd: None });
        }
        out.push(AgentEvent::Result {
            text: self.last_message.take().unwrap_or_default(),
            is_error: false,
            subtype: "success".to_owned(),
            api_error_status: None,
        });
    }
}

impl LineParser for CodexParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        json::each_object(line, |obj, kind, out| {
            match kind {
                "thread.started" => {
                    // Always reported: it marks the start of the launch, even when a
                    // resume reports the id it resumed.
                    if let Some(id) = str_field(obj, "thread_id").filter(|s| !s.is_empty()) {
                        out.push(AgentEvent::Session { id: id.to_owned() });
                    }
                }
                "turn.started" => self.last_message = None,
                "item.started" => self.item(obj, false, out),
                "item.completed" => self.item(obj, true, out),
                "turn.completed" => self.turn_completed(obj, out),
                "error" => {
                    let message = string_or_empty(obj, "message");
                    out.push(match reconnecting(&message) {
                        Some((attempt, reason)) => {
                            AgentEvent::ApiRetry { attempt, status: http_status(reason), error: reason.to_owned() }
                        }
                        None => AgentEvent::Error { message },
                    });
                }
                "turn.failed" => {
                    let error = obj.get("error");
                    let message = error.map(|e| string_or_empty(e, "message")).unwrap_or_default();
                    let status = http_status(&message);
                    out.push(AgentEvent::Error { message: message.clone() });
                    out.push(AgentEvent::Result {
                        text: message,
                        is_error: true,
                        subtype: "turn_failed".to_owned(),
                        api_error_status: status,
                    });
                    self.last_message = None;
                }
                _ => {}
            }
            // `item.completed/error` is Codex's non-fatal notice (e.g. missing model
            // metadata); the raw line stays in the attempt's log.
            if out.is_empty() && kind.starts_with("item.") {
                let item_type = obj.get("item").and_then(|i| str_field(i, "type")).unwrap_or("");
                out.push(unknown(&format!("{kind}/{item_type}")));
            }
        })
    }
}

/// The ralph-side name and input of a tool item.
fn tool_call(kind: &str, item: &Value) -> (String, Value) {
    match kind {
        "command_execution" => (kind.to_owned(), json!({"command": string_or_empty(item, "command")})),
        "file_change" => (kind.to_owned(), json!({"changes": item.get("changes").cloned().unwrap_or(Value::Null)})),
        "mcp_tool_call" => (
            format!("mcp__{}__{}", string_or_empty(item, "server"), string_or_empty(item, "tool")),
            item.get("arguments").cloned().unwrap_or(Value::Null),
        ),
        "web_search" => (kind.to_owned(), json!({"query": string_or_empty(item, "query")})),
        _ => (kind.to_owned(), item.clone()),
    }
}

/// Whether a completed tool item failed, and its output as text.
fn tool_result(kind: &str, item: &Value) -> (bool, String) {
    let status = str_field(item, "status").unwrap_or("");
    let mut is_error = matches!(status, "failed" | "declined");
    let output = match kind {
        "command_execution" => {
            if let Some(code) = item.get("exit_code").and_then(Value::as_i64) {
                is_error |= code != 0;
            }
            string_or_empty(item, "aggregated_output")
        }
        "mcp_tool_call" => match item.get("error") {
            Some(e) if !e.is_null() => {
                is_error = true;
                str_field(e, "message").map_or_else(|| e.to_string(), str::to_owned)
            }
            _ => item.get("result").filter(|r| !r.is_null()).map(Value::to_string).unwrap_or_default(),
        },
        _ => String::new(),
    };
    (is_error, output)
}

/// "Reconnecting... 2/5 (reason)" → (2, "reason").
fn reconnecting(message: &str) -> Option<(u32, &str)> {
    let rest = message.strip_prefix("Reconnecting...")?.trim_start();
    let (count, reason) = rest.split_once(' ').unwrap_or((rest, ""));
    let attempt = count.split('/').next()?.parse().ok()?;
    let reason = reason.trim();
    let reason = reason.strip_prefix('(').and_then(|r| r.strip_suffix(')')).unwrap_or(reason);
    Some((attempt, reason))
}

/// The HTTP status in Codex's error texts: "unexpected status 401 Unauthorized: …",
/// "exceeded retry limit, last status: 429 Too Many Requests".
fn http_status(message: &str) -> Option<u16> {
    json::status_after(message, &["unexpected status ", "last status: "])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::json::fuzz;
    use crate::config::types::AgentConfig;

    use crate::testkit::{result, session, text, thinking, tool_started, unknowns_of};

    fn parse_all(lines: &[&str]) -> Vec<AgentEvent> {
        crate::testkit::parse_all::<CodexParser>(lines)
    }

    const TID: &str = "01a22d66-98fb-72f0-9462-56da3949b4c9";

    // Captured from Codex CLI 0.171.0 (`codex exec --json`) against
    // tests/integration/fake_openai.rs: an exec_command call, then reasoning and a
    // final message.
    const RUN: [&str; 8] = [
        r#"{"type":"thread.started","thread_id":"01a22d66-98fb-72f0-9462-56da3949b4c9"}"#,
        r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}"#,
        r#"{"type":"turn.started"}"#,
        r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc \"printf 'hello from codex\\\\n' > out.txt\"","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc \"printf 'hello from codex\\\\n' > out.txt\"","aggregated_output":"","exit_code":0,"status":"completed"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_2","type":"reasoning","text":"Thinking about it"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Wrote it.\n\n<promise>DONE</promise>"}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":20,"cache_write_input_tokens":0,"output_tokens":14,"reasoning_output_tokens":4}}"#,
    ];

    #[test]
    fn a_full_run() {
        let command = r#"/bin/bash -lc "printf 'hello from codex\\n' > out.txt""#;
        assert_eq!(
            parse_all(&RUN),
            vec![
                session(TID),
                AgentEvent::Unknown { kind: "item.completed/error".into() },
                AgentEvent::Unknown { kind: "turn.started".into() },
                tool_started("item_1", "command_execution", json!({ "command": command })),
                AgentEvent::ToolFinished { id: "item_1".into(), is_error: false, output: "".into() },
                thinking("Thinking about it"),
                text("Wrote it.\n\n<promise>DONE</promise>"),
                AgentEvent::Usage { input_tokens: 300, output_tokens: 14, cost_usd: None },
                result("Wrote it.\n\n<promise>DONE</promise>", false, "success", None),
            ]
        );
    }

    #[test]
    fn usage_is_a_delta_over_the_thread_total() {
        // A resumed launch of the same thread reported 600/21 after an earlier 300/14.
        let second = r#"{"type":"turn.completed","usage":{"input_tokens":600,"cached_input_tokens":30,"cache_write_input_tokens":0,"output_tokens":21,"reasoning_output_tokens":6}}"#;
        let mut p = CodexParser::default();
        let usage = |evs: Vec<AgentEvent>| evs.into_iter().find(|e| matches!(e, AgentEvent::Usage { .. }));
        assert_eq!(
            usage(p.parse_line(RUN[7])),
            Some(AgentEvent::Usage { input_tokens: 300, output_tokens: 14, cost_usd: None })
        );
        assert_eq!(
            usage(p.parse_line(second)),
            Some(AgentEvent::Usage { input_tokens: 300, output_tokens: 7, cost_usd: None })
        );
        let mut resumed = CodexParser::with_baseline(300, 14);
        assert_eq!(
            usage(resumed.parse_line(second)),
            Some(AgentEvent::Usage { input_tokens: 300, output_tokens: 7, cost_usd: None })
        );
        // A turn with no message: an empty result, no stale text from an earlier turn.
        let mut p = CodexParser::default();
        p.parse_line(RUN[6]);
        p.parse_line(RUN[2]);
        assert_eq!(p.parse_line(r#"{"type":"turn.completed"}"#), vec![result("", false, "success", None)]);
    }

    #[test]
    fn failures_and_statuses() {
        // Captured: 401, 429 (no retry-after), 500, context, with retries at 0.
        let cases = [
            (
                "unexpected status 401 Unauthorized: Incorrect API key provided: x. You can find your API key at https://platform.openai.com/account/api-keys., url: http://127.0.0.1:18767/s401/v1/responses",
                Some(401),
            ),
            (
                "unexpected status 529 <unknown status code>: Overloaded, url: http://127.0.0.1:18767/s529/v1/responses",
                Some(529),
            ),
            ("exceeded retry limit, last status: 429 Too Many Requests", Some(429)),
            ("We\u{2019}re currently experiencing high demand, which may cause temporary errors.", None),
            (
                "Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.",
                None,
            ),
        ];
        for (message, status) in cases {
            let error = json!({"type": "error", "message": message}).to_string();
            let failed = json!({"type": "turn.failed", "error": {"message": message}}).to_string();
            assert_eq!(
                parse_all(&[RUN[2], &error, &failed]),
                vec![
                    AgentEvent::Unknown { kind: "turn.started".into() },
                    AgentEvent::Error { message: message.into() },
                    AgentEvent::Error { message: message.into() },
                    AgentEvent::Result {
                        text: message.into(),
                        is_error: true,
                        subtype: "turn_failed".into(),
                        api_error_status: status,
                    },
                ]
            );
        }
    }

    #[test]
    fn reconnecting_is_a_retry() {
        let line = r#"{"type":"error","message":"Reconnecting... 2/5 (unexpected status 503 Service Unavailable: busy, url: http://127.0.0.1:1/v1/responses)"}"#;
        assert_eq!(
            parse_all(&[line]),
            vec![AgentEvent::ApiRetry {
                attempt: 2,
                error: "unexpected status 503 Service Unavailable: busy, url: http://127.0.0.1:1/v1/responses".into(),
                status: Some(503),
            }]
        );
        let odd = r#"{"type":"error","message":"Reconnecting... x/5"}"#;
        assert_eq!(parse_all(&[odd]), vec![AgentEvent::Error { message: "Reconnecting... x/5".into() }]);
    }

    #[test]
    fn other_tools() {
        let lines = [
            r#"{"type":"item.completed","item":{"id":"item_4","type":"file_change","changes":[{"path":"/w/a.txt","kind":"add"}],"status":"completed"}}"#,
            r#"{"type":"item.started","item":{"id":"item_5","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_5","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"error":{"message":"boom"},"status":"failed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_6","type":"command_execution","command":"false","aggregated_output":"oops\n","exit_code":1,"status":"failed"}}"#,
            r#"{"type":"item.updated","item":{"id":"item_7","type":"todo_list","items":[]}}"#,
        ];
        assert_eq!(
            parse_all(&lines),
            vec![
                tool_started("item_4", "file_change", json!({"changes": [{"path": "/w/a.txt", "kind": "add"}]})),
                AgentEvent::ToolFinished { id: "item_4".into(), is_error: false, output: "".into() },
                tool_started("item_5", "mcp__docs__search", json!({"q": "x"})),
                AgentEvent::ToolFinished { id: "item_5".into(), is_error: true, output: "boom".into() },
                tool_started("item_6", "command_execution", json!({"command": "false"})),
                AgentEvent::ToolFinished { id: "item_6".into(), is_error: true, output: "oops\n".into() },
                AgentEvent::Unknown { kind: "item.updated/todo_list".into() },
            ]
        );
    }

    #[test]
    fn unknowns() {
        assert_eq!(
            parse_all(&[
                "not json",
                "[1]",
                r#"{"type":"thread.started"}"#,
                r#"{"x":1}"#,
                r#"{"type":"new.thing"}"#,
                " "
            ]),
            unknowns_of(&["non-json", "non-json", "thread.started", "untyped", "new.thing"])
        );
    }

    #[test]
    fn garbage_never_panics() {
        let shapes = fuzz::odd_values();
        let types = [
            "thread.started",
            "turn.started",
            "item.started",
            "item.completed",
            "turn.completed",
            "turn.failed",
            "error",
            "",
        ];
        let item_types =
            ["agent_message", "reasoning", "command_execution", "file_change", "mcp_tool_call", "web_search", "error"];
        let mut p = CodexParser::default();
        for t in types {
            for s in &shapes {
                for key in ["thread_id", "item", "usage", "error", "message"] {
                    let mut obj = json!({"type": t});
                    obj[key] = s.clone();
                    p.parse_line(&obj.to_string());
                }
                for it in item_types {
                    let item = json!({"type": it, "id": s, "text": s, "command": s, "aggregated_output": s,
                        "exit_code": s, "status": s, "changes": s, "server": s, "tool": s, "arguments": s,
                        "error": s, "result": s, "query": s});
                    p.parse_line(&json!({"type": t, "item": item}).to_string());
                }
                p.parse_line(&json!({"type": t, "usage": {"input_tokens": s, "output_tokens": s}}).to_string());
                p.parse_line(&json!({"type": t, "error": {"message": s}}).to_string());
            }
        }
        for line in RUN {
            fuzz::truncations(&mut p, line);
        }
        fuzz::junk(&mut p, 99);
        for m in [
            "Reconnecting...",
            "Reconnecting... ",
            "Reconnecting... 99999999999/1 (",
            "unexpected status ",
            "last status: 99999",
        ] {
            p.parse_line(&json!({"type": "error", "message": m}).to_string());
            p.parse_line(&json!({"type": "turn.failed", "error": {"message": m}}).to_string());
        }
        for i in 0..3000u32 {
            p.parse_line(
                &json!({"type": "item.started", "item": {"type": "command_execution", "id": i.to_string()}})
                    .to_string(),
            );
        }
        assert!(p.open_tools.0.len() <= 1024);
    }

    fn agent(toml: &str) -> AgentConfig {
        toml::from_str(toml).expect("agent config")
    }

    #[test]
    fn launch_and_resume_argv() {
        let cfg = agent("kind = \"codex\"\nmodel = \"gpt-5-codex\"\nargs = [\"--disable\", \"plugins\"]\n");
        let req = crate::testkit::request("cx", "-do it");
        let bin = Path::new("/bin/codex");
        let flags = [
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-c",
            "analytics.enabled=false",
            "-m",
            "gpt-5-codex",
            "--disable",
            "plugins",
            "--",
        ];
        let mut fresh = vec!["/bin/codex", "exec"];
        fresh.extend(flags);
        // The prompt comes on stdin: `-` stands for it.
        fresh.push("-");
        assert_eq!(argv(&cfg, &req, bin), fresh);
        let mut resume = vec!["/bin/codex", "exec", "resume"];
        resume.extend(flags);
        resume.extend([TID, "-"]);
        assert_eq!(argv(&cfg, &Request { resume: Some(TID), ..req }, bin), resume);
        let bare = agent("kind = \"codex\"\n");
        assert!(!argv(&bare, &req, bin).contains(&"-m".to_string()));
    }
}

//! OpenCode (`opencode run --format json`): its descriptor (how it is launched and
//! resumed, and the rest ralph knows about it), and the parser for its JSON events
//! (one object per line).
//!
//! What OpenCode 1.18.33 prints (read from its `run` command and observed against a
//! fake provider on 127.0.0.1): `step_start`, `reasoning` (only with `--thinking`),
//! `text`, `tool_use`, `step_finish`, `error`, each with the `sessionID` (`ses_…`) at
//! the top level and the payload in `part`. Three things differ from Claude Code:
//!
//! - **There is no final result event.** The answer is the last `text`, and the run
//!   is over when the process exits (0, or 1 after an `error` event). ralph's attempt
//!   takes the last `Text` as the final message when no `Result` came
//!   (`supervise::collected::Collected::finish`), so nothing is synthesised here.
//! - **A text or reasoning part is printed only once it is complete**, and **a tool
//!   call only once it has finished** (`completed` or `error`): there is no output
//!   while the model writes or while a tool runs, so the stall guard, not the tool
//!   timeout, bounds a long tool call. The parser still understands a
//!   `pending`/`running` state, should a later version print it.
//! - Usage comes per step (`step_finish`), so an attempt's usage is the sum of its
//!   `Usage` events.
//!
//! Errors are one `error` event, `{"error":{"name":"APIError","data":{"message",
//! "statusCode","isRetryable","responseBody",…}}}` (or `UnknownError`,
//! `ContextOverflowError`, … with just a message), after OpenCode's own retries. It
//! becomes an `Error` and an error `Result` carrying the HTTP status, which is what
//! the classifier reads first.
//!
//! Lenient like the Claude parser: every field is read through `serde_json::Value`,
//! odd shapes degrade to defaults, every non-blank line yields at least one event,
//! and no input can panic.

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use serde_json::Value;

use super::descriptor::{Descriptor, Env, LaunchError, Lookup, ReadFile, Request, flag, host_port, mcp_args, url_or};
use super::event::{AgentEvent, LineParser};
use super::json::{self, OpenTools, SessionId, str_field, string_or_empty, u64_field};
use crate::config::types::{AgentConfig, AgentKind};

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    kind: AgentKind::Opencode,
    binary: "opencode",
    product: "OpenCode",
    package: "opencode-ai",
    tested_version: "1.18.33",
    argv: |cfg, req, binary| Ok(argv(cfg, req, binary)),
    env: launch_env,
    passes: &["OPENCODE_*", "OPENAI_*", "ANTHROPIC_*", "OPENROUTER_*", "GEMINI_*", "GOOGLE_*"],
    credentials: &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"],
    login: None,
    nesting_markers: &["OPENCODE"],
    endpoint,
    // It ignores SIGINT (measured: it ran on ~58 s); SIGTERM ends it at once.
    stop_signal: Signal::SIGTERM,
    quiet_tools: true,
    // Per step, as it goes.
    running_cost: true,
    parser: |_| Box::new(OpenCodeParser::default()),
    unknown_session_exit: None,
};

/// `BINARY run --format json --thinking [-m MODEL] [--session ID] [args…] -- PROMPT`.
///
/// `--thinking` makes OpenCode print the model's reasoning parts (more liveness and
/// evidence for the supervisor); `--` keeps a prompt that starts with `-` a prompt.
/// The model is `provider/model` as OpenCode spells it; without one, the config's
/// `model` is used. A resume continues the same session id.
pub(crate) fn argv(cfg: &AgentConfig, req: &Request<'_>, binary: &Path) -> Vec<String> {
    let mut argv = vec![binary.display().to_string()];
    argv.extend(["run", "--format", "json", "--thinking"].map(str::to_string));
    if DESCRIPTOR.permission_mode(cfg) == "auto" {
        argv.push("--auto".to_string());
    }
    argv.extend(flag("-m", cfg.model.as_deref()).chain(flag("--session", req.resume)));
    argv.extend(cfg.args.iter().cloned());
    // No message argument: `opencode run` reads it from stdin (see `launch::prepare`).
    argv
}

/// OpenCode without auto-update, model-list fetches, LSP downloads, default plugins
/// or sharing: no side traffic beyond the provider (it still tries a background npm
/// install of its plugin package, which fails harmlessly offline). An agent's own
/// `env` entries win over these.
pub(crate) fn env() -> Env {
    [
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS",
        "OPENCODE_DISABLE_SHARE",
    ]
    .into_iter()
    .map(|k| (k.to_string(), "1".to_string()))
    .collect()
}

/// The provider of the model (`provider/model`, from the agent's `model` or the
/// config's), its `options.baseURL` in the config (`OPENCODE_CONFIG`, else
/// `$XDG_CONFIG_HOME/opencode/opencode.json`), else the host of a provider ralph
/// knows; an unknown provider has none.
fn endpoint(agent: &AgentConfig, lookup: Lookup<'_>, read: ReadFile<'_>) -> Option<String> {
    let config_path = lookup("OPENCODE_CONFIG").map(PathBuf::from).or_else(|| {
        lookup("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| lookup("HOME").map(|h| Path::new(&h).join(".config")))
            .map(|dir| dir.join("opencode/opencode.json"))
    });
    let config: Option<Value> = config_path.and_then(|p| read(&p)).and_then(|text| serde_json::from_str(&text).ok());
    let setting = |path: &str| config.as_ref().and_then(|c| c.pointer(path)).and_then(Value::as_str);
    let model = agent.model.clone().or_else(|| setting("/model").map(str::to_string))?;
    let (provider, _) = model.split_once('/')?;
    if let Some(url) = setting(&format!("/provider/{provider}/options/baseURL")) {
        return host_port(url);
    }
    let vendor = match provider {
        "anthropic" => return url_or(lookup("ANTHROPIC_BASE_URL"), "api.anthropic.com:443"),
        "openai" => return url_or(lookup("OPENAI_BASE_URL"), "api.openai.com:443"),
        "google" => "generativelanguage.googleapis.com:443",
        "openrouter" => "openrouter.ai:443",
        "groq" => "api.groq.com:443",
        "mistral" => "api.mistral.ai:443",
        "deepseek" => "api.deepseek.com:443",
        "xai" => "api.x.ai:443",
        "opencode" => "opencode.ai:443",
        _ => return None,
    };
    Some(vendor.to_string())
}

/// [`env`], and `ralph mcp` for this attempt when the run has its control socket:
/// `OPENCODE_CONFIG_CONTENT`, which OpenCode 1.18 merges over the user's and the
/// project's configs (never written into them). An agent's own `env` entry of the
/// same name wins.
fn launch_env(req: &Request<'_>) -> Result<Env, LaunchError> {
    let mut env = env();
    if let Some((socket, attempt)) = req.control {
        let exe = crate::os::self_exe().map_err(LaunchError::SelfExe)?;
        let command: Vec<String> =
            std::iter::once(exe.display().to_string()).chain(mcp_args(socket, attempt)).collect();
        let config = serde_json::json!({"mcp": {"ralph": {"type": "local", "command": command, "enabled": true}}});
        env.push(("OPENCODE_CONFIG_CONTENT".to_string(), config.to_string()));
    }
    Ok(env)
}

/// One per attempt: remembers the session id (so `Session` is emitted when it first
/// appears or changes) and the tool calls already reported as started.
#[derive(Debug, Default)]
pub(crate) struct OpenCodeParser {
    session_id: SessionId,
    started: OpenTools,
}

impl OpenCodeParser {
    fn parse_tool(&mut self, part: &Value, out: &mut Vec<AgentEvent>) {
        let state = part.get("state").filter(|s| s.is_object());
        let status = state.and_then(|s| str_field(s, "status")).unwrap_or("");
        let id = str_field(part, "callID").or_else(|| str_field(part, "id")).unwrap_or("").to_owned();
        let ended = match status {
            "pending" | "running" => None,
            "completed" | "error" => {
                let is_error = status == "error";
                let output = json::text(state.and_then(|s| s.get(if is_error { "error" } else { "output" })), None);
                Some((is_error, output))
            }
            _ => return,
        };
        let input = state.and_then(|s| s.get("input")).cloned().unwrap_or(Value::Null);
        out.extend(self.started.note(id, (string_or_empty(part, "tool"), input), ended));
    }
}

impl LineParser for OpenCodeParser {
    /// `run` also prints a few plain lines of its own on stdout (a permission it
    /// auto-rejects): evidence for the classifier, not events.
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        json::each_object(line, |obj, kind, out| {
            let part = obj.get("part").filter(|p| p.is_object());
            let id = str_field(obj, "sessionID").or_else(|| part.and_then(|p| str_field(p, "sessionID")));
            self.session_id.note(id, out);
            match (kind, part) {
                ("text", Some(part)) => out.push(AgentEvent::Text { text: string_or_empty(part, "text") }),
                ("reasoning", Some(part)) => out.push(AgentEvent::Thinking { text: string_or_empty(part, "text") }),
                ("tool_use", Some(part)) => self.parse_tool(part, out),
                ("step_finish", Some(part)) => parse_step_finish(part, out),
                ("error", _) => parse_error(obj, out),
                _ => {}
            }
        })
    }
}

/// `part.tokens{input, output, reasoning, cache{read, write}}` and `part.cost` (USD)
/// of one step. Reasoning tokens are billed as output, so they count as output.
fn parse_step_finish(part: &Value, out: &mut Vec<AgentEvent>) {
    let cost = part.get("cost").and_then(Value::as_f64).filter(|c| c.is_finite());
    out.extend(json::usage(part.get("tokens"), &["input"], &["output", "reasoning"], cost));
}

/// `error{name, data{message, statusCode, responseBody, responseHeaders, …}}`: the
/// message (or the name) as an `Error`, the provider's response body as a second one
/// when it says more (usage-limit resets and error codes live there), a
/// `retry-after` header as a third, and an error `Result` with the HTTP status.
fn parse_error(obj: &Value, out: &mut Vec<AgentEvent>) {
    let err = obj.get("error").unwrap_or(&Value::Null);
    let (name, data) = (str_field(err, "name").unwrap_or(""), err.get("data").filter(|d| d.is_object()));
    let message = data
        .and_then(|d| str_field(d, "message"))
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .or_else(|| err.as_str().map(str::to_owned))
        .or_else(|| (!name.is_empty()).then(|| name.to_owned()))
        .unwrap_or_else(|| "opencode reported an error".to_owned());
    // The name says what kind of failure it was ("ContextOverflowError").
    out.push(AgentEvent::Error {
        message: if name.is_empty() || name == message { message.clone() } else { format!("{name}: {message}") },
    });
    let body = data.and_then(|d| str_field(d, "responseBody")).filter(|b| !b.trim().is_empty() && *b != message);
    if let Some(body) = body {
        out.push(AgentEvent::Error { message: body.to_owned() });
        // OpenAI reports an exhausted quota as HTTP 429 with the code
        // `insufficient_quota`: not a rate limit that passes, but billing. Claude's
        // synthetic code for that case says so to the classifier.
        if provider_error_code(body).as_deref() == Some("insufficient_quota") {
            out.push(AgentEvent::Error { message: "billing_error".to_owned() });
        }
    }
    // A retry-after header is the reset time of a rate limit (`recovery::reset`).
    let headers = data.and_then(|d| d.get("responseHeaders")).and_then(Value::as_object);
    for (name, value) in headers.into_iter().flatten() {
        if name.eq_ignore_ascii_case("retry-after") {
            let value = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
            out.push(AgentEvent::Error { message: format!("retry-after: {value}") });
        }
    }
    out.push(AgentEvent::Result {
        text: message,
        is_error: true,
        subtype: name.to_owned(),
        api_error_status: data.and_then(|d| u64_field(d, "statusCode")).and_then(|n| u16::try_from(n).ok()),
    });
}

/// `error.code` (else `error.type`) of an OpenAI-shaped error body.
fn provider_error_code(body: &str) -> Option<String> {
    let body: Value = serde_json::from_str(body).ok()?;
    let err = body.get("error")?;
    str_field(err, "code").or_else(|| str_field(err, "type")).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::json::fuzz;
    use crate::config::types::AgentKind;
    use serde_json::json;

    use crate::testkit::{result, session, text, thinking, tool_started, unknowns_of};

    fn parse_all(lines: &[&str]) -> Vec<AgentEvent> {
        crate::testkit::parse_all::<OpenCodeParser>(lines)
    }

    const SID: &str = "ses_dd2997bbeffeB2bE092aBKHs7B";

    // Captured from OpenCode 1.18.33 (`opencode run --format json`) against the fake
    // provider of tests/integration/fake_chat.rs: a write tool call, then the answer.
    const STEP_START: &str = r#"{"type":"step_start","timestamp":1796058024477,"sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","part":{"id":"prt_22d6689fa0018ZtzHZrDuQEvsr","messageID":"msg_22d6687c7001MKRgZNn0vOLPRY","sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","type":"step-start"}}"#;
    const TOOL_WRITE: &str = r#"{"type":"tool_use","timestamp":1796058024552,"sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","part":{"type":"tool","tool":"write","callID":"call_1","state":{"status":"completed","input":{"filePath":"/tmp/ocx/ws/out.txt","content":"hello from opencode\n"},"output":"Wrote file successfully.","metadata":{"diagnostics":{},"filepath":"/tmp/ocx/ws/out.txt","exists":false,"truncated":false},"title":"tmp/ocx/ws/out.txt","time":{"start":1796058024468,"end":1796058024494}},"id":"prt_22d668a02001g6esnp1eBC3bLe","sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","messageID":"msg_22d6687c7001MKRgZNn0vOLPRY"}}"#;
    const STEP_TOOLS: &str = r#"{"type":"step_finish","timestamp":1796058024552,"sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","part":{"id":"prt_22d668a340013Gb7m7uI7pbvSM","reason":"tool-calls","messageID":"msg_22d6687c7001MKRgZNn0vOLPRY","sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","type":"step-finish","tokens":{"total":120,"input":100,"output":20,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}"#;
    const TEXT_DONE: &str = r#"{"type":"text","timestamp":1796058024716,"sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","part":{"id":"prt_22d668abd001g9rXPcTs2nulhR","messageID":"msg_22d668a56001p4OJh03f1UiCFn","sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","type":"text","text":"Wrote it.\n\n<promise>DONE</promise>","time":{"start":1796058024637,"end":1796058024648}}}"#;
    const STEP_STOP: &str = r#"{"type":"step_finish","timestamp":1796058024716,"sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","part":{"id":"prt_22d668afa001IU19ZmAOQGGBAX","reason":"stop","messageID":"msg_22d668a56001p4OJh03f1UiCFn","sessionID":"ses_dd2997bbeffeB2bE092aBKHs7B","type":"step-finish","tokens":{"total":160,"input":150,"output":10,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.0012}}"#;

    #[test]
    fn a_tool_call_then_the_answer() {
        assert_eq!(
            parse_all(&[STEP_START, TOOL_WRITE, STEP_TOOLS, STEP_START, TEXT_DONE, STEP_STOP]),
            vec![
                session(SID),
                tool_started(
                    "call_1",
                    "write",
                    json!({"filePath": "/tmp/ocx/ws/out.txt", "content": "hello from opencode\n"})
                ),
                AgentEvent::ToolFinished {
                    id: "call_1".into(),
                    is_error: false,
                    output: "Wrote file successfully.".into()
                },
                AgentEvent::Usage { input_tokens: 100, output_tokens: 20, cost_usd: Some(0.0) },
                AgentEvent::Unknown { kind: "step_start".into() },
                text("Wrote it.\n\n<promise>DONE</promise>"),
                AgentEvent::Usage { input_tokens: 150, output_tokens: 10, cost_usd: Some(0.0012) },
            ]
        );
    }

    #[test]
    fn a_failed_tool_call() {
        let line = r#"{"type":"tool_use","timestamp":1796058230504,"sessionID":"ses_dd296639dffebGK4I0bUJFNJlg","part":{"type":"tool","tool":"read","callID":"call_9","state":{"status":"error","input":{"filePath":"/nonexistent/x"},"error":"File not found: /nonexistent/x","time":{"start":1796058229184,"end":1796058230333}},"id":"prt_22d69a9b2001fSpcv8mZrodXb7","sessionID":"ses_dd296639dffebGK4I0bUJFNJlg","messageID":"msg_22d69a4b8001MiqQFn137sorzt"}}"#;
        let ev = parse_all(&[line]);
        assert_eq!(
            ev[1..],
            [
                tool_started("call_9", "read", json!({"filePath": "/nonexistent/x"})),
                AgentEvent::ToolFinished {
                    id: "call_9".into(),
                    is_error: true,
                    output: "File not found: /nonexistent/x".into()
                },
            ]
        );
    }

    #[test]
    fn running_then_completed_starts_once() {
        let state = |status: &str| {
            json!({"type": "tool_use", "sessionID": "s", "part": {"type": "tool", "tool": "bash", "callID": "c1",
                "state": {"status": status, "input": {"command": "ls"}, "output": "a\nb"}}})
            .to_string()
        };
        let ev = parse_all(&[&state("pending"), &state("running"), &state("completed")]);
        assert_eq!(
            ev,
            vec![
                session("s"),
                AgentEvent::ToolStarted { id: "c1".into(), name: "bash".into(), input: json!({"command": "ls"}) },
                AgentEvent::Unknown { kind: "tool_use".into() },
                AgentEvent::ToolFinished { id: "c1".into(), is_error: false, output: "a\nb".into() },
            ]
        );
    }

    #[test]
    fn reasoning_is_thinking() {
        let line = r#"{"type":"reasoning","timestamp":1796058221365,"sessionID":"ses_dd2968123ffemyhjPutRdo40Ny","part":{"id":"prt_22d698ade001HIKEvn7IQCNgFl","messageID":"msg_22d6988e6001WCBldQsBQFo4H1","sessionID":"ses_dd2968123ffemyhjPutRdo40Ny","type":"reasoning","text":"Let me think.","time":{"start":1796058221278,"end":1796058221285}}}"#;
        assert_eq!(parse_all(&[line])[1], thinking("Let me think."));
    }

    #[test]
    fn session_only_on_change() {
        let a = r#"{"type":"text","sessionID":"ses_a","part":{"type":"text","text":"a"}}"#;
        let b = r#"{"type":"text","sessionID":"ses_b","part":{"type":"text","text":"b"}}"#;
        // Only inside the part: still the session.
        let c = r#"{"type":"step_start","part":{"sessionID":"ses_c"}}"#;
        assert_eq!(
            parse_all(&[a, a, b, c]),
            vec![session("ses_a"), text("a"), text("a"), session("ses_b"), text("b"), session("ses_c")]
        );
    }

    #[test]
    fn api_errors() {
        // Captured: HTTP 529 after OpenCode's five retries, and a 401 (not retried).
        let overloaded = r#"{"type":"error","timestamp":1796058081300,"sessionID":"ses_dd298f1dfffeYbXARa6czKjW1e","error":{"name":"APIError","data":{"message":"fake error 529","statusCode":529,"isRetryable":true,"responseHeaders":{"content-length":"67","content-type":"application/json","retry-after":"0"},"responseBody":"{\"error\": {\"message\": \"fake error 529\", \"type\": \"x\", \"code\": null}}","metadata":{"url":"http://127.0.0.1:18829/v1/chat/completions"}}}}"#;
        let ev = parse_all(&[overloaded]);
        assert_eq!(
            ev,
            vec![
                session("ses_dd298f1dfffeYbXARa6czKjW1e"),
                AgentEvent::Error { message: "APIError: fake error 529".into() },
                AgentEvent::Error {
                    message: r#"{"error": {"message": "fake error 529", "type": "x", "code": null}}"#.into()
                },
                AgentEvent::Error { message: "retry-after: 0".into() },
                result("fake error 529", true, "APIError", Some(529)),
            ]
        );
        let auth = r#"{"type":"error","timestamp":1796058080033,"sessionID":"ses_dd298f469ffeqwWe6VzWs3ifog","error":{"name":"APIError","data":{"message":"Incorrect API key provided: dummy-key.","statusCode":401,"isRetryable":false,"responseBody":""}}}"#;
        assert_eq!(
            parse_all(&[auth])[1..],
            [
                AgentEvent::Error { message: "APIError: Incorrect API key provided: dummy-key.".into() },
                result("Incorrect API key provided: dummy-key.", true, "APIError", Some(401)),
            ]
        );
    }

    #[test]
    fn an_exhausted_quota_is_billing_not_a_rate_limit() {
        let line = r#"{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"You exceeded your current quota, please check your plan and billing details.","statusCode":429,"isRetryable":false,"responseBody":"{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}","responseHeaders":{"Retry-After":"20"}}}}"#;
        let ev = parse_all(&[line]);
        assert!(ev.contains(&AgentEvent::Error { message: "billing_error".into() }), "{ev:#?}");
        assert!(ev.contains(&AgentEvent::Error { message: "retry-after: 20".into() }), "{ev:#?}");
        assert!(matches!(ev.last(), Some(AgentEvent::Result { api_error_status: Some(429), .. })));
    }

    #[test]
    fn errors_without_a_status() {
        // Captured: a stream that stalled past the provider's `timeout`.
        let timed_out = r#"{"type":"error","timestamp":1796058140441,"sessionID":"ses_dd298f1d1ffehCVil1ffAn38u6","error":{"name":"UnknownError","data":{"message":"The operation timed out."}}}"#;
        assert_eq!(
            parse_all(&[timed_out])[1..],
            [
                AgentEvent::Error { message: "UnknownError: The operation timed out.".into() },
                result("The operation timed out.", true, "UnknownError", None),
            ]
        );
        let bare = [r#"{"type":"error","error":{"name":"MessageAbortedError"}}"#, r#"{"type":"error","error":"boom"}"#];
        let ev = parse_all(&bare);
        assert_eq!(ev[0], AgentEvent::Error { message: "MessageAbortedError".into() });
        assert_eq!(ev[2], AgentEvent::Error { message: "boom".into() });
        assert!(matches!(&ev[3], AgentEvent::Result { is_error: true, api_error_status: None, .. }));
    }

    #[test]
    fn unknowns() {
        assert_eq!(
            parse_all(&[
                "! permission requested: external_directory (/etc/*); auto-rejecting",
                "42",
                r#"{"type":"step_start","part":{"type":"step-start"}}"#,
                r#"{"type":"text"}"#,
                r#"{"type":"tool_use","part":{"tool":"x","state":{"status":"weird"}}}"#,
                r#"{"type":"step_finish","part":{"reason":"stop"}}"#,
                r#"{"foo":1}"#,
                "  ",
            ]),
            unknowns_of(&["non-json", "non-json", "step_start", "text", "tool_use", "step_finish", "untyped"])
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut p = OpenCodeParser::default();
        let types = ["text", "reasoning", "tool_use", "step_start", "step_finish", "error", ""];
        fuzz::each_field(&mut p, &types, &["sessionID", "part", "error"]);
        for t in types {
            for s in fuzz::odd_values() {
                let obj = json!({"type": t, "sessionID": s, "part": {"text": s, "tool": s, "callID": s, "id": s,
                    "sessionID": s, "state": {"status": s, "input": s, "output": s, "error": s},
                    "tokens": {"input": s, "output": s, "reasoning": s}, "cost": s},
                    "error": {"name": s, "data": {"message": s, "statusCode": s, "responseBody": s}}});
                p.parse_line(&obj.to_string());
                for status in ["pending", "running", "completed", "error"] {
                    let obj = json!({"type": t, "part": {"tool": s, "callID": s, "state": {"status": status, "input": s, "output": s, "error": s}},
                        "error": {"data": s}});
                    p.parse_line(&obj.to_string());
                }
            }
        }
        fuzz::truncations(&mut p, TOOL_WRITE);
        fuzz::junk(&mut p, 4242);
    }

    fn config(model: Option<&str>, args: &[&str]) -> AgentConfig {
        let mut cfg: AgentConfig = toml::from_str("kind = \"opencode\"").expect("config");
        assert_eq!(cfg.kind, AgentKind::Opencode);
        cfg.model = model.map(str::to_owned);
        cfg.args = args.iter().map(|a| a.to_string()).collect();
        cfg
    }

    fn request<'a>(prompt: &'a str, resume: Option<&'a str>) -> Request<'a> {
        Request { resume, ..crate::testkit::request("oc", prompt) }
    }

    #[test]
    fn launch_and_resume_argv() {
        let bin = Path::new("/bin/opencode");
        assert_eq!(
            argv(&config(Some("fake/fake-model"), &[]), &request("-do it", None), bin),
            ["/bin/opencode", "run", "--format", "json", "--thinking", "-m", "fake/fake-model"]
        );
        assert_eq!(
            argv(&config(None, &["--agent", "build"]), &request("go on", Some("ses_1")), bin),
            ["/bin/opencode", "run", "--format", "json", "--thinking", "--session", "ses_1", "--agent", "build",]
        );
    }

    #[test]
    fn side_traffic_is_off() {
        let env = env();
        assert_eq!(env.len(), 5);
        assert!(env.iter().all(|(k, v)| k.starts_with("OPENCODE_DISABLE_") && v == "1"));
    }
}

//! Gemini CLI: its descriptor (how it is launched and resumed, and the rest ralph
//! knows about it), and the parser for its headless `--output-format stream-json`
//! (one JSON object per line).
//!
//! Observed with Gemini CLI 0.61.0 (see `docs/agents.md`):
//!
//! - `init{session_id, model}` opens every run (also a resumed one, with the same
//!   id). The id is reported as `Session` only once the session can be resumed: after
//!   a tool call's result or a successful result. A run that fails before (an HTTP
//!   error, a reset even after some text) leaves no session behind, and `--resume`
//!   of it exits 42;
//! - `message{role: "user", content}` echoes the prompt;
//! - `message{role: "assistant", content, delta: true}` is one streamed chunk: a reply
//!   arrives as several of them, so the parser joins them and emits one `Text` per
//!   message, when something else follows (a tool call, an error, the result);
//! - `tool_use{tool_name, tool_id, parameters}` and `tool_result{tool_id, status,
//!   output, error{type, message}}`;
//! - `error{severity, message}`: "warning" for loop detection or a blocked tool,
//!   "error" for an invalid stream (a reset mid-stream: "Model stream ended without a
//!   finish reason.", after which the CLI still exits 0);
//! - `result{status, error{type, message}, stats{input_tokens, output_tokens, …}}`:
//!   `status` is "success" or "error"; `error` is present only when the CLI itself
//!   failed (an HTTP error: "[API Error: …]", exit code = HTTP status mod 256).
//!
//! Nothing here can panic: every field is read leniently through `serde_json::Value`.

use std::path::Path;

use nix::sys::signal::Signal;
use serde_json::Value;

use super::descriptor::{Descriptor, Env, LaunchError, Request, flag, mcp_args, url_or};
use super::event::{AgentEvent, LineParser};
use super::json::{self, Line, status_field, str_field, string_or_empty, unknown};
use crate::config::types::{AgentConfig, AgentKind};

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    kind: AgentKind::Gemini,
    binary: "gemini",
    product: "Gemini CLI",
    package: "@google/gemini-cli",
    tested_version: "0.61.0",
    argv: |cfg, req, binary| Ok(argv(cfg, req, binary)),
    env: launch_env,
    passes: &["GEMINI_*", "GOOGLE_*", "CLOUDSDK_*"],
    credentials: &["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"],
    login: None,
    nesting_markers: &[],
    endpoint: |_, lookup, _| url_or(lookup("GOOGLE_GEMINI_BASE_URL"), "generativelanguage.googleapis.com:443"),
    stop_signal: Signal::SIGINT,
    quiet_tools: false,
    running_cost: false,
    parser: |_| Box::new(GeminiParser::default()),
    // Its input-error code; its other exit codes are HTTP statuses mod 256.
    unknown_session_exit: Some(42),
};

/// `gemini --prompt=PROMPT --output-format stream-json --yolo --skip-trust [-m MODEL]
/// [--resume SESSION] [args…]`.
///
/// The prompt is passed as `--prompt=…` in one argument: yargs would read a prompt
/// that starts with `-` as an option after a separate `-p`. `--yolo` approves every
/// tool call and, unlike Claude's bypass flag, works as root; `--skip-trust` trusts
/// the working directory for this session only. An explicit model saves the CLI a
/// routing request to pick one.
pub(crate) fn argv(cfg: &AgentConfig, req: &Request<'_>, binary: &Path) -> Vec<String> {
    let mut argv = vec![binary.display().to_string()];
    // The prompt comes on stdin (see `launch::prepare`); `--prompt` is appended to it,
    // so an empty one keeps headless mode and adds nothing.
    let mode = format!("--approval-mode={}", DESCRIPTOR.permission_mode(cfg));
    argv.extend(["--prompt=", "--output-format", "stream-json", &mode, "--skip-trust"].map(str::to_string));
    argv.extend(flag("-m", cfg.model.as_deref()).chain(flag("--resume", req.resume)));
    argv.extend(cfg.args.iter().cloned());
    argv
}

/// Gemini CLI without telemetry. Its retries, auto-update and usage statistics are
/// settings only (`$HOME/.gemini/settings.json`: `general.maxAttempts`,
/// `general.enableAutoUpdate`, `privacy.usageStatisticsEnabled`), not variables.
/// A user's own `GEMINI_TELEMETRY_ENABLED` wins.
pub(crate) fn env() -> Env {
    if std::env::var_os(TELEMETRY).is_some() {
        return Vec::new();
    }
    vec![(TELEMETRY.to_string(), "false".to_string())]
}

const TELEMETRY: &str = "GEMINI_TELEMETRY_ENABLED";

/// [`env`], and `ralph mcp` for this attempt when the run has its control socket.
/// Gemini reads MCP servers only from settings files; its system settings file can
/// be moved with `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, and `mcpServers` is
/// shallow-merged over the user's and the project's, so a file that holds only this
/// server adds it without touching theirs (it replaces a machine's own system
/// settings file for this attempt, if there is one). Gemini skips a settings file
/// with a group- or world-writable ancestor directory, so the file is in ralph's
/// private directory.
fn launch_env(req: &Request<'_>) -> Result<Env, LaunchError> {
    let mut env = env();
    if let Some((socket, attempt)) = req.control {
        let exe = crate::os::self_exe().map_err(LaunchError::SelfExe)?;
        let invalid = |e: std::io::Error| LaunchError::Invalid {
            agent: req.agent.to_string(),
            message: format!("cannot write the settings that register ralph mcp: {e}"),
        };
        let settings = serde_json::json!({"mcpServers": {"ralph": {
            "command": exe.display().to_string(),
            "args": mcp_args(socket, attempt),
            "trust": true,
        }}});
        let file = (req.settings_file)(req.cwd, "gemini", settings.to_string().as_bytes()).map_err(invalid)?;
        env.push(("GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_string(), file.display().to_string()));
    }
    Ok(env)
}

/// One per attempt.
#[derive(Debug, Default)]
pub(crate) struct GeminiParser {
    session_id: Option<String>,
    /// Whether `Session` was emitted for `session_id`: only once a model turn was
    /// complete, because Gemini keeps no session that failed before, and resuming
    /// it then fails (exit 42).
    session_reported: bool,
    /// The assistant message being streamed, not yet emitted.
    pending: String,
    /// Whether `pending` holds an unfinished message (it may be empty text).
    open: bool,
    /// The last complete assistant message since the last tool call: the answer.
    answer: String,
}

impl GeminiParser {
    /// Ends the message being streamed, if any, as one `Text`.
    fn flush(&mut self, out: &mut Vec<AgentEvent>) {
        if !self.open {
            return;
        }
        self.open = false;
        let text = std::mem::take(&mut self.pending);
        if text.is_empty() {
            return;
        }
        self.answer.clone_from(&text);
        out.push(AgentEvent::Text { text });
    }

    fn message(&mut self, obj: &Value, out: &mut Vec<AgentEvent>) {
        if str_field(obj, "role") != Some("assistant") {
            // The prompt echoed back (role "user"): the message being streamed, if
            // any, is over.
            self.flush(out);
            out.push(unknown("message/user"));
            return;
        }
        let content = json::text(obj.get("content"), Some(""));
        if obj.get("delta").and_then(Value::as_bool).unwrap_or(false) {
            self.open = true;
            self.pending.push_str(&content);
        } else {
            // A whole message at once.
            self.flush(out);
            self.open = true;
            self.pending = content;
            self.flush(out);
        }
    }

    fn init(&mut self, obj: &Value, out: &mut Vec<AgentEvent>) {
        self.flush(out);
        if let Some(id) = str_field(obj, "session_id").filter(|s| !s.is_empty())
            && self.session_id.as_deref() != Some(id)
        {
            self.session_id = Some(id.to_owned());
            self.session_reported = false;
        }
        out.push(unknown("init"));
    }

    /// Reports the session once Gemini has kept a model turn of it.
    fn resumable(&mut self, out: &mut Vec<AgentEvent>) {
        if !self.session_reported
            && let Some(id) = &self.session_id
        {
            self.session_reported = true;
            out.push(AgentEvent::Session { id: id.clone() });
        }
    }

    fn tool_use(&mut self, obj: &Value, out: &mut Vec<AgentEvent>) {
        self.flush(out);
        // Text before a tool call is not the final answer.
        self.answer.clear();
        out.push(AgentEvent::ToolStarted {
            id: string_or_empty(obj, "tool_id"),
            name: string_or_empty(obj, "tool_name"),
            input: obj.get("parameters").cloned().unwrap_or(Value::Null),
        });
    }

    fn tool_result(&mut self, obj: &Value, out: &mut Vec<AgentEvent>) {
        self.flush(out);
        self.resumable(out);
        let is_error = str_field(obj, "status").is_some_and(|s| s != "success");
        let error = obj.get("error").and_then(|e| str_field(e, "message")).unwrap_or("");
        let output = match json::text(obj.get("output"), Some("")) {
            o if o.is_empty() => error.to_owned(),
            o if is_error && !error.is_empty() => format!("{o}\n{error}"),
            o => o,
        };
        out.push(AgentEvent::ToolFinished { id: string_or_empty(obj, "tool_id"), is_error, output });
    }

    fn error(&mut self, obj: &Value, out: &mut Vec<AgentEvent>) {
        self.flush(out);
        let message = obj.get("message").map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned));
        out.push(AgentEvent::Error { message: message.unwrap_or_default() });
    }

    fn result(&mut self, obj: &Value, out: &mut Vec<AgentEvent>) {
        self.flush(out);
        out.extend(json::usage(obj.get("stats"), &["input_tokens", "input"], &["output_tokens"], None));
        let status = str_field(obj, "status").unwrap_or("");
        let is_error = status != "success";
        if !is_error {
            self.resumable(out);
        }
        let error = obj.get("error").filter(|e| e.is_object());
        let error_message = error.and_then(|e| str_field(e, "message")).filter(|m| !m.is_empty());
        // A failed run's text is its error (as with Claude), so the classifier reads
        // it; an error result without one (an invalid stream) keeps the answer, and
        // the `error` event before it carries the cause.
        let text = match error_message {
            Some(m) if is_error => m.to_owned(),
            _ => std::mem::take(&mut self.answer),
        };
        let api_error_status = error
            .and_then(|e| status_field(e, "code").or_else(|| status_field(e, "status")))
            .or_else(|| error_message.and_then(status_in_text))
            .filter(|_| is_error);
        out.push(AgentEvent::Result {
            text,
            is_error,
            subtype: if status.is_empty() { "unknown".to_owned() } else { status.to_owned() },
            api_error_status,
        });
    }
}

impl LineParser for GeminiParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        let obj = match json::line(line) {
            Line::Object(obj) => obj,
            Line::Blank => return out,
            // Gemini prints only objects on stdout; anything else is noise that still
            // proves the process alive, and evidence for the classifier.
            Line::NotJson => {
                self.flush(&mut out);
                out.push(unknown("non-json"));
                return out;
            }
        };
        match str_field(&obj, "type").unwrap_or("") {
            "init" => self.init(&obj, &mut out),
            "message" => self.message(&obj, &mut out),
            "tool_use" => self.tool_use(&obj, &mut out),
            "tool_result" => self.tool_result(&obj, &mut out),
            "error" => self.error(&obj, &mut out),
            "result" => self.result(&obj, &mut out),
            other => {
                self.flush(&mut out);
                out.push(unknown(other));
            }
        }
        // A streamed chunk yields nothing until its message ends; the line itself
        // still counts as activity for the caller.
        out
    }
}

/// The HTTP status in an "[API Error: {"error":{"code":401,…}}]" message, when the
/// CLI quoted the provider's error body (it does for 401 and 500, not for 429 and
/// 503, whose texts it rewrites).
fn status_in_text(message: &str) -> Option<u16> {
    json::status_after(message, &["\"code\":"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::json::fuzz;
    use serde_json::json;

    use crate::testkit::{result, session, text, tool_started, unknowns_of};

    fn parse_all(lines: &[&str]) -> Vec<AgentEvent> {
        crate::testkit::parse_all::<GeminiParser>(lines)
    }

    // Captured from Gemini CLI 0.61.0 against tests/integration/fake_gemini.rs.
    const INIT: &str = r#"{"type":"init","timestamp":"2026-11-30T17:00:20.529Z","session_id":"d5441ac0-7824-4592-bd72-9cc1eb96b1e3","model":"gemini-2.5-flash"}"#;
    const USER: &str =
        r#"{"type":"message","timestamp":"2026-11-30T17:00:20.530Z","role":"user","content":"write out.txt"}"#;
    const TOOL_USE: &str = r#"{"type":"tool_use","timestamp":"2026-11-30T17:00:20.586Z","tool_name":"write_file","tool_id":"write_file__write_file_1796058020558_0","parameters":{"file_path":"out.txt","content":"hello from gemini\n"}}"#;
    const TOOL_RESULT: &str = r#"{"type":"tool_result","timestamp":"2026-11-30T17:00:20.625Z","tool_id":"write_file__write_file_1796058020558_0","status":"success"}"#;
    const DONE: &str = r#"{"type":"message","timestamp":"2026-11-30T17:00:20.634Z","role":"assistant","content":"Wrote it.\n\n<promise>DONE</promise>","delta":true}"#;
    const SUCCESS: &str = r#"{"type":"result","timestamp":"2026-11-30T17:00:20.636Z","status":"success","stats":{"total_tokens":214,"input_tokens":200,"output_tokens":14,"cached":0,"input":200,"duration_ms":107,"tool_calls":1,"models":{"gemini-2.5-flash":{"total_tokens":214,"input_tokens":200,"output_tokens":14,"cached":0,"input":200}}}}"#;
    const SID: &str = "d5441ac0-7824-4592-bd72-9cc1eb96b1e3";

    #[test]
    fn a_run_with_a_tool_call() {
        assert_eq!(
            parse_all(&[INIT, USER, TOOL_USE, TOOL_RESULT, DONE, SUCCESS]),
            vec![
                AgentEvent::Unknown { kind: "init".into() },
                AgentEvent::Unknown { kind: "message/user".into() },
                tool_started(
                    "write_file__write_file_1796058020558_0",
                    "write_file",
                    json!({"file_path": "out.txt", "content": "hello from gemini\n"})
                ),
                session(SID),
                AgentEvent::ToolFinished {
                    id: "write_file__write_file_1796058020558_0".into(),
                    is_error: false,
                    output: String::new(),
                },
                text("Wrote it.\n\n<promise>DONE</promise>"),
                AgentEvent::Usage { input_tokens: 200, output_tokens: 14, cost_usd: None },
                result("Wrote it.\n\n<promise>DONE</promise>", false, "success", None),
            ]
        );
    }

    #[test]
    fn streamed_chunks_make_one_message_and_the_answer() {
        let lines = [
            r#"{"type":"init","timestamp":"2026-11-30T17:00:34.047Z","session_id":"19d159ee-d23d-451e-85b8-755a5246dc90","model":"gemini-2.5-flash"}"#,
            r#"{"type":"message","timestamp":"2026-11-30T17:00:34.048Z","role":"user","content":"second"}"#,
            r#"{"type":"message","timestamp":"2026-11-30T17:00:34.084Z","role":"assistant","content":"First part, ","delta":true}"#,
            r#"{"type":"message","timestamp":"2026-11-30T17:00:34.085Z","role":"assistant","content":"second part.","delta":true}"#,
            r#"{"type":"message","timestamp":"2026-11-30T17:00:34.086Z","role":"assistant","content":"\n\n<promise>DONE</promise>","delta":true}"#,
            r#"{"type":"result","timestamp":"2026-11-30T17:00:34.165Z","status":"success","stats":{"total_tokens":107,"input_tokens":100,"output_tokens":7,"cached":0,"input":100,"duration_ms":121,"tool_calls":0,"models":{}}}"#,
        ];
        let mut p = GeminiParser::default();
        let per_line: Vec<Vec<AgentEvent>> = lines.iter().map(|l| p.parse_line(l)).collect();
        // Chunks yield nothing until the message ends.
        assert!(per_line[2].is_empty() && per_line[3].is_empty() && per_line[4].is_empty());
        let full = "First part, second part.\n\n<promise>DONE</promise>";
        assert_eq!(
            per_line[5],
            vec![
                text(full),
                AgentEvent::Usage { input_tokens: 100, output_tokens: 7, cost_usd: None },
                session("19d159ee-d23d-451e-85b8-755a5246dc90"),
                AgentEvent::Result {
                    text: full.into(),
                    is_error: false,
                    subtype: "success".into(),
                    api_error_status: None
                },
            ]
        );
    }

    #[test]
    fn text_before_a_tool_call_is_not_the_answer() {
        let before = r#"{"type":"message","role":"assistant","content":"I'll write it.","delta":true}"#;
        let ev = parse_all(&[INIT, before, TOOL_USE, TOOL_RESULT, SUCCESS]);
        assert_eq!(ev[1], text("I'll write it."));
        assert!(matches!(ev.last(), Some(AgentEvent::Result { text, is_error: false, .. }) if text.is_empty()));
        // Two messages around a tool call: the answer is the second.
        let ev = parse_all(&[INIT, before, TOOL_USE, TOOL_RESULT, DONE, SUCCESS]);
        assert!(
            matches!(ev.last(), Some(AgentEvent::Result { text, .. }) if text == "Wrote it.\n\n<promise>DONE</promise>")
        );
    }

    #[test]
    fn a_whole_message_without_delta() {
        let whole = r#"{"type":"message","role":"assistant","content":"all at once"}"#;
        assert_eq!(
            parse_all(&[INIT, whole, whole]),
            vec![AgentEvent::Unknown { kind: "init".into() }, text("all at once"), text("all at once")]
        );
    }

    #[test]
    fn http_errors_are_error_results() {
        let overloaded = r#"{"type":"result","timestamp":"2026-11-30T17:01:10.063Z","status":"error","error":{"type":"unknown","message":"[API Error: The model is overloaded. Please try again later.]"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{"gemini-2.5-flash":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0}}}}"#;
        let unauthorized = r#"{"type":"result","timestamp":"2026-11-30T17:01:24.461Z","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"UNAUTHENTICATED\"}}]"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{}}}"#;
        let server = r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}]"}}"#;
        let ev = parse_all(&[INIT, USER, overloaded]);
        assert_eq!(
            ev.last(),
            Some(&result("[API Error: The model is overloaded. Please try again later.]", true, "error", None))
        );
        assert!(ev.contains(&AgentEvent::Usage { input_tokens: 0, output_tokens: 0, cost_usd: None }));
        // Nothing was answered: no session to resume (Gemini deleted it).
        assert!(!ev.iter().any(|e| matches!(e, AgentEvent::Session { .. })), "{ev:?}");
        let status = |line| match parse_all(&[line]).pop() {
            Some(AgentEvent::Result { is_error: true, api_error_status, .. }) => api_error_status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status(unauthorized), Some(401));
        assert_eq!(status(server), Some(500));
    }

    #[test]
    fn a_reset_mid_stream_exits_0_but_is_an_error() {
        let lines = [
            INIT,
            r#"{"type":"message","timestamp":"2026-11-30T17:01:27.905Z","role":"user","content":"hi"}"#,
            r#"{"type":"message","timestamp":"2026-11-30T17:01:27.940Z","role":"assistant","content":"Thinking about","delta":true}"#,
            r#"{"type":"error","timestamp":"2026-11-30T17:01:28.157Z","severity":"error","message":"Model stream ended without a finish reason."}"#,
            r#"{"type":"result","timestamp":"2026-11-30T17:01:28.157Z","status":"error","stats":{"total_tokens":107,"input_tokens":100,"output_tokens":7,"cached":0,"input":100,"duration_ms":253,"tool_calls":0,"models":{}}}"#,
        ];
        assert_eq!(
            parse_all(&lines)[2..],
            [
                text("Thinking about"),
                AgentEvent::Error { message: "Model stream ended without a finish reason.".into() },
                AgentEvent::Usage { input_tokens: 100, output_tokens: 7, cost_usd: None },
                result("Thinking about", true, "error", None),
            ]
        );
    }

    #[test]
    fn a_resumed_run_reports_its_session_once() {
        let mut p = GeminiParser::default();
        let ev: Vec<AgentEvent> =
            [INIT, DONE, SUCCESS, INIT, DONE, SUCCESS].iter().flat_map(|l| p.parse_line(l)).collect();
        let sessions = ev.iter().filter(|e| matches!(e, AgentEvent::Session { .. })).count();
        assert_eq!(sessions, 1, "{ev:?}");
    }

    #[test]
    fn failed_tool_results() {
        let line = r#"{"type":"tool_result","tool_id":"t1","status":"error","output":"","error":{"type":"invalid_tool_params","message":"File path must be absolute"}}"#;
        assert_eq!(
            parse_all(&[line]),
            vec![AgentEvent::ToolFinished {
                id: "t1".into(),
                is_error: true,
                output: "File path must be absolute".into()
            }]
        );
        let both =
            r#"{"type":"tool_result","tool_id":"t2","status":"error","output":"exit 1","error":{"message":"boom"}}"#;
        assert_eq!(
            parse_all(&[both]),
            vec![AgentEvent::ToolFinished { id: "t2".into(), is_error: true, output: "exit 1\nboom".into() }]
        );
    }

    #[test]
    fn warnings_and_unknowns() {
        let warning = r#"{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}"#;
        assert_eq!(
            parse_all(&[warning, "not json", "7", r#"{"type":"thought","content":"x"}"#, r#"{"x":1}"#, "  "]),
            [
                vec![AgentEvent::Error { message: "Loop detected, stopping execution".into() }],
                unknowns_of(&["non-json", "non-json", "thought", "untyped"])
            ]
            .concat()
        );
    }

    #[test]
    fn argv_for_launch_and_resume() {
        let cfg: AgentConfig =
            toml::from_str("kind = \"gemini\"\nmodel = \"gemini-2.5-flash\"\nargs = [\"--debug\"]").expect("config");
        let mut req = crate::testkit::request("g", "--do the thing");
        let bin = Path::new("/bin/gemini");
        assert_eq!(
            argv(&cfg, &req, bin),
            [
                "/bin/gemini",
                "--prompt=",
                "--output-format",
                "stream-json",
                "--approval-mode=yolo",
                "--skip-trust",
                "-m",
                "gemini-2.5-flash",
                "--debug"
            ]
        );
        req.resume = Some("19d159ee-d23d-451e-85b8-755a5246dc90");
        let resumed = argv(&cfg, &req, bin);
        assert_eq!(resumed[6..10], ["-m", "gemini-2.5-flash", "--resume", "19d159ee-d23d-451e-85b8-755a5246dc90"]);
    }

    #[test]
    fn garbage_never_panics() {
        let mut p = GeminiParser::default();
        let types = ["init", "message", "tool_use", "tool_result", "error", "result", "other", ""];
        let keys = [
            "session_id",
            "role",
            "content",
            "delta",
            "tool_name",
            "tool_id",
            "parameters",
            "status",
            "output",
            "error",
            "severity",
            "message",
            "stats",
        ];
        for t in types {
            for k in keys {
                for s in fuzz::odd_values() {
                    let mut obj = json!({"type": t, "role": "assistant", "delta": true});
                    obj[k] = s.clone();
                    p.parse_line(&obj.to_string());
                    let nested = json!({"type": t, "status": "error", "error": {"message": s, "code": s, "type": s},
                        "stats": {"input_tokens": s, "output_tokens": s}});
                    p.parse_line(&nested.to_string());
                }
            }
        }
        fuzz::truncations(&mut p, SUCCESS);
        fuzz::junk(&mut p, 777);
        assert_eq!(status_in_text("\"code\":"), None);
        assert_eq!(status_in_text("\"code\": 99999999999999999999"), None);
    }
}

//! A fake OpenAI provider on 127.0.0.1 speaking enough of the Responses API
//! (`POST /v1/responses` with `stream: true`, answered as SSE) to drive the real Codex
//! CLI through a scripted conversation, with scriptable failures. One instance per
//! test, so parallel tests share nothing; every request is logged.
//!
//! Codex 0.171 offers the model an `exec_command {cmd}` function (plus `write_stdin`,
//! `view_image`, goal and sub-agent tools, `web_search`); the happy path answers with
//! an `exec_command` call, and Codex sends its output back as a
//! `function_call_output` in the next request. A stream must end with
//! `response.completed` (with `usage`), or Codex reports a disconnected stream.

#![allow(dead_code)]

use serde_json::{Value, json};

pub(crate) use crate::http_fake::Request;
use crate::http_fake::{Conn, Fake, Head, PROVIDER_STALL, Scripted, Turn, sse_event as sse};

/// What the provider answers to one `POST /v1/responses`.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// An `exec_command` function call running `cmd` (in the turn's cwd).
    Exec { cmd: String },
    /// A call of any function tool, with JSON arguments; `namespace` for a tool of a
    /// namespace (Codex offers each MCP server's tools as the namespace `mcp__NAME`).
    Call { namespace: Option<String>, name: String, arguments: Value },
    /// A final assistant message (preceded by a short reasoning item).
    Text(String),
    /// An HTTP error with an OpenAI-shaped body `{"error": {message, type, param, code}}`.
    Status {
        code: u16,
        kind: &'static str,
        error_code: Option<&'static str>,
        message: String,
        retry_after: Option<u32>,
    },
    /// Headers and `response.created`, then silence (the connection stays open).
    StallAfterFirstEvent,
}

impl Reply {
    pub(crate) fn overloaded() -> Self {
        Reply::Status {
            code: 529,
            kind: "server_error",
            error_code: None,
            message: "Overloaded".into(),
            retry_after: None,
        }
    }

    pub(crate) fn server_error() -> Self {
        Reply::Status {
            code: 500,
            kind: "server_error",
            error_code: None,
            message: "The server had an error while processing your request. Sorry about that!".into(),
            retry_after: None,
        }
    }

    pub(crate) fn rate_limited(retry_after: Option<u32>) -> Self {
        Reply::Status {
            code: 429,
            kind: "requests",
            error_code: Some("rate_limit_exceeded"),
            message: "Rate limit reached for requests. Please try again in 1s.".into(),
            retry_after,
        }
    }

    pub(crate) fn unauthorized() -> Self {
        Reply::Status {
            code: 401,
            kind: "invalid_request_error",
            error_code: Some("invalid_api_key"),
            message: "Incorrect API key provided: x. You can find your API key at https://platform.openai.com/account/api-keys.".into(),
            retry_after: None,
        }
    }
}

/// The fake Responses API: [`Reply`]s answer the `/v1/responses` requests in order.
pub(crate) type FakeOpenAi = Fake<Reply>;

impl FakeOpenAi {
    /// The base URL Codex's `[model_providers.X] base_url` takes.
    pub(crate) fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// The `/v1/responses` requests received so far.
    pub(crate) fn response_requests(&self) -> Vec<Request> {
        self.requests_where(|r| r.path.starts_with("/v1/responses"))
    }
}

/// An OpenAI error body, `{"error": {message, type, param, code}}`.
pub(crate) fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

impl Scripted for Reply {
    fn scripted(request: &Request) -> bool {
        request.method == "POST" && request.path.starts_with("/v1/responses")
    }

    fn exhausted() -> Self {
        Reply::server_error()
    }

    /// Every answer closes the connection; ids count the responses.
    fn answer(conn: &mut Conn, _: &Request, reply: Option<Self>, turn: Turn) -> bool {
        match reply {
            Some(reply) => answer(conn, &reply, turn.scripted),
            None => {
                conn.empty(404, "Not Found");
            }
        }
        false
    }
}

fn answer(conn: &mut Conn, reply: &Reply, n: u32) {
    let id = format!("resp_fake_{n}");
    let created = json!({"type": "response.created", "response": {"id": id}});
    let items = match reply {
        Reply::Exec { cmd } => vec![json!({"type": "function_call", "id": format!("fc_{n}"),
            "call_id": format!("call_{n}"), "name": "exec_command",
            "arguments": json!({"cmd": cmd}).to_string()})],
        Reply::Call { namespace, name, arguments } => {
            let mut call = json!({"type": "function_call", "id": format!("fc_{n}"),
                "call_id": format!("call_{n}"), "name": name, "arguments": arguments.to_string()});
            if let Some(ns) = namespace {
                call["namespace"] = json!(ns);
            }
            vec![call]
        }
        Reply::Text(text) => vec![
            json!({"type": "reasoning", "id": format!("rs_{n}"),
                   "summary": [{"type": "summary_text", "text": "Checking the work."}]}),
            json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant",
                   "content": [{"type": "output_text", "text": text}]}),
        ],
        Reply::Status { code, kind, error_code, message, retry_after } => {
            conn.json(*code, "Error", &error_body(message, kind, *error_code), *retry_after);
            return;
        }
        Reply::StallAfterFirstEvent => {
            conn.write(Head::sse().end());
            conn.write(sse("response.created", &created));
            conn.flush();
            conn.stall_until_closed(PROVIDER_STALL);
            return;
        }
    };
    let mut out = String::new();
    out.push_str(&sse("response.created", &created));
    for (i, item) in items.iter().enumerate() {
        out.push_str(&sse(
            "response.output_item.added",
            &json!({"type": "response.output_item.added", "output_index": i, "item": item}),
        ));
        out.push_str(&sse(
            "response.output_item.done",
            &json!({"type": "response.output_item.done", "output_index": i, "item": item}),
        ));
    }
    let usage = json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 10},
                       "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 107});
    out.push_str(&sse(
        "response.completed",
        &json!({"type": "response.completed", "response": {"id": id, "usage": usage}}),
    ));
    conn.write(Head::sse().end());
    conn.write(out);
}

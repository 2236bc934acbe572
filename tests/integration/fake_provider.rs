//! A fake model provider on 127.0.0.1 that speaks enough of the Anthropic Messages
//! API (SSE streaming and non-streaming) to drive the real Claude Code CLI through a
//! scripted conversation, with scriptable failures. Error replies ([`Reply::Status`])
//! are also answered on the model paths of OpenAI Responses (`/v1/responses`), Chat
//! Completions (`/v1/chat/completions`) and Gemini (`…:generateContent`,
//! `…:streamGenerateContent`), with a body shaped for that API, so the other CLIs'
//! failure outputs can be captured. One instance per test, so parallel tests share
//! nothing; every request is logged for the test to inspect.

#![allow(dead_code)]

use serde_json::{Value, json};

pub(crate) use crate::http_fake::Request;
use crate::http_fake::{Conn, Fake, Head, PROVIDER_STALL, Scripted, Turn, sse_event as sse};

/// What the provider answers to one model request (`POST /v1/messages`, or, for
/// [`Reply::Status`] only, the other APIs' model paths: see [`Api`]).
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A `Write` tool call (absolute path), ending the turn with `tool_use`.
    Write { path: String, content: String },
    /// A call of any tool (e.g. `mcp__ralph__declare_complete`), ending the turn
    /// with `tool_use`.
    Tool { name: String, input: Value },
    /// A final text message.
    Text(String),
    /// An HTTP error with a provider-shaped body. `kind` and `message` are the
    /// Anthropic error's; the other APIs get their own wording for `code` (see
    /// [`openai_error`], [`gemini_error`]). `retry_after` becomes a `retry-after`
    /// header (`Some(0)` lets the CLIs' own retries go at once).
    Status { code: u16, kind: &'static str, message: String, retry_after: Option<u32> },
    /// Headers and the first event, then silence (the connection stays open).
    StallAfterFirstEvent,
    /// Headers and the first event, then the connection is reset.
    ResetMidStream,
}

impl Reply {
    pub(crate) fn overloaded() -> Self {
        Reply::Status { code: 529, kind: "overloaded_error", message: "Overloaded".into(), retry_after: None }
    }

    pub(crate) fn server_error() -> Self {
        Reply::Status { code: 500, kind: "api_error", message: "Internal server error".into(), retry_after: None }
    }

    pub(crate) fn unauthorized() -> Self {
        Reply::Status {
            code: 401,
            kind: "authentication_error",
            message: "invalid x-api-key".into(),
            retry_after: None,
        }
    }

    /// The same status with a `retry-after` header.
    pub(crate) fn retry_after(self, seconds: u32) -> Self {
        match self {
            Reply::Status { code, kind, message, .. } => {
                Reply::Status { code, kind, message, retry_after: Some(seconds) }
            }
            other => other,
        }
    }

    /// Gemini's (and OpenAI's) overload status.
    pub(crate) fn unavailable() -> Self {
        Reply::Status { code: 503, kind: "overloaded_error", message: "Overloaded".into(), retry_after: None }
    }

    pub(crate) fn rate_limited(retry_after: u32) -> Self {
        Reply::Status {
            code: 429,
            kind: "rate_limit_error",
            message: "This request would exceed the rate limit for your organization".into(),
            retry_after: Some(retry_after),
        }
    }
}

/// The fake provider: [`Reply`]s answer the model requests of every [`Api`] in order.
pub(crate) type FakeProvider = Fake<Reply>;

impl FakeProvider {
    pub(crate) fn base_url(&self) -> String {
        self.origin()
    }

    /// The message requests received so far.
    pub(crate) fn message_requests(&self) -> Vec<Request> {
        self.requests_where(|r| r.path.starts_with("/v1/messages"))
    }

    /// The model requests of any API received so far.
    pub(crate) fn model_requests(&self) -> Vec<Request> {
        self.requests_where(|r| Api::of(&r.method, &r.path).is_some())
    }
}

/// The provider API a request path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// `/v1/messages` (Claude Code).
    Anthropic,
    /// `/v1/responses` (Codex CLI).
    OpenAiResponses,
    /// `/v1/chat/completions` (OpenCode's openai-compatible provider).
    OpenAiChat,
    /// `/v1beta/models/M:generateContent` or `:streamGenerateContent` (Gemini CLI).
    Gemini,
}

impl Api {
    /// The API of a model request, or `None` for side requests (token counting,
    /// telemetry, HEAD probes), which get an empty 200.
    pub(crate) fn of(method: &str, path: &str) -> Option<Api> {
        if method != "POST" {
            return None;
        }
        let path = path.split('?').next().unwrap_or_default();
        if path.ends_with("/v1/messages") {
            Some(Api::Anthropic)
        } else if path.ends_with("/responses") {
            Some(Api::OpenAiResponses)
        } else if path.ends_with("/chat/completions") {
            Some(Api::OpenAiChat)
        } else if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
            Some(Api::Gemini)
        } else {
            None
        }
    }
}

/// An OpenAI error body's `(message, type, code)` for an HTTP status, in OpenAI's
/// public wording.
pub(crate) fn openai_error(status: u16) -> (&'static str, &'static str, Value) {
    match status {
        401 => (
            "Incorrect API key provided: dummy-key. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
        429 => ("Rate limit reached for requests. Please try again in 2s.", "requests", json!("rate_limit_exceeded")),
        503 | 529 => ("The engine is currently overloaded, please try again later.", "server_error", Value::Null),
        _ => ("The server had an error while processing your request. Sorry about that!", "server_error", Value::Null),
    }
}

/// A Gemini error body's `(message, status)` for an HTTP status, in Google's public
/// wording.
pub(crate) fn gemini_error(status: u16) -> (&'static str, &'static str) {
    match status {
        401 => ("API key not valid. Please pass a valid API key.", "UNAUTHENTICATED"),
        429 => ("Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED"),
        503 | 529 => ("The model is overloaded. Please try again later.", "UNAVAILABLE"),
        _ => (
            "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
            "INTERNAL",
        ),
    }
}

/// The error body `api` sends with HTTP `code`.
fn error_body(api: Api, code: u16, kind: &str, message: &str) -> Value {
    match api {
        Api::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        Api::OpenAiResponses | Api::OpenAiChat => {
            let (message, kind, code) = openai_error(code);
            crate::fake_openai::error_body(message, kind, code.as_str())
        }
        Api::Gemini => {
            let (message, status) = gemini_error(code);
            json!({"error": {"code": code, "message": message, "status": status}})
        }
    }
}

impl Scripted for Reply {
    fn scripted(request: &Request) -> bool {
        Api::of(&request.method, &request.path).is_some()
    }

    fn exhausted() -> Self {
        Reply::server_error()
    }

    /// Every answer closes the connection.
    fn answer(conn: &mut Conn, request: &Request, reply: Option<Self>, _: Turn) -> bool {
        match (reply, Api::of(&request.method, &request.path)) {
            (Some(Reply::Status { code, kind, message, retry_after }), Some(api)) => {
                conn.json(code, "Error", &error_body(api, code, kind, &message), retry_after);
            }
            (Some(reply), Some(Api::Anthropic)) => {
                let body = &request.body;
                let model = body.get("model").and_then(Value::as_str).unwrap_or("claude-sonnet-4-5");
                let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
                answer(conn, &reply, model, streaming);
            }
            (Some(_), Some(api)) => {
                // Only errors are scripted for the other APIs so far.
                let body = error_body(api, 501, "api_error", "fake provider: only error replies for this API");
                conn.json(501, "Not Implemented", &body, None);
            }
            // HEAD / and other side requests: a plain empty answer.
            _ => {
                conn.empty(200, "OK");
            }
        }
        false
    }
}

fn answer(conn: &mut Conn, reply: &Reply, model: &str, streaming: bool) {
    let (content, stop) = match reply {
        Reply::Write { path, content } => (
            vec![json!({"type": "tool_use", "id": "toolu_fake_1", "name": "Write",
                        "input": {"file_path": path, "content": content}})],
            "tool_use",
        ),
        Reply::Tool { name, input } => {
            (vec![json!({"type": "tool_use", "id": "toolu_fake_2", "name": name, "input": input})], "tool_use")
        }
        Reply::Text(text) => (vec![json!({"type": "text", "text": text})], "end_turn"),
        // Answered above, for every API.
        Reply::Status { .. } => return,
        Reply::StallAfterFirstEvent | Reply::ResetMidStream => {
            conn.write(Head::new(200, "OK").header("content-type", "text/event-stream").close().end());
            conn.write(sse("message_start", &message_start(model)));
            conn.flush();
            if matches!(reply, Reply::ResetMidStream) {
                conn.reset();
            } else {
                conn.stall_until_closed(PROVIDER_STALL);
            }
            return;
        }
    };
    if !streaming {
        let body = json!({"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                          "content": content, "stop_reason": stop, "stop_sequence": null,
                          "usage": {"input_tokens": 12, "output_tokens": 7}});
        conn.json(200, "OK", &body, None);
        return;
    }
    let mut out = Head::sse().end();
    out.push_str(&sse("message_start", &message_start(model)));
    for (i, block) in content.iter().enumerate() {
        if block["type"] == "text" {
            out.push_str(&sse(
                "content_block_start",
                &json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
            ));
            out.push_str(&sse("content_block_delta", &json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}})));
        } else {
            out.push_str(&sse("content_block_start", &json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})));
            out.push_str(&sse("content_block_delta", &json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}})));
        }
        out.push_str(&sse("content_block_stop", &json!({"type": "content_block_stop", "index": i})));
    }
    out.push_str(&sse("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 7}})));
    out.push_str(&sse("message_stop", &json!({"type": "message_stop"})));
    conn.write(out);
}

fn message_start(model: &str) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
           "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
           "usage": {"input_tokens": 12, "output_tokens": 1}}})
}

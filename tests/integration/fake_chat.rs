//! A fake OpenAI-compatible provider on 127.0.0.1 that speaks enough of the Chat
//! Completions API (`POST /v1/chat/completions`, SSE streaming) to drive the real
//! OpenCode CLI through a scripted conversation, with scriptable failures. One
//! instance per test, so parallel tests share nothing; every request is logged.
//!
//! OpenCode opens a new session with a title request from its `small_model` (a
//! request without `tools`); it is always answered with a short title and does not
//! use the script. The script answers the agent's own requests (those with `tools`)
//! in order, then the fallback.

#![allow(dead_code)]

use serde_json::{Value, json};

use crate::fake_openai::error_body;
use crate::http_fake::{Conn, Fake, Head, PROVIDER_STALL, Request, Scripted, Turn, sse_data};

/// What the provider answers to one agent request.
#[derive(Debug, Clone)]
pub(crate) enum ChatReply {
    /// A call to OpenCode's `write` tool (`filePath` must be absolute), ending the
    /// turn with `finish_reason: "tool_calls"`.
    Write { path: String, content: String },
    /// A call of any tool by name (e.g. OpenCode's `ralph_declare_complete`).
    Call { name: String, arguments: serde_json::Value },
    /// A final text message.
    Text(String),
    /// An HTTP error with an OpenAI-shaped body
    /// (`{"error":{"message","type","param","code"}}`).
    Status {
        code: u16,
        kind: &'static str,
        error_code: Option<&'static str>,
        message: String,
        retry_after: Option<u32>,
    },
    /// Headers and the first chunk, then silence (the connection stays open).
    StallAfterFirstChunk,
}

impl ChatReply {
    // `retry-after: 0` makes OpenCode's fixed five retries end at once.

    pub(crate) fn overloaded() -> Self {
        ChatReply::Status {
            code: 529,
            kind: "server_error",
            error_code: None,
            message: "Overloaded".into(),
            retry_after: Some(0),
        }
    }

    pub(crate) fn server_error() -> Self {
        ChatReply::Status {
            code: 500,
            kind: "server_error",
            error_code: None,
            message: "The server had an error while processing your request. Sorry about that!".into(),
            retry_after: Some(0),
        }
    }

    pub(crate) fn rate_limited() -> Self {
        ChatReply::Status {
            code: 429,
            kind: "requests",
            error_code: Some("rate_limit_exceeded"),
            message: "Rate limit reached for requests. Please try again in 2s.".into(),
            retry_after: Some(0),
        }
    }

    pub(crate) fn unauthorized() -> Self {
        ChatReply::Status {
            code: 401,
            kind: "invalid_request_error",
            error_code: Some("invalid_api_key"),
            message: "Incorrect API key provided: dummy-key. You can find your API key at \
                      https://platform.openai.com/account/api-keys."
                .into(),
            retry_after: Some(0),
        }
    }
}

/// One logged request (`at`: since the provider started).
pub(crate) type ChatRequest = Request;

/// The fake Chat Completions API: [`ChatReply`]s answer the agent's requests in order.
pub(crate) type FakeChat = Fake<ChatReply>;

impl FakeChat {
    /// The base URL an OpenAI-compatible client wants (`…/v1`).
    pub(crate) fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// The agent's own chat requests (with tools), in order.
    pub(crate) fn chat_requests(&self) -> Vec<ChatRequest> {
        self.requests_where(|r| r.path.ends_with("/chat/completions") && !is_title(r))
    }

    /// The session-title requests.
    pub(crate) fn title_requests(&self) -> Vec<ChatRequest> {
        self.requests_where(is_title)
    }
}

fn is_chat(request: &Request) -> bool {
    request.method == "POST" && request.path.ends_with("/chat/completions")
}

/// OpenCode's session-title request (no `tools`), answered outside the script.
fn is_title(request: &Request) -> bool {
    is_chat(request) && request.body.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty)
}

impl Scripted for ChatReply {
    fn scripted(request: &Request) -> bool {
        is_chat(request) && !is_title(request)
    }

    fn exhausted() -> Self {
        ChatReply::server_error()
    }

    /// Every answer closes the connection; ids count the requests.
    fn answer(conn: &mut Conn, request: &Request, reply: Option<Self>, turn: Turn) -> bool {
        let model = request.body.get("model").and_then(Value::as_str).unwrap_or("fake-model");
        match reply {
            Some(reply) => answer(conn, &reply, model, turn.request),
            None if is_title(request) => answer(conn, &ChatReply::Text("Fake session".into()), model, turn.request),
            None => {
                conn.empty(404, "Not Found");
            }
        }
        false
    }
}

fn answer(conn: &mut Conn, reply: &ChatReply, model: &str, call: u32) {
    let chunk = |delta: Value, finish: Option<&str>, usage: Option<Value>| {
        let mut c = json!({"id": format!("chatcmpl-fake-{call}"), "object": "chat.completion.chunk",
                           "created": 1_767_225_600, "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        if let Some(u) = usage {
            c["usage"] = u;
        }
        sse_data(c)
    };
    let usage = |prompt: u64, completion: u64| {
        Some(json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}))
    };
    let mut out = Head::sse().end();
    match reply {
        ChatReply::Write { .. } | ChatReply::Call { .. } => {
            let (name, args) = match reply {
                ChatReply::Write { path, content } => {
                    ("write".to_string(), json!({"filePath": path, "content": content}).to_string())
                }
                ChatReply::Call { name, arguments } => (name.clone(), arguments.to_string()),
                _ => unreachable!(),
            };
            out.push_str(&chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_fake_{call}"),
                       "type": "function", "function": {"name": name, "arguments": ""}}]}),
                None,
                None,
            ));
            out.push_str(&chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}), None, None));
            out.push_str(&chunk(json!({}), Some("tool_calls"), usage(100, 20)));
        }
        ChatReply::Text(text) => {
            out.push_str(&chunk(json!({"role": "assistant", "content": text}), None, None));
            out.push_str(&chunk(json!({}), Some("stop"), usage(150, 10)));
        }
        ChatReply::Status { code, kind, error_code, message, retry_after } => {
            conn.json(*code, "Error", &error_body(message, kind, *error_code), *retry_after);
            return;
        }
        ChatReply::StallAfterFirstChunk => {
            out.push_str(&chunk(json!({"role": "assistant", "content": "Let me"}), None, None));
            conn.write(out);
            conn.flush();
            conn.stall_until_closed(PROVIDER_STALL);
            return;
        }
    }
    out.push_str(&sse_data("[DONE]"));
    conn.write(out);
}

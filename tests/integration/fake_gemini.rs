//! A fake Gemini API on 127.0.0.1 that speaks enough of `generateContent` and
//! `streamGenerateContent?alt=sse` to drive the real Gemini CLI through a scripted
//! conversation, with scriptable failures. One instance per test, so parallel tests
//! share nothing; every request is logged for the test to inspect.
//!
//! With `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT` Gemini CLI 0.61.0 asks
//! `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` (key in
//! `x-goog-api-key`, body `{contents, systemInstruction, tools:
//! [{functionDeclarations}], generationConfig}`) and nothing else when the model is
//! given with `-m`; the other endpoints are answered in case a version asks them.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};

pub(crate) use crate::http_fake::Request;
use crate::http_fake::{Conn, Fake, Head, PROVIDER_STALL, Scripted, Turn};

/// What the provider answers to one content request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A `write_file` function call (the CLI resolves a relative path against its cwd).
    Write { path: String, content: String },
    /// A call of any function by name, with its args.
    Call { name: String, args: Value },
    /// A final text, streamed in a few chunks.
    Text(String),
    /// An HTTP error with a Google-shaped body
    /// (`{"error": {"code", "message", "status", "details"}}`).
    Status { code: u16, status: &'static str, message: String, retry_delay: Option<u32> },
    /// Headers and the first chunk, then silence (the connection stays open).
    StallAfterFirstChunk,
    /// Headers and the first chunk, then the connection is reset.
    ResetMidStream,
}

impl Reply {
    pub(crate) fn overloaded() -> Self {
        Reply::Status {
            code: 503,
            status: "UNAVAILABLE",
            message: "The model is overloaded. Please try again later.".into(),
            retry_delay: None,
        }
    }

    pub(crate) fn server_error() -> Self {
        Reply::Status {
            code: 500,
            status: "INTERNAL",
            message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting".into(),
            retry_delay: None,
        }
    }

    pub(crate) fn rate_limited(retry_delay: u32) -> Self {
        Reply::Status {
            code: 429,
            status: "RESOURCE_EXHAUSTED",
            message: "Resource has been exhausted (e.g. check quota).".into(),
            retry_delay: Some(retry_delay),
        }
    }

    pub(crate) fn unauthorized() -> Self {
        Reply::Status {
            code: 401,
            status: "UNAUTHENTICATED",
            message: "API key not valid. Please pass a valid API key.".into(),
            retry_delay: None,
        }
    }
}

impl Request {
    /// The names of the functions a Gemini request declares.
    pub(crate) fn tools(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
            .filter_map(|f| f["name"].as_str().map(str::to_string))
            .collect()
    }
}

/// The fake Gemini API: [`Reply`]s answer the content requests in order.
pub(crate) type FakeGemini = Fake<Reply>;

impl FakeGemini {
    /// For `GOOGLE_GEMINI_BASE_URL`.
    pub(crate) fn base_url(&self) -> String {
        self.origin()
    }

    /// The content requests (`generateContent`, `streamGenerateContent`).
    pub(crate) fn content_requests(&self) -> Vec<Request> {
        self.requests_where(|r| is_content(&r.method, &r.path))
    }
}

impl Scripted for Reply {
    fn scripted(request: &Request) -> bool {
        is_content(&request.method, &request.path)
    }

    fn exhausted() -> Self {
        Reply::server_error()
    }

    /// Keep-alive: the CLI's fetch reuses connections; JSON answers keep them, a
    /// stream closes its connection.
    fn answer(conn: &mut Conn, request: &Request, reply: Option<Self>, _: Turn) -> bool {
        match reply {
            Some(reply) => answer(conn, &reply, &request.path),
            None => side_request(conn, request),
        }
    }
}

fn is_content(method: &str, path: &str) -> bool {
    method == "POST" && (path.contains(":generateContent") || path.contains(":streamGenerateContent"))
}

/// The model named in `/v1beta/models/MODEL:method`.
fn model_of(path: &str) -> String {
    let tail = path.split("/models/").nth(1).unwrap_or("gemini-2.5-flash");
    tail.split([':', '?']).next().unwrap_or("gemini-2.5-flash").to_string()
}

fn write_json(conn: &mut Conn, code: u16, body: &Value, retry_after: Option<u32>) -> bool {
    let body = body.to_string();
    let head = Head::new(code, if code == 200 { "OK" } else { "Error" })
        .header("content-type", "application/json; charset=UTF-8")
        .header("content-length", body.len())
        .retry_after(retry_after);
    conn.send(head, &body)
}

/// Requests other than content: token counts, model lookups, Code Assist probes.
fn side_request(conn: &mut Conn, request: &Request) -> bool {
    let path = request.path.as_str();
    if path.contains(":countTokens") {
        write_json(conn, 200, &json!({"totalTokens": 100}), None)
    } else if path.contains(":embedContent") || path.contains(":batchEmbedContents") {
        write_json(conn, 200, &json!({"embedding": {"values": [0.0, 0.0, 0.0]}}), None)
    } else if path.contains("loadCodeAssist") {
        write_json(conn, 200, &json!({"currentTier": {"id": "free-tier"}, "allowedTiers": []}), None)
    } else if request.method == "GET" && path.contains("/models/") {
        let model = model_of(path);
        write_json(conn, 200, &json!({"name": format!("models/{model}"), "inputTokenLimit": 1_048_576}), None)
    } else if request.method == "GET" && path.contains("/models") {
        write_json(conn, 200, &json!({"models": [{"name": "models/gemini-2.5-flash"}]}), None)
    } else {
        write_json(conn, 404, &error_body(404, "NOT_FOUND", "Not found", None), None)
    }
}

fn error_body(code: u16, status: &str, message: &str, retry_delay: Option<u32>) -> Value {
    let mut details = Vec::new();
    if code == 401 || code == 400 && message.contains("API key") {
        details.push(json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                            "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}));
    }
    if let Some(s) = retry_delay {
        details.push(json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{s}s")}));
    }
    json!({"error": {"code": code, "message": message, "status": status, "details": details}})
}

fn chunk(model: &str, parts: Value, finish: Option<&str>, usage: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    let mut c = json!({"candidates": [candidate], "modelVersion": model, "responseId": "fake-response"});
    if usage {
        c["usageMetadata"] = json!({"promptTokenCount": 100, "candidatesTokenCount": 7, "totalTokenCount": 107});
    }
    c
}

/// Google's SSE events end in CRLF (not [`crate::http_fake::sse_data`]'s LF).
fn sse(data: &Value) -> String {
    format!("data: {data}\r\n\r\n")
}

/// Answers one content request; whether the connection may serve another.
fn answer(conn: &mut Conn, reply: &Reply, path: &str) -> bool {
    let model = model_of(path);
    let streaming = path.contains(":streamGenerateContent");
    let chunks: Vec<Value> = match reply {
        Reply::Status { code, status, message, retry_delay } => {
            return write_json(conn, *code, &error_body(*code, status, message, *retry_delay), *retry_delay);
        }
        Reply::Write { path, content } => vec![chunk(
            &model,
            json!([{"functionCall": {"name": "write_file", "args": {"file_path": path, "content": content}}}]),
            Some("STOP"),
            true,
        )],
        Reply::Call { name, args } => {
            vec![chunk(&model, json!([{"functionCall": {"name": name, "args": args}}]), Some("STOP"), true)]
        }
        Reply::Text(text) => {
            // Three chunks, as a real stream splits a reply: the CLI must join them.
            let cut = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
            let (a, b) = (cut(text.chars().count() / 3), cut(2 * text.chars().count() / 3));
            let pieces = [&text[..a], &text[a..b], &text[b..]];
            pieces
                .iter()
                .enumerate()
                .map(|(i, p)| chunk(&model, json!([{"text": p}]), (i == 2).then_some("STOP"), i == 2))
                .collect()
        }
        Reply::StallAfterFirstChunk | Reply::ResetMidStream => {
            conn.write(Head::sse().end());
            conn.write(sse(&chunk(&model, json!([{"text": "Let me look at "}]), None, false)));
            conn.flush();
            if matches!(reply, Reply::ResetMidStream) {
                conn.stall(Duration::from_millis(100));
                conn.reset();
            } else {
                conn.stall_until_closed(PROVIDER_STALL);
            }
            return false;
        }
    };
    if !streaming {
        // One response with every part.
        let parts: Vec<Value> = chunks
            .iter()
            .flat_map(|c| c["candidates"][0]["content"]["parts"].as_array().cloned().unwrap_or_default())
            .collect();
        let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        let parts = if text.is_empty() { json!(parts) } else { json!([{"text": text}]) };
        return write_json(conn, 200, &chunk(&model, parts, Some("STOP"), true), None);
    }
    let mut out = Head::sse().end();
    for c in &chunks {
        out.push_str(&sse(c));
    }
    conn.write(out);
    // The end of an SSE body without a length is the end of the connection.
    conn.flush();
    false
}

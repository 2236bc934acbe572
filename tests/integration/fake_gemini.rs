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

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// What the provider answers to one content request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A `write_file` function call (the CLI resolves a relative path against its cwd).
    Write { path: String, content: String },
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
    pub fn overloaded() -> Self {
        Reply::Status {
            code: 503,
            status: "UNAVAILABLE",
            message: "The model is overloaded. Please try again later.".into(),
            retry_delay: None,
        }
    }

    pub fn server_error() -> Self {
        Reply::Status {
            code: 500,
            status: "INTERNAL",
            message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting".into(),
            retry_delay: None,
        }
    }

    pub fn rate_limited(retry_delay: u32) -> Self {
        Reply::Status {
            code: 429,
            status: "RESOURCE_EXHAUSTED",
            message: "Resource has been exhausted (e.g. check quota).".into(),
            retry_delay: Some(retry_delay),
        }
    }

    pub fn unauthorized() -> Self {
        Reply::Status {
            code: 401,
            status: "UNAUTHENTICATED",
            message: "API key not valid. Please pass a valid API key.".into(),
            retry_delay: None,
        }
    }
}

/// One logged request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// With the query string.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The names of the functions the request declares.
    pub fn tools(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
            .filter_map(|f| f["name"].as_str().map(str::to_string))
            .collect()
    }
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    /// Answered when the script is used up.
    fallback: Option<Reply>,
    log: Vec<Request>,
}

pub struct FakeGemini {
    pub port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl FakeGemini {
    /// Starts the provider; `script` answers the content requests in order.
    pub fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake Gemini API");
        let port = listener.local_addr().expect("local addr").port();
        let shared = Arc::new(Mutex::new(Shared { script: script.into(), ..Shared::default() }));
        let state = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&state);
                thread::spawn(move || serve(stream, &state));
            }
        });
        FakeGemini { port, shared }
    }

    /// Appends replies to the script.
    pub fn then(&self, replies: Vec<Reply>) {
        self.shared.lock().expect("lock").script.extend(replies);
    }

    /// What to answer once the script is used up (default: a 500).
    pub fn fallback(self, reply: Reply) -> Self {
        self.shared.lock().expect("lock").fallback = Some(reply);
        self
    }

    /// For `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().expect("lock").log.clone()
    }

    /// The content requests (`generateContent`, `streamGenerateContent`).
    pub fn content_requests(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| is_content(&r.method, &r.path)).collect()
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

fn serve(mut stream: TcpStream, shared: &Mutex<Shared>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(clone) = stream.try_clone() else { return };
    let mut reader = BufReader::new(clone);
    // Keep-alive: the CLI's fetch reuses connections; serve requests until it closes
    // one or a reply closes it.
    loop {
        let Some(request) = read_request(&mut reader) else { return };
        let content = is_content(&request.method, &request.path);
        let reply = {
            let mut s = shared.lock().expect("lock");
            s.log.push(request.clone());
            content.then(|| s.script.pop_front().or_else(|| s.fallback.clone()).unwrap_or(Reply::server_error()))
        };
        let keep = match reply {
            Some(reply) => answer(&mut stream, &reply, &request.path),
            None => side_request(&mut stream, &request),
        };
        if !keep {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let header = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(reader)?
    } else {
        let length = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0usize);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Request { method, path, headers, body })
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).ok()?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn write_json(stream: &mut TcpStream, code: u16, body: &Value, extra: &str) -> bool {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {code} {}\r\ncontent-type: application/json; charset=UTF-8\r\ncontent-length: {}\r\n{extra}\r\n",
        if code == 200 { "OK" } else { "Error" },
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).is_ok()
}

/// Requests other than content: token counts, model lookups, Code Assist probes.
fn side_request(stream: &mut TcpStream, request: &Request) -> bool {
    let path = request.path.as_str();
    if path.contains(":countTokens") {
        write_json(stream, 200, &json!({"totalTokens": 100}), "")
    } else if path.contains(":embedContent") || path.contains(":batchEmbedContents") {
        write_json(stream, 200, &json!({"embedding": {"values": [0.0, 0.0, 0.0]}}), "")
    } else if path.contains("loadCodeAssist") {
        write_json(stream, 200, &json!({"currentTier": {"id": "free-tier"}, "allowedTiers": []}), "")
    } else if request.method == "GET" && path.contains("/models/") {
        let model = model_of(path);
        write_json(stream, 200, &json!({"name": format!("models/{model}"), "inputTokenLimit": 1_048_576}), "")
    } else if request.method == "GET" && path.contains("/models") {
        write_json(stream, 200, &json!({"models": [{"name": "models/gemini-2.5-flash"}]}), "")
    } else {
        write_json(stream, 404, &error_body(404, "NOT_FOUND", "Not found", None), "")
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

fn sse(data: &Value) -> String {
    format!("data: {data}\r\n\r\n")
}

/// Answers one content request; whether the connection may serve another.
fn answer(stream: &mut TcpStream, reply: &Reply, path: &str) -> bool {
    let model = model_of(path);
    let streaming = path.contains(":streamGenerateContent");
    let chunks: Vec<Value> = match reply {
        Reply::Status { code, status, message, retry_delay } => {
            let extra = retry_delay.map(|s| format!("retry-after: {s}\r\n")).unwrap_or_default();
            return write_json(stream, *code, &error_body(*code, status, message, *retry_delay), &extra);
        }
        Reply::Write { path, content } => vec![chunk(
            &model,
            json!([{"functionCall": {"name": "write_file", "args": {"file_path": path, "content": content}}}]),
            Some("STOP"),
            true,
        )],
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
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
            );
            let first = chunk(&model, json!([{"text": "Let me look at "}]), None, false);
            let _ = stream.write_all(sse(&first).as_bytes());
            let _ = stream.flush();
            if matches!(reply, Reply::ResetMidStream) {
                thread::sleep(Duration::from_millis(100));
                // SO_LINGER 0: closing sends RST, a reset mid-stream.
                let reset = nix::libc::linger { l_onoff: 1, l_linger: 0 };
                let _ = nix::sys::socket::setsockopt(&*stream, nix::sys::socket::sockopt::Linger, &reset);
                let _ = stream.shutdown(Shutdown::Read);
            } else {
                thread::sleep(Duration::from_secs(120));
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
        return write_json(stream, 200, &chunk(&model, parts, Some("STOP"), true), "");
    }
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    );
    for c in &chunks {
        out.push_str(&sse(c));
    }
    let _ = stream.write_all(out.as_bytes());
    // The end of an SSE body without a length is the end of the connection.
    let _ = stream.flush();
    false
}

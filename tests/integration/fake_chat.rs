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

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What the provider answers to one agent request.
#[derive(Debug, Clone)]
pub enum ChatReply {
    /// A call to OpenCode's `write` tool (`filePath` must be absolute), ending the
    /// turn with `finish_reason: "tool_calls"`.
    Write { path: String, content: String },
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

    pub fn overloaded() -> Self {
        ChatReply::Status {
            code: 529,
            kind: "server_error",
            error_code: None,
            message: "Overloaded".into(),
            retry_after: Some(0),
        }
    }

    pub fn server_error() -> Self {
        ChatReply::Status {
            code: 500,
            kind: "server_error",
            error_code: None,
            message: "The server had an error while processing your request. Sorry about that!".into(),
            retry_after: Some(0),
        }
    }

    pub fn rate_limited() -> Self {
        ChatReply::Status {
            code: 429,
            kind: "requests",
            error_code: Some("rate_limit_exceeded"),
            message: "Rate limit reached for requests. Please try again in 2s.".into(),
            retry_after: Some(0),
        }
    }

    pub fn unauthorized() -> Self {
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

/// One logged request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub method: String,
    pub path: String,
    pub body: Value,
    /// OpenCode's session-title request (no `tools`), answered outside the script.
    pub title: bool,
    /// Since the provider started.
    pub at: Duration,
}

#[derive(Default)]
struct Shared {
    script: VecDeque<ChatReply>,
    /// Answered when the script is used up (default: a 500).
    fallback: Option<ChatReply>,
    log: Vec<ChatRequest>,
    calls: u32,
}

pub struct FakeChat {
    pub port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl FakeChat {
    /// Starts the provider; `script` answers the agent's requests in order.
    pub fn start(script: Vec<ChatReply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake chat provider");
        let port = listener.local_addr().expect("local addr").port();
        let shared = Arc::new(Mutex::new(Shared { script: script.into(), ..Shared::default() }));
        let state = Arc::clone(&shared);
        let started = Instant::now();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&state);
                thread::spawn(move || serve(stream, &state, started));
            }
        });
        FakeChat { port, shared }
    }

    /// Appends replies to the script.
    pub fn then(&self, replies: Vec<ChatReply>) {
        self.shared.lock().expect("lock").script.extend(replies);
    }

    /// What to answer once the script is used up (default: a 500).
    pub fn fallback(self, reply: ChatReply) -> Self {
        self.shared.lock().expect("lock").fallback = Some(reply);
        self
    }

    /// The base URL an OpenAI-compatible client wants (`…/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.shared.lock().expect("lock").log.clone()
    }

    /// The agent's own chat requests (with tools), in order.
    pub fn chat_requests(&self) -> Vec<ChatRequest> {
        self.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions") && !r.title).collect()
    }

    /// The session-title requests.
    pub fn title_requests(&self) -> Vec<ChatRequest> {
        self.requests().into_iter().filter(|r| r.title).collect()
    }
}

fn serve(mut stream: TcpStream, shared: &Mutex<Shared>, started: Instant) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(clone) = stream.try_clone() else { return };
    let mut reader = BufReader::new(clone);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let is_chat = method == "POST" && path.ends_with("/chat/completions");
    let title = is_chat && body.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty);
    let (reply, call) = {
        let mut s = shared.lock().expect("lock");
        s.log.push(ChatRequest {
            method: method.clone(),
            path: path.clone(),
            body: body.clone(),
            title,
            at: started.elapsed(),
        });
        s.calls += 1;
        let call = s.calls;
        if is_chat && !title {
            (Some(s.script.pop_front().or_else(|| s.fallback.clone()).unwrap_or(ChatReply::server_error())), call)
        } else {
            (None, call)
        }
    };
    let model = body.get("model").and_then(Value::as_str).unwrap_or("fake-model").to_string();
    match reply {
        Some(reply) => answer(&mut stream, &reply, &model, call),
        None if title => answer(&mut stream, &ChatReply::Text("Fake session".into()), &model, call),
        None => {
            let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    }
}

fn answer(stream: &mut TcpStream, reply: &ChatReply, model: &str, call: u32) {
    let chunk = |delta: Value, finish: Option<&str>, usage: Option<Value>| {
        let mut c = json!({"id": format!("chatcmpl-fake-{call}"), "object": "chat.completion.chunk",
                           "created": 1_767_225_600, "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        if let Some(u) = usage {
            c["usage"] = u;
        }
        format!("data: {c}\n\n")
    };
    let usage = |prompt: u64, completion: u64| {
        Some(json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}))
    };
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    let mut out = String::from(head);
    match reply {
        ChatReply::Write { path, content } => {
            let args = json!({"filePath": path, "content": content}).to_string();
            out.push_str(&chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_fake_{call}"),
                       "type": "function", "function": {"name": "write", "arguments": ""}}]}),
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
            let body =
                json!({"error": {"message": message, "type": kind, "param": null, "code": error_code}}).to_string();
            let extra = retry_after.map(|s| format!("retry-after: {s}\r\n")).unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {code} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            return;
        }
        ChatReply::StallAfterFirstChunk => {
            out.push_str(&chunk(json!({"role": "assistant", "content": "Let me"}), None, None));
            let _ = stream.write_all(out.as_bytes());
            let _ = stream.flush();
            // Silence until the client gives up (ralph ends the agent) or a minute
            // has passed.
            let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
            let mut sink = [0u8; 256];
            while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
            return;
        }
    }
    out.push_str("data: [DONE]\n\n");
    let _ = stream.write_all(out.as_bytes());
}

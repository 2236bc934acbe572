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

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// What the provider answers to one `POST /v1/responses`.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An `exec_command` function call running `cmd` (in the turn's cwd).
    Exec { cmd: String },
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
    pub fn overloaded() -> Self {
        Reply::Status {
            code: 529,
            kind: "server_error",
            error_code: None,
            message: "Overloaded".into(),
            retry_after: None,
        }
    }

    pub fn server_error() -> Self {
        Reply::Status {
            code: 500,
            kind: "server_error",
            error_code: None,
            message: "The server had an error while processing your request. Sorry about that!".into(),
            retry_after: None,
        }
    }

    pub fn rate_limited(retry_after: Option<u32>) -> Self {
        Reply::Status {
            code: 429,
            kind: "requests",
            error_code: Some("rate_limit_exceeded"),
            message: "Rate limit reached for requests. Please try again in 1s.".into(),
            retry_after,
        }
    }

    pub fn unauthorized() -> Self {
        Reply::Status {
            code: 401,
            kind: "invalid_request_error",
            error_code: Some("invalid_api_key"),
            message: "Incorrect API key provided: x. You can find your API key at https://platform.openai.com/account/api-keys.".into(),
            retry_after: None,
        }
    }
}

/// One logged request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    /// Answered when the script is used up.
    fallback: Option<Reply>,
    log: Vec<Request>,
    /// Responses answered so far (ids and call ids).
    answered: u32,
}

pub struct FakeOpenAi {
    pub port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl FakeOpenAi {
    /// Starts the provider; `script` answers the `/v1/responses` requests in order.
    pub fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake provider");
        let port = listener.local_addr().expect("local addr").port();
        let shared = Arc::new(Mutex::new(Shared { script: script.into(), ..Shared::default() }));
        let state = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&state);
                thread::spawn(move || serve(stream, &state));
            }
        });
        FakeOpenAi { port, shared }
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

    /// The base URL Codex's `[model_providers.X] base_url` takes.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The `/v1/responses` requests received so far.
    pub fn response_requests(&self) -> Vec<Request> {
        self.shared.lock().expect("lock").log.iter().filter(|r| r.path.starts_with("/v1/responses")).cloned().collect()
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().expect("lock").log.clone()
    }
}

fn serve(mut stream: TcpStream, shared: &Mutex<Shared>) {
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
    let is_response = method == "POST" && path.starts_with("/v1/responses");
    let reply = {
        let mut s = shared.lock().expect("lock");
        s.log.push(Request { method: method.clone(), path: path.clone(), body: body.clone() });
        if is_response {
            s.answered += 1;
            let reply = s.script.pop_front().or_else(|| s.fallback.clone()).unwrap_or_else(Reply::server_error);
            Some((reply, s.answered))
        } else {
            None
        }
    };
    let Some((reply, n)) = reply else {
        let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    };
    answer(&mut stream, &reply, n);
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

fn answer(stream: &mut TcpStream, reply: &Reply, n: u32) {
    let id = format!("resp_fake_{n}");
    let created = json!({"type": "response.created", "response": {"id": id}});
    let items = match reply {
        Reply::Exec { cmd } => vec![json!({"type": "function_call", "id": format!("fc_{n}"),
            "call_id": format!("call_{n}"), "name": "exec_command",
            "arguments": json!({"cmd": cmd}).to_string()})],
        Reply::Text(text) => vec![
            json!({"type": "reasoning", "id": format!("rs_{n}"),
                   "summary": [{"type": "summary_text", "text": "Checking the work."}]}),
            json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant",
                   "content": [{"type": "output_text", "text": text}]}),
        ],
        Reply::Status { code, kind, error_code, message, retry_after } => {
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
        Reply::StallAfterFirstEvent => {
            let _ = stream.write_all(SSE_HEAD);
            let _ = stream.write_all(sse("response.created", &created).as_bytes());
            let _ = stream.flush();
            thread::sleep(Duration::from_secs(60));
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
    let _ = stream.write_all(SSE_HEAD);
    let _ = stream.write_all(out.as_bytes());
}

fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

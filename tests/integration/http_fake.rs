//! The HTTP plumbing of the fake model providers (`fake_*.rs`): a server on
//! 127.0.0.1:0 with a thread per connection, request parsing (content-length and
//! chunked bodies, keep-alive for as long as the answers allow it), the script of
//! replies with its fallback, the request log, and the pieces of a response (status
//! line and headers, a JSON body, SSE events, a stall, a reset). Each fake keeps only
//! what its API looks like: its reply type, implementing [`Scripted`].

#![allow(dead_code)]

use std::collections::VecDeque;
use std::fmt::{Display, Write as _};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a fake provider's stalled stream stays silent at most: far past any
/// stall limit of the tests (they are measured, `real_cli::stream_stall`), since the
/// stall ralph cuts must be the provider's; it ends when the CLI is gone.
pub(crate) const PROVIDER_STALL: Duration = Duration::from_secs(600);

/// One request, as parsed and logged.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// With the query string.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if empty or not JSON).
    pub body: Value,
    /// Since the fake started.
    pub at: Duration,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A fake's reply type: which requests it scripts and how its API puts a reply on
/// the wire.
pub(crate) trait Scripted: Clone + Send + 'static {
    /// Whether `request` takes the next reply of the script (the others are side
    /// requests, answered with `None`).
    fn scripted(request: &Request) -> bool;
    /// The reply once the script and the fallback are used up.
    fn exhausted() -> Self;
    /// Answers `request` with `reply`; whether the connection may serve another
    /// request (keep-alive).
    fn answer(conn: &mut Conn, request: &Request, reply: Option<Self>, turn: Turn) -> bool;
}

/// Where a request stands, counted from 1 with itself included.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Turn {
    /// Among all the requests.
    pub request: u32,
    /// Among the scripted requests.
    pub scripted: u32,
}

struct State<R> {
    script: VecDeque<R>,
    /// Answered when the script is used up.
    fallback: Option<R>,
    log: Vec<Request>,
    scripted: u32,
}

impl<R: Scripted> State<R> {
    /// Logs `request` and takes its reply, in one step so that the log and the
    /// script keep the same order.
    fn take(&mut self, request: &Request) -> (Option<R>, Turn) {
        self.log.push(request.clone());
        let reply = R::scripted(request).then(|| {
            self.scripted += 1;
            self.script.pop_front().or_else(|| self.fallback.clone()).unwrap_or_else(R::exhausted)
        });
        (reply, Turn { request: self.log.len() as u32, scripted: self.scripted })
    }
}

/// A fake provider on 127.0.0.1 answering with a script of `R`s. One instance per
/// test, so parallel tests share nothing; every request is logged.
pub(crate) struct Fake<R> {
    pub port: u16,
    state: Arc<Mutex<State<R>>>,
}

impl<R: Scripted> Fake<R> {
    /// Starts the fake; `script` answers the scripted requests in order.
    pub(crate) fn start(script: Vec<R>) -> Self {
        let state = Arc::new(Mutex::new(State { script: script.into(), fallback: None, log: Vec::new(), scripted: 0 }));
        let shared = Arc::clone(&state);
        let port = listen(move |request, conn| {
            let (reply, turn) = shared.lock().expect("lock").take(&request);
            R::answer(conn, &request, reply, turn)
        });
        Fake { port, state }
    }
}

impl<R: Clone> Fake<R> {
    /// Appends replies to the script.
    pub(crate) fn then(&self, replies: Vec<R>) {
        self.state.lock().expect("lock").script.extend(replies);
    }

    /// What to answer once the script is used up (default: a 500).
    pub(crate) fn fallback(self, reply: R) -> Self {
        self.state.lock().expect("lock").fallback = Some(reply);
        self
    }

    /// Every request received so far.
    pub(crate) fn requests(&self) -> Vec<Request> {
        self.state.lock().expect("lock").log.clone()
    }

    /// The requests received so far that `keep` keeps.
    pub(crate) fn requests_where(&self, keep: impl Fn(&Request) -> bool) -> Vec<Request> {
        self.state.lock().expect("lock").log.iter().filter(|r| keep(r)).cloned().collect()
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Serves 127.0.0.1 on a free port (returned), a thread per connection: `handle`
/// answers each request and says whether the connection may serve another.
pub(crate) fn listen(handle: impl Fn(Request, &mut Conn) -> bool + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake provider");
    let port = listener.local_addr().expect("local addr").port();
    let started = Instant::now();
    let handle = Arc::new(handle);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let handle = Arc::clone(&handle);
            thread::spawn(move || serve(stream, started, &*handle));
        }
    });
    port
}

fn serve(stream: TcpStream, started: Instant, handle: &dyn Fn(Request, &mut Conn) -> bool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(clone) = stream.try_clone() else { return };
    let mut reader = BufReader::new(clone);
    let mut conn = Conn { stream };
    while let Some(request) = read_request(&mut reader, started) {
        if !handle(request, &mut conn) {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>, started: Instant) -> Option<Request> {
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
    let header = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(reader)?
    } else {
        let length = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0usize);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Request { method, path, headers, body, at: started.elapsed() })
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

/// A response's status line and headers, in the order they are added.
pub(crate) struct Head(String);

impl Head {
    pub(crate) fn new(code: u16, reason: &str) -> Self {
        Head(format!("HTTP/1.1 {code} {reason}\r\n"))
    }

    pub(crate) fn header(mut self, name: &str, value: impl Display) -> Self {
        let _ = write!(self.0, "{name}: {value}\r\n");
        self
    }

    /// A `retry-after` header, if `seconds` is given.
    pub(crate) fn retry_after(self, seconds: Option<u32>) -> Self {
        match seconds {
            Some(s) => self.header("retry-after", s),
            None => self,
        }
    }

    /// `connection: close`: the body ends with the connection.
    pub(crate) fn close(self) -> Self {
        self.header("connection", "close")
    }

    /// The head of an SSE stream that ends with the connection.
    pub(crate) fn sse() -> Self {
        Head::new(200, "OK").header("content-type", "text/event-stream").header("cache-control", "no-cache").close()
    }

    /// The head with the blank line that ends it.
    pub(crate) fn end(self) -> String {
        self.0 + "\r\n"
    }
}

/// One named SSE event.
pub(crate) fn sse_event(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// One SSE event of data alone.
pub(crate) fn sse_data(data: impl Display) -> String {
    format!("data: {data}\n\n")
}

/// The connection a request came on, for its answer.
pub(crate) struct Conn {
    stream: TcpStream,
}

impl Conn {
    /// Writes `bytes`; whether they went out.
    pub(crate) fn write(&mut self, bytes: impl AsRef<[u8]>) -> bool {
        self.stream.write_all(bytes.as_ref()).is_ok()
    }

    /// `head`, then `body` (two writes).
    pub(crate) fn send(&mut self, head: Head, body: &str) -> bool {
        self.write(head.end()) && self.write(body)
    }

    /// A complete JSON answer: `content-type: application/json`, its length,
    /// `retry-after` if given, and `connection: close`.
    pub(crate) fn json(&mut self, code: u16, reason: &str, body: &Value, retry_after: Option<u32>) -> bool {
        let body = body.to_string();
        let head = Head::new(code, reason)
            .header("content-type", "application/json")
            .header("content-length", body.len())
            .retry_after(retry_after)
            .close();
        self.send(head, &body)
    }

    /// An answer without a body, closing the connection.
    pub(crate) fn empty(&mut self, code: u16, reason: &str) -> bool {
        self.write(Head::new(code, reason).header("content-length", 0).close().end())
    }

    pub(crate) fn flush(&mut self) {
        let _ = self.stream.flush();
    }

    /// Silence for `time`, the connection left open.
    pub(crate) fn stall(&mut self, time: Duration) {
        thread::sleep(time);
    }

    /// Silence until the client closes the connection, or for `limit` if it sends
    /// nothing: a provider's stall ([`PROVIDER_STALL`]) lasts until the CLI is gone.
    pub(crate) fn stall_until_closed(&mut self, limit: Duration) {
        let _ = self.stream.set_read_timeout(Some(limit));
        let mut sink = [0u8; 256];
        while matches!(self.stream.read(&mut sink), Ok(n) if n > 0) {}
    }

    /// Makes the connection's close a reset: with SO_LINGER 0, closing sends RST
    /// (the answer must then end the connection).
    pub(crate) fn reset(&mut self) {
        let reset = nix::libc::linger { l_onoff: 1, l_linger: 0 };
        let _ = nix::sys::socket::setsockopt(&self.stream, nix::sys::socket::sockopt::Linger, &reset);
        let _ = self.stream.shutdown(Shutdown::Read);
    }
}

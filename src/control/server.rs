//! The socket inside a running ralph. It accepts connections from the owning user
//! only, reads one bounded request line per connection, answers what it can from the
//! published [`Live`] state, and forwards what the run must act on to the dispatcher
//! through a bounded channel. Nothing a client sends can block or crash the run: a
//! bad request gets an error reply, a full channel a "busy" reply, and connections
//! beyond [`MAX_CLIENTS`] are closed at once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

use super::path;
use super::protocol::{self, Inbound, Live, MAX_LINE, Reply};

/// Connections served at once; more are closed without a reply.
pub(crate) const MAX_CLIENTS: usize = 16;
/// A connection that sends no complete line in this time is closed.
const IDLE: Duration = Duration::from_secs(10);
/// Messages waiting for the dispatcher; beyond that clients hear "busy".
pub(crate) const QUEUE: usize = 64;

/// The listening socket; dropping it stops listening and removes the socket and its
/// record.
pub(crate) struct Server {
    socket: PathBuf,
    record: PathBuf,
    task: JoinHandle<()>,
}

impl Server {
    /// Binds the project's socket (replacing a stale one), records its path in
    /// `.agent/`, and starts serving.
    pub(crate) fn start(project: &Path, live: Arc<Mutex<Live>>, tx: mpsc::Sender<Inbound>) -> std::io::Result<Self> {
        let socket = path::private_dir()?.join(path::socket_name(project));
        if socket.as_os_str().len() > path::MAX_PATH {
            return Err(std::io::Error::other(format!("socket path {} is too long", socket.display())));
        }
        // The project lock makes this run the only one of the directory: a socket
        // already there was left by a run that died.
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let std_listener = std::os::unix::net::UnixListener::bind(&socket)?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        std_listener.set_nonblocking(true)?;
        let listener = UnixListener::from_std(std_listener)?;
        let record = path::record_of(project);
        // Not synced: after a power cut the socket is gone with the run anyway.
        let bytes = format!("{}\n", socket.display());
        crate::state::atomic::replace(&record, bytes.as_bytes(), crate::state::atomic::Durability::Unsynced)?;
        let task = tokio::spawn(serve(listener, live, tx));
        Ok(Self { socket, record, task })
    }

    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.record);
    }
}

async fn serve(listener: UnixListener, live: Arc<Mutex<Live>>, tx: mpsc::Sender<Inbound>) {
    let slots = Arc::new(Semaphore::new(MAX_CLIENTS));
    let uid = nix::unistd::getuid().as_raw();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, most likely: give the clients a moment to go.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            // Never waits for a client: the answer goes if it fits, else nothing.
            let _ = stream.try_write(b"{\"ok\":false,\"error\":\"too many connections; try again\"}\n");
            drop(stream);
            continue;
        };
        let (live, tx) = (live.clone(), tx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            if let Ok(Some((stream, attempt))) = tokio::time::timeout(IDLE, connection(stream, uid, &live, &tx)).await {
                session(stream, attempt, &tx).await;
            }
        });
    }
}

/// Serves one connection: one request, one reply. An accepted `hello` keeps the
/// connection as the session of `ralph mcp`: returned for [`session`].
async fn connection(
    mut stream: UnixStream,
    uid: u32,
    live: &Mutex<Live>,
    tx: &mpsc::Sender<Inbound>,
) -> Option<(UnixStream, u32)> {
    let mut hello = None;
    let reply = match stream.peer_cred() {
        Ok(cred) if cred.uid() == uid => match read_line(&mut stream).await {
            Ok(line) => {
                let reply = answer(&line, live, tx);
                if reply.ok
                    && let Ok(protocol::Request::Hello { attempt }) = protocol::parse(&line)
                {
                    hello = Some(attempt);
                }
                reply
            }
            Err(e) => Reply::error(e),
        },
        _ => Reply::error("permission denied: only the user running ralph may use its socket"),
    };
    // What the run publishes quotes the agent (its checkpoint summary, the recovery
    // note): the answer is redacted like everything ralph writes.
    let mut text = serde_json::to_value(&reply)
        .map(|mut v| {
            crate::secrets::redact_json(&mut v);
            v.to_string()
        })
        .unwrap_or_else(|_| r#"{"ok":false}"#.to_string());
    text.push('\n');
    let _ = stream.write_all(text.as_bytes()).await;
    if let Some(attempt) = hello {
        return Some((stream, attempt));
    }
    let _ = stream.shutdown().await;
    // Closing with unread input would reset the connection and lose the reply to a
    // client still writing an oversized line: read it away (bounded by `IDLE`).
    let mut sink = [0u8; 64 * 1024];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    None
}

/// The session of one `ralph mcp`: open until its `bye` (an orderly shutdown) or
/// until it closes without one (it crashed or was killed), which the run hears.
async fn session(mut stream: UnixStream, attempt: u32, tx: &mpsc::Sender<Inbound>) {
    let orderly = matches!(
        read_line(&mut stream).await.ok().map(|l| protocol::parse(&l)),
        Some(Ok(protocol::Request::Bye { .. }))
    );
    if !orderly {
        let _ = tx.try_send(Inbound::McpLost { attempt });
    }
}

fn answer(line: &[u8], live: &Mutex<Live>, tx: &mpsc::Sender<Inbound>) -> Reply {
    let request = match protocol::parse(line) {
        Ok(r) => r,
        Err(e) => return Reply::error(e),
    };
    let snapshot = live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let (reply, inbound) = protocol::route(request, &snapshot);
    match inbound.map(|msg| tx.try_send(msg)) {
        Some(Err(_)) => Reply::error("the run is busy; try again"),
        _ => reply,
    }
}

/// Reads up to the first newline, refusing more than [`MAX_LINE`] bytes.
async fn read_line(stream: &mut UnixStream) -> Result<Vec<u8>, String> {
    let mut line = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = stream.read(&mut buf).await.map_err(|e| format!("cannot read the request: {e}"))?;
        if n == 0 {
            return Ok(line);
        }
        if let Some(end) = buf[..n].iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&buf[..end]);
            return if line.len() > MAX_LINE { Err(too_long(line.len())) } else { Ok(line) };
        }
        line.extend_from_slice(&buf[..n]);
        if line.len() > MAX_LINE {
            return Err(too_long(line.len()));
        }
    }
}

fn too_long(n: usize) -> String {
    format!("request too long: more than {n} bytes without a newline, at most {MAX_LINE}")
}

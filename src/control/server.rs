//! The socket inside a running ralph. It is bound before the run starts ([`Bound`]:
//! in the first private directory that works, or the run does not start), accepts
//! connections from the owning user only, reads one bounded request line per
//! connection, answers a person's command only when it names this run, answers what
//! it can from the published [`Live`] state, and forwards what the run must act on to
//! the dispatcher through a bounded channel. Nothing a client sends can block or
//! crash the run: a bad request gets an error reply, a full channel a "busy" reply.
//!
//! Connections do not compete for one pool: a connection that has not sent its
//! request yet waits in a queue of [`MAX_WAITING`], and when a new one comes to a
//! full queue the one that waited longest is closed, so idle connections (sixteen
//! raw ones, or a flood) can never keep `ralph stop` out: it sends its request at
//! once. A `ralph mcp` session, once its `hello` is accepted, leaves the queue for
//! a pool of its own ([`MAX_SESSIONS`]).

use std::collections::VecDeque;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::output_clock::OutputClock;
use super::path;
use super::protocol::{self, Inbound, Live, MAX_LINE, Reply, Serving};
use crate::state::identity::Identity;
use crate::state::identity_now;

/// Connections waiting to send their request line; a new one closes the one that
/// waited longest.
pub(crate) const MAX_WAITING: usize = 16;
/// `ralph mcp` sessions at once; past it a new session is refused (its tool calls
/// still go through, each on a connection of its own).
pub(crate) const MAX_SESSIONS: usize = 64;
/// Answered connections whose client is still writing (an oversized line), read
/// away so that the reply is not lost; past it they are closed at once.
const MAX_DRAINING: usize = 16;
/// A connection that sends no complete line in this time is closed.
const IDLE: Duration = Duration::from_secs(10);
/// Messages waiting for the dispatcher; beyond that clients hear "busy".
pub(crate) const QUEUE: usize = 64;

/// The socket bound in a private directory, not yet serving: bound before the run
/// starts, so a run never goes without its channel.
pub(crate) struct Bound {
    /// Taken when the server starts; still here when the run did not.
    listener: Option<std::os::unix::net::UnixListener>,
    socket: PathBuf,
    /// The socket file's inode, to tell it from one put in its place.
    inode: u64,
    /// A directory made for this run alone, removed with the socket.
    own_dir: Option<PathBuf>,
    identity: Identity,
}

/// No private place for the socket: each place tried, with why it could not be used.
#[derive(Debug, thiserror::Error)]
#[error("no private directory for the control socket (ralph status, ralph stop and the agent's MCP tools need it): {}", .0.join("; "))]
pub(crate) struct NoPlace(Vec<String>);

impl Bound {
    /// Binds the project's socket in the first private directory that works,
    /// replacing a socket left there by a run of this project that died (the project
    /// lock, held now, makes this run the only one of the directory).
    pub(crate) fn bind(project: &Path) -> Result<Self, NoPlace> {
        let identity = identity_now::of(project).map_err(|e| NoPlace(vec![format!("{}: {e}", project.display())]))?;
        let name = path::socket_name(project);
        let mut refused = Vec::new();
        for place in path::private_dirs() {
            let tried = place.and_then(|place| {
                let socket = place.dir.join(&name);
                let bound = bind_at(&socket);
                if bound.is_err() && place.own {
                    let _ = std::fs::remove_dir(&place.dir);
                }
                let own_dir = place.own.then_some(place.dir);
                let inode = socket_inode(&socket).unwrap_or_default();
                bound.map(|listener| Self { listener: Some(listener), socket, inode, own_dir, identity })
            });
            match tried {
                Ok(bound) => return Ok(bound),
                Err(why) => refused.push(why),
            }
        }
        Err(NoPlace(refused))
    }
}

/// Binds at `socket` (0600) when the path is free or holds a socket (or a link)
/// left by a dead run; anything else there is not ralph's to remove.
fn bind_at(socket: &Path) -> Result<std::os::unix::net::UnixListener, String> {
    if socket.as_os_str().len() > path::MAX_PATH {
        return Err(format!("the socket path {} is too long", socket.display()));
    }
    let failed = |e: std::io::Error| format!("cannot listen at {}: {e}", socket.display());
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() || meta.file_type().is_symlink() => {
            std::fs::remove_file(socket).map_err(failed)?;
        }
        Ok(_) => return Err(format!("{} is taken by something that is not a socket", socket.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(e)),
    }
    let listener = std::os::unix::net::UnixListener::bind(socket).map_err(failed)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
    listener.set_nonblocking(true).map_err(failed)?;
    Ok(listener)
}

/// The inode of the socket file at `path` (not followed), if a socket is there.
fn socket_inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().filter(|m| m.file_type().is_socket()).map(|m| m.ino())
}

/// The listening socket; dropping it stops listening and removes the socket, its
/// record, and a directory made for it.
pub(crate) struct Server {
    socket: PathBuf,
    inode: u64,
    project: PathBuf,
    record: PathBuf,
    own_dir: Option<PathBuf>,
    serving: Serving,
    context: Arc<Context>,
    task: JoinHandle<()>,
}

impl Server {
    /// Records the bound socket's path and the run in `.agent/`, and starts serving.
    pub(crate) fn start(
        bound: Bound,
        project: &Path,
        run_id: &str,
        live: Arc<Mutex<Live>>,
        output: OutputClock,
        tx: mpsc::Sender<Inbound>,
    ) -> std::io::Result<Self> {
        let serving = Serving { run_id: run_id.to_string(), dir: bound.identity };
        let context = Arc::new(Context {
            uid: nix::unistd::getuid().as_raw(),
            serving: serving.clone(),
            live,
            output,
            tx,
            slots: Mutex::default(),
        });
        let record = path::record_of(project);
        let mut server = Self {
            socket: PathBuf::new(),
            inode: 0,
            project: project.to_path_buf(),
            record,
            own_dir: None,
            serving,
            context,
            task: tokio::spawn(async {}),
        };
        server.serve(bound)?;
        Ok(server)
    }

    /// Serves `bound` from now on, and records it.
    fn serve(&mut self, mut bound: Bound) -> std::io::Result<()> {
        let listener = bound.listener.take().ok_or_else(|| std::io::Error::other("the socket is served already"))?;
        let listener = UnixListener::from_std(listener)?;
        let text = path::Record { socket: bound.socket.clone(), run_id: Some(self.serving.run_id.clone()) }.text();
        // Not synced: after a power cut the socket is gone with the run anyway.
        crate::state::atomic::replace(&self.record, text.as_bytes(), crate::state::writes::Durability::Unsynced)?;
        self.task.abort();
        if let Some(old) = std::mem::replace(&mut self.own_dir, bound.own_dir.take()) {
            let _ = std::fs::remove_dir_all(old);
        }
        (self.socket, self.inode) = (bound.socket.clone(), bound.inode);
        self.task = tokio::spawn(serve(listener, self.context.clone()));
        Ok(())
    }

    /// Binds anew when the socket is no longer where it was bound (a cleaner of the
    /// temp dir removed it, or its directory): a run does not go on without its
    /// channel. True when it did; an error when no private place is left.
    pub(crate) fn keep_in_place(&mut self) -> Result<bool, NoPlace> {
        if socket_inode(&self.socket) == Some(self.inode) {
            return Ok(false);
        }
        let bound = Bound::bind(&self.project)?;
        let record = self.record.display().to_string();
        self.serve(bound).map_err(|e| NoPlace(vec![format!("cannot record the socket in {record}: {e}")]))?;
        Ok(true)
    }

    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// The run this socket serves and its directory's identity.
    pub(crate) fn serving(&self) -> &Serving {
        &self.serving
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
        // Only what is still ours: another run of this project may have bound here
        // since (it removed ours first).
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.record);
        if let Some(dir) = &self.own_dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        // Bound but never served (the run did not start): the socket is this run's
        // alone (the project lock is held), and nothing listens on it after this.
        if self.listener.take().is_some() {
            let _ = std::fs::remove_file(&self.socket);
        }
        if let Some(dir) = self.own_dir.take() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// What every connection of the run's socket shares.
struct Context {
    uid: u32,
    serving: Serving,
    live: Arc<Mutex<Live>>,
    /// The running agent's last output, read when asked.
    output: OutputClock,
    tx: mpsc::Sender<Inbound>,
    slots: Mutex<Slots>,
}

/// Who holds which kind of connection.
#[derive(Default)]
struct Slots {
    next: u64,
    /// Connections that have not sent their request line, oldest first: dropping
    /// the sender closes that connection.
    waiting: VecDeque<(u64, oneshot::Sender<()>)>,
    sessions: usize,
    draining: usize,
}

impl Context {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A place in one of the counted pools, given back when dropped (also when the task
/// is aborted).
struct Held<'a> {
    context: &'a Context,
    pool: fn(&mut Slots) -> &mut usize,
}

impl<'a> Held<'a> {
    /// A place in `pool` when it has fewer than `max`.
    fn take(context: &'a Context, pool: fn(&mut Slots) -> &mut usize, max: usize) -> Option<Self> {
        let mut slots = context.slots();
        let count = pool(&mut slots);
        (*count < max).then(|| {
            *count += 1;
            Held { context, pool }
        })
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut slots = self.context.slots();
        let count = (self.pool)(&mut slots);
        *count = count.saturating_sub(1);
    }
}

async fn serve(listener: UnixListener, context: Arc<Context>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, most likely: give the clients a moment to go.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (evict, evicted) = oneshot::channel();
        let id = {
            let mut slots = context.slots();
            let id = slots.next;
            slots.next += 1;
            slots.waiting.push_back((id, evict));
            while slots.waiting.len() > MAX_WAITING {
                // The connection that waited longest without a word makes room.
                slots.waiting.pop_front();
            }
            id
        };
        let context = context.clone();
        tokio::spawn(async move { connection(stream, id, evicted, &context).await });
    }
}

/// Serves one connection: one request, one reply. An accepted `hello` keeps the
/// connection as the session of `ralph mcp` until it ends.
async fn connection(mut stream: UnixStream, id: u64, evicted: oneshot::Receiver<()>, context: &Context) {
    let peer = stream.peer_cred().map(|cred| cred.uid());
    let line = if peer.is_ok_and(|uid| uid == context.uid) {
        tokio::select! {
            line = tokio::time::timeout(IDLE, read_line(&mut stream)) => line.ok(),
            _ = evicted => Some(Err("closed: more connections waited than the run serves at once, and this one \
                                     waited longest without sending a request; try again".to_string())),
        }
    } else {
        Some(Err("permission denied: only the user running ralph may use its socket".to_string()))
    };
    context.slots().waiting.retain(|(waiting, _)| *waiting != id);
    // Nothing within `IDLE`: closed without a word.
    let Some(line) = line else { return };
    let (reply, session) = match line {
        Ok(line) => answer(&line, context),
        Err(e) => (Reply::error(e), None),
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
    if let Some((attempt, held)) = session {
        session_until_closed(stream, attempt, &context.tx).await;
        drop(held);
        return;
    }
    let _ = stream.shutdown().await;
    // Closing with unread input would reset the connection and lose the reply to a
    // client still writing an oversized line: read it away (bounded by `IDLE`).
    if let Some(_held) = Held::take(context, |s| &mut s.draining, MAX_DRAINING) {
        let mut sink = [0u8; 64 * 1024];
        let drain = async { while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {} };
        let _ = tokio::time::timeout(IDLE, drain).await;
    }
}

/// The session of one `ralph mcp`: open until its `bye` (an orderly shutdown) or
/// until it closes without one (it crashed or was killed), which the run hears.
async fn session_until_closed(mut stream: UnixStream, attempt: u32, tx: &mpsc::Sender<Inbound>) {
    let orderly = matches!(
        read_line(&mut stream).await.ok().map(|l| protocol::parse(&l)),
        Some(Ok(protocol::Request::Bye { .. }))
    );
    if !orderly {
        let _ = tx.try_send(Inbound::McpLost { attempt });
    }
}

/// The reply to one request line, and for an accepted `hello` the session it opens
/// (with its place in the sessions' pool).
fn answer<'a>(line: &[u8], context: &'a Context) -> (Reply, Option<(u32, Held<'a>)>) {
    let (request, claim) = match protocol::parse_addressed(line) {
        Ok(parsed) => parsed,
        Err(e) => return (Reply::error(e), None),
    };
    if let Err(why) = protocol::addressed_to(claim.as_ref(), &context.serving) {
        return (Reply::not_addressed(&why), None);
    }
    let mut session = None;
    if let protocol::Request::Hello { attempt } = request {
        let Some(held) = Held::take(context, |s| &mut s.sessions, MAX_SESSIONS) else {
            let error = format!(
                "too many ralph mcp sessions are open ({MAX_SESSIONS}); this server's tools still work, without a \
                 session"
            );
            return (Reply::error(error), None);
        };
        session = Some((attempt, held));
    }
    let mut snapshot = context.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    snapshot.agent_output_at = context.output.read();
    let (reply, inbound) = protocol::route(request, &snapshot);
    let reply = match inbound.map(|msg| context.tx.try_send(msg)) {
        Some(Err(_)) => Reply::error("the run is busy; try again"),
        _ => reply,
    };
    // Only an accepted `hello` opens a session (a stale attempt's is refused).
    let opened = reply.ok;
    (reply, session.filter(|_| opened))
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
            return Err(oversized(stream, line.len()).await);
        }
    }
}

fn too_long(length: usize) -> String {
    format!("request too long: {length} bytes, at most {MAX_LINE}")
}

/// The refusal of a request already past [`MAX_LINE`] after `seen` bytes: the rest
/// of the line is read away (what comes at once, up to 16 MiB) to say how long it
/// was, or that no end of it came.
async fn oversized(stream: &mut UnixStream, mut seen: usize) -> String {
    let mut buf = vec![0u8; 64 * 1024];
    while seen <= 16 << 20 {
        match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => match buf[..n].iter().position(|&b| b == b'\n') {
                Some(end) => return too_long(seen + end),
                None => seen += n,
            },
            // Closed, failed, or quiet for a while.
            _ => break,
        }
    }
    format!("request too long: more than {seen} bytes and no end of line yet, at most {MAX_LINE}")
}

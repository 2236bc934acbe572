//! The client end of the control socket, used by `ralph status`, `ralph stop`,
//! `ralph mcp` and the scripted agent. The socket path may come from a hostile
//! repository's `.agent/`, so the client talks only to a server of its own uid. And a
//! record copied with its project (`cp -a`, rsync, a backup restore) still names the
//! original's socket, so a person's command ([`call_run`]) names the run it is meant
//! for, and only that run answers it.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::path;
use super::protocol::{self, Claim, Reply, Request};
use crate::state::identity_now;

/// How long a request may take before the client gives up.
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    #[error("no running ralph for {0} (no control socket recorded)")]
    NoRun(String),
    #[error("no running ralph answers at {path}: {source}")]
    Unreachable { path: PathBuf, source: std::io::Error },
    #[error("refusing {path}: it is served by uid {server}, not by this user (uid {me})")]
    ForeignServer { path: PathBuf, server: u32, me: u32 },
    #[error("the control socket {path} answered badly: {detail}")]
    Protocol { path: PathBuf, detail: String },
    /// The record leads to a run that is not this directory's: the project is a copy,
    /// or another project took its place.
    #[error(
        "no running ralph for {dir}: the control socket {path} named in its .agent/ serves another run ({why}); is \
         this directory a copy of a project whose run is live?"
    )]
    OtherRun { dir: String, path: PathBuf, why: String },
}

/// The socket recorded for the run in `project`.
pub(crate) fn socket_of(project: &Path) -> Result<PathBuf, ClientError> {
    record_of(project).map(|record| record.socket)
}

fn record_of(project: &Path) -> Result<path::Record, ClientError> {
    path::recorded(project).ok_or_else(|| ClientError::NoRun(project.display().to_string()))
}

/// A person's command to the run of `project` (`ralph status`, `ralph stop`, the
/// fleet supervisor): sent through the socket the project records, naming the run it
/// is meant for (the identity of `project` and the recorded run id). A socket that
/// serves another run refuses it: [`ClientError::OtherRun`]. A ralph older than this
/// check refuses the unknown `"to"` and is not talked to either.
pub(crate) fn call_run(project: &Path, request: &Request) -> Result<Reply, ClientError> {
    let record = record_of(project)?;
    let dir = identity_now::of(project).map_err(|_| ClientError::NoRun(project.display().to_string()))?;
    let claim = Claim { run_id: record.run_id.clone(), dir };
    let (_, reply) = exchange(&record.socket, request, Some(&claim))?;
    if reply.other_run {
        let why = reply.error.unwrap_or_default();
        return Err(ClientError::OtherRun { dir: project.display().to_string(), path: record.socket, why });
    }
    if reply.error.as_deref().is_some_and(|e| e.contains("unknown field `to`")) {
        let detail = "the ralph listening there is older and cannot prove which run it is; stop it with Ctrl+C or \
                      `kill` (its pid is in .agent/ralph.lock)";
        return Err(ClientError::Protocol { path: record.socket, detail: detail.to_string() });
    }
    Ok(reply)
}

/// Connects to `socket`, and only to a server of the same user: a socket path from a
/// hostile record must not hand requests (or a session) to someone else's process.
fn connect(socket: &Path) -> Result<UnixStream, ClientError> {
    let unreachable = |source| ClientError::Unreachable { path: socket.to_path_buf(), source };
    let stream = UnixStream::connect(socket).map_err(unreachable)?;
    let server = crate::os::peer_uid(&stream).map_err(unreachable)?;
    let me = nix::unistd::getuid().as_raw();
    if server != me {
        return Err(ClientError::ForeignServer { path: socket.to_path_buf(), server, me });
    }
    Ok(stream)
}

/// Sends one request to the socket the run itself named (`ralph mcp`) and reads its
/// reply.
pub(crate) fn call(socket: &Path, request: &Request) -> Result<Reply, ClientError> {
    exchange(socket, request, None).map(|(_, reply)| reply)
}

/// Opens the session of `ralph mcp`: a connection that stays open while the server
/// lives, so the run tells a crash (closed without [`end_session`]) from a shutdown.
pub(crate) fn open_session(socket: &Path, attempt: u32) -> Result<UnixStream, ClientError> {
    let (stream, reply) = exchange(socket, &Request::Hello { attempt }, None)?;
    if !reply.ok {
        return Err(ClientError::Protocol { path: socket.to_path_buf(), detail: reply.error.unwrap_or_default() });
    }
    Ok(stream)
}

/// One request (within the run's bounds, so its line always fits) and its reply, on
/// a connection left open.
fn exchange(socket: &Path, request: &Request, claim: Option<&Claim>) -> Result<(UnixStream, Reply), ClientError> {
    let unreachable = |source| ClientError::Unreachable { path: socket.to_path_buf(), source };
    let bad = |detail: String| ClientError::Protocol { path: socket.to_path_buf(), detail };
    let mut stream = connect(socket)?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(unreachable)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(unreachable)?;
    let line = protocol::encode(&protocol::fit(request.clone()), claim).map_err(bad)?;
    stream.write_all(line.as_bytes()).map_err(unreachable)?;
    let mut reply = String::new();
    // One line of at most 1 MiB: a reply carries the live state, never more.
    BufReader::new(&stream).take(1 << 20).read_line(&mut reply).map_err(unreachable)?;
    let reply = serde_json::from_str(reply.trim()).map_err(|e| bad(format!("{e}: {}", reply.trim())))?;
    Ok((stream, reply))
}

/// Ends the session in order.
pub(crate) fn end_session(mut stream: UnixStream, attempt: u32) {
    if let Ok(line) = protocol::encode(&Request::Bye { attempt }, None) {
        let _ = stream.write_all(line.as_bytes());
    }
}

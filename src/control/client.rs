//! The client end of the control socket, used by `ralph status`, `ralph stop`,
//! `ralph mcp` and the scripted agent. The socket path may come from a hostile
//! repository's `.agent/`, so the client talks only to a server of its own uid.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::path;
use super::protocol::{Reply, Request};

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
}

/// The socket of the run in `project`, from its record.
pub(crate) fn socket_of(project: &Path) -> Result<PathBuf, ClientError> {
    path::recorded(project).ok_or_else(|| ClientError::NoRun(project.display().to_string()))
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

/// Sends one request and reads its reply.
pub(crate) fn call(socket: &Path, request: &Request) -> Result<Reply, ClientError> {
    exchange(socket, request).map(|(_, reply)| reply)
}

/// Opens the session of `ralph mcp`: a connection that stays open while the server
/// lives, so the run tells a crash (closed without [`end_session`]) from a shutdown.
pub(crate) fn open_session(socket: &Path, attempt: u32) -> Result<UnixStream, ClientError> {
    let (stream, reply) = exchange(socket, &Request::Hello { attempt })?;
    if !reply.ok {
        return Err(ClientError::Protocol { path: socket.to_path_buf(), detail: reply.error.unwrap_or_default() });
    }
    Ok(stream)
}

/// One request and its reply, on a connection left open.
fn exchange(socket: &Path, request: &Request) -> Result<(UnixStream, Reply), ClientError> {
    let unreachable = |source| ClientError::Unreachable { path: socket.to_path_buf(), source };
    let bad = |detail: String| ClientError::Protocol { path: socket.to_path_buf(), detail };
    let mut stream = connect(socket)?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(unreachable)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(unreachable)?;
    let mut line = serde_json::to_string(request).map_err(|e| bad(e.to_string()))?;
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(unreachable)?;
    let mut reply = String::new();
    // One line of at most 1 MiB: a reply carries the live state, never more.
    BufReader::new(&stream).take(1 << 20).read_line(&mut reply).map_err(unreachable)?;
    let reply = serde_json::from_str(reply.trim()).map_err(|e| bad(format!("{e}: {}", reply.trim())))?;
    Ok((stream, reply))
}

/// Ends the session in order.
pub(crate) fn end_session(mut stream: UnixStream, attempt: u32) {
    if let Ok(mut line) = serde_json::to_string(&Request::Bye { attempt }) {
        line.push('\n');
        let _ = stream.write_all(line.as_bytes());
    }
}

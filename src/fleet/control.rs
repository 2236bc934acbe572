//! The supervisor's control socket: how `ralph fleet stop`, `retry`, `discard`,
//! `clean` and `land` reach a running supervisor (which owns the state; a second
//! writer would race it). One JSON request a line, one reply a line, like a run's
//! socket (`crate::control`), in the same private directory, served to this user only.
//! Without a running supervisor a command takes the fleet's lock and acts itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// A request to the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Request {
    /// Stop one task, or (no task) the whole fleet; after the iteration, or now.
    Stop {
        #[serde(default)]
        task: Option<String>,
        #[serde(default)]
        now: bool,
    },
    Retry {
        task: String,
    },
    Discard {
        task: String,
        #[serde(default)]
        delete_branch: bool,
    },
    Clean {},
    Land {
        task: String,
    },
}

/// The supervisor's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reply {
    pub ok: bool,
    pub message: String,
}

/// A request and where its reply goes.
pub(crate) type Inbound = (Request, oneshot::Sender<Reply>);

/// Listens for requests; each is handed to the supervisor's loop through `tx`. The
/// socket's path is recorded in `record`.
pub(crate) fn serve(repo: &Path, record: &Path, tx: mpsc::Sender<Inbound>) -> std::io::Result<PathBuf> {
    // The run's socket name with `fleet-` for `run-`, beside the runs' sockets.
    let name = crate::control::path::socket_name(repo).replacen("run-", "fleet-", 1);
    let path = crate::control::path::private_dir()?.join(name);
    // A socket file left by a supervisor that died: nobody listens there.
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path)?;
    crate::state::atomic::write_atomic(record, format!("{}\n", path.display()).as_bytes())?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let mine = stream.peer_cred().is_ok_and(|c| c.uid() == nix::unistd::getuid().as_raw());
            if mine {
                tokio::spawn(session(stream, tx.clone()));
            }
        }
    });
    Ok(path)
}

async fn session(stream: tokio::net::UnixStream, tx: mpsc::Sender<Inbound>) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = tokio::io::BufReader::new(read.take(64 * 1024));
    if reader.read_line(&mut line).await.is_err() {
        return;
    }
    let reply = match serde_json::from_str::<Request>(line.trim()) {
        Err(e) => Reply { ok: false, message: format!("bad request: {e}") },
        Ok(request) => {
            let (reply_tx, reply_rx) = oneshot::channel();
            if tx.send((request, reply_tx)).await.is_err() {
                return;
            }
            reply_rx.await.unwrap_or(Reply { ok: false, message: "the supervisor is stopping".into() })
        }
    };
    if let Ok(mut text) = serde_json::to_string(&reply) {
        text.push('\n');
        let _ = write.write_all(text.as_bytes()).await;
    }
}

/// Sends a request to the running supervisor of `record`'s fleet: what it said,
/// or why not (its refusal, or no answer). `None`: no supervisor listens (none runs).
pub(crate) fn call(record: &Path, request: &Request) -> Option<Result<String, String>> {
    let text = std::fs::read_to_string(record).ok()?;
    let path = PathBuf::from(text.lines().next()?.trim());
    let stream = UnixStream::connect(&path).ok()?;
    let exchange = || -> std::io::Result<Reply> {
        let server = crate::os::peer_uid(&stream)?;
        if server != nix::unistd::getuid().as_raw() {
            return Err(std::io::Error::other(format!(
                "{} is served by uid {server}, not by this user",
                path.display()
            )));
        }
        // A landing's git may hold the supervisor's answer a while.
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        let mut line = serde_json::to_string(request).map_err(std::io::Error::other)?;
        line.push('\n');
        (&stream).write_all(line.as_bytes())?;
        let mut reply = String::new();
        BufReader::new((&stream).take(1 << 20)).read_line(&mut reply)?;
        serde_json::from_str(reply.trim()).map_err(std::io::Error::other)
    };
    Some(match exchange() {
        Ok(Reply { ok: true, message }) => Ok(message),
        Ok(Reply { ok: false, message }) => Err(message),
        Err(e) => Err(format!("the fleet's supervisor did not answer: {e}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_written() {
        let r: Request = serde_json::from_str(r#"{"op": "stop", "task": "a", "now": true}"#).unwrap();
        assert_eq!(r, Request::Stop { task: Some("a".into()), now: true });
        let r: Request = serde_json::from_str(r#"{"op": "clean"}"#).unwrap();
        assert_eq!(r, Request::Clean {});
        assert!(serde_json::from_str::<Request>(r#"{"op": "stop", "bogus": 1}"#).is_err());
    }
}

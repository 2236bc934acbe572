//! The TCP connect of the connectivity probe (design.md §5): is any of these
//! endpoints reachable? Each is connected to with a short timeout, all at once; one
//! success is enough. Which endpoints to ask is the core's (`recovery::probe`).

use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::recovery::probe::ProbeResult;

/// Connects to every `host:port` in `endpoints` concurrently, each bounded by
/// `timeout` (name resolution included). With no endpoints there is nothing to judge
/// by, and the answer is `Online`: a run must never pause on a guess.
pub(crate) async fn probe(endpoints: &[String], timeout: Duration) -> ProbeResult {
    if endpoints.is_empty() {
        return ProbeResult::Online;
    }
    // std's blocking connect runs on the blocking pool (tokio's `net` feature is not
    // enabled); a resolver that outlives the timeout is left to finish there.
    let mut set = tokio::task::JoinSet::new();
    for endpoint in endpoints {
        let endpoint = endpoint.clone();
        set.spawn_blocking(move || connect(&endpoint, timeout));
    }
    let mut last_error = String::from("no endpoint answered");
    let waited = tokio::time::timeout(timeout, async {
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok(Ok(())) => return true,
                Ok(Err(e)) => last_error = e,
                Err(e) => last_error = format!("probe task failed: {e}"),
            }
        }
        false
    })
    .await;
    match waited {
        Ok(true) => ProbeResult::Online,
        Ok(false) => ProbeResult::Offline { last_error },
        Err(_) => {
            ProbeResult::Offline { last_error: format!("no endpoint answered within {timeout:?} ({last_error})") }
        }
    }
}

/// One endpoint: every address it resolves to, until one accepts; the host itself
/// by its route and its resolver.
fn connect(endpoint: &str, timeout: Duration) -> Result<(), String> {
    if endpoint == crate::recovery::probe::HOST {
        return crate::host_network::reachable(timeout);
    }
    let started = Instant::now();
    let addrs = endpoint.to_socket_addrs().map_err(|e| format!("{endpoint}: {e}"))?;
    let mut last = format!("{endpoint}: no address");
    for addr in addrs {
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(format!("{endpoint}: timed out"));
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{endpoint} ({addr}): {e}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn open_port_is_online_closed_port_is_offline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let timeout = Duration::from_secs(2);
        assert_eq!(probe(std::slice::from_ref(&addr), timeout).await, ProbeResult::Online);
        drop(listener);
        match probe(std::slice::from_ref(&addr), timeout).await {
            ProbeResult::Offline { last_error } => assert!(last_error.contains(&addr), "{last_error}"),
            ProbeResult::Online => panic!("a closed port answered"),
        }
    }

    #[tokio::test]
    async fn one_reachable_endpoint_is_enough() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let open = listener.local_addr().unwrap().to_string();
        assert_eq!(probe(&[closed, open], Duration::from_secs(2)).await, ProbeResult::Online);
    }

    #[tokio::test]
    async fn bad_endpoints_and_none() {
        assert_eq!(probe(&[], Duration::from_millis(100)).await, ProbeResult::Online);
        let r = probe(&["no port here".to_string()], Duration::from_secs(1)).await;
        assert!(matches!(r, ProbeResult::Offline { .. }), "{r:?}");
    }
}

//! Reads whether the host is online (the shell of `recovery::host`, which judges):
//! its route tables (`os::route_tables`), and one DNS question to each resolver of
//! `/etc/resolv.conf` in turn until one answers. Blocking; the probe runs it on the
//! blocking pool, bounded by `[offline] timeout`.
//!
//! Debug builds have a test hook: `RALPH_TEST_HOST_NETWORK` names a file that stands
//! for the host's network state (absent or `online`: online; any other content:
//! offline, the content saying why), so the tests take the network away without
//! privileges. Release builds read the host.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::recovery::host;
use crate::recovery::probe::ProbeResult;

/// The host's network state now, within `timeout`.
pub(crate) fn probe(timeout: Duration) -> ProbeResult {
    if let Some(state) = test_state() {
        return state;
    }
    let route = crate::os::route_tables().map(|(v4, v6)| host::default_route(&v4, &v6));
    if route == Some(false) {
        return host::judge(route, Ok(()));
    }
    let servers = host::nameservers(&std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default());
    host::judge(route, ask(&servers, timeout))
}

/// [`probe`] as a connect's result: the reason when the host is offline.
pub(crate) fn reachable(timeout: Duration) -> Result<(), String> {
    match probe(timeout) {
        ProbeResult::Online => Ok(()),
        ProbeResult::Offline { last_error } => Err(last_error),
    }
}

/// One question to each resolver in turn, sharing `timeout`, until one answers.
fn ask(servers: &[std::net::IpAddr], timeout: Duration) -> Result<(), String> {
    if servers.is_empty() {
        return Err("/etc/resolv.conf names no nameserver".to_string());
    }
    let started = Instant::now();
    let mut last = String::new();
    for (n, server) in servers.iter().enumerate() {
        // Each remaining resolver gets an equal share of the time left.
        let left = timeout.saturating_sub(started.elapsed());
        let share = left / u32::try_from(servers.len() - n).unwrap_or(1);
        if share.is_zero() {
            break;
        }
        match ask_one(SocketAddr::new(*server, 53), share) {
            Ok(()) => return Ok(()),
            Err(e) => last = format!("{server}: {e}"),
        }
    }
    Err(last)
}

fn ask_one(server: SocketAddr, timeout: Duration) -> Result<(), String> {
    let bind: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let socket = UdpSocket::bind(bind).map_err(|e| e.to_string())?;
    socket.connect(server).map_err(|e| e.to_string())?;
    // Not secret, only to tell this reply from a stray one.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let id = (std::process::id() as u16) ^ (nanos as u16);
    socket.send(&host::dns_query(id)).map_err(|e| e.to_string())?;
    socket.set_read_timeout(Some(timeout.max(Duration::from_millis(1)))).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 512];
    match socket.recv(&mut buf) {
        Ok(n) if host::dns_answered(&buf[..n], id) => Ok(()),
        Ok(_) => Err("answered with a failure".to_string()),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            Err("timed out".to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The test hook's state, in debug builds when `RALPH_TEST_HOST_NETWORK` is set.
fn test_state() -> Option<ProbeResult> {
    if !cfg!(debug_assertions) {
        return None;
    }
    let path = std::env::var_os("RALPH_TEST_HOST_NETWORK")?;
    let text = std::fs::read_to_string(Path::new(&path)).unwrap_or_default();
    let text = text.trim();
    Some(if text.is_empty() || text == "online" {
        ProbeResult::Online
    } else {
        ProbeResult::Offline { last_error: text.to_string() }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolver_on_loopback_that_answers_makes_the_host_online() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let answer = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            let (n, from) = server.recv_from(&mut buf).unwrap();
            let mut reply = buf[..n].to_vec();
            (reply[2], reply[3]) = (0x81, 0x80);
            server.send_to(&reply, from).unwrap();
        });
        assert_eq!(ask_one(addr, Duration::from_secs(5)), Ok(()));
        answer.join().unwrap();
    }

    #[test]
    fn a_resolver_that_does_not_answer_times_out() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap();
        assert_eq!(ask_one(addr, Duration::from_millis(100)), Err("timed out".to_string()));
        assert!(ask(&[], Duration::from_secs(1)).is_err());
    }
}

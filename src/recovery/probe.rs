//! The connectivity probe of design.md §5: is the network (the agents' providers)
//! reachable at all? A TCP connect with a short timeout to each endpoint, all at
//! once; one success is enough. Also the default endpoints for a set of agents.

use std::collections::BTreeMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::config::{AgentConfig, AgentKind};

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeResult {
    Online,
    Offline { last_error: String },
}

/// Connects to every `host:port` in `endpoints` concurrently, each bounded by
/// `timeout` (name resolution included). With no endpoints there is nothing to judge
/// by, and the answer is `Online`: a run must never pause on a guess.
pub async fn probe(endpoints: &[String], timeout: Duration) -> ProbeResult {
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

/// One endpoint: every address it resolves to, until one accepts.
fn connect(endpoint: &str, timeout: Duration) -> Result<(), String> {
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

/// The providers the configured agents talk to, as `host:port`, sorted and without
/// duplicates. A base URL set for the agent (its `env`, then ralph's environment)
/// wins over the vendor's public host. Codex and OpenCode read their provider from
/// their own config files and `command`/`sim` agents have none, so they contribute
/// nothing: a wrong guess would pin a run in "offline" on a machine that reaches
/// its real provider fine.
pub fn default_endpoints(agents: &BTreeMap<String, AgentConfig>, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out: Vec<String> = agents
        .values()
        .filter_map(|agent| {
            let (var, vendor) = match agent.kind {
                AgentKind::Claude => ("ANTHROPIC_BASE_URL", "api.anthropic.com:443"),
                AgentKind::Gemini => ("GOOGLE_GEMINI_BASE_URL", "generativelanguage.googleapis.com:443"),
                AgentKind::Codex | AgentKind::Opencode | AgentKind::Command | AgentKind::Sim => return None,
            };
            let set = agent.env.get(var).cloned().or_else(|| env(var)).filter(|v| !v.trim().is_empty());
            match set {
                Some(url) => host_port(&url),
                None => Some(vendor.to_string()),
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `host:port` of a URL, the port defaulting by scheme. None for what is not a URL.
fn host_port(url: &str) -> Option<String> {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if authority.is_empty() {
        return None;
    }
    // An IPv6 literal keeps its brackets; its colons are not a port separator.
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (addr, after) = v6.split_once(']')?;
        (format!("[{addr}]"), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return None;
    }
    let port = match port {
        Some(p) => p.parse::<u16>().ok()?,
        None => default_port,
    };
    Some(format!("{host}:{port}"))
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

    fn agent(kind: AgentKind, env: &[(&str, &str)]) -> AgentConfig {
        let mut a: AgentConfig = toml::from_str(&format!("kind = \"{}\"", kind.as_str())).unwrap();
        a.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        a
    }

    #[test]
    fn defaults_follow_the_configured_provider() {
        let mut agents = BTreeMap::new();
        agents.insert("c1".to_string(), agent(AgentKind::Claude, &[]));
        agents.insert("c2".to_string(), agent(AgentKind::Claude, &[]));
        agents.insert("cmd".to_string(), agent(AgentKind::Command, &[]));
        agents.insert("sim".to_string(), agent(AgentKind::Sim, &[]));
        agents.insert("codex".to_string(), agent(AgentKind::Codex, &[]));
        let none = |_: &str| None;
        assert_eq!(default_endpoints(&agents, &none), ["api.anthropic.com:443"]);

        let fake = |k: &str| (k == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:8089/anthropic".to_string());
        assert_eq!(default_endpoints(&agents, &fake), ["127.0.0.1:8089"]);

        agents.insert("c3".to_string(), agent(AgentKind::Claude, &[("ANTHROPIC_BASE_URL", "https://proxy.example")]));
        agents.insert("g".to_string(), agent(AgentKind::Gemini, &[]));
        assert_eq!(
            default_endpoints(&agents, &fake),
            ["127.0.0.1:8089", "generativelanguage.googleapis.com:443", "proxy.example:443"]
        );

        let only_commands: BTreeMap<_, _> = [("cmd".to_string(), agent(AgentKind::Command, &[]))].into();
        assert!(default_endpoints(&only_commands, &none).is_empty());
    }

    #[test]
    fn urls_to_host_port() {
        let cases = [
            ("https://api.anthropic.com", Some("api.anthropic.com:443")),
            ("http://127.0.0.1:8089/v1/messages?beta=true", Some("127.0.0.1:8089")),
            ("HTTP://localhost", Some("localhost:80")),
            ("https://user:secret@gw.example:8443/x", Some("gw.example:8443")),
            ("http://[::1]:9000/", Some("[::1]:9000")),
            ("https://[2001:db8::1]", Some("[2001:db8::1]:443")),
            ("api.anthropic.com", None),
            ("ftp://x", None),
            ("http://", None),
            ("http://host:notaport", None),
        ];
        for (url, want) in cases {
            assert_eq!(host_port(url).as_deref(), want, "{url}");
        }
    }
}

/// The `host:port` of a proxy URL (`http://user:pass@proxy:3128/`), where a CLI's
/// traffic really goes when `HTTPS_PROXY` is set: probing the vendor's host directly
/// would find a proxied machine "offline" forever.
pub fn proxy_endpoint(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port.is_empty() {
        return None;
    }
    let has_port =
        host_port.rsplit_once(':').is_some_and(|(_, p)| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if has_port {
        return Some(host_port.to_string());
    }
    let port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    Some(format!("{host_port}:{port}"))
}

/// Whether an endpoint is on this machine (a fake or local provider, never proxied).
pub fn is_loopback(endpoint: &str) -> bool {
    let host = endpoint.rsplit_once(':').map_or(endpoint, |(h, _)| h).trim_matches(['[', ']']);
    host == "localhost" || host.starts_with("127.") || host == "::1"
}

#[cfg(test)]
mod proxy_tests {
    use super::*;

    #[test]
    fn proxy_urls_become_endpoints() {
        assert_eq!(proxy_endpoint("http://proxy.corp:3128").as_deref(), Some("proxy.corp:3128"));
        assert_eq!(proxy_endpoint("http://u:p@proxy.corp:3128/").as_deref(), Some("proxy.corp:3128"));
        assert_eq!(proxy_endpoint("https://proxy.corp").as_deref(), Some("proxy.corp:443"));
        assert_eq!(proxy_endpoint("proxy.corp:8080").as_deref(), Some("proxy.corp:8080"));
        assert_eq!(proxy_endpoint("http://"), None);
    }

    #[test]
    fn loopback_endpoints() {
        assert!(is_loopback("127.0.0.1:8080"));
        assert!(is_loopback("localhost:1"));
        assert!(!is_loopback("api.anthropic.com:443"));
    }
}

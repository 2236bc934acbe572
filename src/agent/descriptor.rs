//! What ralph knows about one agent CLI, as plain data and functions: the
//! [`Request`] its launcher builds an argv from, the errors a launch can end in, and
//! the small helpers the kinds' files share. Each CLI kind's own file under
//! `src/agent/` holds its descriptor; `agent::kinds` lists them.

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;

use super::event::LineParser;
use crate::config::types::{AgentConfig, AgentKind};

/// What one attempt asks of the agent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    pub agent: &'a str,
    pub prompt: &'a str,
    /// A file holding the prompt (for `{prompt_file}`).
    pub prompt_file: &'a Path,
    /// Resume this session instead of starting a fresh one.
    pub resume: Option<&'a str>,
    /// 1-based launch number of this agent in the run.
    pub launch: u32,
    pub cwd: &'a Path,
    /// Marks the agent and everything it starts (see `process::leftovers`).
    pub run_id: &'a str,
    /// Input and output tokens already counted for the resumed session.
    pub session_tokens: (u64, u64),
    /// The run's control socket and this attempt's number, for `ralph mcp`.
    pub control: Option<(&'a Path, u32)>,
    /// Writes a settings file the CLI reads (given `cwd`, the kind's name and the
    /// bytes) into ralph's private directory and returns its path: the shell's
    /// `control::path::write_settings`, handed in so no descriptor writes a file.
    pub settings_file: fn(&Path, &str, &[u8]) -> std::io::Result<PathBuf>,
}

/// Why an agent cannot be launched; all of these need a human.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LaunchError {
    #[error("agent {agent}: the {binary} binary was not found on PATH; install it or set [agents.{agent}] binary")]
    BinaryMissing { agent: String, binary: String },
    #[error("agent {agent}: {message}")]
    Invalid { agent: String, message: String },
    #[error("cannot find ralph's own executable (for the scripted agent or ralph mcp): {0}")]
    SelfExe(std::io::Error),
}

/// Extra environment variables ralph sets for an agent.
pub(crate) type Env = Vec<(String, String)>;
/// A variable of the agent's environment (its `env` table, then ralph's), if set.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;
/// Reads a file's text (the shell's `std::fs::read_to_string`; tests pass a map).
pub(crate) type ReadFile<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// One agent CLI. Adding a kind is a new file with one of these, its entry in
/// `agent::kinds::ALL`, and its `AgentKind` variant (in `AgentKind::CLI`, with its
/// permission modes in `AgentKind::permission_modes`).
pub(crate) struct Descriptor {
    pub(crate) kind: AgentKind,
    /// The program looked up on PATH unless `[agents.X] binary` is set.
    pub(crate) binary: &'static str,
    /// What its vendor calls it.
    pub(crate) product: &'static str,
    /// Its npm package: `npm install -g PACKAGE` installs it (what `init` and the
    /// pre-flight tell a person who has none).
    pub(crate) package: &'static str,
    /// The CLI version ralph was tested with: the pin in `tests/agents/versions.txt`
    /// that the integration tests install (a unit test keeps the two equal).
    pub(crate) tested_version: &'static str,
    /// The argv of a launch or a resume, given the resolved binary. The prompt goes
    /// on stdin, so its length is not bounded by the limit on one argument.
    pub(crate) argv: fn(&AgentConfig, &Request<'_>, &Path) -> Result<Vec<String>, LaunchError>,
    /// The variables ralph sets for the CLI (an agent's own `env` entries win).
    pub(crate) env: fn(&Request<'_>) -> Result<Env, LaunchError>,
    /// ralph's variables the CLI gets beyond the base set: its credentials and
    /// settings (`*` globs).
    pub(crate) passes: &'static [&'static str],
    /// The credentials it looks for: what `doctor` checks, and values redacted.
    pub(crate) credentials: &'static [&'static str],
    /// A login file under `$HOME` that `doctor` counts as credentials, and its name.
    pub(crate) login: Option<(&'static str, &'static str)>,
    /// Variables the CLI sets in what it starts that change a nested CLI's
    /// behaviour; no agent ever gets them.
    pub(crate) nesting_markers: &'static [&'static str],
    /// The provider's `host:port` for the offline probe: a base URL set for the CLI,
    /// else the vendor's host; `None` when ralph cannot tell.
    pub(crate) endpoint: fn(&AgentConfig, Lookup<'_>, ReadFile<'_>) -> Option<String>,
    /// The first signal of the escalation that ends it.
    pub(crate) stop_signal: Signal,
    /// It prints nothing while a tool runs, so its silence may be a build at work.
    pub(crate) quiet_tools: bool,
    /// It reports its cost while it runs, so the cost cap can end an attempt early.
    pub(crate) running_cost: bool,
    /// The parser of its stdout, given the tokens already counted for the session.
    pub(crate) parser: fn((u64, u64)) -> Box<dyn LineParser>,
    /// The exit code it ends with when `--resume` names a session it does not have.
    pub(crate) unknown_session_exit: Option<i32>,
}

impl Descriptor {
    /// The command that installs it.
    pub(crate) fn install(&self) -> String {
        format!("npm install -g {}", self.package)
    }

    /// The configured permission mode, or the kind's default.
    pub(crate) fn permission_mode<'a>(&self, cfg: &'a AgentConfig) -> &'a str {
        let default = self.kind.permission_modes().first().copied().unwrap_or_default();
        cfg.permission_mode.as_deref().unwrap_or(default)
    }
}

/// The `ralph mcp` command line for this attempt's control socket.
pub(crate) fn mcp_args(socket: &Path, attempt: u32) -> [String; 5] {
    ["mcp", "--socket", &socket.display().to_string(), "--attempt", &attempt.to_string()].map(str::to_string)
}

/// `FLAG VALUE` when the value is set (a model, a session to resume), else nothing.
pub(crate) fn flag(flag: &str, value: Option<&str>) -> impl Iterator<Item = String> {
    value.into_iter().flat_map(move |v| [flag.to_string(), v.to_string()])
}

/// The URL's `host:port` when one is set, else the vendor's.
pub(crate) fn url_or(url: Option<String>, vendor: &str) -> Option<String> {
    url.map_or_else(|| Some(vendor.to_string()), |url| host_port(&url))
}

/// `host:port` of a URL, the port defaulting by scheme. None for what is not a URL.
pub(crate) fn host_port(url: &str) -> Option<String> {
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

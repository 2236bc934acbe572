//! Finding the real agent CLIs installed by `tests/agents/install.sh`. A missing CLI
//! skips its tests with a loud message on a developer's machine and fails them under
//! CI (`CI=true`), where the install step must have run.

use std::path::PathBuf;

/// The pinned CLI `name`, if installed.
pub(crate) fn find(name: &str) -> Option<PathBuf> {
    let versions = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/versions.txt");
    let text = std::fs::read_to_string(versions).expect("tests/agents/versions.txt");
    let version = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&name))
        .and_then(|f| f.get(2).map(|v| v.to_string()))
        .unwrap_or_else(|| panic!("{name} is not in tests/agents/versions.txt"));
    let dir = std::env::var_os("RALPH_AGENTS_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache").join("ralph-agents")
    });
    let bin = dir.join(format!("{name}-{version}")).join("node_modules").join(".bin").join(name);
    if bin.exists() {
        return Some(bin);
    }
    let message = format!("{name} {version} is not installed at {}: run tests/agents/install.sh", bin.display());
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}");
    }
    eprintln!("\n*** SKIPPED: {message} ***\n");
    None
}

/// The venv python with the pinned MCP Python SDK, if installed.
pub(crate) fn python_mcp() -> Option<PathBuf> {
    let reqs = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/python-requirements.txt");
    let text = std::fs::read_to_string(reqs).expect("tests/agents/python-requirements.txt");
    let version = text.lines().find_map(|l| l.strip_prefix("mcp==")).expect("mcp is pinned").trim().to_string();
    let dir = std::env::var_os("RALPH_AGENTS_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache").join("ralph-agents")
    });
    let python = dir.join(format!("python-mcp-{version}")).join("bin").join("python");
    if python.exists() {
        return Some(python);
    }
    let message =
        format!("mcp {version} (Python) is not installed at {}: run tests/agents/install.sh", python.display());
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}");
    }
    eprintln!("\n*** SKIPPED: {message} ***\n");
    None
}

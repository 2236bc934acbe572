//! Which programs an agent starts, and the pre-flight of the agents a run uses:
//! one check shared by the run (before the first attempt) and `ralph doctor`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::{AgentConfig, AgentKind, Loaded};
use crate::process::preflight::check_program;

/// The programs `cfg` starts (`argv[0]` of its launch and of its resume); none for
/// the built-in scripted agent, which is ralph itself.
pub(crate) fn programs(cfg: &AgentConfig) -> Vec<PathBuf> {
    match cfg.kind {
        AgentKind::Sim => Vec::new(),
        AgentKind::Command => {
            let mut out: Vec<PathBuf> = Vec::new();
            for argv in [cfg.command.as_ref(), cfg.resume.as_ref()].into_iter().flatten() {
                if let Some(first) = argv.first().map(PathBuf::from)
                    && !out.contains(&first)
                {
                    out.push(first);
                }
            }
            out
        }
        kind => super::kinds::descriptor(kind)
            .map(|d| cfg.binary.clone().unwrap_or_else(|| d.binary.into()))
            .into_iter()
            .collect(),
    }
}

/// Checks every program of agent `name`; returns the resolved paths, or the
/// problem in a sentence that says what to fix.
pub(crate) fn check_agent(name: &str, cfg: &AgentConfig, cwd: &Path) -> Result<Vec<PathBuf>, String> {
    let path_var = cfg.env.get("PATH").map(std::ffi::OsString::from).or_else(|| std::env::var_os("PATH"));
    let key = if cfg.kind == AgentKind::Command { "command" } else { "binary" };
    // A CLI ralph knows is named with the command that installs it.
    let install = super::kinds::descriptor(cfg.kind)
        .map(|d| format!(" ({} installs {})", d.install(), d.product))
        .unwrap_or_default();
    programs(cfg)
        .iter()
        .map(|program| {
            check_program(program, path_var.as_deref(), cwd)
                .map_err(|e| format!("agent {name}: {e}; install it{install} or set [agents.{name}] {key}"))
        })
        .collect()
}

/// The problems of the agents in the chains of the configured phases, one line each.
pub(crate) fn check_used(loaded: &Loaded, cwd: &Path) -> Vec<String> {
    let used: BTreeSet<&str> = loaded.phases.iter().flat_map(|p| p.chain.iter().map(String::as_str)).collect();
    used.into_iter()
        .filter_map(|name| loaded.config.agents.get(name).map(|cfg| (name, cfg)))
        .filter_map(|(name, cfg)| check_agent(name, cfg, cwd).err())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_agents_a_chain_uses_are_checked_each_problem_in_a_sentence() {
        let source = r#"
[agents.used]
kind = "command"
command = ["/nonexistent/used-agent", "{prompt}"]
[agents.spare]
kind = "command"
command = ["/nonexistent/spare-agent", "{prompt}"]
[agents.sim]
kind = "sim"
[[agents.sim.script]]
steps = [{ done = "ok" }]
[chains]
main = ["used", "sim"]
[phases.p]
chain = "main"
"#;
        let loaded = crate::config::parse(Path::new("ralph.toml"), source).unwrap();
        let problems = check_used(&loaded, Path::new("/"));
        assert_eq!(problems.len(), 1, "the spare agent is not checked, the scripted one has no program: {problems:?}");
        assert!(problems[0].starts_with("agent used: "), "{problems:?}");
        assert!(problems[0].ends_with("or set [agents.used] command"), "{problems:?}");
    }
}

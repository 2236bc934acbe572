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
            let mut out: Vec<PathBuf> = [&cfg.command, &cfg.resume]
                .into_iter()
                .flatten()
                .filter_map(|argv| argv.first().map(PathBuf::from))
                .collect();
            // Two at most: the same program twice stands side by side.
            out.dedup();
            out
        }
        kind => super::kinds::descriptor(kind)
            .map(|d| cfg.binary.clone().unwrap_or_else(|| d.binary.into()))
            .into_iter()
            .collect(),
    }
}

/// What the registry entry of a run under `loaded` names of its agents (what a
/// resume by the watchdog needs): the credentials of the agents its phases use that
/// the environment `env` reads has set (their names, never their values), and the
/// programs those agents start; each sorted, once.
pub(crate) fn needs(loaded: &Loaded, env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> (Vec<String>, Vec<String>) {
    let used: BTreeSet<&String> = loaded.phases.iter().flat_map(|p| p.chain.iter()).collect();
    let agents: Vec<&crate::config::AgentConfig> =
        used.iter().filter_map(|name| loaded.config.agents.get(*name)).collect();
    let present = |name: &str| env(name).is_some_and(|v| !v.is_empty());
    let credential_names: BTreeSet<String> = agents
        .iter()
        .flat_map(|a| super::env::allowlist(a.kind).iter().map(|s| s.to_string()).chain(a.pass_env.iter().cloned()))
        .filter(|name| present(name))
        .collect();
    let programs: BTreeSet<String> = agents.iter().flat_map(|a| programs(a)).map(|p| p.display().to_string()).collect();
    (credential_names.into_iter().collect(), programs.into_iter().collect())
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

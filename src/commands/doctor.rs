//! `ralph doctor`: checks what a run needs before the user goes to sleep: the
//! config, the goal file, and for each configured agent its binary, version,
//! credentials (present or not, never their values) and whether its provider answers.

use std::path::Path;
use std::time::Duration;

use crate::agent::preflight;
use crate::agent::versions;
use crate::config::{self, AgentConfig, AgentKind};
use crate::error::RalphError;
use crate::process::{self, env};
use crate::recovery::probe::{self, ProbeResult};

/// One line of the report.
struct Check {
    ok: bool,
    what: String,
}

pub fn main(dir: &Path, config_path: Option<&Path>) -> Result<i32, RalphError> {
    let path = config::find(dir, config_path)?;
    let loaded = config::load(&path)?;
    let mut checks = vec![Check { ok: true, what: format!("config {} is valid", path.display()) }];
    let goal = dir.join(&loaded.config.general.prompt);
    checks.push(match std::fs::metadata(&goal) {
        Ok(_) => Check { ok: true, what: format!("goal file {}", goal.display()) },
        Err(e) => Check { ok: false, what: format!("goal file {}: {e}", goal.display()) },
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RalphError::io("cannot start the runtime", e))?;
    for (name, agent) in &loaded.config.agents {
        checks.extend(runtime.block_on(check_agent(name, agent, dir, &loaded.config.offline.timeout)));
    }
    let mut failed = 0;
    for check in &checks {
        println!("{} {}", if check.ok { "ok  " } else { "FAIL" }, check.what);
        failed += usize::from(!check.ok);
    }
    if failed == 0 {
        println!("everything a run needs is in place");
        Ok(crate::exit::DONE)
    } else {
        println!("{failed} problem(s): fix them before an unattended run");
        Ok(crate::exit::BLOCKED)
    }
}

async fn check_agent(name: &str, agent: &AgentConfig, dir: &Path, timeout: &Duration) -> Vec<Check> {
    let mut out = vec![environment(name, agent)];
    if agent.kind == AgentKind::Sim {
        out.push(Check { ok: true, what: format!("agent {name}: the built-in scripted agent") });
        return out;
    }
    // The same check the run does before its first attempt.
    let binary = match preflight::check_agent(name, agent, dir) {
        Ok(paths) => match paths.into_iter().next() {
            Some(path) => path,
            None => return out,
        },
        Err(problem) => {
            out.push(Check { ok: false, what: problem });
            return out;
        }
    };
    out.push(Check { ok: true, what: format!("agent {name}: {}", binary.display()) });
    if agent.kind != AgentKind::Command {
        out.push(version(name, agent.kind, &binary).await);
        out.push(credentials(name, agent));
        let agents = std::iter::once((name.to_string(), agent.clone())).collect();
        let env = |var: &str| std::env::var(var).ok();
        let read = |path: &Path| std::fs::read_to_string(path).ok();
        let endpoints = probe::default_endpoints(&agents, &env, &read);
        if !endpoints.is_empty() {
            out.push(match crate::run::connect::probe(&endpoints, *timeout).await {
                ProbeResult::Online => {
                    Check { ok: true, what: format!("agent {name}: provider {} answers", endpoints.join(", ")) }
                }
                ProbeResult::Offline { last_error } => Check {
                    ok: false,
                    what: format!("agent {name}: provider {} unreachable: {last_error}", endpoints.join(", ")),
                },
            });
        }
    }
    out
}

/// The installed version, compared with the one ralph was tested with: a CLI of
/// another version may have renamed a flag ralph passes.
async fn version(name: &str, kind: AgentKind, binary: &Path) -> Check {
    match process::version::installed(binary).await {
        Ok(text) => {
            let tested = versions::tested(kind);
            let what = match (versions::number(&text), tested) {
                (Some(have), Some(want)) if have == want => {
                    format!("agent {name}: version {have} (the version ralph was tested with)")
                }
                (have, Some(want)) => format!(
                    "agent {name}: version {} differs from {want}, the version ralph was tested with; \
                     if its launches fail with an unknown option, pin {want} or update ralph",
                    have.unwrap_or(text.as_str())
                ),
                (have, None) => format!("agent {name}: version {}", have.unwrap_or(text.as_str())),
            };
            Check { ok: true, what }
        }
        Err(e) => Check { ok: false, what: format!("agent {name}: {e}") },
    }
}

/// What the agent would get from ralph's environment and what not, by name only,
/// so that a person who needs `DATABASE_URL` in the agent's tests sees where to add it.
fn environment(name: &str, agent: &AgentConfig) -> Check {
    let extra = agent.env.iter().map(|(k, v)| (k.clone(), v.clone()));
    let built = env::build(std::env::vars(), agent.kind, &agent.pass_env, extra);
    let mut passed: Vec<&str> = built.vars.iter().map(|(k, _)| k.as_str()).collect();
    passed.sort_unstable();
    let withheld = if built.withheld.is_empty() {
        "nothing".to_string()
    } else {
        format!("{} (add names or globs to [agents.{name}] pass_env to pass them)", built.withheld.join(", "))
    };
    Check { ok: true, what: format!("agent {name}: environment gets {}; withholds {withheld}", passed.join(", ")) }
}

/// Which credential the agent would get, by name only.
fn credentials(name: &str, agent: &AgentConfig) -> Check {
    let present: Vec<&str> = env::allowlist(agent.kind)
        .iter()
        .copied()
        .filter(|var| agent.env.contains_key(*var) || std::env::var_os(var).is_some_and(|v| !v.is_empty()))
        .collect();
    let login = agent.kind == AgentKind::Claude
        && std::env::var_os("HOME").is_some_and(|h| Path::new(&h).join(".claude/.credentials.json").exists());
    match (present.is_empty(), login) {
        (false, _) => Check { ok: true, what: format!("agent {name}: credentials present ({})", present.join(", ")) },
        (true, true) => Check { ok: true, what: format!("agent {name}: credentials present (a Claude login)") },
        (true, false) => Check {
            ok: false,
            what: format!(
                "agent {name}: no credentials found (looked for {} and a CLI login)",
                env::allowlist(agent.kind).join(", ")
            ),
        },
    }
}

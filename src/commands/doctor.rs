//! `ralph doctor [--json]`: checks what a run needs before the user goes to sleep:
//! the config, the goal file (present and written), a writable `.agent/`, and for
//! each agent its binary (the run's own pre-flight), version, credentials (present
//! or not, never their values), environment and whether its provider answers.
//! Only agents a chain uses can fail the check; an unused one gets notes.

use std::path::Path;
use std::time::Duration;

use crate::agent::env;
use crate::agent::preflight;
use crate::agent::{kinds, versions};
use crate::config::{AgentConfig, AgentKind};
use crate::error::RalphError;
use crate::process;
use crate::recovery::probe::{self, ProbeResult};

/// One line of the report.
#[derive(Debug, serde::Serialize)]
struct Check {
    ok: bool,
    what: String,
    /// A finding that cannot stop a run (an agent no chain uses): shown, never failed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    note: bool,
}

impl Check {
    fn new(ok: bool, what: String) -> Self {
        Self { ok, what, note: false }
    }
}

pub(crate) fn main(dir: &Path, config_path: Option<&Path>, json: bool) -> Result<i32, RalphError> {
    let path = crate::config::file::find(dir, config_path)?;
    let loaded = crate::config::file::load(&path)?;
    let mut checks = vec![Check::new(true, format!("config {} is valid", path.display()))];
    let goal = dir.join(&loaded.config.general.prompt);
    checks.push(match std::fs::read_to_string(&goal) {
        Ok(text) => match crate::workflow::goal::check(&text) {
            None => Check::new(true, format!("goal file {}", goal.display())),
            Some(problem) => Check::new(false, format!("goal file {}: {}", goal.display(), problem.describe())),
        },
        Err(e) => Check::new(false, format!("goal file {}: {e}", goal.display())),
    });
    checks.push(state_dir(dir));
    checks.extend(secrets(dir, &loaded));
    let runtime = crate::process::runtime().map_err(|e| RalphError::io("cannot start the runtime", e))?;
    let used: std::collections::BTreeSet<&String> = loaded.phases.iter().flat_map(|p| p.chain.iter()).collect();
    for (name, agent) in &loaded.config.agents {
        let mut agent_checks = runtime.block_on(check_agent(name, agent, dir, &loaded.config.offline.timeout));
        if !used.contains(name) {
            // The shipped example defines agents for later use: not a failure.
            for check in &mut agent_checks {
                check.note = true;
                check.what = format!("{} (no chain uses it)", check.what);
            }
        }
        checks.extend(agent_checks);
    }
    let failed = checks.iter().filter(|c| !c.ok && !c.note).count();
    if json {
        let report = serde_json::json!({"ok": failed == 0, "problems": failed, "checks": checks});
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| RalphError::Internal(e.to_string()))?);
    } else {
        for check in &checks {
            let mark = match (check.ok, check.note) {
                (true, _) => "ok  ",
                (false, true) => "note",
                (false, false) => "FAIL",
            };
            println!("{mark} {}", check.what);
        }
        if failed == 0 {
            println!("everything a run needs is in place");
        } else {
            println!("{failed} problem(s): fix them before an unattended run");
        }
    }
    Ok(if failed == 0 { crate::exit::DONE } else { crate::exit::BLOCKED })
}

/// Files listed by name at most; the count says how many more.
const SECRETS_LISTED: usize = 20;

/// The secret rules' families, a credential in the goal or the config (a note), and
/// every file git would commit in the project that holds a match (names and lines,
/// never values): ralph's commits would leave each out.
fn secrets(dir: &Path, loaded: &crate::config::Loaded) -> Vec<Check> {
    let families = crate::secrets::families();
    let mut out = vec![Check::new(
        true,
        format!(
            "secrets: {} rules over {} families are redacted everywhere ralph writes: {}",
            crate::secrets::rules::RULES.len(),
            families.len(),
            families.join(", ")
        ),
    )];
    for warning in crate::inputs::credentials(dir, loaded) {
        out.push(Check { ok: false, what: warning.to_string().replace('\n', " "), note: true });
    }
    let crate::git::repo::Discovery::Repo(repo) = crate::git::repo::Repo::discover(dir) else {
        out.push(Check::new(true, "secrets: not in a git repository: no files to look at".to_string()));
        return out;
    };
    let top = std::fs::canonicalize(repo.top()).unwrap_or_else(|_| repo.top().to_path_buf());
    let under = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.strip_prefix(&top).ok().map(|r| r.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let files = match repo.committable(&under) {
        Ok(files) => files,
        Err(e) => {
            out.push(Check::new(false, format!("secrets: cannot list the project's files: {e}")));
            return out;
        }
    };
    let allow = &loaded.config.git.allow_secrets;
    let mut held = Vec::new();
    for file in &files {
        let path = top.join(file);
        let small = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= 64 << 20);
        let Some(found) = small
            .then(|| std::fs::read(&path).ok())
            .flatten()
            .and_then(|b| crate::secrets::found::in_bytes(&b).into_iter().next())
        else {
            continue;
        };
        if crate::git::plan::allowed(file, allow) {
            out.push(Check::new(true, format!("secrets: {file} ({found}) is let through by [git] allow_secrets")));
        } else {
            held.push(format!("{file} ({found})"));
        }
    }
    if held.is_empty() {
        out.push(Check::new(true, format!("secrets: none of the {} files git would commit holds one", files.len())));
        return out;
    }
    let count = held.len();
    let more = if count > SECRETS_LISTED { format!(" and {} more", count - SECRETS_LISTED) } else { String::new() };
    held.truncate(SECRETS_LISTED);
    out.push(Check::new(
        false,
        format!(
            "secrets: {} file(s) git would commit hold what looks like a secret: {}{more}; ralph's commits leave such \
             a file out: take the secret out, or name the file in [git] allow_secrets if it holds none",
            count,
            held.join(", ")
        ),
    ));
    out
}

/// Whether ralph can write its state: `.agent/` (or, before the first run, the
/// project directory that will hold it), tried with a temporary file.
fn state_dir(dir: &Path) -> Check {
    let agent_dir = dir.join(".agent");
    let place = if agent_dir.exists() { agent_dir } else { dir.to_path_buf() };
    if std::fs::symlink_metadata(&place).is_ok_and(|m| m.file_type().is_symlink()) {
        return Check::new(false, format!("{} is a symbolic link; ralph does not follow links", place.display()));
    }
    match tempfile::Builder::new().prefix(".tmp-doctor").tempfile_in(&place) {
        Ok(_) => Check::new(true, format!("{} is writable", place.display())),
        Err(e) => Check::new(false, format!("{} is not writable: {e}", place.display())),
    }
}

async fn check_agent(name: &str, agent: &AgentConfig, dir: &Path, timeout: &Duration) -> Vec<Check> {
    let mut out = vec![environment(name, agent)];
    if agent.kind == AgentKind::Sim {
        out.push(Check::new(true, format!("agent {name}: the built-in scripted agent")));
        return out;
    }
    // The same check the run does before its first attempt.
    let paths = match preflight::check_agent(name, agent, dir) {
        Ok(paths) => paths,
        Err(problem) => {
            out.push(Check::new(false, problem));
            return out;
        }
    };
    let Some(binary) = paths.into_iter().next() else { return out };
    out.push(Check::new(true, format!("agent {name}: {}", binary.display())));
    if agent.kind != AgentKind::Command {
        out.push(version(name, agent.kind, &binary).await);
        out.push(credentials(name, agent));
        let agents = std::iter::once((name.to_string(), agent.clone())).collect();
        let env = |var: &str| std::env::var(var).ok();
        let read = |path: &Path| std::fs::read_to_string(path).ok();
        let endpoints = probe::default_endpoints(&agents, &env, &read);
        if !endpoints.is_empty() {
            let provider = format!("agent {name}: provider {}", endpoints.join(", "));
            out.push(match crate::run::connect::probe(&endpoints, *timeout).await {
                ProbeResult::Online => Check::new(true, format!("{provider} answers")),
                ProbeResult::Offline { last_error } => {
                    Check::new(false, format!("{provider} unreachable: {last_error}"))
                }
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
            let tested = kinds::descriptor(kind).map(|d| d.tested_version);
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
            Check::new(true, what)
        }
        Err(e) => Check::new(false, format!("agent {name}: {e}")),
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
    Check::new(true, format!("agent {name}: environment gets {}; withholds {withheld}", passed.join(", ")))
}

/// Which credential the agent would get, by name only.
fn credentials(name: &str, agent: &AgentConfig) -> Check {
    let present: Vec<&str> = env::allowlist(agent.kind)
        .iter()
        .copied()
        .filter(|var| agent.env.contains_key(*var) || std::env::var_os(var).is_some_and(|v| !v.is_empty()))
        .collect();
    let login = kinds::descriptor(agent.kind)
        .and_then(|d| d.login)
        .filter(|(file, _)| std::env::var_os("HOME").is_some_and(|h| Path::new(&h).join(file).exists()));
    let looked_for = env::allowlist(agent.kind).join(", ");
    match (present.is_empty(), login) {
        (false, _) => Check::new(true, format!("agent {name}: credentials present ({})", present.join(", "))),
        (true, Some((_, login))) => Check::new(true, format!("agent {name}: credentials present ({login})")),
        (true, None) => {
            Check::new(false, format!("agent {name}: no credentials found (looked for {looked_for} and a CLI login)"))
        }
    }
}

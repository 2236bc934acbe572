//! Semantic validation: chains bound to known agents, caps above zero, per-kind keys.
//!
//! Runs after serde has checked the shape, so every check here is about values. Each
//! error points at the key that caused it (via [`Spans`]) and says how to fix it.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::locate::{Dotted, KeyPath, Seg, Spans, keys};
use super::shape::Dropped;
use super::suggest::{did_you_mean, did_you_mean_or_list, one_of};
use super::types::{ByteSize, DEFAULT_ITERATIONS, GitConfig};
use super::{AgentConfig, AgentKind, Config, ConfigError, DoneSignal, Loaded, Phase, RepeatGroup, SimStep};

/// Parses and validates `source`; `path` is used in messages.
pub(crate) fn parse(path: &Path, source: &str) -> Result<Loaded, ConfigError> {
    let spans = Spans::new(source);
    let mut errors = Vec::new();
    let Some((config, dropped)) = super::shape::deserialize(path, source, &spans, &mut errors) else {
        return Err(all(path, errors));
    };
    let cx = Cx { path, spans: &spans, dropped: &dropped, errors: RefCell::new(errors) };
    check_names(&cx, &config);
    check_limits(&cx, &config);
    for (name, agent) in &config.agents {
        check_agent(&cx, name, agent);
    }
    check_chains(&cx, &config);
    check_git(&cx, &config);
    check_fleet(&cx, &config);
    let (order, phases) = resolve_phases(&cx, &config);
    let repeat = resolve_repeat(&cx, &config, &order);
    let errors = cx.errors.into_inner();
    if !errors.is_empty() {
        return Err(all(path, errors));
    }
    Ok(Loaded {
        path: path.to_path_buf(),
        config,
        phases,
        repeat: repeat.flatten(),
        checksum: checksum(source.as_bytes()),
    })
}

/// Every error of the file as one, in file order (the ones without a place last),
/// at most [`super::shape::MAX_ERRORS`].
fn all(path: &Path, mut errors: Vec<ConfigError>) -> ConfigError {
    let place = |e: &ConfigError| match e {
        ConfigError::At { line, column, .. } => (*line, *column),
        _ => (usize::MAX, 0),
    };
    errors.sort_by_key(place);
    errors.dedup_by(|a, b| a.to_string() == b.to_string());
    let more = errors.len().saturating_sub(super::shape::MAX_ERRORS);
    errors.truncate(super::shape::MAX_ERRORS);
    if errors.len() == 1 && more == 0 {
        return errors.remove(0);
    }
    ConfigError::Several { path: path.to_path_buf(), errors, more }
}

/// sha256 of the bytes, lowercase hex.
pub(crate) fn checksum(source: &[u8]) -> String {
    Sha256::digest(source).iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
pub(super) fn checksum_for_tests(source: &str) -> String {
    checksum(source.as_bytes())
}

/// What the checks share: where the file is, what the shape pass dropped, and the
/// errors found so far (each check reports every error it finds and goes on).
struct Cx<'a> {
    path: &'a Path,
    spans: &'a Spans<'a>,
    dropped: &'a Dropped,
    errors: RefCell<Vec<ConfigError>>,
}

impl Cx<'_> {
    /// Reports the error at `key`, given its message.
    fn at(&self, key: &[Seg]) -> impl FnOnce(String) + '_ {
        let (line, column) = self.spans.line_col(key);
        let path = self.path.to_path_buf();
        move |message| self.errors.borrow_mut().push(ConfigError::At { path, line, column, message })
    }
}

/// Reports the error of `cx.at(key)`, its message formatted like `format!`; the
/// check goes on.
macro_rules! fail {
    ($at:expr, $($message:tt)+) => {
        $at(format!($($message)+))
    };
}

/// Names end up in logs, the checkpoint and file names, so keep them plain.
fn check_names(cx: &Cx<'_>, config: &Config) {
    let tables = [
        ("agents", config.agents.keys().collect::<Vec<_>>()),
        ("chains", config.chains.keys().collect()),
        ("phases", config.phases.keys().collect()),
    ];
    for (table, names) in tables {
        for name in names {
            let plain =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !plain {
                fail!(
                    cx.at(&keys![table, name]),
                    "[{table}] name {name:?} is not allowed; use letters, digits, `-`, `_` and `.`"
                );
            }
        }
    }
}

/// Every duration is above 0, and the backoff's base is not above its maximum.
fn check_durations(cx: &Cx<'_>, config: &Config) {
    let (g, r, t, o) = (&config.general, &config.retry, &config.timeouts, &config.offline);
    let mut durations = vec![
        (keys!["retry", "backoff_base"], r.backoff_base),
        (keys!["retry", "backoff_max"], r.backoff_max),
        (keys!["retry", "max_rate_limit_wait"], r.max_rate_limit_wait),
        (keys!["retry", "storm_window"], r.storm_window),
        (keys!["retry", "max_environmental_wait"], r.max_environmental_wait),
        (keys!["timeouts", "stall"], t.stall),
        (keys!["timeouts", "tool"], t.tool),
        (keys!["timeouts", "attempt"], t.attempt),
        (keys!["timeouts", "grace"], t.grace),
        (keys!["offline", "interval"], o.interval),
        (keys!["offline", "timeout"], o.timeout),
        (keys!["watch", "restart_backoff"], config.watch.restart_backoff),
        (keys!["watch", "lease_timeout"], config.watch.lease_timeout),
        (keys!["watch", "max_age"], config.watch.max_age),
        (keys!["notify", "timeout"], config.notify.timeout),
    ];
    if let Some(max) = g.max_runtime {
        durations.push((keys!["general", "max_runtime"], max));
    }
    for (key, value) in durations {
        if value.is_zero() {
            let hint = if key[1] == Seg::from("max_runtime") { "; remove the key for no limit" } else { "" };
            fail!(cx.at(&key), "{} must be longer than 0, like \"5m\" or \"30s\"{hint}", KeyPath(&key));
        }
    }
    if r.backoff_base > r.backoff_max {
        fail!(
            cx.at(&keys!["retry", "backoff_base"]),
            "[retry] backoff_base ({}) is longer than backoff_max ({}); backoff_base must be ≤ backoff_max",
            human(r.backoff_base),
            human(r.backoff_max)
        );
    }
}

fn check_limits(cx: &Cx<'_>, config: &Config) {
    let g = &config.general;
    let r = &config.retry;
    if g.prompt.as_os_str().is_empty() {
        fail!(
            cx.at(&keys!["general", "prompt"]),
            "[general] prompt is empty; name the goal file, e.g. prompt = \"PROMPT.md\""
        );
    }
    // The defaults the messages name are the `Default` impls', never a copy.
    let d = Config::default();
    let caps = [
        (keys!["general", "max_cycles"], g.max_cycles, d.general.max_cycles),
        (keys!["retry", "agent_attempts"], r.agent_attempts, d.retry.agent_attempts),
        (keys!["retry", "ambiguous_attempts"], r.ambiguous_attempts, d.retry.ambiguous_attempts),
        (keys!["retry", "tool_registry_resets"], r.tool_registry_resets, d.retry.tool_registry_resets),
        (keys!["retry", "mcp_restarts"], r.mcp_restarts, d.retry.mcp_restarts),
        (keys!["retry", "storm_recoveries"], r.storm_recoveries, d.retry.storm_recoveries),
        (keys!["watch", "max_restarts"], config.watch.max_restarts, d.watch.max_restarts),
        (keys!["watch", "max_resumes_per_boot"], config.watch.max_resumes_per_boot, d.watch.max_resumes_per_boot),
        (keys!["logs", "keep_runs"], config.logs.keep_runs, d.logs.keep_runs),
        (keys!["git", "title_chars"], config.git.title_chars, d.git.title_chars),
        (keys!["git", "body_lines"], config.git.body_lines, d.git.body_lines),
        (keys!["git", "body_chars"], config.git.body_chars, d.git.body_chars),
        (keys!["fleet", "max_parallel"], config.fleet.max_parallel, d.fleet.max_parallel),
    ];
    for (key, value, default) in caps {
        if value == 0 {
            fail!(cx.at(&key), "{} must be at least 1, not 0 (default {default})", KeyPath(&key));
        }
    }
    let (w, dw) = (&g.workflow, &d.general.workflow);
    let bounds = [
        (keys!["general", "workflow", "artifact_lines"], w.artifact_lines, dw.artifact_lines),
        (keys!["general", "workflow", "artifact_chars"], w.artifact_chars, dw.artifact_chars),
    ];
    for (key, value, default) in bounds {
        if value == 0 {
            fail!(cx.at(&key), "{} must be at least 1, not 0 (default {default})", KeyPath(&key));
        }
    }
    if let Some(cost) = g.max_cost_usd.filter(|c| !(c.is_finite() && *c > 0.0)) {
        fail!(
            cx.at(&keys!["general", "max_cost_usd"]),
            "[general] max_cost_usd must be a number of dollars above 0, not {cost}; remove the key for no limit"
        );
    }
    let max_log = config.logs.max_attempt_log;
    if max_log < super::types::MIN_ATTEMPT_LOG {
        fail!(
            cx.at(&keys!["logs", "max_attempt_log"]),
            "[logs] max_attempt_log must be at least {}, not {max_log} bytes",
            ByteSize(super::types::MIN_ATTEMPT_LOG)
        );
    }
    check_durations(cx, config);
    if config.notify.command.as_ref().is_some_and(|c| c.first().is_none_or(|p| p.trim().is_empty())) {
        fail!(
            cx.at(&keys!["notify", "command"]),
            "[notify] command is empty; give the program and its arguments, like [\"notify-send\", \"ralph\"]"
        );
    }
    for (i, name) in config.watch.service_managers.iter().enumerate() {
        if name.trim().is_empty() || name.contains('/') {
            fail!(
                cx.at(&keys!["watch", "service_managers", i]),
                "[watch] service_managers {name:?} is not a program name; give the name `/proc/PID/comm` shows, \
                 like \"my-supervisor\""
            );
        }
    }
    for (i, probe) in config.offline.probe.iter().flatten().enumerate() {
        let port_ok = probe
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
        if !port_ok {
            fail!(
                cx.at(&keys!["offline", "probe", i]),
                "[offline] probe {probe:?} is not host:port, like \"api.anthropic.com:443\""
            );
        }
    }
}

fn check_git(cx: &Cx<'_>, config: &Config) {
    let g = &config.git;
    if let Some(branch) = &g.branch
        && let Err(problem) = super::check_branch(branch)
    {
        fail!(cx.at(&keys!["git", "branch"]), "[git] branch {branch:?} {problem}");
    }
    for (key, value) in [("author", &g.author), ("committer", &g.committer)] {
        if let Some(text) = value
            && super::Identity::parse(text).is_none()
        {
            fail!(
                cx.at(&keys!["git", key]),
                "[git] {key} {text:?} is not \"Name <email>\", like \"Ralph <ralph@example.com>\""
            );
        }
    }
    if g.max_new_file.0 == 0 {
        fail!(
            cx.at(&keys!["git", "max_new_file"]),
            "[git] max_new_file must be more than 0 (default \"{}\")",
            GitConfig::default().max_new_file
        );
    }
    if g.message.trim().is_empty() {
        fail!(cx.at(&keys!["git", "message"]), "[git] message is empty; leave it out for the default");
    }
}

/// `[fleet]`: a task glob inside the repository, a branch name for `into`, a cost
/// cap above 0. What needs the repository (the branch checked out somewhere, the
/// worktrees' place) is checked when the fleet starts.
fn check_fleet(cx: &Cx<'_>, config: &Config) {
    let f = &config.fleet;
    let tasks = Path::new(&f.tasks);
    let escapes = tasks.components().any(|c| matches!(c, std::path::Component::ParentDir));
    if f.tasks.trim().is_empty() || tasks.is_absolute() || escapes || !f.tasks.ends_with(".md") {
        fail!(
            cx.at(&keys!["fleet", "tasks"]),
            "[fleet] tasks {:?} must be a glob of Markdown files inside the repository, like \"tasks/*.md\"",
            f.tasks
        );
    }
    if let Err(problem) = crate::config::check_branch(&f.into) {
        fail!(cx.at(&keys!["fleet", "into"]), "[fleet] into {:?} {problem}", f.into);
    }
    if let Some(super::types::MaxCost::Usd(cost)) = f.max_cost
        && !(cost.is_finite() && cost > 0.0)
    {
        fail!(
            cx.at(&keys!["fleet", "max_cost"]),
            "[fleet] max_cost must be a number of dollars above 0, not {cost}; or \"none\" for no cap"
        );
    }
    if f.check.as_ref().is_some_and(|c| c.first().is_none_or(|p| p.trim().is_empty())) {
        fail!(
            cx.at(&keys!["fleet", "check"]),
            "[fleet] check is empty; give the program and its arguments, like [\"cargo\", \"test\"], or leave it out"
        );
    }
    if f.check_timeout.is_zero() {
        fail!(cx.at(&keys!["fleet", "check_timeout"]), "[fleet] check_timeout must be longer than 0, like \"30m\"");
    }
    for (glob, argv) in &f.regenerate {
        if glob.trim().is_empty() || argv.first().is_none_or(|p| p.trim().is_empty()) {
            fail!(
                cx.at(&keys!["fleet", "regenerate", glob]),
                "[fleet] regenerate {glob:?} needs a file glob and a command, like \"Cargo.lock\" = [\"cargo\", \
                 \"generate-lockfile\"]"
            );
        }
    }
    if f.worktrees.as_ref().is_some_and(|w| w.as_os_str().is_empty()) {
        fail!(cx.at(&keys!["fleet", "worktrees"]), "[fleet] worktrees is empty; leave it out for the default");
    }
}

fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// `kind = "claude", "codex", … or "gemini"`: the CLI kinds.
fn cli_kinds() -> String {
    let list = AgentKind::CLI.map(|k| format!("\"{k}\"")).join(", ");
    match list.rsplit_once(", ") {
        Some((rest, last)) => format!("kind = {rest} or {last}"),
        None => format!("kind = {list}"),
    }
}

/// Which kinds a per-kind key belongs to, for "only applies to" hints; the CLI
/// kinds' keys are not listed.
const KEY_KINDS: [(&str, &str); 4] = [
    ("command", "kind = \"command\""),
    ("resume", "kind = \"command\""),
    ("output", "kind = \"command\""),
    ("errors", "kind = \"command\" (and \"sim\")"),
];

fn check_agent(cx: &Cx<'_>, name: &str, agent: &AgentConfig) {
    let kind = agent.kind.into_str();
    let here = |key: &str| keys!["agents", name, key];
    let set = [
        ("model", agent.model.is_some()),
        ("binary", agent.binary.is_some()),
        ("command", agent.command.is_some()),
        ("resume", agent.resume.is_some()),
        ("output", agent.output.is_some()),
        ("script", !agent.script.is_empty()),
        ("permission_mode", agent.permission_mode.is_some()),
        ("errors", !agent.errors.is_empty()),
    ];
    let forbidden: &[&str] = match agent.kind {
        AgentKind::Command => &["script", "model", "binary", "permission_mode"],
        AgentKind::Sim => &["command", "resume", "output", "binary", "model", "permission_mode"],
        // The CLI kinds' wordings are ralph's own table.
        _ => &["command", "resume", "output", "script", "errors"],
    };
    for (key, present) in set {
        if present && forbidden.contains(&key) {
            let belongs = match KEY_KINDS.iter().find(|(k, _)| *k == key) {
                Some((_, owner)) => owner.to_string(),
                None if ["model", "binary", "permission_mode"].contains(&key) => cli_kinds(),
                None => "kind = \"sim\"".to_string(),
            };
            fail!(
                cx.at(&here(key)),
                "[agents.{name}] {key} is not allowed for kind = \"{kind}\"; it only applies to {belongs}"
            );
        }
    }
    match agent.kind {
        AgentKind::Command => check_command(cx, name, agent),
        AgentKind::Sim => check_sim(cx, name, agent),
        _ => {}
    }
    if let Some(mode) = &agent.permission_mode {
        let allowed = agent.kind.permission_modes();
        if !allowed.contains(&mode.as_str()) {
            let list = allowed.iter().map(|m| format!("\"{m}\"")).collect::<Vec<_>>().join(", ");
            fail!(
                cx.at(&here("permission_mode")),
                "[agents.{name}] permission_mode = \"{mode}\" is not a mode of kind = \"{kind}\"; \
                 allowed: {list} (default \"{}\")",
                allowed.first().copied().unwrap_or_default()
            );
        }
    }
    for (i, e) in agent.errors.iter().enumerate() {
        if let Err(err) = regex::Regex::new(&e.pattern) {
            let detail = err.to_string().lines().last().unwrap_or_default().trim().to_string();
            fail!(
                cx.at(&keys!["agents", name, "errors", i, "pattern"]),
                "[agents.{name}] errors pattern {:?} is not a regular expression ({detail}); \
                 see docs/configuration.md for the syntax",
                e.pattern
            );
        }
    }
    for var in agent.env.keys() {
        check_env_name(cx, &keys!["agents", name, "env", var.as_str()], var);
    }
    for (i, var) in agent.pass_env.iter().enumerate() {
        check_env_name(cx, &keys!["agents", name, "pass_env", i], var);
    }
}

fn check_env_name(cx: &Cx<'_>, key: &[Seg], var: &str) {
    if var.is_empty() || var.contains(['=', '\0']) {
        fail!(cx.at(key), "{}: {var:?} is not an environment variable name", KeyPath(key));
    }
}

fn check_command(cx: &Cx<'_>, name: &str, agent: &AgentConfig) {
    let argv = agent.command.as_deref().unwrap_or_default();
    if argv.first().is_none_or(|p| p.is_empty()) {
        // Without the key there is nothing to point at but the agent's header.
        let key = keys!["agents", name, "command"];
        let key = if agent.command.is_some() { &key[..] } else { &key[..2] };
        fail!(
            cx.at(key),
            "[agents.{name}] command is required for kind = \"command\": the program and its arguments, with \
             {{prompt}} where the prompt goes, e.g. command = [\"./my-agent\", \"--prompt\", \"{{prompt}}\"]"
        );
        return;
    }
    if !argv.iter().any(|a| a.contains("{prompt}") || a.contains("{prompt_file}")) {
        fail!(
            cx.at(&keys!["agents", name, "command"]),
            "[agents.{name}] command has no {{prompt}}; put {{prompt}} in the argument \
             where the prompt text goes, e.g. [\"{}\", \"--prompt\", \"{{prompt}}\"], \
             or {{prompt_file}} where a file holding it goes (no length limit)",
            argv[0]
        );
    }
    if let Some(resume) = &agent.resume
        && (resume.first().is_none_or(|p| p.is_empty()) || !resume.iter().any(|a| a.contains("{session}")))
    {
        fail!(
            cx.at(&keys!["agents", name, "resume"]),
            "[agents.{name}] resume must be a program and arguments with {{session}} \
             where the session id goes, e.g. [\"{}\", \"--resume\", \"{{session}}\", \
             \"--prompt\", \"{{prompt}}\"]; remove it if the agent cannot resume",
            argv[0]
        );
    }
}

const SIGNALS_CRASH: [&str; 4] = ["SIGSEGV", "SIGABRT", "SIGKILL", "SIGTERM"];
const SIGNALS_IGNORE: [&str; 3] = ["SIGINT", "SIGTERM", "SIGHUP"];

fn check_sim(cx: &Cx<'_>, name: &str, agent: &AgentConfig) {
    if agent.script.is_empty() {
        fail!(
            cx.at(&keys!["agents", name]),
            "[agents.{name}] kind = \"sim\" needs a script: add \
             [[agents.{name}.script]] with steps = [{{ say = \"hello\" }}, {{ done = \"ok\" }}]"
        );
    }
    for (i, script) in agent.script.iter().enumerate() {
        for (j, step) in script.steps.iter().enumerate() {
            let key = keys!["agents", name, "script", i, "steps", j];
            let bad = match step {
                SimStep::Crash(sig) if !sig.is_empty() && !SIGNALS_CRASH.contains(&sig.as_str()) => {
                    Some(("crash", sig, &SIGNALS_CRASH[..]))
                }
                SimStep::Ignore(sigs) => sigs
                    .iter()
                    .find(|s| !SIGNALS_IGNORE.contains(&s.as_str()))
                    .map(|s| ("ignore", s, &SIGNALS_IGNORE[..])),
                _ => None,
            };
            if let Some((step, sig, allowed)) = bad {
                fail!(
                    cx.at(&key),
                    "{}: {step} signal {sig:?} is not supported (allowed: {}){}",
                    Dotted(&key),
                    one_of(allowed),
                    did_you_mean(sig, allowed.iter().copied())
                );
            }
        }
    }
}

fn check_chains(cx: &Cx<'_>, config: &Config) {
    let agents: Vec<&str> = config.agents.keys().map(String::as_str).collect();
    for (chain, members) in &config.chains {
        if members.is_empty() {
            fail!(
                cx.at(&keys!["chains", chain]),
                "[chains] {chain} is empty; list the agents to fall over through, from [agents]: {}",
                one_of(&agents)
            );
        }
        for (i, member) in members.iter().enumerate() {
            // An agent whose table had a mistake of its own is reported there.
            if !config.agents.contains_key(member) && !cx.dropped.has("agents", member) {
                fail!(
                    cx.at(&keys!["chains", chain, i]),
                    "[chains] {chain} names agent `{member}`, which is not defined in [agents] (defined: {}){}",
                    one_of(&agents),
                    did_you_mean(member, agents.iter().copied())
                );
            }
        }
    }
}

/// The phases in run order as configured, and those of them that resolve.
fn resolve_phases(cx: &Cx<'_>, config: &Config) -> (Vec<String>, Vec<Phase>) {
    let defined: Vec<&str> = config.phases.keys().map(String::as_str).collect();
    let listed = &config.general.workflow.phases;
    let order: Vec<String> = if listed.is_empty() {
        let mut order = cx.spans.keys_in_file_order(&keys!["phases"]);
        order.retain(|p| config.phases.contains_key(p));
        order
    } else {
        let mut seen = BTreeSet::new();
        for (i, name) in listed.iter().enumerate() {
            let key = keys!["general", "workflow", "phases", i];
            if !config.phases.contains_key(name) && !cx.dropped.has("phases", name) {
                fail!(
                    cx.at(&key),
                    "[general.workflow] phases lists `{name}`, which has no [phases.{name}] table (defined: {}){}",
                    one_of(&defined),
                    did_you_mean(name, defined.iter().copied())
                );
            }
            if !seen.insert(name) {
                fail!(
                    cx.at(&key),
                    "[general.workflow] phases lists `{name}` twice; to run a phase more \
                     than once, set iterations in [phases.{name}]"
                );
            }
        }
        if let Some(extra) = defined.iter().find(|p| !seen.contains(&p.to_string())) {
            fail!(
                cx.at(&keys!["phases", *extra]),
                "phase {extra} is defined but not listed in [general.workflow] phases; \
                 add it to the list where it should run, or remove [phases.{extra}]"
            );
        }
        listed.iter().filter(|name| config.phases.contains_key(*name)).cloned().collect()
    };
    if order.is_empty() && !cx.dropped.any("phases") {
        cx.errors.borrow_mut().push(ConfigError::File {
            path: cx.path.to_path_buf(),
            message: "no phases defined; add at least one [phases.NAME] table with \
                chain = \"NAME\" (see `ralph init --example`)"
                .into(),
        });
    }
    let phases = order.iter().filter_map(|name| resolve_phase(cx, config, name)).collect();
    (order, phases)
}

fn resolve_phase(cx: &Cx<'_>, config: &Config, name: &str) -> Option<Phase> {
    let p = config.phases.get(name)?;
    let chain_names: Vec<&str> = config.chains.keys().map(String::as_str).collect();
    let chain = config.chains.get(&p.chain);
    if chain.is_none() && !cx.dropped.has("chains", &p.chain) {
        fail!(
            cx.at(&keys!["phases", name, "chain"]),
            "phase {name} uses chain `{}`, which is not defined in [chains]{}",
            p.chain,
            did_you_mean_or_list(&p.chain, &chain_names, "defined")
        );
    }
    if p.iterations == Some(0) {
        fail!(
            cx.at(&keys!["phases", name, "iterations"]),
            "[phases.{name}] iterations must be at least 1, not 0 (default {DEFAULT_ITERATIONS})"
        );
    }
    let done = match p.done.as_deref().map(parse_done) {
        None => DoneSignal::Tag,
        Some(Ok(done)) => done,
        Some(Err(m)) => {
            fail!(cx.at(&keys!["phases", name, "done"]), "[phases.{name}] done: {m}");
            DoneSignal::Tag
        }
    };
    let chain = chain?;
    if done == DoneSignal::Mcp
        && let Some(agent) = chain.iter().find(|a| config.agents.get(*a).is_some_and(|c| !c.mcp))
    {
        fail!(
            cx.at(&keys!["phases", name, "done"]),
            "[phases.{name}] done = \"mcp\" needs every agent of chain {} to reach `ralph mcp`, but agent \
             {agent} (mcp = false) does not (see docs/mcp.md); use \"tag\", or turn mcp on",
            p.chain
        );
    }
    Some(Phase {
        name: name.to_owned(),
        chain_name: p.chain.clone(),
        chain: chain.clone(),
        iterations: p.iterations.unwrap_or(DEFAULT_ITERATIONS),
        until_complete: p.until.is_some(),
        done,
        prompt: p.prompt.clone(),
    })
}

/// `[general.workflow] repeat`: known phases, each once, consecutive in `order` (the
/// phases in run order). `Some(None)`: no repeat; `None`: a mistake, reported.
fn resolve_repeat(cx: &Cx<'_>, config: &Config, order: &[String]) -> Option<Option<RepeatGroup>> {
    let Some(repeat) = &config.general.workflow.repeat else { return Some(None) };
    let here = |key: &str| keys!["general", "workflow", "repeat", key];
    let order: Vec<&str> = order.iter().map(String::as_str).collect();
    if repeat.passes == 0 {
        fail!(
            cx.at(&here("passes")),
            "[general.workflow] repeat passes must be at least 1, not 0 (1 runs the group once)"
        );
    }
    let Some(first_name) = repeat.phases.first() else {
        fail!(
            cx.at(&here("phases")),
            "[general.workflow] repeat phases is empty; list the consecutive phases to repeat, \
             the review first, e.g. phases = [\"review\", \"fix\"] (the order: {})",
            one_of(&order)
        );
        return None;
    };
    let mut indices = Vec::with_capacity(repeat.phases.len());
    for (i, name) in repeat.phases.iter().enumerate() {
        let key = keys!["general", "workflow", "repeat", "phases", i];
        let Some(index) = order.iter().position(|p| p == name) else {
            if !cx.dropped.has("phases", name) {
                fail!(
                    cx.at(&key),
                    "[general.workflow] repeat lists phase `{name}`, which is not in the workflow{}",
                    did_you_mean_or_list(name, &order, "the phases")
                );
            }
            return None;
        };
        if let Some(&previous) = indices.last()
            && index != previous + 1
        {
            fail!(
                cx.at(&key),
                "[general.workflow] repeat phases must be consecutive phases in workflow order \
                 (the order: {}); `{name}` does not follow `{}`",
                one_of(&order),
                order[previous]
            );
            return None;
        }
        indices.push(index);
    }
    let first = order.iter().position(|p| p == first_name).unwrap_or(0);
    let last = indices.last().copied().unwrap_or(first);
    (repeat.passes > 0).then_some(Some(RepeatGroup { first, last, passes: repeat.passes }))
}

fn parse_done(done: &str) -> Result<DoneSignal, String> {
    match done {
        "tag" => Ok(DoneSignal::Tag),
        "exit0" => Ok(DoneSignal::Exit0),
        "mcp" => Ok(DoneSignal::Mcp),
        _ => match done.strip_prefix("file:") {
            Some(file) if !file.trim().is_empty() => Ok(DoneSignal::File(PathBuf::from(file))),
            Some(_) => Err("done = \"file:\" needs a path, like \"file:PLAN.md\"".into()),
            None => Err(format!(
                "{done:?} is not a done signal (allowed: \"tag\" (default), \"exit0\" or \"file:PATH\"){}",
                did_you_mean(done, ["tag", "exit0"])
            )),
        },
    }
}

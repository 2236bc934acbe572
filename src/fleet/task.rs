//! What changes inside one run when it is a fleet task: the hooks `src/run/` calls,
//! each a no-op for a plain run.
//!
//! **The one mechanism that makes a run a task** is its worktree's descriptor,
//! `.agent/fleet-task.json`, written by the supervisor before it starts the task's
//! ralph as an ordinary run (`ralph --resume-or-start -C <worktree> -c <config>`):
//! the fleet, the task, its file (the goal), the main checkout (where the config's
//! relative paths resolve) and the cost the task may spend. The supervisor also sets
//! `RALPH_FLEET_TASK=<name>` and `RALPH_FLEET_SUPERVISOR=<its pid>` for it; the
//! first reaches the agent and everything it starts, the second does not.
//!
//! The hooks. What the run does about them is decided by its step (`crate::step`,
//! which knows the run is a task by `Setting::task`); this file carries them out:
//! * [`join`] (set-up): who may run here. A ralph in a task's worktree must be the
//!   one its supervisor started (a person's `ralph` there, a second copy, is
//!   refused); a ralph whose environment says it runs inside a task's agent may
//!   start nothing, neither a run nor a fleet (no recursion). Exit 2.
//! * [`adapt`] (reading the config): the goal is the task file, the phases'
//!   templates and the agents' relative programs resolve in the main checkout,
//!   `[git] branch` does not apply, the cost cap is the task's share.
//! * [`reopen`] (the checkpoint is read): the merge queue's eviction, which
//!   `step::start::reopen` turns into one more iteration of the completed run.
//! * the descriptor's `tasks_glob` (git set-up, `git::session::open`): the task files
//!   are never committed; an unfinished rebase or merge is aborted.
//! * [`registry_mark`] (the registry entry): the run belongs to its supervisor.
//! * [`TaskRun::open_window`] / [`TaskRun::close_window`] (`step::effect::Fleet`: an
//!   attempt starts / an iteration is done, before its commit): the isolation check
//!   (`isolation`).
//! * the shared rate-limit resets ([`carry_out`] of `step::effect::Fleet`: before an
//!   attempt / a rate-limit wait starts): a reset learned by one task holds for every
//!   task using that provider (`limits/<provider>.json`).
//! * the commit message's `Ralph-Task: <name>` trailer (`step::git::pending`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{AgentConfig, Loaded};
use crate::error::RalphError;
use crate::events::RunEvent;
use crate::git::plan::Exempt;
use crate::git::repo::Repo;
use crate::state::registry::{FleetMark, FleetRole};
use crate::step::Input;
use crate::step::effect::Fleet;
use crate::step::input::SharedReset;

use super::isolation::{self, Span, Verdict, Window};
use super::paths::Paths;

/// The task's name, in the environment of its ralph and everything below it.
pub(crate) const ENV_TASK: &str = "RALPH_FLEET_TASK";
/// The supervisor's pid, in the environment of the task's ralph only.
pub(crate) const ENV_SUPERVISOR: &str = "RALPH_FLEET_SUPERVISOR";

/// The descriptor's format version.
const VERSION: u32 = 1;

/// `.agent/fleet-task.json` in a task's worktree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Descriptor {
    pub version: u32,
    pub fleet_id: String,
    pub task: String,
    /// The main checkout's top.
    pub repo: PathBuf,
    /// The task file (absolute): the run's goal.
    pub file: PathBuf,
    /// The config every task uses (absolute).
    pub config: PathBuf,
    /// `ralph/<name>`.
    pub branch: String,
    /// `[fleet] tasks`, relative to the top.
    pub tasks_glob: String,
    /// ralph's own files of the main checkout, relative to its top (the config, the
    /// goal): left out of the isolation check.
    #[serde(default)]
    pub own_files: Vec<String>,
    /// The most this task's run may cost: `[general] max_cost_usd` or what is left
    /// of `[fleet] max_cost`, whichever is lower.
    pub max_cost_usd: Option<f64>,
    /// The merge queue sent the task back: its completed run takes one more
    /// iteration with this in its prompt ([`reopen`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction: Option<super::state::Eviction>,
}

impl Descriptor {
    pub(crate) fn new(fleet_id: &str, task: &str, repo: &Path, file: PathBuf, config: PathBuf) -> Descriptor {
        Descriptor {
            version: VERSION,
            fleet_id: fleet_id.to_string(),
            task: task.to_string(),
            repo: repo.to_path_buf(),
            file,
            config,
            branch: super::names::branch_of(task),
            ..Descriptor::default()
        }
    }

    fn paths(&self) -> Paths {
        Paths::new(&self.repo)
    }
}

/// The descriptor in `dir`'s `.agent/`, if it is a task's worktree (one that does not
/// parse reads as none: the supervisor rewrites it before every start).
pub(crate) fn read_descriptor(dir: &Path) -> Option<Descriptor> {
    let bytes = crate::state::private::read_existing(&super::paths::descriptor(dir)).ok().flatten()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes the descriptor into the worktree's `.agent/` (made private and ignored by
/// git as for any run).
pub(crate) fn write_descriptor(worktree: &Path, d: &Descriptor) -> std::io::Result<()> {
    // The run writes `.agent/.gitignore` itself first thing; the folder is enough.
    crate::state::private::ensure_dir(&worktree.join(".agent"))?;
    // Written whole (a rename) before every start of the task's ralph: a power cut
    // that loses it loses nothing the next start does not write again.
    let path = super::paths::descriptor(worktree);
    crate::state::store::save_json_with(&path, d, crate::state::writes::Durability::Unsynced)
}

/// Who may run in a directory.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// An ordinary run.
    Plain,
    /// The task's own ralph, started by its supervisor.
    Task,
    /// Not allowed; the text says why and what to do.
    Refuse(String),
}

/// The rule, pure: `env_task` and `env_supervisor` from the environment, `parent`
/// this process's parent, `here` the task whose worktree the run is in (with its
/// fleet's repository).
pub(crate) fn admit(
    env_task: Option<&str>,
    env_supervisor: Option<&str>,
    parent: u32,
    here: Option<(&str, &Path)>,
) -> Admission {
    let from_supervisor = env_supervisor.and_then(|p| p.parse::<u32>().ok()) == Some(parent);
    match (here, env_task) {
        (Some((task, _)), Some(env)) if env == task && from_supervisor => Admission::Task,
        (_, Some(env)) => Admission::Refuse(nested(env)),
        (Some((task, repo)), None) => Admission::Refuse(format!(
            "{} is the worktree of fleet task {task}: only its fleet runs it, so it is never run twice; see \
             `ralph fleet status` in {}, and `ralph fleet stop {task}` or `ralph fleet retry {task}` there",
            "this directory",
            repo.display()
        )),
        (None, None) => Admission::Plain,
    }
}

/// The refusal of a ralph started inside a task's agent.
pub(crate) fn nested(task: &str) -> String {
    format!(
        "this ralph was started inside fleet task {task} ({ENV_TASK} is set): a task's agent cannot start a run or \
         a fleet of its own (no recursion, no runaway cost); run ralph from outside the fleet"
    )
}

/// The hook at setup: a task's context, `None` for a plain run, or the refusal.
pub(crate) fn join(dir: &Path) -> Result<Option<TaskRun>, RalphError> {
    let descriptor = read_descriptor(dir);
    let env_task = std::env::var(ENV_TASK).ok().filter(|v| !v.is_empty());
    let env_supervisor = std::env::var(ENV_SUPERVISOR).ok();
    let parent = u32::try_from(nix::unistd::getppid().as_raw()).unwrap_or(0);
    let here = descriptor.as_ref().map(|d| (d.task.as_str(), d.repo.as_path()));
    match admit(env_task.as_deref(), env_supervisor.as_deref(), parent, here) {
        Admission::Plain => Ok(None),
        Admission::Refuse(why) => Err(RalphError::Usage(why)),
        Admission::Task => Ok(descriptor.map(|d| TaskRun { d })),
    }
}

/// The hook when the config is read: what a task takes from the main checkout.
pub(crate) fn adapt(dir: &Path, loaded: &mut Loaded) {
    let Some(d) = read_descriptor(dir) else { return };
    let config = &mut loaded.config;
    config.general.prompt = d.file.clone();
    config.general.max_cost_usd = d.max_cost_usd.or(config.general.max_cost_usd);
    // Each task has its own branch; `[git] branch` is the single run's.
    config.git.branch = None;
    let main = |p: &Path| if p.is_relative() { d.repo.join(p) } else { p.to_path_buf() };
    // A command's program with a `/` is a path (a bare name is looked up on PATH).
    let program = |argv: Option<&mut Vec<String>>| {
        if let Some(program) = argv.and_then(|c| c.first_mut()).filter(|p| p.contains('/')) {
            *program = main(Path::new(program)).display().to_string();
        }
    };
    for phase in &mut loaded.phases {
        phase.prompt = phase.prompt.as_deref().map(main);
    }
    for agent in config.agents.values_mut() {
        agent.binary = agent.binary.as_deref().map(main);
        program(agent.command.as_mut());
    }
    program(config.notify.command.as_mut());
}

/// The hook when a run's checkpoint is read: the merge queue's latest eviction of
/// the task, if any, handed to `step::start::reopen`, which decides whether it
/// reopens the completed run (then what to tell).
pub(crate) fn reopen(dir: &Path, cp: &mut crate::state::checkpoint::Checkpoint, loaded: &Loaded) -> Option<RunEvent> {
    let eviction = read_descriptor(dir)?.eviction?;
    crate::step::start::reopen(
        cp,
        loaded,
        &crate::step::start::Eviction { number: eviction.number, text: &eviction.text },
    )
}

/// A task file is a goal: looked at for credentials like any goal file (named by
/// file and line, never by value), and the values found are hidden from then on in
/// everything the supervisor writes. Its task's own run looks again when it starts.
pub(crate) fn secrets_in_task_file(repo: &Path, file: &str) -> Vec<String> {
    crate::secrets::found::check_goal_file(&repo.join(file), file).iter().map(ToString::to_string).collect()
}

/// The hook of the registry entry.
pub(crate) fn registry_mark(dir: &Path) -> Option<FleetMark> {
    read_descriptor(dir).map(|d| FleetMark { role: FleetRole::Task, repo: d.repo, task: Some(d.task) })
}

/// ralph's own files in the main checkout: never dirty, never an isolation breach.
pub(crate) fn main_exempt(tasks_glob: &str, own_files: &[String]) -> Exempt {
    Exempt { files: own_files.to_vec(), dirs: vec![".agent".to_string()], globs: vec![tasks_glob.to_string()] }
}

/// Carries out what a fleet task's run asks of its fleet (`task` is `None` only for
/// a run that is no task, which asks nothing: it hears "nothing found"); what it
/// learns goes back to the step.
pub(crate) fn carry_out(task: Option<&TaskRun>, asked: Fleet, loaded: &Loaded) -> Option<Input> {
    let agent_config = |name: &str| loaded.config.agents.get(name);
    match (asked, task) {
        (Fleet::OpenWindow { key }, Some(task)) => {
            task.open_window(&key);
            None
        }
        (Fleet::CheckIsolation { key }, task) => Some(Input::Isolated(task.and_then(|t| t.close_window(&key)))),
        (Fleet::SharedReset { agent }, task) => Some(Input::SharedReset(task.and_then(|t| {
            let shared = t.shared_reset(&agent, agent_config(&agent)?, jiff::Timestamp::now().as_second())?;
            Some(SharedReset { until: shared.until, provider: shared.provider, learned_by: shared.learned_by })
        }))),
        (Fleet::PublishReset { agent, until }, Some(task)) => {
            if let Some(config) = agent_config(&agent) {
                task.publish_reset(&agent, config, until);
            }
            None
        }
        (Fleet::OpenWindow { .. } | Fleet::PublishReset { .. }, None) => None,
    }
}

/// A run that is a fleet task.
#[derive(Debug, Clone)]
pub(crate) struct TaskRun {
    pub d: Descriptor,
}

impl TaskRun {
    fn window_path(&self) -> PathBuf {
        self.d.paths().windows.join(format!("{}.json", self.d.task))
    }

    fn snapshot(&self) -> Result<isolation::Snapshot, String> {
        let exempt = main_exempt(&self.d.tasks_glob, &self.d.own_files);
        super::git::snapshot(&Repo::at(&self.d.repo), &exempt).map_err(|e| e.to_string())
    }

    /// An attempt of iteration `key` starts: the window opens with a snapshot,
    /// unless it is open already for this iteration (a retry, a resume).
    pub(crate) fn open_window(&self, key: &str) {
        let path = self.window_path();
        if read_span(&path).is_some_and(|w| w.key == key && w.closed_at.is_none()) {
            return;
        }
        let window = match self.snapshot() {
            Ok(snapshot) => {
                let span =
                    Span { task: self.d.task.clone(), key: key.to_string(), opened_at: now_ms(), closed_at: None };
                Window { span, snapshot }
            }
            Err(e) => return tracing::warn!("fleet: cannot take the isolation snapshot: {e}"),
        };
        let saved = crate::state::store::save_json_with(&path, &window, crate::state::writes::Durability::Ordered);
        if let Err(e) = saved {
            tracing::warn!("fleet: cannot write {}: {e}", path.display());
        }
    }

    /// Iteration `key` is done, before its commit: closes its window and says
    /// whether the run must stop (blocked) instead of committing.
    pub(crate) fn close_window(&self, key: &str) -> Option<String> {
        let path = self.window_path();
        let mut window: Window =
            crate::state::store::load_json(&path).ok().flatten().filter(|w: &Window| w.span.key == key)?;
        let to = now_ms();
        let after = match self.snapshot() {
            Ok(s) => s,
            Err(e) => return Some(format!("fleet: the isolation check of task {} cannot read git: {e}", self.d.task)),
        };
        let verdict = self.judge(&window, &after, to);
        window.span.closed_at = Some(to);
        if let Err(e) = crate::state::store::save_json_with(&path, &window, crate::state::writes::Durability::Ordered) {
            tracing::warn!("fleet: cannot write {}: {e}", path.display());
        }
        match verdict {
            Verdict::Clean => None,
            Verdict::Block(why) | Verdict::Pause(why) => Some(why),
        }
    }

    /// What the change since `window` opened comes to. The common end, nothing
    /// moved and nothing changed, costs the one snapshot: the ledger, this task's
    /// tip and the other tasks' windows are read only when a ref moved or something
    /// changed.
    fn judge(&self, window: &Window, after: &isolation::Snapshot, to: i64) -> Verdict {
        let repo = Repo::at(&self.d.repo);
        let own = format!("refs/heads/{}", self.d.branch);
        // Unexplained by an empty ledger first: ralph's own ref updates only take
        // names out of that list.
        let mut moved = isolation::moved_refs(&window.snapshot, after, &own, &[]);
        if !moved.is_empty() {
            let ledger = super::git::read_ledger(&self.d.paths().ledger);
            moved = isolation::moved_refs(&window.snapshot, after, &own, &ledger);
        }
        let own_tip = if moved.is_empty() { None } else { super::git::tip(&repo, &self.d.branch).ok().flatten() };
        let facts = |m: &isolation::Moved| {
            let (Some(old), Some(new)) = (m.old.as_deref(), m.new.as_deref()) else {
                return isolation::RefFacts { forward: false, takes_own_work: false };
            };
            let ancestor = |a: &str, b: &str| super::git::is_ancestor(&repo, a, b).unwrap_or(false);
            // The task's commits of this iteration are not made yet: its agent's own
            // commits are on the branch, and what it left is in its worktree.
            let takes = own_tip.as_deref().is_some_and(|tip| ancestor(tip, new) && !ancestor(tip, old));
            isolation::RefFacts { forward: ancestor(old, new), takes_own_work: takes }
        };
        let found = isolation::changes(&window.snapshot, after, &moved, &facts);
        if found.is_empty() {
            return Verdict::Clean;
        }
        let others = read_windows(&self.d.paths().windows, &self.d.task);
        isolation::verdict(&self.d.task, window.span.opened_at, to, &found, &others)
    }

    /// A rate-limit reset another task of the fleet learned for the provider of
    /// `agent`, still ahead of `now` (unix seconds).
    fn shared_reset(&self, name: &str, agent: &AgentConfig, now: i64) -> Option<Shared> {
        let path = self.limit_path(name, agent);
        let shared: Option<Shared> = crate::state::store::load_json(&path).ok().flatten();
        shared.filter(|s| s.until > now)
    }

    /// This task waits for a rate-limit reset of `agent`'s provider until `until`:
    /// the other tasks using that provider wait for it too.
    fn publish_reset(&self, name: &str, agent: &AgentConfig, until: i64) {
        let path = self.limit_path(name, agent);
        let value = Shared { provider: provider(name, agent), until, learned_by: self.d.task.clone() };
        let agent = self.d.repo.join(".agent");
        if let Err(e) = crate::state::private::ensure_dirs(&agent, Path::new("fleet/limits")).and_then(|()| {
            crate::state::store::save_json_with(&path, &value, crate::state::writes::Durability::Ordered)
        }) {
            tracing::warn!("fleet: cannot share the rate-limit reset in {}: {e}", path.display());
        }
    }

    fn limit_path(&self, name: &str, agent: &AgentConfig) -> PathBuf {
        let key = provider(name, agent);
        let file: String =
            key.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        self.d.paths().limits.join(format!("{file}.json"))
    }
}

/// A reset shared between the tasks, `limits/<provider>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Shared {
    provider: String,
    until: i64,
    learned_by: String,
}

/// Which provider an agent uses, for sharing its rate limits: the endpoint a CLI
/// talks to (a base URL set for it wins over the vendor's host), or, for a scripted
/// or command agent, the agent itself (every task has the same agents).
pub(crate) fn provider(name: &str, agent: &AgentConfig) -> String {
    let Some(cli) = crate::agent::kinds::descriptor(agent.kind) else {
        return format!("{}-{name}", agent.kind.into_str());
    };
    let lookup = |var: &str| agent.env.get(var).cloned().or_else(|| std::env::var(var).ok()).filter(|v| !v.is_empty());
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    (cli.endpoint)(agent, &lookup, &read).unwrap_or_else(|| agent.kind.into_str().to_string())
}

/// The windows of the other tasks, without their snapshots.
pub(crate) fn read_windows(dir: &Path, me: &str) -> Vec<Span> {
    let Ok(listing) = std::fs::read_dir(dir) else { return Vec::new() };
    listing
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| read_span(&e.path()))
        .filter(|w| w.task != me)
        .collect()
}

/// A window file's span, parsed as it is read (opened as every state file is: no
/// link followed): neither the file nor its snapshot is held. `None` when there is
/// none or it does not parse.
fn read_span(path: &Path) -> Option<Span> {
    let file = crate::state::private::open_existing(path).ok().flatten()?;
    serde_json::from_reader(std::io::BufReader::new(file)).ok()
}

/// Closes the window of a task whose ralph is gone (the supervisor, when it sees it
/// end): an open window of a dead run would make every change look like its.
pub(crate) fn close_window_of(paths: &Paths, task: &str) {
    let path = paths.windows.join(format!("{task}.json"));
    let Some(mut w) = crate::state::store::load_json::<Window>(&path).ok().flatten() else { return };
    if w.span.closed_at.is_none() {
        w.span.closed_at = Some(now_ms());
        // Best effort: a window a power cut reopens only makes a later change
        // look like it overlapped this task too.
        let _ = crate::state::store::save_json_with(&path, &w, crate::state::writes::Durability::Unsynced);
    }
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// Agents that report no cost: a fleet's `max_cost` cannot count them (named at the
/// fleet's start).
pub(crate) fn reports_cost(agent: &AgentConfig) -> bool {
    use crate::config::{AgentKind, OutputFormat};
    match agent.kind {
        AgentKind::Claude | AgentKind::Opencode | AgentKind::Sim => true,
        AgentKind::Codex | AgentKind::Gemini => false,
        AgentKind::Command => agent.output == Some(OutputFormat::ClaudeStreamJson),
    }
}

/// The refusal of `ralph fleet` where it cannot start: inside a task's agent, or in a
/// task's worktree.
pub(crate) fn admit_fleet(top: &Path) -> Result<(), RalphError> {
    if let Some(task) = std::env::var(ENV_TASK).ok().filter(|v| !v.is_empty()) {
        return Err(RalphError::Usage(nested(&task)));
    }
    if let Some(d) = read_descriptor(top) {
        return Err(RalphError::Usage(format!(
            "{} is the worktree of fleet task {}; a fleet runs in the main checkout ({}), not in a task",
            top.display(),
            d.task,
            d.repo.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_supervisors_own_child_runs_in_a_task_worktree() {
        let repo = Path::new("/r");
        let here = Some(("a", repo));
        assert_eq!(admit(Some("a"), Some("42"), 42, here), Admission::Task);
        // A person in the worktree, or a copy the supervisor did not start.
        assert!(matches!(admit(None, None, 1, here), Admission::Refuse(why) if why.contains("ralph fleet status")));
        assert!(matches!(admit(Some("a"), Some("42"), 7, here), Admission::Refuse(_)));
        // Inside a task's agent: nothing may start, anywhere.
        assert!(matches!(admit(Some("a"), None, 7, None), Admission::Refuse(why) if why.contains("no recursion")));
        assert!(matches!(admit(Some("b"), Some("42"), 42, here), Admission::Refuse(_)));
        assert_eq!(admit(None, None, 1, None), Admission::Plain);
    }

    #[test]
    fn a_task_takes_its_goal_and_relative_paths_from_the_main_checkout() {
        let (dir, wt) = crate::testkit::temp_file("wt");
        std::fs::create_dir_all(&wt).unwrap();
        let agent = crate::testkit::one_agent_config(
            "a",
            r#"kind = "command"
command = ["./bin/agent", "{prompt}"]"#,
            "prompt = \"prompts/dev.md\"\n",
        );
        let source = format!("[general]\nmax_cost_usd = 10.0\n[git]\nbranch = \"mine\"\n{agent}");
        let mut loaded = crate::config::parse(Path::new("/r/ralph.toml"), &source).unwrap();
        let mut d = Descriptor::new("f", "t", Path::new("/r"), "/r/tasks/t.md".into(), "/r/ralph.toml".into());
        d.max_cost_usd = Some(4.0);
        write_descriptor(&wt, &d).unwrap();
        adapt(&wt, &mut loaded);
        assert_eq!(loaded.config.general.prompt, Path::new("/r/tasks/t.md"));
        assert_eq!(loaded.config.general.max_cost_usd, Some(4.0));
        assert_eq!(loaded.config.git.branch, None);
        assert_eq!(loaded.phases[0].prompt.as_deref(), Some(Path::new("/r/prompts/dev.md")));
        assert_eq!(loaded.config.agents["a"].command.as_ref().unwrap()[0], "/r/./bin/agent");
        assert_eq!(registry_mark(&wt).and_then(|m| m.task), Some("t".to_string()));
        // A plain directory is left alone.
        let mut plain = crate::config::parse(Path::new("/p/ralph.toml"), &source).unwrap();
        adapt(dir.path(), &mut plain);
        assert_eq!(plain.config.git.branch.as_deref(), Some("mine"));
    }

    #[test]
    fn a_reset_one_task_learned_holds_for_the_others_until_it_passes() {
        let dir = tempfile::tempdir().unwrap();
        let run = |task: &str| TaskRun {
            d: Descriptor::new("f", task, dir.path(), dir.path().join("t.md"), dir.path().join("ralph.toml")),
        };
        let sim: AgentConfig = toml::from_str("kind = \"sim\"").unwrap();
        let other: AgentConfig = toml::from_str("kind = \"sim\"").unwrap();
        assert_eq!(run("b").shared_reset("a", &sim, 100), None);
        run("a").publish_reset("a", &sim, 160);
        assert_eq!(run("b").shared_reset("a", &sim, 100).map(|s| (s.until, s.learned_by)), Some((160, "a".into())));
        assert_eq!(run("b").shared_reset("a", &sim, 160), None, "past");
        assert_eq!(run("b").shared_reset("z", &other, 100), None, "another provider");
    }

    #[test]
    fn providers_are_shared_by_endpoint_or_by_agent() {
        let sim: AgentConfig = toml::from_str("kind = \"sim\"").unwrap();
        assert_eq!(provider("a", &sim), "sim-a");
        let claude: AgentConfig =
            toml::from_str("kind = \"claude\"\nenv = { ANTHROPIC_BASE_URL = \"http://127.0.0.1:9/\" }").unwrap();
        assert_eq!(provider("c", &claude), "127.0.0.1:9");
        let codex: AgentConfig = toml::from_str("kind = \"codex\"").unwrap();
        assert!(!reports_cost(&codex) && reports_cost(&sim));
    }

    #[test]
    fn the_other_tasks_windows_are_read_as_spans_without_their_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let refs: std::collections::BTreeMap<String, String> =
            (0..2000).map(|i| (format!("refs/tags/v{i}"), "a".repeat(40))).collect();
        let window = |task: &str, closed_at| Window {
            span: Span { task: task.into(), key: "develop/1".into(), opened_at: 10, closed_at },
            snapshot: isolation::Snapshot { refs: refs.clone(), ..Default::default() },
        };
        for (task, closed_at) in [("a", None), ("b", Some(20))] {
            let path = dir.path().join(format!("{task}.json"));
            crate::state::store::save_json_with(
                &path,
                &window(task, closed_at),
                crate::state::writes::Durability::Unsynced,
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("torn.json"), "{\"task\": \"c\", \"key\"").unwrap();
        let spans = read_windows(dir.path(), "a");
        assert_eq!(spans, [Span { task: "b".into(), key: "develop/1".into(), opened_at: 10, closed_at: Some(20) }]);
        assert_eq!(read_span(&dir.path().join("a.json")).map(|s| s.closed_at), Some(None));
    }
}

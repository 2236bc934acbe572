//! The shape of `ralph.toml`: plain serde types with their defaults.
//!
//! Key names follow design.md §3 and never change. Every table denies unknown keys so
//! a typo is an error (with a suggestion) instead of a silently ignored setting.
//! Semantic checks (unknown agents, zero caps, per-kind keys) live in `validate`.
//!
//! A low floor: this file imports only the shared leaves (`named`, the failure
//! [`Category`](crate::outcome::Category)), so the agent descriptors can read an
//! agent's table without reaching `validate`, which reads the descriptors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Config {
    pub general: General,
    pub retry: Retry,
    pub timeouts: Timeouts,
    pub offline: Offline,
    pub watch: Watch,
    pub notify: Notify,
    pub logs: Logs,
    pub agents: BTreeMap<String, AgentConfig>,
    pub chains: BTreeMap<String, Vec<String>>,
    pub phases: BTreeMap<String, PhaseConfig>,
    pub git: GitConfig,
    pub fleet: FleetConfig,
}

/// `[general]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct General {
    /// The goal file, relative to the project directory.
    pub prompt: PathBuf,
    /// Passes through a phase's chain before the phase fails.
    pub max_cycles: u32,
    /// Total active run time over all resumes; unset means no limit.
    #[serde(with = "humantime_serde")]
    pub max_runtime: Option<Duration>,
    /// Total cost over all resumes; unset means no limit.
    pub max_cost_usd: Option<f64>,
    pub workflow: Workflow,
}

impl Default for General {
    fn default() -> Self {
        Self {
            prompt: PathBuf::from("PROMPT.md"),
            max_cycles: 3,
            max_runtime: None,
            max_cost_usd: None,
            workflow: Workflow::default(),
        }
    }
}

/// `[general.workflow]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Workflow {
    pub checkpoint_enabled: bool,
    /// Phase names in the order they run. Empty means "the order of the
    /// `[phases.*]` tables in the file".
    pub phases: Vec<String>,
    /// A group of consecutive phases (review, then fix) that runs again for up to
    /// `passes` passes; none by default.
    pub repeat: Option<Repeat>,
    /// Lines and characters of a phase's final message kept as its result for the
    /// next phase's prompt (`{{previous}}`).
    pub artifact_lines: u32,
    pub artifact_chars: u32,
}

impl Default for Workflow {
    fn default() -> Self {
        Self { checkpoint_enabled: true, phases: Vec::new(), repeat: None, artifact_lines: 10, artifact_chars: 1000 }
    }
}

/// `[general.workflow] repeat = { phases = ["review", "fix"], passes = 3 }`: the
/// group repeats until its first phase (the review) ends with the goal signal, at
/// most `passes` times.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Repeat {
    /// Consecutive phases in workflow order; the first one gives the verdict.
    pub phases: Vec<String>,
    /// Passes through the group at most, at least 1.
    pub passes: u32,
}

/// `[retry]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Retry {
    /// `agent`-category failures per agent per iteration before fallover.
    pub agent_attempts: u32,
    /// `ambiguous` failures per iteration before the run fails.
    pub ambiguous_attempts: u32,
    #[serde(with = "humantime_serde")]
    pub backoff_base: Duration,
    #[serde(with = "humantime_serde")]
    pub backoff_max: Duration,
    pub tool_registry_resets: u32,
    pub mcp_restarts: u32,
    pub on_rate_limit: OnRateLimit,
    #[serde(with = "humantime_serde")]
    pub max_rate_limit_wait: Duration,
    /// Recoveries of one iteration within `storm_window` that make the next attempt
    /// start a fresh session instead of resuming (a "continue storm").
    pub storm_recoveries: u32,
    #[serde(with = "humantime_serde")]
    pub storm_window: Duration,
    /// Longest unbroken streak of `environmental` failures (minus offline pauses and
    /// rate-limit waits) before the run fails: a misclassified persistent error must
    /// not be retried forever.
    #[serde(with = "humantime_serde")]
    pub max_environmental_wait: Duration,
    /// First wait between `agent`-category retries of one agent, doubling per failure
    /// up to [`AGENT_BACKOFF_MAX`]; zero retries at once.
    #[serde(with = "humantime_serde")]
    pub agent_backoff_base: Duration,
    /// How long a chain member that spent its whole `agent_attempts` is skipped when
    /// a phase starts with it; then it is tried first again.
    #[serde(with = "humantime_serde")]
    pub exhausted_cooldown: Duration,
}

/// The longest wait between `agent`-category retries of one agent.
pub(crate) const AGENT_BACKOFF_MAX: Duration = Duration::from_secs(60);

impl Default for Retry {
    fn default() -> Self {
        Self {
            agent_attempts: 3,
            ambiguous_attempts: 5,
            backoff_base: Duration::from_secs(5),
            backoff_max: Duration::from_secs(600),
            tool_registry_resets: 3,
            mcp_restarts: 3,
            on_rate_limit: OnRateLimit::Wait,
            max_rate_limit_wait: Duration::from_secs(6 * 3600),
            storm_recoveries: 3,
            storm_window: Duration::from_secs(600),
            max_environmental_wait: Duration::from_secs(6 * 3600),
            agent_backoff_base: Duration::from_secs(2),
            exhausted_cooldown: Duration::from_secs(30 * 60),
        }
    }
}

/// What to do when a provider reports a rate or usage limit.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OnRateLimit {
    Wait,
    Fallover,
}

/// `[timeouts]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// No event from the agent and no tool running.
    #[serde(with = "humantime_serde")]
    pub stall: Duration,
    /// One tool call, started and not finished.
    #[serde(with = "humantime_serde")]
    pub tool: Duration,
    /// One whole attempt.
    #[serde(with = "humantime_serde")]
    pub attempt: Duration,
    /// Between SIGINT, SIGTERM and SIGKILL when ending an agent.
    #[serde(with = "humantime_serde")]
    pub grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            stall: Duration::from_secs(300),
            tool: Duration::from_secs(1800),
            attempt: Duration::from_secs(7200),
            grace: Duration::from_secs(10),
        }
    }
}

/// `[offline]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Offline {
    /// `host:port` endpoints; unset means the configured agents' providers.
    pub probe: Option<Vec<String>>,
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl Default for Offline {
    fn default() -> Self {
        Self { probe: None, interval: Duration::from_secs(10), timeout: Duration::from_secs(3) }
    }
}

/// `[watch]`: how `ralph watch` treats this project's runs, and who owns a run
/// directory on a volume shared between hosts.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Watch {
    /// Resume a run stopped by SIGTERM or SIGHUP (a shutdown, a closed terminal).
    pub resume_after_shutdown: bool,
    /// Resumes by the watcher that end in another crash, in a row, before the run is
    /// marked `blocked`.
    pub max_restarts: u32,
    /// The wait before the watcher resumes a run again, doubling with each restart
    /// that crashed (at most 30 minutes).
    #[serde(with = "humantime_serde")]
    pub restart_backoff: Duration,
    /// How long a lease held by another host must go without a renewal, measured on
    /// this host's monotonic clock, before this ralph takes the run over. The owner
    /// renews four times per `lease_timeout` where it renews (`lease_renewal`).
    #[serde(with = "humantime_serde")]
    pub lease_timeout: Duration,
    /// A run last active longer ago than this is not resumed by the watcher (it is
    /// shown as stale; `ralph --resume` still continues it).
    #[serde(with = "humantime_serde")]
    pub max_age: Duration,
    /// Resumes by the watcher in one boot, across all runs, after which it resumes
    /// this run no more until the next boot.
    pub max_resumes_per_boot: u32,
    /// Programs (by name) whose SIGTERM counts as a service manager's, besides the
    /// built-in list: the run is `interrupted` (resumable), not paused.
    pub service_managers: Vec<String>,
    /// Where the owner renews its lease: only on a file system other hosts mount
    /// (`auto`), or on any (`always`: a volume shared although it looks local).
    pub lease_renewal: LeaseRenewal,
}

/// `[watch] lease_renewal`
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LeaseRenewal {
    /// When `.agent/` is on a network or cluster file system (by its type).
    #[default]
    Auto,
    Always,
}

impl Default for Watch {
    fn default() -> Self {
        Self {
            resume_after_shutdown: true,
            max_restarts: 3,
            restart_backoff: Duration::from_secs(30),
            lease_timeout: Duration::from_secs(60),
            max_age: Duration::from_secs(24 * 3600),
            max_resumes_per_boot: 20,
            service_managers: Vec::new(),
            lease_renewal: LeaseRenewal::Auto,
        }
    }
}

/// `[notify]`: a program told about the events a person wants to hear of.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Notify {
    /// argv (no shell); the event arrives as one JSON object on stdin.
    pub command: Option<Vec<String>>,
    /// How long the notifier may take before it is killed.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
}

impl Default for Notify {
    fn default() -> Self {
        Self { command: None, timeout: Duration::from_secs(10) }
    }
}

/// `[logs]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Logs {
    /// Run directories kept under `.agent/logs/` (the current run's included); older
    /// ones are removed when a run starts, and by `ralph clean`.
    pub keep_runs: u32,
    /// Bytes one attempt's log may take on disk (head plus rotating tail): a flood
    /// never fills the disk. An integer, or a string like "64MiB" / "500KB" ([`ByteSize`]).
    #[serde(deserialize_with = "bytes")]
    pub max_attempt_log: u64,
}

/// The least `max_attempt_log` allowed: room for a head and a few tail segments.
pub(crate) const MIN_ATTEMPT_LOG: u64 = 64 * 1024;

impl Default for Logs {
    fn default() -> Self {
        Self { keep_runs: 20, max_attempt_log: 64 << 20 }
    }
}

/// `max_attempt_log` as a plain count, read by the one size parser, [`ByteSize`].
fn bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    ByteSize::deserialize(d).map(|b| b.0)
}

/// The kinds of agent ralph knows how to drive.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub enum AgentKind {
    Claude,
    Codex,
    Opencode,
    Gemini,
    Command,
    Sim,
}

impl AgentKind {
    /// The CLI kinds (each with a descriptor in `agent::kinds`, which keeps the two
    /// lists equal), in the order `init` prefers them.
    pub(crate) const CLI: [AgentKind; 4] =
        [AgentKind::Claude, AgentKind::Codex, AgentKind::Opencode, AgentKind::Gemini];

    /// The `permission_mode` values of a CLI kind, the default first: each suits
    /// unattended work and works as root. Here, below the descriptors, since config
    /// validation checks them; `command` and `sim` have none.
    pub(crate) fn permission_modes(self) -> &'static [&'static str] {
        match self {
            // `bypassPermissions` is refused under root; `acceptEdits` is not.
            AgentKind::Claude => &["acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"],
            // "bypass" = --dangerously-bypass-approvals-and-sandbox; the others are sandbox modes.
            AgentKind::Codex => &["bypass", "workspace-write", "read-only", "danger-full-access"],
            // "config" = what OPENCODE_CONFIG's `permission` says; "auto" = --auto.
            AgentKind::Opencode => &["config", "auto"],
            AgentKind::Gemini => &["yolo", "auto_edit", "default", "plan"],
            AgentKind::Command | AgentKind::Sim => &[],
        }
    }
}

/// How a `kind = "command"` agent's stdout is read.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OutputFormat {
    /// Plain text; the final message is the end of stdout.
    #[default]
    Text,
    /// Claude Code's headless `--output-format stream-json`.
    ClaudeStreamJson,
}

/// `[agents.NAME]`. One flat table for every kind; `validate` rejects keys that do
/// not belong to the agent's kind.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentConfig {
    pub kind: AgentKind,
    /// Passed on every launch and every resume (CLI agents).
    pub model: Option<String>,
    /// Overrides the binary found on PATH (CLI agents).
    pub binary: Option<PathBuf>,
    /// argv template with `{prompt}` (kind = "command").
    pub command: Option<Vec<String>>,
    /// argv template with `{session}` and `{prompt}` (kind = "command").
    pub resume: Option<Vec<String>>,
    /// Output format (kind = "command").
    pub output: Option<OutputFormat>,
    /// How much the CLI may do without asking (CLI agents); each kind's values and
    /// default are [`AgentKind::permission_modes`] (docs/agents.md lists them).
    pub permission_mode: Option<String>,
    /// Extra arguments appended to every launch (CLI agents).
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables set for the agent.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Credential-like variables to pass through in addition to the kind's allowlist.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Register `ralph mcp` with the agent for each attempt (see docs/mcp.md).
    #[serde(default = "yes")]
    pub mcp: bool,
    /// Per-launch scripts (kind = "sim"); launch N uses entry N, the last repeats.
    #[serde(default)]
    pub script: Vec<SimScript>,
    /// The agent's own error wordings and what they mean (kind = "command").
    #[serde(default)]
    pub errors: Vec<ErrorPattern>,
}

/// `[[agents.NAME.errors]]`: a wording of a `command` agent's own errors. Matched
/// (as a regular expression) where the agent reports its own error: error events
/// and the last lines of its stderr. A named group `reset_at` (unix seconds or an
/// RFC 3339 time) or `reset_in` (seconds or a duration like "5m") is the time a
/// limit resets: with `category = "environmental"` the failure then takes the
/// rate-limit path.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ErrorPattern {
    pub pattern: String,
    /// The category it puts a failure in.
    pub category: crate::outcome::Category,
}

impl AgentConfig {
    /// Whether a session this agent reported can be continued: every CLI kind can,
    /// a plain command only with a `resume` template.
    pub(crate) fn can_resume(&self) -> bool {
        self.kind != AgentKind::Command || self.resume.is_some()
    }
}

fn yes() -> bool {
    true
}

/// `[phases.NAME] iterations` when the key is left out.
pub(crate) const DEFAULT_ITERATIONS: u32 = 1;

/// `[phases.NAME]`
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct PhaseConfig {
    /// The agent chain, a key of `[chains]`.
    pub chain: String,
    /// Iterations to run (or, with `until = "complete"`, the cap); default [`DEFAULT_ITERATIONS`].
    pub iterations: Option<u32>,
    pub until: Option<Until>,
    /// The done signal of one iteration: "tag", "exit0", "file:PATH".
    pub done: Option<String>,
    /// A template file overriding the built-in prompt for this phase.
    pub prompt: Option<PathBuf>,
}

/// The repeat rule of a phase.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Until {
    /// Repeat until the goal signal, at most `iterations` times.
    Complete,
}

/// One launch's script for the built-in scripted agent.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimScript {
    pub steps: Vec<SimStep>,
}

/// One step of the scripted agent. Written in TOML as a one-key inline table,
/// e.g. `{ say = "hello" }` or `{ write = { path = "PLAN.md", content = "..." } }`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum SimStep {
    /// An assistant text message.
    Say(String),
    /// A thinking block.
    Think(String),
    /// A tool call and its result.
    Tool(SimTool),
    /// Write a file in the workspace, reported as a `Write` tool call.
    Write(SimWrite),
    /// Sleep (humantime), emitting nothing.
    #[serde(with = "humantime_serde")]
    Sleep(Duration),
    /// Stop emitting and never exit on its own.
    Hang(bool),
    /// Die by a signal: "SIGSEGV" (default), "SIGABRT", "SIGKILL".
    Crash(String),
    /// Exit at once with this code (no result event).
    Exit(i32),
    /// An error result like Claude Code's (`is_error: true`), then exit 1.
    Error(String),
    /// A line on stderr.
    Stderr(String),
    /// A `rate_limit_event` whose reset is this far ahead (humantime).
    #[serde(with = "humantime_serde")]
    RateLimit(Duration),
    /// A tool call printed as text instead of made.
    ToolText(String),
    /// The same tool call (name and input) made this many times in a row.
    RepeatTool(SimRepeat),
    /// Ignore these signals from now on ("SIGINT", "SIGTERM", "SIGHUP").
    Ignore(Vec<String>),
    /// Leave a process behind in the agent's process group; its pid goes to the file.
    Grandchild(SimGrandchild),
    /// Write the agent's own pid to this file (relative to the workspace).
    Pidfile(PathBuf),
    /// Report usage and cost in the final result.
    Usage(SimUsage),
    /// Final message ending with `<promise>DONE</promise>`.
    Done(String),
    /// Final message ending with `<promise>COMPLETE</promise>`.
    Goal(String),
    /// Start `ralph mcp` as an MCP client of its own run and call one tool, shown as
    /// the tool call `mcp__ralph__<tool>`; `kill = true` kills the server afterwards.
    Mcp(SimMcp),
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimMcp {
    pub tool: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
    #[serde(default)]
    pub kill: bool,
    /// Print nothing about the call (a heartbeat is then the only sign of life).
    #[serde(default)]
    pub silent: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimTool {
    pub name: String,
    #[serde(default)]
    pub input: serde_json::Value,
    #[serde(default)]
    pub result: String,
    /// How long the tool "runs" before its result (humantime).
    #[serde(default, with = "humantime_serde")]
    pub duration: Option<Duration>,
    /// Start the call and never finish it.
    #[serde(default)]
    pub hang: bool,
    /// The result is an error (`is_error`), as a refused or failed tool call's is.
    #[serde(default)]
    pub error: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimWrite {
    pub path: PathBuf,
    #[serde(default)]
    pub content: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimRepeat {
    pub name: String,
    #[serde(default)]
    pub input: serde_json::Value,
    pub times: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimGrandchild {
    pub pidfile: PathBuf,
    #[serde(with = "humantime_serde")]
    pub lives: Duration,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SimUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// When ralph commits the agents' work (`[git] commit`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CommitMode {
    /// One commit after every finished iteration.
    #[default]
    Iteration,
    /// One commit when a phase ends.
    Phase,
    /// No commits (the baseline checks still run in a repository).
    Off,
}

/// `[git]`: what ralph does in a git repository (see `docs/git.md`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct GitConfig {
    pub commit: CommitMode,
    /// Create this branch at the start of a new run and commit on it.
    pub branch: Option<String>,
    /// Leave out files the agent never reported editing, when it ran no shell tool.
    pub only_agent_files: bool,
    /// New files larger than this are never committed: bytes, or "5MB", "512KB".
    pub max_new_file: ByteSize,
    /// The commit message; `{phase}`, `{iteration}`, `{title}`, `{summary}`, `{run_id}`.
    pub message: String,
    /// `"Name <email>"`; default: the user's git identity.
    pub author: Option<String>,
    /// `"Name <email>"`; default: the user's git identity.
    pub committer: Option<String>,
    /// Paths or globs (relative to the repository's top) committed even when they
    /// hold what looks like a secret: a test fixture with a vendor's example key.
    pub allow_secrets: Vec<String>,
    /// Characters of a commit's first line at most.
    pub title_chars: u32,
    /// Lines and characters of the agent's final message in a commit's body at most.
    pub body_lines: u32,
    pub body_chars: u32,
}

/// A git identity, as `[git] author` and `committer` give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub name: String,
    pub email: String,
}

impl Identity {
    /// Parses `"Name <email>"`; both parts must be present.
    pub(crate) fn parse(text: &str) -> Option<Identity> {
        let text = text.trim();
        let open = text.find('<')?;
        let rest = text[open + 1..].strip_suffix('>')?;
        let name = text[..open].trim();
        let email = rest.trim();
        let bad = |s: &str| s.is_empty() || s.contains(['<', '>', '\n']);
        if bad(name) || bad(email) {
            return None;
        }
        Some(Identity { name: name.to_string(), email: email.to_string() })
    }
}

/// Whether `name` can be a branch name. A subset of `git check-ref-format`, checked
/// when the config loads so a bad name is a config error, not a failure mid-run.
pub(crate) fn check_branch(name: &str) -> Result<(), &'static str> {
    let bad_char = |c: char| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c);
    if name.is_empty() {
        Err("is empty")
    } else if name.starts_with('-') || name.starts_with('/') || name.ends_with('/') || name.ends_with('.') {
        Err("cannot start with - or /, nor end with / or .")
    } else if name.contains("..") || name.contains("@{") || name.contains("//") || name.ends_with(".lock") {
        Err("is not a valid branch name (.., @{, // and .lock are not allowed)")
    } else if name.chars().any(bad_char) {
        Err("contains a character git does not allow in a branch name")
    } else {
        Ok(())
    }
}

/// The default commit message template.
pub(crate) const DEFAULT_COMMIT_MESSAGE: &str = "ralph: {phase} iteration {iteration}: {title}\n\n{summary}";

impl Default for GitConfig {
    fn default() -> Self {
        Self {
            commit: CommitMode::Iteration,
            branch: None,
            only_agent_files: false,
            max_new_file: ByteSize(5 << 20),
            message: DEFAULT_COMMIT_MESSAGE.to_string(),
            author: None,
            committer: None,
            allow_secrets: Vec::new(),
            title_chars: 72,
            body_lines: 10,
            body_chars: 1000,
        }
    }
}

/// A size in bytes, written as a number or as "5MB", "512KB", "1GiB": every unit is
/// a power of 1024 (K = KB = KiB), the one reading of sizes in `ralph.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub(crate) struct ByteSize(pub u64);

impl ByteSize {
    /// Parses "5MB", "512 KB", "1gb", "64MiB", "100" (bytes).
    pub(crate) fn parse(text: &str) -> Option<ByteSize> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (digits, unit) = t.split_at(split);
        let n: u64 = digits.parse().ok()?;
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            _ => return None,
        };
        n.checked_mul(1 << shift).map(ByteSize)
    }
}

/// A size as people write it: the largest unit that divides it ("5MB", "64KiB" is
/// "64KB"); used where a message or a generated file states a default.
impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0;
        let (value, unit) = [(30, "GB"), (20, "MB"), (10, "KB")]
            .into_iter()
            .find(|(shift, _)| n != 0 && n.is_multiple_of(1 << shift))
            .map_or((n, "B"), |(shift, unit)| (n >> shift, unit));
        if unit == "B" { write!(f, "{value}") } else { write!(f, "{value}{unit}") }
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Text(t) => ByteSize::parse(&t).ok_or_else(|| {
                serde::de::Error::custom(format!("{t:?} is not a size; write bytes or e.g. \"5MB\", \"512KB\""))
            }),
        }
    }
}

/// `[fleet]`: many runs at once, one git worktree and branch per task, and the merge
/// queue that lands them (docs/fleet.md).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct FleetConfig {
    /// The task files, a glob relative to the repository's top (`*` within one
    /// directory level); `README.md` is never a task.
    pub tasks: String,
    /// The branch the merge queue lands on, created from the fleet's base.
    pub into: String,
    /// Where the tasks' worktrees go, relative to the repository's top; unset: the
    /// sibling folder `../<repository>-fleet`. Never inside the main checkout.
    pub worktrees: Option<PathBuf>,
    /// Task runs at once.
    pub max_parallel: u32,
    /// The total cost across the fleet's tasks: dollars, or "none" for no cap. Unset
    /// refuses the fleet at its start with the worst case printed.
    pub max_cost: Option<MaxCost>,
    /// A task's worktree is created only with at least this much free disk.
    pub min_free_disk: ByteSize,
    /// The merge queue's check: an argv run on each task's rebased head before it
    /// lands (`["cargo", "test"]`); unset: no check.
    pub check: Option<Vec<String>>,
    /// The longest one check may run.
    #[serde(with = "humantime_serde")]
    pub check_timeout: Duration,
    /// Evictions per task (a conflict or a failing check sends it back to its
    /// agent) before it is blocked.
    pub max_evictions: u32,
    /// Generated files: a glob (relative to the top) and the argv that makes them
    /// again; a conflict confined to them is resolved without an eviction.
    pub regenerate: BTreeMap<String, Vec<String>>,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            tasks: "tasks/*.md".to_string(),
            into: "ralph/fleet".to_string(),
            worktrees: None,
            max_parallel: 2,
            max_cost: None,
            min_free_disk: ByteSize(1 << 30),
            check: None,
            check_timeout: Duration::from_secs(30 * 60),
            max_evictions: 3,
            regenerate: BTreeMap::new(),
        }
    }
}

/// `[fleet] max_cost`: a number of dollars, or the word "none".
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MaxCost {
    Usd(f64),
    Unlimited,
}

impl Serialize for MaxCost {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MaxCost::Usd(usd) => s.serialize_f64(*usd),
            MaxCost::Unlimited => s.serialize_str("none"),
        }
    }
}

impl<'de> Deserialize<'de> for MaxCost {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            // Whole numbers too: serde reads an integer as an f64.
            Usd(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Usd(usd) => Ok(MaxCost::Usd(usd)),
            Raw::Text(t) if t.trim().eq_ignore_ascii_case("none") => Ok(MaxCost::Unlimited),
            Raw::Text(t) => Err(serde::de::Error::custom(format!(
                "{t:?} is not a cost; write dollars like 40.0, or \"none\" for no cap"
            ))),
        }
    }
}

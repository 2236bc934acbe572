//! The command line, as clap types only.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "ralph",
    version,
    about = "Run coding agents unattended through a workflow of phases and agent chains, and finish the work when things break.",
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the workflow in this directory (the default).
    Run(RunArgs),
    /// A complete run on the built-in scripted agent in a temp directory: a crash,
    /// a fallover, a Ctrl+C and a resume. No network.
    Demo {
        /// Keep the demo directory instead of removing it.
        #[arg(long)]
        keep: bool,
    },
    /// Write a starter ralph.toml and PROMPT.md (only those missing), with the agents
    /// found on PATH.
    Init {
        /// Replace existing files too (each is kept as NAME.bak first).
        #[arg(long)]
        force: bool,
        /// Write ralph.example.toml instead: every key, with its default and meaning.
        #[arg(long)]
        example: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Check the config, the goal file, and each agent: binary, version,
    /// credentials present, provider reachable.
    Doctor {
        /// The config file (default: ./ralph.toml, then ./.agent/ralph.toml).
        #[arg(short = 'c', long = "config", value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print the report as JSON: {"ok", "problems", "checks": [{"ok", "what", "note"?}]}.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        place: Place,
    },
    /// The run in this directory, from its checkpoint (live if running), or every
    /// registered run with --all.
    Status {
        #[arg(long)]
        json: bool,
        /// Every run in the run registry, not only this directory's.
        #[arg(long)]
        all: bool,
        /// Remove registry entries whose directory is gone.
        #[arg(long)]
        prune: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Ask the running ralph of this directory (every registered run with --all) to
    /// stop after the current iteration (paused, resumable), or at once like a first
    /// Ctrl+C with --now; wait for it to end. Exits like `systemctl stop`: 0 when it
    /// ended paused or completed, its own code when failed or blocked, 1 on the
    /// timeout, 2 when no run answers.
    Stop {
        /// Stop now, like a first Ctrl+C.
        #[arg(long)]
        now: bool,
        /// Every run of the run registry that a ralph runs now.
        #[arg(long)]
        all: bool,
        /// How long to wait for the run to end.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
        #[command(flatten)]
        place: Place,
    },
    /// The MCP server for the agent of a running ralph, over stdio (launched by the
    /// agent's CLI; ralph registers it per attempt).
    Mcp {
        /// The run's control socket (default: $RALPH_SOCKET).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// The attempt this server belongs to (default: $RALPH_ATTEMPT).
        #[arg(long, value_name = "ID")]
        attempt: Option<u32>,
    },
    /// The watchdog: resume runs interrupted by a crash, a kill or a reboot.
    Watch(WatchCli),
    /// The transcript of the current or last attempt, readable (parsed events for a
    /// structured stream, raw text otherwise).
    Logs {
        /// Keep printing what is appended, and the attempts that follow, while ralph runs.
        #[arg(short, long)]
        follow: bool,
        /// The config file, to know each agent's output format (default: ./ralph.toml,
        /// then ./.agent/ralph.toml).
        #[arg(short = 'c', long = "config", value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        place: Place,
    },
    /// Remove the logs of old runs, keeping the newest `[logs] keep_runs` (or --keep).
    Clean {
        /// Run directories to keep (default: `[logs] keep_runs`).
        #[arg(long, value_name = "N")]
        keep: Option<u32>,
        /// The config file (default: ./ralph.toml, then ./.agent/ralph.toml).
        #[arg(short = 'c', long = "config", value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        place: Place,
    },
    /// Many runs at once: one git worktree and branch per task file, supervised
    /// together; run again after any stop or crash to continue (docs/fleet.md).
    Fleet(FleetCli),
    /// Shell completions.
    Completions { shell: clap_complete::Shell },
    /// The built-in scripted agent (launched by ralph itself).
    #[command(name = "__sim", hide = true)]
    Sim(SimCli),
}

/// Where the project is.
#[derive(Debug, Clone, Args)]
pub(crate) struct Place {
    /// The project directory (default: the current directory).
    #[arg(short = 'C', long = "dir", value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    /// Continue the run in .agent/checkpoint.json.
    #[arg(long, conflicts_with_all = ["no_resume", "inspect_checkpoint"])]
    pub resume: bool,
    /// Archive the checkpoint (never deleted) and start fresh.
    #[arg(long, conflicts_with = "inspect_checkpoint")]
    pub no_resume: bool,
    /// Start a new run at this phase, reusing the earlier phases' results of the last
    /// run; with --resume, move the unfinished run to this phase.
    #[arg(long, value_name = "PHASE", conflicts_with = "inspect_checkpoint")]
    pub from: Option<String>,
    /// For job engines: resume an unfinished run, start one when there is none,
    /// exit 0 when the run is completed, keep the exit code of a paused, failed or
    /// blocked run without resuming it.
    #[arg(long, conflicts_with_all = ["resume", "no_resume", "inspect_checkpoint"])]
    pub resume_or_start: bool,
    /// Show what would be resumed; change nothing.
    #[arg(long)]
    pub inspect_checkpoint: bool,
    /// Print the phases, chains, and the prompt and argv of each phase's first
    /// attempt; launch and write nothing.
    #[arg(long, conflicts_with_all = ["resume", "no_resume", "inspect_checkpoint"])]
    pub dry_run: bool,
    /// With --inspect-checkpoint: print JSON.
    #[arg(long, requires = "inspect_checkpoint")]
    pub json: bool,
    /// The config file (default: ./ralph.toml, then ./.agent/ralph.toml).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub place: Place,
    /// Start a new run in a git working tree with changes ralph did not make; they
    /// are recorded and left out of every commit ralph makes.
    #[arg(long)]
    pub allow_dirty: bool,
    /// Only errors and the final summary of an unfinished run.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// More detail in `.agent/logs/<run>/ralph.log`: -v each decision with its inputs,
    /// -vv every agent event. RALPH_LOG (RUST_LOG syntax) overrides.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The log's format: text, or json (one object per line, for machines).
    #[arg(long, value_enum, default_value_t = crate::report::log::LogFormat::Text, value_name = "FORMAT")]
    pub log_format: crate::report::log::LogFormat,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct SimCli {
    #[arg(long)]
    pub agent: String,
    #[arg(long)]
    pub launch: u32,
    /// The steps, as JSON.
    #[arg(long)]
    pub steps: String,
    #[arg(long)]
    pub resume: Option<String>,
    /// The prompt (ignored by the script, as a real agent's would not be).
    #[arg(last = true)]
    pub prompt: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct WatchCli {
    /// One pass over the registry, then exit (cron, tests).
    #[arg(long)]
    pub once: bool,
    /// The periodic scan, besides reacting to registry changes.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration)]
    pub interval: std::time::Duration,
    /// Resumed runs started at most at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent: u32,
    /// Resume only runs under this directory (repeatable; default: all), and look
    /// under it for interrupted runs the registry lost (at start, and once per boot
    /// with --once).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Directory levels below each --root the scan looks.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub scan_depth: usize,
    /// Only errors: no decisions.
    #[arg(short, long)]
    pub quiet: bool,
    /// Resume nothing until --release (every watcher; shown by `status --all`).
    #[arg(long, conflicts_with_all = ["release", "once"])]
    pub hold: bool,
    /// Lift the hold of --hold.
    #[arg(long, conflicts_with = "once")]
    pub release: bool,
    /// Print a systemd user unit for the watchdog and exit.
    #[arg(long)]
    pub print_systemd_unit: bool,
}

#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct FleetCli {
    #[command(subcommand)]
    pub command: Option<FleetCommand>,
    #[command(flatten)]
    pub run: FleetRunArgs,
}

/// `ralph fleet` itself: start or continue the fleet.
#[derive(Debug, Clone, Args)]
pub(crate) struct FleetRunArgs {
    /// The config file (default: ./ralph.toml, then ./.agent/ralph.toml, in the main checkout).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Start in a main checkout with changes of yours; they stay out of every task.
    #[arg(long)]
    pub allow_dirty: bool,
    /// Run every task to finished and land none: a person reviews and lands them
    /// (`ralph fleet diff TASK`, `ralph fleet land TASK`). Kept for the fleet's life.
    #[arg(long)]
    pub no_land: bool,
    /// Only errors and the summary.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub place: Place,
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum FleetCommand {
    /// One row per task: state, phase and iteration, agent, last activity, cost, disk
    /// use, branch, and the reason of any stop.
    Status {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Stop the fleet (every running task, paused, resumable), or one task; after the
    /// current iteration, or now with --now.
    Stop {
        /// The task to stop; all of them when left out.
        task: Option<String>,
        #[arg(long)]
        now: bool,
        /// How long to wait for the stop.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
        #[command(flatten)]
        place: Place,
    },
    /// The transcript of a task's current or last attempt.
    Logs {
        task: String,
        /// Keep printing while the task runs.
        #[arg(short, long)]
        follow: bool,
        #[command(flatten)]
        place: Place,
    },
    /// A task's worktree, to look or open a shell there.
    Path {
        task: String,
        #[command(flatten)]
        place: Place,
    },
    /// Give a task up: its worktree is removed (unless it holds changes in no
    /// commit), its branch kept unless --delete-branch.
    Discard {
        task: String,
        #[arg(long)]
        delete_branch: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Remove the worktrees of merged and discarded tasks (only those without changes).
    Clean {
        #[command(flatten)]
        place: Place,
    },
    /// Land a finished task now, before the others (a blocked one too, once its
    /// branch was resolved by hand).
    Land {
        task: String,
        #[command(flatten)]
        place: Place,
    },
    /// What a task would land: its branch's changes since it left the fleet's branch.
    Diff {
        task: String,
        #[command(flatten)]
        place: Place,
    },
    /// Queue a failed, blocked or stopped task again (one the merge queue gave up
    /// on: to land again, with its evictions counted from 0).
    Retry {
        task: String,
        #[command(flatten)]
        place: Place,
    },
}

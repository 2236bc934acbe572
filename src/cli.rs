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
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the workflow in this directory (the default).
    Run(RunArgs),
    /// A complete run on the built-in scripted agent in a temp directory: a crash,
    /// a fallover, a Ctrl+C and a resume. No network.
    Demo {
        /// Keep the demo directory instead of removing it.
        #[arg(long)]
        keep: bool,
    },
    /// Write a starter ralph.toml and PROMPT.md, with the agents found on PATH.
    Init {
        /// Overwrite existing files.
        #[arg(long)]
        force: bool,
    },
    /// Check the config, the goal file, and each agent: binary, version,
    /// credentials present, provider reachable.
    Doctor {
        /// The config file (default: ./ralph.toml, then ./.agent/ralph.toml).
        #[arg(short = 'c', long = "config", value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        place: Place,
    },
    /// The run in this directory, from its checkpoint (live if running).
    Status {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        place: Place,
    },
    /// Shell completions.
    Completions { shell: clap_complete::Shell },
    /// The built-in scripted agent (launched by ralph itself).
    #[command(name = "__sim", hide = true)]
    Sim(SimCli),
}

/// Where the project is.
#[derive(Debug, Clone, Args)]
pub struct Place {
    /// The project directory (default: the current directory).
    #[arg(short = 'C', long = "dir", value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Continue the run in .agent/checkpoint.json.
    #[arg(long, conflicts_with_all = ["no_resume", "inspect_checkpoint"])]
    pub resume: bool,
    /// Archive the checkpoint (never deleted) and start fresh.
    #[arg(long, conflicts_with = "inspect_checkpoint")]
    pub no_resume: bool,
    /// For job engines: resume an unfinished run, start one when there is none,
    /// exit 0 when the run is completed, keep the exit code of a paused, failed or
    /// blocked run without resuming it.
    #[arg(long, conflicts_with_all = ["resume", "no_resume", "inspect_checkpoint"])]
    pub resume_or_start: bool,
    /// Show what would be resumed; change nothing.
    #[arg(long)]
    pub inspect_checkpoint: bool,
    /// With --inspect-checkpoint: print JSON.
    #[arg(long, requires = "inspect_checkpoint")]
    pub json: bool,
    /// The config file (default: ./ralph.toml, then ./.agent/ralph.toml).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub place: Place,
    /// Only errors and the final summary of an unfinished run.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// More detail in the log (-vv for everything).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Clone, Args)]
pub struct SimCli {
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

//! Parsing and validating `ralph.toml` (pure: finding and reading the file is the
//! shell's, [`file`], which nothing else here imports).
//!
//! `parse` turns a file's text into a [`Loaded`] configuration or a [`ConfigError`] that names
//! the file, line and column, the key, and what is allowed. Everything that can be
//! checked without running anything is checked here, so a bad config exits 2 before
//! any agent starts.
//!
//! Floors: [`types`] (the file's shape) is a floor of its own, below the agent
//! descriptors that read an agent's table; `validate` is above them, since what a
//! CLI kind allows (its permission modes, its name) is the descriptor's. So the
//! descriptors take their types from `config::types`, never from this file, which
//! reaches `validate`.

mod deser;
#[cfg(test)]
mod documented;
mod error;
pub(crate) mod file;
mod locate;
mod shape;
pub(crate) mod suggest;
#[cfg(test)]
mod tests;
pub(crate) mod types;
mod validate;

use std::path::PathBuf;

pub(crate) use error::ConfigError;
pub use types::*;
pub(crate) use validate::{checksum, parse};

/// The file names searched for, in order, when `-c` is not given.
pub(crate) const SEARCH_PATHS: [&str; 2] = ["ralph.toml", ".agent/ralph.toml"];

/// How one iteration of a phase proves it is done.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum DoneSignal {
    /// The agent's final message ends with `<promise>DONE</promise>` (or the goal tag).
    Tag,
    /// The agent exited 0.
    Exit0,
    /// The file exists and changed during the attempt (path relative to the project).
    File(PathBuf),
    /// The agent called the MCP tool `declare_complete` (with `goal_complete` for the
    /// goal of `until = "complete"`).
    Mcp,
}

/// A phase after validation: its chain resolved to agent names, its rules explicit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Phase {
    pub name: String,
    pub chain_name: String,
    /// Agent names, in fallover order; never empty.
    pub chain: Vec<String>,
    /// Iterations to run, or the cap when `until_complete`; at least 1.
    pub iterations: u32,
    pub until_complete: bool,
    pub done: DoneSignal,
    /// Template override, relative to the project directory.
    pub prompt: Option<PathBuf>,
}

/// The repeating group of phases, resolved to indices into the phase order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RepeatGroup {
    /// The group's first phase: the review, whose goal signal means "nothing left".
    pub first: usize,
    /// The group's last phase (the fix); after it the next pass starts.
    pub last: usize,
    /// Passes at most; at least 1.
    pub passes: u32,
}

impl RepeatGroup {
    /// Whether the phase at `index` belongs to the group.
    pub(crate) fn contains(&self, index: usize) -> bool {
        (self.first..=self.last).contains(&index)
    }
}

/// A configuration that passed every check.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// The file it came from.
    pub path: PathBuf,
    pub config: Config,
    /// Phases in run order.
    pub phases: Vec<Phase>,
    /// `[general.workflow] repeat`, resolved.
    pub repeat: Option<RepeatGroup>,
    /// sha256 of the file's bytes, hex.
    pub checksum: String,
}

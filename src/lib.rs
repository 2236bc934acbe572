//! ralph runs coding agents unattended through a configured workflow of phases and
//! agent fallover chains, and makes sure the work finishes when things break.
//!
//! The crate is split into a pure decision core and a thin I/O shell (which side
//! each module is on is written in `floors::SIDES`, and held by its tests):
//!
//! * pure: `config` (types and validation), `workflow` (phases, repeat rules,
//!   done signals, prompts), `recovery` (classification and policy), `supervise`
//!   (the attempt's detectors), `signal` (the interrupt state machine), `agent`
//!   parsers and its environment allowlist, and `step`, the run's decisions as one
//!   step over them; the leaves they share: `outcome` (the shared types), `text`
//!   (words and times in a zone passed in), `env_names`, `exit_codes`; and
//!   the pure files of shell modules (`state::checkpoint`, `state::writes`,
//!   `state::identity`, `state::registry::entry`, `control::protocol`, `watch::decide`).
//! * shell: `inputs` (the config, the goal and the templates read), `process`
//!   (process groups, graceful termination), `state` (checkpoint, journal, lock),
//!   `run` (the dispatcher loop that carries out the step's effects),
//!   `listeners` (the signal streams), `report` (what the user sees),
//!   `commands` (the subcommands).
//!
//! The floors (a file above everything it imports; no circle of files or of
//! top-level modules, no core file importing a shell file, each without exception)
//! are listed in `floors`, a test-only module.
//!
//! Every module is private to the crate: the binary calls [`main`], and the
//! benchmarks reach what they measure through the hidden `bench` module.

mod agent;
mod app;
mod cli;
mod commands;
mod config;
mod control;
mod env_names;
mod error;
mod events;
mod exit;
mod exit_codes;
mod fleet;
#[cfg(test)]
mod floors;
mod git;
mod host_network;
mod inputs;
mod listeners;
mod notify;
// Every `unsafe` block lives here, each with its reason.
#[allow(unsafe_code)]
mod os;
mod outcome;
mod process;
mod recovery;
mod report;
mod run;
mod secrets;
mod signal;
#[cfg(test)]
mod stable_names;
mod state;
mod step;
mod supervise;
#[cfg(test)]
mod testkit;
mod text;
mod watch;
mod workflow;

pub use app::main;

/// What the benchmarks in `benches/` measure, and nothing else: the rest of the crate
/// is private to it.
#[doc(hidden)]
pub mod bench {
    pub use crate::agent::claude_stream::ClaudeStreamParser;
    pub use crate::agent::event::{AgentEvent, LineParser};
    pub use crate::agent::text::TextParser;
    pub use crate::config::{AgentKind, Timeouts};
    pub use crate::recovery::classify::{EndedBy, Exit, Report, classify};
    pub use crate::secrets::{redact, redacted};
    pub use crate::state::atomic::replace;
    pub use crate::state::store::save_json_with;
    pub use crate::state::writes::Durability;
    pub use crate::supervise::supervisor::Supervisor;
    pub use crate::supervise::tool_text::detect as tool_text_detect;
}

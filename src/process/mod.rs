//! Agent processes: spawned in their own process group with stdin on `/dev/null`,
//! from an argument array (never a shell string), with a scrubbed environment; ended
//! with SIGINT → grace → SIGTERM → grace → SIGKILL sent to the whole group.

pub mod agent_group;
pub mod env;
pub mod escalation;
pub mod escaped;
pub mod group;
pub mod leftovers;
pub mod lines;
pub mod long_line;
pub mod preflight;
pub mod version;

pub use escalation::{Escalation, Step};
pub use group::{Launch, signal_group, spawn};

//! Agent processes: spawned in their own process group from an argument array
//! (never a shell string, [`group`]) with the environment the launcher built (its
//! allowlist is the agent's, `agent::env`);
//! ended with SIGINT → grace → SIGTERM → grace → SIGKILL sent to the whole group
//! ([`escalation`], sent by [`ending`]; [`agent_group`] for the signal paths outside
//! the attempt loop); their output read as lines of bytes, whatever the bytes and the
//! line length ([`lines`], [`long_line`]); what escaped the group ([`escaped`]) or a
//! dead ralph left behind ([`leftovers`]) found and ended; a program's pre-flight
//! and version ([`preflight`], [`version`]). The Linux-specific calls are
//! `crate::os`'s.

pub(crate) mod agent_group;
pub(crate) mod ending;
pub(crate) mod escalation;
pub(crate) mod escaped;
pub(crate) mod group;
pub(crate) mod leftovers;
pub(crate) mod lines;
pub(crate) mod long_line;
pub(crate) mod preflight;
pub(crate) mod version;

pub(crate) use group::{Launch, signal_group, spawn};

/// The runtime every ralph command runs on. One thread: agents are started from it,
/// so their parent-death signal is tied to ralph's life rather than to a worker
/// thread's (see [`group`]).
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

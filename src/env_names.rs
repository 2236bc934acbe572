//! The names of the environment variables ralph sets for the agents it starts and
//! reads back in the subcommand they run (`ralph mcp`): the launcher (`agent`) and
//! the subcommand (`commands`) both name them, so they live below both. A leaf: it
//! imports nothing. (The fleet's own names, `RALPH_FLEET_TASK` and
//! `RALPH_FLEET_SUPERVISOR`, stay in `fleet::task`: only the fleet reads them.)

/// The run's control socket, for a `command` or `sim` agent's `ralph mcp`.
pub(crate) const ENV_SOCKET: &str = "RALPH_SOCKET";
/// The attempt's number, for the same.
pub(crate) const ENV_ATTEMPT: &str = "RALPH_ATTEMPT";

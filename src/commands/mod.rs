//! The subcommands other than `run`: each takes parsed arguments and returns an exit
//! code or an error.

pub(crate) mod clean;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod dry_run;
pub(crate) mod fleet;
pub(crate) mod fleet_status;
pub(crate) mod init;
pub(crate) mod inspect;
pub(crate) mod logs;
pub(crate) mod mcp;
mod mcp_stdio;
pub(crate) mod sim;
pub(crate) mod status;
pub(crate) mod status_all;
pub(crate) mod stop;
pub(crate) mod watch;

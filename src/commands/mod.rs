//! The subcommands other than `run`: each takes parsed arguments and returns an exit
//! code or an error.

pub mod clean;
pub mod demo;
pub mod doctor;
pub mod dry_run;
pub mod init;
pub mod inspect;
pub mod logs;
pub mod mcp;
pub mod sim;
pub mod status;
pub mod stop;
pub mod watch;

//! ralph runs coding agents unattended through a configured workflow of phases and
//! agent fallover chains, and makes sure the work finishes when things break.
//!
//! The crate is split into a pure decision core and a thin I/O shell:
//!
//! * pure: [`config`] (types and validation), [`workflow`] (phases, repeat rules,
//!   done signals, prompts), [`recovery`] (classification and policy),
//!   [`signal`] (the interrupt state machine), [`agent`] parsers.
//! * shell: [`process`] (process groups, graceful termination), [`state`]
//!   (checkpoint, journal, lock), [`run`] (the dispatcher loop), [`report`]
//!   (what the user sees), [`commands`] (the subcommands).

#![warn(clippy::too_many_lines)]

pub mod agent;
pub mod cli;
pub mod commands;
pub mod config;
pub mod control;
pub mod error;
pub mod events;
pub mod exit;
pub mod git;
pub mod notify;
pub mod os;
pub mod outcome;
pub mod process;
pub mod recovery;
pub mod report;
pub mod run;
pub mod signal;
pub mod state;
pub mod supervise;
pub mod watch;
pub mod workflow;

//! Integration tests: the real `ralph` binary against the built-in scripted agent
//! (`kind = "sim"`) and small command agents, each in its own temp directory.

mod fake_chat;
mod fake_provider;
mod harness;
mod real_cli;

mod claude;
mod commands;
mod config;
mod limits;
mod opencode;
mod resume;
mod signals;
mod supervise;
mod workflow;

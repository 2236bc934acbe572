//! Integration tests: the real `ralph` binary against the built-in scripted agent
//! (`kind = "sim"`) and small command agents, each in its own temp directory.

mod crash_harness;
mod fake_chat;
mod fake_gemini;
mod fake_openai;
mod fake_provider;
mod harness;
mod http_fake;
mod real_cli;

mod capture;
mod claude;
mod codex;
mod commands;
mod config;
mod control;
mod crash;
mod deploy;
mod engine;
mod gemini;
mod git;
mod hostile;
mod limits;
mod opencode;
mod passes;
mod resume;
mod signals;
mod signoff;
mod state_format;
mod supervise;
mod watch;
mod workflow;

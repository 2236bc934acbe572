//! Agents: the unified event type, one parser per output format, one descriptor per
//! CLI kind (its own file; `kinds` lists them), the environment an agent gets (`env`,
//! an allowlist built from the descriptors), how an agent is launched and resumed,
//! and the built-in scripted agent.

pub(crate) mod claude;
pub(crate) mod claude_stream;
pub(crate) mod codex;
pub(crate) mod descriptor;
pub(crate) mod env;
pub(crate) mod event;
pub(crate) mod gemini;
pub(crate) mod json;
pub(crate) mod kinds;
pub(crate) mod launch;
pub(crate) mod opencode;
pub(crate) mod preflight;
pub(crate) mod sim;
pub(crate) mod text;
pub(crate) mod versions;

pub(crate) use event::AgentEvent;

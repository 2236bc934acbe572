//! Agents: the unified event type, one parser per output format, one descriptor per
//! CLI kind (its own file; `kinds` lists them), how an agent is launched and
//! resumed, and the built-in scripted agent.

pub(crate) mod claude;
pub mod claude_stream;
pub mod codex;
pub mod descriptor;
pub mod event;
pub mod gemini;
pub(crate) mod json;
pub(crate) mod kinds;
pub mod launch;
pub mod opencode;
pub mod preflight;
pub mod sim;
pub mod text;
pub mod versions;

pub use event::{AgentEvent, LineParser};

//! Agents: the unified event type, one parser per output format, how each kind is
//! launched and resumed, and the built-in scripted agent.

pub mod claude_stream;
pub mod codex;
pub mod event;
pub mod gemini;
pub(crate) mod json;
pub mod launch;
pub mod opencode;
pub mod preflight;
pub mod sim;
pub mod text;
pub mod versions;

pub use event::{AgentEvent, LineParser};

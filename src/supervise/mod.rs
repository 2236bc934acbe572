//! Supervising a live attempt, pure over the event stream: the silence and time
//! limits ([`watch`]), tool-call loops ([`loops`]) and continue storms ([`storm`]). Each detector decides from events and instants only, so it is
//! tested with paused time and no processes.

pub mod completion;
pub mod loops;
mod markdown;
pub mod storm;
pub mod tool_text;
pub mod watch;

pub use watch::Watch;

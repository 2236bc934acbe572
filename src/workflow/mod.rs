//! The workflow model, pure: where a run stands ([`Progress`]), how an attempt's
//! output proves an iteration done ([`done`]), and the prompts ([`prompt`]).

pub mod done;
pub mod goal;
pub mod progress;
pub mod prompt;

pub use progress::{Position, Progress};

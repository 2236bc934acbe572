//! What the user sees: a live progress line on a terminal, timestamped plain lines
//! otherwise, nothing but errors with `-q`; the end-of-run summary; and ralph's own
//! log file ([`log`]).

pub mod lines;
pub mod log;
mod progress;
pub mod summary;

pub use progress::{AttemptLine, Reporter};
pub use summary::{Summary, counts};

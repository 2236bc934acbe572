//! What the user sees: a live progress line on a terminal, timestamped plain lines
//! otherwise, nothing but errors with `-q`; the end-of-run summary; and ralph's own
//! log file ([`log`]).

pub mod clock;
pub mod lines;
pub mod log;
mod next;
mod progress;
pub mod summary;
mod term;

pub use next::next_step;
pub use progress::{AttemptLine, Reporter};
#[cfg(test)]
pub(crate) use summary::tests::checkpoint as summary_fixture;
pub use summary::{Summary, counts};

/// "1 attempt", "2 attempts": a count with its noun.
pub fn plural(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

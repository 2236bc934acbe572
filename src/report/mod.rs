//! What the user sees (and the one question ralph asks, [`ask`]): the line of each run event and the live display's texts
//! ([`lines`], pure), a live progress line on a terminal (`progress`, `term`),
//! timestamped plain lines otherwise, nothing but errors with `-q`; local times
//! ([`clock`]); the end-of-run summary ([`summary`]) and the exact next step
//! (`next`); and ralph's own log file ([`log`]).

use std::fmt::Write;

pub(crate) mod ask;
pub(crate) mod clock;
pub(crate) mod lines;
pub(crate) mod log;
mod next;
mod progress;
pub(crate) mod summary;
mod term;
pub(crate) mod words;

pub(crate) use next::next_step;
pub(crate) use progress::{Mode, Pulse, Reporter};
pub(crate) use summary::Summary;
#[cfg(test)]
pub(crate) use summary::tests::checkpoint as summary_fixture;

/// `text` cut to `width` characters, marked "…" where it was cut.
pub(crate) fn ellipsis(text: &str, width: usize) -> String {
    if text.chars().count() > width {
        format!("{}…", text.chars().take(width).collect::<String>())
    } else {
        text.to_string()
    }
}

/// Appends the line `label: value` when there is a value.
pub(crate) fn labelled(s: &mut String, label: &str, value: Option<impl std::fmt::Display>) {
    if let Some(value) = value {
        let _ = writeln!(s, "{label}: {value}");
    }
}

/// "1 attempt", "2 attempts": a count with its noun.
pub(crate) fn plural(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

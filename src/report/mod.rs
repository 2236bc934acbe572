//! What the user sees (and the one question ralph asks, [`ask`]): the line of each run event and the live display's texts
//! ([`lines`], pure), a live progress line on a terminal (`progress`, `term`),
//! timestamped plain lines otherwise, nothing but errors with `-q`; the zone local
//! times are shown in ([`zone`]); the end-of-run summary ([`summary`]) and the exact next step
//! (`next`); and ralph's own log file ([`log`]).

pub(crate) mod ask;
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

/// The zone every shown time is in: the system's (`TZ`, else `/etc/localtime`). Read
/// by the shell, once for what it shows, and passed to the [`crate::text::clock`]
/// formatters.
pub(crate) fn zone() -> jiff::tz::TimeZone {
    jiff::tz::TimeZone::system()
}

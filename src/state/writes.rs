//! What the decision core says and hears about writing state, with no I/O of its
//! own: how durable a save must be ([`Durability`]), what a log's disk did
//! ([`DiskNews`]), and how long to wait for space before the next try ([`backoff`]).
//! Carrying them out is the shell's: `atomic` (the replacement), `attempt_log` (the
//! log that reports the news), `disk` (telling a full disk from a failure).

use std::path::PathBuf;
use std::time::Duration;

const FIRST_WAIT: Duration = Duration::from_secs(1);
const MAX_WAIT: Duration = Duration::from_secs(30);

/// How much of a replacement must be on disk when the call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The new content survives a power cut from the moment the call returns.
    Durable,
    /// The new content is complete on disk, but until the directory is next synced a
    /// power cut may bring back the previous (complete) version. For states whose
    /// loss is the same as a crash just before them (a registry entry, the lease);
    /// the next durable write in the directory makes this one durable too. (The
    /// run's light checkpoint saves pass it to mean "the journal only", `run::io`.)
    Ordered,
    /// Nothing is synced: a power cut may leave the old file, the new one, or an
    /// empty or partial one. Only for a file whose content is also made durable
    /// elsewhere (the checkpoint, by its snapshot in the fsynced journal); a kill
    /// still leaves the complete old or new file.
    Unsynced,
}

/// What a log's disk did: the run journals it (`disk_full`, `disk_space_back`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DiskNews {
    /// A write found the disk full; `free` as the file system reports it.
    Full { path: PathBuf, free: String },
    /// The output held meanwhile is written.
    SpaceBack { path: PathBuf },
}

/// The wait before try `n` (0-based) of a write the disk had no room for: doubling
/// from 1 s up to 30 s.
pub(crate) fn backoff(n: u32) -> Duration {
    FIRST_WAIT.saturating_mul(2u32.saturating_pow(n.min(16))).min(MAX_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_cap() {
        assert_eq!(backoff(0), Duration::from_secs(1));
        assert_eq!(backoff(1), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(16));
        assert_eq!(backoff(5), MAX_WAIT);
        assert_eq!(backoff(1000), MAX_WAIT);
    }
}

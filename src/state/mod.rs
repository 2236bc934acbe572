//! State on disk under `.agent/`: atomic and private files (no symlinks followed,
//! 0600/0700), the checkpoint and the one reader of its format (`format`), the
//! journal, the lock, the lease, what `logs/` keeps, redaction of what is written,
//! telling a full disk from a failure (`disk`); and the run registry under
//! `$XDG_STATE_HOME`.

pub mod atomic;
pub mod checkpoint;
pub mod disk;
pub mod format;
pub mod journal;
pub mod lease;
pub mod lease_file;
pub mod lock;
pub mod private;
pub mod redact;
pub mod registry;
pub mod retention;
pub mod store;

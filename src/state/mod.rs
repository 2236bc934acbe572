//! State on disk under `.agent/`: atomic and private files (no symlinks followed,
//! 0600/0700), the checkpoint and the one reader of its format (`format`), the
//! journal, the lock, the lease and its holder (`ownership`), what a run holds of its
//! directory (`hold`), each attempt's bounded log (`attempt_log`) and its prompt
//! (`prompt_log`), what `logs/` keeps, telling a full disk from a failure
//! (`disk`), who a run directory is beyond its path
//! (`identity`, looked at by `identity_now`); and the run registry under
//! `$XDG_STATE_HOME`.
//!
//! A shell module with pure files the core reads (no I/O, importing no shell file):
//! `checkpoint`, `writes` (how durable a save must be, what a log's disk did, the
//! full disk's backoff), `identity` and `registry::entry`.

pub(crate) mod atomic;
pub(crate) mod attempt_log;
pub(crate) mod checkpoint;
pub(crate) mod disk;
pub(crate) mod format;
pub(crate) mod hold;
pub(crate) mod identity;
pub(crate) mod identity_now;
pub(crate) mod journal;
pub(crate) mod lease;
pub(crate) mod lease_file;
pub(crate) mod lock;
pub(crate) mod ownership;
pub(crate) mod private;
pub(crate) mod prompt_log;
pub(crate) mod registry;
pub(crate) mod retention;
pub(crate) mod store;
pub(crate) mod writes;

//! State on disk under `.agent/`: atomic files, the checkpoint, the journal, the lock,
//! what `logs/` keeps, and the lease.

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

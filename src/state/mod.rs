//! State on disk under `.agent/`: atomic files, the checkpoint, the journal, the lock,
//! the lease.

pub mod atomic;
pub mod checkpoint;
pub mod journal;
pub mod lease;
pub mod lease_file;
pub mod lock;
pub mod redact;
pub mod store;

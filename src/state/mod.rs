//! State on disk under `.agent/`: atomic files, the checkpoint, the journal, the lock.

pub mod atomic;
pub mod checkpoint;
pub mod disk;
pub mod journal;
pub mod lock;
pub mod private;
pub mod redact;
pub mod store;

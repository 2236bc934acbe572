//! State on disk under `.agent/`: atomic files, the checkpoint, the journal, the lock,
//! and what `logs/` keeps.

pub mod atomic;
pub mod checkpoint;
pub mod disk;
pub mod format;
pub mod journal;
pub mod lock;
pub mod private;
pub mod redact;
pub mod registry;
pub mod retention;
pub mod store;

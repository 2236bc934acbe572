//! `checkpoint.json` as the journal's lagging copy. A save's snapshot is in the
//! journal first (`Io::save`); the file is replaced, unsynced, only when the run's
//! status changes, and otherwise catches up once the oldest save it lacks is
//! [`CATCH_UP`] old, between attempts or while an agent runs, and at the run's end.
//! Each replacement is a new inode and a freed one, which costs ext4 more than
//! ralph's own work for an agent call: so an agent call adds no file. Every reader
//! takes the newer of the two (`state::format::read_newest`).

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio::time::Instant;

use crate::state::checkpoint::Status;
use crate::state::store;
use crate::state::writes::Durability;
use crate::step::waits::CATCH_UP;

/// `checkpoint.json` and what it lacks of the journal.
#[derive(Debug)]
pub(super) struct CheckpointFile {
    path: PathBuf,
    /// The newest save the journal holds and the file does not, and when the file
    /// catches up with it.
    behind: Option<(Value, Instant)>,
    /// The status this process last wrote the file with.
    status: Option<Status>,
}

impl CheckpointFile {
    pub(super) fn new(path: PathBuf) -> Self {
        Self { path, behind: None, status: None }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The journal holds `value` (of a checkpoint with `status`): the file is
    /// replaced now when the status changed, else it waits for the catch-up.
    pub(super) fn journaled(&mut self, value: Value, status: Status) -> io::Result<()> {
        if self.status != Some(status) {
            return self.write(&value, status, Durability::Unsynced);
        }
        let at = self.behind.as_ref().map_or_else(|| Instant::now() + CATCH_UP, |b| b.1);
        self.behind = Some((value, at));
        Ok(())
    }

    /// Replaces the file with `value` now, as durable as `durability` says (a save
    /// the journal could not take, or one that is the file's alone).
    pub(super) fn write(&mut self, value: &Value, status: Status, durability: Durability) -> io::Result<()> {
        self.behind = None;
        store::save_json_with(&self.path, value, durability)?;
        self.status = Some(status);
        Ok(())
    }

    /// When the file catches up, if it lags.
    pub(super) fn due(&self) -> Option<Instant> {
        self.behind.as_ref().map(|b| b.1)
    }

    /// Brings the file up to the journal's newest save: once it is due, or
    /// (`at_once`) now.
    pub(super) fn catch_up(&mut self, at_once: bool) {
        if !at_once && self.due().is_none_or(|at| at > Instant::now()) {
            return;
        }
        let Some((value, _)) = self.behind.take() else { return };
        store::save_json_with(&self.path, &value, Durability::Unsynced)
            .unwrap_or_else(|e| tracing::warn!("cannot write the checkpoint {}: {e}", self.path.display()));
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    fn saved(seq: u64) -> Value {
        serde_json::json!({ "seq": seq })
    }

    /// The file's inode (a new one per replacement) and its `seq`.
    fn on_disk(file: &CheckpointFile) -> (u64, u64) {
        let text = std::fs::read_to_string(file.path()).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        (std::fs::metadata(file.path()).unwrap().ino(), value["seq"].as_u64().unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn saves_of_one_status_leave_the_file_alone_until_the_catch_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = CheckpointFile::new(dir.path().join("checkpoint.json"));
        // The run's first save is a status the file never had: written at once.
        file.journaled(saved(1), Status::Running).unwrap();
        let (inode, seq) = on_disk(&file);
        assert_eq!((seq, file.due()), (1, None));
        // Agent calls: their saves wait, the oldest one's time counts.
        let first = Instant::now();
        for seq in 2..=5 {
            file.journaled(saved(seq), Status::Running).unwrap();
            tokio::time::advance(CATCH_UP / 10).await;
        }
        assert_eq!(on_disk(&file), (inode, 1), "no new file per call");
        assert_eq!(file.due(), Some(first + CATCH_UP));
        file.catch_up(false);
        assert_eq!(on_disk(&file).1, 1, "not yet");
        tokio::time::advance(CATCH_UP).await;
        file.catch_up(false);
        assert_eq!((on_disk(&file).1, file.due()), (5, None), "the newest save");
    }

    #[tokio::test(start_paused = true)]
    async fn a_status_change_or_the_file_alone_writes_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = CheckpointFile::new(dir.path().join("checkpoint.json"));
        file.journaled(saved(1), Status::Running).unwrap();
        file.journaled(saved(2), Status::Running).unwrap();
        // A wait, a stop, the end: whoever reads only the file sees the status.
        file.journaled(saved(3), Status::Waiting).unwrap();
        assert_eq!((on_disk(&file).1, file.due()), (3, None));
        file.journaled(saved(4), Status::Waiting).unwrap();
        // A tool call's start is the file's alone; it carries the lagging save too.
        file.write(&saved(5), Status::Waiting, Durability::Unsynced).unwrap();
        assert_eq!((on_disk(&file).1, file.due()), (5, None));
        file.catch_up(true);
        assert_eq!(on_disk(&file).1, 5);
    }
}

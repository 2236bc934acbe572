//! What the watcher remembers from one pass to the next (`ralph watch --once` is a
//! new process each time): the runs it found *settled*, so that a pass over a
//! thousand finished runs costs one `lstat` each instead of five files read,
//! locked or probed.
//!
//! A run is settled when its `checkpoint.json` parsed with a status
//! [`super::decide::settled`] says the watcher never acts on, and its bookkeeping
//! was (or was just made) the default. It stays settled while its registry entry is
//! the same file (the inode, from the listing) and its checkpoint the same file
//! with the same size and times (every save replaces it by a rename), in the same
//! boot (after a power cut an older checkpoint may be back). The file lives beside
//! the registry, not in it, so writing it wakes no watcher; it is only a cache: a
//! missing or unreadable one makes the pass read everything.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::atomic;
use crate::state::store;
use crate::state::writes::Durability;

/// A file's inode, size, modification and change times (nanoseconds).
pub(super) type Stamp = [i64; 4];

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Seen {
    boot: String,
    /// By the registry entry's file name.
    runs: BTreeMap<String, Settled>,
}

/// The entry's inode, the run's directory, the checkpoint's stamp (a JSON array:
/// the file has a thousand of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Settled(u64, PathBuf, Stamp);

impl Seen {
    /// What an earlier pass in this boot found (empty when nothing is usable), and
    /// an empty record for this pass.
    pub(super) fn load(registry: &Path, boot: &str) -> (Self, Self) {
        let empty = || Self { boot: boot.to_string(), runs: BTreeMap::new() };
        let earlier = store::load_json::<Self>(&file(registry)).ok().flatten();
        (earlier.filter(|s| s.boot == boot && !boot.is_empty()).unwrap_or_else(empty), empty())
    }

    /// Whether the run of the entry `name` (with `inode`) is still settled, and
    /// `known` says yes to its directory (the watcher has its decision); if so it
    /// is carried over into `next`.
    pub(super) fn still(&self, name: &str, inode: u64, next: &mut Self, known: impl Fn(&Path) -> bool) -> bool {
        let Some(run) = self.runs.get(name).filter(|r| r.0 == inode && known(&r.1)) else { return false };
        if stamp(&run.1.join(".agent").join("checkpoint.json")) != Some(run.2) {
            return false;
        }
        next.runs.insert(name.to_string(), run.clone());
        true
    }

    /// The directories of the runs carried over.
    pub(super) fn dirs(&self) -> Vec<PathBuf> {
        self.runs.values().map(|run| run.1.clone()).collect()
    }

    pub(super) fn settle(&mut self, name: &str, entry_inode: u64, dir: &Path, checkpoint: Stamp) {
        self.runs.insert(name.to_string(), Settled(entry_inode, dir.to_path_buf(), checkpoint));
    }

    /// Writes this record when it differs from `before`. Unsynced: a cache.
    pub(super) fn save(&self, registry: &Path, before: &Self) {
        if self != before
            && let Ok(bytes) = serde_json::to_vec(self)
        {
            let _ = atomic::replace(&file(registry), &bytes, Durability::Unsynced);
        }
    }
}

/// The file's [`Stamp`], not following a link; `None` when it cannot be read.
pub(super) fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::symlink_metadata(path).ok()?;
    let nanos = |s: i64, ns: i64| s.saturating_mul(1_000_000_000).saturating_add(ns);
    Some([m.ino() as i64, m.size() as i64, nanos(m.mtime(), m.mtime_nsec()), nanos(m.ctime(), m.ctime_nsec())])
}

fn file(registry: &Path) -> PathBuf {
    registry.with_file_name("watch-seen.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_stays_settled_until_its_checkpoint_or_entry_or_the_boot_changes() {
        let (tmp, registry) = crate::testkit::temp_file("runs");
        let project = tmp.path().join("p");
        std::fs::create_dir_all(project.join(".agent")).unwrap();
        let checkpoint = project.join(".agent/checkpoint.json");
        std::fs::write(&checkpoint, "{}").unwrap();
        let (before, mut seen) = Seen::load(&registry, "boot-1");
        seen.settle("a.json", 7, &project, stamp(&checkpoint).unwrap());
        seen.save(&registry, &before);

        let (again, mut next) = Seen::load(&registry, "boot-1");
        let known = |_: &Path| true;
        assert!(again.still("a.json", 7, &mut next, known));
        assert_eq!(next.dirs(), std::slice::from_ref(&project));
        assert!(!again.still("a.json", 7, &mut next, |_| false), "a run without a decision is read again");
        assert!(!again.still("a.json", 8, &mut next, known), "a rewritten entry is read again");
        assert!(!again.still("b.json", 7, &mut next, known));
        assert!(!Seen::load(&registry, "boot-2").0.still("a.json", 7, &mut next, known));

        // Every save replaces the checkpoint by a rename.
        let tmp_file = project.join(".agent/checkpoint.json.tmp");
        std::fs::write(&tmp_file, "{}").unwrap();
        std::fs::rename(&tmp_file, &checkpoint).unwrap();
        assert!(!again.still("a.json", 7, &mut next, known));
    }
}

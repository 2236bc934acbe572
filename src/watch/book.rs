//! What the watchdog keeps beside the run registry, besides each run's own
//! bookkeeping (`<key>.watch.json`): the last decision about every run (for `ralph
//! status --all`, and so that a long-running watcher prints a decision only when it
//! changes), the hold of `ralph watch --hold`, and the count of resumes in this boot
//! (`[watch] max_resumes_per_boot`) with the `--root` directories already scanned in
//! it.
//!
//! The decisions and the boot's count live in `ralph/` beside `runs/`, so that
//! writing them wakes no watcher; the hold lives in `runs/` (`.watch-hold`, a dot
//! file the registry's readers skip), so that releasing it wakes the watchers at
//! once. Every file is replaced whole; a missing or unreadable one reads as empty
//! (no decisions yet, no hold, no resume in this boot).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::words::Decision;
use crate::state::store;
use crate::state::writes::Durability;

/// The last decision about a run, and since when it has been the decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Recorded {
    #[serde(flatten)]
    pub decision: Decision,
    /// RFC 3339.
    pub since: String,
}

/// The last decision about every registered run, by directory (as a string: a
/// thousand `PathBuf` keys cost the pass more than the rest of it, `Path`'s ordering
/// going component by component).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Decisions {
    pub runs: BTreeMap<String, Recorded>,
}

impl Decisions {
    pub(crate) fn load(registry: &Path) -> Self {
        store::load_json(&decisions_file(registry)).ok().flatten().unwrap_or_default()
    }

    pub(crate) fn get(&self, dir: &Path) -> Option<&Recorded> {
        self.runs.get(key(dir).as_ref())
    }

    /// Records `decision` for `dir` in `next`, keeping the time it was first made
    /// when it is unchanged since `self`; whether it changed.
    pub(crate) fn record(&self, next: &mut Self, dir: &Path, decision: Decision) -> bool {
        let earlier = self.get(dir).filter(|r| r.decision == decision);
        let changed = earlier.is_none();
        let since = earlier.map_or_else(|| jiff::Timestamp::now().to_string(), |r| r.since.clone());
        next.runs.insert(key(dir).into_owned(), Recorded { decision, since });
        changed
    }

    /// Writes these decisions when they differ from `before`. Unsynced: they are
    /// only what the last pass decided.
    pub(crate) fn save(&self, registry: &Path, before: &Self) {
        if self != before
            && let Ok(bytes) = serde_json::to_vec(self)
        {
            let _ = crate::state::atomic::replace(&decisions_file(registry), &bytes, Durability::Unsynced);
        }
    }
}

/// `ralph watch --hold`: the watchdog resumes (and blocks) nothing until released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Hold {
    /// RFC 3339.
    pub since: String,
}

/// The directory a decision about `entry` is kept under: the run's, or for a fleet's
/// supervisor its fleet's folder (`.agent/fleet/`), so a fleet and a run of the same
/// directory keep one decision each.
pub(crate) fn decided_about(entry: &crate::state::registry::Entry) -> std::path::PathBuf {
    if entry.fleet_supervisor() { crate::fleet::paths::fleet_dir(&entry.dir) } else { entry.dir.clone() }
}

pub(crate) fn hold(registry: &Path) -> Option<Hold> {
    // A hold file that does not parse still holds: the person meant it.
    let path = hold_file(registry);
    match store::load_json::<Hold>(&path) {
        Ok(found) => found,
        Err(_) => Some(Hold { since: String::new() }),
    }
}

/// Puts the watchdog on hold; the hold in force already when there was one.
pub(crate) fn set_hold(registry: &Path) -> io::Result<Hold> {
    if let Some(held) = hold(registry) {
        return Ok(held);
    }
    crate::state::registry::create(registry)?;
    let held = Hold { since: jiff::Timestamp::now().to_string() };
    store::save_json_with(&hold_file(registry), &held, Durability::Ordered)?;
    Ok(held)
}

/// Lifts the hold; whether there was one.
pub(crate) fn release(registry: &Path) -> io::Result<bool> {
    match std::fs::remove_file(hold_file(registry)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The watchdog's resumes in one boot, and the `--root` directories it scanned in it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Boot {
    pub boot_id: String,
    pub resumes: u32,
    #[serde(default)]
    pub scanned: Vec<PathBuf>,
}

impl Boot {
    /// This boot's record (a new one after a reboot).
    pub(crate) fn load(registry: &Path, boot_id: &str) -> Self {
        let found: Option<Self> = store::load_json(&boot_file(registry)).ok().flatten();
        found
            .filter(|b| b.boot_id == boot_id)
            .unwrap_or_else(|| Self { boot_id: boot_id.to_string(), ..Self::default() })
    }

    /// Synced before the resume it counts is started, so that a crash of the
    /// watcher never forgets one (a resume counted and not started costs nothing).
    pub(crate) fn save(&self, registry: &Path) -> io::Result<()> {
        store::save_json_with(&boot_file(registry), self, Durability::Ordered)
    }
}

/// A run's decisions are kept under its directory's name: the one key lookups and
/// records agree on.
fn key(dir: &Path) -> std::borrow::Cow<'_, str> {
    dir.to_string_lossy()
}

fn decisions_file(registry: &Path) -> PathBuf {
    registry.with_file_name("watch-decisions.json")
}

fn boot_file(registry: &Path) -> PathBuf {
    registry.with_file_name("watch-boot.json")
}

fn hold_file(registry: &Path) -> PathBuf {
    registry.join(".watch-hold")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::words::Word;

    #[test]
    fn a_decision_keeps_its_time_until_it_changes() {
        let tmp = tempfile::tempdir().expect("tmp");
        let registry = tmp.path().join("runs");
        std::fs::create_dir_all(&registry).expect("registry");
        let before = Decisions::load(&registry);
        let mut next = Decisions::default();
        let left = Decision::new(Word::LeftAlone, "completed", None);
        assert!(before.record(&mut next, Path::new("/p"), left.clone()));
        next.save(&registry, &before);
        let again = Decisions::load(&registry);
        let mut third = Decisions::default();
        assert!(!again.record(&mut third, Path::new("/p"), left));
        assert_eq!(third.get(Path::new("/p")), again.get(Path::new("/p")));
        assert!(again.record(&mut third, Path::new("/p"), Decision::new(Word::Stale, "old", None)));
    }

    #[test]
    fn a_hold_stays_until_released_and_the_count_is_per_boot() {
        let tmp = tempfile::tempdir().expect("tmp");
        let registry = tmp.path().join("runs");
        assert_eq!(hold(&registry), None);
        let held = set_hold(&registry).expect("hold");
        assert_eq!(set_hold(&registry).expect("again"), held);
        assert_eq!(hold(&registry), Some(held));
        assert!(release(&registry).expect("release"));
        assert!(!release(&registry).expect("nothing to release"));
        let mut boot = Boot::load(&registry, "b1");
        boot.resumes = 3;
        boot.save(&registry).expect("save");
        assert_eq!(Boot::load(&registry, "b1").resumes, 3);
        assert_eq!(Boot::load(&registry, "b2").resumes, 0);
    }
}

//! `ralph watch --root DIR`: runs the registry lost. A deleted registry, a run from
//! before the watchdog was installed, a project restored from a backup: its
//! `.agent/checkpoint.json` says interrupted and nothing knows of it. The scan looks
//! under each root (depth-limited, never into `.git`, `node_modules`, `target` or
//! `.agent`, never through a link) and registers such a run so that the pass
//! decides about it like any other, only when nothing else claims it:
//!
//! * its directory has no entry (by path, or by identity through another path);
//! * its run id is registered nowhere (else it is a copy of a registered run);
//! * it is not a fleet's run ([`fleet_owned`]: its fleet's supervisor resumes it).
//!
//! Anything else it reports and leaves alone. A run a ralph is running registers
//! itself, and a run that is not interrupted is not the watchdog's.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use crate::state::checkpoint::Checkpoint;
use crate::state::identity::{DirId, Identity};
use crate::state::identity_now;
use crate::state::registry::{self, Entry};
use crate::state::{format, lock};

/// Directories the scan never enters: they hold no projects of their own, and are
/// large.
const SKIPPED: [&str; 4] = [".git", "node_modules", "target", ".agent"];

/// What the registry knows already.
struct Known {
    dirs: BTreeSet<PathBuf>,
    identities: HashSet<DirId>,
    /// Run id → the directory of its entry.
    runs: BTreeMap<String, PathBuf>,
}

/// Looks under `roots` (to `depth` levels below each) and registers the
/// interrupted runs nothing claims; a line for each run found.
pub(super) fn scan(registry: &Path, roots: &[&PathBuf], depth: usize) -> Vec<String> {
    let (entries, _) = registry::read_all(registry);
    let mut known = Known {
        identities: entries.iter().filter_map(|e| e.identity.map(|id| id.project)).collect(),
        dirs: entries.iter().map(|e| e.dir.clone()).collect(),
        runs: entries.iter().map(|e| (e.run_id.clone(), e.dir.clone())).collect(),
    };
    let mut found = Vec::new();
    for root in roots {
        walk(root, depth, &mut found);
    }
    found.iter().filter_map(|dir| consider(registry, dir, &mut known)).collect()
}

/// Every directory under `dir` (itself included) with `.agent/checkpoint.json`.
fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    if dir.join(".agent").join("checkpoint.json").is_file() {
        found.push(dir.to_path_buf());
    }
    if depth == 0 {
        return;
    }
    let Ok(listing) = std::fs::read_dir(dir) else { return };
    let mut children: Vec<PathBuf> = listing
        .flatten()
        // The entry's own type: a link to a directory is not followed.
        .filter(|item| item.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|item| !SKIPPED.iter().any(|name| item.file_name() == *name))
        .map(|item| item.path())
        .collect();
    children.sort();
    for child in children {
        walk(&child, depth - 1, found);
    }
}

/// Registers the run in `dir` when it is interrupted and nothing claims it; what
/// was done, or why not, when there is something to say.
fn consider(registry: &Path, dir: &Path, known: &mut Known) -> Option<String> {
    let checkpoint = dir.join(".agent").join("checkpoint.json");
    let cp = format::read_newest(&checkpoint).ok().flatten()?.checkpoint;
    let interrupted = super::decide::may_resume(cp.status);
    if !interrupted || lock::held_by_a_live_ralph(&dir.join(".agent").join("ralph.lock"), lock::DEAD_HOLDER_GRACE) {
        return None;
    }
    let identity = identity_now::of(dir);
    let registered =
        known.dirs.contains(dir) || identity.as_ref().is_ok_and(|id| known.identities.contains(&id.project));
    if registered {
        return None;
    }
    let (shown, run) = (dir.display(), &cp.run_id);
    if fleet_owned(dir) {
        return Some(format!(
            "{shown}: found interrupted run {run}, left alone: it is a fleet's task, its supervisor resumes it"
        ));
    }
    if let Some(other) = known.runs.get(run) {
        return Some(format!(
            "{shown}: found interrupted run {run}, left alone: that run is registered at {} (this is a copy of it, \
             or it moved); `ralph --resume` in it continues it by hand",
            other.display()
        ));
    }
    let entry = match entry(dir, &cp, identity.ok()) {
        Ok(entry) => entry,
        Err(e) => return Some(format!("{shown}: found interrupted run {run}, left alone: {e}")),
    };
    if let Err(e) = registry::write(registry, &entry) {
        return Some(format!("{shown}: found interrupted run {run}, but cannot register it: {e}"));
    }
    known.dirs.insert(dir.to_path_buf());
    known.runs.insert(run.clone(), dir.to_path_buf());
    Some(format!("{shown}: found interrupted run {run} that the registry did not know; registered it"))
}

/// The entry of a found run, as the run would have registered itself, under the
/// config it ran with.
fn entry(dir: &Path, cp: &Checkpoint, identity: Option<Identity>) -> Result<Entry, String> {
    let recorded = Path::new(&cp.config_path);
    let path = crate::config::file::find(dir, (!cp.config_path.is_empty()).then_some(recorded))
        .map_err(|e| format!("cannot find its config: {e}"))?;
    let loaded = crate::config::file::load(&path).map_err(|e| format!("cannot read its config: {e}"))?;
    let mut entry = crate::run::registration::entry(dir, &loaded, cp);
    entry.identity = identity;
    // No ralph of it runs; the lock names the last one.
    entry.pid = lock::read_info(&dir.join(".agent").join("ralph.lock")).map_or(0, |info| info.pid);
    Ok(entry)
}

/// Whether the run in `dir` belongs to a fleet (a task of `ralph fleet`, whose
/// supervisor resumes it): the one test the scan asks, to be kept in step with how
/// a fleet marks its task runs (the task's worktree holds `.agent/fleet-task.json`).
pub(crate) fn fleet_owned(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(".agent").join("fleet-task.json")).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_skips_heavy_directories_links_and_depth() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        for dir in ["a", "b/c", "d/node_modules/x", "e/target/y", "f/.git/z", "g/h/i/j", "a/sub"] {
            std::fs::create_dir_all(root.join(dir).join(".agent")).expect("mkdir");
            std::fs::write(root.join(dir).join(".agent/checkpoint.json"), "{}").expect("write");
        }
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).expect("link");
        let mut found = Vec::new();
        walk(root, 3, &mut found);
        let rel: Vec<String> = found.iter().map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string()).collect();
        assert_eq!(rel, ["a", "a/sub", "b/c"]);
    }
}

//! The shell of the lock rule ([`super::stale_lock`]): finds a repository's git lock
//! files, gathers who may own each from `/proc` (which processes have it open, which
//! gits work in the repository, which processes cannot be read), and removes those
//! the rule calls stale. The one place ralph removes a git lock: after a crash in a
//! run's commit step, at a run's start, at a fleet's start, and while a git call
//! that met a lock is retried ([`super::repo`], which calls it).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub(crate) use super::stale_lock::Removed;
use super::stale_lock::{self, Decision, Facts, Holder, How};

/// One look at a lock file.
#[derive(Debug)]
pub(crate) enum Look {
    /// It is not there (any more).
    Gone,
    Removed(Removed),
    /// It stays: who may own it, or why it is not judged yet.
    Held(String),
    /// Nobody may own it, but it is too new to judge (the rule's age floor).
    Young,
}

/// The waits between looks at a lock that stays: growing, about 6 s in all.
pub(crate) fn waits() -> impl Iterator<Item = Duration> {
    (0..7).map(|i| Duration::from_millis(50 << i))
}

/// The lock a failed git names: `Unable to create '/r/.git/index.lock': File exists`
/// (a ref's lock and `packed-refs.lock` alike). Not a compare-and-swap that found
/// another value (`is at X but expected Y`): that is an answer, never retried.
pub(crate) fn named_in(stderr: &[u8]) -> Option<PathBuf> {
    let text = String::from_utf8_lossy(stderr);
    let (_, rest) = text.split_once("Unable to create '")?;
    let (path, rest) = rest.split_once("': ")?;
    (path.ends_with(".lock") && rest.starts_with("File exists")).then(|| PathBuf::from(path))
}

/// One lock, looked at and removed when the rule says it is stale.
pub(crate) fn look(lock: &Path) -> Look {
    let Some(common) = lock.ancestors().find(|d| d.join("objects").is_dir() && d.join("HEAD").exists()) else {
        return Look::Held("nobody known (it is not in a git directory ralph recognises)".into());
    };
    settle(lock, &roots(common))
}

/// [`look`] until the lock is gone or removed; a lock that stays is who holds it.
pub(crate) fn wait_out(lock: &Path) -> Result<(), String> {
    let mut waits = waits();
    loop {
        match look(lock) {
            Look::Gone | Look::Removed(_) => return Ok(()),
            look @ (Look::Held(_) | Look::Young) => match waits.next() {
                Some(d) => std::thread::sleep(d),
                None => return Err(look.holder()),
            },
        }
    }
}

/// Every stale lock of the repository whose git directory is `common` (its own and
/// every worktree's), removed; one too new to judge is looked at again once it is
/// old enough (after a crash, the lock of the git killed a moment ago).
pub(crate) fn sweep(common: &Path) -> Vec<Removed> {
    let mut found = Vec::new();
    find(common, &mut found);
    let roots = roots(common);
    let mut removed = Vec::new();
    for again in [false, true] {
        if again && !found.is_empty() {
            std::thread::sleep(stale_lock::AGE_FLOOR);
        }
        let mut young = Vec::new();
        for lock in found {
            match settle(&lock, &roots) {
                Look::Removed(r) => removed.push(r),
                Look::Young => young.push(lock),
                Look::Gone | Look::Held(_) => {}
            }
        }
        found = young;
    }
    removed
}

/// The rule's facts about a linked worktree's record (a folder under `worktrees/`
/// of the git directory `common`): its age is its newest change, of the folder or a
/// file in it (git writes them one by one); who may own it as for a lock. `None`
/// when it is gone.
pub(crate) fn record_facts(record: &Path, common: &Path) -> Option<Facts> {
    let real = std::fs::canonicalize(record).ok()?;
    let meta = std::fs::symlink_metadata(&real).ok()?;
    let files = std::fs::read_dir(&real).into_iter().flatten().flatten();
    let changes = files.filter_map(|e| e.metadata().ok()?.modified().ok()).chain(meta.modified().ok());
    let newest = changes.max().unwrap_or(SystemTime::UNIX_EPOCH);
    let age = SystemTime::now().duration_since(newest).unwrap_or_default();
    Some(Facts { age, holder: holder(&real, meta.uid(), &roots(common)) })
}

impl Look {
    /// Who holds a lock that stays, as the person is told.
    pub(crate) fn holder(self) -> String {
        match self {
            Look::Held(holder) => holder,
            _ => "nobody yet (it is too new to judge)".into(),
        }
    }
}

/// The lock files git leaves in its directory (`index.lock`, `HEAD.lock`,
/// `packed-refs.lock`, `config.lock`, a ref's under `refs/`, each linked worktree's
/// under `worktrees/`); a worktree's `locked` file is no lock file.
fn find(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() && entry.file_name() != "objects" => find(&path, found),
            Ok(t) if t.is_file() && path.extension().is_some_and(|x| x == "lock") => found.push(path),
            _ => {}
        }
    }
}

/// Where a git that may own a lock works: the git directory, the main checkout and
/// every linked worktree, by their real paths (as `/proc` shows a working directory).
fn roots(common: &Path) -> Vec<PathBuf> {
    let mut roots = vec![common.to_path_buf()];
    roots.extend(
        common.file_name().is_some_and(|n| n == ".git").then(|| common.parent()).flatten().map(Path::to_path_buf),
    );
    for admin in std::fs::read_dir(common.join("worktrees")).into_iter().flatten().flatten() {
        let dot_git = std::fs::read_to_string(admin.path().join("gitdir")).unwrap_or_default();
        roots.extend(Path::new(dot_git.trim()).parent().map(Path::to_path_buf));
    }
    roots.iter().map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone())).collect()
}

/// The first live process that may own `lock` (its real path; the file owned by
/// `owner`): one that has it open, a git working in the repository, or one whose
/// open files cannot be read but that could have made it.
fn holder(lock: &Path, owner: u32, roots: &[PathBuf]) -> Option<Holder> {
    let me = std::process::id().to_string();
    let pids = std::fs::read_dir(crate::os::proc_root()).ok()?.flatten();
    pids.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).find_map(|pid| {
        let dir = crate::os::proc_root().join(pid.to_string());
        // Gone meanwhile: no holder.
        let status = std::fs::read_to_string(dir.join("status")).ok()?;
        let field = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).unwrap_or_default();
        let name = field("Name:").to_string();
        let in_repo = || std::fs::read_link(dir.join("cwd")).is_ok_and(|c| roots.iter().any(|r| c.starts_with(r)));
        let open = std::fs::read_dir(dir.join("fd"))
            .ok()
            .map(|mut fds| fds.any(|fd| fd.is_ok_and(|fd| std::fs::read_link(fd.path()).is_ok_and(|f| f == lock))));
        let how = match open {
            Some(true) => How::Open,
            Some(false) if name == "git" && in_repo() => How::GitHere,
            // The effective uid, the second of four.
            None if field("Uid:").split_whitespace().nth(1) == Some(&owner.to_string()) => How::Unreadable,
            _ => return None,
        };
        Some(Holder { pid, name, how, ours: field("PPid:") == me })
    })
}

/// Decides on one lock and does it.
fn settle(lock: &Path, roots: &[PathBuf]) -> Look {
    // `/proc` names files by their real path.
    let Ok((real, meta)) = std::fs::canonicalize(lock).and_then(|r| Ok((r.clone(), std::fs::symlink_metadata(r)?)))
    else {
        return Look::Gone;
    };
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let age = SystemTime::now().duration_since(modified).unwrap_or_default();
    let facts = Facts { age, holder: holder(&real, meta.uid(), roots) };
    match stale_lock::decide(&facts) {
        Decision::Keep(holder) => Look::Held(holder.to_string()),
        Decision::Wait => facts.holder.map_or(Look::Young, |h| Look::Held(h.to_string())),
        // Another ralph may have removed it and a new git made it again meanwhile.
        Decision::Remove(_) if std::fs::symlink_metadata(&real).map(|m| m.ino()).ok() != Some(meta.ino()) => Look::Gone,
        Decision::Remove(why) => match std::fs::remove_file(&real) {
            Ok(()) => {
                tracing::warn!("removed the git lock {}: {why}", lock.display());
                Look::Removed(Removed { path: lock.to_path_buf(), why })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Look::Gone,
            Err(e) => Look::Held(format!("nobody, but ralph cannot remove it ({e})")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_a_failure_names_is_found() {
        let named = |s: &str| named_in(s.as_bytes());
        let index =
            "fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running";
        assert_eq!(named(index), Some(PathBuf::from("/r/.git/index.lock")));
        let r = "error: cannot lock ref 'refs/heads/a': Unable to create '/r/.git/refs/heads/a.lock': File exists.";
        assert_eq!(named(r), Some(PathBuf::from("/r/.git/refs/heads/a.lock")));
        assert_eq!(named("error: cannot lock ref 'refs/heads/a': is at 1234 but expected 5678"), None);
        assert_eq!(named("fatal: not a git repository"), None);
    }

    #[test]
    fn the_lock_files_are_found_and_a_worktree_locked_file_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path();
        for d in ["objects", "refs/heads/ralph", "worktrees/a"] {
            std::fs::create_dir_all(g.join(d)).unwrap();
        }
        let locks = ["index.lock", "packed-refs.lock", "refs/heads/ralph/x.lock", "worktrees/a/index.lock"];
        for f in locks.iter().chain(&["HEAD", "worktrees/a/locked", "refs/heads/main"]) {
            std::fs::write(g.join(f), "").unwrap();
        }
        let mut found = Vec::new();
        find(g, &mut found);
        found.sort();
        let mut want: Vec<PathBuf> = locks.iter().map(|l| g.join(l)).collect();
        want.sort();
        assert_eq!(found, want);
    }
}

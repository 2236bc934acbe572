//! The shell of the lock rule ([`super::stale_lock`]): finds a repository's git lock
//! files, gathers who may own each from `/proc` (which processes have it open, which
//! gits work in the repository, which processes cannot be read), and removes those
//! the rule calls stale. The one place ralph removes a git lock: after a crash in a
//! run's commit step, at a run's start, at a fleet's start, and while a git call
//! that met a lock is retried ([`super::repo`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::repo::{GitError, Repo};
use super::stale_lock::{self, Decision, Facts, Holder, How};

/// A lock file removed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Removed {
    pub path: PathBuf,
    pub why: String,
}

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
    settle(lock, &processes(), &roots(common, lock))
}

/// [`look`] until the lock is gone or removed; a lock that stays is
/// [`GitError::Locked`], naming who holds it.
pub(crate) fn wait_out(lock: &Path) -> Result<Option<Removed>, GitError> {
    let mut waits = waits();
    loop {
        match look(lock) {
            Look::Gone => return Ok(None),
            Look::Removed(r) => return Ok(Some(r)),
            look @ (Look::Held(_) | Look::Young) => match waits.next() {
                Some(d) => std::thread::sleep(d),
                None => return Err(GitError::Locked { path: lock.to_path_buf(), holder: look.holder() }),
            },
        }
    }
}

/// Every stale lock of the repository (its own and every worktree's), removed; one
/// too new to judge is looked at again once it is old enough (after a crash, the
/// lock of the git killed a moment ago).
pub(crate) fn sweep(repo: &Repo) -> Vec<Removed> {
    let Ok(common) = repo.git(&["rev-parse", "--git-common-dir"]) else { return Vec::new() };
    let common = repo.top().join(common.trim());
    let found = find(&common);
    if found.is_empty() {
        return Vec::new();
    }
    let procs = processes();
    let mut young = Vec::new();
    let mut removed = Vec::new();
    for lock in found {
        match settle(&lock, &procs, &roots(&common, &lock)) {
            Look::Removed(r) => removed.push(r),
            Look::Young => young.push(lock),
            _ => {}
        }
    }
    if !young.is_empty() {
        std::thread::sleep(stale_lock::AGE_FLOOR);
        let procs = processes();
        removed.extend(young.iter().filter_map(|lock| match settle(lock, &procs, &roots(&common, lock)) {
            Look::Removed(r) => Some(r),
            _ => None,
        }));
    }
    removed
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

/// The lock files git leaves: `*.lock` in the git directory and in each linked
/// worktree's (`index.lock`, `HEAD.lock`, `packed-refs.lock`, `config.lock`), and
/// every ref's under `refs/`. A worktree's `locked` file is no lock file.
fn find(common: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![common.to_path_buf()];
    if let Ok(list) = std::fs::read_dir(common.join("worktrees")) {
        dirs.extend(list.flatten().map(|e| e.path()));
    }
    let mut found = Vec::new();
    let mut refs = vec![common.join("refs")];
    for dir in &dirs {
        refs.push(dir.join("refs"));
        found.extend(lock_files(dir).into_iter().filter(|p| p.is_file()));
    }
    refs.dedup();
    while let Some(dir) = refs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => refs.push(path),
                Ok(t) if t.is_file() && is_lock(&path) => found.push(path),
                _ => {}
            }
        }
    }
    found
}

fn lock_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| is_lock(p)).collect()
}

fn is_lock(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "lock")
}

/// Where a git that may own `lock` works: the worktree (and its git directory) a
/// per-worktree lock belongs to, or every worktree of the repository for a shared
/// one (refs, `packed-refs`, `config`).
fn roots(common: &Path, lock: &Path) -> Vec<PathBuf> {
    let worktree = |admin: &Path| -> Option<PathBuf> {
        let dot_git = std::fs::read_to_string(admin.join("gitdir")).ok()?;
        Some(PathBuf::from(dot_git.trim()).parent()?.to_path_buf())
    };
    let main = (common.file_name().is_some_and(|n| n == ".git")).then(|| common.parent()).flatten();
    let mut roots = vec![common.to_path_buf()];
    let own = lock.strip_prefix(common.join("worktrees")).ok().and_then(|rest| rest.components().next());
    if let Some(name) = own {
        let admin = common.join("worktrees").join(name);
        roots = vec![admin.clone()];
        roots.extend(worktree(&admin));
    } else if lock.parent() == Some(common) && !["packed-refs.lock", "config.lock"].iter().any(|n| lock.ends_with(n)) {
        roots.extend(main.map(Path::to_path_buf));
    } else {
        roots.extend(main.map(Path::to_path_buf));
        for admin in std::fs::read_dir(common.join("worktrees")).into_iter().flatten().flatten() {
            roots.extend(worktree(&admin.path()));
        }
    }
    roots.iter().map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.clone())).collect()
}

/// A live process as `/proc` shows it.
struct Proc {
    pid: u32,
    name: String,
    uid: Option<u32>,
    ppid: u32,
    cwd: Option<PathBuf>,
    /// Its open files; `None` when they cannot be read.
    open: Option<Vec<PathBuf>>,
}

fn processes() -> Vec<Proc> {
    let Ok(list) = std::fs::read_dir("/proc") else { return Vec::new() };
    list.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).filter_map(process).collect()
}

fn process(pid: u32) -> Option<Proc> {
    let dir = PathBuf::from(format!("/proc/{pid}"));
    // Gone meanwhile: no holder.
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let field = |key: &str| status.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
    let open = match std::fs::read_dir(dir.join("fd")) {
        Ok(fds) => Some(fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => None,
    };
    Some(Proc {
        pid,
        name: field("Name:").unwrap_or_default().to_string(),
        // The effective uid, the second of four.
        uid: field("Uid:").and_then(|u| u.split_whitespace().nth(1)?.parse().ok()),
        ppid: field("PPid:").and_then(|p| p.parse().ok()).unwrap_or(0),
        cwd: std::fs::read_link(dir.join("cwd")).ok(),
        open,
    })
}

/// The first process that may own `lock` (its file owned by `owner`).
fn holder(lock: &Path, owner: u32, procs: &[Proc], roots: &[PathBuf]) -> Option<Holder> {
    let me = std::process::id();
    procs.iter().find_map(|p| {
        let how = match &p.open {
            Some(open) if open.iter().any(|f| f == lock) => How::Open,
            _ if p.name == "git" && p.cwd.as_ref().is_some_and(|c| roots.iter().any(|r| c.starts_with(r))) => {
                How::GitHere
            }
            None if p.uid == Some(owner) => How::Unreadable,
            _ => return None,
        };
        Some(Holder { pid: p.pid, name: p.name.clone(), how, ours: p.ppid == me })
    })
}

/// Decides on one lock and does it.
fn settle(lock: &Path, procs: &[Proc], roots: &[PathBuf]) -> Look {
    // `/proc` names files by their real path.
    let real = match (lock.parent().and_then(|d| std::fs::canonicalize(d).ok()), lock.file_name()) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => lock.to_path_buf(),
    };
    let Ok(meta) = std::fs::symlink_metadata(&real) else { return Look::Gone };
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let age = SystemTime::now().duration_since(modified).unwrap_or_default();
    let facts = Facts { age, holder: holder(&real, meta.uid(), procs, roots) };
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
        let mut found = find(g);
        found.sort();
        let mut want: Vec<PathBuf> = locks.iter().map(|l| g.join(l)).collect();
        want.sort();
        assert_eq!(found, want);
    }
}

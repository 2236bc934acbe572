//! JSON state files on top of [`super::atomic::replace`]: saving, loading with a clear
//! distinction between "absent", "corrupt" and "unreadable", setting a corrupt
//! file aside without ever losing it, and the `.agent/.gitignore` that keeps
//! run-time files out of the user's commits.

use std::fs::DirBuilder;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::atomic::{parent_dir, replace, sync_dir};
use super::writes::Durability;

/// Why a state file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// The file exists but is not valid JSON for the expected type. The caller
    /// must not overwrite it (design §7): set it aside and tell the user.
    #[error("{} is corrupt: {message}", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Writes `value` as pretty JSON with a trailing newline, atomically (mode 0600).
pub(crate) fn save_json<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    save_json_with(path, value, Durability::Durable)
}

/// `save_json` with a chosen [`Durability`].
pub fn save_json_with<T: Serialize>(path: &Path, value: &T, durability: Durability) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    replace(path, &bytes, durability)
}

/// Loads a JSON file: `Ok(None)` when it does not exist.
///
/// A parse failure is [`StoreError::Corrupt`] with serde's message, which names
/// the line and column; invalid UTF-8 counts as corrupt too, not as an I/O error,
/// because retrying will not help and the file must be kept for inspection.
pub(crate) fn load_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, StoreError> {
    let bytes = super::private::read_existing(path).map_err(|source| StoreError::Io { path: path.into(), source })?;
    let value = bytes.map(|b| serde_json::from_slice(&b)).transpose();
    value.map_err(|e| StoreError::Corrupt { path: path.to_path_buf(), message: e.to_string() })
}

/// Moves `dir/name.ext` to `dir/name.<label>-<UTC timestamp>.ext` (for example
/// `checkpoint.corrupt-20261130T162300Z.json`) and returns the new path.
///
/// Never overwrites: an earlier set-aside file with the same second gets `-2`,
/// `-3`, … The move is a hard link followed by an unlink because link fails
/// atomically when the name is taken, where rename would silently replace it; a
/// kill between the two leaves both names, which loses nothing. File systems
/// without hard links fall back to check-then-rename.
pub(crate) fn set_aside(path: &Path, label: &str) -> io::Result<PathBuf> {
    let dir = parent_dir(path);
    let stem = path.file_stem().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let (stem, ext) = (stem.display(), path.extension().map(|e| format!(".{}", e.display())).unwrap_or_default());
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    for n in 1u32.. {
        let suffix = if n == 1 { String::new() } else { format!("-{n}") };
        let target = dir.join(format!("{stem}.{label}-{stamp}{suffix}{ext}"));
        match std::fs::hard_link(path, &target) {
            Ok(()) => std::fs::remove_file(path)?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(e),
            Err(_) if std::fs::symlink_metadata(&target).is_ok() => continue,
            Err(_) => std::fs::rename(path, &target)?,
        }
        sync_dir(dir)?;
        return Ok(target);
    }
    Err(io::Error::other("no free name to set the file aside"))
}

/// The newest file [`set_aside`] kept of `path` with `label`, if any.
pub(crate) fn newest_aside(path: &Path, label: &str) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    let prefix = format!("{stem}.{label}-");
    let names = std::fs::read_dir(parent_dir(path)).ok()?.filter_map(Result::ok);
    let newest = names.map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(&prefix)).max();
    newest.map(|name| parent_dir(path).join(name))
}

/// How old a temporary file must be before a starting run takes it for the leftover
/// of a killed write. Holding the run lock does not make a ralph the only writer
/// here: a ralph starting at the same moment writes `.gitignore` (and `ralph doctor`
/// its probe) through a temporary file before it asks for the lock, and a write in
/// progress lasts milliseconds. The margin also covers a writer's clock that is
/// behind (a shared file system stamps with the server's clock) and a writer
/// stopped in the middle (Ctrl+Z). A younger leftover waits for a later start.
pub(crate) const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Removes the temporary files of writes that were killed half-way (`.tmp*` in
/// `dir` older than [`LEFTOVER_AGE`]); returns how many. Called by the lock holder;
/// a younger temporary file may be another process's write in progress.
pub(crate) fn remove_leftover_temp_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let now = std::time::SystemTime::now();
    // A modification time in the future (a clock ahead) is young.
    let old = |modified: std::time::SystemTime| now.duration_since(modified).is_ok_and(|age| age >= LEFTOVER_AGE);
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
        .filter(|e| {
            // Not followed: a link's own time.
            let meta = e.metadata();
            meta.is_ok_and(|m| (m.is_file() || m.is_symlink()) && m.modified().is_ok_and(old))
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// What `.agent/.gitignore` ignores: everything ralph writes at run time. Not
/// `ralph.toml` or prompt files, which a project may commit, and not the
/// `.gitignore` itself.
const GITIGNORE: &str = "\
# Written by ralph: run-time state, not meant for commits.
# ralph.toml and prompt files in this directory are not ignored.
checkpoint.json
checkpoint.*.json
events.jsonl
ralph.lock
ralph.lease
logs/
artifacts/
*.sock
.tmp*
";

/// Creates `agent_dir` (or makes an existing one private, refusing a link in its
/// place) and writes its `.gitignore` unless one exists already: a user's own file
/// wins and is never rewritten.
pub(crate) fn ensure_gitignore(agent_dir: &Path) -> io::Result<()> {
    if let Some(parent) = agent_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        DirBuilder::new().recursive(true).create(parent)?;
    }
    super::private::ensure_dir(agent_dir)?;
    let path = agent_dir.join(".gitignore");
    if std::fs::symlink_metadata(&path).is_ok() {
        return Ok(());
    }
    // Before the run lock, so other ralphs may be here too: whatever they do to this
    // file (write theirs first) leaves a complete `.gitignore`.
    let mut attempts = 0;
    loop {
        let mut tmp = super::private::temp_file_in(agent_dir)?;
        tmp.write_all(GITIGNORE.as_bytes())?;
        tmp.as_file().sync_all()?;
        match tmp.persist_noclobber(&path) {
            Ok(_) => return sync_dir(agent_dir),
            // Someone (another ralph) created it meanwhile: theirs is as good.
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
            // The temporary file went (a clean-up that took it for a leftover): again.
            Err(e) if e.error.kind() == io::ErrorKind::NotFound && attempts < 3 => attempts += 1,
            Err(e) => return Err(e.error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn the_repositorys_own_state_directory_ignores_what_ralph_would_ignore() {
        assert_eq!(include_str!("../../.agent/.gitignore"), GITIGNORE);
    }
    use std::fs::Permissions;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct S {
        a: u32,
        b: String,
    }

    #[test]
    fn save_then_load_round_trips() {
        let (_dir, p) = crate::testkit::temp_file("s.json");
        let v = S { a: 7, b: "x".into() };
        save_json(&p, &v).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.ends_with("}\n"));
        assert!(text.contains("\n  \"a\": 7"), "pretty: {text}");
        assert_eq!(load_json::<S>(&p).unwrap(), Some(v));
    }

    #[test]
    fn load_missing_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load_json::<S>(&dir.path().join("nope.json")).unwrap().is_none());
    }

    #[test]
    fn load_corrupt_names_line_and_column() {
        let (_dir, p) = crate::testkit::temp_file("s.json");
        std::fs::write(&p, "{\n  \"a\": 7,\n  \"b\": \n").unwrap();
        match load_json::<S>(&p) {
            Err(StoreError::Corrupt { path, message }) => {
                assert_eq!(path, p);
                assert!(message.contains("line"), "{message}");
                assert!(message.contains("column"), "{message}");
            }
            other => panic!("expected corrupt, got {other:?}"),
        }
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(matches!(load_json::<S>(&p), Err(StoreError::Corrupt { .. })));
    }

    #[test]
    fn load_unreadable_is_io() {
        let dir = tempfile::tempdir().unwrap();
        // A directory in place of the file: reading fails with an I/O error.
        let p = dir.path().join("s.json");
        std::fs::create_dir(&p).unwrap();
        let err = load_json::<S>(&p).unwrap_err();
        assert!(matches!(err, StoreError::Io { .. }));
        assert!(err.to_string().starts_with("cannot read "));
    }

    #[test]
    fn leftover_temp_files_are_removed_and_writes_in_progress_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let long_ago = std::time::SystemTime::now() - LEFTOVER_AGE - std::time::Duration::from_secs(1);
        for i in 0..3 {
            let file = std::fs::File::create(dir.path().join(format!(".tmpAbC{i}"))).unwrap();
            file.set_modified(long_ago).unwrap();
        }
        // Another ralph's `.gitignore` on its way, as a start-up makes it.
        let in_progress = super::super::private::temp_file_in(dir.path()).unwrap();
        std::fs::write(dir.path().join("checkpoint.json"), b"{}").unwrap();
        assert_eq!(remove_leftover_temp_files(dir.path()), 3);
        let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        let mut kept = [std::ffi::OsString::from("checkpoint.json"), in_progress.path().file_name().unwrap().into()];
        kept.sort();
        assert_eq!(names, kept);
        in_progress.persist_noclobber(dir.path().join(".gitignore")).unwrap();
    }

    #[test]
    fn a_linked_checkpoint_is_not_read_through() {
        let (_dir, p) = crate::testkit::temp_file("s.json");
        std::os::unix::fs::symlink("/etc/hostname", &p).unwrap();
        let err = load_json::<S>(&p).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }

    #[test]
    fn set_aside_never_overwrites() {
        let (_dir, p) = crate::testkit::temp_file("checkpoint.json");
        let mut seen = Vec::new();
        for i in 0..3 {
            std::fs::write(&p, format!("{i}")).unwrap();
            let q = set_aside(&p, "corrupt").unwrap();
            assert!(!p.exists());
            assert_eq!(std::fs::read_to_string(&q).unwrap(), format!("{i}"));
            seen.push(q);
        }
        let name0 = seen[0].file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name0.starts_with("checkpoint.corrupt-"), "{name0}");
        assert!(name0.ends_with("Z.json"), "{name0}");
        // checkpoint.corrupt-YYYYMMDDTHHMMSSZ.json
        assert_eq!(name0.len(), "checkpoint.corrupt-20261130T162300Z.json".len());
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 3);
        assert!(newest_aside(&p, "corrupt").is_some_and(|q| seen.contains(&q)));
        assert_eq!(newest_aside(&p, "archived"), None);
    }

    #[test]
    fn set_aside_missing_file_fails() {
        let dir = tempfile::tempdir().unwrap();
        assert!(set_aside(&dir.path().join("checkpoint.json"), "x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn gitignore_created_once_with_private_dir() {
        let (_dir, agent) = crate::testkit::temp_file(".agent");
        ensure_gitignore(&agent).unwrap();
        assert_eq!(std::fs::metadata(&agent).unwrap().mode() & 0o777, 0o700);
        let gi = agent.join(".gitignore");
        let text = std::fs::read_to_string(&gi).unwrap();
        for line in
            ["checkpoint.json", "checkpoint.*.json", "events.jsonl", "ralph.lock", "logs/", "artifacts/", "*.sock"]
        {
            assert!(text.lines().any(|l| l == line), "missing {line}");
        }
        assert!(!text.lines().any(|l| l.contains("toml") && !l.starts_with('#')));
        assert!(!text.lines().any(|l| l == "*" || l == "*.md"));

        std::fs::write(&gi, "mine\n").unwrap();
        ensure_gitignore(&agent).unwrap();
        assert_eq!(std::fs::read_to_string(&gi).unwrap(), "mine\n");
        assert_eq!(std::fs::read_dir(&agent).unwrap().count(), 1);
    }

    #[test]
    fn an_existing_agent_dir_is_made_private() {
        let (_dir, agent) = crate::testkit::temp_file(".agent");
        std::fs::create_dir(&agent).unwrap();
        std::fs::set_permissions(&agent, Permissions::from_mode(0o755)).unwrap();
        ensure_gitignore(&agent).unwrap();
        assert_eq!(std::fs::metadata(&agent).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn gitignore_is_honoured_by_git() {
        if std::process::Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let (dir, agent) = crate::testkit::temp_file(".agent");
        ensure_gitignore(&agent).unwrap();
        let check = |rel: &str| {
            std::process::Command::new("git")
                .args(["check-ignore", "-q", "--no-index", rel])
                .current_dir(dir.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .status()
                .unwrap()
                .code()
        };
        let init = std::process::Command::new("git").args(["init", "-q"]).current_dir(dir.path()).status().unwrap();
        assert!(init.success());
        for ignored in [
            ".agent/checkpoint.json",
            ".agent/checkpoint.corrupt-20261130T162300Z.json",
            ".agent/events.jsonl",
            ".agent/ralph.lock",
            ".agent/logs/run1/attempt-1.log",
            ".agent/artifacts/x",
            ".agent/control.sock",
        ] {
            assert_eq!(check(ignored), Some(0), "{ignored} should be ignored");
        }
        for kept in [".agent/ralph.toml", ".agent/PROMPT.md", ".agent/prompts/plan.md", ".agent/.gitignore"] {
            assert_eq!(check(kept), Some(1), "{kept} should not be ignored");
        }
    }
}

//! Atomic file replacement: the only way ralph writes a state file that must
//! survive being killed at any instant (the checkpoint above all).
//!
//! A reader (including a ralph started after a crash or a power cut) sees either
//! the complete old file or the complete new one, never a mix or a truncated file.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use super::writes::Durability;

/// Replaces `path` with `bytes` atomically, with mode 0600.
///
/// Temp file in the same directory (a rename is only atomic within one file
/// system), write, fsync the data, rename over `path`, fsync the directory so the
/// rename itself is durable. On any error the old file is left as it was and the
/// temp file is removed; a kill between the steps can leave a `.tmp*` file behind
/// in the directory (ignored by git, see `store::ensure_gitignore`), never a
/// partial `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, Durability::Durable)
}

/// Replaces `path` with `bytes` atomically, as durable as `durability` says.
pub fn replace(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    replace_if(path, bytes, durability, || Ok(true)).map(drop)
}

/// [`replace`], if `still` says so when asked, right before the rename; whether
/// `path` was replaced (refused, nothing is left behind). The slow part (the
/// temporary file written and synced) comes before the look, for a file that
/// another process may replace meanwhile (the lease): a writer frozen during its
/// fsync (SIGSTOP, a suspended VM) looks when it wakes, not before it froze. Only
/// the instant between the look and the rename is left unguarded (a plain file
/// system has no compare-and-swap).
pub(crate) fn replace_if(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
    still: impl FnOnce() -> io::Result<bool>,
) -> io::Result<bool> {
    super::disk::injected().map_or(Ok(()), Err)?;
    let dir = parent_dir(path);
    let mut tmp = super::private::temp_file_in(dir)?;
    tmp.write_all(bytes)?;
    if durability != Durability::Unsynced {
        tmp.as_file().sync_all()?;
    }
    if !still()? {
        return Ok(false);
    }
    tmp.persist(path).map_err(|e| e.error)?;
    if durability == Durability::Durable {
        sync_dir(dir)?;
        super::disk::note_synced(path, || Ok(bytes.len() as u64));
    }
    Ok(true)
}

/// Fsyncs a directory so that a rename or a new entry in it survives a power cut.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The directory holding `path`; `.` for a bare file name, which `Path::parent`
/// reports as an empty path that cannot be opened.
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn creates_file_with_mode_0600() {
        let (_dir, p) = crate::testkit::temp_file("a.json");
        write_atomic(&p, b"hello").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"hello");
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn replaces_existing_and_leaves_no_temp_files() {
        let (dir, p) = crate::testkit::temp_file("a.json");
        std::fs::write(&p, b"old contents that are longer").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }

    #[test]
    fn error_keeps_old_file_intact() {
        let dir = tempfile::tempdir().unwrap();
        // Renaming a file over a non-empty directory fails after the temp file
        // was written: the target must be untouched and no temp file left.
        let p = dir.path().join("target");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("inside"), b"x").unwrap();
        assert!(write_atomic(&p, b"new").is_err());
        assert!(p.is_dir());
        assert_eq!(std::fs::read(p.join("inside")).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn every_durability_replaces_the_whole_file() {
        let (dir, p) = crate::testkit::temp_file("a.json");
        for (d, text) in [(Durability::Durable, "one"), (Durability::Ordered, "two"), (Durability::Unsynced, "3")] {
            replace(&p, text.as_bytes(), d).unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a temp file left by {d:?}");
        }
    }

    /// The look of `replace_if` comes after the slow part: when it is asked, the new
    /// content already waits, complete, in a temporary file; refused, the old file
    /// stays and the temporary file goes.
    #[test]
    fn replace_if_looks_last_and_leaves_nothing_when_refused() {
        let (dir, p) = crate::testkit::temp_file("a.json");
        write_atomic(&p, b"old").unwrap();
        let others = || -> Vec<Vec<u8>> {
            let files = std::fs::read_dir(dir.path()).unwrap().flatten().filter(|e| e.file_name() != "a.json");
            files.map(|e| std::fs::read(e.path()).unwrap()).collect()
        };
        let looked = replace_if(&p, b"new", Durability::Ordered, || {
            assert_eq!(others(), [b"new"], "the new content is written before the look");
            Ok(false)
        });
        assert!(!looked.unwrap(), "refused");
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert!(others().is_empty(), "a temp file left");
        assert!(replace_if(&p, b"new", Durability::Ordered, || Ok(true)).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope").join("a.json");
        assert!(write_atomic(&p, b"x").is_err());
    }
}

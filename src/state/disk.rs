//! A full disk is an outage, not a failure: telling ENOSPC and EDQUOT apart from
//! other write errors, and how much space is free. How long to wait before the next
//! try is the core's ([`super::writes::backoff`]); the waiting itself is the run's
//! (`step::waits::disk`, carried out by `run::io`), which keeps the last good
//! checkpoint on disk and starts nothing new until the state is saved.
//!
//! Debug builds have a fault hook for the tests: while the file named by
//! `RALPH_TEST_DISK_FULL` exists, every checkpoint and journal write fails with
//! ENOSPC. Release builds do not have it, nor the power-cut hook [`note_synced`].

use std::io;
use std::path::Path;

/// Whether `e` says the disk (or the user's quota) is full. By kind, not only by
/// errno: `tempfile` wraps the OS error with the path, which keeps the kind but not
/// the raw code.
pub(crate) fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(nix::libc::ENOSPC | nix::libc::EDQUOT))
        || matches!(e.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
}

/// Bytes free for this user on the file system of `path`.
pub(crate) fn free_bytes(path: &Path) -> Option<u64> {
    let dir = if path.is_dir() { path } else { path.parent()? };
    let st = nix::sys::statvfs::statvfs(dir).ok()?;
    st.blocks_available().checked_mul(st.fragment_size())
}

/// `1.2 MiB`, `512 B`.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// The power-cut test hook (debug builds only): with `RALPH_TEST_SYNC_LOG` set,
/// every state file made durable appends `<path>\t<synced length>` to the file it
/// names, so a test can cut every file back to what a power cut would have kept.
/// `len` is asked only then (a release build makes no extra system call).
pub(crate) fn note_synced(path: &Path, len: impl FnOnce() -> io::Result<u64>) {
    if !cfg!(debug_assertions) {
        return;
    }
    let Some(log) = std::env::var_os("RALPH_TEST_SYNC_LOG") else { return };
    let appended = len().and_then(|len| {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        io::Write::write_all(&mut file, format!("{}\t{len}\n", path.display()).as_bytes())
    });
    if let Err(e) = appended {
        tracing::warn!("test hook RALPH_TEST_SYNC_LOG: {e}");
    }
}

/// The test fault hook (debug builds only): ENOSPC while the marker file exists.
pub(crate) fn injected() -> Option<io::Error> {
    if !cfg!(debug_assertions) {
        return None;
    }
    let marker = std::env::var_os("RALPH_TEST_DISK_FULL")?;
    Path::new(&marker).exists().then(|| io::Error::from_raw_os_error(nix::libc::ENOSPC))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_means_enospc_or_edquot() {
        assert!(is_full(&io::Error::from_raw_os_error(nix::libc::ENOSPC)));
        assert!(is_full(&io::Error::from_raw_os_error(nix::libc::EDQUOT)));
        assert!(!is_full(&io::Error::from_raw_os_error(nix::libc::EACCES)));
        assert!(!is_full(&io::Error::other("x")));
        // As tempfile reports it: the path added, the raw code gone.
        let wrapped = io::Error::new(io::ErrorKind::StorageFull, "no space at path /x/.tmp1");
        assert!(is_full(&wrapped));
    }

    #[test]
    fn sizes_read_like_a_person_writes_them() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(5 * 1024 * 1024), "5.0 MiB");
    }
}

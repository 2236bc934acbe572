//! Where the control socket lives. Socket paths are limited to about 107 bytes, so
//! the socket is never put in the project directory: it goes to a private directory
//! under `$XDG_RUNTIME_DIR` (or, without one, `ralph-<uid>` in the temp dir), named
//! after a hash of the project directory, and its path is recorded in
//! `.agent/control.sock.path` for the clients.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The file in `.agent/` that records the socket's path.
pub(crate) const RECORD: &str = "control.sock.path";
/// Longest socket path the kernel takes (`sun_path` less its terminating NUL).
pub(crate) const MAX_PATH: usize = 107;

/// The private directory for this user's sockets, created 0700 if missing; refused if
/// it is a symlink, someone else's, or open to others.
pub(crate) fn private_dir() -> std::io::Result<PathBuf> {
    let uid = nix::unistd::getuid().as_raw();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("ralph"),
        None => std::env::temp_dir().join(format!("ralph-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not a directory private to uid {uid}", dir.display()),
        ));
    }
    Ok(dir)
}

/// A private directory for per-attempt files that a CLI refuses to read from a
/// path with a group- or world-writable ancestor (Gemini's settings): under
/// `$XDG_RUNTIME_DIR` when set, else `$HOME/.cache/ralph/private` (never the temp dir,
/// whose sticky `/tmp` is such an ancestor). Created 0700.
pub(crate) fn secure_dir() -> std::io::Result<PathBuf> {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| !d.is_empty()) {
        return private_dir();
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "neither XDG_RUNTIME_DIR nor HOME is set"))?;
    let dir = PathBuf::from(home).join(".cache").join("ralph").join("private");
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// The socket's file name for a project directory.
pub(crate) fn socket_name(project: &Path) -> String {
    let digest = Sha256::digest(project.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("run-{hex}.sock")
}

/// Where the project's record of its socket path is.
pub(crate) fn record_of(project: &Path) -> PathBuf {
    project.join(".agent").join(RECORD)
}

/// The socket path recorded for a project, if any.
pub(crate) fn recorded(project: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(record_of(project)).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_short_and_stable_however_deep_the_project() {
        let deep = PathBuf::from(format!("/{}", "very-long-directory-name/".repeat(40)));
        let name = socket_name(&deep);
        assert_eq!(name, socket_name(&deep));
        assert!(name.len() < 30, "{name}");
        assert_ne!(name, socket_name(Path::new("/other")));
    }
}

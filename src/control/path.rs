//! Where the control socket lives. Socket paths are limited to about 107 bytes, so
//! the socket is never put in the project directory: it goes to a directory private
//! to this user, named after a hash of the project directory, and its path (with the
//! run id) is recorded in `.agent/control.sock.path` for the clients.
//!
//! The private directory is the first of these that is this user's alone (a real
//! directory, owned by this user, open to nobody else): `$XDG_RUNTIME_DIR/ralph`,
//! `ralph-<uid>` in the temp dir, and else a new `ralph-<uid>-XXXXXX` made there for
//! this run (another local user who created `/tmp/ralph-<uid>` first cannot have made
//! that one). [`private_dirs`] lists them; the server binds in the first that works.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The file in `.agent/` that records the socket's path.
pub(crate) const RECORD: &str = "control.sock.path";
/// Longest socket path the kernel takes (`sun_path` less its terminating NUL).
pub(crate) const MAX_PATH: usize = 107;

/// A private directory for sockets; `own`: made for one run, removed with its socket.
#[derive(Debug)]
pub(crate) struct Private {
    pub dir: PathBuf,
    pub own: bool,
}

/// The private directories to try, best first; each is made (0700) or checked only
/// when the iteration reaches it. An `Err` says why that place cannot be used.
pub(crate) fn private_dirs() -> impl Iterator<Item = Result<Private, String>> {
    let uid = nix::unistd::getuid().as_raw();
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()).map(|d| PathBuf::from(d).join("ralph"));
    let shared = runtime.into_iter().chain([std::env::temp_dir().join(format!("ralph-{uid}"))]);
    let shared = shared.map(|dir| shared_dir(&dir).map(|()| Private { dir, own: false }));
    let own = std::iter::once_with(move || {
        let tmp = std::env::temp_dir();
        let made = tempfile::Builder::new().prefix(&format!("ralph-{uid}-")).tempdir_in(&tmp);
        let made = made.map_err(|e| format!("cannot make a private directory in {}: {e}", tmp.display()))?;
        Ok(Private { dir: made.keep(), own: true })
    });
    shared.chain(own)
}

/// The directory of this user's sockets (and `secure_dir`'s files) under
/// `$XDG_RUNTIME_DIR`, or `ralph-<uid>` in the temp dir, created 0700 if missing;
/// refused if it is a symlink, someone else's, or open to others.
pub(crate) fn private_dir() -> std::io::Result<PathBuf> {
    let uid = nix::unistd::getuid().as_raw();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("ralph"),
        None => std::env::temp_dir().join(format!("ralph-{uid}")),
    };
    shared_dir(&dir).map_err(|why| std::io::Error::new(std::io::ErrorKind::PermissionDenied, why))?;
    Ok(dir)
}

/// Makes `dir` (0700) when missing and checks that it is this user's alone.
fn shared_dir(dir: &Path) -> Result<(), String> {
    let uid = nix::unistd::getuid().as_raw();
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("cannot look at {}: {e}", dir.display()))?;
    let why = if !meta.is_dir() {
        "it is not a directory".to_string()
    } else if meta.uid() != uid {
        format!("it belongs to uid {}", meta.uid())
    } else if meta.permissions().mode() & 0o077 != 0 {
        format!("it is open to others (mode {:o})", meta.permissions().mode() & 0o777)
    } else {
        return Ok(());
    };
    Err(format!("{} is not a directory private to uid {uid}: {why}", dir.display()))
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

/// Writes a settings file an agent reads (Gemini's, which registers `ralph mcp`)
/// into [`secure_dir`] as `<kind>-<the socket's name>.json`, owner-only and
/// atomically, and returns its path. The launcher is handed this function
/// (`agent::descriptor::Request::settings_file`), so no descriptor writes a file.
pub(crate) fn write_settings(project: &Path, kind: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let file = secure_dir()?.join(format!("{kind}-{}.json", socket_name(project)));
    crate::state::atomic::write_atomic(&file, bytes)?;
    Ok(file)
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

/// What `.agent/control.sock.path` says: the socket's path (first line) and the run
/// that listens there (second line; a record of an older ralph has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub socket: PathBuf,
    pub run_id: Option<String>,
}

impl Record {
    /// The record's text.
    pub(crate) fn text(&self) -> String {
        let run = self.run_id.as_deref().map(|r| format!("{r}\n")).unwrap_or_default();
        format!("{}\n{run}", self.socket.display())
    }
}

/// The socket recorded for a project, if any.
pub(crate) fn recorded(project: &Path) -> Option<Record> {
    let text = std::fs::read_to_string(record_of(project)).ok()?;
    let mut lines = text.lines().map(str::trim);
    let socket = lines.next().filter(|l| !l.is_empty())?;
    let run_id = lines.next().filter(|l| !l.is_empty()).map(str::to_string);
    Some(Record { socket: PathBuf::from(socket), run_id })
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

    #[test]
    fn the_record_names_the_socket_and_its_run() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(".agent")).unwrap();
        let record = Record { socket: PathBuf::from("/run/user/1/ralph/run-1.sock"), run_id: Some("r1".into()) };
        std::fs::write(record_of(tmp.path()), record.text()).unwrap();
        assert_eq!(recorded(tmp.path()), Some(record));
        // An older ralph's record: the socket alone.
        std::fs::write(record_of(tmp.path()), "/tmp/ralph-1/run-1.sock\n").unwrap();
        assert_eq!(recorded(tmp.path()).and_then(|r| r.run_id), None);
    }

    #[test]
    fn a_shared_directory_open_to_others_or_not_a_directory_is_refused() {
        let (tmp, open) = crate::testkit::temp_file("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(shared_dir(&open).unwrap_err().contains("open to others"));
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(shared_dir(&file).unwrap_err().contains("not a directory"));
        let fresh = tmp.path().join("fresh");
        shared_dir(&fresh).unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o700);
    }
}

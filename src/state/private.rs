//! How ralph opens what it writes under `.agent/`: files owner-only (0600) and
//! never through a symbolic link (`O_NOFOLLOW`), directories owner-only (0700),
//! real directories and owned by the user. A repository can ship an `.agent/`
//! with a link in it; following one would let a checkout make ralph truncate or
//! append to any file its user can write, so a link is refused with an error that
//! names it. Modes are set on every open, not just on creation, so an `.agent/`
//! that existed before with wider modes is made private too.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every file ralph writes under `.agent/`.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of every directory ralph makes under (and including) `.agent/`.
pub(crate) const DIR_MODE: u32 = 0o700;

/// Creates or truncates `path` for writing.
pub(crate) fn create_file(path: &Path) -> io::Result<File> {
    open(path, OpenOptions::new().write(true).create(true).truncate(true))
}

/// Opens `path` for appending, creating it when missing.
pub(crate) fn append_file(path: &Path) -> io::Result<File> {
    open(path, OpenOptions::new().append(true).read(true).create(true))
}

/// Opens `path` with `options`, refusing a symbolic link, and makes it 0600.
pub(crate) fn open(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options.mode(FILE_MODE).custom_flags(nix::libc::O_NOFOLLOW).open(path).map_err(|e| {
        // `O_NOFOLLOW` fails with ELOOP on a link: say which link, and what to do.
        if e.raw_os_error() == Some(nix::libc::ELOOP) { refused_link(path) } else { e }
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(format!("{} is not a regular file; ralph will not write to it", path.display())));
    }
    if meta.mode() & 0o777 != FILE_MODE {
        file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    }
    Ok(file)
}

/// A new `.tmp*` file in `dir` for a file about to take its place, owner only like
/// everything here: state files can hold session ids and error text (and git keeps
/// no read bits).
pub(crate) fn temp_file_in(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(".tmp").permissions(Permissions::from_mode(FILE_MODE)).tempfile_in(dir)
}

/// [`open`] for reading; `None` when `path` does not exist.
pub(crate) fn open_existing(path: &Path) -> io::Result<Option<File>> {
    match open(path, OpenOptions::new().read(true)) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The whole content of `path`, read as [`open_existing`] opens it.
pub(crate) fn read_existing(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let Some(mut file) = open_existing(path)? else { return Ok(None) };
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut file, &mut bytes)?;
    Ok(Some(bytes))
}

/// A link or foreign directory where ralph keeps its state: a person must look.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(String);

fn refused_link(path: &Path) -> io::Error {
    refused(format!(
        "{} is a symbolic link; ralph does not follow links in its state directory (remove it and start again)",
        path.display()
    ))
}

fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, Refused(message))
}

/// Refuses, changing nothing, when one of `paths` is a symbolic link: what ralph
/// would open later, checked before it changes anything (a start that refuses
/// changes nothing).
pub(crate) fn refuse_links(paths: &[PathBuf]) -> io::Result<()> {
    match paths.iter().find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())) {
        Some(link) => Err(refused_link(link)),
        None => Ok(()),
    }
}

/// Whether `e` is a refusal of this module (not an ordinary I/O failure).
pub(crate) fn is_refused(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Refused>())
}

/// Makes sure `dir` is a real directory owned by this user with mode 0700,
/// creating it (one level) when missing.
pub(crate) fn ensure_dir(dir: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => match DirBuilder::new().mode(DIR_MODE).create(dir) {
            // The umask may have narrowed the mode further; set it exactly.
            Ok(()) => std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)),
            // Made meanwhile (another ralph): check it like any existing one.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => ensure_dir(dir),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
        Ok(meta) if meta.file_type().is_symlink() => Err(refused_link(dir)),
        Ok(meta) if !meta.is_dir() => {
            Err(refused(format!("{} is not a directory; ralph keeps its state there", dir.display())))
        }
        Ok(meta) if meta.uid() != nix::unistd::geteuid().as_raw() => Err(refused(format!(
            "{} belongs to another user (uid {}); ralph keeps its state only in directories of its own user",
            dir.display(),
            meta.uid()
        ))),
        Ok(meta) if meta.mode() & 0o777 != DIR_MODE => std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)),
        Ok(_) => Ok(()),
    }
}

/// [`ensure_dir`] for `root` and every directory from it down to `root/sub`.
pub(crate) fn ensure_dirs(root: &Path, sub: &Path) -> io::Result<()> {
    ensure_dir(root)?;
    let mut dir = root.to_path_buf();
    sub.components().try_for_each(|part| {
        dir.push(part);
        ensure_dir(&dir)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn files_are_private_even_when_they_existed_wider() {
        let (d, p) = crate::testkit::temp_file("f");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, Permissions::from_mode(0o644)).unwrap();
        drop(append_file(&p).unwrap());
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        drop(create_file(&d.path().join("g")).unwrap());
        assert_eq!(std::fs::metadata(d.path().join("g")).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn links_are_refused_and_named() {
        let (d, victim) = crate::testkit::temp_file("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let link = d.path().join("ralph.lock");
        symlink(&victim, &link).unwrap();
        for result in [create_file(&link), append_file(&link)] {
            let e = result.unwrap_err();
            assert!(e.to_string().contains("ralph.lock is a symbolic link"), "{e}");
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let dir_link = d.path().join("logs");
        symlink(d.path(), &dir_link).unwrap();
        let e = ensure_dir(&dir_link).unwrap_err();
        assert!(e.to_string().contains("logs is a symbolic link"), "{e}");
    }

    #[test]
    fn directories_are_made_private() {
        let (_d, root) = crate::testkit::temp_file(".agent");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, Permissions::from_mode(0o755)).unwrap();
        ensure_dirs(&root, Path::new("logs/run")).unwrap();
        for p in [root.clone(), root.join("logs"), root.join("logs/run")] {
            assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o700, "{}", p.display());
        }
    }
}

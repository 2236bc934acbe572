//! A run directory's identity as it is now: the shell's one look at the file system
//! for [`super::identity`] (which holds the identity's shape and the pure rule that
//! compares it with a record).

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::identity::{DirId, Identity};

/// The identity of `project` as it is now.
pub(crate) fn of(project: &Path) -> io::Result<Identity> {
    let project_meta = std::fs::metadata(project)?;
    let agent_meta = std::fs::symlink_metadata(project.join(".agent"))?;
    if !agent_meta.is_dir() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no .agent directory"));
    }
    let id = |m: &std::fs::Metadata| DirId { dev: m.dev(), ino: m.ino() };
    Ok(Identity { project: id(&project_meta), agent_dir: id(&agent_meta) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_copy_has_another_identity_and_a_link_the_same() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        for dir in [&a, &b] {
            std::fs::create_dir_all(dir.join(".agent")).unwrap();
        }
        std::os::unix::fs::symlink(&a, tmp.path().join("link")).unwrap();
        let ida = of(&a).unwrap();
        assert_eq!(of(&tmp.path().join("link")).unwrap(), ida);
        assert_ne!(of(&b).unwrap(), ida);
        assert!(of(tmp.path()).is_err(), "no .agent/ here");
    }
}

//! Who a run directory is, beyond its path. A path names whatever is there now: a
//! project copied while its run is live (`cp -a`, rsync, a backup restore) carries the
//! original's `.agent/control.sock.path` and lock record, and a project deleted and
//! replaced by another at the same path keeps its registry entry. So a run records
//! the identity of its directory when it starts (the device and inode of the project
//! directory and of its `.agent/`, which a copy never keeps) with its run id, and
//! whoever acts on a run by its path first checks that the run there is the one
//! recorded: the control-socket clients (`ralph status`, `ralph stop`), the watchdog,
//! `ralph status --all`, and the fleet supervisor through them.
//!
//! This file is the pure part, with no I/O: the identity's shape and [`check`], the
//! rule, with the reason of a mismatch as a value ([`Mismatch`]) that every caller
//! can print. The shell's one look at the file system is [`super::identity_now::of`].

use serde::{Deserialize, Serialize};

/// A directory as the kernel knows it: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct DirId {
    pub dev: u64,
    pub ino: u64,
}

/// The identity of a run directory: the project directory (through any link to it:
/// a project reached by another path is the same project) and its `.agent/` (never
/// a link: ralph refuses one there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Identity {
    pub project: DirId,
    pub agent_dir: DirId,
}

/// Which directory of a run differs from the one recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Project,
    AgentDir,
}

/// Why the run found at a path is not the run recorded for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// The directory holds another run (another run id) than the one recorded.
    OtherRun { recorded: String, found: String },
    /// The path leads to another directory than the one the run recorded: a copy of
    /// the project, or another project put in its place.
    OtherDirectory(Part),
    /// Nothing to compare with: the directory or its `.agent/` cannot be looked at.
    Unreadable(String),
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::OtherRun { recorded, found } => {
                write!(f, "it holds run {found}, not the recorded run {recorded}")
            }
            Mismatch::OtherDirectory(part) => write!(
                f,
                "its {} is not the one the run recorded (a copy of the project, or another project in its place)",
                match part {
                    Part::Project => "directory",
                    Part::AgentDir => ".agent directory",
                }
            ),
            Mismatch::Unreadable(why) => write!(f, "its identity cannot be read ({why})"),
        }
    }
}

/// What a record says about a run: its id and, when the recorder knew it, the
/// identity of its directory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recorded<'a> {
    pub run_id: &'a str,
    pub identity: Option<&'a Identity>,
}

/// Whether the run found (its id, when one is readable, and the identity of its
/// directory now) is the run recorded. `same_boot`: the record was made in this boot.
/// Device numbers are compared only then: a reboot may number devices anew (LVM,
/// NFS, btrfs subvolumes), inodes stay. A record without an identity (written by an
/// older ralph) is checked by its run id alone.
#[must_use = "a mismatch means the run must be left alone"]
pub(crate) fn check(
    recorded: Recorded<'_>,
    found_run: Option<&str>,
    found: &Result<Identity, String>,
    same_boot: bool,
) -> Result<(), Mismatch> {
    if let Some(identity) = recorded.identity {
        let found = found.as_ref().map_err(|why| Mismatch::Unreadable(why.clone()))?;
        let same = |a: &DirId, b: &DirId| a.ino == b.ino && (!same_boot || a.dev == b.dev);
        if !same(&identity.project, &found.project) {
            return Err(Mismatch::OtherDirectory(Part::Project));
        }
        if !same(&identity.agent_dir, &found.agent_dir) {
            return Err(Mismatch::OtherDirectory(Part::AgentDir));
        }
    }
    match found_run {
        Some(found) if found != recorded.run_id => {
            Err(Mismatch::OtherRun { recorded: recorded.run_id.to_string(), found: found.to_string() })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(dev: u64, project: u64, agent: u64) -> Identity {
        Identity { project: DirId { dev, ino: project }, agent_dir: DirId { dev, ino: agent } }
    }

    #[test]
    fn the_same_run_in_the_same_directory_matches() {
        let me = id(1, 10, 11);
        assert_eq!(check(Recorded { run_id: "r1", identity: Some(&me) }, Some("r1"), &Ok(me), true), Ok(()));
        // The run id cannot be read (no checkpoint yet): the directory decides.
        assert_eq!(check(Recorded { run_id: "r1", identity: Some(&me) }, None, &Ok(me), true), Ok(()));
    }

    #[test]
    fn a_copy_or_a_replacement_is_another_directory_whatever_its_run_id() {
        let recorded = id(1, 10, 11);
        let r = Recorded { run_id: "r1", identity: Some(&recorded) };
        // `cp -a`: the same run id in the copied checkpoint, new inodes.
        assert_eq!(check(r, Some("r1"), &Ok(id(1, 20, 21)), true), Err(Mismatch::OtherDirectory(Part::Project)));
        // A project whose `.agent/` was replaced (restored from elsewhere).
        assert_eq!(check(r, Some("r1"), &Ok(id(1, 10, 99)), true), Err(Mismatch::OtherDirectory(Part::AgentDir)));
        // The same inodes on another device.
        assert_eq!(check(r, Some("r1"), &Ok(id(2, 10, 11)), true), Err(Mismatch::OtherDirectory(Part::Project)));
        let gone = check(r, Some("r1"), &Err("no .agent directory".into()), true).unwrap_err();
        assert!(gone.to_string().contains("no .agent directory"), "{gone}");
    }

    #[test]
    fn after_a_reboot_devices_may_be_numbered_anew_but_inodes_stay() {
        let recorded = id(1, 10, 11);
        let r = Recorded { run_id: "r1", identity: Some(&recorded) };
        assert_eq!(check(r, Some("r1"), &Ok(id(7, 10, 11)), false), Ok(()));
        assert!(check(r, Some("r1"), &Ok(id(7, 12, 11)), false).is_err());
    }

    #[test]
    fn another_run_in_the_recorded_directory_is_not_the_recorded_run() {
        let me = id(1, 10, 11);
        let mismatch = check(Recorded { run_id: "r1", identity: Some(&me) }, Some("r2"), &Ok(me), true).unwrap_err();
        assert_eq!(mismatch, Mismatch::OtherRun { recorded: "r1".into(), found: "r2".into() });
        assert!(mismatch.to_string().contains("holds run r2, not the recorded run r1"), "{mismatch}");
        // A record of an older ralph, without an identity: the run id alone.
        let old = Recorded { run_id: "r1", identity: None };
        assert!(check(old, Some("r2"), &Err("gone".into()), true).is_err());
        assert_eq!(check(old, Some("r1"), &Err("gone".into()), true), Ok(()));
    }
}

//! A registry entry and the watcher's bookkeeping beside it, as values: their shape
//! on disk, the file names they are kept under, and whether the run an entry names
//! is still the one in its directory. Pure (no I/O), so the watchdog's decision
//! reads them as it reads a checkpoint; reading and writing them is [`super`]'s, and
//! so is [`Entry::of_run`] (the entry a run writes, from its lock's record).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::checkpoint::Status;
use crate::state::identity::{Identity, Mismatch, Recorded};

/// What ralph records about its run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The project directory (absolute).
    pub dir: PathBuf,
    pub run_id: String,
    /// The identity of the run's directory when it started: an entry whose directory
    /// now holds another one (a copy, another project in its place) is not this run
    /// (see [`crate::state::identity`]). `None` in entries of an older ralph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    pub pid: u32,
    pub host: String,
    pub boot_id: String,
    pub status: Status,
    /// The config file the run uses, for the resume (`-c`).
    pub config: Option<PathBuf>,
    /// Credential variables the run's agents received, by name only.
    #[serde(default)]
    pub credential_names: Vec<String>,
    /// The programs the run's chains launch (names as configured, or paths).
    #[serde(default)]
    pub programs: Vec<String>,
    /// The run's `PATH`, so a resume by a service finds the same npm and nvm binaries.
    pub path: Option<String>,
    /// `[watch] resume_after_shutdown` of the run's config.
    #[serde(default = "yes")]
    pub resume_after_shutdown: bool,
    /// `[watch] max_restarts` of the run's config.
    #[serde(default = "default_max_restarts")]
    pub max_restarts: u32,
    /// `[watch] restart_backoff` of the run's config, seconds.
    #[serde(default = "default_backoff_secs")]
    pub restart_backoff_secs: u64,
    /// `[watch] max_age` of the run's config, seconds.
    #[serde(default = "default_max_age_secs")]
    pub max_age_secs: u64,
    /// `[watch] max_resumes_per_boot` of the run's config.
    #[serde(default = "default_max_resumes_per_boot")]
    pub max_resumes_per_boot: u32,
    pub updated_at: String,
    /// Set for a fleet's supervisor and for a fleet's task runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetMark>,
    /// The file this entry was read from, and its inode (not stored).
    #[serde(skip)]
    pub file: PathBuf,
    #[serde(skip)]
    pub inode: u64,
}

/// What a fleet's entry says about its place in the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FleetMark {
    pub role: FleetRole,
    /// The fleet's main checkout.
    pub repo: PathBuf,
    /// A task run's task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// A supervisor or one of its task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FleetRole {
    Supervisor,
    Task,
}

impl Entry {
    /// Whether the run found in the entry's directory (its run id, when a checkpoint
    /// is readable, and the directory's identity now) is the run this entry
    /// registered; `boot` is this boot's id (device numbers count only in the boot
    /// the entry was written in). See [`crate::state::identity::check`].
    pub(crate) fn matches(
        &self,
        found_run: Option<&str>,
        found: &Result<Identity, String>,
        boot: &str,
    ) -> Result<(), Mismatch> {
        let recorded = Recorded { run_id: &self.run_id, identity: self.identity.as_ref() };
        let same_boot = !boot.is_empty() && self.boot_id == boot;
        crate::state::identity::check(recorded, found_run, found, same_boot)
    }

    /// The name of its file and of the watcher's bookkeeping, without extension.
    pub(crate) fn stem(&self) -> String {
        stem(&self.dir, self.fleet.as_ref().map(|f| f.role))
    }

    /// It belongs to a fleet's supervisor, which resumes and stops it.
    pub(crate) fn fleet_task(&self) -> bool {
        self.fleet.as_ref().is_some_and(|f| f.role == FleetRole::Task)
    }

    pub(crate) fn fleet_supervisor(&self) -> bool {
        self.fleet.as_ref().is_some_and(|f| f.role == FleetRole::Supervisor)
    }
}

/// The stem of the entry of `dir`'s run, or of its fleet's supervisor.
pub(crate) fn stem(dir: &Path, role: Option<FleetRole>) -> String {
    match role {
        Some(FleetRole::Supervisor) => format!("{}-fleet", key(dir)),
        _ => key(dir),
    }
}

fn yes() -> bool {
    true
}
fn default_max_restarts() -> u32 {
    crate::config::Watch::default().max_restarts
}
fn default_backoff_secs() -> u64 {
    crate::config::Watch::default().restart_backoff.as_secs()
}
fn default_max_age_secs() -> u64 {
    crate::config::Watch::default().max_age.as_secs()
}
fn default_max_resumes_per_boot() -> u32 {
    crate::config::Watch::default().max_resumes_per_boot
}

/// What the watcher records about the runs it resumed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WatchState {
    /// Resumes by the watcher that ended without a clean stop, in a row.
    pub restarts: u32,
    /// Unix second of the last resume.
    pub last_resume_at: Option<i64>,
    pub last_resume_boot: Option<String>,
    /// Iterations done when the watcher last resumed the run.
    pub iterations_at_resume: Option<u32>,
}

/// The entry's file name for a project directory: stable, short, and free of the
/// path's own characters.
pub(crate) fn key(project: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(project.as_os_str().as_encoded_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_distinct() {
        assert_eq!(key(Path::new("/a")), key(Path::new("/a")));
        assert_ne!(key(Path::new("/a")), key(Path::new("/b")));
        assert_eq!(key(Path::new("/a")).len(), 16);
    }
}

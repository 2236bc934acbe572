//! The run's entry in the run registry ([`crate::state::registry`]): written when
//! the run starts and whenever its status changes, with what a resume by `ralph
//! watch` needs. A registry that cannot be written only costs the watchdog its view
//! of this run, so a failure is logged, never fatal.

use crate::config::Loaded;
use crate::state::checkpoint::{Checkpoint, Status};
use crate::state::identity::Identity;
use crate::state::lock::LockInfo;
use crate::state::registry::{self, Entry};

/// The registry entry of this run, written again when its status changes.
pub(super) struct Registration {
    loaded: Loaded,
    /// The status last written.
    registered: Option<Status>,
}

impl Registration {
    pub(super) fn new(loaded: Loaded) -> Self {
        Self { loaded, registered: None }
    }

    /// Writes the registry entry when the checkpoint's status differs from the one
    /// registered last; `identity` is the run directory's, as its control socket
    /// serves it.
    pub(super) fn update(&mut self, project: &std::path::Path, cp: &Checkpoint, identity: Option<Identity>) {
        if self.registered == Some(cp.status) || !self.loaded.config.general.workflow.checkpoint_enabled {
            return;
        }
        let Some(dir) = registry::dir() else { return };
        let entry = Entry { identity, ..entry(project, &self.loaded, cp) };
        match registry::write(&dir, &entry) {
            Ok(()) => self.registered = Some(cp.status),
            Err(e) => tracing::warn!("cannot write the run registry entry in {}: {e}", dir.display()),
        }
    }
}

/// The entry of the run `cp` in `project` under `loaded`, as this process would
/// register it (the watchdog registers a run the registry lost the same way).
pub(crate) fn entry(project: &std::path::Path, loaded: &Loaded, cp: &Checkpoint) -> Entry {
    let run = (cp.run_id.as_str(), cp.status, cp.updated_at.to_string());
    let env = |name: &str| std::env::var_os(name);
    let needs = crate::agent::preflight::needs(loaded, &env);
    Entry {
        // A fleet task's run is its supervisor's to resume (docs/fleet.md).
        fleet: crate::fleet::task::registry_mark(project),
        ..Entry::of_run(project, loaded, run, LockInfo::current(), needs, &env)
    }
}

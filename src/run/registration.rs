//! The run's entry in the run registry ([`crate::state::registry`]): written when
//! the run starts and whenever its status changes, with what a resume by `ralph
//! watch` needs. A registry that cannot be written only costs the watchdog its view
//! of this run, so a failure is logged, never fatal.

use std::collections::BTreeSet;

use crate::config::{AgentConfig, Loaded};
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
    Entry {
        // A fleet task's run is its supervisor's to resume (docs/fleet.md).
        fleet: crate::fleet::task::registry_mark(project),
        ..registry_entry(project, loaded, &cp.run_id, cp.status, &cp.updated_at.to_string())
    }
}

/// An entry for the run (or the fleet) `run_id` in `project` under `loaded`, owned by
/// this process: what a resume by the watchdog needs.
pub(crate) fn registry_entry(
    project: &std::path::Path,
    loaded: &Loaded,
    run_id: &str,
    status: crate::state::checkpoint::Status,
    updated_at: &str,
) -> Entry {
    let me = LockInfo::current();
    let used: BTreeSet<&String> = loaded.phases.iter().flat_map(|p| p.chain.iter()).collect();
    let agents: Vec<&AgentConfig> = used.iter().filter_map(|name| loaded.config.agents.get(*name)).collect();
    let present = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let credential_names: BTreeSet<String> = agents
        .iter()
        .flat_map(|a| {
            crate::process::env::allowlist(a.kind).iter().map(|s| s.to_string()).chain(a.pass_env.iter().cloned())
        })
        .filter(|name| present(name))
        .collect();
    let programs: BTreeSet<String> =
        agents.iter().flat_map(|a| crate::agent::preflight::programs(a)).map(|p| p.display().to_string()).collect();
    let watch = &loaded.config.watch;
    Entry {
        dir: project.to_path_buf(),
        run_id: run_id.to_string(),
        identity: None,
        pid: me.pid,
        host: me.host,
        boot_id: me.boot_id,
        status,
        config: Some(loaded.path.clone()),
        credential_names: credential_names.into_iter().collect(),
        programs: programs.into_iter().collect(),
        path: std::env::var("PATH").ok(),
        resume_after_shutdown: watch.resume_after_shutdown,
        max_restarts: watch.max_restarts,
        restart_backoff_secs: watch.restart_backoff.as_secs(),
        max_age_secs: watch.max_age.as_secs(),
        max_resumes_per_boot: watch.max_resumes_per_boot,
        updated_at: updated_at.to_string(),
        fleet: None,
        file: std::path::PathBuf::new(),
        inode: 0,
    }
}

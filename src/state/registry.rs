//! The run registry under `$XDG_STATE_HOME/ralph/runs/` (else
//! `~/.local/state/ralph/runs/`): one small JSON file per project directory that
//! tells `ralph watch` and `ralph status --all` where runs are, who owns them, and
//! what a resume needs (the names, never the values, of the credentials its agents
//! received; its `PATH`; the programs its chains launch).
//!
//! The running ralph rewrites its entry atomically when the run's *status* changes,
//! not at every transition; last activity is read from the run's own journal. The
//! watcher keeps its own bookkeeping beside it (`<key>.watch.json`), so the two never
//! write the same file. A corrupt entry is skipped with a warning, never fatal.
//!
//! Fleets (docs/fleet.md) are marked: the supervisor's own entry (`<key>-fleet.json`,
//! keyed by the main checkout, beside any single run's entry there) carries
//! `fleet.role = "supervisor"`, and each task's run carries `fleet.role = "task"`
//! with its fleet's repository. The watchdog resumes a supervisor like a run (with
//! `ralph fleet`) and leaves task runs to their supervisor; whatever stops or holds
//! runs by the registry treats a fleet through its supervisor's entry.

use std::io;
use std::path::{Path, PathBuf};

use super::checkpoint::Status;
use super::store;
use super::writes::Durability;

pub(crate) mod entry;
pub(crate) use entry::{Entry, FleetMark, FleetRole, WatchState};

// The entry a run writes: its shape is `entry`'s, pure; this constructor stays with
// the shell, since it takes the lock's record.
impl Entry {
    /// The entry of the run (or the fleet) `run_id` in `project` under `loaded`, owned
    /// by the process `me` whose environment `env` reads: what a resume by the
    /// watchdog needs; `needs` is what its agents need of that environment, from
    /// `agent::preflight::needs` (the names of the credentials it has, never their
    /// values, and the programs they start), so the registry reads no agent itself.
    #[must_use]
    pub(crate) fn of_run(
        project: &Path,
        loaded: &crate::config::Loaded,
        (run_id, status, updated_at): (&str, Status, String),
        me: super::lock::LockInfo,
        (credential_names, programs): (Vec<String>, Vec<String>),
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Entry {
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
            credential_names,
            programs,
            path: env("PATH").and_then(|path| path.into_string().ok()),
            resume_after_shutdown: watch.resume_after_shutdown,
            max_restarts: watch.max_restarts,
            restart_backoff_secs: watch.restart_backoff.as_secs(),
            max_age_secs: watch.max_age.as_secs(),
            max_resumes_per_boot: watch.max_resumes_per_boot,
            updated_at,
            fleet: None,
            file: PathBuf::new(),
            inode: 0,
        }
    }
}

/// The registry directory, from the environment (`XDG_STATE_HOME`, else `HOME`).
pub(crate) fn dir() -> Option<PathBuf> {
    let from = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = from("XDG_STATE_HOME").or_else(|| from("HOME").map(|h| h.join(".local").join("state")))?;
    Some(base.join("ralph").join("runs"))
}

pub(crate) fn entry_path(registry: &Path, stem: &str) -> PathBuf {
    registry.join(format!("{stem}.json"))
}

pub(crate) fn watch_path(registry: &Path, stem: &str) -> PathBuf {
    registry.join(format!("{stem}.watch.json"))
}

/// Writes `entry` atomically, creating the registry (mode 0700) when needed. The
/// file is synced before its rename (a power cut leaves the old entry or the new,
/// never an empty one that every pass would warn about); the directory is not:
/// losing the rename only delays a resume until the run's next status change, and
/// the run's own checkpoint stays the truth.
pub(crate) fn write(registry: &Path, entry: &Entry) -> io::Result<()> {
    create(registry)?;
    // Redacted like everything ralph writes, but for what must stay exact to find
    // the run again (its directory, config, identity).
    let mut value = serde_json::to_value(entry).map_err(io::Error::other)?;
    if let Some(fields) = value.as_object_mut() {
        let exact = ["dir", "config", "run_id", "host", "boot_id", "identity", "fleet"];
        fields
            .iter_mut()
            .filter(|(k, _)| !exact.contains(&k.as_str()))
            .for_each(|(_, v)| crate::secrets::redact_json(v));
    }
    store::save_json_with(&entry_path(registry, &entry.stem()), &value, Durability::Ordered)
}

pub(crate) fn write_watch(registry: &Path, stem: &str, state: &WatchState) -> io::Result<()> {
    create(registry)?;
    store::save_json_with(&watch_path(registry, stem), state, Durability::Ordered)
}

pub(crate) fn read_watch(registry: &Path, stem: &str) -> WatchState {
    store::load_json(&watch_path(registry, stem)).ok().flatten().unwrap_or_default()
}

/// Makes the registry's folder (0700, private to this user) when missing.
pub(crate) fn create(registry: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(registry)
}

/// Every readable entry, with the problems of the unreadable ones.
pub(crate) fn read_all(registry: &Path) -> (Vec<Entry>, Vec<String>) {
    read_all_but(registry, |_, _| false)
}

/// [`read_all`] without reading the entries `skip` says yes to, given the file's
/// name and inode from the listing (no system call per entry).
pub(crate) fn read_all_but(registry: &Path, mut skip: impl FnMut(&str, u64) -> bool) -> (Vec<Entry>, Vec<String>) {
    use std::os::unix::fs::DirEntryExt;
    let (mut entries, mut warnings) = (Vec::new(), Vec::new());
    let Ok(listing) = std::fs::read_dir(registry) else { return (entries, warnings) };
    for item in listing.flatten() {
        let name = item.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name.ends_with(".watch.json") || name.starts_with('.') || skip(&name, item.ino())
        {
            continue;
        }
        let path = item.path();
        match store::load_json::<Entry>(&path) {
            Ok(Some(entry)) => entries.push(Entry { file: path, inode: item.ino(), ..entry }),
            Ok(None) => {}
            Err(e) => warnings.push(format!("skipping a registry entry: {e}")),
        }
    }
    entries.sort_by(|a, b| a.dir.cmp(&b.dir));
    (entries, warnings)
}

/// Removes an entry (the file it was read from) and the watcher's bookkeeping for
/// its project.
pub(crate) fn remove(registry: &Path, entry: &Entry) -> io::Result<()> {
    let stem = entry.stem();
    let paths = [
        entry.file.clone(),
        entry_path(registry, &stem),
        watch_path(registry, &stem),
        watch_path(registry, &stem).with_extension("lock"),
    ];
    let absent = |e: io::Error| if e.kind() == io::ErrorKind::NotFound { Ok(()) } else { Err(e) };
    paths.iter().try_for_each(|path| std::fs::remove_file(path).or_else(absent))
}

/// Removes the `<key>.watch.lock` files an older `ralph watch` left, one per entry
/// it ever decided about (a pass now takes one lock beside the registry).
pub(crate) fn remove_legacy_locks(registry: &Path) {
    let Ok(listing) = std::fs::read_dir(registry) else { return };
    for item in listing.flatten() {
        if item.file_name().to_string_lossy().ends_with(".watch.lock") {
            let _ = std::fs::remove_file(item.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::entry::key;
    use super::*;

    #[test]
    fn a_runs_entry_names_the_credentials_it_has_never_their_values() {
        let toml =
            crate::testkit::one_agent_config("c", "kind = \"claude\"\npass_env = [\"MY_TOKEN\", \"UNSET_TOKEN\"]", "");
        let loaded = crate::config::parse(Path::new("ralph.toml"), &toml).unwrap_or_else(|e| panic!("{e}"));
        let env = |name: &str| match name {
            "ANTHROPIC_API_KEY" | "MY_TOKEN" => Some("secret".into()),
            "UNSET_TOKEN" => Some(String::new().into()),
            "PATH" => Some("/usr/bin".into()),
            _ => None,
        };
        let me =
            super::super::lock::LockInfo { pid: 7, host: "h".into(), boot_id: "b".into(), started_at: "now".into() };
        let needs = crate::agent::preflight::needs(&loaded, &env);
        let entry = Entry::of_run(Path::new("/p"), &loaded, ("r1", Status::Running, "t".into()), me, needs, &env);
        assert_eq!(entry.credential_names, ["ANTHROPIC_API_KEY", "MY_TOKEN"]);
        assert_eq!(entry.programs, ["claude"]);
        assert_eq!((entry.pid, entry.path.as_deref(), entry.run_id.as_str()), (7, Some("/usr/bin"), "r1"));
        assert!(!format!("{entry:?}").contains("secret"));
    }

    fn entry(dir: &str) -> Entry {
        Entry {
            dir: PathBuf::from(dir),
            run_id: "r1".into(),
            identity: None,
            pid: 1,
            host: "h".into(),
            boot_id: "b".into(),
            status: Status::Running,
            config: None,
            credential_names: vec!["ANTHROPIC_API_KEY".into()],
            programs: vec!["claude".into()],
            path: Some("/usr/bin".into()),
            resume_after_shutdown: true,
            max_restarts: 3,
            restart_backoff_secs: 30,
            max_age_secs: 86_400,
            max_resumes_per_boot: 20,
            updated_at: "now".into(),
            fleet: None,
            file: PathBuf::new(),
            inode: 0,
        }
    }

    #[test]
    fn entries_round_trip_and_corrupt_ones_are_skipped() {
        let (_tmp, reg) = crate::testkit::temp_file("runs");
        write(&reg, &entry("/p/a")).unwrap();
        write(&reg, &entry("/p/b")).unwrap();
        write_watch(&reg, &key(Path::new("/p/a")), &WatchState { restarts: 2, ..Default::default() }).unwrap();
        std::fs::write(reg.join("garbage.json"), "{ no").unwrap();
        let (entries, warnings) = read_all(&reg);
        assert_eq!(entries.iter().map(|e| e.dir.to_str().unwrap()).collect::<Vec<_>>(), ["/p/a", "/p/b"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(read_watch(&reg, &key(Path::new("/p/a"))).restarts, 2);
        assert_eq!(read_watch(&reg, &key(Path::new("/p/b"))), WatchState::default());
        let a = entries.iter().find(|e| e.dir == Path::new("/p/a")).unwrap();
        remove(&reg, a).unwrap();
        assert_eq!(read_all(&reg).0.len(), 1);
        assert_eq!(read_watch(&reg, &key(Path::new("/p/a"))), WatchState::default());
    }

    #[test]
    fn a_fleet_supervisor_has_its_own_entry_beside_a_run_of_the_same_directory() {
        let (_tmp, reg) = crate::testkit::temp_file("runs");
        let run = entry("/p/a");
        let fleet = Entry {
            fleet: Some(FleetMark { role: FleetRole::Supervisor, repo: "/p/a".into(), task: None }),
            ..entry("/p/a")
        };
        write(&reg, &run).unwrap();
        write(&reg, &fleet).unwrap();
        let (entries, _) = read_all(&reg);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries.iter().filter(|e| e.fleet_supervisor()).count(), 1);
        assert_ne!(run.stem(), fleet.stem());
    }
}

//! The watchdog's hands: start a detached `ralph --resume`, mark a run `blocked`
//! (ending what it left running), and find what a resume would lack.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::state::checkpoint::Status;

use super::decide::Seen;
use crate::state::registry::{self, Entry};
use crate::state::{format, lock, store};

/// Starts `ralph --resume` (a fleet's supervisor: `ralph fleet`) in the run's
/// directory, detached from the watcher's terminal and process group, its output in
/// the run's log directory.
pub(super) fn resume(entry: &Entry, cp: Seen<'_>) -> std::io::Result<(Child, PathBuf)> {
    let exe = crate::os::self_exe()?;
    let fleet = entry.fleet_supervisor();
    let logs = if fleet {
        crate::fleet::paths::fleet_dir(&entry.dir).join("logs")
    } else {
        entry.dir.join(".agent").join("logs").join(cp.run_id)
    };
    std::fs::create_dir_all(&logs)?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    let log_path = logs.join(format!("watch-resume-{stamp}.log"));
    let log = crate::state::private::append_file(&log_path)?;
    let mut command = Command::new(exe);
    let config = entry.config.iter().flat_map(|config| [Path::new("-c"), config]);
    command
        .arg(if fleet { "fleet" } else { "--resume" })
        .arg("-C")
        .arg(&entry.dir)
        .args(config)
        .env(crate::notify::RESUMED_BY, "watch");
    command.envs(entry.path.iter().map(|path| ("PATH", path)));
    let child = command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).process_group(0).spawn()?;
    Ok((child, log_path))
}

/// Marks an interrupted run `blocked` with the reason, under the run's own lock so
/// no ralph starts meanwhile, and ends every process still carrying its run id (an
/// agent's background job outlives a killed ralph; a blocked run waits for a person
/// and must leave nothing working on its tree). A fleet: its state says `blocked`,
/// under the fleet's lock (its tasks are its supervisor's: they stay as they are for
/// the person). `Ok(None)`: a ralph owns the run after all; else the count of
/// processes ended.
pub(super) fn block(registry: &Path, entry: &Entry, why: &str) -> Result<Option<usize>, String> {
    let (state, lock) = place(entry);
    let lock = match lock::acquire(&lock) {
        Ok(acquired) => acquired.lock,
        Err(lock::LockError::Held { .. }) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let (updated_at, ended) =
        if entry.fleet_supervisor() { block_fleet(&state, why)? } else { block_run(&state, why)? };
    lock.release().map_err(|e| e.to_string())?;
    let updated = Entry { status: Status::Blocked, updated_at: updated_at.to_string(), ..entry.clone() };
    registry::write(registry, &updated).map_err(|e| e.to_string())?;
    Ok(Some(ended))
}

/// The state file and the lock of an entry's run (or fleet).
pub(super) fn place(entry: &Entry) -> (PathBuf, PathBuf) {
    if entry.fleet_supervisor() {
        let dir = crate::fleet::paths::fleet_dir(&entry.dir);
        return (dir.join("fleet.json"), dir.join("fleet.lock"));
    }
    let agent_dir = entry.dir.join(".agent");
    (agent_dir.join("checkpoint.json"), agent_dir.join("ralph.lock"))
}

/// [`block`] for a run, its lock held: when it was saved, and the processes ended.
fn block_run(path: &Path, why: &str) -> Result<(jiff::Timestamp, usize), String> {
    // The newest save (after a power cut the journal's), so the resume that reads
    // the two again sees this one.
    let newest = format::read_newest(path).map_err(|e| e.to_string())?;
    let mut cp = newest.ok_or("the checkpoint is gone")?.checkpoint;
    // With the lock held no ralph of this run is alive: whatever carries its id is
    // a leftover of one that died.
    let ended = crate::process::leftovers::kill_all(&cp.run_id).len();
    (cp.status, cp.stop_reason, cp.stopped_by, cp.clean_stop) = (Status::Blocked, Some(why.to_string()), None, true);
    cp.updated_at = jiff::Timestamp::now();
    store::save_json(path, &cp).map_err(|e| e.to_string())?;
    Ok((cp.updated_at, ended))
}

/// [`block`] for a fleet, its lock held.
fn block_fleet(path: &Path, why: &str) -> Result<(jiff::Timestamp, usize), String> {
    let mut fleet = crate::fleet::state::read(path).map_err(|e| e.to_string())?.ok_or("the fleet's state is gone")?;
    (fleet.status, fleet.stop_reason, fleet.clean_stop) =
        (crate::fleet::state::FleetStatus::Blocked, Some(why.to_string()), true);
    crate::fleet::state::save(path, &mut fleet).map_err(|e| e.to_string())?;
    Ok((fleet.updated_at, 0))
}

/// What a resume would lack in this environment: credential variables the run's
/// agents had, and programs its chains launch that do not resolve on its `PATH`.
pub(super) fn missing(entry: &Entry) -> Vec<String> {
    let unset = entry.credential_names.iter().filter(|name| std::env::var_os(name).is_none_or(|v| v.is_empty()));
    let path = entry.path.clone().or_else(|| std::env::var("PATH").ok()).unwrap_or_default();
    let found = |p: &String| {
        if p.contains('/') { entry.dir.join(p).is_file() } else { which::which_in(p, Some(&path), &entry.dir).is_ok() }
    };
    let absent = entry.programs.iter().filter(|p| !found(p)).map(|p| format!("program {p}"));
    unset.cloned().chain(absent).collect()
}

/// When the run (a fleet's supervisor: its fleet) last did something, unix seconds:
/// the later of its journal and its checkpoint (state) written; `None` when neither
/// is there.
pub(crate) fn last_active(entry: &Entry) -> Option<i64> {
    let (state, _) = place(entry);
    let written = |path: &Path| {
        let modified = std::fs::symlink_metadata(path).and_then(|m| m.modified()).ok()?;
        jiff::Timestamp::try_from(modified).ok().map(|t| t.as_second())
    };
    written(&state.with_file_name(crate::state::journal::FILE)).max(written(&state))
}

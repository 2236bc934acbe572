//! The watcher's loop and one pass over the registry: gather the facts of each run,
//! ask [`super::decide`], carry out the verdict.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::signal::unix::{SignalKind, signal};

use crate::error::RalphError;
use crate::state::checkpoint::{Checkpoint, Status};
use crate::state::identity::{DirId, Identity};
use crate::state::registry::{self, Entry, WatchState};
use crate::state::{format, lock, store};

use super::Options;
use super::decide::{self, Facts, Verdict, decide, may_resume};
use super::seen::{self, Seen, Stamp};

/// Watches until Ctrl+C or SIGTERM (or one pass with `--once`).
pub(super) async fn watch(registry: &Path, options: &Options) -> Result<i32, RalphError> {
    let mut children = Vec::new();
    if options.once {
        pass(registry, options, &mut children);
        return Ok(crate::exit::DONE);
    }
    std::fs::create_dir_all(registry)
        .map_err(|e| RalphError::setup(format!("cannot create the run registry {}", registry.display()), e))?;
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
        let _ = tx.send(());
    })
    .map_err(|e| RalphError::io("cannot watch the run registry", std::io::Error::other(e)))?;
    if let Err(e) = notify::Watcher::watch(&mut watcher, registry, notify::RecursiveMode::NonRecursive) {
        // The periodic scan still finds every run, only later.
        let (registry, interval) = (registry.display(), options.interval);
        eprintln!("ralph watch: cannot watch {registry} for changes ({e}); scanning every {interval:?}");
    }
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| RalphError::io("cannot handle SIGINT", e))?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|e| RalphError::io("cannot handle SIGTERM", e))?;
    eprintln!("ralph watch: watching {}", registry.display());
    loop {
        pass(registry, options, &mut children);
        tokio::select! {
            _ = changes.recv() => {
                // A burst of writes (a run's entry, our own bookkeeping) is one change.
                tokio::time::sleep(Duration::from_millis(200)).await;
                while changes.try_recv().is_ok() {}
            }
            () = tokio::time::sleep(options.interval) => {}
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        }
    }
    eprintln!("ralph watch: stopped; the runs it resumed go on");
    Ok(crate::exit::DONE)
}

/// One look at every registered run; runs settled at the last look are skipped. One
/// watcher passes at a time (a lock beside the registry): two watchers resume a run
/// once.
fn pass(registry: &Path, options: &Options, children: &mut Vec<Child>) {
    let Some((_pass, first)) = pass_lock(registry) else {
        eprintln!("ralph watch: another ralph watch has been passing over the registry for 30s; skipping this pass");
        return;
    };
    if first {
        // The first pass of this version: the per-entry locks of older ones go.
        registry::remove_legacy_locks(registry);
    }
    children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    let boot = lock::boot_id();
    let (before, mut seen) = Seen::load(registry, &boot);
    let (mut entries, warnings) = registry::read_all_but(registry, |name, inode| before.still(name, inode, &mut seen));
    warnings.iter().for_each(|warning| eprintln!("ralph watch: {warning}"));
    // The most recently active runs first: they are the ones a person misses most;
    // of two entries of one run (one through a link), the one by its real path.
    entries.sort_by_cached_key(|e| (std::cmp::Reverse(last_activity(&e.dir)), !is_real_path(&e.dir)));
    // The directory each run was decided through in this pass, by its identity.
    let mut decided: HashMap<DirId, PathBuf> = HashMap::new();
    for entry in entries {
        let identity = Identity::of(&entry.dir).map_err(|e| e.to_string());
        let first = identity.as_ref().ok().and_then(|id| decided.get(&id.project)).cloned();
        if let (Ok(id), None) = (&identity, &first) {
            decided.insert(id.project, entry.dir.clone());
        }
        let found = Found { identity: &identity, decided_as: first.as_deref() };
        if let Some(stamp) = handle(registry, &entry, &found, &boot, options, children) {
            let name = entry.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            seen.settle(&name, entry.inode, &entry.dir, stamp);
        }
    }
    seen.save(registry, &before);
}

/// What the pass found about an entry's directory beyond the entry itself.
struct Found<'a> {
    identity: &'a Result<Identity, String>,
    decided_as: Option<&'a Path>,
}

/// Decides for one run and carries it out; the checkpoint's stamp when the run is
/// settled (see [`super::seen`]).
fn handle(
    registry: &Path,
    entry: &Entry,
    found: &Found<'_>,
    boot: &str,
    options: &Options,
    children: &mut Vec<Child>,
) -> Option<Stamp> {
    let state = registry::read_watch(registry, &entry.dir);
    let agent_dir = entry.dir.join(".agent");
    // The newer of the file and the journal's last save, as `--resume` reads them:
    // after a power cut the file may be missing, torn or older than the synced
    // journal, and the run is still there to resume.
    let path = agent_dir.join("checkpoint.json");
    // Before the read: a save in between makes the next pass read it again.
    let stamp = seen::stamp(&path);
    let newest = format::read_newest(&path).ok().flatten();
    let from_file = newest.as_ref().is_some_and(|newest| newest.stale.is_none());
    let checkpoint = newest.map(|newest| newest.checkpoint);
    let mut clean = state == WatchState::default();
    let settled = from_file && checkpoint.as_ref().is_some_and(|cp| decide::settled(cp.status));
    let facts = Facts {
        entry,
        checkpoint: checkpoint.as_ref(),
        dir_exists: stamp.is_some() || entry.dir.is_dir(),
        allowed: options.roots.is_empty() || options.roots.iter().any(|r| entry.dir.starts_with(r)),
        owner_alive: lock::is_held(&agent_dir.join("ralph.lock")),
        state: &state,
        boot_id: boot,
        now: jiff::Timestamp::now().as_second(),
        missing: checkpoint.as_ref().filter(|cp| may_resume(cp.status)).map_or_else(Vec::new, |_| missing(entry)),
        identity: found.identity,
        decided_as: found.decided_as,
    };
    let dir = entry.dir.display();
    match decide(&facts) {
        Verdict::Leave { reset: true, .. } if !clean => {
            clean = registry::write_watch(registry, &entry.dir, &WatchState::default()).is_ok();
        }
        Verdict::Live | Verdict::Stale | Verdict::Wait { .. } | Verdict::OncePerBoot | Verdict::Leave { .. } => {}
        Verdict::OtherRun(why) => eprintln!(
            "ralph watch: {dir}: not resumed: the run {} registered here is not there any more: {why}; \
             `ralph status --prune` removes the entry",
            entry.run_id
        ),
        // Decided through the entry that reaches it by its own path.
        Verdict::Duplicate { .. } => return None,
        Verdict::Block(why) => match block(registry, entry, &why) {
            Ok(true) => eprintln!("ralph watch: {dir}: marked blocked: {why}"),
            Ok(false) => {}
            Err(e) => eprintln!("ralph watch: {dir}: cannot mark the run blocked: {e}"),
        },
        Verdict::Resume { restarts } => {
            if children.len() >= options.max_concurrent {
                return None;
            }
            let cp = checkpoint?;
            match resume(entry, &cp) {
                Ok((child, log)) => {
                    let (run, status, log) = (&cp.run_id, cp.status.as_str(), log.display());
                    eprintln!("ralph watch: {dir}: resumed run {run} ({status}), restart {restarts}; output in {log}");
                    children.push(child);
                    let state = WatchState {
                        restarts,
                        last_resume_at: Some(jiff::Timestamp::now().as_second()),
                        last_resume_boot: Some(boot.to_string()),
                        iterations_at_resume: Some(cp.progress.counters.iterations_done),
                    };
                    if let Err(e) = registry::write_watch(registry, &entry.dir, &state) {
                        eprintln!("ralph watch: {dir}: cannot record the resume: {e}");
                    }
                }
                Err(e) => eprintln!("ralph watch: {dir}: cannot resume: {e}"),
            }
        }
    }
    stamp.filter(|_| settled && clean)
}

/// Starts `ralph --resume` in the run's directory, detached from the watcher's
/// terminal and process group, its output in the run's log directory.
fn resume(entry: &Entry, cp: &Checkpoint) -> std::io::Result<(Child, PathBuf)> {
    let exe = crate::os::self_exe()?;
    let logs = entry.dir.join(".agent").join("logs").join(&cp.run_id);
    std::fs::create_dir_all(&logs)?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    let log_path = logs.join(format!("watch-resume-{stamp}.log"));
    let log =
        OpenOptions::new().create(true).append(true).mode(0o600).custom_flags(nix::libc::O_NOFOLLOW).open(&log_path)?;
    let mut command = Command::new(exe);
    let config = entry.config.iter().flat_map(|config| [Path::new("-c"), config]);
    command.arg("--resume").arg("-C").arg(&entry.dir).args(config).env(crate::notify::RESUMED_BY, "watch");
    command.envs(entry.path.iter().map(|path| ("PATH", path)));
    let child = command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).process_group(0).spawn()?;
    Ok((child, log_path))
}

/// Marks an interrupted run `blocked` with the reason, under the run's own lock so
/// no ralph starts meanwhile. `Ok(false)`: a ralph owns the run after all.
fn block(registry: &Path, entry: &Entry, why: &str) -> Result<bool, String> {
    let agent_dir = entry.dir.join(".agent");
    let lock = match lock::acquire(&agent_dir.join("ralph.lock")) {
        Ok(acquired) => acquired.lock,
        Err(lock::LockError::Held { .. }) => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    let path = agent_dir.join("checkpoint.json");
    // The newest save (after a power cut the journal's), so the resume that reads
    // the two again sees this one.
    let newest = format::read_newest(&path).map_err(|e| e.to_string())?;
    let mut cp = newest.ok_or("the checkpoint is gone")?.checkpoint;
    cp.status = Status::Blocked;
    cp.stop_reason = Some(why.to_string());
    cp.stopped_by = None;
    cp.clean_stop = true;
    cp.updated_at = jiff::Timestamp::now();
    store::save_json(&path, &cp).map_err(|e| e.to_string())?;
    lock.release().map_err(|e| e.to_string())?;
    let updated = Entry { status: Status::Blocked, updated_at: cp.updated_at.to_string(), ..entry.clone() };
    registry::write(registry, &updated).map_err(|e| e.to_string())?;
    Ok(true)
}

/// The lock of a pass over the registry (`ralph/watch.lock`, beside the registry so
/// that taking it wakes no watcher), waited for at most 30 s; and whether this pass
/// made its file (the first pass of this version of ralph).
fn pass_lock(registry: &Path) -> Option<(Flock<File>, bool)> {
    let path = registry.with_file_name("watch.lock");
    if let Some(parent) = path.parent() {
        let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent);
    }
    let first = std::fs::symlink_metadata(&path).is_err();
    let open = || {
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true).mode(0o600).custom_flags(nix::libc::O_NOFOLLOW).open(&path)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match Flock::lock(open().ok()?, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Some((lock, first)),
            Err((_, Errno::EWOULDBLOCK)) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => return None,
        }
    }
}

/// Whether `dir` is the directory's own path (no link on the way).
fn is_real_path(dir: &Path) -> bool {
    std::fs::canonicalize(dir).is_ok_and(|real| real == dir)
}

/// What a resume would lack in this environment: credential variables the run's
/// agents had, and programs its chains launch that do not resolve on its `PATH`.
fn missing(entry: &Entry) -> Vec<String> {
    let unset = entry.credential_names.iter().filter(|name| std::env::var_os(name).is_none_or(|v| v.is_empty()));
    let path = entry.path.clone().or_else(|| std::env::var("PATH").ok()).unwrap_or_default();
    let found = |p: &String| {
        if p.contains('/') { entry.dir.join(p).is_file() } else { which::which_in(p, Some(&path), &entry.dir).is_ok() }
    };
    let absent = entry.programs.iter().filter(|p| !found(p)).map(|p| format!("program {p}"));
    unset.cloned().chain(absent).collect()
}

/// When the run last did something: its journal's modification time.
fn last_activity(dir: &Path) -> SystemTime {
    std::fs::metadata(dir.join(".agent").join(crate::state::journal::FILE))
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

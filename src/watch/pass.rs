//! The watcher's loop and one pass over the registry: gather the facts of each run,
//! ask [`super::decide`], carry out the verdict, and say the decision
//! ([`super::words`]): every run's at `--once` and at the first pass of a
//! long-running watcher, then each run's when it changes.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use jiff::tz::TimeZone;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::signal::unix::{SignalKind, signal};

use crate::error::RalphError;
use crate::signal::StopCause;
use crate::state::checkpoint::{Checkpoint, Status};
use crate::state::identity::{DirId, Identity};
use crate::state::identity_now;
use crate::state::registry::{self, Entry, WatchState};
use crate::state::{format, lock};

use super::Options;
use super::act;
use super::book::{self, Boot, Decisions};
use super::decide::{self, Facts, Verdict, decide, may_resume};
use super::seen::{self, Seen, Stamp};
use super::words::{self, About, Decision};

/// What a long-running watcher remembers between passes.
#[derive(Default)]
struct Watcher {
    /// The resumed runs it started, until they have started.
    children: Vec<Child>,
    /// The decision it last printed about each run (by directory): printed again
    /// only when it changes.
    printed: HashMap<String, Decision>,
    /// The `--root` directories were scanned by this watcher.
    scanned: bool,
}

/// Watches until Ctrl+C or SIGTERM (or one pass with `--once`).
pub(super) async fn watch(registry: &Path, options: &Options) -> Result<i32, RalphError> {
    let mut watcher = Watcher::default();
    if options.once {
        pass(registry, options, &mut watcher);
        return Ok(crate::exit::DONE);
    }
    std::fs::create_dir_all(registry)
        .map_err(|e| RalphError::setup(format!("cannot create the run registry {}", registry.display()), e))?;
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let mut inotify = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
        let _ = tx.send(());
    })
    .map_err(|e| RalphError::io("cannot watch the run registry", std::io::Error::other(e)))?;
    if let Err(e) = notify::Watcher::watch(&mut inotify, registry, notify::RecursiveMode::NonRecursive) {
        // The periodic scan still finds every run, only later.
        let (registry, interval) = (registry.display(), options.interval);
        eprintln!("ralph watch: cannot watch {registry} for changes ({e}); scanning every {interval:?}");
    }
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| RalphError::io("cannot handle SIGINT", e))?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|e| RalphError::io("cannot handle SIGTERM", e))?;
    say(options, &format!("ralph watch: watching {}", registry.display()));
    loop {
        pass(registry, options, &mut watcher);
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
    say(options, "ralph watch: stopped; the runs it resumed go on");
    Ok(crate::exit::DONE)
}

/// A line of the watcher's, unless `-q`.
fn say(options: &Options, line: &str) {
    if !options.quiet {
        eprintln!("{line}");
    }
}

/// What one pass shares between the runs it decides about.
struct Pass<'a> {
    registry: &'a Path,
    options: &'a Options,
    boot: Boot,
    /// The boot's record changed (a resume was counted).
    boot_changed: bool,
    hold: Option<book::Hold>,
    before: Decisions,
    decisions: Decisions,
    tz: TimeZone,
    now: i64,
    /// The decision lines of this pass, written at its end in one go (a thousand
    /// runs are a thousand lines, not a thousand writes).
    said: String,
}

impl Pass<'_> {
    /// Records the decision about `dir` and says it when it is news.
    fn tell(&mut self, watcher: &mut Watcher, dir: &Path, decision: Decision) {
        let key = dir.to_string_lossy();
        if watcher.printed.get(key.as_ref()) != Some(&decision) {
            if !self.options.quiet {
                let _ = writeln!(self.said, "ralph watch: {key}: {}", decision.render(&self.tz));
            }
            // `--once` says every run's line at its one pass: nothing to remember.
            if !self.options.once {
                watcher.printed.insert(key.into_owned(), decision.clone());
            }
        }
        let _ = self.before.record(&mut self.decisions, dir, decision);
    }

    /// Writes the lines said so far.
    fn flush(&mut self) {
        if !self.said.is_empty() {
            let _ = std::io::stderr().lock().write_all(std::mem::take(&mut self.said).as_bytes());
        }
    }
}

/// One look at every registered run; runs settled at the last look are skipped
/// (their decision stands). One watcher passes at a time (a lock beside the
/// registry): two watchers resume a run once.
fn pass(registry: &Path, options: &Options, watcher: &mut Watcher) {
    let Some((_pass, first)) = pass_lock(registry) else {
        eprintln!("ralph watch: another ralph watch has been passing over the registry for 30s; skipping this pass");
        return;
    };
    if first {
        // The first pass of this version: the per-entry locks of older ones go.
        registry::remove_legacy_locks(registry);
    }
    watcher.children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    let boot_id = lock::boot_id();
    let before = Decisions::load(registry);
    let mut p = Pass {
        registry,
        options,
        boot: Boot::load(registry, &boot_id),
        boot_changed: false,
        hold: book::hold(registry),
        decisions: Decisions::default(),
        before,
        tz: crate::report::zone(),
        now: jiff::Timestamp::now().as_second(),
        said: String::new(),
    };
    scan_roots(&mut p, watcher);
    let (seen_before, mut seen) = Seen::load(registry, &boot_id);
    let (mut entries, warnings) = registry::read_all_but(registry, |name, inode| {
        seen_before.still(name, inode, &mut seen, |dir| p.before.get(dir).is_some())
    });
    warnings.iter().for_each(|warning| eprintln!("ralph watch: {warning}"));
    for dir in seen.dirs() {
        if let Some(decision) = p.before.get(&dir).map(|recorded| recorded.decision.clone()) {
            p.tell(watcher, &dir, decision);
        }
    }
    // The most recently active runs first: they are the ones a person misses most;
    // of two entries of one run (one through a link), the one by its real path.
    entries.sort_by_cached_key(|e| (std::cmp::Reverse(act::last_active(e)), !is_real_path(&e.dir)));
    // The directory each run was decided through in this pass, by its identity (a
    // fleet's supervisor and a run of the same directory are two).
    let mut decided: HashMap<(DirId, bool), PathBuf> = HashMap::new();
    for entry in entries {
        let identity = identity_now::of(&entry.dir).map_err(|e| e.to_string());
        let fleet = entry.fleet_supervisor();
        let first = identity.as_ref().ok().and_then(|id| decided.get(&(id.project, fleet))).cloned();
        if let (Ok(id), None) = (&identity, &first) {
            decided.insert((id.project, fleet), entry.dir.clone());
        }
        let found = Found { identity: &identity, decided_as: first.as_deref() };
        let (stamp, decision) = handle(&mut p, &entry, &found, &boot_id, &mut watcher.children);
        let about = book::decided_about(&entry);
        p.tell(watcher, &about, decision);
        if let Some(stamp) = stamp {
            let name = entry.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            seen.settle(&name, entry.inode, &about, stamp);
        }
    }
    p.flush();
    seen.save(registry, &seen_before);
    p.decisions.save(registry, &p.before);
    if p.boot_changed
        && let Err(e) = p.boot.save(registry)
    {
        eprintln!("ralph watch: cannot record this boot's resumes: {e}");
    }
}

/// The `--root` directories, scanned for interrupted runs the registry lost: by a
/// long-running watcher when it starts, by `--once` once per boot.
fn scan_roots(p: &mut Pass<'_>, watcher: &mut Watcher) {
    let roots: Vec<&PathBuf> = if p.options.once {
        p.options.roots.iter().filter(|r| !p.boot.scanned.contains(r)).collect()
    } else if watcher.scanned {
        Vec::new()
    } else {
        p.options.roots.iter().collect()
    };
    watcher.scanned = true;
    if roots.is_empty() {
        return;
    }
    for line in super::scan::scan(p.registry, &roots, p.options.scan_depth) {
        if !p.options.quiet {
            let _ = writeln!(p.said, "ralph watch: {line}");
        }
    }
    for root in roots {
        if !p.boot.scanned.contains(root) {
            p.boot.scanned.push(root.clone());
            p.boot_changed = true;
        }
    }
}

/// What the pass found about an entry's directory beyond the entry itself.
struct Found<'a> {
    identity: &'a Result<Identity, String>,
    decided_as: Option<&'a Path>,
}

/// Decides for one run and carries it out: the decision, and the checkpoint's stamp
/// when the run is settled (see [`super::seen`]).
fn handle(
    p: &mut Pass<'_>,
    entry: &Entry,
    found: &Found<'_>,
    boot: &str,
    children: &mut Vec<Child>,
) -> (Option<Stamp>, Decision) {
    let state = registry::read_watch(p.registry, &entry.stem());
    let (path, lock) = act::place(entry);
    // Before the read: a save in between makes the next pass read it again.
    let stamp = seen::stamp(&path);
    let (view, from_file) = read_view(entry, &path);
    let mut clean = state == WatchState::default();
    let settled = from_file && view.as_ref().is_some_and(|v| decide::settled(v.status));
    let roots = &p.options.roots;
    let facts = Facts {
        entry,
        checkpoint: view.as_ref().map(View::seen),
        dir_exists: stamp.is_some() || entry.dir.is_dir(),
        allowed: roots.is_empty() || roots.iter().any(|r| entry.dir.starts_with(r)),
        owner_alive: lock::held_by_a_live_ralph(&lock, lock::DEAD_HOLDER_GRACE),
        state: &state,
        boot_id: boot,
        now: p.now,
        missing: view.as_ref().filter(|v| may_resume(v.status)).map_or_else(Vec::new, |_| act::missing(entry)),
        identity: found.identity,
        decided_as: found.decided_as,
        last_active: act::last_active(entry),
        held: p.hold.is_some(),
        boot_resumes: p.boot.resumes,
    };
    let verdict = decide(&facts);
    let about = About {
        entry,
        checkpoint: view.as_ref().map(View::seen),
        held_since: p.hold.as_ref().map(|h| h.since.as_str()),
        tz: &p.tz,
    };
    let decision = words::decision(&verdict, &about);
    let decision = match verdict {
        Verdict::Leave { reset: true, .. } if !clean => {
            clean = registry::write_watch(p.registry, &entry.stem(), &WatchState::default()).is_ok();
            decision
        }
        Verdict::Block(why) => match act::block(p.registry, entry, &why) {
            Ok(Some(ended)) => words::blocked(&why, ended),
            Ok(None) => words::decision(&Verdict::Live, &about),
            Err(e) => {
                Decision::new(decision.word, format!("{why}; but the watchdog cannot mark it blocked: {e}"), None)
            }
        },
        // Decided through the entry that reaches it by its own path, each pass.
        Verdict::Duplicate { .. } => return (None, decision),
        Verdict::Resume { restarts } => match view.as_ref() {
            Some(v) => start(p, entry, v.seen(), restarts, boot, children),
            None => decision,
        },
        _ => decision,
    };
    (stamp.filter(|_| settled && clean), decision)
}

/// What the watcher reads of an entry's state: a run's checkpoint or a fleet's state.
struct View {
    status: Status,
    progress: u32,
    run_id: String,
    stop_cause: Option<StopCause>,
}

impl View {
    fn seen(&self) -> decide::Seen<'_> {
        let (status, progress, stop_cause) = (self.status, self.progress, self.stop_cause);
        decide::Seen { status, progress, run_id: &self.run_id, stop_cause }
    }

    fn of(cp: &Checkpoint) -> View {
        let progress = cp.progress.counters.iterations_done;
        View { status: cp.status, progress, run_id: cp.run_id.clone(), stop_cause: cp.stop_cause }
    }
}

/// The state at `path`, and whether it came from the file itself (not the journal).
fn read_view(entry: &Entry, path: &Path) -> (Option<View>, bool) {
    if entry.fleet_supervisor() {
        let fleet = crate::fleet::state::read(path).ok().flatten();
        let view = fleet.map(|f| View {
            status: f.status.as_run_status(),
            progress: f.finished,
            run_id: f.fleet_id,
            stop_cause: None,
        });
        return (view, true);
    }
    // The newer of the file and the journal's last save, as `--resume` reads them:
    // after a power cut the file may be missing, torn or older than the synced
    // journal, and the run is still there to resume.
    let newest = format::read_newest(path).ok().flatten();
    let from_file = newest.as_ref().is_some_and(|newest| newest.stale.is_none());
    (newest.map(|n| View::of(&n.checkpoint)), from_file)
}

/// Starts the resume of a run (when a slot is free), counts it against this boot's
/// `[watch] max_resumes_per_boot`, and records it in the run's bookkeeping.
fn start(
    p: &mut Pass<'_>,
    entry: &Entry,
    cp: decide::Seen<'_>,
    restarts: u32,
    boot: &str,
    children: &mut Vec<Child>,
) -> Decision {
    if children.len() >= p.options.max_concurrent {
        return words::no_slot(cp, p.options.max_concurrent);
    }
    p.boot.resumes += 1;
    p.boot_changed = true;
    // Counted before it starts: a watcher that dies right after never under-counts.
    if let Err(e) = p.boot.save(p.registry) {
        eprintln!("ralph watch: cannot record this boot's resumes: {e}");
    }
    match act::resume(entry, cp) {
        Ok((child, log)) => {
            children.push(child);
            let state = WatchState {
                restarts,
                last_resume_at: Some(jiff::Timestamp::now().as_second()),
                last_resume_boot: Some(boot.to_string()),
                iterations_at_resume: Some(cp.progress),
            };
            if let Err(e) = registry::write_watch(p.registry, &entry.stem(), &state) {
                eprintln!("ralph watch: {}: cannot record the resume: {e}", entry.dir.display());
            }
            words::resumed(cp, restarts, entry.max_restarts, &log)
        }
        Err(e) => words::not_started(cp, &e.to_string()),
    }
}

/// The lock of a pass over the registry (`ralph/watch.lock`, beside the registry so
/// that taking it wakes no watcher), waited for at most 30 s; and whether this pass
/// made its file (the first pass of this version of ralph).
pub(super) fn pass_lock(registry: &Path) -> Option<(Flock<File>, bool)> {
    let path = registry.with_file_name("watch.lock");
    if let Some(parent) = path.parent() {
        let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent);
    }
    let first = std::fs::symlink_metadata(&path).is_err();
    let open = || crate::state::private::open(&path, OpenOptions::new().create(true).truncate(false).write(true));
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

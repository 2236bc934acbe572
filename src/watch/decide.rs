//! What `ralph watch` does about one registered run: a pure function of what it
//! found (the run's checkpoint, whether a ralph owns it, its own bookkeeping, the
//! boot, the clock), unit-tested without processes. [`super::words`] says each
//! verdict in words.
//!
//! The rules (docs/operations.md, "The watchdog"):
//! * a run is *interrupted* when its checkpoint says `running` or `waiting` and no
//!   ralph owns it (it crashed, was killed, or the machine rebooted), or when ralph
//!   recorded it `interrupted` (a SIGTERM of the machine, a SIGHUP) and `[watch]
//!   resume_after_shutdown` is on; `paused` (Ctrl+C, `ralph stop`, a SIGTERM of the
//!   user's own), `completed`, `failed` and `blocked` runs are never resumed;
//! * a run last active longer ago than `[watch] max_age` is *stale*: left for a
//!   person;
//! * while the watchdog is held (`ralph watch --hold`) nothing is resumed or blocked;
//! * a resume that ends in another crash counts against `[watch] max_restarts`;
//!   at the cap the run is marked `blocked`; iterations finished since the last
//!   resume (progress) or a clean stop start the count again;
//! * between resumes the watcher waits `restart_backoff`, doubling per restart that
//!   crashed, at most 30 minutes;
//! * in one boot a run is resumed once, unless it made progress since, and the
//!   watcher resumes at most `[watch] max_resumes_per_boot` runs (counted over all
//!   runs);
//! * only the run the entry registered is resumed: a directory that now holds
//!   another run (another run id, or another directory at the path: a copy, a
//!   project deleted and replaced) is left alone and reported
//!   ([`Verdict::OtherRun`]), and a run reached through two entries (a link to its
//!   directory) is decided once per pass ([`Verdict::Duplicate`]).

use std::path::{Path, PathBuf};

use crate::signal::StopCause;
#[cfg(test)]
use crate::state::checkpoint::Checkpoint;
use crate::state::checkpoint::Status;
use crate::state::identity::{Identity, Mismatch};
use crate::state::registry::entry::{Entry, WatchState};

const MAX_BACKOFF_SECS: i64 = 30 * 60;

/// What the watcher reads of a run's state (a run's checkpoint, or a fleet's state).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen<'a> {
    pub status: Status,
    /// Iterations done (tasks finished, for a fleet): progress since a resume.
    pub progress: u32,
    pub run_id: &'a str,
    /// Why it stopped, when a signal stopped it.
    pub stop_cause: Option<StopCause>,
}

#[cfg(test)]
impl<'a> Seen<'a> {
    pub(crate) fn of(cp: &'a Checkpoint) -> Seen<'a> {
        let (status, progress) = (cp.status, cp.progress.counters.iterations_done);
        Seen { status, progress, run_id: &cp.run_id, stop_cause: cp.stop_cause }
    }
}

/// What the watcher found about one run.
#[derive(Debug)]
pub(crate) struct Facts<'a> {
    pub entry: &'a Entry,
    /// The run's checkpoint; `None` when missing or unreadable.
    pub checkpoint: Option<Seen<'a>>,
    pub dir_exists: bool,
    /// The directory is under one of `--root` (or no roots were given).
    pub allowed: bool,
    /// A ralph holds the run's lock.
    pub owner_alive: bool,
    pub state: &'a WatchState,
    pub boot_id: &'a str,
    /// Unix seconds.
    pub now: i64,
    /// What a resume would lack: programs not found, credential variables unset.
    pub missing: Vec<String>,
    /// The identity of the entry's directory now (why not, when it cannot be read).
    pub identity: &'a Result<Identity, String>,
    /// An entry decided earlier in this pass that reached the same directory.
    pub decided_as: Option<&'a Path>,
    /// When the run last did something (its journal or checkpoint written), unix
    /// seconds; `None` when unknown.
    pub last_active: Option<i64>,
    /// `ralph watch --hold` is in force.
    pub held: bool,
    /// Resumes by the watcher in this boot so far, over all runs.
    pub boot_resumes: u32,
}

#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A ralph is running it.
    Live,
    /// Not for the watcher; `why` says why. `reset`: the run stopped cleanly
    /// since, so the watcher's restart count starts again.
    Leave { why: Left, reset: bool },
    /// The directory is gone.
    Gone,
    /// Interrupted, but last active before `[watch] max_age`: left for a person.
    Stale { last_active: i64 },
    /// Interrupted, and `ralph watch --hold` is in force.
    Held,
    /// Interrupted, and the watcher has resumed `[watch] max_resumes_per_boot`
    /// runs in this boot: left until the next boot.
    BootCap { resumes: u32, cap: u32 },
    /// Interrupted, but the backoff has not ended.
    Wait { until: i64 },
    /// Interrupted again in the boot the watcher last resumed it in, with no
    /// progress since: left until the next boot or a person.
    OncePerBoot,
    /// Interrupted, and it cannot or must not be resumed again: mark it `blocked`.
    Block(String),
    /// Resume it; `restarts` is the new count of restarts without a clean stop.
    Resume { restarts: u32 },
    /// The directory holds another run than the one the entry registered: never
    /// resumed; `ralph status --all` shows it and `--prune` removes the entry.
    OtherRun(Mismatch),
    /// The run was decided in this pass through another entry (`first`) that reaches
    /// the same directory (a link to it): decided once.
    Duplicate { first: PathBuf },
}

/// Why the watcher leaves a run that nobody runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Left {
    /// Outside every `--root`.
    OutsideRoots,
    /// `.agent/checkpoint.json` is missing or does not parse.
    NoCheckpoint,
    /// Interrupted by a shutdown or a closed terminal, and `[watch]
    /// resume_after_shutdown` is off.
    ShutdownNotResumed,
    /// Paused by its user (Ctrl+C, `ralph stop`, a SIGTERM of theirs).
    Paused,
    Completed,
    Failed,
    Blocked,
    /// A fleet's task: its fleet's supervisor resumes it (docs/fleet.md), never the
    /// watchdog behind its back.
    FleetTask,
}

/// Whether a run in this status can ever be resumed by the watcher: only then does
/// [`decide`] look at [`Facts::missing`], which costs a `PATH` search per program, so
/// the pass gathers it for these runs alone.
pub(crate) fn may_resume(status: Status) -> bool {
    matches!(status, Status::Running | Status::Waiting | Status::Interrupted)
}

/// Whether a run in this status is one the watcher never acts on, whatever else it
/// finds, once its bookkeeping is the default: [`decide`] then answers `Live`,
/// `Gone` or `Leave` with nothing to reset. The pass skips such a run until its
/// checkpoint changes (`seen`). `interrupted` is not one: it depends on the entry.
pub(crate) fn settled(status: Status) -> bool {
    matches!(status, Status::Paused | Status::Completed | Status::Failed | Status::Blocked)
}

pub(crate) fn decide(f: &Facts<'_>) -> Verdict {
    if !f.dir_exists {
        return Verdict::Gone;
    }
    if !f.allowed {
        return Verdict::Leave { why: Left::OutsideRoots, reset: false };
    }
    if let Some(first) = f.decided_as {
        return Verdict::Duplicate { first: first.to_path_buf() };
    }
    if f.owner_alive {
        return Verdict::Live;
    }
    if f.entry.fleet_task() {
        return Verdict::Leave { why: Left::FleetTask, reset: false };
    }
    if let Err(why) = registered_run(f) {
        return Verdict::OtherRun(why);
    }
    let (logs, resume) = if f.entry.fleet_supervisor() {
        (".agent/fleet/logs/".to_string(), "ralph fleet")
    } else {
        (format!(".agent/logs/{}/", f.checkpoint.map_or("", |c| c.run_id)), "ralph --resume")
    };
    let Some(cp) = f.checkpoint else { return Verdict::Leave { why: Left::NoCheckpoint, reset: false } };
    let leave = |why| Verdict::Leave { why, reset: true };
    match cp.status {
        Status::Running | Status::Waiting => {}
        Status::Interrupted if f.entry.resume_after_shutdown => {}
        Status::Interrupted => return leave(Left::ShutdownNotResumed),
        Status::Paused => return leave(Left::Paused),
        Status::Completed => return leave(Left::Completed),
        Status::Failed => return leave(Left::Failed),
        Status::Blocked => return leave(Left::Blocked),
    }
    if let Some(last_active) = f.last_active.filter(|&at| stale(f.now, at, f.entry.max_age_secs)) {
        return Verdict::Stale { last_active };
    }
    if f.held {
        return Verdict::Held;
    }
    let progress = f.state.iterations_at_resume.is_none_or(|at| cp.progress > at);
    let restarts = if progress { 0 } else { f.state.restarts };
    if restarts >= f.entry.max_restarts {
        return Verdict::Block(format!(
            "ralph watch resumed this run {restarts} time(s) and it stopped without a clean stop each time, \
             with no iteration finished; see {logs} and raise [watch] max_restarts, or run \
             `{resume}` yourself"
        ));
    }
    if !progress && f.state.last_resume_boot.as_deref() == Some(f.boot_id) {
        return Verdict::OncePerBoot;
    }
    let backoff = backoff_secs(f.entry.restart_backoff_secs, restarts);
    if let Some(until) = f.state.last_resume_at.map(|last| last.saturating_add(backoff)).filter(|&t| f.now < t) {
        return Verdict::Wait { until };
    }
    if !f.missing.is_empty() {
        return Verdict::Block(format!(
            "ralph watch cannot resume this run: {} missing in the watcher's environment; set them in the \
             watcher's environment file (see docs/operations.md) and run `{resume}`",
            f.missing.join(", ")
        ));
    }
    if f.boot_resumes >= f.entry.max_resumes_per_boot {
        return Verdict::BootCap { resumes: f.boot_resumes, cap: f.entry.max_resumes_per_boot };
    }
    Verdict::Resume { restarts: restarts + 1 }
}

/// Whether a run last active at `last_active` is older than `max_age_secs` at `now`.
fn stale(now: i64, last_active: i64, max_age_secs: u64) -> bool {
    let max_age = i64::try_from(max_age_secs).unwrap_or(i64::MAX);
    now.saturating_sub(last_active) > max_age
}

/// Whether the run in the entry's directory is the one the entry registered: the
/// same directory (devices compared only in the boot it registered in) and the same
/// run id.
fn registered_run(f: &Facts<'_>) -> Result<(), Mismatch> {
    f.entry.matches(f.checkpoint.map(|cp| cp.run_id), f.identity, f.boot_id)
}

/// `base`, doubled for each restart that crashed, at most 30 minutes.
fn backoff_secs(base: u64, restarts: u32) -> i64 {
    let base = i64::try_from(base).unwrap_or(MAX_BACKOFF_SECS);
    let factor = 1i64 << restarts.saturating_sub(1).min(20);
    base.saturating_mul(factor).min(MAX_BACKOFF_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::identity::DirId;

    /// The fixture checkpoint's run, and its directory.
    const RUN: &str = "20261201T054329Z-12180";
    const HERE: Identity = Identity { project: DirId { dev: 1, ino: 10 }, agent_dir: DirId { dev: 1, ino: 11 } };
    const FOUND: &Result<Identity, String> = &Ok(HERE);

    fn entry() -> Entry {
        Entry {
            dir: PathBuf::from("/p"),
            run_id: RUN.into(),
            identity: Some(HERE),
            pid: 1,
            host: "h".into(),
            boot_id: "boot-1".into(),
            status: Status::Running,
            config: None,
            credential_names: vec![],
            programs: vec![],
            path: None,
            resume_after_shutdown: true,
            max_restarts: 3,
            restart_backoff_secs: 30,
            max_age_secs: 86_400,
            max_resumes_per_boot: 20,
            updated_at: String::new(),
            fleet: None,
            file: PathBuf::new(),
            inode: 0,
        }
    }

    fn checkpoint(status: Status, iterations_done: u32) -> Checkpoint {
        let sample = include_str!("../../tests/fixtures/checkpoints/v1-current.json");
        let mut cp: Checkpoint = serde_json::from_str(sample).unwrap();
        cp.status = status;
        cp.progress.counters.iterations_done = iterations_done;
        cp
    }

    /// What a pass knows of `entry`'s run standing at `cp`: its directory there and
    /// allowed, no owner, the identity registered, nothing missing, in boot `boot-2`
    /// at time 0. Tests change what they are about with struct update.
    fn facts<'a>(entry: &'a Entry, cp: &'a Checkpoint, state: &'a WatchState) -> Facts<'a> {
        Facts {
            entry,
            checkpoint: Some(Seen::of(cp)),
            dir_exists: true,
            allowed: true,
            owner_alive: false,
            state,
            boot_id: "boot-2",
            now: 0,
            missing: vec![],
            identity: FOUND,
            decided_as: None,
            last_active: None,
            held: false,
            boot_resumes: 0,
        }
    }

    fn decide_with(cp: &Checkpoint, state: &WatchState, entry: &Entry, now: i64) -> Verdict {
        decide(&Facts { now, ..facts(entry, cp, state) })
    }

    /// The pass leaves `missing` empty for a run that cannot be resumed; that must
    /// never change a verdict.
    #[test]
    fn what_is_missing_matters_only_for_runs_that_may_resume() {
        let e = entry();
        let none = WatchState::default();
        for status in [
            Status::Running,
            Status::Waiting,
            Status::Interrupted,
            Status::Paused,
            Status::Completed,
            Status::Failed,
            Status::Blocked,
        ] {
            let cp = checkpoint(status, 2);
            let facts = |missing: Vec<String>| Facts { missing, ..facts(&e, &cp, &none) };
            let with = decide(&facts(vec!["program claude".into()]));
            let without = decide(&facts(vec![]));
            assert_eq!(with != without, may_resume(status), "{status:?}: {with:?} / {without:?}");
        }
    }

    /// The pass skips a settled run without gathering its facts: no facts may make
    /// the watcher act on it.
    #[test]
    fn a_settled_run_is_never_acted_on() {
        let none = WatchState::default();
        for status in [Status::Paused, Status::Completed, Status::Failed, Status::Blocked] {
            let cp = checkpoint(status, 2);
            for bits in 0..32u8 {
                let e = Entry { resume_after_shutdown: bits & 1 != 0, max_restarts: 0, ..entry() };
                let v = decide(&Facts {
                    entry: &e,
                    checkpoint: Some(Seen::of(&cp)),
                    dir_exists: bits & 2 != 0,
                    allowed: bits & 4 != 0,
                    owner_alive: bits & 8 != 0,
                    state: &none,
                    boot_id: "boot-1",
                    now: i64::from(bits),
                    missing: if bits & 16 != 0 { vec!["program claude".into()] } else { vec![] },
                    identity: FOUND,
                    decided_as: None,
                    last_active: Some(i64::from(bits)),
                    held: bits & 8 != 0,
                    boot_resumes: u32::from(bits),
                });
                assert!(matches!(v, Verdict::Live | Verdict::Gone | Verdict::Leave { .. }), "{status:?}: {v:?}");
                assert!(settled(status) && !may_resume(status));
            }
        }
    }

    #[test]
    fn crashed_runs_resume_and_stopped_ones_do_not() {
        let e = entry();
        let none = WatchState::default();
        for status in [Status::Running, Status::Waiting, Status::Interrupted] {
            assert_eq!(decide_with(&checkpoint(status, 2), &none, &e, 0), Verdict::Resume { restarts: 1 });
        }
        for status in [Status::Paused, Status::Completed, Status::Failed, Status::Blocked] {
            assert!(matches!(decide_with(&checkpoint(status, 2), &none, &e, 0), Verdict::Leave { reset: true, .. }));
        }
        let no_shutdowns = Entry { resume_after_shutdown: false, ..entry() };
        assert!(matches!(
            decide_with(&checkpoint(Status::Interrupted, 2), &none, &no_shutdowns, 0),
            Verdict::Leave { .. }
        ));
    }

    #[test]
    fn a_live_owner_a_missing_directory_and_foreign_roots_are_left_alone() {
        let (e, s, cp) = (entry(), WatchState::default(), checkpoint(Status::Running, 0));
        let base = Facts { owner_alive: true, boot_id: "b", ..facts(&e, &cp, &s) };
        assert_eq!(decide(&base), Verdict::Live);
        assert_eq!(decide(&Facts { dir_exists: false, ..base }), Verdict::Gone);
        let outside = Facts { allowed: false, boot_id: "b", ..facts(&e, &cp, &s) };
        assert!(matches!(decide(&outside), Verdict::Leave { reset: false, .. }));
    }

    #[test]
    fn a_crash_loop_backs_off_once_per_boot_and_ends_blocked() {
        let e = entry();
        let cp = checkpoint(Status::Running, 2);
        // Resumed in boot-1 at t=100 with 2 iterations done; it crashed again.
        let mut s = WatchState {
            restarts: 1,
            last_resume_at: Some(100),
            last_resume_boot: Some("boot-2".into()),
            iterations_at_resume: Some(2),
        };
        assert_eq!(decide_with(&cp, &s, &e, 1000), Verdict::OncePerBoot);
        s.last_resume_boot = Some("boot-1".into());
        // Next boot, but still inside the backoff.
        assert_eq!(decide_with(&cp, &s, &e, 110), Verdict::Wait { until: 130 });
        assert_eq!(decide_with(&cp, &s, &e, 130), Verdict::Resume { restarts: 2 });
        s.restarts = 2;
        assert_eq!(decide_with(&cp, &s, &e, 150), Verdict::Wait { until: 160 });
        s.restarts = 3;
        assert!(matches!(decide_with(&cp, &s, &e, 10_000), Verdict::Block(why) if why.contains("max_restarts")));
        // Progress since the last resume starts the count again, in any boot.
        let progressed = checkpoint(Status::Running, 3);
        s.last_resume_boot = Some("boot-2".into());
        assert_eq!(decide_with(&progressed, &s, &e, 10_000), Verdict::Resume { restarts: 1 });
    }

    #[test]
    fn missing_credentials_or_programs_block_instead_of_launching() {
        let (e, s, cp) = (entry(), WatchState::default(), checkpoint(Status::Running, 0));
        let missing = vec!["ANTHROPIC_API_KEY".into(), "program claude".into()];
        let v = decide(&Facts { boot_id: "b", missing, ..facts(&e, &cp, &s) });
        assert!(matches!(v, Verdict::Block(why) if why.contains("ANTHROPIC_API_KEY") && why.contains("claude")));
    }

    #[test]
    fn only_the_run_the_entry_registered_is_resumed() {
        let (e, s) = (entry(), WatchState::default());
        let ours = checkpoint(Status::Running, 2);
        let mut theirs = checkpoint(Status::Running, 2);
        theirs.run_id = "20270101T000000Z-1".into();
        let facts = |entry, cp, identity, boot_id| Facts { identity, boot_id, ..facts(entry, cp, &s) };
        assert_eq!(decide(&facts(&e, &ours, FOUND, "boot-1")), Verdict::Resume { restarts: 1 });
        // Another project moved or cloned to the path: new inodes, whatever its run id.
        let moved_in = Ok(Identity { project: DirId { dev: 1, ino: 20 }, agent_dir: DirId { dev: 1, ino: 21 } });
        for cp in [&ours, &theirs] {
            let v = decide(&facts(&e, cp, &moved_in, "boot-1"));
            assert!(matches!(v, Verdict::OtherRun(Mismatch::OtherDirectory(_))), "{v:?}");
        }
        // Another run in the registered directory.
        let v = decide(&facts(&e, &theirs, FOUND, "boot-1"));
        assert!(matches!(&v, Verdict::OtherRun(Mismatch::OtherRun { found, .. }) if found == &theirs.run_id), "{v:?}");
        // After a reboot the device may be numbered anew; the inodes decide.
        let renumbered = Ok(Identity { project: DirId { dev: 9, ino: 10 }, agent_dir: DirId { dev: 9, ino: 11 } });
        assert_eq!(decide(&facts(&e, &ours, &renumbered, "boot-2")), Verdict::Resume { restarts: 1 });
        assert!(matches!(decide(&facts(&e, &ours, &renumbered, "boot-1")), Verdict::OtherRun(_)));
        // An entry of an older ralph has no identity: its run id decides.
        let old = Entry { identity: None, ..entry() };
        assert_eq!(decide(&facts(&old, &ours, &moved_in, "boot-1")), Verdict::Resume { restarts: 1 });
        assert!(matches!(decide(&facts(&old, &theirs, &moved_in, "boot-1")), Verdict::OtherRun(_)));
        // A run reached again through another entry (a link) is decided once.
        let first = PathBuf::from("/real/p");
        let again = Facts { decided_as: Some(&first), ..facts(&e, &ours, FOUND, "boot-1") };
        assert_eq!(decide(&again), Verdict::Duplicate { first: first.clone() });
    }

    #[test]
    fn backoff_doubles_up_to_half_an_hour() {
        assert_eq!(backoff_secs(30, 0), 30);
        assert_eq!(backoff_secs(30, 1), 30);
        assert_eq!(backoff_secs(30, 2), 60);
        assert_eq!(backoff_secs(30, 3), 120);
        assert_eq!(backoff_secs(30, 40), 1800);
    }
}

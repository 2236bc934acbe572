//! The run's end: a stop by a signal (the session kept for `--resume`), the second
//! Ctrl+C, a cap or a person's problem, and the final save, after a full disk is
//! waited out (the same wait that holds the next attempt back while the disk has no
//! room for the run's state).

use crate::events::RunEvent;
use crate::outcome::RunEnd;
use crate::recovery::policy::Stop;
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::state::writes;
use crate::supervise::note::Trouble;

use super::effect::{Effect, Fatal, Show};
use super::record;
use super::state::{Mode, RunState, Wait};

/// An orderly stop by a signal (or `ralph stop`), and the run's end.
pub(super) fn stopped(run: &mut RunState, cause: StopCause, session: Option<String>) {
    let end_ = stop_by(run, cause, session);
    end(run, end_);
}

/// What an orderly stop records: the attempt in flight did not fail, it was stopped;
/// its session continues on `--resume`, told that the last tool call it started has
/// an unknown outcome. Returns the run's end.
pub(super) fn stop_by(run: &mut RunState, cause: StopCause, session: Option<String>) -> RunEnd {
    let last_tool = run.cp.in_flight.as_ref().and_then(|f| f.tool.as_ref()).map(record::in_flight_tool);
    let interrupted_note = record::note_for(run, Trouble::Interrupted, last_tool);
    if let Some(in_flight) = run.cp.in_flight.take() {
        let session = session.or(in_flight.session);
        // The journal tells every attempt's end, this one included, once the
        // checkpoint no longer holds it in flight.
        run.emit_after_save(RunEvent::AttemptInterrupted {
            attempt: in_flight.attempt,
            agent: in_flight.agent.clone(),
            session: session.clone(),
            started_at: None,
            signal: Some(cause.signal_name().to_string()),
        });
        let progress = &mut run.cp.progress;
        if let Some(s) = session {
            progress.sessions.insert(in_flight.agent, s.clone());
            progress.resume_session = Some(s);
        }
        progress.recovery_note = Some(interrupted_note);
    }
    run.stopped_by(cause);
    RunEnd::Stopped(cause)
}

/// The second Ctrl+C: the agent's group is killed already. The run is recorded as
/// stopped by the first signal's cause, like an orderly stop, and ends at once.
pub(super) fn forced(run: &mut RunState, session: Option<String>) {
    let agent = run.cp.in_flight.as_ref().map(|f| f.agent.clone());
    run.show(Show::Killed { agent });
    let _ = stop_by(run, run.stopping.unwrap_or(StopCause::User), session);
    end(run, RunEnd::ForceExit);
}

/// The failure just recorded ends the run (a budget it used up, or a person's
/// problem): the summary shows it as what ended the run.
pub(super) fn failed(run: &mut RunState, stop: Stop) {
    run.ending_error = run.cp.last_error.clone();
    self::stop(run, stop);
}

/// A cap or a person's problem ends the run; no error did, unless [`failed`] says so.
pub(super) fn stop(run: &mut RunState, stop: Stop) {
    let cp = &mut run.cp;
    cp.in_flight = None;
    let end_ = match stop {
        Stop::Failed { cap, message } => {
            let named = cap.named(&cp.progress.position.phase_name);
            (cp.status, cp.stop_reason, cp.stopped_by) = (Status::Failed, Some(message.clone()), Some(named.clone()));
            let (key, phrase) = (named.key, named.phrase);
            run.emit(RunEvent::CapReached { cap, key, phrase, message: message.clone() });
            RunEnd::Failed(message)
        }
        Stop::Blocked { message } => {
            (cp.status, cp.stop_reason) = (Status::Blocked, Some(message.clone()));
            RunEnd::Blocked(message)
        }
    };
    end(run, end_);
}

/// The run ends: its final state must reach the disk too, so a full disk is waited
/// out first (not after the second Ctrl+C, which leaves at once).
pub(super) fn end(run: &mut RunState, end: RunEnd) {
    if end != RunEnd::ForceExit && run.disk_full.is_some() {
        return disk_wait(run, 0, Some(end));
    }
    finish(run, end);
}

/// Writes the final state and hands the end to the shell (summary, lease, lock);
/// first the working tree it leaves is recorded when a resume may follow.
pub(super) fn finish(run: &mut RunState, end: RunEnd) {
    if records_tree(run, &end) {
        run.effect(Effect::RecordTree);
        run.mode = Mode::Recording(end);
        return;
    }
    finish_now(run, end);
}

/// Whether the run's end records the working tree it leaves (docs/git.md): an
/// orderly end (a stop, a cap, a person's problem) of a run that commits, which a
/// person may edit in before `--resume`; what then differs is theirs. A completed
/// run is never resumed.
#[must_use]
pub(crate) fn records_tree(run: &RunState, end: &RunEnd) -> bool {
    let commits = run.setting.loaded.config.git.commit != crate::config::CommitMode::Off;
    *end != RunEnd::Completed && run.setting.git && run.cp.git.is_some() && commits
}

/// The working tree of the run's end is known: the final save keeps it.
pub(super) fn tree_recorded(run: &mut RunState, tree: Option<crate::git::plan::Tree>) {
    let Mode::Recording(end) = std::mem::take(&mut run.mode) else { return };
    if let Some(git) = run.cp.git.as_mut() {
        git.stopped = tree;
    }
    finish_now(run, end);
}

fn finish_now(run: &mut RunState, end: RunEnd) {
    if end == RunEnd::Completed {
        run.cp.status = Status::Completed;
    }
    run.cp.clean_stop = true;
    run.save();
    let cp = &run.cp;
    let ended = RunEvent::RunEnded { status: cp.status, reason: cp.stop_reason.clone(), stop_cause: cp.stop_cause };
    run.emit(ended);
    run.effect(Effect::Finish(end));
    run.mode = Mode::Ended;
}

/// A state file the disk had no room for: the `tries`th round of waiting for space,
/// with backoff, bounded by the run's time limit; `then` is the run's end when it
/// ended (its final state must reach the disk too).
pub(super) fn disk_wait(run: &mut RunState, tries: u32, then: Option<RunEnd>) {
    let Some((path, free)) = run.disk_full.clone() else { return };
    let why = format!("disk full on {path} ({free} free)");
    let mut delay = writes::backoff(tries);
    if let Some(left) = run.runtime_left() {
        if left.is_zero() {
            let why = format!("{why}; [general] max_runtime ran out while waiting for space");
            run.effect(Effect::Fail(Fatal::NoSpace(why)));
            run.mode = Mode::Ended;
            return;
        }
        delay = delay.min(left);
    }
    if tries == 0 {
        run.emit(RunEvent::DiskFull { path, free });
    }
    run.show(Show::Waiting { why, delay });
    run.effect(Effect::Timer(run.now.mono + delay));
    run.mode = Mode::Waiting(Wait::Disk { tries, then });
}

/// The writes a full disk refused were tried again.
pub(super) fn rewritten(run: &mut RunState, still_full: Option<(String, String)>) {
    let Mode::Rewriting { tries, then } = std::mem::take(&mut run.mode) else { return };
    match still_full {
        Some(full) => {
            run.disk_full = Some(full);
            disk_wait(run, tries.saturating_add(1), then);
        }
        None => {
            if let Some((path, _)) = run.disk_full.take() {
                run.emit(RunEvent::DiskSpaceBack { path });
            }
            match then {
                Some(end) => finish(run, end),
                None => run.mode = Mode::Ready,
            }
        }
    }
}

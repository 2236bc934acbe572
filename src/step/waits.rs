//! Waiting without spending anything: a backoff, a rate-limit reset (persisted, so a
//! restart keeps waiting), the offline pause with its probes, and a full disk. Each
//! wait is a timer or a probe the shell races with the signals, so a stop ends it at
//! once; none outlasts the run's time limit.

use std::time::Duration;

use crate::events::RunEvent;
use crate::recovery::probe::{self, ProbeResult};
use crate::recovery::rate_limit;
use crate::state::checkpoint::Status;

use super::effect::{Effect, Show};
use super::ending;
use super::state::{Mode, Online, Probe, RunState, Wait};

/// How long `checkpoint.json` may lag behind the journal's saves of one status (the
/// shell's catch-up), and so the shortest wait a reader of the checkpoint could see.
pub(crate) const CATCH_UP: Duration = Duration::from_millis(250);

/// Waits `delay` (status `waiting`), unless a stop came first; `then` says what the
/// timer ends.
pub(super) fn wait(run: &mut RunState, delay: Duration, why: String, then: Wait) {
    if let Some(cause) = run.stopping {
        return ending::stopped(run, cause, None);
    }
    // No wait outlasts the run's time limit; the cap is checked before the next attempt.
    let delay = run.runtime_left().map_or(delay, |left| delay.min(left));
    // Said before it is saved: whoever sees `waiting` on disk has seen the line.
    run.show(Show::Waiting { why, delay });
    if seen(delay) {
        run.cp.status = Status::Waiting;
        let ends = run.now.wall.checked_add(delay).unwrap_or(run.now.wall);
        run.control.wait_until = Some(ends.as_second());
        run.save();
    }
    run.effect(Effect::Timer(run.now.mono + delay));
    run.mode = Mode::Waiting(then);
}

/// Whether a wait is a state of the run worth saving: one shorter than a reader of
/// the checkpoint could see (the attempt's own catch-up time) is not; saving it
/// would cost a sync and two registry writes between a crash and the next attempt,
/// and a resume after a power cut in it retries at once, as the wait would have.
pub(crate) fn seen(delay: Duration) -> bool {
    delay >= CATCH_UP
}

/// Waits until the unix second `at` (a rate-limit reset with its margin, which the
/// policy recorded as `rate_limit_until`); the wait is shown with the reset the
/// provider reported.
pub(super) fn rate_limit(run: &mut RunState, at: i64, why: &str) {
    let started = run.now.unix();
    let left = u64::try_from(at.saturating_sub(started)).unwrap_or(0);
    if left == 0 {
        return reset_reached(run);
    }
    let reset = rate_limit::show_time(at.saturating_sub(rate_limit::MARGIN_SECS), &run.setting.tz);
    let why = format!("{why}: waiting for the reported reset at {reset}");
    wait(run, Duration::from_secs(left), why, Wait::RateLimit { started });
}

/// The reset came: the record of the wait goes, saved.
fn reset_reached(run: &mut RunState) {
    rate_limit::reset_reached(&mut run.cp.progress);
    run.save();
    run.mode = Mode::Ready;
}

/// The timer went off.
pub(super) fn timer(run: &mut RunState) {
    let Mode::Waiting(wait) = std::mem::take(&mut run.mode) else { return };
    run.control.wait_until = None;
    match wait {
        Wait::Backoff | Wait::RateLimit { .. } => {
            run.show(Show::Clear);
            run.cp.status = Status::Running;
            if let Wait::RateLimit { started } = wait {
                // A rate-limit wait has its own bound, not the environmental streak's.
                run.cp.progress.exclude_from_streak(run.now.unix().saturating_sub(started));
                reset_reached(run);
            }
        }
        Wait::Offline { endpoints, paused_at } => {
            run.effect(Effect::Probe(endpoints.clone()));
            run.mode = Mode::Probing(Probe::Round { endpoints, paused_at });
        }
        Wait::Disk { tries, then } => {
            run.show(Show::Clear);
            // Try again: the checkpoint first (it is what a restart resumes from),
            // then the journal lines and the log the disk refused.
            run.rewrite();
            run.mode = Mode::Rewriting { tries, then };
        }
    }
}

/// A stop came during a wait (or a probe): the run stops there, and the time waited
/// for the network or a reset stays out of the environmental streak. A stop while the
/// final state waits for disk space is the run's end now, without another wait.
pub(super) fn interrupted(run: &mut RunState, cause: crate::signal::StopCause) {
    let mode = std::mem::take(&mut run.mode);
    let since = match &mode {
        Mode::Waiting(Wait::RateLimit { started }) => Some(*started),
        Mode::Waiting(Wait::Offline { paused_at, .. }) | Mode::Probing(Probe::Round { paused_at, .. }) => {
            Some(*paused_at)
        }
        _ => None,
    };
    if let Some(since) = since {
        run.cp.progress.exclude_from_streak(run.now.unix().saturating_sub(since));
    }
    let end = ending::stop_by(run, cause, None);
    match mode {
        Mode::Waiting(Wait::Disk { then: Some(_), .. }) => ending::finish(run, end),
        _ => ending::end(run, end),
    }
}

/// The endpoints whose silence means "offline" now (the core decides which).
pub(super) fn probe_endpoints(run: &RunState) -> Vec<String> {
    let explicit = run.setting.loaded.config.offline.probe.as_deref();
    let candidates = run.setting.endpoints.per_phase.get(run.cp.progress.position.phase);
    probe::judged(explicit, candidates.map_or(&[], Vec::as_slice), &run.answered)
}

/// A probe answered for these endpoints: with a single one, the answer is its own.
pub(super) fn answered(run: &mut RunState, endpoints: &[String]) {
    if let [one] = endpoints {
        run.answered.insert(one.clone());
    }
}

/// Whether the providers answer: while they do not, the run pauses, starting
/// nothing and spending nothing; when they do, `then` follows.
pub(super) fn offline_check(run: &mut RunState, then: Online) {
    if let Some(cause) = run.stopping {
        return ending::stopped(run, cause, None);
    }
    let endpoints = probe_endpoints(run);
    if endpoints.is_empty() {
        // Nothing to judge by: the answer is "online", a run never pauses on a guess.
        return online(run, then, &endpoints);
    }
    run.effect(Effect::Probe(endpoints.clone()));
    run.mode = Mode::Probing(Probe::Offline { endpoints, then });
}

/// The probe of an offline check or of a round of the pause answered (a failure's
/// probe is `failure::probed`'s).
pub(super) fn probed(run: &mut RunState, probe: Probe, result: ProbeResult) {
    match probe {
        Probe::Failure { .. } => {}
        Probe::Offline { endpoints, then } => {
            tracing::debug!(?endpoints, ?result, "connectivity probe");
            match result {
                ProbeResult::Online => online(run, then, &endpoints),
                ProbeResult::Offline { last_error } => go_offline(run, endpoints, last_error),
            }
        }
        Probe::Round { endpoints, paused_at } => {
            tracing::debug!(?result, "offline probe");
            match result {
                ProbeResult::Online => {
                    run.show(Show::Clear);
                    run.cp.progress.exclude_from_streak(run.now.unix().saturating_sub(paused_at));
                    back_online(run);
                }
                ProbeResult::Offline { .. } => round(run, endpoints, paused_at),
            }
        }
    }
}

/// The providers answer: back from a pause (the interrupted attempt is retried at
/// once), or on with `then`.
fn online(run: &mut RunState, then: Online, endpoints: &[String]) {
    answered(run, endpoints);
    if run.cp.progress.offline_since.take().is_some() {
        return back_online(run);
    }
    match then {
        Online::Backoff(delay) if !delay.is_zero() => {
            wait(run, delay, "retrying after backoff".to_string(), Wait::Backoff);
        }
        Online::Ready | Online::Backoff(_) => run.mode = Mode::Ready,
    }
}

/// The providers do not answer: the pause begins (or goes on after a restart), with
/// its status saved and its line shown.
fn go_offline(run: &mut RunState, endpoints: Vec<String>, error: String) {
    let now = run.now.unix();
    let since = *run.cp.progress.offline_since.get_or_insert(now);
    run.emit(RunEvent::Offline { since, endpoints: endpoints.clone(), error });
    let next_probe = run.setting.loaded.config.offline.interval;
    run.show(Show::Offline { since, endpoints: endpoints.clone(), next_probe });
    run.cp.status = Status::Waiting;
    run.save();
    round(run, endpoints, now);
}

/// One round of the pause: a network that never returns is bounded by the run's
/// time limit, checked before every probe.
fn round(run: &mut RunState, endpoints: Vec<String>, paused_at: i64) {
    if let Some(stop) = run.cap_reached() {
        run.cp.progress.exclude_from_streak(run.now.unix().saturating_sub(paused_at));
        return ending::stop(run, stop);
    }
    let interval = run.setting.loaded.config.offline.interval;
    run.show(Show::NextProbe(interval));
    run.effect(Effect::Timer(run.now.mono + interval));
    run.mode = Mode::Waiting(Wait::Offline { endpoints, paused_at });
}

/// The outage is over: it explained the failures, so the next one starts a fresh
/// backoff; the interrupted attempt is retried at once.
fn back_online(run: &mut RunState) {
    run.cp.progress.offline_since = None;
    run.emit(RunEvent::Online {});
    run.cp.progress.counters.retry_streak = 0;
    run.cp.status = Status::Running;
    run.save();
    run.mode = Mode::Ready;
}

/// Probes every default endpoint of the run's agents that has not answered yet, and
/// the host itself, each on its own, without waiting: those that answer become
/// evidence for later offline checks. At the start and after each successful
/// attempt; `[offline] probe` needs none.
pub(super) fn probe_in_background(run: &mut RunState) {
    if run.setting.loaded.config.offline.probe.is_some() {
        return;
    }
    let candidates = run.setting.endpoints.all.iter().map(String::as_str).chain([probe::HOST]);
    let pending: Vec<String> = candidates.filter(|e| !run.answered.contains(*e)).map(str::to_string).collect();
    if !pending.is_empty() {
        run.effect(Effect::ProbeInBackground(pending));
    }
}

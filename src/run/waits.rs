//! Waiting without spending anything: backoff, rate-limit resets (persisted, so a
//! restart keeps waiting), and the offline pause with its TCP probes (which endpoints
//! count is the core's, `recovery::probe`; the probes of the default endpoints that
//! make them count run here, in the background). Every wait gives way to a signal at
//! once.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::AgentConfig;
use crate::error::RalphError;
use crate::events::RunEvent;
use crate::recovery::probe::{self, ProbeResult};
use crate::recovery::rate_limit;
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::checkpoint::Status;

use super::RunEnd;
use super::attempt::CATCH_UP;
use super::connect;
use super::dispatch::{Dispatcher, Flow, Raced};

impl Dispatcher {
    /// Waits `delay` (status `waiting`), unless a signal stops the run first.
    pub(super) async fn wait(&mut self, delay: Duration, why: &str, signals: &mut Signals) -> Flow {
        if let Some(cause) = signals.stopping() {
            return self.stopped(cause, None).map(Some);
        }
        // No wait outlasts the run's time limit; the cap is checked before the next attempt.
        let delay = self.runtime_left().map_or(delay, |left| delay.min(left));
        let until = Instant::now() + delay;
        // Said before it is saved: whoever sees `waiting` on disk has seen the line.
        self.r.reporter.waiting(why, delay);
        // A wait shorter than a reader of the checkpoint could see (the attempt's
        // own catch-up time) is not a state of the run: saving it would cost a sync
        // and two registry writes between a crash and the next attempt, and a resume
        // after a power cut in it retries at once, as the wait would have.
        let seen = delay >= CATCH_UP;
        if seen {
            self.r.checkpoint.status = Status::Waiting;
            let ends = jiff::Timestamp::now().as_second().saturating_add(i64::try_from(delay.as_secs()).unwrap_or(0));
            self.control.wait_until = Some(ends);
            self.save()?;
            self.refresh_live();
        }
        let raced = self.race(tokio::time::sleep_until(until), signals).await?;
        self.control.wait_until = None;
        if let Err(end) = raced {
            return Ok(Some(end));
        }
        self.r.reporter.clear();
        self.r.checkpoint.status = Status::Running;
        self.refresh_live();
        Ok(None)
    }

    /// Waits until the unix second `at` (a rate-limit reset) with the status
    /// `waiting` and the reset in the checkpoint; then clears it.
    pub(super) async fn wait_for_reset(&mut self, at: i64, why: &str, signals: &mut Signals) -> Flow {
        self.r.checkpoint.progress.rate_limit_until = Some(at);
        let started = self.unix_now();
        let left = u64::try_from(at.saturating_sub(started)).unwrap_or(0);
        if left > 0 {
            // Shown as the provider reported it; the margin is ralph's own.
            let reset = rate_limit::show_time(at.saturating_sub(rate_limit::MARGIN_SECS));
            let why = format!("{why}: waiting for the reported reset at {reset}");
            let end = self.wait(Duration::from_secs(left), &why, signals).await?;
            // A rate-limit wait has its own bound, not the environmental streak's.
            self.r.checkpoint.progress.exclude_from_streak(self.unix_now().saturating_sub(started));
            if let Some(end) = end {
                return Ok(Some(end));
            }
        }
        self.r.checkpoint.progress.rate_limit_until = None;
        self.save()?;
        Ok(None)
    }

    /// After an environmental failure: probe the providers, and while they are
    /// unreachable start nothing and spend nothing, probing every `[offline]
    /// interval`, until they answer or a signal stops the run.
    pub(super) async fn offline_pause(&mut self, signals: &mut Signals) -> Result<Offline, RalphError> {
        if let Some(cause) = signals.stopping() {
            return self.stopped(cause, None).map(Offline::Stopped);
        }
        let endpoints = self.probe_endpoints();
        let first = match self.probe_once(&endpoints, signals).await? {
            Ok(result) => result,
            Err(end) => return Ok(Offline::Stopped(end)),
        };
        tracing::debug!(?endpoints, result = ?first, "connectivity probe");
        let ProbeResult::Offline { last_error } = first else {
            if self.r.checkpoint.progress.offline_since.take().is_some() {
                self.back_online()?;
                return Ok(Offline::Recovered);
            }
            return Ok(Offline::Online);
        };
        let now = self.unix_now();
        let since = *self.r.checkpoint.progress.offline_since.get_or_insert(now);
        self.emit(RunEvent::Offline { since, endpoints: endpoints.clone(), error: last_error });
        let interval = self.r.loaded.config.offline.interval;
        let next_probe = Arc::new(AtomicU64::new(self.r.reporter.probe_clock(interval)));
        self.r.reporter.offline(since, &endpoints, Arc::clone(&next_probe));
        self.r.checkpoint.status = Status::Waiting;
        self.save()?;
        let paused_at = self.unix_now();
        let outcome = self.offline_rounds(&endpoints, &next_probe, signals).await;
        // The offline pause has its own bound, not the environmental streak's.
        self.r.checkpoint.progress.exclude_from_streak(self.unix_now().saturating_sub(paused_at));
        outcome
    }

    /// Probes every `[offline] interval` until an endpoint answers.
    async fn offline_rounds(
        &mut self,
        endpoints: &[String],
        next_probe: &AtomicU64,
        signals: &mut Signals,
    ) -> Result<Offline, RalphError> {
        let (timeout, interval) = (self.r.loaded.config.offline.timeout, self.r.loaded.config.offline.interval);
        loop {
            if let Some(stop) = self.cap_reached() {
                // A network that never returns is bounded by the run's time limit.
                return self.stop(stop).map(Offline::Stopped);
            }
            next_probe.store(self.r.reporter.probe_clock(interval), Ordering::Relaxed);
            let round = async {
                tokio::time::sleep(interval).await;
                connect::probe(endpoints, timeout).await
            };
            match self.race(round, signals).await? {
                Ok(result) => {
                    tracing::debug!(?result, "offline probe");
                    if result == ProbeResult::Online {
                        break;
                    }
                }
                Err(end) => return Ok(Offline::Stopped(end)),
            }
        }
        self.r.reporter.clear();
        self.r.checkpoint.progress.offline_since = None;
        self.back_online()?;
        Ok(Offline::Recovered)
    }

    pub(super) fn back_online(&mut self) -> Result<(), RalphError> {
        self.emit(RunEvent::Online {});
        // The outage explained the failures: the next one starts a fresh backoff.
        self.r.checkpoint.progress.counters.retry_streak = 0;
        self.r.checkpoint.status = Status::Running;
        self.save()
    }

    /// One probe of `endpoints`, which gives way to a signal: Ctrl+C never waits for
    /// a connect timeout (`Err` with how the run ended then).
    pub(super) async fn probe_once(&mut self, endpoints: &[String], signals: &mut Signals) -> Raced<ProbeResult> {
        if let Some(cause) = signals.stopping() {
            return self.stopped(cause, None).map(Err);
        }
        let timeout = self.r.loaded.config.offline.timeout;
        let result = self.race(connect::probe(endpoints, timeout), signals).await?;
        if let Ok(ProbeResult::Online) = result {
            self.remember_answered(endpoints);
        }
        Ok(result)
    }

    /// The one way the dispatcher awaits something: `future`, unless a signal stops
    /// the run first (`Err` with how it ended). Control messages are served
    /// meanwhile; as nothing of the iteration runs while waiting, `ralph stop` stops
    /// here.
    pub(super) async fn race<T>(&mut self, future: impl Future<Output = T>, signals: &mut Signals) -> Raced<T> {
        tokio::pin!(future);
        loop {
            tokio::select! {
                result = &mut future => return Ok(Ok(result)),
                action = signals.next() => match action {
                    InterruptAction::Stop(cause) => return self.stopped(cause, None).map(Err),
                    InterruptAction::ForceExit => return Ok(Err(RunEnd::ForceExit)),
                    InterruptAction::Ignore => {}
                    InterruptAction::Control => if self.serve_inbox(signals) {
                        return self.stopped(StopCause::User, None).map(Err);
                    },
                },
            }
        }
    }

    /// The endpoints whose silence means "offline" now (the core decides which).
    pub(super) fn probe_endpoints(&self) -> Vec<String> {
        let config = &self.r.loaded.config;
        let answered = self.answered.lock().map(|a| a.clone()).unwrap_or_default();
        probe::judged(config.offline.probe.as_deref(), &self.candidates(true), &answered)
    }

    /// The default endpoints of the current phase's agents, or of every phase's.
    fn candidates(&self, this_phase: bool) -> Vec<String> {
        let config = &self.r.loaded.config;
        let phases: Vec<&crate::config::Phase> =
            if this_phase { vec![self.phase()] } else { self.r.loaded.phases.iter().collect() };
        let agents: BTreeMap<String, AgentConfig> = phases
            .iter()
            .flat_map(|p| p.chain.iter())
            .filter_map(|name| config.agents.get(name).map(|a| (name.clone(), a.clone())))
            .collect();
        let env = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
        let read = |path: &std::path::Path| std::fs::read_to_string(path).ok();
        probe::candidates(&agents, &env, &read)
    }

    /// With a single endpoint, an answer is that endpoint's.
    fn remember_answered(&self, endpoints: &[String]) {
        if let ([one], Ok(mut answered)) = (endpoints, self.answered.lock()) {
            answered.insert(one.clone());
        }
    }

    /// Probes every default endpoint of the run's agents, each on its own, without
    /// waiting: those that answer become evidence for later offline checks. Run at
    /// the start and after each successful attempt; `[offline] probe` needs none.
    pub(super) fn probe_defaults_in_background(&self) {
        if self.r.loaded.config.offline.probe.is_some() {
            return;
        }
        let timeout = self.r.loaded.config.offline.timeout;
        let pending: Vec<String> = {
            let Ok(answered) = self.answered.lock() else { return };
            self.candidates(false).into_iter().filter(|e| !answered.contains(e)).collect()
        };
        for endpoint in pending {
            let answered = Arc::clone(&self.answered);
            tokio::spawn(async move {
                if connect::probe(std::slice::from_ref(&endpoint), timeout).await == ProbeResult::Online
                    && let Ok(mut answered) = answered.lock()
                {
                    answered.insert(endpoint);
                }
            });
        }
    }
}

/// How an offline check ended.
pub(super) enum Offline {
    /// The providers answer; nothing was paused.
    Online,
    /// They did not, and now do again.
    Recovered,
    /// A signal stopped the run during the pause.
    Stopped(RunEnd),
}

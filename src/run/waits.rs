//! Waiting without spending anything: backoff, rate-limit resets (persisted, so a
//! restart keeps waiting), and the offline pause with its TCP probes. Every wait
//! gives way to a signal at once.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::RalphError;
use crate::events::RunEvent;
use crate::recovery::probe::{self, ProbeResult};
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::checkpoint::Status;

use super::RunEnd;
use super::dispatch::{Dispatcher, unix_now};

impl Dispatcher {
    /// Waits `delay` (status `waiting`), unless a signal stops the run first.
    pub(super) async fn wait(
        &mut self,
        delay: Duration,
        why: &str,
        signals: &mut Signals,
    ) -> Result<Option<RunEnd>, RalphError> {
        if let Some(cause) = signals.stopping() {
            return self.stopped(cause, None).map(Some);
        }
        // No wait outlasts the run's time limit; the cap is checked before the next attempt.
        let delay = self.runtime_left().map_or(delay, |left| delay.min(left));
        self.r.checkpoint.status = Status::Waiting;
        self.save()?;
        let until = Instant::now() + delay;
        self.r.reporter.waiting(why, delay);
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
                action = signals.next() => match action {
                    InterruptAction::Stop(cause) => return self.stopped(cause, None).map(Some),
                    InterruptAction::ForceExit => return Ok(Some(RunEnd::ForceExit)),
                    InterruptAction::Ignore => {}
                    // Nothing of the iteration runs while waiting: `ralph stop` stops here.
                    InterruptAction::Control => if self.serve_inbox(signals) {
                        return self.stopped(StopCause::User, None).map(Some);
                    },
                },
            }
        }
        self.r.reporter.waiting_done();
        self.r.checkpoint.status = Status::Running;
        Ok(None)
    }

    /// Waits until the unix second `at` (a rate-limit reset) with the status
    /// `waiting` and the reset in the checkpoint; then clears it.
    pub(super) async fn wait_for_reset(
        &mut self,
        at: i64,
        why: &str,
        signals: &mut Signals,
    ) -> Result<Option<RunEnd>, RalphError> {
        self.r.checkpoint.progress.rate_limit_until = Some(at);
        let left = u64::try_from(at.saturating_sub(unix_now())).unwrap_or(0);
        if left > 0 {
            let until = jiff::Timestamp::from_second(at).map(|t| t.to_string()).unwrap_or_else(|_| at.to_string());
            let why = format!("{why}: waiting until {until}");
            if let Some(end) = self.wait(Duration::from_secs(left), &why, signals).await? {
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
        let timeout = self.r.loaded.config.offline.timeout;
        let interval = self.r.loaded.config.offline.interval;
        // The first probe gives way to a signal too: Ctrl+C never waits for a timeout.
        let first = loop {
            tokio::select! {
                result = probe::probe(&endpoints, timeout) => break result,
                action = signals.next() => match action {
                    InterruptAction::Stop(cause) => return self.stopped(cause, None).map(Offline::Stopped),
                    InterruptAction::ForceExit => return Ok(Offline::Stopped(RunEnd::ForceExit)),
                    InterruptAction::Ignore => {}
                    InterruptAction::Control => if self.serve_inbox(signals) {
                        return self.stopped(StopCause::User, None).map(Offline::Stopped);
                    },
                },
            }
        };
        let ProbeResult::Offline { last_error } = first else {
            if self.r.checkpoint.progress.offline_since.take().is_some() {
                self.back_online()?;
                return Ok(Offline::Recovered);
            }
            return Ok(Offline::Online);
        };
        let since = *self.r.checkpoint.progress.offline_since.get_or_insert_with(unix_now);
        self.emit(RunEvent::Offline { since, endpoints: endpoints.clone(), error: last_error });
        self.r.checkpoint.status = Status::Waiting;
        self.save()?;
        loop {
            if let Some(stop) = self.cap_reached() {
                // A network that never returns is bounded by the run's time limit.
                return self.stop(stop).map(Offline::Stopped);
            }
            let round = async {
                tokio::time::sleep(interval).await;
                probe::probe(&endpoints, timeout).await
            };
            tokio::select! {
                result = round => {
                    if result == ProbeResult::Online {
                        break;
                    }
                }
                action = signals.next() => match action {
                    InterruptAction::Stop(cause) => return self.stopped(cause, None).map(Offline::Stopped),
                    InterruptAction::ForceExit => return Ok(Offline::Stopped(RunEnd::ForceExit)),
                    InterruptAction::Ignore => {}
                    InterruptAction::Control => if self.serve_inbox(signals) {
                        return self.stopped(StopCause::User, None).map(Offline::Stopped);
                    },
                },
            }
        }
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

    /// `[offline] probe`, or the providers of the current phase's agents.
    pub(super) fn probe_endpoints(&self) -> Vec<String> {
        let config = &self.r.loaded.config;
        if let Some(explicit) = &config.offline.probe {
            return explicit.clone();
        }
        let chain: std::collections::BTreeMap<String, crate::config::AgentConfig> = self
            .phase()
            .chain
            .iter()
            .filter_map(|name| config.agents.get(name).map(|a| (name.clone(), a.clone())))
            .collect();
        let env = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
        let endpoints = probe::default_endpoints(&chain, &env);
        // Through a proxy, the proxy is what must answer.
        let proxy = ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
            .iter()
            .find_map(|var| env(var))
            .and_then(|url| probe::proxy_endpoint(&url));
        match proxy {
            Some(proxy) if endpoints.iter().any(|e| !probe::is_loopback(e)) => vec![proxy],
            _ => endpoints,
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

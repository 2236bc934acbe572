//! Rate and usage limits: wait for the reset the provider reported, or fall over to
//! the next agent and come back after the reset. A limit never counts against any
//! budget. Pure: times are unix seconds passed in.

use crate::config::{OnRateLimit, Phase, Retry};
use crate::workflow::Progress;

use super::decision::{Cap, Facts, FalloverWhy, Next, backoff};

/// Seconds added to a reported reset: providers' clocks and ours differ a little, and
/// retrying a second early costs a whole new limit error.
pub(crate) const MARGIN_SECS: i64 = 2;

/// The attempt hit a limit; `facts.rate_limit_reset` is when it ends, if the agent
/// said. A reset within `max_rate_limit_wait` is waited for (or, with `on_rate_limit =
/// "fallover"`, another agent takes over); one further away moves to an agent of the
/// chain that is not limited itself, and when there is none the run fails naming the
/// reset and the key to raise: waiting a capped while and asking again only repeats
/// the same answer.
pub(crate) fn on_rate_limit(
    progress: &mut Progress,
    phases: &[Phase],
    retry: &Retry,
    facts: &Facts,
    session: Option<String>,
) -> Next {
    let now = facts.now;
    progress.resume_session = session;
    let Some(reported) = facts.rate_limit_reset else {
        // No reset time: an ordinary environmental retry with backoff.
        progress.counters.retry_streak += 1;
        return Next::Retry { delay: backoff(retry, progress.counters.retry_streak, facts.jitter), probe_first: true };
    };
    let max_wait = i64::try_from(retry.max_rate_limit_wait.as_secs()).unwrap_or(i64::MAX);
    let reset = if reported > now {
        reported
    } else {
        // A reset already past (a skewed clock, a stale notice): back off as for any
        // environmental failure, so a limit repeated with an old time is not asked
        // again every few seconds.
        progress.counters.retry_streak += 1;
        let delay = backoff(retry, progress.counters.retry_streak, facts.jitter);
        now.saturating_add(i64::try_from(delay.as_secs()).unwrap_or(i64::MAX))
    };
    let until = reset.saturating_add(MARGIN_SECS);
    let within_cap = until.saturating_sub(now) <= max_wait;
    let Some(phase) = phases.get(progress.position.phase) else {
        progress.rate_limit_until = Some(until);
        return Next::WaitUntil { at: until, reset, reason: "rate limit".into() };
    };
    let agent = phase.chain.get(progress.position.agent_index).cloned().unwrap_or_default();
    let may_fall_over = retry.on_rate_limit == OnRateLimit::Fallover || !within_cap;
    if may_fall_over && phase.chain.len() > 1 {
        progress.cooldowns.insert(agent.clone(), until);
        if let Some(index) = next_available(phase, progress, now) {
            progress.position.agent_index = index;
            progress.resume_session = None;
            // The next agent gets its own full budget.
            progress.counters.agent_failures = 0;
            progress.counters.fallovers += 1;
            let to = phase.chain.get(index).cloned().unwrap_or_default();
            return Next::Fallover { from: agent, to, new_cycle: false, why: FalloverWhy::RateLimit };
        }
        // Every agent of the chain is limited: wait for the first reset, if it comes
        // within the cap.
        let earliest =
            phase.chain.iter().filter_map(|name| progress.cooldowns.get(name)).copied().min().unwrap_or(until);
        if earliest.saturating_sub(now) <= max_wait {
            progress.rate_limit_until = Some(earliest);
            return Next::WaitUntil {
                at: earliest,
                reset: earliest.saturating_sub(MARGIN_SECS),
                reason: "every agent of the chain is rate-limited".into(),
            };
        }
        return beyond_cap(retry, "every agent of the chain is rate-limited", earliest.saturating_sub(MARGIN_SECS));
    }
    if !within_cap {
        return beyond_cap(retry, &format!("agent {agent} is rate-limited"), reset);
    }
    progress.rate_limit_until = Some(until);
    Next::WaitUntil { at: until, reset, reason: format!("agent {agent} is rate-limited") }
}

/// The reset waited for came (or had passed): the run no longer waits for it. With
/// [`on_rate_limit`], the one place `rate_limit_until` is written.
pub(crate) fn reset_reached(progress: &mut Progress) {
    progress.rate_limit_until = None;
}

/// No agent can run before `max_rate_limit_wait`: the run fails (exit 1) with the
/// reported reset and the key to raise.
fn beyond_cap(retry: &Retry, why: &str, reset: i64) -> Next {
    Next::Stop(Cap::RateLimitWait.stop(format!(
        "{why} until {} (reported reset), longer than [retry] max_rate_limit_wait = {}; \
         raise max_rate_limit_wait to wait for it, or add an agent that is not limited to the chain",
        show_time(reset),
        humantime::format_duration(retry.max_rate_limit_wait)
    )))
}

/// A unix second as a local wall-clock time with its zone.
pub(crate) fn show_time(at: i64) -> String {
    use crate::report::clock;
    jiff::Timestamp::from_second(at).map_or_else(|_| at.to_string(), |t| clock::stamp_at(t, &clock::zone()))
}

/// The first agent after the current one (wrapping) that is not cooling down.
fn next_available(phase: &Phase, progress: &Progress, now: i64) -> Option<usize> {
    let n = phase.chain.len();
    (1..n).map(|step| (progress.position.agent_index + step) % n).find(|&i| {
        phase.chain.get(i).is_some_and(|name| progress.cooldowns.get(name).is_none_or(|&until| until <= now))
    })
}

/// Before an attempt: an agent earlier in the chain whose limit has reset takes its
/// place again. Returns (from, to) when the chain moved back.
pub(crate) fn return_after_reset(progress: &mut Progress, phases: &[Phase], now: i64) -> Option<(String, String)> {
    let phase = phases.get(progress.position.phase)?;
    let current = progress.position.agent_index;
    let index = (0..current).find(|&i| {
        phase.chain.get(i).and_then(|name| progress.cooldowns.get(name)).is_some_and(|&until| until <= now)
    })?;
    progress.cooldowns.retain(|_, until| *until > now);
    let from = phase.chain.get(current).cloned().unwrap_or_default();
    progress.position.agent_index = index;
    progress.resume_session = None;
    progress.counters.agent_failures = 0;
    Some((from, phase.chain.get(index).cloned().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::decision::Stop;
    use std::time::Duration;

    fn phase(chain: &[&str]) -> Phase {
        crate::testkit::phase("dev", chain)
    }

    fn facts(reset: Option<i64>, now: i64) -> Facts {
        Facts { session: None, rate_limit_reset: reset, now, jitter: 1.0 }
    }

    #[test]
    fn a_reset_in_the_past_backs_off_instead_of_hammering() {
        let retry = Retry::default();
        let mut p = Progress::new("dev");
        let first = on_rate_limit(&mut p, &[phase(&["a"])], &retry, &facts(Some(900), 1_000), None);
        let second = on_rate_limit(&mut p, &[phase(&["a"])], &retry, &facts(Some(900), 1_000), None);
        assert_eq!(first, Next::WaitUntil { at: 1_007, reset: 1_005, reason: "agent a is rate-limited".into() });
        assert_eq!(second, Next::WaitUntil { at: 1_012, reset: 1_010, reason: "agent a is rate-limited".into() });
    }

    #[test]
    fn waits_until_the_reported_reset_plus_a_margin() {
        let retry = Retry::default();
        let phases = [phase(&["a", "b"])];
        let mut p = Progress::new("dev");
        let next = on_rate_limit(&mut p, &phases, &retry, &facts(Some(1_000), 900), Some("s".into()));
        assert_eq!(next, Next::WaitUntil { at: 1_002, reset: 1_000, reason: "agent a is rate-limited".into() });
        assert_eq!(p.rate_limit_until, Some(1_002));
        reset_reached(&mut p);
        assert_eq!(p.rate_limit_until, None);
        assert_eq!(p.resume_session.as_deref(), Some("s"));
        assert_eq!(p.counters.agent_failures, 0);
    }

    #[test]
    fn a_reset_beyond_the_cap_with_no_other_agent_fails_naming_it() {
        let retry = Retry { max_rate_limit_wait: Duration::from_secs(60), ..Retry::default() };
        let mut p = Progress::new("dev");
        match on_rate_limit(&mut p, &[phase(&["a"])], &retry, &facts(Some(100_000), 0), None) {
            Next::Stop(Stop::Failed { cap: Cap::RateLimitWait, message }) => {
                assert!(message.starts_with("max_rate_limit_wait exhausted"), "{message}");
                assert!(message.contains(&show_time(100_000)), "{message}");
                assert!(message.contains("raise max_rate_limit_wait"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reset_beyond_the_cap_falls_over_even_in_wait_mode() {
        let retry = Retry { max_rate_limit_wait: Duration::from_secs(60), ..Retry::default() };
        let phases = [phase(&["a", "b"])];
        let mut p = Progress::new("dev");
        let next = on_rate_limit(&mut p, &phases, &retry, &facts(Some(100_000), 0), None);
        assert_eq!(
            next,
            Next::Fallover { from: "a".into(), to: "b".into(), new_cycle: false, why: FalloverWhy::RateLimit }
        );
        // The healthy agent runs until the primary's reset, then the chain returns.
        assert_eq!(return_after_reset(&mut p, &phases, 1_000), None);
        assert_eq!(return_after_reset(&mut p, &phases, 100_002), Some(("b".into(), "a".into())));
        // b limited too, far away: nobody can run before the cap.
        let mut p = Progress::new("dev");
        let _ = on_rate_limit(&mut p, &phases, &retry, &facts(Some(100_000), 0), None);
        assert!(matches!(
            on_rate_limit(&mut p, &phases, &retry, &facts(Some(200_000), 0), None),
            Next::Stop(Stop::Failed { cap: Cap::RateLimitWait, .. })
        ));
        // A reset within the cap in wait mode is waited for, not fallen over from.
        let mut p = Progress::new("dev");
        assert_eq!(
            on_rate_limit(&mut p, &phases, &retry, &facts(Some(30), 0), None),
            Next::WaitUntil { at: 32, reset: 30, reason: "agent a is rate-limited".into() }
        );
    }

    #[test]
    fn without_a_reset_time_it_backs_off() {
        let mut p = Progress::new("dev");
        assert!(matches!(
            on_rate_limit(&mut p, &[phase(&["a"])], &Retry::default(), &facts(None, 0), None),
            Next::Retry { .. }
        ));
    }

    #[test]
    fn fallover_mode_switches_and_returns_after_the_reset() {
        let retry = Retry { on_rate_limit: OnRateLimit::Fallover, ..Retry::default() };
        let phases = [phase(&["a", "b"])];
        let mut p = Progress::new("dev");
        p.counters.agent_failures = 2;
        let next = on_rate_limit(&mut p, &phases, &retry, &facts(Some(100), 0), None);
        assert_eq!(
            next,
            Next::Fallover { from: "a".into(), to: "b".into(), new_cycle: false, why: FalloverWhy::RateLimit }
        );
        assert_eq!(p.counters.agent_failures, 0, "b starts with its own budget");
        assert_eq!(p.position.cycle, 1);
        assert_eq!(return_after_reset(&mut p, &phases, 50), None);
        assert_eq!(return_after_reset(&mut p, &phases, 105), Some(("b".into(), "a".into())));
        assert_eq!(p.position.agent_index, 0);
        assert!(p.cooldowns.is_empty());
    }

    #[test]
    fn fallover_mode_waits_when_every_agent_is_limited() {
        let retry = Retry { on_rate_limit: OnRateLimit::Fallover, ..Retry::default() };
        let phases = [phase(&["a", "b"])];
        let mut p = Progress::new("dev");
        let _ = on_rate_limit(&mut p, &phases, &retry, &facts(Some(100), 0), None);
        let next = on_rate_limit(&mut p, &phases, &retry, &facts(Some(50), 0), None);
        assert_eq!(
            next,
            Next::WaitUntil { at: 52, reset: 50, reason: "every agent of the chain is rate-limited".into() }
        );
    }
}

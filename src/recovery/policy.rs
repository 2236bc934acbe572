//! The recovery policy: given where the run stands and how an attempt ended, what
//! happens next. Pure: it changes [`Progress`] and returns a [`Next`] for the run's
//! step to carry out (`step::carry`), so every rule is testable without processes or
//! clocks.

use std::time::Duration;

use crate::config::{AGENT_BACKOFF_MAX, Phase, RepeatGroup, Retry};
use crate::supervise::storm;
use crate::workflow::Progress;
use crate::workflow::advance::{self, PhaseEnd};
use crate::workflow::done::Completion;
use crate::workflow::progress::EnvironmentalStreak;

use super::{Category, Classification, Rule};

pub(crate) use super::decision::{Cap, Facts, FalloverWhy, Next, Stop, StoppedBy, backoff};

/// The caps on the run's totals, checked before every attempt: active time over all
/// resumes (`elapsed_secs`) against `max_runtime`, reported cost against
/// `max_cost_usd`.
pub(crate) fn run_cap(general: &crate::config::General, elapsed_secs: f64, cost_usd: f64) -> Option<Stop> {
    if let Some(max) = general.max_runtime
        && elapsed_secs >= max.as_secs_f64()
    {
        return Some(Cap::Runtime.stop(format!("the run has been active for {}", humantime::format_duration(max))));
    }
    if let Some(max) = general.max_cost_usd
        && cost_usd >= max
    {
        return Some(Cap::Cost.stop(format!("the run has cost ${cost_usd:.2} of ${max:.2}")));
    }
    None
}

/// The limits the policy enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits<'a> {
    pub retry: &'a Retry,
    pub max_cycles: u32,
    /// The zone a rate limit's reset is shown in (the shell's, read once).
    pub tz: &'a jiff::tz::TimeZone,
}

/// The attempt reached its done signal. Where the run goes after a finished phase
/// (the order, the repeating group) is [`advance::after_phase`]'s decision.
pub(crate) fn on_success(
    progress: &mut Progress,
    phases: &[Phase],
    repeat: Option<RepeatGroup>,
    completion: Completion,
) -> Next {
    let Some(phase) = phases.get(progress.position.phase) else { return Next::Finished { end: PhaseEnd::default() } };
    progress.counters.iterations_done += 1;
    // The agent that finished an iteration needs no cool-down.
    if let Some(agent) = phase.chain.get(progress.position.agent_index) {
        progress.exhausted.remove(agent);
    }
    progress.start_iteration();
    // Progress was made, so the chain gets its full allowance of cycles again.
    progress.position.cycle = 1;

    let goal = completion == Completion::Goal;
    let last_iteration = progress.position.iteration >= phase.iterations;
    // A review that finds nothing left to fix ends its phase at once.
    let goal_ends = phase.until_complete || advance::is_review(progress.position.phase, repeat);
    let phase_done = (goal && goal_ends) || (!phase.until_complete && last_iteration);
    if !phase_done {
        if last_iteration {
            return Next::Stop(
                Cap::Iterations
                    .stop(format!("phase {} ran {} iterations without the goal signal", phase.name, phase.iterations)),
            );
        }
        progress.position.iteration += 1;
        return Next::Iteration;
    }
    let finished = phase.name.clone();
    let pos = &progress.position;
    let boundary = advance::after_phase(pos.phase, pos.pass, goal, phases.len(), repeat);
    if let Some(verdict) = boundary.end.verdict {
        progress.review = Some(verdict);
    }
    if let Some(from) = progress.from.as_mut() {
        // This run has its own result of the phase now.
        from.reused.retain(|p| *p != finished);
        from.missing.retain(|p| *p != finished);
    }
    match boundary.next {
        None => Next::Finished { end: boundary.end },
        Some((index, pass)) => {
            // The primary agent gets its chance again in every phase, and every pass
            // gives its phases a fresh budget; the run's totals keep counting.
            advance::enter(&mut progress.position, phases, index, pass, repeat);
            Next::Phase { finished, end: boundary.end }
        }
    }
}

/// The judge doubts the agent's sign-off and its session can be resumed: the next
/// attempt resumes that session with `question` as its prompt. Not a failure, so
/// no budget, backoff or cycle moves; the count allows one question per iteration.
pub(crate) fn ask_to_confirm(progress: &mut Progress, session: String, question: String) {
    progress.counters.confirmations += 1;
    progress.resume_session = Some(session);
    progress.recovery_note = Some(question);
}

/// The attempt failed.
pub(crate) fn on_failure(
    progress: &mut Progress,
    phases: &[Phase],
    limits: Limits<'_>,
    failure: &Classification,
    facts: Facts,
) -> Next {
    let session = facts.session.clone();
    *progress.counters.failures.entry(failure.category).or_insert(0) += 1;
    progress.recovery_note = Some(failure.reason.clone());
    // Resuming a session the agent does not know, or one whose context is full,
    // would fail the same way again.
    let session = if failure.fresh_session { None } else { session };
    if failure.category == Category::Environmental {
        if let Some(stop) = environmental_streak(progress, limits.retry, failure, facts.now) {
            return Next::Stop(stop);
        }
    } else {
        // The streak ends when an attempt ends any other way.
        progress.environmental_streak = None;
    }
    if failure.reset_tool_registry {
        return on_tool_unavailable(progress, limits, failure);
    }
    match failure.category {
        Category::UserConfig => Next::Stop(Stop::Blocked { message: failure.reason.clone() }),
        Category::Environmental if failure.rule == Rule::RateLimited => {
            super::rate_limit::on_rate_limit(progress, phases, limits.retry, limits.tz, &facts, session)
        }
        Category::Environmental | Category::Ambiguous => {
            let ambiguous = failure.category == Category::Ambiguous;
            progress.counters.retry_streak += 1;
            if ambiguous {
                progress.counters.ambiguous_failures += 1;
                if progress.counters.ambiguous_failures >= limits.retry.ambiguous_attempts {
                    return Next::Stop(Cap::AmbiguousAttempts.stop(format!(
                        "{} unexplained failures in phase {} iteration {} (last: {})",
                        progress.counters.ambiguous_failures,
                        progress.position.phase_name,
                        progress.position.iteration,
                        failure.reason
                    )));
                }
            }
            progress.resume_session = session;
            Next::Retry {
                delay: backoff(limits.retry, progress.counters.retry_streak, facts.jitter),
                // An environmental failure (network, provider) waits for a probe first.
                probe_first: !ambiguous,
            }
        }
        Category::Agent => on_agent_failure(progress, phases, limits, session, facts.now),
    }
}

/// Opens or extends the streak of environmental failures, and ends the run when the
/// streak (its wall time minus offline pauses and rate-limit waits, which have bounds
/// of their own) ran past `[retry] max_environmental_wait`.
fn environmental_streak(progress: &mut Progress, retry: &Retry, failure: &Classification, now: i64) -> Option<Stop> {
    let streak = progress.environmental_streak.get_or_insert(EnvironmentalStreak { since: now, excluded_secs: 0 });
    let counted = now.saturating_sub(streak.since).saturating_sub(streak.excluded_secs).max(0).unsigned_abs();
    if counted < retry.max_environmental_wait.as_secs() {
        return None;
    }
    Some(Cap::EnvironmentalWait.stop(format!(
        "environmental failures for {} without a successful attempt (last: {}); \
         raise [retry] max_environmental_wait to keep retrying longer",
        humantime::format_duration(Duration::from_secs(counted)),
        failure.reason
    )))
}

/// The continue storm: after a retry that resumes the session, too many recoveries of
/// the iteration within `[retry] storm_window` make the next attempt start fresh
/// (resuming keeps feeding the agent the context that went wrong). Only the agent's
/// own failures count: an outage or a rate limit says nothing about the session's
/// context. Returns the evidence when the storm fired.
pub(crate) fn continue_storm(
    progress: &mut Progress,
    retry: &Retry,
    failure: &Classification,
    next: &Next,
    now: i64,
) -> Option<String> {
    if failure.category != Category::Agent || !matches!(next, Next::Retry { .. }) || progress.resume_session.is_none() {
        return None;
    }
    let window = i64::try_from(retry.storm_window.as_secs()).unwrap_or(i64::MAX);
    progress.recoveries.push(now);
    storm::prune(&mut progress.recoveries, now, window);
    let threshold = usize::try_from(retry.storm_recoveries).unwrap_or(usize::MAX);
    if !storm::is_storm(&progress.recoveries, now, window, threshold) {
        return None;
    }
    progress.resume_session = None;
    progress.recoveries.clear();
    Some(format!(
        "{threshold} recoveries of this iteration within {}: the next attempt starts a fresh session",
        humantime::format_duration(retry.storm_window)
    ))
}

/// The agent lost a tool it was given: a new session (which rebuilds the agent's tool
/// registry) fixes that, so it costs the tool-registry budget, not the agent's.
fn on_tool_unavailable(progress: &mut Progress, limits: Limits<'_>, failure: &Classification) -> Next {
    progress.counters.tool_registry_resets += 1;
    if progress.counters.tool_registry_resets > limits.retry.tool_registry_resets {
        return Next::Stop(Cap::ToolRegistryResets.stop(format!(
            "{} tool-availability failures in this iteration, [retry] tool_registry_resets = {} (last: {})",
            progress.counters.tool_registry_resets, limits.retry.tool_registry_resets, failure.reason
        )));
    }
    progress.resume_session = None;
    Next::Retry { delay: Duration::ZERO, probe_first: false }
}

fn on_agent_failure(
    progress: &mut Progress,
    phases: &[Phase],
    limits: Limits<'_>,
    session: Option<String>,
    now: i64,
) -> Next {
    progress.counters.agent_failures += 1;
    progress.counters.retry_streak = 0;
    if progress.counters.agent_failures < limits.retry.agent_attempts {
        // The same session when one is known, otherwise a fresh one.
        progress.resume_session = session;
        // Agent failures are budgeted, so they need no long backoff; a short one keeps
        // a crash loop from restarting the agent many times a second.
        let delay = agent_backoff(limits.retry, progress.counters.agent_failures);
        return Next::Retry { delay, probe_first: false };
    }
    let Some(phase) = phases.get(progress.position.phase) else { return Next::Finished { end: PhaseEnd::default() } };
    let from = phase.chain.get(progress.position.agent_index).cloned().unwrap_or_default();
    if phase.chain.len() > 1 {
        let cooldown = i64::try_from(limits.retry.exhausted_cooldown.as_secs()).unwrap_or(i64::MAX);
        progress.exhausted.insert(from.clone(), now.saturating_add(cooldown));
    }
    let pos = &mut progress.position;
    let mut next_index = pos.agent_index + 1;
    let mut new_cycle = false;
    if next_index >= phase.chain.len() {
        if pos.cycle >= limits.max_cycles {
            return Next::Stop(Cap::MaxCycles.stop(format!(
                "phase {} went through its chain [{}] {} times without finishing iteration {}",
                phase.name,
                phase.chain.join(", "),
                pos.cycle,
                pos.iteration
            )));
        }
        next_index = 0;
        pos.cycle += 1;
        new_cycle = true;
    }
    pos.agent_index = next_index;
    progress.counters.agent_failures = 0;
    progress.counters.fallovers += 1;
    progress.resume_session = None;
    let to = phase.chain.get(next_index).cloned().unwrap_or_default();
    Next::Fallover { from, to, new_cycle, why: FalloverWhy::Budget }
}

/// Before an attempt: a chain about to start with a member that spent its whole
/// budget within `[retry] exhausted_cooldown` starts with the first member that did
/// not (none left: the first as configured). Only at the chain's start (its first
/// member, first cycle, no failure yet in the iteration): a fallover inside an
/// iteration follows the chain as always. Cool-downs that ended are forgotten, so the
/// member is tried first again. Returns (from, to) when the chain moved.
pub(crate) fn skip_exhausted(progress: &mut Progress, phases: &[Phase], now: i64) -> Option<(String, String)> {
    progress.exhausted.retain(|_, until| *until > now);
    let phase = phases.get(progress.position.phase)?;
    let (pos, c) = (&progress.position, &progress.counters);
    if pos.agent_index != 0 || pos.cycle != 1 || c.agent_failures != 0 || c.ambiguous_failures != 0 {
        return None;
    }
    let cooling = |i: &usize| phase.chain.get(*i).is_some_and(|name| progress.exhausted.contains_key(name));
    if !cooling(&0) {
        return None;
    }
    let index = (1..phase.chain.len()).find(|i| !cooling(i))?;
    progress.position.agent_index = index;
    progress.resume_session = None;
    progress.counters.fallovers += 1;
    Some((phase.chain.first().cloned().unwrap_or_default(), phase.chain.get(index).cloned().unwrap_or_default()))
}

/// The wait before the `n`th agent-category retry of one agent:
/// `agent_backoff_base · 2^(n−1)`, at most [`AGENT_BACKOFF_MAX`].
pub(crate) fn agent_backoff(retry: &Retry, n: u32) -> Duration {
    let exp = n.saturating_sub(1).min(30);
    retry.agent_backoff_base.saturating_mul(1u32 << exp).min(AGENT_BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, chain: &[&str], iterations: u32, until_complete: bool) -> Phase {
        Phase { iterations, until_complete, ..crate::testkit::phase(name, chain) }
    }

    /// One phase `dev` of one iteration on `chain` under `retry`, and a run standing
    /// at its start.
    fn dev(chain: &[&str], retry: Retry) -> (Policy, Progress) {
        (Policy { phases: [phase("dev", chain, 1, false)], retry }, Progress::new("dev"))
    }

    /// The policy of a run of one phase, as [`dev`] sets it: what it answers to a
    /// failed attempt.
    struct Policy {
        phases: [Phase; 1],
        retry: Retry,
    }

    impl Policy {
        /// [`on_failure`] of `f` for the run `p`, the run caps of [`limits`].
        fn fail(&self, p: &mut Progress, f: &Classification, facts: Facts) -> Next {
            on_failure(p, &self.phases, limits(&self.retry), f, facts)
        }
    }

    /// `next` stops the run failed on `cap`, its message starting with `starts`.
    #[track_caller]
    fn assert_failed_on(next: Next, cap: Cap, starts: &str) {
        match next {
            Next::Stop(Stop::Failed { cap: c, message }) if c == cap => {
                assert!(message.starts_with(starts), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    fn agent_failure() -> Classification {
        Classification::new(Category::Agent, Rule::Crashed, "crashed")
    }

    fn facts(session: Option<String>) -> Facts {
        Facts { session, ..Facts::default() }
    }

    fn limits(retry: &Retry) -> Limits<'_> {
        static UTC: std::sync::LazyLock<jiff::tz::TimeZone> = std::sync::LazyLock::new(|| jiff::tz::TimeZone::UTC);
        Limits { retry, max_cycles: 2, tz: &UTC }
    }

    #[test]
    fn a_confirmation_question_spends_no_budget_and_clears_on_success() {
        let phases = [phase("dev", &["a", "b"], 3, false)];
        let mut p = Progress::new("dev");
        let before = p.counters.clone();
        ask_to_confirm(&mut p, "s-1".into(), "Is it complete?".into());
        assert_eq!(p.counters.confirmations, 1);
        assert_eq!(p.counters.agent_failures, before.agent_failures);
        assert_eq!(p.counters.retry_streak, before.retry_streak);
        assert_eq!((p.position.agent_index, p.position.cycle), (0, 1));
        assert_eq!(p.resume_session.as_deref(), Some("s-1"));
        assert_eq!(p.recovery_note.as_deref(), Some("Is it complete?"));
        assert_eq!(on_success(&mut p, &phases, None, Completion::Done), Next::Iteration);
        assert_eq!(p.counters.confirmations, 0, "the next iteration may ask again");
    }

    #[test]
    fn iterations_then_next_phase_then_finished() {
        let phases = [phase("plan", &["a"], 2, false), phase("dev", &["a", "b"], 1, false)];
        let mut p = Progress::new("plan");
        assert_eq!(on_success(&mut p, &phases, None, Completion::Done), Next::Iteration);
        assert_eq!(p.position.iteration, 2);
        assert_eq!(
            on_success(&mut p, &phases, None, Completion::Done),
            Next::Phase { finished: "plan".into(), end: PhaseEnd::default() }
        );
        assert_eq!((p.position.phase, p.position.iteration), (1, 1));
        assert_eq!(on_success(&mut p, &phases, None, Completion::Done), Next::Finished { end: PhaseEnd::default() });
        assert_eq!(p.counters.iterations_done, 3);
    }

    #[test]
    fn until_complete_stops_at_goal_or_fails_at_cap() {
        let phases = [phase("dev", &["a"], 2, true)];
        let mut p = Progress::new("dev");
        assert_eq!(on_success(&mut p, &phases, None, Completion::Done), Next::Iteration);
        assert_eq!(
            on_success(&mut p.clone(), &phases, None, Completion::Goal),
            Next::Finished { end: PhaseEnd::default() }
        );
        match on_success(&mut p, &phases, None, Completion::Done) {
            Next::Stop(Stop::Failed { cap: Cap::Iterations, message }) => {
                assert!(message.starts_with("iteration cap exhausted"))
            }
            other => panic!("{other:?}"),
        }
    }

    /// review, fix, commit; review and fix repeat up to 3 passes.
    fn review_fix_commit() -> (Vec<Phase>, Option<RepeatGroup>) {
        let phases = vec![
            phase("review", &["a", "b"], 1, false),
            phase("fix", &["a"], 1, false),
            phase("commit", &["a"], 1, false),
        ];
        (phases, Some(RepeatGroup { first: 0, last: 1, passes: 3 }))
    }

    #[test]
    fn issues_twice_then_clean_runs_three_passes_then_goes_on() {
        use crate::workflow::{advance::GroupMove, progress::Verdict};
        let (phases, repeat) = review_fix_commit();
        let mut p = Progress::new("review");
        advance::fit_pass(&mut p.position, 1, repeat);
        for pass in 1..=2 {
            let issues = Verdict { pass, passes: 3, clean: false };
            let next = on_success(&mut p, &phases, repeat, Completion::Done);
            assert_eq!(
                next,
                Next::Phase { finished: "review".into(), end: PhaseEnd { verdict: Some(issues), group: None } }
            );
            assert_eq!((p.position.phase_name.as_str(), p.position.pass), ("fix", pass));
            let next = on_success(&mut p, &phases, repeat, Completion::Done);
            let again = GroupMove::NextPass { pass: pass + 1, passes: 3 };
            assert_eq!(
                next,
                Next::Phase { finished: "fix".into(), end: PhaseEnd { verdict: None, group: Some(again) } }
            );
            assert_eq!(
                (p.position.phase_name.as_str(), p.position.pass, p.position.passes),
                ("review", pass + 1, Some(3))
            );
        }
        let clean = Verdict { pass: 3, passes: 3, clean: true };
        let next = on_success(&mut p, &phases, repeat, Completion::Goal);
        assert_eq!(
            next,
            Next::Phase {
                finished: "review".into(),
                end: PhaseEnd { verdict: Some(clean), group: Some(GroupMove::Ended(clean)) }
            }
        );
        assert_eq!((p.position.phase_name.as_str(), p.position.pass, p.position.passes), ("commit", 1, None));
        assert_eq!(p.review, Some(clean));
        assert_eq!(p.counters.iterations_done, 5);
    }

    #[test]
    fn a_clean_review_in_a_later_iteration_ends_the_review_early() {
        let (mut phases, repeat) = review_fix_commit();
        phases[0].iterations = 3;
        let mut p = Progress::new("review");
        assert_eq!(on_success(&mut p, &phases, repeat, Completion::Done), Next::Iteration);
        assert!(matches!(on_success(&mut p, &phases, repeat, Completion::Goal), Next::Phase { .. }));
        assert_eq!(p.position.phase_name, "commit");
    }

    #[test]
    fn every_pass_gets_a_fresh_budget_and_the_run_caps_keep_counting() {
        let retry = Retry { agent_attempts: 1, tool_registry_resets: 5, ..Retry::default() };
        let (phases, repeat) = review_fix_commit();
        let mut p = Progress::new("review");
        advance::fit_pass(&mut p.position, 1, repeat);
        let f = agent_failure();
        // Pass 1's review falls over to b (cycle budget used) and resets the tool registry once.
        assert!(matches!(on_failure(&mut p, &phases, limits(&retry), &f, facts(None)), Next::Fallover { .. }));
        let mut tool = Classification::new(Category::Agent, Rule::ToolUnavailable, "No such tool");
        tool.reset_tool_registry = true;
        let _ = on_failure(&mut p, &phases, limits(&retry), &tool, facts(None));
        let _ = on_success(&mut p, &phases, repeat, Completion::Done);
        let _ = on_success(&mut p, &phases, repeat, Completion::Done);
        let pos = &p.position;
        assert_eq!(
            (pos.phase_name.as_str(), pos.pass, pos.iteration, pos.agent_index, pos.cycle),
            ("review", 2, 1, 0, 1)
        );
        assert_eq!((p.counters.agent_failures, p.counters.ambiguous_failures), (0, 0));
        // The tool-registry resets count per iteration, like the agent's budget.
        assert_eq!((p.counters.tool_registry_resets, p.counters.fallovers, p.counters.attempts), (0, 1, 0));
        assert_eq!(p.counters.failures[&Category::Agent], 2);
    }

    #[test]
    fn passes_used_up_goes_on_with_issues_left() {
        use crate::workflow::{advance::GroupMove, progress::Verdict};
        let (phases, _) = review_fix_commit();
        let repeat = Some(RepeatGroup { first: 0, last: 1, passes: 2 });
        let mut p = Progress::new("review");
        advance::fit_pass(&mut p.position, 1, repeat);
        for _ in 0..3 {
            let _ = on_success(&mut p, &phases, repeat, Completion::Done);
        }
        let issues = Verdict { pass: 2, passes: 2, clean: false };
        assert_eq!(
            on_success(&mut p, &phases, repeat, Completion::Done),
            Next::Phase {
                finished: "fix".into(),
                end: PhaseEnd { verdict: None, group: Some(GroupMove::Ended(issues)) }
            }
        );
        assert_eq!(p.review, Some(issues));
        assert_eq!(p.position.phase_name, "commit");
    }

    #[test]
    fn agent_failures_resume_then_fall_over_then_exhaust_cycles() {
        let (policy, mut p) = dev(&["a", "b"], Retry { agent_attempts: 2, ..Retry::default() });
        let f = agent_failure();
        assert_eq!(
            policy.fail(&mut p, &f, facts(Some("s1".into()))),
            Next::Retry { delay: Duration::from_secs(2), probe_first: false }
        );
        assert_eq!(p.resume_session.as_deref(), Some("s1"));
        assert_eq!(
            policy.fail(&mut p, &f, facts(None)),
            Next::Fallover { from: "a".into(), to: "b".into(), new_cycle: false, why: FalloverWhy::Budget }
        );
        assert_eq!(p.resume_session, None);
        let _ = policy.fail(&mut p, &f, facts(None));
        assert_eq!(
            policy.fail(&mut p, &f, facts(None)),
            Next::Fallover { from: "b".into(), to: "a".into(), new_cycle: true, why: FalloverWhy::Budget }
        );
        assert_eq!(p.position.cycle, 2);
        let _ = policy.fail(&mut p, &f, facts(None));
        let _ = policy.fail(&mut p, &f, facts(None));
        let _ = policy.fail(&mut p, &f, facts(None));
        assert_failed_on(policy.fail(&mut p, &f, facts(None)), Cap::MaxCycles, "max_cycles exhausted");
    }

    #[test]
    fn fresh_session_failures_drop_the_session() {
        let (policy, mut p) = dev(&["a"], Retry { agent_attempts: 3, ..Retry::default() });
        let mut f = Classification::new(Category::Agent, Rule::SessionNotFound, "unknown session");
        f.fresh_session = true;
        assert_eq!(
            policy.fail(&mut p, &f, facts(Some("s1".into()))),
            Next::Retry { delay: Duration::from_secs(2), probe_first: false }
        );
        assert_eq!(p.resume_session, None);
    }

    #[test]
    fn environmental_failures_cost_no_budget() {
        let (policy, mut p) = dev(&["a"], Retry { agent_attempts: 1, ..Retry::default() });
        let env = Classification::new(Category::Environmental, Rule::ProviderOverloaded, "529");
        for _ in 0..10 {
            assert!(matches!(policy.fail(&mut p, &env, facts(None)), Next::Retry { .. }));
        }
        assert_eq!(p.counters.agent_failures, 0);
        assert_eq!(p.position.agent_index, 0);
    }

    #[test]
    fn tool_unavailable_starts_fresh_until_its_own_cap() {
        let (policy, mut p) =
            dev(&["a", "b"], Retry { agent_attempts: 1, tool_registry_resets: 2, ..Retry::default() });
        let mut f = Classification::new(Category::Agent, Rule::ToolUnavailable, "No such tool available: mcp__x");
        f.fresh_session = true;
        f.reset_tool_registry = true;
        for _ in 0..2 {
            assert_eq!(
                policy.fail(&mut p, &f, facts(Some("s".into()))),
                Next::Retry { delay: Duration::ZERO, probe_first: false }
            );
            assert_eq!(p.resume_session, None);
            assert_eq!(p.position.agent_index, 0, "no agent budget is used");
        }
        assert_failed_on(
            policy.fail(&mut p, &f, facts(None)),
            Cap::ToolRegistryResets,
            "tool-registry-reset exhausted",
        );
    }

    #[test]
    fn user_config_blocks_and_ambiguous_is_capped() {
        let (policy, mut p) = dev(&["a"], Retry { ambiguous_attempts: 2, ..Retry::default() });
        let uc = Classification::new(Category::UserConfig, Rule::AuthFailed, "401");
        assert!(matches!(policy.fail(&mut p, &uc, facts(None)), Next::Stop(Stop::Blocked { .. })));
        let amb = Classification::new(Category::Ambiguous, Rule::Unexplained, "?");
        assert!(matches!(policy.fail(&mut p, &amb, facts(None)), Next::Retry { .. }));
        assert!(matches!(
            policy.fail(&mut p, &amb, facts(None)),
            Next::Stop(Stop::Failed { cap: Cap::AmbiguousAttempts, .. })
        ));
    }

    #[test]
    fn backoff_grows_exponentially_and_is_capped() {
        let retry =
            Retry { backoff_base: Duration::from_secs(5), backoff_max: Duration::from_secs(60), ..Retry::default() };
        let full: Vec<u64> = (1..=6).map(|n| backoff(&retry, n, 1.0).as_secs()).collect();
        assert_eq!(full, [5, 10, 20, 40, 60, 60]);
        assert_eq!(backoff(&retry, 1, 0.0), Duration::from_millis(2500));
        assert_eq!(backoff(&retry, u32::MAX, 1.0), Duration::from_secs(60));
    }

    #[test]
    fn agent_retries_back_off_doubling_to_a_minute() {
        let (policy, mut p) = dev(&["a"], Retry { agent_attempts: 100, ..Retry::default() });
        let delays: Vec<u64> = (0..7)
            .map(|_| match policy.fail(&mut p, &agent_failure(), facts(None)) {
                Next::Retry { delay, probe_first: false } => delay.as_secs(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(delays, [2, 4, 8, 16, 32, 60, 60]);
        let at_once = Retry { agent_backoff_base: Duration::ZERO, ..policy.retry };
        assert_eq!(agent_backoff(&at_once, 3), Duration::ZERO);
    }

    #[test]
    fn an_environmental_streak_is_bounded_without_max_runtime() {
        let (policy, mut p) =
            dev(&["a"], Retry { max_environmental_wait: Duration::from_secs(3600), ..Retry::default() });
        let env = Classification::new(Category::Environmental, Rule::ProviderOverloaded, "the provider is overloaded");
        let at = |now| Facts { now, ..Facts::default() };
        assert!(matches!(policy.fail(&mut p, &env, at(1_000)), Next::Retry { probe_first: true, .. }));
        // An hour offline does not count.
        p.exclude_from_streak(3_600);
        assert!(matches!(policy.fail(&mut p, &env, at(5_000)), Next::Retry { .. }));
        match policy.fail(&mut p, &env, at(8_200)) {
            Next::Stop(Stop::Failed { cap: Cap::EnvironmentalWait, message }) => {
                assert!(message.starts_with("max_environmental_wait exhausted"), "{message}");
                assert!(message.contains("the provider is overloaded"), "{message}");
                assert!(message.contains("[retry] max_environmental_wait"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // Any other ending of an attempt ends the streak.
        let mut p = Progress::new("dev");
        let _ = policy.fail(&mut p, &env, at(0));
        let _ = policy.fail(&mut p, &agent_failure(), at(3_000));
        assert!(matches!(policy.fail(&mut p, &env, at(4_000)), Next::Retry { .. }));
        assert!(matches!(policy.fail(&mut p, &env, at(7_000)), Next::Retry { .. }));
        let _ = on_success(&mut p, &policy.phases, None, Completion::Done);
        assert_eq!(p.environmental_streak, None);
    }

    #[test]
    fn only_the_agents_own_failures_make_a_continue_storm() {
        let (policy, mut p) = dev(&["a"], Retry { agent_attempts: 100, ..Retry::default() });
        let overloaded = Classification::new(Category::Environmental, Rule::ProviderOverloaded, "529");
        for now in [0, 60, 120, 180] {
            let next = policy.fail(&mut p, &overloaded, facts_at(Some("s".into()), now));
            assert_eq!(continue_storm(&mut p, &policy.retry, &overloaded, &next, now), None);
        }
        assert_eq!(p.resume_session.as_deref(), Some("s"), "the session survives an outage");
        let mut fired = None;
        for now in [200, 260, 320] {
            let next = policy.fail(&mut p, &agent_failure(), facts_at(Some("s".into()), now));
            fired = continue_storm(&mut p, &policy.retry, &agent_failure(), &next, now);
        }
        assert!(fired.is_some_and(|e| e.starts_with("3 recoveries")));
        assert_eq!(p.resume_session, None);
    }

    #[test]
    fn a_member_that_spent_its_budget_is_skipped_at_a_phase_start_until_its_cool_down_ends() {
        let retry = Retry { agent_attempts: 1, exhausted_cooldown: Duration::from_secs(600), ..Retry::default() };
        let phases = [phase("plan", &["a", "b"], 1, false), phase("dev", &["a", "b"], 1, false)];
        let mut p = Progress::new("plan");
        assert_eq!(skip_exhausted(&mut p, &phases, 0), None, "nothing spent yet");
        let next = on_failure(&mut p, &phases, limits(&retry), &agent_failure(), facts_at(None, 100));
        assert!(matches!(next, Next::Fallover { .. }));
        assert_eq!(p.exhausted.get("a"), Some(&700));
        assert_eq!(skip_exhausted(&mut p, &phases, 101), None, "inside the iteration the chain is followed");
        assert!(matches!(on_success(&mut p, &phases, None, Completion::Done), Next::Phase { .. }));
        assert_eq!(p.position.agent_index, 0, "a phase starts with the first member as configured");
        assert_eq!(skip_exhausted(&mut p, &phases, 200), Some(("a".into(), "b".into())));
        assert_eq!((p.position.agent_index, p.resume_session.as_ref()), (1, None));
        // After the cool-down the first member is tried first again.
        let mut later = Progress::new("dev");
        later.position.phase = 1;
        later.exhausted.insert("a".into(), 700);
        assert_eq!(skip_exhausted(&mut later, &phases, 700), None);
        assert!(later.exhausted.is_empty(), "an ended cool-down is forgotten");
        // Every member cooling down: the chain starts as configured.
        let mut all = Progress::new("dev");
        all.position.phase = 1;
        all.exhausted = [("a".to_string(), 900), ("b".to_string(), 900)].into();
        assert_eq!(skip_exhausted(&mut all, &phases, 800), None);
        assert_eq!(all.position.agent_index, 0);
    }

    #[test]
    fn a_chain_of_one_records_no_cool_down_and_an_agent_that_finishes_loses_its_own() {
        let retry = Retry { agent_attempts: 1, ..Retry::default() };
        let one = [phase("dev", &["a"], 2, false)];
        let mut p = Progress::new("dev");
        let _ = on_failure(&mut p, &one, limits(&retry), &agent_failure(), facts_at(None, 100));
        assert!(p.exhausted.is_empty());
        let two = [phase("dev", &["a", "b"], 2, false)];
        let mut p = Progress::new("dev");
        p.exhausted.insert("b".into(), 10_000);
        p.position.agent_index = 1;
        assert_eq!(on_success(&mut p, &two, None, Completion::Done), Next::Iteration);
        assert!(p.exhausted.is_empty());
    }

    #[test]
    fn every_cap_names_its_config_key() {
        assert_eq!(Cap::MaxCycles.key("dev"), "[general] max_cycles");
        assert_eq!(Cap::Iterations.key("dev"), "[phases.dev] iterations");
        let named = Cap::Runtime.named("dev");
        assert_eq!((named.key.as_str(), named.phrase.as_str()), ("[general] max_runtime", "max_runtime exhausted"));
    }

    fn facts_at(session: Option<String>, now: i64) -> Facts {
        Facts { session, now, ..Facts::default() }
    }

    #[test]
    fn run_caps_stop_at_their_limits_and_not_before() {
        let general = crate::config::General {
            max_runtime: Some(Duration::from_secs(60)),
            max_cost_usd: Some(2.0),
            ..Default::default()
        };
        assert_eq!(run_cap(&general, 59.9, 1.99), None);
        assert!(matches!(run_cap(&general, 60.0, 0.0), Some(Stop::Failed { cap: Cap::Runtime, .. })));
        match run_cap(&general, 0.0, 2.5) {
            Some(Stop::Failed { cap: Cap::Cost, message }) => assert!(message.contains("$2.50 of $2.00"), "{message}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(run_cap(&crate::config::General::default(), 1e9, 1e9), None);
    }
}

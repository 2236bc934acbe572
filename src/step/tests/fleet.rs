//! A fleet task's run (docs/fleet.md): the isolation check around each iteration,
//! the `Ralph-Task:` trailer, and the rate-limit resets shared with the other tasks.

use crate::agent::AgentEvent;
use crate::config::{CommitMode, OnRateLimit};
use crate::events::RunEvent;
use crate::git::record::{CommitOutcome, CommitReport, GitState};
use crate::state::checkpoint::Status;
use crate::step::effect::{Effect, Fleet};
use crate::step::input::{Input, Launched, SharedReset};

use super::{Run, T0, TWO_AGENTS, exited, quiet, trace};

const DONE: &str = "Parser fixed.\n<promise>DONE</promise>";

/// A fleet task's run with git, started up to the question before its first attempt.
fn task_run() -> Run {
    let mut r = Run::with(TWO_AGENTS, |(s, cp)| {
        (s.git, s.task) = (true, Some("login-page".into()));
        s.loaded.config.git.commit = CommitMode::Iteration;
        cp.git = Some(GitState { top: "/p".into(), baseline: Some("b0".into()), ..GitState::default() });
    });
    let _ = r.step(Input::Start);
    r
}

/// No reset shared: the attempt starts, its iteration's window opened first.
fn attempt(r: &mut Run) {
    assert_eq!(r.step(Input::Next), ["fleet:shared-reset"]);
    assert_eq!(r.step(Input::SharedReset(None)), ["fleet:open-window", "launch"]);
    let _ = r.step(Input::Prepared { launch: Ok(Launched::default()), moved: None });
}

#[test]
fn a_change_outside_the_worktree_blocks_the_task_and_nothing_is_committed() {
    let mut r = task_run();
    attempt(&mut r);
    let effects = r.effects(Input::AttemptEnded(Box::new(exited(0, Some(DONE)))));
    // The attempt's success is journaled with the next save, whatever the check finds.
    assert_eq!(quiet(trace(&effects)), ["fleet:check-isolation"]);
    assert!(effects.iter().any(|e| matches!(e, Effect::Fleet(Fleet::CheckIsolation { key }) if key == "develop/1")));
    let breach = "task login-page changed the main checkout: src/main.rs".to_string();
    // A blocked run is an orderly end: the working tree it leaves is recorded first.
    assert_eq!(quiet(r.step(Input::Isolated(Some(breach.clone())))), ["record-tree"]);
    let trace = quiet(r.step(Input::TreeRecorded(None)));
    assert!(!trace.contains(&"commit".to_string()), "{trace:?}");
    assert_eq!(trace[..2], ["save", "attempt_succeeded"]);
    assert_eq!(r.status(), Status::Blocked);
    assert_eq!(r.run.cp.stop_reason.as_deref(), Some(breach.as_str()));
    assert!(r.run.cp.git.as_ref().is_some_and(|g| g.pending.is_none()), "nothing pending");
}

#[test]
fn a_clean_iteration_is_committed_with_the_task_trailer() {
    let mut r = task_run();
    attempt(&mut r);
    let _ = r.step(Input::AttemptEnded(Box::new(exited(0, Some(DONE)))));
    assert_eq!(quiet(r.step(Input::Isolated(None))), ["save", "attempt_succeeded", "commit"]);
    let pending = r.run.cp.git.as_ref().and_then(|g| g.pending.clone()).expect("pending");
    assert!(pending.message.contains("Ralph-Task: login-page\nRalph-Run: R1\n"), "{}", pending.message);
    let report = CommitReport {
        stale_locks: vec![],
        agent_moved: None,
        left_out: vec![],
        seen: vec![],
        outcome: CommitOutcome::Nothing,
    };
    assert_eq!(quiet(r.step(Input::Committed(report))), ["git_nothing_to_commit", "iteration_started", "save"]);
}

#[test]
fn a_reset_another_task_learned_is_waited_for_before_the_attempt() {
    let mut r = task_run();
    assert_eq!(r.step(Input::Next), ["fleet:shared-reset"]);
    let shared =
        SharedReset { until: T0 + 60, provider: "api.anthropic.com".into(), learned_by: "rate-limiter".into() };
    let effects = r.effects(Input::SharedReset(Some(shared)));
    let told = RunEvent::FleetSharedReset {
        until: T0 + 60,
        provider: "api.anthropic.com".into(),
        learned_by: "rate-limiter".into(),
    };
    assert!(effects.iter().any(|e| matches!(e, Effect::Emit(event) if *event == told)));
    assert_eq!(quiet(trace(&effects)), ["fleet_shared_reset", "save", "timer"]);
    assert_eq!(r.status(), Status::Waiting);
    // The reset came: the next move looks again, and starts the attempt.
    let _ = r.after(60.0).step(Input::Timer);
    assert_eq!(r.step(Input::Next), ["fleet:shared-reset"]);
    // A reset already past is no wait.
    let past = SharedReset { until: T0 + 30, provider: "p".into(), learned_by: "t".into() };
    assert_eq!(r.step(Input::SharedReset(Some(past))), ["fleet:open-window", "launch"]);
}

#[test]
fn a_reset_this_task_meets_is_published_for_the_others() {
    let mut r = task_run();
    attempt(&mut r);
    let mut report = exited(1, None);
    report.output.events =
        vec![AgentEvent::RateLimit { status: "rejected".into(), resets_at: Some(T0 + 3600), limit_type: None }];
    let effects = r.effects(Input::AttemptEnded(Box::new(report)));
    let published = effects.iter().find_map(|e| match e {
        Effect::Fleet(Fleet::PublishReset { agent, until }) => Some((agent.clone(), *until)),
        _ => None,
    });
    assert_eq!(published.map(|(agent, _)| agent), Some("a".to_string()), "{:?}", trace(&effects));
}

#[test]
fn with_fallover_a_task_does_not_wait_for_another_tasks_reset() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| {
        s.task = Some("t".into());
        s.loaded.config.retry.on_rate_limit = OnRateLimit::Fallover;
    });
    let _ = r.step(Input::Start);
    assert_eq!(r.step(Input::Next), ["fleet:open-window", "launch"]);
}

#[test]
fn a_plain_run_asks_nothing_of_a_fleet() {
    let mut r = Run::started(TWO_AGENTS);
    let trace = r.ends(exited(0, Some(DONE)));
    assert!(!trace.iter().any(|w| w.starts_with("fleet:")), "{trace:?}");
}

//! The opening and the move before each attempt.

use std::time::Duration;

use crate::events::{GitOffWhy, RunEvent};
use crate::state::checkpoint::{InFlight, Status};
use crate::step::effect::Effect;
use crate::step::input::{Input, Launched};
use crate::step::state::Opening;

use super::{Run, T0, TWO_AGENTS, quiet, timer_secs};

#[test]
fn a_new_run_journals_its_start_then_set_ups_lines_then_saves() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.endpoints.all = vec!["api.example:443".into()]);
    r.run.opening = Opening {
        takeover: Some(RunEvent::LeaseWatch { pid: 1, host: "h".into(), renewals: 0, timeout_ms: 1 }),
        told: vec![RunEvent::GitOff { why: GitOffWhy::NotARepository }],
        interrupted: None,
    };
    assert_eq!(
        r.step(Input::Start),
        ["record:lease_watch", "run_started", "record:git_off", "save", "probe-in-background"]
    );
    assert!(r.run.ready());
}

#[test]
fn a_resumed_run_accounts_for_the_attempt_a_crash_cut_short_once_it_is_saved() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.resumed = true);
    r.run.opening.interrupted = Some(InFlight {
        agent: "a".into(),
        attempt: 3,
        session: Some("s1".into()),
        started_at: jiff::Timestamp::from_second(T0).unwrap(),
        tool: None,
    });
    assert_eq!(r.step(Input::Start), ["run_resumed", "save", "attempt_interrupted", "probe-in-background"]);
}

#[test]
fn a_commit_a_killed_ralph_left_pending_is_made_first() {
    let mut r = Run::with_a_pending_commit();
    let effects = r.effects(Input::Start);
    let commit = effects.last();
    assert!(matches!(commit, Some(Effect::Commit { after_crash: true })), "its stale locks go first: {commit:?}");
}

#[test]
fn before_an_attempt_a_full_disk_comes_first_then_the_caps() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.general.max_cost_usd = Some(1.0));
    let _ = r.step(Input::Start);
    r.run.cp.usage.cost_usd = 2.0;
    let _ = r.step(Input::DiskFull { path: "/p/.agent/checkpoint.json".into(), free: "0 B".into() });
    assert_eq!(quiet(r.step(Input::Next)), ["disk_full", "timer"]);
    let _ = r.after(1.0).step(Input::Timer);
    assert_eq!(quiet(r.step(Input::DiskRetried(None))), ["disk_space_back"]);
    assert_eq!(
        r.step(Input::Next),
        [
            "cap_reached",
            "save",
            "run_ended",
            "finish:Failed(\"max_cost_usd exhausted: the run has cost $2.00 of $1.00\")"
        ]
    );
    assert_eq!(r.status(), Status::Failed);
}

#[test]
fn an_offline_pause_or_a_reset_that_survived_a_restart_goes_on_first() {
    let mut r = Run::with(TWO_AGENTS, |(s, cp)| {
        s.loaded.config.offline.probe = Some(vec!["127.0.0.1:9".into()]);
        cp.progress.offline_since = Some(T0 - 60);
    });
    let _ = r.step(Input::Start);
    assert_eq!(r.step(Input::Next), ["probe"]);
    let mut r = Run::with(TWO_AGENTS, |(_, cp)| cp.progress.rate_limit_until = Some(T0 + 100));
    let _ = r.step(Input::Start);
    let effects = r.effects(Input::Next);
    assert_eq!(quiet(super::trace(&effects)), ["save", "timer"]);
    assert_eq!(timer_secs(&r, &effects), Some(100.0));
    assert_eq!(r.status(), Status::Waiting);
}

#[test]
fn an_agent_whose_limit_reset_takes_its_place_again() {
    let mut r = Run::with(TWO_AGENTS, |(_, cp)| {
        cp.progress.position.agent_index = 1;
        cp.progress.cooldowns.insert("a".into(), T0 - 1);
    });
    let _ = r.step(Input::Start);
    assert_eq!(r.step(Input::Next), ["fallback", "launch"]);
    assert_eq!(r.progress().position.agent_index, 0);
}

#[test]
fn a_stop_that_came_between_attempts_ends_the_run_before_the_next() {
    let mut r = Run::new(TWO_AGENTS);
    let _ = r.step(Input::Start);
    // Between attempts a stop is only remembered: the next move honours it, after
    // the waits and the caps.
    assert!(r.step(Input::Stop(crate::signal::StopCause::Terminate, None)).is_empty());
    assert_eq!(r.step(Input::Next), ["save", "run_ended", "finish:Stopped(Terminate)"]);
    assert_eq!(r.status(), Status::Interrupted);
}

#[test]
fn an_attempt_is_counted_saved_lightly_then_journaled_then_started() {
    let mut r = Run::new(TWO_AGENTS);
    let _ = r.step(Input::Start);
    let effects = r.effects(Input::Next);
    let Some(Effect::Launch(plan)) = effects.first() else { panic!() };
    assert_eq!(
        (plan.agent.as_str(), plan.attempt, plan.launch, plan.stem.as_str()),
        ("a", 1, 1, "attempt-0001-develop-a")
    );
    assert_eq!(plan.resume, None);
    let launched = Launched { withheld_env: vec!["AWS_SECRET".into()], quiet_tools: true, running_cost: false };
    let effects = r.effects(Input::Prepared { launch: Ok(launched), moved: None });
    assert_eq!(super::trace(&effects), ["save:ordered", "attempt_started", "start"]);
    let Some(Effect::Start(start)) = effects.last() else { panic!() };
    let timeouts = &r.run.setting.loaded.config.timeouts;
    // An agent whose tools run unseen has its silence bounded by the tool limit.
    assert_eq!(start.limits.stall, timeouts.tool.max(timeouts.stall));
    assert_eq!(start.cost_left, None);
    let in_flight = r.run.cp.in_flight.as_ref().expect("in flight");
    assert_eq!((in_flight.agent.as_str(), in_flight.attempt), ("a", 1));
    assert_eq!(r.run.last_log.as_deref(), Some(".agent/logs/R1/attempts.log (attempt-0001-develop-a)"));
}

#[test]
fn a_control_socket_bound_anew_before_the_attempt_is_said_first() {
    let mut r = Run::new(TWO_AGENTS);
    let _ = r.step(Input::Start);
    let _ = r.step(Input::Next);
    let moved = Some("/run/user/1000/ralph/c.sock".to_string());
    let trace = r.step(Input::Prepared { launch: Ok(Launched::default()), moved });
    assert_eq!(trace, ["control_socket_moved", "save:ordered", "attempt_started", "start"]);
}

#[test]
fn only_an_agent_that_reports_cost_while_it_runs_is_ended_on_the_cap() {
    let mut r = Run::with(TWO_AGENTS, |(s, cp)| {
        s.loaded.config.general.max_cost_usd = Some(5.0);
        cp.usage.cost_usd = 1.5;
    });
    let _ = r.step(Input::Start);
    let _ = r.step(Input::Next);
    let launched = Launched { running_cost: true, ..Launched::default() };
    let effects = r.effects(Input::Prepared { launch: Ok(launched), moved: None });
    let Some(Effect::Start(start)) = effects.last() else { panic!() };
    assert_eq!(start.cost_left, Some(3.5));
}

#[test]
fn no_attempt_outlasts_the_run() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.general.max_runtime = Some(Duration::from_secs(600)));
    let _ = r.step(Input::Start);
    let _ = r.after(500.0).step(Input::Next);
    let effects = r.effects(Input::Prepared { launch: Ok(Launched::default()), moved: None });
    let Some(Effect::Start(start)) = effects.last() else { panic!() };
    assert_eq!(start.limits.attempt, Duration::from_secs(100));
}

#[test]
fn a_launch_that_cannot_be_prepared_needs_a_person() {
    let mut r = Run::new(TWO_AGENTS);
    let _ = r.step(Input::Start);
    let _ = r.step(Input::Next);
    let trace =
        r.step(Input::Prepared { launch: Err("agent a: binary claude-x not found on PATH".into()), moved: None });
    assert_eq!(
        quiet(trace),
        [
            "save:ordered",
            "attempt_started",
            "save",
            "attempt_failed",
            "run_ended",
            "finish:Blocked(\"agent a: binary claude-x not found on PATH\")"
        ]
    );
    let last = r.run.cp.last_error.as_ref().expect("recorded");
    assert_eq!(last.classification.rule, crate::recovery::Rule::LaunchImpossible);
}

#[test]
fn the_prompt_of_a_resumed_session_is_its_note_with_todays_goal() {
    let mut r = Run::new(TWO_AGENTS);
    let (progress, phases) = (&r.run.cp.progress, &r.run.setting.loaded.phases);
    let crash = crate::supervise::note::Trouble::Crash { detail: "SIGSEGV".into() };
    let note = crate::step::record::recovery_note(progress, phases, "An older goal.", crash, None);
    r.run.cp.progress.recovery_note = Some(note);
    let fresh = crate::step::begin::attempt_prompt(&r.run, &|_| None);
    r.run.cp.progress.resume_session = Some("s".into());
    let resumed = crate::step::begin::attempt_prompt(&r.run, &|_| None);
    assert!(resumed.contains("Make the tests pass.") && !resumed.contains("An older goal."), "{resumed}");
    assert!(resumed.contains("SIGSEGV") && !resumed.contains("# When you are done"), "{resumed}");
    assert!(fresh.contains("SIGSEGV") && fresh.contains("# When you are done"), "{fresh}");
}

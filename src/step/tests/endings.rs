//! Issue 30's rules of how a run and its attempts end: the error the summary shows is
//! the one that ended the run, a finished iteration is kept before any stop, a crash
//! on the way out after the sign-off keeps the iteration, the agent's reported
//! interruption ends its attempt, and a detector's finding counts however quickly the
//! agent exited.

use crate::control::Inbound;
use crate::recovery::Rule;
use crate::recovery::classify::{EndedBy, Exit};
use crate::state::checkpoint::Status;
use crate::step::input::{AttemptEnd, AttemptMsg, Input};
use crate::supervise::{Detector, Intervention};

use super::{Run, TWO_AGENTS, ended, exited, failed_saying, quiet};

const DONE: &str = "All tests pass.\n<promise>DONE</promise>";

/// One agent `a`, one phase of `iterations` that runs until the goal.
fn until_complete(iterations: u32) -> String {
    format!(
        "[agents.a]\nkind = \"sim\"\n[[agents.a.script]]\nsteps = [{{ done = \"ok\" }}]\n\
         [retry]\nagent_attempts = 1\n[general]\nmax_cycles = 1\n\
         [chains]\nmain = [\"a\"]\n[phases.develop]\nchain = \"main\"\niterations = {iterations}\nuntil = \"complete\"\n"
    )
}

#[test]
fn the_iteration_cap_after_an_earlier_failure_ends_the_run_with_no_error() {
    let mut r = Run::started(&until_complete(1));
    let _ = r.ends(exited(1, None));
    assert!(r.run.cp.last_error.is_some(), "the failure is the run's history");
    assert_eq!(r.status(), Status::Failed, "max_cycles = 1: that failure ended the run");
    assert!(r.run.ending_error.is_some(), "and it is what the summary shows");

    let mut r = Run::started(&until_complete(2).replace("agent_attempts = 1", "agent_attempts = 3"));
    let _ = r.ends(exited(1, None));
    let _ = r.after(5.0).step(Input::Timer);
    r.attempt();
    let _ = r.ends(exited(0, Some(DONE)));
    r.attempt();
    let trace = quiet(r.ends(exited(0, Some(DONE))));
    assert!(trace.iter().any(|w| w == "cap_reached"), "{trace:?}");
    assert!(r.run.cp.last_error.is_some());
    assert!(r.run.ending_error.is_none(), "the iteration cap had no error");
}

#[test]
fn a_run_cap_reached_while_waiting_after_a_failure_ends_with_no_error() {
    let mut r =
        Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.general.max_runtime = Some(std::time::Duration::from_secs(60)));
    let _ = r.step(Input::Start);
    r.attempt();
    let _ = r.ends(exited(1, None));
    let _ = r.after(120.0).step(Input::Timer);
    let trace = quiet(r.step(Input::Next));
    assert!(trace.iter().any(|w| w == "cap_reached"), "{trace:?}");
    assert!(r.run.ending_error.is_none());
}

#[test]
fn a_persons_problem_is_the_error_that_ended_the_run() {
    let mut r = Run::started(TWO_AGENTS);
    let report = failed_saying(1, "Invalid API key · Please run /login\n");
    let _ = r.ends(report);
    assert_eq!(r.status(), Status::Blocked);
    assert_eq!(r.run.ending_error.as_ref().map(|e| e.classification.rule), Some(Rule::AuthFailed));
}

#[test]
fn a_finished_iteration_is_kept_before_the_restart_cap_ends_the_run() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.retry.mcp_restarts = 1);
    let _ = r.step(Input::Start);
    r.attempt();
    for _ in 0..2 {
        let _ = r.step(Input::Control(vec![Inbound::McpLost { attempt: 1 }]));
    }
    let trace = quiet(r.ends(exited(0, Some(DONE))));
    assert_eq!(trace[..3], ["save", "attempt_succeeded", "iteration_started"], "{trace:?}");
    assert!(trace.contains(&"cap_reached".to_string()), "{trace:?}");
    let p = r.progress();
    assert_eq!((p.counters.iterations_done, p.position.iteration), (1, 2));
    assert_eq!(r.status(), Status::Failed);
    let reason = r.run.cp.stop_reason.clone().unwrap_or_default();
    assert!(reason.contains("crashed 2 times in this iteration"), "{reason}");
    assert!(r.run.ending_error.is_none());
    // The last iteration finishes the run: nothing is left for the cap to stop.
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.retry.mcp_restarts = 1);
    let _ = r.step(Input::Start);
    r.attempt();
    let _ = r.ends(exited(0, Some(DONE)));
    r.attempt();
    for _ in 0..2 {
        let _ = r.step(Input::Control(vec![Inbound::McpLost { attempt: 2 }]));
    }
    let _ = r.ends(exited(0, Some(DONE)));
    assert_eq!(r.status(), Status::Completed);
}

#[test]
fn mcp_restarts_start_afresh_with_each_iteration() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.retry.mcp_restarts = 1);
    let _ = r.step(Input::Start);
    r.attempt();
    let _ = r.step(Input::Control(vec![Inbound::McpLost { attempt: 1 }]));
    let _ = r.ends(exited(0, Some(DONE)));
    assert_eq!(r.progress().counters.mcp_restarts, 0);
    r.attempt();
    let _ = r.step(Input::Control(vec![Inbound::McpLost { attempt: 2 }]));
    let _ = r.ends(exited(0, Some(DONE)));
    assert_eq!(r.status(), Status::Completed);
}

#[test]
fn a_crash_on_the_way_out_after_the_sign_off_keeps_the_iteration() {
    let mut r = Run::started(TWO_AGENTS);
    let trace = quiet(r.ends(exited(1, Some(DONE))));
    assert_eq!(trace, ["save", "attempt_succeeded", "iteration_started"]);
    assert_eq!(r.progress().counters.iterations_done, 1);
    // Work after the tag: the crash is a failure.
    let mut r = Run::started(TWO_AGENTS);
    let mut report = exited(1, Some(DONE));
    report.output.tool_after_message = true;
    let trace = quiet(r.ends(report));
    assert_eq!(trace[..2], ["save", "attempt_failed"]);
}

#[test]
fn the_agents_reported_interruption_ends_its_running_attempt() {
    let mut r = Run::started(TWO_AGENTS);
    let report = |attempt| Input::Control(vec![Inbound::Interruption { attempt, reason: "registry down".into() }]);
    assert_eq!(r.step(report(1)), ["agent_interruption", "attempt:interrupted", "attempt:alive"]);
    // An old attempt's word, or one that comes once the agent is gone, ends nothing.
    assert_eq!(r.step(report(7)), ["agent_interruption", "attempt:alive"]);
    let _ = r.step(Input::Attempt(AttemptMsg::Exited));
    assert_eq!(r.step(report(1)), ["agent_interruption", "attempt:alive"]);
    let end = AttemptEnd::Exited { exit: Exit::Signal(15), ended_by: EndedBy::Interruption };
    let _ = r.ends(ended(end, None));
    let last = r.run.cp.last_error.as_ref().expect("recorded");
    assert_eq!(last.classification.rule, Rule::ReportedInterruption);
    assert!(last.classification.reason.contains("registry down"), "{last:?}");
}

#[test]
fn a_loop_seen_after_the_agent_exited_is_the_loop() {
    let mut r = Run::started(TWO_AGENTS);
    let mut report = exited(0, Some("Still reading."));
    report.intervention =
        Some(Intervention { detector: Detector::ToolCallLoop, evidence: "Read (src/lib.rs) called 5 times".into() });
    let trace = quiet(r.ends(report));
    assert_eq!(trace[..3], ["save", "attempt_failed", "intervention"]);
    let last = r.run.cp.last_error.as_ref().expect("recorded");
    assert_eq!(last.classification.rule, Rule::ToolCallLoop);
    let note = r.progress().recovery_note.clone().unwrap_or_default();
    assert!(note.contains("Stop repeating them"), "{note}");
}

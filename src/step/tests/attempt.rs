//! The running attempt, a stop, and what an attempt's end comes to when it did not
//! fail: the iteration done, the next phase, the run complete, a doubt asked about,
//! the cost cap, the control socket's stops.

use crate::control::Inbound;
use crate::outcome::RunEnd;
use crate::recovery::classify::{EndedBy, Exit};
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::step::effect::{EndWhy, Show};
use crate::step::input::{AttemptEnd, AttemptMsg, Input};
use crate::supervise::note::{LastTool, ToolState};
use crate::supervise::{Detector, Intervention};

use super::{Run, TWO_AGENTS, ended, exited, quiet};

const DONE: &str = "All tests pass.\n<promise>DONE</promise>";

fn tool(state: ToolState) -> LastTool {
    LastTool { name: "Bash".into(), input_summary: "cargo test".into(), state }
}

#[test]
fn a_session_and_a_tool_start_are_saved_lightly_and_a_tool_end_not_at_all() {
    let mut r = Run::started(TWO_AGENTS);
    assert_eq!(r.step(Input::Attempt(AttemptMsg::Session("s1".into()))), ["save:ordered"]);
    assert_eq!(r.step(Input::Attempt(AttemptMsg::Tool(tool(ToolState::StartedNoResult)))), ["save:unsynced"]);
    assert!(r.step(Input::Attempt(AttemptMsg::Tool(tool(ToolState::Finished)))).is_empty());
    let in_flight = r.run.cp.in_flight.as_ref().expect("in flight");
    assert_eq!(in_flight.session.as_deref(), Some("s1"));
    assert_eq!(in_flight.tool.as_ref().map(|t| t.name.as_str()), Some("Bash"));
}

#[test]
fn a_stop_while_the_agent_runs_is_saved_before_the_agent_is_ended() {
    let mut r = Run::started(TWO_AGENTS);
    assert_eq!(r.step(Input::Stop(StopCause::User, None)), ["stop_requested", "save", "attempt:stop"]);
    assert_eq!(r.status(), Status::Paused);
    let msg = AttemptMsg::Escalating { why: EndWhy::User, sent: "SIGINT", next: None };
    assert_eq!(r.step(Input::Attempt(msg)), ["show:escalating"]);
    let mut report = ended(AttemptEnd::Stopped(StopCause::User), None);
    report.output.session = Some("s9".into());
    report.last_tool = Some(tool(ToolState::StartedNoResult));
    let trace = r.ends(report);
    assert_eq!(quiet(trace), ["save", "attempt_interrupted", "run_ended", "finish:Stopped(User)"]);
    // Its session continues on --resume, told its last tool call's outcome is unknown.
    assert_eq!(r.progress().resume_session.as_deref(), Some("s9"));
    assert!(r.progress().recovery_note.as_deref().is_some_and(|n| n.contains("cargo test")));
    assert!(r.run.cp.clean_stop);
}

#[test]
fn a_sigterm_of_the_users_own_pauses_and_names_its_sender_one_of_the_machine_interrupts() {
    use crate::signal::origin::{Origin, Sender};
    let sender = |origin| Sender { pid: 4242, uid: 1000, program: vec!["bash".into()], origin };
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Stop(StopCause::Deliberate, Some(sender(Origin::User))));
    assert_eq!(r.status(), Status::Paused, "saved before the agent is ended");
    let _ = r.ends(ended(AttemptEnd::Stopped(StopCause::Deliberate), None));
    assert_eq!((r.status(), r.run.cp.stop_cause), (Status::Paused, Some(StopCause::Deliberate)));
    assert_eq!(r.run.cp.stop_sender.as_ref().map(|s| s.origin), Some(Origin::User));
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Stop(StopCause::Terminate, Some(sender(Origin::ServiceManager))));
    let _ = r.ends(ended(AttemptEnd::Stopped(StopCause::Terminate), None));
    assert_eq!(r.status(), Status::Interrupted);
    assert_eq!(r.run.cp.stop_sender.as_ref().map(|s| s.origin), Some(Origin::ServiceManager));
    // Only a SIGTERM has a sender to name.
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Stop(StopCause::Hangup, Some(sender(Origin::User))));
    assert_eq!((r.status(), r.run.cp.stop_sender.as_ref()), (Status::Interrupted, None));
}

#[test]
fn a_stop_after_the_agent_exited_is_honoured_once_its_result_is_kept() {
    let mut r = Run::started(TWO_AGENTS);
    assert!(r.step(Input::Attempt(AttemptMsg::Exited)).is_empty());
    assert!(r.step(Input::Stop(StopCause::User, None)).is_empty(), "remembered, nothing sent");
    let trace = r.ends(exited(0, Some(DONE)));
    assert_eq!(quiet(trace), ["save", "attempt_succeeded", "iteration_started"]);
    assert_eq!(quiet(r.step(Input::Next)), ["save", "run_ended", "finish:Stopped(User)"]);
    assert_eq!(r.status(), Status::Paused);
}

#[test]
fn the_second_ctrl_c_kills_the_agent_and_the_run_leaves_at_once() {
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Stop(StopCause::User, None));
    assert_eq!(r.step(Input::ForceExit), ["attempt:kill"]);
    let trace = r.ends(ended(AttemptEnd::ForceExit, None));
    assert_eq!(quiet(trace), ["save", "attempt_interrupted", "run_ended", "finish:ForceExit"]);
    assert_eq!(r.status(), Status::Paused, "the intent of the first Ctrl+C");
    // Between attempts, it ends the run at once.
    let mut r = Run::new(TWO_AGENTS);
    let _ = r.step(Input::Start);
    assert_eq!(r.step(Input::ForceExit), ["show:killed", "save", "run_ended", "finish:ForceExit"]);
}

#[test]
fn a_done_iteration_is_journaled_once_saved_then_the_next_one_starts() {
    let mut r = Run::started(TWO_AGENTS);
    let trace = r.ends(exited(0, Some(DONE)));
    let expected = ["show:clear", "show:cost", "probe-in-background", "save", "attempt_succeeded", "iteration_started"];
    assert_eq!(trace, expected);
    assert_eq!((r.progress().position.iteration, r.progress().counters.iterations_done), (2, 1));
    assert_eq!(r.run.last_success.as_deref(), Some(DONE));
}

#[test]
fn the_last_iteration_keeps_the_phases_result_and_completes_the_run() {
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.ends(exited(0, Some(DONE)));
    r.attempt();
    let trace = r.ends(exited(0, Some(DONE)));
    assert_eq!(quiet(trace), ["artifact", "save", "attempt_succeeded", "phase_done", "run_ended", "finish:Completed"]);
    assert_eq!(r.status(), Status::Completed);
}

#[test]
fn a_doubtful_sign_off_with_a_session_is_asked_about_at_no_cost() {
    let mut r = Run::started(TWO_AGENTS);
    let mut report = exited(0, Some("Added a flag so users can pipe the output <promise>DONE</promise>"));
    report.output.session = Some("s1".into());
    assert_eq!(quiet(r.ends(report)), ["signoff", "intervention", "save"]);
    let p = r.progress();
    assert_eq!((p.counters.confirmations, p.counters.agent_failures), (1, 0));
    assert_eq!(p.resume_session.as_deref(), Some("s1"));
    assert_eq!(p.counters.interventions.get("done_confirmation"), Some(&1));
    assert!(r.run.ready(), "the next attempt resumes with the question");
}

#[test]
fn an_attempt_ended_on_the_cost_cap_ends_the_run_on_it() {
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.general.max_cost_usd = Some(1.0));
    let _ = r.step(Input::Start);
    r.attempt();
    let mut report =
        ended(AttemptEnd::Exited { exit: Exit::Signal(2), ended_by: EndedBy::Ralph(Detector::CostCap) }, None);
    report.output.usage.cost_usd = 1.2;
    report.intervention = Some(Intervention { detector: Detector::CostCap, evidence: "$1.20".into() });
    let trace = quiet(r.ends(report));
    assert_eq!(trace[..2], ["intervention", "cap_reached"]);
    assert_eq!(r.status(), Status::Failed);
    assert!(r.run.cp.stop_reason.as_deref().is_some_and(|m| m.starts_with("max_cost_usd exhausted")));
}

#[test]
fn the_agents_cancel_and_too_many_mcp_crashes_end_the_run_when_the_attempt_ends() {
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Control(vec![Inbound::Cancel { attempt: 1, reason: "needs a person".into() }]));
    let _ = r.ends(exited(0, Some(DONE)));
    assert_eq!(r.status(), Status::Blocked);
    let mut r = Run::with(TWO_AGENTS, |(s, _)| s.loaded.config.retry.mcp_restarts = 1);
    let _ = r.step(Input::Start);
    r.attempt();
    for _ in 0..2 {
        assert_eq!(r.step(Input::Control(vec![Inbound::McpLost { attempt: 1 }])), ["mcp_lost", "attempt:alive"]);
    }
    let _ = r.ends(exited(0, Some(DONE)));
    assert!(r.run.cp.stop_reason.as_deref().is_some_and(|m| m.starts_with("restart budget exhausted")));
}

#[test]
fn a_lost_mcp_server_counts_only_while_its_agent_runs() {
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Attempt(AttemptMsg::Exited));
    assert_eq!(r.step(Input::Control(vec![Inbound::McpLost { attempt: 1 }])), ["attempt:alive"]);
    assert_eq!(r.progress().counters.mcp_restarts, 0);
}

#[test]
fn ralph_stop_waits_for_the_iteration_to_end() {
    let mut r = Run::started(TWO_AGENTS);
    assert_eq!(r.step(Input::Control(vec![Inbound::Stop { now: false }])), ["stop_after_iteration"]);
    let _ = r.ends(exited(0, Some(DONE)));
    assert_eq!(quiet(r.step(Input::Next)), ["save", "run_ended", "finish:Stopped(User)"]);
    // The same iteration goes on after a failure: the stop waits for its end.
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Control(vec![Inbound::Stop { now: false }]));
    let _ = r.ends(exited(0, Some("no tag")));
    let _ = r.after(5.0).step(Input::Timer);
    assert_eq!(r.step(Input::Next).last().map(String::as_str), Some("launch"));
}

#[test]
fn the_agents_declare_complete_decides_a_phase_whose_done_signal_is_mcp() {
    let toml = TWO_AGENTS.replace("iterations = 2", "iterations = 1\ndone = \"mcp\"");
    let mut r = Run::started(&toml);
    let declared = Inbound::Complete { attempt: 1, summary: "s".into(), evidence: "e".into(), goal_complete: false };
    assert_eq!(r.step(Input::Control(vec![declared])), ["completion_declared", "attempt:alive"]);
    let _ = r.ends(exited(0, None));
    assert_eq!(r.status(), Status::Completed);
}

#[test]
fn an_agents_checkpoint_is_saved_and_quoted_by_the_next_note() {
    let mut r = Run::started(TWO_AGENTS);
    let saved = Inbound::Checkpoint {
        attempt: 1,
        summary: "parser done, tests next".into(),
        files_touched: vec![],
        steps_done: vec!["parser".into()],
        next_steps: vec!["tests".into()],
    };
    assert_eq!(r.step(Input::Control(vec![saved])), ["agent_checkpoint", "save", "attempt:alive"]);
    let _ = r.ends(exited(1, None));
    assert!(r.progress().recovery_note.as_deref().is_some_and(|n| n.contains("parser done, tests next")));
}

#[test]
fn ralph_status_sees_what_the_run_waits_for_and_a_stop_asked_for() {
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Control(vec![Inbound::Stop { now: false }]));
    let _ = r.ends(exited(0, None));
    let mut live = crate::control::Live::default();
    crate::step::control::live(&r.run, &mut live);
    assert_eq!((live.status.as_str(), live.agent.as_str(), live.stop_requested), ("waiting", "a", true));
    assert_eq!(live.waiting_for.as_deref(), Some("a backoff before the next attempt"));
    assert!(live.recovery_note.is_some());
}

#[test]
fn the_live_display_follows_the_attempt() {
    let mut r = Run::started(TWO_AGENTS);
    let effects = r.effects(Input::Attempt(AttemptMsg::Escalating {
        why: EndWhy::Intervention(Detector::Stall),
        sent: "SIGINT",
        next: None,
    }));
    assert!(matches!(&effects[..], [crate::step::Effect::Show(Show::Escalating { agent, .. })] if agent == "a"));
    let trace = r.ends(ended(AttemptEnd::Stopped(StopCause::Terminate), None));
    assert_eq!(trace[..3], ["show:clear", "show:cost", "show:agent-stopped"]);
    assert!(matches!(r.status(), Status::Interrupted));
    let _ = RunEnd::Completed;
}

#[test]
fn the_second_ctrl_c_wins_however_the_attempt_ended() {
    // The backstop kills the agent at the second Ctrl+C: its attempt may end as an
    // orderly stop before it hears the kill.
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::Stop(StopCause::User, None));
    let _ = r.step(Input::ForceExit);
    let trace = quiet(r.ends(ended(AttemptEnd::Stopped(StopCause::User), None)));
    assert_eq!(trace.last().map(String::as_str), Some("finish:ForceExit"));
}

#[test]
fn a_program_that_cannot_be_run_is_not_found_with_its_errno() {
    use crate::step::input::SpawnError;
    let missing = SpawnError::of(&std::io::Error::from_raw_os_error(nix::libc::ENOENT), "claude".into());
    assert_eq!((missing.errno, missing.not_found, missing.program.as_str()), (Some(nix::libc::ENOENT), true, "claude"));
    let denied = SpawnError::of(&std::io::Error::from_raw_os_error(nix::libc::EACCES), "claude".into());
    assert!(denied.not_found);
    assert!(!SpawnError::of(&std::io::Error::from_raw_os_error(nix::libc::E2BIG), String::new()).not_found);
}

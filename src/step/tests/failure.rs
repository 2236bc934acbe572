//! A failed attempt, from its classification to the decision and the note.

use crate::agent::AgentEvent;
use crate::control::Inbound;
use crate::recovery::probe::ProbeResult;
use crate::recovery::{Category, Rule};
use crate::state::checkpoint::Status;
use crate::step::input::{AttemptEnd, Input, SpawnError, Versions};
use crate::step::record::{evidence, spawn_failure, with_versions};
use crate::supervise::{Detector, Intervention};

use super::{Run, TWO_AGENTS, ended, exited, failed_saying, quiet};

/// One agent, probing a loopback endpoint of the test's choosing.
fn probing(endpoint: &str) -> String {
    format!("{TWO_AGENTS}\n[offline]\nprobe = [\"{endpoint}\"]\n")
}

fn crashed() -> crate::step::input::AttemptReport {
    let mut report = ended(
        AttemptEnd::Exited {
            exit: crate::recovery::classify::Exit::Signal(11),
            ended_by: crate::recovery::classify::EndedBy::Agent,
        },
        None,
    );
    report.output.session = Some("s1".into());
    report
}

#[test]
fn a_crash_is_checked_against_the_network_then_resumed_with_a_note() {
    let mut r = Run::started(&probing("127.0.0.1:9"));
    assert_eq!(quiet(r.ends(crashed())), ["probe"]);
    let trace = quiet(r.step(Input::Probed(ProbeResult::Online)));
    assert_eq!(trace, ["save", "attempt_failed", "retry", "save", "timer"]);
    let p = r.progress();
    assert_eq!((p.counters.agent_failures, p.resume_session.as_deref()), (1, Some("s1")));
    let note = p.recovery_note.as_deref().expect("a note");
    assert!(note.contains("Make the tests pass.") && note.contains("crash"), "{note}");
    assert_eq!(r.run.cp.last_error.as_ref().map(|e| e.classification.rule), Some(Rule::Crashed));
}

#[test]
fn a_failure_while_no_provider_answers_is_the_outages() {
    let mut r = Run::started(&probing("127.0.0.1:9"));
    let _ = r.ends(crashed());
    let offline = ProbeResult::Offline { last_error: "connection refused".into() };
    let trace = quiet(r.step(Input::Probed(offline)));
    // Environmental: no budget, and the pause's own probe first.
    assert_eq!(trace, ["save", "attempt_failed", "retry", "probe"]);
    let p = r.progress();
    assert_eq!((p.counters.agent_failures, p.counters.failures.get(&Category::Environmental)), (0, Some(&1)));
}

#[test]
fn without_an_endpoint_to_judge_by_a_failure_keeps_its_category() {
    let mut r = Run::started(TWO_AGENTS);
    let trace = quiet(r.ends(crashed()));
    assert_eq!(trace, ["save", "attempt_failed", "retry", "save", "timer"]);
    assert_eq!(r.progress().counters.agent_failures, 1);
}

#[test]
fn an_argument_the_cli_refused_is_named_with_its_versions() {
    let mut r = Run::started(TWO_AGENTS);
    let report = failed_saying(2, "error: unknown option '--yolo'\n");
    assert_eq!(quiet(r.ends(report)), ["versions"]);
    let versions = Versions { kind: "claude", installed: "3.0.0".into(), tested: "2.1.3" };
    let trace = quiet(r.step(Input::Versions(Some(versions))));
    assert_eq!(trace[..2], ["save", "attempt_failed"]);
    assert_eq!(r.status(), Status::Blocked);
    let reason = r.run.cp.stop_reason.clone().unwrap_or_default();
    assert!(reason.contains("version 3.0.0, ralph was tested with 2.1.3"), "{reason}");
}

#[test]
fn the_versions_message_without_a_known_cli() {
    assert_eq!(with_versions("rejected", None), "rejected; check the agent's command and its version");
}

#[test]
fn a_denied_sign_off_is_journaled_and_a_question_instead_of_work_is_an_intervention() {
    let mut r = Run::started(TWO_AGENTS);
    let trace = quiet(r.ends(exited(0, Some("The flaky test still fails.\n<promise>DONE</promise>"))));
    assert_eq!(trace, ["save", "attempt_failed", "signoff", "retry", "save", "timer"]);
    let mut r = Run::started(TWO_AGENTS);
    let trace = quiet(r.ends(exited(0, Some("Part one is done. Shall I continue with part two?"))));
    assert_eq!(trace[..3], ["save", "attempt_failed", "intervention"]);
    assert_eq!(r.progress().counters.interventions.get("ready_to_continue"), Some(&1));
}

#[test]
fn the_detector_that_ended_an_attempt_is_journaled_and_names_the_trouble() {
    let mut r = Run::started(TWO_AGENTS);
    let mut report = ended(
        AttemptEnd::Exited {
            exit: crate::recovery::classify::Exit::Signal(2),
            ended_by: crate::recovery::classify::EndedBy::Ralph(Detector::ToolCallLoop),
        },
        None,
    );
    report.intervention = Some(Intervention { detector: Detector::ToolCallLoop, evidence: "Read(a.rs) ×3".into() });
    let trace = quiet(r.ends(report));
    assert_eq!(trace[..3], ["save", "attempt_failed", "intervention"]);
    assert!(r.progress().recovery_note.as_deref().is_some_and(|n| n.contains("Read(a.rs) ×3")));
}

#[test]
fn resumed_recoveries_in_a_storm_start_the_next_attempt_fresh() {
    let toml = TWO_AGENTS.replace("[chains]", "[retry]\nagent_attempts = 10\n\n[chains]");
    let mut r = Run::started(&toml);
    let mut stormed = false;
    for _ in 0..3 {
        let trace = quiet(r.ends(crashed()));
        stormed |= trace.iter().any(|w| w == "intervention");
        let _ = r.after(5.0).step(Input::Timer);
        r.attempt();
    }
    assert!(stormed);
    assert_eq!(r.progress().counters.interventions.get(Detector::ContinueStorm.into_str()), Some(&1));
}

#[test]
fn the_agents_reported_interruption_is_evidence_for_the_classifier() {
    let mut r = Run::started(TWO_AGENTS);
    let why = "the API says: 529 overloaded";
    assert_eq!(
        r.step(Input::Control(vec![Inbound::Interruption { attempt: 1, reason: why.into() }]))[0],
        "agent_interruption"
    );
    let _ = r.ends(exited(1, None));
    let last = r.run.cp.last_error.as_ref().expect("recorded");
    assert_eq!(last.classification.category, Category::Environmental, "{last:?}");
}

#[test]
fn a_start_that_failed_for_a_passing_reason_is_retried_like_an_outage() {
    let error = SpawnError {
        errno: Some(11),
        not_found: false,
        message: "Resource temporarily unavailable".into(),
        program: "claude".into(),
    };
    assert_eq!(spawn_failure("a", &error).category, Category::Environmental);
    let gone = SpawnError { errno: None, not_found: true, message: "not on PATH".into(), program: String::new() };
    assert_eq!(spawn_failure("a", &gone).rule, Rule::LaunchImpossible);
    let mut r = Run::started(TWO_AGENTS);
    let trace = quiet(r.ends(ended(AttemptEnd::SpawnFailed(error), None)));
    assert_eq!(trace, ["save", "attempt_failed", "retry", "save", "timer"]);
}

#[test]
fn the_evidence_is_the_tail_or_the_structured_error_alone() {
    assert_eq!(evidence(Some("quota exceeded"), true, "  \n"), "quota exceeded");
    assert_eq!(evidence(Some("quota exceeded"), true, "stderr line\n"), "stderr line\n");
    assert_eq!(evidence(Some("all good"), false, ""), "");
}

#[test]
fn a_reported_rate_limit_reset_is_waited_for_and_recorded_once() {
    let mut r = Run::started(TWO_AGENTS);
    let mut report = exited(1, None);
    let reset = super::T0 + 3600;
    report.output.events =
        vec![AgentEvent::RateLimit { status: "rejected".into(), resets_at: Some(reset), limit_type: None }];
    let effects = r.effects(Input::AttemptEnded(Box::new(report)));
    let trace = quiet(super::trace(&effects));
    assert_eq!(trace, ["save", "attempt_failed", "rate_limit_wait", "timer"]);
    let until = reset + crate::recovery::rate_limit::MARGIN_SECS;
    assert_eq!(r.progress().rate_limit_until, Some(until));
    assert_eq!(super::timer_secs(&r, &effects), Some((until - super::T0) as f64));
    assert_eq!(r.status(), Status::Waiting);
    let trace = quiet(r.after((until - super::T0) as f64).step(Input::Timer));
    assert_eq!(trace, ["save"]);
    assert_eq!((r.progress().rate_limit_until, r.status()), (None, Status::Running));
}

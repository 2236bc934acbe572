//! How a run starts: fresh, resumed, or left as it is.

use std::path::Path;

use crate::config::Loaded;
use crate::events::RunEvent;
use crate::outcome::RunEnd;
use crate::signal::StopCause;
use crate::state::checkpoint::{Checkpoint, InFlight, Status, ToolCall};
use crate::step::start::{Answer, Refused, ResumeFlag, Start, decide, fresh, parse_answer, resume, settled};

use super::{T0, TWO_AGENTS, checkpoint};

fn cp(status: Status) -> Checkpoint {
    Checkpoint { status, ..checkpoint("develop") }
}

fn loaded(toml: &str) -> Loaded {
    crate::config::parse(Path::new("ralph.toml"), toml).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn answers_to_the_resume_question() {
    assert_eq!(parse_answer("\n"), Some(Answer::Flag(ResumeFlag::Resume)));
    assert_eq!(parse_answer("R"), Some(Answer::Flag(ResumeFlag::Resume)));
    assert_eq!(parse_answer("new"), Some(Answer::Flag(ResumeFlag::Fresh)));
    assert_eq!(parse_answer(" q \n"), Some(Answer::Quit));
    assert_eq!(parse_answer("quit"), Some(Answer::Quit));
    assert_eq!(parse_answer("maybe"), None);
}

#[test]
fn the_flags_decide_what_becomes_of_a_checkpoint() {
    assert_eq!(decide(None, ResumeFlag::Resume), Start::NothingToResume);
    assert_eq!(decide(None, ResumeFlag::Ask), Start::Fresh);
    assert_eq!(decide(Some(&cp(Status::Paused)), ResumeFlag::Fresh), Start::ArchiveThenFresh);
    assert_eq!(decide(Some(&cp(Status::Failed)), ResumeFlag::Resume), Start::Resume);
    assert_eq!(decide(Some(&cp(Status::Completed)), ResumeFlag::Resume), Start::NothingToResume);
    assert_eq!(decide(Some(&cp(Status::Completed)), ResumeFlag::Ask), Start::ArchiveThenFresh);
    assert_eq!(decide(Some(&cp(Status::Paused)), ResumeFlag::Ask), Start::Ask);
}

#[test]
fn resume_or_start_starts_without_a_checkpoint() {
    assert_eq!(decide(None, ResumeFlag::ResumeOrStart), Start::Fresh);
}

#[test]
fn resume_or_start_resumes_what_nobody_stopped() {
    for status in [Status::Running, Status::Waiting, Status::Interrupted] {
        assert_eq!(decide(Some(&cp(status)), ResumeFlag::ResumeOrStart), Start::Resume, "{status:?}");
    }
}

#[test]
fn resume_or_start_leaves_finished_and_stopped_runs_alone() {
    for status in [Status::Completed, Status::Paused, Status::Failed, Status::Blocked] {
        assert_eq!(decide(Some(&cp(status)), ResumeFlag::ResumeOrStart), Start::Settled, "{status:?}");
    }
    let paused = Checkpoint { stop_cause: Some(StopCause::Hangup), ..cp(Status::Paused) };
    let (end, said) = settled(&paused);
    assert_eq!(end, RunEnd::Stopped(StopCause::Hangup));
    assert!(matches!(said, RunEvent::RunSettled { status: Status::Paused, .. }));
    assert_eq!(settled(&cp(Status::Completed)).0, RunEnd::Completed);
}

#[test]
fn a_fresh_run_starts_at_the_first_phase_or_at_from_reusing_what_is_there() {
    let toml = TWO_AGENTS.replace("[phases.develop]", "[phases.plan]\nchain = \"main\"\n\n[phases.develop]");
    let now = jiff::Timestamp::from_second(T0).unwrap();
    let new = fresh(&loaded(&toml), "sum", None, |_| false, now, 7).expect("fresh");
    assert_eq!((new.progress.position.phase_name.as_str(), new.run_id.as_str()), ("plan", "20270115T080000Z-7"));
    assert_eq!((new.status, new.prompt_checksum.as_str()), (Status::Running, "sum"));
    let later = fresh(&loaded(&toml), "sum", Some("develop"), |p| p == "plan", now, 7).expect("from");
    let from = later.progress.from.expect("from");
    assert_eq!((from.reused, later.progress.position.phase_name), (vec!["plan".to_string()], "develop".to_string()));
    assert!(fresh(&loaded(&toml), "sum", Some("deploy"), |_| false, now, 7).is_err());
}

#[test]
fn a_resume_continues_the_session_a_crash_cut_short_and_says_so() {
    let mut crashed = cp(Status::Running);
    crashed.in_flight = Some(InFlight {
        agent: "a".into(),
        attempt: 2,
        session: Some("s1".into()),
        started_at: jiff::Timestamp::from_second(T0).unwrap(),
        tool: Some(ToolCall { name: "Bash".into(), input: "cargo test".into(), finished: false }),
    });
    let (cp, told) = resume(crashed, &loaded(TWO_AGENTS), "Make the tests pass.", "", None).expect("resumed");
    assert_eq!((cp.in_flight, cp.progress.resume_session.as_deref()), (None, Some("s1")));
    let note = cp.progress.recovery_note.expect("a note");
    assert!(note.contains("cargo test") && note.contains("Make the tests pass."), "{note}");
    assert!(matches!(told.last(), Some(RunEvent::Resuming { session: Some(s), .. }) if s == "s1"));
    assert!(!cp.clean_stop);
}

#[test]
fn a_failed_run_resumed_gets_a_fresh_budget_and_its_totals_stay() {
    let mut failed = cp(Status::Failed);
    (failed.progress.counters.agent_failures, failed.progress.counters.attempts) = (3, 9);
    failed.stop_reason = Some("max_cycles exhausted".into());
    let (cp, _) = resume(failed, &loaded(TWO_AGENTS), "", "", None).expect("resumed");
    assert_eq!((cp.progress.counters.agent_failures, cp.progress.counters.attempts), (0, 9));
    assert_eq!((cp.status, cp.stop_reason), (Status::Running, None));
}

#[test]
fn a_resume_under_a_config_without_its_phase_is_refused_and_from_moves_it() {
    let gone = Checkpoint { progress: crate::workflow::Progress::new("deploy"), ..cp(Status::Paused) };
    assert!(matches!(resume(gone, &loaded(TWO_AGENTS), "", "", None), Err(Refused::PhaseGone(_))));
    let toml = TWO_AGENTS.replace("[phases.develop]", "[phases.plan]\nchain = \"main\"\n\n[phases.develop]");
    let at_plan = Checkpoint { progress: crate::workflow::Progress::new("plan"), ..cp(Status::Paused) };
    let (moved, told) = resume(at_plan.clone(), &loaded(&toml), "", "", Some("develop")).expect("moved");
    assert_eq!(moved.progress.position.phase_name, "develop");
    assert!(told.iter().any(|e| matches!(e, RunEvent::RunMoved { from, to } if from == "plan" && to == "develop")));
    assert!(matches!(resume(at_plan, &loaded(&toml), "", "", Some("nope")), Err(Refused::From(_))));
}

#[test]
fn an_eviction_reopens_a_completed_fleet_task_once_for_one_more_iteration() {
    use crate::step::start::{Eviction, reopen};
    let loaded = loaded(TWO_AGENTS);
    let mut completed = cp(Status::Completed);
    completed.progress.position.iteration = 2;
    completed.progress.sessions.insert("a".into(), "sess-a".into());
    completed.stop_reason = Some("goal complete".into());
    let eviction = Eviction { number: 1, text: "the merge queue found a conflict in src/lib.rs" };
    let told = reopen(&mut completed, &loaded, &eviction);
    assert_eq!(
        told,
        Some(RunEvent::FleetReopened { eviction: 1, phase: "develop".into(), iteration: 3, agent: "a".into() })
    );
    assert_eq!(completed.status, Status::Running);
    assert_eq!(completed.fleet_evictions, 1);
    assert_eq!(completed.progress.position.iteration, 3);
    assert_eq!(completed.progress.recovery_note.as_deref(), Some(eviction.text));
    assert_eq!(completed.stop_reason, None);
    // The same eviction is taken once: a crash after the reopening resumes, it does
    // not reopen again.
    completed.status = Status::Completed;
    assert_eq!(reopen(&mut completed, &loaded, &eviction), None);
    // Only a completed run is reopened (a running one resumes as it is).
    let mut running = cp(Status::Running);
    assert_eq!(reopen(&mut running, &loaded, &eviction), None);
    assert_eq!(running.fleet_evictions, 0);
}

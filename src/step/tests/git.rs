//! The commit step of an iteration.

use crate::config::CommitMode;
use crate::events::RunEvent;
use crate::git::plan::{LeftOut, Tree};
use crate::git::record::{AgentMoved, CommitOutcome, CommitRecord, CommitReport, GitState};
use crate::outcome::RunEnd;
use crate::recovery::Rule;
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::step::effect::Effect;
use crate::step::ending::records_tree;
use crate::step::input::{AttemptEnd, Input};

use super::{Run, TWO_AGENTS, exited, quiet};

const DONE: &str = "Parser fixed.\n<promise>DONE</promise>";

fn git_run(mode: CommitMode) -> Run {
    let mut r = Run::with(TWO_AGENTS, |(s, cp)| {
        s.git = true;
        s.loaded.config.git.commit = mode;
        cp.git = Some(GitState {
            top: "/p".into(),
            baseline: Some("b0".into()),
            head: Some("b0".into()),
            ..GitState::default()
        });
    });
    let _ = r.step(Input::Start);
    r.attempt();
    r
}

fn report(outcome: CommitOutcome) -> CommitReport {
    CommitReport { stale_locks: Vec::new(), agent_moved: None, left_out: Vec::new(), seen: Vec::new(), outcome }
}

fn record(hash: &str) -> CommitRecord {
    CommitRecord { hash: hash.into(), key: "develop/1".into(), files: 2, insertions: 5, deletions: 1 }
}

#[test]
fn a_done_iteration_is_marked_pending_durably_before_its_commit() {
    let mut r = git_run(CommitMode::Iteration);
    let effects = r.effects(Input::AttemptEnded(Box::new(exited(0, Some(DONE)))));
    assert_eq!(quiet(super::trace(&effects)), ["save", "attempt_succeeded", "commit"]);
    assert!(matches!(effects.last(), Some(Effect::Commit { after_crash: false })));
    let pending = r.run.cp.git.as_ref().and_then(|g| g.pending.clone()).expect("pending");
    assert_eq!(pending.key, "develop/1");
    assert!(pending.message.contains("Ralph-Iteration: develop/1"), "{}", pending.message);
    let trace = quiet(r.step(Input::Committed(report(CommitOutcome::Committed(record("c1"))))));
    assert_eq!(trace, ["git_commit", "iteration_started", "save"]);
    let git = r.run.cp.git.as_ref().expect("git");
    assert_eq!((git.pending.is_none(), git.head.as_deref(), git.commit_count), (true, Some("c1"), 1));
}

#[test]
fn with_commit_phase_only_the_phases_last_iteration_commits() {
    let mut r = git_run(CommitMode::Phase);
    assert_eq!(quiet(r.ends(exited(0, Some(DONE)))), ["save", "attempt_succeeded", "iteration_started"]);
    r.attempt();
    assert_eq!(quiet(r.ends(exited(0, Some(DONE)))).last().map(String::as_str), Some("commit"));
    let mut r = git_run(CommitMode::Off);
    assert!(!quiet(r.ends(exited(0, Some(DONE)))).contains(&"commit".to_string()));
}

#[test]
fn what_git_reports_is_journaled_in_order_and_recorded() {
    let mut r = git_run(CommitMode::Iteration);
    let _ = r.ends(exited(0, Some(DONE)));
    let report = CommitReport {
        stale_locks: vec![crate::git::stale_lock::Removed { path: "/p/.git/index.lock".into(), why: "stale".into() }],
        agent_moved: Some(AgentMoved { from: Some("b0".into()), to: "a1".into(), commits: vec!["a1".into()] }),
        left_out: vec![("NOTES.md".into(), crate::git::plan::LeftOut::NotTheAgents)],
        seen: vec![("NOTES.md".into(), "h1".into())],
        outcome: CommitOutcome::Nothing,
    };
    let trace = quiet(r.step(Input::Committed(report)));
    assert_eq!(
        trace,
        [
            "git_stale_lock_removed",
            "git_agent_committed",
            "git_left_out",
            "git_nothing_to_commit",
            "iteration_started",
            "save"
        ]
    );
    let git = r.run.cp.git.as_ref().expect("git");
    assert_eq!(
        (git.head.as_deref(), git.agent_commits, git.held.clone()),
        (Some("a1"), 1, vec!["NOTES.md".to_string()])
    );
}

#[test]
fn a_hook_that_rejects_the_commit_fails_the_iteration_with_its_output_in_the_note() {
    let mut r = git_run(CommitMode::Iteration);
    let _ = r.ends(exited(0, Some(DONE)));
    let trace = quiet(r.step(Input::Committed(report(CommitOutcome::Rejected("lint: line too long".into())))));
    assert_eq!(trace, ["git_commit_rejected", "save", "attempt_failed", "retry", "save", "timer"]);
    assert_eq!(r.run.cp.last_error.as_ref().map(|e| e.classification.rule), Some(Rule::CommitRejected));
    assert!(r.progress().recovery_note.as_deref().is_some_and(|n| n.contains("lint: line too long")));
    assert_eq!(r.progress().counters.agent_failures, 1);
    assert!(r.run.cp.git.as_ref().is_some_and(|g| g.pending.is_none()));
}

#[test]
fn git_failing_otherwise_blocks_the_run_with_the_commit_still_pending() {
    let mut r = git_run(CommitMode::Iteration);
    let _ = r.ends(exited(0, Some(DONE)));
    let trace = quiet(r.step(Input::Committed(report(CommitOutcome::Failed("index.lock exists".into())))));
    assert_eq!(trace[0], "git_error");
    assert_eq!(r.status(), Status::Blocked);
    assert_eq!(r.run.cp.stop_reason.as_deref(), Some("git: cannot commit develop/1: index.lock exists"));
    assert!(r.run.cp.git.as_ref().is_some_and(|g| g.pending.is_some()), "a resume makes it");
}

#[test]
fn a_commit_a_crash_left_pending_carries_its_iteration_on() {
    let mut r = Run::with_a_pending_commit();
    let _ = r.step(Input::Start);
    let trace = quiet(r.step(Input::Committed(report(CommitOutcome::Found(record("c0"))))));
    // No background probe: that happened at the start.
    assert_eq!(trace, ["git_commit", "iteration_started", "save"]);
    assert_eq!((r.run.carried, r.progress().position.iteration), (1, 2));
}

#[test]
fn a_held_file_changed_again_is_left_out_with_its_reason_and_its_content_remembered() {
    let mut r = git_run(CommitMode::Iteration);
    if let Some(git) = r.run.cp.git.as_mut() {
        git.hold("NOTES.md");
        git.held_content.insert("NOTES.md".into(), "h0".into());
    }
    let _ = r.ends(exited(0, Some(DONE)));
    let report = CommitReport {
        left_out: vec![("NOTES.md".into(), LeftOut::Held)],
        seen: vec![("NOTES.md".into(), "h1".into())],
        ..report(CommitOutcome::Committed(record("c1")))
    };
    let effects = r.effects(Input::Committed(report));
    let left_out = effects.iter().find_map(|e| match e {
        Effect::Emit(RunEvent::GitLeftOut { path, reason, .. }) => Some((path.clone(), reason.clone())),
        _ => None,
    });
    assert_eq!(left_out, Some(("NOTES.md".to_string(), "held".to_string())));
    let git = r.run.cp.git.as_ref().expect("git");
    assert_eq!(git.held, ["NOTES.md"]);
    assert_eq!(git.held_content.get("NOTES.md").map(String::as_str), Some("h1"), "said once per change");
}

#[test]
fn an_orderly_end_records_the_working_tree_before_its_final_save() {
    let mut r = git_run(CommitMode::Iteration);
    let _ = r.step(Input::Stop(StopCause::User, None));
    let trace = quiet(r.ends(super::ended(AttemptEnd::Stopped(StopCause::User), None)));
    assert_eq!(trace, ["record-tree"], "nothing saved before the tree is known");
    let tree: Tree = [("src/a.rs".to_string(), "h".to_string())].into();
    let trace = quiet(r.step(Input::TreeRecorded(Some(tree.clone()))));
    assert_eq!(trace, ["save", "attempt_interrupted", "run_ended", "finish:Stopped(User)"]);
    assert_eq!(r.run.cp.git.as_ref().and_then(|g| g.stopped.clone()), Some(tree));
    assert!(r.run.cp.clean_stop);
}

#[test]
fn only_an_end_a_resume_may_follow_records_the_tree() {
    let r = git_run(CommitMode::Iteration);
    for end in [RunEnd::Stopped(StopCause::User), RunEnd::ForceExit, RunEnd::Failed("cap".into())] {
        assert!(records_tree(&r.run, &end), "{end:?}");
    }
    assert!(!records_tree(&r.run, &RunEnd::Completed), "a completed run is never resumed");
    let off = git_run(CommitMode::Off);
    assert!(!records_tree(&off.run, &RunEnd::Stopped(StopCause::User)), "nothing is committed");
    let no_git = Run::new(TWO_AGENTS);
    assert!(!records_tree(&no_git.run, &RunEnd::Stopped(StopCause::User)));
}

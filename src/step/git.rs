//! The git steps of an iteration (docs/git.md): whether its work is committed now
//! (`[git] commit`), the message and the key its trailers carry, and what the commit
//! step's report comes to: the run's git state, the journal's git events, and what
//! the iteration comes to (done, a hook's rejection as an agent failure with its
//! output in the note, or git failing in a way a person must look at).
//!
//! Exactly once: before committing, the checkpoint durably says "iteration K is done,
//! commit pending" with the message. A resume that finds that looks the trailers up
//! (`Ralph-Run:`, `Ralph-Iteration: K`) and only commits when no such commit exists;
//! the position advances in the same checkpoint write that clears the mark.

use crate::config::CommitMode;
use crate::events::RunEvent;
use crate::git::message::{self, MessageContext};
use crate::git::record::{CommitOutcome, CommitRecord, CommitReport, Pending};
use crate::recovery::policy::{self, Facts, Next, Stop};
use crate::recovery::{Category, Classification, Rule};
use crate::supervise::excerpt::Bounds;
use crate::supervise::note::Trouble;
use crate::workflow::done::Completion;

use super::carry::Answer;
use super::effect::{Effect, Fleet};
use super::input::AttemptReport;
use super::state::{Committing, Mode, RunState};
use super::{carry, control, ending, record, waits};

/// What the commit step leaves the iteration to.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Committed, found already committed, or nothing to commit.
    Done,
    /// A hook rejected the commit: the iteration failed, with this output.
    Rejected(String),
    /// git failed in a way a person must look at.
    Blocked(String),
}

/// The iteration reached its done signal: a fleet task's isolation check comes first
/// (nothing of an iteration that changed things outside its worktree is committed);
/// then its work is committed when the config says so, and the policy moves on.
pub(super) fn iteration_done(run: &mut RunState, completion: Completion, report: AttemptReport) {
    if run.setting.task.is_some() {
        let pos = &run.cp.progress.position;
        let key = message::iteration_key(&pos.phase_name, pos.iteration, pos.pass);
        run.effect(Effect::Fleet(Fleet::CheckIsolation { key }));
        run.mode = Mode::Checking(Box::new(Committing { completion, report, after_crash: false }));
        return;
    }
    commit_step(run, completion, report);
}

/// A fleet task's isolation check came back: a change outside the worktree blocks
/// the task, naming what was touched, with nothing of the iteration committed;
/// else the commit step.
pub(super) fn isolated(run: &mut RunState, breach: Option<String>) {
    let Mode::Checking(checking) = std::mem::take(&mut run.mode) else { return };
    let Committing { completion, report, .. } = *checking;
    match breach {
        Some(message) => carry::carry_out(run, Next::Stop(Stop::Blocked { message }), Answer::NoError),
        None => commit_step(run, completion, report),
    }
}

/// The iteration's work committed when the config says so, then the policy's next move.
fn commit_step(run: &mut RunState, completion: Completion, report: AttemptReport) {
    let final_message = report.output.final_message.clone().unwrap_or_default();
    match pending(run, &completion, &final_message) {
        Some(pending) => {
            if let Some(git) = run.cp.git.as_mut() {
                git.pending = Some(pending.clone());
            }
            // From here a kill resumes into the trailer lookup, never into a rerun.
            run.save();
            run.effect(Effect::Commit { after_crash: false });
            run.mode = Mode::Committing(Box::new(Committing { completion, report, after_crash: false }));
        }
        None => after_commit(run, Step::Done, completion, &report, false),
    }
}

/// The commit the iteration's work gets now, if any: every iteration with
/// `commit = "iteration"`, the last one of a phase with `"phase"`, none with `"off"`
/// or without git features.
pub(crate) fn pending(run: &RunState, completion: &Completion, final_message: &str) -> Option<Pending> {
    if !run.setting.git || run.cp.git.is_none() {
        return None;
    }
    let config = &run.setting.loaded.config.git;
    let commit_now = match config.commit {
        CommitMode::Off => false,
        CommitMode::Iteration => true,
        CommitMode::Phase => {
            let mut progress = run.cp.progress.clone();
            let (phases, repeat) = (&run.setting.loaded.phases, run.setting.loaded.repeat);
            !matches!(policy::on_success(&mut progress, phases, repeat, completion.clone()), Next::Iteration)
        }
    };
    if !commit_now {
        return None;
    }
    let pos = &run.cp.progress.position;
    let key = message::iteration_key(&pos.phase_name, pos.iteration, pos.pass);
    let body = Bounds { lines: config.body_lines as usize, chars: config.body_chars as usize };
    let summary = message::summarize(final_message, body);
    let context = MessageContext {
        phase: &pos.phase_name,
        iteration: pos.iteration,
        run_id: &run.cp.run_id,
        key: &key,
        summary: &summary,
        title_chars: config.title_chars as usize,
        task: run.setting.task.as_deref(),
    };
    let text = message::render(&config.message, &context);
    Some(Pending { key, message: text, goal: *completion == Completion::Goal })
}

/// What the commit step did: the stale locks it removed, the agent's own commits, the
/// files it left out, and its result, journaled and recorded in the run's git state
/// in that order; then what the iteration comes to.
pub(super) fn committed(run: &mut RunState, report: CommitReport) {
    let Mode::Committing(committing) = std::mem::take(&mut run.mode) else { return };
    let Committing { completion, report: attempt, after_crash } = *committing;
    let Some(pending) = run.cp.git.as_ref().and_then(|g| g.pending.clone()) else { return };
    let step = apply(run, report, &pending.key);
    if !matches!(step, Step::Blocked(_)) {
        if let Some(git) = run.cp.git.as_mut() {
            git.pending = None;
        }
        run.touched = Default::default();
    }
    if step == Step::Done && after_crash {
        run.carried += 1;
    }
    after_commit(run, step, completion, &attempt, after_crash);
}

/// Journals and records what the commit step did; returns what it comes to.
fn apply(run: &mut RunState, report: CommitReport, key: &str) -> Step {
    for lock in report.stale_locks {
        run.emit(RunEvent::GitStaleLockRemoved { path: lock.path.display().to_string(), why: lock.why });
    }
    if let Some(moved) = report.agent_moved {
        let count = u32::try_from(moved.commits.len()).unwrap_or(u32::MAX);
        let (from, to, commits) = (moved.from, moved.to, moved.commits);
        if let Some(git) = run.cp.git.as_mut() {
            git.head = Some(to.clone());
            git.agent_commits += count;
        }
        run.emit(RunEvent::GitAgentCommitted { key: key.to_string(), from, to, commits });
    }
    for (path, why) in report.left_out {
        if why.held_for_the_run()
            && let Some(git) = run.cp.git.as_mut()
        {
            git.hold(&path);
        }
        let (reason, detail) = (why.key().to_string(), why.describe());
        run.emit(RunEvent::GitLeftOut { key: key.to_string(), path, reason, detail });
    }
    // What held files hold now: a later change of one is named once more.
    if let Some(git) = run.cp.git.as_mut() {
        git.held_content.extend(report.seen);
    }
    match report.outcome {
        CommitOutcome::Found(record) => {
            record_commit(run, record, true);
            Step::Done
        }
        CommitOutcome::Committed(record) => {
            record_commit(run, record, false);
            Step::Done
        }
        CommitOutcome::Nothing => {
            run.emit(RunEvent::GitNothingToCommit { key: key.to_string() });
            Step::Done
        }
        CommitOutcome::Rejected(output) => {
            let shown = record::tail_chars(&output, 4000);
            run.emit(RunEvent::GitCommitRejected { key: key.to_string(), output: shown });
            Step::Rejected(output)
        }
        CommitOutcome::Failed(error) => {
            let message = format!("git: cannot commit {key}: {error}");
            run.emit(RunEvent::GitError { key: key.to_string(), error });
            Step::Blocked(message)
        }
    }
}

fn record_commit(run: &mut RunState, record: CommitRecord, found_on_resume: bool) {
    let CommitRecord { hash, key, files, insertions, deletions } = record.clone();
    run.emit(RunEvent::GitCommit { hash, key, files, insertions, deletions, found_on_resume });
    if let Some(git) = run.cp.git.as_mut() {
        git.record(record);
    }
}

/// What the commit step leaves the iteration to: the policy's next step after a
/// success, the rejected commit's failure, or a stop. What the control socket said
/// ends the run (`ralph mcp` crashing too often, the agent's cancel) takes effect
/// here, once the finished iteration is kept: the position moves past it first,
/// unless the run is over anyway.
fn after_commit(run: &mut RunState, step: Step, completion: Completion, attempt: &AttemptReport, after_crash: bool) {
    let (next, answer) = match step {
        Step::Done => {
            if !after_crash {
                waits::probe_in_background(run);
            }
            let (phases, repeat) = (&run.setting.loaded.phases, run.setting.loaded.repeat);
            (policy::on_success(&mut run.cp.progress, phases, repeat, completion), Answer::NoError)
        }
        Step::Rejected(output) => (commit_rejected(run, attempt, &output), Answer::Failure),
        Step::Blocked(message) => (Next::Stop(Stop::Blocked { message }), Answer::NoError),
    };
    if matches!(next, Next::Stop(_) | Next::Finished { .. }) {
        return carry::carry_out(run, next, answer);
    }
    let Some(stop) = control::control_stop(run) else { return carry::carry_out(run, next, answer) };
    if matches!(next, Next::Iteration | Next::Phase { .. }) {
        carry::carry_out(run, next, answer);
    }
    ending::stop(run, stop);
}

/// A hook rejected the commit: an `agent` failure of the iteration, budgeted like
/// any other, with the hook's output in the note so the agent can fix it.
fn commit_rejected(run: &mut RunState, attempt: &AttemptReport, output: &str) -> Next {
    let agent = run.current_agent();
    let failure = Classification::new(
        Category::Agent,
        Rule::CommitRejected,
        "a git hook rejected the commit of the iteration's work".to_string(),
    );
    record::record(run, &agent, &failure, attempt);
    let session = attempt.output.session.clone();
    let facts = Facts { session, rate_limit_reset: None, now: run.now.unix(), jitter: 0.5 };
    let next = record::on_failure(run, &failure, facts);
    let what = format!(
        "Your work is not committed: the repository's git hook rejected the commit with this output:\n\n{}\n\nFix what it reports, then end with the done signal again.",
        record::tail_chars(output, 3000)
    );
    run.cp.progress.recovery_note = Some(record::note_for(run, Trouble::Other(what), None));
    next
}

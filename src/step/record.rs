//! What a run records of an attempt, and the words it leaves the next one: a failure
//! (journaled once the checkpoint holding it is saved, kept as the last error, with
//! the evidence a person reads first), the policy asked about it, the judge's and
//! the detectors' notes, the recovery note, a tool call as the checkpoint names it.
//! The floor under every transition of the step: it decides nothing about where the
//! run goes.

use super::trouble;
use crate::config::Phase;
use crate::events::RunEvent;
use crate::recovery::policy::{self, Facts, Limits, Next};
use crate::recovery::{Category, Classification, Rule, spawn};
use crate::secrets::redact;
use crate::state::checkpoint::{LastError, ToolCall};
use crate::supervise::Detector;
use crate::supervise::completion::Why;
use crate::supervise::note::{self, LastTool, NoteContext, ToolState, Trouble};
use crate::workflow::Progress;
use crate::workflow::done::SignOff;

use super::input::{AttemptReport, SpawnError, Versions};
use super::state::RunState;

/// How a failed start is classified: ralph's own checks before exec (the binary not
/// on PATH) carry no errno and need a person; the kernel's errors are
/// `recovery::spawn`'s.
pub(crate) fn spawn_failure(agent: &str, error: &SpawnError) -> Classification {
    match error.errno {
        None if error.not_found => {
            Classification::new(Category::UserConfig, Rule::LaunchImpossible, error.message.clone())
        }
        errno => spawn::classify(agent, &error.program, errno, &error.message),
    }
}

/// The message of a refused argument, with the installed version and the one ralph
/// was tested with.
pub(crate) fn with_versions(reason: &str, versions: Option<&Versions>) -> String {
    let Some(Versions { kind, installed, tested }) = versions else {
        return format!("{reason}; check the agent's command and its version");
    };
    format!(
        "{reason}; the installed {kind} is version {installed}, ralph was tested with {tested}: \
         install {tested} or a ralph that supports {installed} (`ralph doctor` compares them)"
    )
}

/// Records what the judge made of a sign-off it did not simply accept: the journal
/// gets the rule and the agent's words, the terminal a line, the summary the last
/// rejection.
pub(super) fn signoff(run: &mut RunState, verdict: SignOff, why: &Why) {
    let attempt = run.cp.progress.counters.attempts;
    run.emit(RunEvent::Signoff { attempt, verdict, rule: why.rule, words: why.words.clone() });
}

/// Records one of ralph's interventions (journal, counters, terminal).
pub(super) fn intervene(run: &mut RunState, detector: Detector, evidence: &str) {
    run.emit(RunEvent::Intervention { detector, evidence: evidence.to_string() });
}

/// The policy's decision on a recorded failure.
pub(super) fn on_failure(run: &mut RunState, failure: &Classification, facts: Facts) -> Next {
    let config = &run.setting.loaded.config;
    let limits = Limits { retry: &config.retry, max_cycles: config.general.max_cycles, tz: &run.setting.tz };
    policy::on_failure(&mut run.cp.progress, &run.setting.loaded.phases, limits, failure, facts)
}

/// Journals the failure (once the checkpoint holding it is saved) and keeps it as
/// the run's last error.
pub(super) fn record(run: &mut RunState, agent: &str, failure: &Classification, report: &AttemptReport) {
    let attempt = run.cp.progress.counters.attempts;
    let output = &report.output;
    let tail = tail_chars(&evidence(output.final_message.as_deref(), output.result_is_error, &output.text_tail), 2000);
    run.emit_after_save(RunEvent::AttemptFailed {
        attempt,
        agent: agent.to_string(),
        category: failure.category,
        rule: failure.rule,
        reason: failure.reason.clone(),
        session: output.session.clone(),
        evidence: tail.clone(),
        duration_ms: report.duration.as_millis() as u64,
        usage: output.usage.clone(),
    });
    if failure.category == Category::Ambiguous {
        tracing::warn!("flagged for review: attempt {attempt} failed in a way ralph cannot explain");
    }
    run.cp.last_error = Some(LastError {
        classification: failure.clone(),
        agent: agent.to_string(),
        text_tail: tail,
        at: run.now.wall,
        log: run.last_log.clone(),
    });
}

/// The evidence a person reads first: the output's tail, or, when the agent reported
/// its error as a structured result and printed nothing else, that result.
pub(crate) fn evidence(final_message: Option<&str>, result_is_error: bool, text_tail: &str) -> String {
    match (final_message, result_is_error) {
        (Some(message), true) if text_tail.trim().is_empty() => redact(message),
        _ => text_tail.to_string(),
    }
}

/// The self-contained recovery note for the next attempt, with the agent's own
/// `save_checkpoint` of this iteration (verified progress).
pub(super) fn note_for(run: &RunState, trouble: Trouble, last_tool: Option<LastTool>) -> String {
    let (progress, phase) = (&run.cp.progress, run.phase());
    let mut text = recovery_note(progress, &run.setting.loaded.phases, &run.setting.goal, trouble, last_tool);
    let saved = run.cp.agent_checkpoint.as_ref();
    if let Some(saved) = saved.filter(|c| c.phase == phase.name && c.iteration == progress.position.iteration) {
        text.push_str(&note::saved_progress(&saved.summary, &saved.steps_done, &saved.next_steps));
    }
    text
}

/// The recovery note of the iteration `progress` stands in, without the agent's own
/// checkpoint; also for an attempt a crash cut short.
pub(crate) fn recovery_note(
    progress: &Progress,
    phases: &[Phase],
    goal: &str,
    trouble: Trouble,
    last_tool: Option<LastTool>,
) -> String {
    let phase = &phases[progress.position.phase];
    note::note(&NoteContext {
        goal,
        phase: &phase.name,
        iteration: progress.position.iteration,
        iterations: phase.iterations,
        done_summary: &trouble::done_summary(progress, phases),
        what_went_wrong: trouble,
        last_tool,
    })
}

/// A number in [0, 1) for the backoff's jitter. The clock's nanoseconds are random
/// enough to keep many runs hit by one outage from retrying in lockstep.
pub(crate) fn jitter(now: jiff::Timestamp) -> f64 {
    f64::from(now.subsec_nanosecond().unsigned_abs()) / 1e9
}

/// The last `max` characters of `text`.
pub(crate) fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

/// A tool call as the checkpoint keeps it (its input redacted).
pub(super) fn tool_call(tool: &LastTool) -> ToolCall {
    ToolCall {
        name: tool.name.clone(),
        input: redact(&tool.input_summary),
        finished: tool.state == ToolState::Finished,
    }
}

/// The tool call recorded in the checkpoint, as the note names it.
pub(super) fn in_flight_tool(tool: &ToolCall) -> LastTool {
    LastTool {
        name: tool.name.clone(),
        input_summary: tool.input.clone(),
        state: if tool.finished { ToolState::Finished } else { ToolState::StartedNoResult },
    }
}

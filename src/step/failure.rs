//! A failed attempt, on its way to a decision: classified (with the agent's own
//! `report_interruption` as evidence), checked against the network (a failure while
//! the providers do not answer is the outage's), an argument the CLI refused named
//! with its versions, then recorded (journal, last error), its sign-off and
//! interventions noted, the policy's decision taken with its continue-storm check,
//! and the self-contained recovery note left for the next attempt. A launch that
//! failed before the agent ran is classified by `recovery::spawn`.

use super::trouble;
use crate::config::{AgentKind, DoneSignal};
use crate::recovery::classify::{self, EndedBy, Exit};
use crate::recovery::policy::{self, Facts, Stop};
use crate::recovery::probe::{self, ProbeResult};
use crate::recovery::{Category, Rule, reset};
use crate::supervise::Detector;
use crate::supervise::completion::Claim;
use crate::supervise::excerpt::INTERRUPTION_MARKER;
use crate::workflow::done::SignOff;

use super::carry::Answer;
use super::effect::Effect;
use super::input::{AttemptReport, SpawnError, Versions};
use super::record::{self, intervene, jitter, note_for, on_failure, signoff, spawn_failure, with_versions};
use super::state::{Failed, Mode, Probe, RunState};
use super::{carry, ending, waits};

/// The attempt ended without its done signal (`missing` says which).
pub(super) fn attempt_failed(
    run: &mut RunState,
    report: AttemptReport,
    exit: Exit,
    ended_by: EndedBy,
    claim: Claim,
    missing: String,
) {
    let agent = run.current_agent();
    let agent_cfg = run.setting.loaded.config.agents.get(&agent);
    let ended_by = seen_by(ended_by, &report);
    let output = &report.output;
    // `report_interruption`: the agent's own reason is evidence like its output.
    let interruption = run.control.interruption.take();
    let text_tail = match &interruption {
        Some(reason) => format!("{}\n{INTERRUPTION_MARKER} {reason}\n", output.text_tail),
        None => output.text_tail.clone(),
    };
    let failure = classify::classify(&classify::Report {
        kind: agent_cfg.map_or(AgentKind::Command, |a| a.kind),
        exit,
        ended_by,
        events: &output.events,
        text_tail: &text_tail,
        stderr_tail: &output.stderr_tail,
        missing_done: &missing,
        errors: agent_cfg.map_or(&[], |a| &a.errors),
        now: run.now.unix(),
        interruption: interruption.as_deref(),
    });
    tracing::debug!(
        agent, ?exit, ?ended_by, missing, events = output.events.len(), tail_bytes = output.text_tail.len(),
        category = failure.category.into_str(), rule = %failure.rule, reason = %failure.reason,
        fresh_session = failure.fresh_session, "classified the failed attempt"
    );
    let failed = Box::new(Failed { report, claim, failure });
    // A failure that is not a person's to fix is checked against the network first.
    if !probe::probe_after(&failed.failure) {
        return classified(run, failed);
    }
    if let Some(cause) = run.stopping {
        return ending::stopped(run, cause, None);
    }
    let endpoints = waits::probe_endpoints(run);
    if endpoints.is_empty() {
        // Nothing to judge by: a run never pauses on a guess.
        return classified(run, failed);
    }
    run.effect(Effect::Probe(endpoints.clone()));
    run.mode = Mode::Probing(Probe::Failure { failed, endpoints });
}

/// Who ended the attempt, as the classifier judges it: a detector that saw why it
/// must end decides, also when the agent exited before ralph could end it (its
/// output read after its exit: a loop followed by a quick exit 0 is the loop).
pub(crate) fn seen_by(ended_by: EndedBy, report: &AttemptReport) -> EndedBy {
    match (&report.intervention, ended_by) {
        (Some(found), EndedBy::Agent) => found.ended_by(),
        _ => ended_by,
    }
}

/// The probe after a failure answered: when no provider did, the failure was the
/// outage's.
pub(super) fn probed(run: &mut RunState, mut failed: Box<Failed>, result: ProbeResult, endpoints: &[String]) {
    match result {
        ProbeResult::Offline { last_error } => failed.failure = probe::offline_failure(&failed.failure, &last_error),
        ProbeResult::Online => waits::answered(run, endpoints),
    }
    classified(run, failed);
}

/// The failure is what it is: a CLI that refused an argument ralph passes was most
/// likely updated, and its version is asked for first.
fn classified(run: &mut RunState, failed: Box<Failed>) {
    if failed.failure.rule == Rule::CliRejectedArgument {
        run.effect(Effect::AskVersions(run.current_agent()));
        run.mode = Mode::Versions(failed);
        return;
    }
    decided(run, failed);
}

/// The versions came: the message names them.
pub(super) fn versions(run: &mut RunState, versions: Option<Versions>) {
    let Mode::Versions(mut failed) = std::mem::take(&mut run.mode) else { return };
    failed.failure.reason = with_versions(&failed.failure.reason, versions.as_ref());
    decided(run, failed);
}

/// Records the failure, notes what the judge and the detectors saw, asks the policy
/// what next, and leaves the recovery note for the next attempt.
fn decided(run: &mut RunState, failed: Box<Failed>) {
    let Failed { report, claim, failure } = *failed;
    let agent = run.current_agent();
    record::record(run, &agent, &failure, &report);
    if let Some(found) = &report.intervention {
        intervene(run, found.detector, &found.evidence);
    }
    if failure.rule == Rule::NoDoneSignal {
        let phase = run.phase();
        match &claim {
            // Only where a tag decides: a file phase's tag is no sign-off.
            Claim::Denied(why) if phase.done == DoneSignal::Tag || phase.until_complete => {
                signoff(run, SignOff::Rejected, why);
            }
            Claim::ReadyToContinue(words) => {
                intervene(run, Detector::ReadyToContinue, &format!("said \"{words}\" and stopped"));
            }
            _ => {}
        }
    }
    let output = &report.output;
    let now = run.now.wall;
    let facts = Facts {
        session: output.session.clone(),
        rate_limit_reset: failure
            .reset_at
            .or_else(|| reset::reset_time(&output.events, &output.text_tail, now).map(|r| r.at.as_second())),
        now: now.as_second(),
        jitter: jitter(now),
    };
    tracing::debug!(?facts, "policy inputs");
    let next = on_failure(run, &failure, facts);
    let (progress, retry) = (&mut run.cp.progress, &run.setting.loaded.config.retry);
    tracing::debug!(?next, counters = ?progress.counters, position = ?progress.position, "policy decision");
    if let Some(evidence) = policy::continue_storm(progress, retry, &failure, &next, now.as_second()) {
        intervene(run, Detector::ContinueStorm, &evidence);
    }
    // An outage explains the ending better than the detector that saw it.
    let intervention = report.intervention.as_ref().filter(|_| failure.rule != Rule::Offline);
    let trouble = trouble::trouble(&failure, intervention, &claim);
    run.cp.progress.recovery_note = Some(note_for(run, trouble, report.last_tool.clone()));
    carry::carry_out(run, next, Answer::Failure);
}

/// The agent could not be started. A launch that can never succeed as configured (a
/// missing or non-executable binary, a prompt too long for an argument) needs a
/// person (exit 3); anything else (no memory, too many processes, a binary being
/// replaced by its own auto-update) is retried like an outage.
pub(super) fn spawn_failed(run: &mut RunState, agent: &str, error: &SpawnError) {
    run.cp.in_flight = None;
    let failure = spawn_failure(agent, error);
    record::record(run, agent, &failure, &AttemptReport::not_started(error.clone()));
    if failure.category == Category::UserConfig {
        return ending::failed(run, Stop::Blocked { message: failure.reason });
    }
    let now = run.now.wall;
    let facts = Facts { session: None, rate_limit_reset: None, now: now.as_second(), jitter: jitter(now) };
    let next = on_failure(run, &failure, facts);
    carry::carry_out(run, next, Answer::Failure);
}

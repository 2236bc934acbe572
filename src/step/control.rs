//! What came through the control socket and what it changes: `ralph stop` (the run
//! stops after the iteration, or at once while nothing of it runs), the agent's MCP
//! tools (progress, a verified checkpoint, its interruption, its completion, its
//! cancel) kept as evidence for the attempt's end, a lost `ralph mcp` counted
//! against `[retry] mcp_restarts`, and the heartbeat they all are; and what the
//! socket answers about the run ([`live`]).

use crate::control::{Inbound, Live};
use crate::events::RunEvent;
use crate::recovery::policy::{Cap, Stop};
use crate::signal::StopCause;
use crate::state::checkpoint::{AgentCheckpoint, Status};

use super::effect::Command;
use super::state::{Mode, RunState};
use super::waits;

/// Applies the socket's messages.
pub(super) fn inbox(run: &mut RunState, inbox: Vec<Inbound>) {
    let mut heartbeat = false;
    for msg in inbox {
        heartbeat |= !matches!(msg, Inbound::Stop { .. });
        apply(run, msg);
    }
    match &run.mode {
        // Any message of the agent is a sign of life.
        Mode::Attempt(_) if heartbeat => run.tell(Command::Alive),
        // `ralph stop`: nothing of the iteration runs while ralph waits, so it stops here.
        Mode::Waiting(_) | Mode::Probing(_) if run.control.stop_after.is_some() => {
            waits::interrupted(run, StopCause::User);
        }
        _ => {}
    }
}

/// One message.
fn apply(run: &mut RunState, msg: Inbound) {
    let agent_running = matches!(&run.mode, Mode::Attempt(r) if r.agent_running);
    match msg {
        Inbound::Stop { .. } => {
            if run.control.stop_after.is_none() {
                run.control.stop_after = Some(run.position_key());
                run.emit(RunEvent::StopAfterIteration {});
            }
        }
        // The socket answers status requests itself.
        Inbound::Hello { .. } | Inbound::Bye { .. } | Inbound::Status {} | Inbound::TaskStatus { .. } => {}
        // Only a server lost while its agent still runs is a crash: the agent's own
        // exit (and ralph's cleanup of its group) ends it too.
        Inbound::McpLost { attempt } if agent_running && attempt == run.cp.progress.counters.attempts => {
            let counters = &mut run.cp.progress.counters;
            counters.mcp_restarts += 1;
            let (restarts, cap) = (counters.mcp_restarts, run.setting.loaded.config.retry.mcp_restarts);
            if restarts > cap {
                run.control.restarts_exhausted = Some(restarts);
            }
            run.emit(RunEvent::McpLost { attempt, restarts, cap });
        }
        Inbound::McpLost { .. } => {}
        Inbound::Progress { attempt, message } => run.emit(RunEvent::AgentProgress { attempt, message }),
        Inbound::Checkpoint { attempt, summary, files_touched, steps_done, next_steps } => {
            let pos = &run.cp.progress.position;
            run.cp.agent_checkpoint = Some(AgentCheckpoint {
                phase: pos.phase_name.clone(),
                iteration: pos.iteration,
                summary: summary.clone(),
                steps_done: steps_done.clone(),
                next_steps: next_steps.clone(),
            });
            run.emit(RunEvent::AgentCheckpoint { attempt, summary, files_touched, steps_done, next_steps });
            run.save();
        }
        Inbound::Interruption { attempt, reason } => {
            run.control.interruption = Some(reason.clone());
            run.emit(RunEvent::AgentInterruption { attempt, reason });
            // The agent gave up: its attempt ends now and recovery starts.
            let running = matches!(&run.mode, Mode::Attempt(r) if r.agent_running && !r.stopping);
            if running && attempt == run.cp.progress.counters.attempts {
                run.tell(Command::Interrupted);
            }
        }
        Inbound::Complete { attempt, summary, evidence, goal_complete } => {
            run.control.declared = Some((attempt, goal_complete));
            run.emit(RunEvent::CompletionDeclared { attempt, summary, evidence, goal_complete });
        }
        Inbound::Cancel { attempt, reason } => {
            run.control.cancelled = Some(reason.clone());
            run.emit(RunEvent::TaskCancelled { attempt, reason });
        }
    }
}

/// What the agent said through the control socket that ends the run once its attempt
/// ended: `ralph mcp` crashed too often in the iteration, or the agent cancelled the
/// task (its judgement that no one but a person can go on). An iteration the attempt
/// finished is kept and committed first (`step::git`).
pub(crate) fn control_stop(run: &mut RunState) -> Option<Stop> {
    if let Some(used) = run.control.restarts_exhausted.take() {
        let cap = run.setting.loaded.config.retry.mcp_restarts;
        let detail = format!("ralph mcp crashed {used} times in this iteration ([retry] mcp_restarts = {cap})");
        return Some(Cap::McpRestarts.stop(detail));
    }
    let reason = run.control.cancelled.take()?;
    Some(Stop::Blocked { message: format!("the agent cancelled the task: {reason}") })
}

/// What `ralph status` and the agent's `get_task_status` see of the run now.
pub(crate) fn live(run: &RunState, live: &mut Live) {
    let cp = &run.cp;
    let (pos, phase) = (&cp.progress.position, run.phase());
    live.phase = pos.phase_name.clone();
    live.iteration = pos.iteration;
    live.iterations = phase.iterations;
    live.agent = run.current_agent();
    live.status = cp.status.into_str().to_string();
    live.attempt_started_at = cp.in_flight.as_ref().map(|f| f.started_at.as_second());
    let waiting = cp.status == Status::Waiting;
    live.waiting_for = waiting.then(|| match (cp.progress.rate_limit_until, cp.progress.offline_since) {
        (Some(_), _) => "the rate limit's reset".to_string(),
        (None, Some(_)) => "the providers to come back online".to_string(),
        (None, None) => "a backoff before the next attempt".to_string(),
    });
    // `ralph status` shows the end in local time; the offline pause has none.
    live.waiting_until = waiting.then(|| run.control.wait_until.or(cp.progress.rate_limit_until)).flatten();
    live.stop_requested = run.control.stop_after.is_some();
    live.recovery_note = cp.progress.recovery_note.clone();
    live.last_checkpoint = (cp.agent_checkpoint.as_ref())
        .filter(|c| c.phase == pos.phase_name && c.iteration == pos.iteration)
        .map(|c| c.summary.clone());
    let max_cost = run.setting.loaded.config.general.max_cost_usd;
    live.budget = max_cost.map(|max| format!("${:.2} of ${max:.2} spent", cp.usage.cost_usd));
}

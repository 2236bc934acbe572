//! The line a person reads for each run event: one match over
//! [`RunEvent`], so the terminal and the journal can never tell different stories.
//! `None` for events that have no line of their own (the spinner or the waiting
//! line shows them, or the summary does).

use crate::events::{FalloverWhy, RunEvent};
use crate::workflow::advance::Verdict;

pub fn line(event: &RunEvent) -> Option<String> {
    Some(match event {
        RunEvent::AttemptSucceeded { phase, iteration, goal, review, .. } => {
            let why = match (goal, review) {
                (true, true) => " (nothing left to fix)",
                (true, false) => " (goal reached)",
                _ => "",
            };
            format!("{phase} iteration {iteration} done{why}")
        }
        RunEvent::AttemptFailed { attempt, category, rule, reason, .. } => {
            format!("attempt {attempt} failed ({}, {rule}): {reason}", category.as_str())
        }
        RunEvent::Intervention { detector, evidence } => format!("ralph stepped in ({detector}): {evidence}"),
        RunEvent::PhaseDone { phase } => format!("phase {phase} done"),
        RunEvent::ReviewVerdict { pass, passes, clean } => {
            format!("review: {}", Verdict { pass: *pass, passes: *passes, clean: *clean }.describe())
        }
        RunEvent::PassStarted { pass, passes } => format!("pass {pass} of {passes}: back to the review"),
        RunEvent::PassesEnded { passes_run, passes, clean: false, .. } => {
            let v = Verdict { pass: *passes_run, passes: *passes, clean: false };
            format!("review: {}; going on", v.describe())
        }
        RunEvent::Fallover { from, to, cycle, why, new_cycle } => {
            let why = match why {
                FalloverWhy::RecoveryAttempts => format!("recovery-attempt exhausted for agent {from}"),
                FalloverWhy::RateLimit => format!("agent {from} is rate-limited"),
            };
            let cycle = if *new_cycle { format!(" (cycle {cycle})") } else { String::new() };
            format!("{why}: falling over to {to}{cycle}")
        }
        RunEvent::Fallback { from, to, .. } => format!("the rate limit of {to} has reset: back from {from} to {to}"),
        RunEvent::Offline { since, .. } => format!("Offline — paused (since {})", local_clock(*since)),
        RunEvent::Online {} => "Recovery resumed after offline".to_string(),
        RunEvent::StopRequested {} => "ralph stop: stopping after this iteration".to_string(),
        RunEvent::AgentProgress { message, .. } => format!("agent: {message}"),
        RunEvent::AgentCheckpoint { summary, .. } => format!("agent saved a checkpoint: {summary}"),
        RunEvent::AgentInterruption { reason, .. } => format!("agent gave up: {reason}"),
        RunEvent::CompletionDeclared { summary, .. } => format!("agent declared the work complete: {summary}"),
        RunEvent::TaskCancelled { reason, .. } => format!("agent cancelled the task: {reason}"),
        RunEvent::McpLost { restarts, cap, .. } => {
            format!("ralph mcp crashed while the agent ran ({restarts} of {cap} restarts)")
        }
        RunEvent::RunStarted { .. }
        | RunEvent::RunResumed { .. }
        | RunEvent::RunError { .. }
        | RunEvent::RunEnded { .. }
        | RunEvent::AttemptStarted { .. }
        | RunEvent::IterationStarted { .. }
        | RunEvent::Retry { .. }
        | RunEvent::RateLimitWait { .. }
        | RunEvent::CapReached { .. }
        | RunEvent::PassesEnded { clean: true, .. } => return None,
    })
}

/// `HH:MM:SS` in the local zone for a unix second.
fn local_clock(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .map(|t| t.to_zoned_datetime(jiff::tz::TimeZone::system()).strftime("%H:%M:%S").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::Category;

    #[test]
    fn each_event_reads_as_before() {
        let failed = RunEvent::AttemptFailed {
            attempt: 3,
            agent: "a".into(),
            category: Category::Agent,
            rule: "stall".into(),
            reason: "the agent stalled".into(),
            session: None,
            evidence: String::new(),
            duration_ms: 1,
            usage: Default::default(),
        };
        assert_eq!(line(&failed).as_deref(), Some("attempt 3 failed (agent, stall): the agent stalled"));
        let fallover = RunEvent::Fallover {
            from: "a".into(),
            to: "b".into(),
            cycle: 2,
            why: FalloverWhy::RecoveryAttempts,
            new_cycle: true,
        };
        assert_eq!(
            line(&fallover).as_deref(),
            Some("recovery-attempt exhausted for agent a: falling over to b (cycle 2)")
        );
        assert_eq!(line(&RunEvent::Retry { delay_ms: 5, resume_session: None }), None);
    }
}

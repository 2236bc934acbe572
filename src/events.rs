//! [`RunEvent`]: one typed stream of everything that happens in a run. The dispatcher
//! emits events; subscribers render them: the journal (`events.jsonl`, this enum's one
//! serialisation, `"kind"` the variant's snake_case name), the terminal
//! ([`crate::report::lines`], one match), the tracing log, and the counters that
//! derive from events (the session summary, interventions). Later subscribers (the
//! watchdog's registry, notifications, MCP status) plug in here.
//!
//! Every variant is documented in `docs/operations.md` ("The journal"); a test fails
//! when one is added without its entry. Fields are only ever added, never renamed, so
//! old journals still read.

use serde::Serialize;

use crate::recovery::Category;
use crate::recovery::policy::Cap;
use crate::signal::StopCause;
use crate::state::checkpoint::{Status, Usage};

/// Why the chain moved to another agent, as the journal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FalloverWhy {
    /// The agent used its `agent_attempts` (`recovery-attempt exhausted`).
    RecoveryAttempts,
    /// The agent is rate-limited and `on_rate_limit = "fallover"`.
    RateLimit,
}

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEvent {
    RunStarted {
        run_id: String,
        pid: u32,
        /// `--from PHASE`, when given.
        from: Option<String>,
        phase: String,
        pass: u32,
    },
    RunResumed {
        run_id: String,
        pid: u32,
        from: Option<String>,
        phase: String,
        pass: u32,
    },
    /// ralph's own failure ended the run (exit 4); the checkpoint keeps the last
    /// valid state.
    RunError {
        error: String,
    },
    RunEnded {
        status: Status,
        reason: Option<String>,
        stop_cause: Option<StopCause>,
    },
    AttemptStarted {
        attempt: u32,
        phase: String,
        /// 1-based position of the phase in the workflow, and the number of phases.
        phase_number: usize,
        phase_count: usize,
        iteration: u32,
        /// The phase's iteration count (or cap, with `until = "complete"`).
        iterations: u32,
        /// The pass through the repeating review/fix group (1 outside it).
        pass: u32,
        /// The group's passes at most, inside the group.
        passes: Option<u32>,
        agent: String,
        cycle: u32,
        resume_session: Option<String>,
    },
    AttemptSucceeded {
        attempt: u32,
        agent: String,
        phase: String,
        iteration: u32,
        /// The goal signal (`until = "complete"` is satisfied), not only the done signal.
        goal: bool,
        /// The phase is the review of a repeating group (the goal tag then means
        /// "nothing left to fix").
        review: bool,
        duration_ms: u64,
        session: Option<String>,
        usage: Usage,
    },
    AttemptFailed {
        attempt: u32,
        agent: String,
        category: Category,
        rule: String,
        reason: String,
        session: Option<String>,
        /// The end of the agent's output, redacted.
        evidence: String,
        duration_ms: u64,
        usage: Usage,
    },
    /// One of ralph's detectors stepped in (stall, loop, tool text, storm, nudge…).
    Intervention {
        detector: String,
        evidence: String,
    },
    IterationStarted {
        phase: String,
        iteration: u32,
    },
    PhaseDone {
        phase: String,
    },
    /// A review of the repeating group ended: clean, or issues for the fix.
    ReviewVerdict {
        pass: u32,
        passes: u32,
        clean: bool,
    },
    /// Back to the review for the next pass.
    PassStarted {
        pass: u32,
        passes: u32,
    },
    /// The repeating group was left; `why` is `clean` or `passes_used`.
    PassesEnded {
        passes_run: u32,
        passes: u32,
        clean: bool,
        why: String,
    },
    /// The same agent is tried again after `delay_ms`.
    Retry {
        delay_ms: u64,
        resume_session: Option<String>,
    },
    Fallover {
        from: String,
        to: String,
        cycle: u32,
        why: FalloverWhy,
        /// The chain wrapped around: a new cycle began.
        new_cycle: bool,
    },
    /// Back to an agent whose rate limit has reset.
    Fallback {
        from: String,
        to: String,
        why: String,
    },
    /// Waiting for a reported rate-limit reset (unix seconds).
    RateLimitWait {
        until: i64,
        reason: String,
    },
    /// The providers are unreachable: the run pauses (unix seconds).
    Offline {
        since: i64,
        endpoints: Vec<String>,
        error: String,
    },
    Online {},
    /// A cap or budget ran out; the run stops `failed`.
    CapReached {
        cap: Cap,
        message: String,
    },
    /// `ralph stop` asked the run to stop `paused` after the current iteration.
    StopRequested {},
    /// The agent's `report_progress` (MCP): a heartbeat with a message.
    AgentProgress {
        attempt: u32,
        message: String,
    },
    /// The agent's `save_checkpoint` (MCP): verified progress, used in later
    /// recovery notes.
    AgentCheckpoint {
        attempt: u32,
        summary: String,
        files_touched: Vec<String>,
        steps_done: Vec<String>,
        next_steps: Vec<String>,
    },
    /// The agent's `report_interruption` (MCP): it gives up on this attempt.
    AgentInterruption {
        attempt: u32,
        reason: String,
    },
    /// The agent's `declare_complete` (MCP), with its evidence.
    CompletionDeclared {
        attempt: u32,
        summary: String,
        evidence: String,
        goal_complete: bool,
    },
    /// The agent's `cancel_task` (MCP): the run stops `blocked`.
    TaskCancelled {
        attempt: u32,
        reason: String,
    },
    /// `ralph mcp` closed its session without shutting down while the agent ran:
    /// `restarts` of `cap` (`[retry] mcp_restarts`) used.
    McpLost {
        attempt: u32,
        restarts: u32,
        cap: u32,
    },
}

impl RunEvent {
    /// The journal's `"kind"` of this event.
    pub fn kind(&self) -> &'static str {
        match self {
            RunEvent::RunStarted { .. } => "run_started",
            RunEvent::RunResumed { .. } => "run_resumed",
            RunEvent::RunError { .. } => "run_error",
            RunEvent::RunEnded { .. } => "run_ended",
            RunEvent::AttemptStarted { .. } => "attempt_started",
            RunEvent::AttemptSucceeded { .. } => "attempt_succeeded",
            RunEvent::AttemptFailed { .. } => "attempt_failed",
            RunEvent::Intervention { .. } => "intervention",
            RunEvent::IterationStarted { .. } => "iteration_started",
            RunEvent::PhaseDone { .. } => "phase_done",
            RunEvent::ReviewVerdict { .. } => "review_verdict",
            RunEvent::PassStarted { .. } => "pass_started",
            RunEvent::PassesEnded { .. } => "passes_ended",
            RunEvent::Retry { .. } => "retry",
            RunEvent::Fallover { .. } => "fallover",
            RunEvent::Fallback { .. } => "fallback",
            RunEvent::RateLimitWait { .. } => "rate_limit_wait",
            RunEvent::Offline { .. } => "offline",
            RunEvent::Online {} => "online",
            RunEvent::CapReached { .. } => "cap_reached",
            RunEvent::StopRequested {} => "stop_requested",
            RunEvent::AgentProgress { .. } => "agent_progress",
            RunEvent::AgentCheckpoint { .. } => "agent_checkpoint",
            RunEvent::AgentInterruption { .. } => "agent_interruption",
            RunEvent::CompletionDeclared { .. } => "completion_declared",
            RunEvent::TaskCancelled { .. } => "task_cancelled",
            RunEvent::McpLost { .. } => "mcp_lost",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rel: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The variant names declared in this file's enum, in snake_case.
    fn declared_kinds() -> Vec<String> {
        let source = read("src/events.rs");
        let body = source.split("pub enum RunEvent {").nth(1).and_then(|rest| rest.split("\n}\n").next()).unwrap_or("");
        body.lines()
            .filter_map(|l| l.strip_prefix("    ").filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase())))
            .map(|l| {
                let name: String = l.chars().take_while(char::is_ascii_alphanumeric).collect();
                let mut snake = String::new();
                for (i, c) in name.chars().enumerate() {
                    if c.is_ascii_uppercase() && i > 0 {
                        snake.push('_');
                    }
                    snake.push(c.to_ascii_lowercase());
                }
                snake
            })
            .collect()
    }

    #[test]
    fn every_variant_is_documented_in_the_journal_schema() {
        let docs = read("docs/operations.md");
        let kinds = declared_kinds();
        assert!(kinds.len() >= 20, "{kinds:?}");
        let missing: Vec<_> = kinds.iter().filter(|k| !docs.contains(&format!("| `{k}` |"))).collect();
        assert!(missing.is_empty(), "journal kinds without a row in docs/operations.md: {missing:?}");
    }

    #[test]
    fn the_serialised_kind_is_the_kind_name() {
        let events = [
            RunEvent::Online {},
            RunEvent::PhaseDone { phase: "plan".into() },
            RunEvent::Fallover {
                from: "a".into(),
                to: "b".into(),
                cycle: 2,
                why: FalloverWhy::RecoveryAttempts,
                new_cycle: true,
            },
            RunEvent::CapReached { cap: Cap::MaxCycles, message: "max_cycles exhausted".into() },
        ];
        for e in events {
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["kind"], e.kind(), "{v}");
            assert!(declared_kinds().iter().any(|k| k == e.kind()));
        }
        let v = serde_json::to_value(RunEvent::Fallover {
            from: "a".into(),
            to: "b".into(),
            cycle: 2,
            why: FalloverWhy::RateLimit,
            new_cycle: false,
        })
        .unwrap();
        assert_eq!(v["why"], "rate_limit");
    }
}

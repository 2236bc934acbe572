//! The failure classifier: one ordered table of named rules from what an attempt
//! left behind to a [`Classification`]. Structured evidence (how the attempt ended,
//! the agent's own events) is matched before any text, and text is matched on
//! specific phrases, never on bare numbers.

use crate::agent::AgentEvent;
use crate::config::AgentKind;

use super::{Category, Classification};

/// How an attempt ended, as far as the process is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// Who ended the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// The agent exited on its own.
    Agent,
    /// ralph: no event for the stall timeout while no tool was running.
    Stall,
    /// ralph: one tool call ran past the tool timeout.
    ToolTimeout,
    /// ralph: the attempt ran past the attempt timeout.
    AttemptTimeout,
}

/// What the classifier looks at.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    pub kind: AgentKind,
    pub exit: Exit,
    pub ended_by: EndedBy,
    /// The attempt's last structured events.
    pub events: &'a [AgentEvent],
    /// The tail of stderr and of the non-event part of stdout.
    pub text_tail: &'a str,
    /// Why the done signal is missing, when the agent exited 0.
    pub missing_done: &'a str,
}

type Matcher = fn(&Report<'_>) -> Option<String>;

/// One named rule.
struct Rule {
    name: &'static str,
    category: Category,
    matches: Matcher,
}

/// The table, in order: first match wins.
const RULES: &[Rule] = &[
    Rule { name: "stall", category: Category::Agent, matches: stall },
    Rule { name: "tool_timeout", category: Category::Agent, matches: tool_timeout },
    Rule { name: "attempt_timeout", category: Category::Agent, matches: attempt_timeout },
    Rule { name: "auth_failed", category: Category::UserConfig, matches: auth_failed },
    Rule { name: "rate_limited", category: Category::Environmental, matches: rate_limited },
    Rule { name: "provider_overloaded", category: Category::Environmental, matches: provider_unavailable },
    Rule { name: "crashed", category: Category::Agent, matches: crashed },
    Rule { name: "exit_nonzero", category: Category::Agent, matches: exit_nonzero },
    Rule { name: "no_done_signal", category: Category::Agent, matches: no_done_signal },
];

/// Classifies a failed attempt. Every failure lands in exactly one category; one
/// that no rule explains is `ambiguous`.
pub fn classify(report: &Report<'_>) -> Classification {
    for rule in RULES {
        if let Some(reason) = (rule.matches)(report) {
            return Classification { category: rule.category, rule: rule.name.to_string(), reason };
        }
    }
    Classification {
        category: Category::Ambiguous,
        rule: "unexplained".to_string(),
        reason: "the attempt failed in a way ralph cannot explain".to_string(),
    }
}

fn stall(r: &Report<'_>) -> Option<String> {
    (r.ended_by == EndedBy::Stall).then(|| "the agent stalled (no output and no tool running)".into())
}

fn tool_timeout(r: &Report<'_>) -> Option<String> {
    (r.ended_by == EndedBy::ToolTimeout).then(|| "a tool call ran past [timeouts] tool".into())
}

fn attempt_timeout(r: &Report<'_>) -> Option<String> {
    (r.ended_by == EndedBy::AttemptTimeout).then(|| "the attempt ran past [timeouts] attempt".into())
}

fn api_status(r: &Report<'_>) -> Option<u16> {
    r.events.iter().rev().find_map(|e| match e {
        AgentEvent::Result { is_error: true, api_error_status, .. } => *api_error_status,
        _ => None,
    })
}

fn auth_failed(r: &Report<'_>) -> Option<String> {
    match api_status(r) {
        Some(s @ (401 | 403)) => Some(format!("the provider rejected the credentials (HTTP {s})")),
        _ => None,
    }
}

fn rate_limited(r: &Report<'_>) -> Option<String> {
    let limited = r.events.iter().any(|e| matches!(e, AgentEvent::RateLimit { status, .. } if status == "rejected"));
    if limited || api_status(r) == Some(429) {
        Some("the provider's rate or usage limit was reached".into())
    } else {
        None
    }
}

fn provider_unavailable(r: &Report<'_>) -> Option<String> {
    match api_status(r) {
        Some(s @ (500..=599)) => Some(format!("the provider is unavailable (HTTP {s})")),
        _ => None,
    }
}

fn crashed(r: &Report<'_>) -> Option<String> {
    match r.exit {
        Exit::Signal(sig) => Some(format!("the agent crashed ({})", signal_name(sig))),
        Exit::Code(_) => None,
    }
}

fn exit_nonzero(r: &Report<'_>) -> Option<String> {
    match r.exit {
        Exit::Code(c) if c != 0 => Some(format!("the agent exited with status {c}")),
        _ => None,
    }
}

fn no_done_signal(r: &Report<'_>) -> Option<String> {
    (r.exit == Exit::Code(0)).then(|| r.missing_done.to_string())
}

/// "SIGSEGV" for 11, or the number.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(exit: Exit, events: &[AgentEvent]) -> Report<'_> {
        Report {
            kind: AgentKind::Sim,
            exit,
            ended_by: EndedBy::Agent,
            events,
            text_tail: "",
            missing_done: "exit 0 without the done tag",
        }
    }

    fn error_result(status: u16) -> AgentEvent {
        AgentEvent::Result {
            text: "API Error".into(),
            is_error: true,
            subtype: "success".into(),
            api_error_status: Some(status),
        }
    }

    #[test]
    fn exit_zero_without_done_is_agent() {
        let c = classify(&report(Exit::Code(0), &[]));
        assert_eq!((c.category, c.rule.as_str()), (Category::Agent, "no_done_signal"));
    }

    #[test]
    fn crash_and_nonzero_exit_are_agent() {
        let c = classify(&report(Exit::Signal(11), &[]));
        assert_eq!((c.category, c.rule.as_str()), (Category::Agent, "crashed"));
        assert!(c.reason.contains("SIGSEGV"));
        assert_eq!(classify(&report(Exit::Code(2), &[])).rule, "exit_nonzero");
    }

    #[test]
    fn structured_provider_errors_come_first() {
        assert_eq!(classify(&report(Exit::Code(1), &[error_result(401)])).category, Category::UserConfig);
        assert_eq!(classify(&report(Exit::Code(1), &[error_result(529)])).category, Category::Environmental);
        assert_eq!(classify(&report(Exit::Code(1), &[error_result(429)])).rule, "rate_limited");
    }

    #[test]
    fn ralph_ending_the_attempt_is_named() {
        let mut r = report(Exit::Signal(2), &[]);
        r.ended_by = EndedBy::Stall;
        assert_eq!(classify(&r).rule, "stall");
    }
}

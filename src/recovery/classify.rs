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

/// What a rule looks at.
#[derive(Clone, Copy)]
enum Evidence {
    /// How the attempt ended and the agent's structured events.
    Structured(Matcher),
    /// Any of these phrases in the attempt's error text (see [`ErrorText`]).
    Phrases { about: &'static str, any: &'static [&'static str] },
    /// As `Phrases`, and also the output of failed tool calls.
    ToolPhrases { about: &'static str, any: &'static [&'static str] },
}

/// What the next attempt must do differently.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    Default,
    /// Start a new session instead of resuming.
    Fresh,
    /// Start a new session and rebuild the tool registry.
    ResetTools,
}

/// One named rule. A concept may appear twice (structured evidence early, phrases
/// later), always with the same name and category.
struct Rule {
    name: &'static str,
    category: Category,
    evidence: Evidence,
    then: Then,
}

impl Rule {
    const fn new(name: &'static str, category: Category, evidence: Evidence) -> Self {
        Self { name, category, evidence, then: Then::Default }
    }

    const fn then(self, then: Then) -> Self {
        Self { then, ..self }
    }
}

/// The rule name the policy counts against the `tool-registry-reset` cap.
pub const TOOL_UNAVAILABLE: &str = "tool_unavailable";

use Category::{Agent, Ambiguous, Environmental, UserConfig};
use Evidence::{Phrases, Structured, ToolPhrases};

// Phrases are matched ASCII-case-insensitively against normalised lines (escaped
// quotes unescaped, `": ` squeezed to `":`); `#` stands for one digit and a trailing
// `#` must not be followed by another digit. Sources are named in
// /work/shared/agent-clis.md unless marked "(guess)": those follow the provider's
// public error format and are unverified against the real CLIs.

const SESSION_NOT_FOUND: &[&str] = &[
    "no conversation found with session id", // claude, resume from another cwd
    "no rollout found",                      // codex exec resume
    "session not found",                     // opencode run --session
];

const AUTH: &[&str] = &[
    "invalid api key",            // claude
    "incorrect api key provided", // codex, opencode (openai)
    "api key not valid",          // gemini
    "oauth token has expired",    // claude (guess)
    "unexpected status 401",      // codex
    "unexpected status 403",      // codex (guess)
    "api error: 401",             // claude (guess)
    "api error: 403",             // claude (guess)
    "\"statuscode\":401",         // opencode
    "\"statuscode\":403",         // opencode (guess)
    "\"code\":401",               // gemini error body
    "\"code\":403",               // gemini error body (guess)
    "401 unauthorized",
    "403 forbidden",
    "authentication_error", // anthropic error type
    "permission_error",     // anthropic error type (guess)
    "permission_denied",    // google status (guess)
    "unauthenticated",      // google status
];

const BILLING: &[&str] = &[
    "credit balance is too low",           // anthropic
    "insufficient_quota",                  // openai
    "check your plan and billing details", // openai, codex
    "plans & billing",                     // anthropic
    "billing to be enabled",               // google (guess)
    "billing_disabled",                    // google (guess)
    "billing_error",                       // claude synthetic error code (guess)
];

const MODEL: &[&str] = &[
    "model not found",
    "invalid model",
    "model_not_found",                          // openai code
    "does not exist or you do not have access", // openai
    "issue with the selected model",            // claude (guess)
    "not_found_error",                          // anthropic 404 type (guess)
    "providermodelnotfounderror",               // opencode (guess)
    "is not found for api version",             // gemini 404 (guess)
    "model is not supported when using codex",  // codex (guess)
];

const CONTEXT: &[&str] = &[
    "prompt is too long",                        // claude
    "out of room in the model's context window", // codex
    "contextoverflowerror",                      // opencode
    "context_length_exceeded",                   // openai code
    "context window exceeded",
    "exceeds the context window",
    "maximum context length",                       // openai
    "exceeds the maximum number of tokens allowed", // gemini (guess)
];

const RATE: &[&str] = &[
    "usage limit reached",         // claude (older, with |EPOCH)
    "hit your limit",              // claude (newer, "· resets 8pm (Zone)")
    "hit your usage limit",        // codex
    "usage_limit_reached",         // codex 429 body
    "would exceed the rate limit", // claude
    "request rejected (429)",      // claude
    "last status: 429",            // codex
    "429 too many requests",       // codex, http
    "rate limit reached",          // opencode (openai)
    "rate_limit_error",            // anthropic type
    "rate_limit_exceeded",         // openai code
    "resource has been exhausted", // gemini
    "resource_exhausted",          // google status
    "api error: 429",              // claude (guess)
    "unexpected status 429",       // codex
    "\"statuscode\":429",          // opencode
    "\"code\":429",                // gemini error body
];

const OVERLOADED: &[&str] = &[
    "529 overloaded",           // claude
    "repeated 529",             // claude
    "api is at capacity",       // claude
    "overloaded_error",         // anthropic type
    "model is overloaded",      // gemini
    "experiencing high demand", // codex (its 500 text)
    "api error: 529",
    "api error: 503",
    "unexpected status 529", // codex
    "unexpected status 503",
    "\"statuscode\":529",
    "\"statuscode\":503",
    "\"code\":503",
    "503 service unavailable",
];

const SERVER: &[&str] = &[
    "api error: 5##",        // claude "API Error: 500 Internal server error"
    "unexpected status 5##", // codex
    "\"statuscode\":5##",    // opencode
    "\"code\":5##",          // gemini error body
    "internal server error",
    "an internal error has occurred", // gemini 500 (guess)
    "bad gateway",
    "gateway timeout",
];

const DNS: &[&str] = &[
    "enotfound",
    "getaddrinfo",
    "failed to lookup address", // rust (codex)
    "eai_again",
    "temporary failure in name resolution",
    "name or service not known",
    "dns error",
];

const REFUSED: &[&str] = &[
    "unable to connect to api",                 // claude "(ConnectionRefused)"
    "cannot connect to api",                    // opencode
    "connection failed: error sending request", // codex
    "fetch failed sending request",             // gemini
    "econnrefused",
    "connectionrefused",
    "connection refused (os error",
];

const RESET: &[&str] = &["econnreset", "connection reset by peer", "socket hang up"];

const TIMEOUT: &[&str] = &[
    "request timed out", // claude
    "headers timed out", // opencode "Provider response headers timed out after Nms"
    "etimedout",
    "und_err_headers_timeout",
    "deadline_exceeded", // google status (guess)
];

const STREAM_STALLED: &[&str] = &[
    "idle timeout waiting for sse", // codex
    "sse read timed out",           // opencode
];

const STREAM_INTERRUPTED: &[&str] = &[
    "stream disconnected before completion",      // codex
    "model stream ended without a finish reason", // gemini, exit 0
];

const TOOL_MISSING: &[&str] = &[
    "no such tool available",         // claude
    "is not registered",              // tool-dispatch runtime error
    "not found in registry",          // gemini (guess)
    "tried to call unavailable tool", // ai sdk, opencode (guess)
];

/// The table, in order: first match wins. ralph's own verdicts first, then the
/// agent's structured events, then phrases (user errors before session state before
/// transient ones), then how the process ended.
const RULES: &[Rule] = &[
    Rule::new("stall_in_provider_retry", Environmental, Structured(stall_in_provider_retry)),
    Rule::new("stall", Agent, Structured(stall)),
    Rule::new("tool_timeout", Agent, Structured(tool_timeout)),
    Rule::new("attempt_timeout", Agent, Structured(attempt_timeout)),
    Rule::new("binary_missing", UserConfig, Structured(binary_missing)),
    Rule::new("auth_failed", UserConfig, Structured(auth_failed)),
    Rule::new("billing_disabled", UserConfig, Structured(billing_code)),
    Rule::new("rate_limited", Environmental, Structured(rate_limited)),
    Rule::new("provider_overloaded", Environmental, Structured(provider_overloaded)),
    Rule::new("provider_error", Environmental, Structured(provider_error)),
    Rule::new("session_not_found", Agent, Structured(gemini_input_error)).then(Then::Fresh),
    Rule::new(
        "session_not_found",
        Agent,
        Phrases { about: "the agent does not know the session", any: SESSION_NOT_FOUND },
    )
    .then(Then::Fresh),
    Rule::new("auth_failed", UserConfig, Phrases { about: "the provider rejected the credentials", any: AUTH }),
    Rule::new(
        "billing_disabled",
        UserConfig,
        Phrases { about: "the provider account has no credit or quota", any: BILLING },
    ),
    Rule::new("model_invalid", UserConfig, Phrases { about: "the provider does not know the model", any: MODEL }),
    Rule::new(
        "context_too_long",
        Agent,
        Phrases { about: "the conversation outgrew the context window", any: CONTEXT },
    )
    .then(Then::Fresh),
    Rule::new(
        "rate_limited",
        Environmental,
        Phrases { about: "the provider's rate or usage limit was reached", any: RATE },
    ),
    Rule::new("provider_overloaded", Environmental, Phrases { about: "the provider is overloaded", any: OVERLOADED }),
    Rule::new("provider_error", Environmental, Phrases { about: "the provider failed", any: SERVER }),
    Rule::new("dns_failure", Environmental, Phrases { about: "the provider's host name did not resolve", any: DNS }),
    Rule::new(
        "connection_refused",
        Environmental,
        Phrases { about: "the provider could not be reached", any: REFUSED },
    ),
    Rule::new(
        "connection_reset",
        Environmental,
        Phrases { about: "the connection to the provider was reset", any: RESET },
    ),
    Rule::new("request_timeout", Environmental, Phrases { about: "the provider request timed out", any: TIMEOUT }),
    Rule::new(
        "stream_stalled",
        Environmental,
        Phrases { about: "the provider's stream went silent", any: STREAM_STALLED },
    ),
    Rule::new(
        "stream_interrupted",
        Environmental,
        Phrases { about: "the provider's stream ended early", any: STREAM_INTERRUPTED },
    ),
    Rule::new(TOOL_UNAVAILABLE, Agent, ToolPhrases { about: "a tool the agent was given is gone", any: TOOL_MISSING })
        .then(Then::ResetTools),
    Rule::new("crashed", Agent, Structured(crashed)),
    Rule::new("exit_nonzero", Agent, Structured(exit_nonzero)),
    Rule::new("no_done_signal", Agent, Structured(no_done_signal)),
];

/// Classifies a failed attempt. Every failure lands in exactly one category; one
/// that no rule explains is `ambiguous`.
pub fn classify(report: &Report<'_>) -> Classification {
    let text = ErrorText::of(report, false);
    let with_tools = ErrorText::of(report, true);
    for rule in RULES {
        let reason = match rule.evidence {
            Structured(matches) => matches(report),
            Phrases { about, any } => text.find(any).map(|line| format!("{about}: {line}")),
            ToolPhrases { about, any } => with_tools.find(any).map(|line| format!("{about}: {line}")),
        };
        if let Some(reason) = reason {
            let mut c = Classification::new(rule.category, rule.name, reason);
            c.fresh_session = rule.then != Then::Default;
            c.reset_tool_registry = rule.then == Then::ResetTools;
            return c;
        }
    }
    Classification::new(Ambiguous, "unexplained", "the attempt failed in a way ralph cannot explain")
}

/// The text an attempt's failure can be read from: the text tail, failed results and
/// error events. Assistant text is left out (the model may talk about errors), and so
/// are tool outputs except for the tool-availability rule (a test suite printing
/// "connection refused" is not a provider outage).
struct ErrorText<'a> {
    /// (original line, normalised line)
    lines: Vec<(&'a str, String)>,
}

/// How much of a matching line goes into the reason.
const EXCERPT_CHARS: usize = 200;

impl<'a> ErrorText<'a> {
    fn of(r: &Report<'a>, tool_outputs: bool) -> Self {
        let mut sources: Vec<&'a str> = vec![r.text_tail];
        for e in r.events {
            match e {
                AgentEvent::Result { text, is_error: true, .. } => sources.push(text),
                AgentEvent::Error { message } => sources.push(message),
                AgentEvent::ToolFinished { output, is_error: true, .. } if tool_outputs => sources.push(output),
                _ => {}
            }
        }
        let lines = sources
            .into_iter()
            .flat_map(str::lines)
            // Codex announces each of its own retries ("Reconnecting... 2/5 (...)");
            // they are not the failure, the final error is.
            .filter(|l| !l.to_ascii_lowercase().contains("reconnecting..."))
            .map(|l| (l, normalise(l)))
            .collect();
        Self { lines }
    }

    /// The last line containing any of `phrases`, as an excerpt.
    fn find(&self, phrases: &[&str]) -> Option<String> {
        let (line, _) = self.lines.iter().rev().find(|(_, norm)| phrases.iter().any(|p| contains(norm, p)))?;
        let line = line.trim();
        Some(match line.char_indices().nth(EXCERPT_CHARS) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_string(),
        })
    }
}

fn normalise(line: &str) -> String {
    line.to_ascii_lowercase().replace("\\\"", "\"").replace("\": ", "\":")
}

/// Substring search where `#` in `pattern` matches one ASCII digit; a pattern ending
/// in `#` does not match inside a longer number.
fn contains(hay: &str, pattern: &str) -> bool {
    if !pattern.contains('#') {
        return hay.contains(pattern);
    }
    let (h, p) = (hay.as_bytes(), pattern.as_bytes());
    if p.len() > h.len() {
        return false;
    }
    (0..=h.len() - p.len()).any(|i| {
        let window = &h[i..i + p.len()];
        let same = window.iter().zip(p).all(|(&c, &q)| if q == b'#' { c.is_ascii_digit() } else { c == q });
        let bounded = p.last() != Some(&b'#') || !h.get(i + p.len()).is_some_and(u8::is_ascii_digit);
        same && bounded
    })
}

fn stall(r: &Report<'_>) -> Option<String> {
    (r.ended_by == EndedBy::Stall).then(|| "the agent stalled (no output and no tool running)".into())
}

/// A stall right after the CLI announced a provider retry is the provider's silence,
/// not the agent's: Claude's retried request hung.
fn stall_in_provider_retry(r: &Report<'_>) -> Option<String> {
    if r.ended_by != EndedBy::Stall {
        return None;
    }
    let last =
        r.events.iter().rev().find(|e| {
            !matches!(e, AgentEvent::Unknown { .. } | AgentEvent::Usage { .. } | AgentEvent::Session { .. })
        })?;
    match last {
        AgentEvent::ApiRetry { error, status, .. } => Some(match status {
            Some(s) => format!("the provider went silent while the agent retried it (HTTP {s}, {error})"),
            None => format!("the provider went silent while the agent retried it ({error})"),
        }),
        _ => None,
    }
}

fn tool_timeout(r: &Report<'_>) -> Option<String> {
    (r.ended_by == EndedBy::ToolTimeout).then(|| "a tool call ran past [timeouts] tool".into())
}

fn attempt_timeout(r: &Report<'_>) -> Option<String> {
    (r.ended_by == EndedBy::AttemptTimeout).then(|| "the attempt ran past [timeouts] attempt".into())
}

/// Exit 127 is the shell's "command not found"; the text confirms it was the
/// command itself, not something it ran, that was missing.
fn binary_missing(r: &Report<'_>) -> Option<String> {
    if r.exit != Exit::Code(127) {
        return None;
    }
    let tail = r.text_tail.to_ascii_lowercase();
    ["command not found", ": not found", "no such file or directory"]
        .iter()
        .any(|p| tail.contains(p))
        .then(|| "the agent's command was not found (exit 127)".into())
}

fn api_status(r: &Report<'_>) -> Option<u16> {
    r.events.iter().rev().find_map(|e| match e {
        AgentEvent::Result { is_error: true, api_error_status, .. } => *api_error_status,
        _ => None,
    })
}

/// The error code Claude puts on its synthetic assistant message.
fn error_code(r: &Report<'_>, code: &str) -> bool {
    r.events.iter().any(|e| matches!(e, AgentEvent::Error { message } if message == code))
}

fn auth_failed(r: &Report<'_>) -> Option<String> {
    match api_status(r) {
        Some(s @ (401 | 403)) => Some(format!("the provider rejected the credentials (HTTP {s})")),
        _ if error_code(r, "authentication_failed") => {
            Some("the provider rejected the credentials (authentication_failed)".into())
        }
        _ => None,
    }
}

fn billing_code(r: &Report<'_>) -> Option<String> {
    error_code(r, "billing_error").then(|| "the provider account has no credit or quota (billing_error)".into())
}

fn rate_limited(r: &Report<'_>) -> Option<String> {
    // A later "allowed" supersedes an earlier rejection (overage kicked in).
    let last = r.events.iter().rev().find_map(|e| match e {
        AgentEvent::RateLimit { status, limit_type, .. } => Some((status.as_str(), limit_type.as_deref())),
        _ => None,
    });
    if let Some(("rejected", limit)) = last {
        return Some(match limit {
            Some(l) => format!("the provider's rate or usage limit was reached ({l})"),
            None => "the provider's rate or usage limit was reached".into(),
        });
    }
    if api_status(r) == Some(429) {
        return Some("the provider's rate or usage limit was reached (HTTP 429)".into());
    }
    error_code(r, "rate_limit").then(|| "the provider's rate or usage limit was reached (rate_limit)".into())
}

fn provider_overloaded(r: &Report<'_>) -> Option<String> {
    match api_status(r) {
        Some(s @ (503 | 529)) => Some(format!("the provider is overloaded (HTTP {s})")),
        _ => None,
    }
}

fn provider_error(r: &Report<'_>) -> Option<String> {
    match api_status(r) {
        Some(s @ (500..=599)) => Some(format!("the provider failed (HTTP {s})")),
        _ if error_code(r, "server_error") => Some("the provider failed (server_error)".into()),
        _ => None,
    }
}

/// Gemini exits 42 (its input-error code) when `--resume` names a session it does
/// not have. Its other exit codes are HTTP statuses mod 256 and are not used.
fn gemini_input_error(r: &Report<'_>) -> Option<String> {
    (r.kind == AgentKind::Gemini && r.exit == Exit::Code(42))
        .then(|| "gemini exited 42 (input error, as for an unknown --resume id)".into())
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

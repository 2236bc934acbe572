//! The failure classifier: one ordered table of named rules from what an attempt
//! left behind to a [`Classification`]. Structured evidence (how the attempt ended,
//! the agent's own events) is matched before any text, and text is matched on
//! specific phrases, never on bare numbers. A rule may also tell the next attempt to
//! start a new session or to rebuild the tool registry.

use crate::agent::{AgentEvent, kinds};
use crate::config::{AgentKind, ErrorPattern};
use crate::supervise::Detector;
use crate::supervise::completion::find_word;

use super::{Category, Classification, Rule};

pub use crate::supervise::ended_by::EndedBy;

/// How an attempt ended, as far as the process is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    /// "status 1", or the signal's name ("SIGSEGV"): how the process ended.
    pub(crate) fn describe(self) -> String {
        match self {
            Exit::Code(c) => format!("status {c}"),
            Exit::Signal(sig) => signal_name(sig),
        }
    }
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
    /// The tail of stderr alone: its last lines are where an agent reports its own
    /// error in words.
    pub stderr_tail: &'a str,
    /// Why the done signal is missing, when the agent exited 0.
    pub missing_done: &'a str,
    /// The agent's own error wordings (`[agents.X] errors`).
    pub errors: &'a [ErrorPattern],
    /// Now, in unix seconds (for a configured pattern's `reset_in`).
    pub now: i64,
    /// The reason of the agent's `report_interruption` (MCP), if it made one.
    pub interruption: Option<&'a str>,
}

type Matcher = fn(&Report<'_>) -> Option<String>;

/// What a rule looks at.
#[derive(Clone, Copy)]
enum Evidence {
    /// How the attempt ended and the agent's structured events.
    Structured(Matcher),
    /// ralph's supervision ended the attempt, for this reason.
    Ended(EndedBy, &'static str),
    /// The HTTP status of the agent's failed result is one of these.
    Status { about: &'static str, any: fn(u16) -> bool },
    /// Any of these phrases in the attempt's error text (see [`ErrorText`]); else any
    /// of the `own` words (whole words, any case) where the agent reports its own
    /// error (see [`OwnErrorText`]): common wordings that any agent may use, and that
    /// a project's own output may contain too.
    Phrases { about: &'static str, any: &'static [&'static str], own: &'static [&'static str] },
    /// The agent's configured wordings (`[agents.X] errors`), in its own error text.
    Configured,
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
struct Entry {
    name: Rule,
    category: Category,
    evidence: Evidence,
    then: Then,
}

impl Entry {
    const fn new(name: Rule, category: Category, evidence: Evidence) -> Self {
        Self { name, category, evidence, then: Then::Default }
    }

    const fn then(self, then: Then) -> Self {
        Self { then, ..self }
    }

    /// The same failure in the words an agent may use for its own error.
    const fn or_own(self, words: &'static [&'static str]) -> Self {
        let Phrases { about, any, .. } = self.evidence else { panic!("or_own follows phrases") };
        Self { evidence: Phrases { about, any, own: words }, ..self }
    }
}

use Category::{Agent, Ambiguous, Environmental, UserConfig};
use Evidence::{Configured, Ended, Phrases, Status, Structured};

// Phrases are matched ASCII-case-insensitively against normalised lines (escaped
// quotes unescaped, `": ` squeezed to `":`); `#` stands for one digit and a trailing
// `#` must not be followed by another digit. Texts are those recorded from the real
// CLIs in the project's agent-CLI notes (agent-clis.md) unless marked "(guess)":
// those follow the provider's public error format, unverified against the CLIs.

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
    "529 overloaded",      // claude
    "repeated 529",        // claude
    "api is at capacity",  // claude
    "overloaded_error",    // anthropic type
    "model is overloaded", // gemini
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
    "experiencing high demand", // codex: its text for HTTP 500 (captured), not an overload
    "an internal error has occurred", // gemini 500 (guess: the CLI relays the body, this wording is the API's public one)
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

// Checked before REFUSED: Claude words a reset "Unable to connect to API (ECONNRESET)".
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

// Argument parsers' words for an option they do not know: commander (claude), clap
// (codex), yargs (gemini, opencode), getopt, Python's argparse.
const REJECTED_ARGUMENT: &[&str] = &[
    "unknown option",
    "unexpected argument",
    "unrecognized option",
    "unrecognized arguments",
    "unknown argument",
    "unknown arguments",
    "unknown flag",
];

// Common wordings any agent may use for its own error (word-bounded, own error text only).
const COMMON_QUOTA: &[&str] = &["you exceeded your current quota"];
const COMMON_RATE: &[&str] = &["rate limit exceeded", "too many requests"];
const COMMON_OVERLOADED: &[&str] = &["overloaded", "service unavailable"];
const COMMON_UNREACHABLE: &[&str] = &["connection refused", "connection error"];

/// The table, in order: first match wins. ralph's own verdicts first, then the
/// agent's structured events, then phrases (user errors before session state before
/// transient ones), then how the process ended.
const RULES: &[Entry] = &[
    structured(Rule::StallInProviderRetry, Environmental, stall_in_provider_retry),
    ended(Rule::Stall, Detector::Stall, "the agent stalled (no output and no tool running)"),
    ended(Rule::ToolTimeout, Detector::ToolTimeout, "a tool call ran past [timeouts] tool"),
    ended(Rule::AttemptTimeout, Detector::AttemptTimeout, "the attempt ran past [timeouts] attempt"),
    ended(Rule::ToolCallLoop, Detector::ToolCallLoop, "the agent repeated the same tool calls"),
    ended(Rule::ToolText, Detector::ToolText, "the agent printed a tool call as text instead of making it"),
    ended(
        Rule::ToolTextInThinking,
        Detector::ToolTextInThinking,
        "the agent wrote a tool call in its thinking instead of making it",
    ),
    // Not the agent's fault, but the run stops on the cost cap before any budget matters.
    ended(Rule::CostCap, Detector::CostCap, "the run's cost reached [general] max_cost_usd during the attempt"),
    // A policy violation repeated (design.md §4: an `agent` failure).
    ended(
        Rule::RepeatedPermissionDenials,
        Detector::PermissionDenials,
        "the agent's tool calls were refused permission repeatedly",
    ),
    structured(Rule::BinaryMissing, UserConfig, binary_missing),
    structured(Rule::AuthFailed, UserConfig, auth_failed),
    structured(Rule::BillingDisabled, UserConfig, billing_code),
    structured(Rule::RateLimited, Environmental, rate_limited),
    status(Rule::ProviderOverloaded, "the provider is overloaded", |s| matches!(s, 503 | 529)),
    status(Rule::ProviderError, "the provider failed", |s| (500..=599).contains(&s)),
    structured(Rule::SessionNotFound, Agent, unknown_session_exit).then(Then::Fresh),
    // The user's own wordings for the agent come before ralph's guesses (the category
    // here is a placeholder: each pattern brings its own).
    Entry::new(Rule::ConfiguredError, Ambiguous, Configured),
    phrases(Rule::CliRejectedArgument, UserConfig, "the agent CLI rejected an argument ralph passes", &[])
        .or_own(REJECTED_ARGUMENT),
    phrases(Rule::SessionNotFound, Agent, "the agent does not know the session", SESSION_NOT_FOUND).then(Then::Fresh),
    phrases(Rule::AuthFailed, UserConfig, "the provider rejected the credentials", AUTH),
    phrases(Rule::BillingDisabled, UserConfig, "the provider account has no credit or quota", BILLING)
        .or_own(COMMON_QUOTA),
    phrases(Rule::ModelInvalid, UserConfig, "the provider does not know the model", MODEL),
    phrases(Rule::ContextTooLong, Agent, "the conversation outgrew the context window", CONTEXT).then(Then::Fresh),
    phrases(Rule::RateLimited, Environmental, "the provider's rate or usage limit was reached", RATE)
        .or_own(COMMON_RATE),
    phrases(Rule::ProviderOverloaded, Environmental, "the provider is overloaded", OVERLOADED)
        .or_own(COMMON_OVERLOADED),
    phrases(Rule::ProviderError, Environmental, "the provider failed", SERVER),
    phrases(Rule::DnsFailure, Environmental, "the provider's host name did not resolve", DNS),
    phrases(Rule::ConnectionReset, Environmental, "the connection to the provider was reset", RESET),
    phrases(Rule::ConnectionRefused, Environmental, "the provider could not be reached", REFUSED)
        .or_own(COMMON_UNREACHABLE),
    phrases(Rule::RequestTimeout, Environmental, "the provider request timed out", TIMEOUT),
    phrases(Rule::StreamStalled, Environmental, "the provider's stream went silent", STREAM_STALLED),
    phrases(Rule::StreamInterrupted, Environmental, "the provider's stream ended early", STREAM_INTERRUPTED),
    structured(Rule::ToolUnavailable, Agent, tool_unavailable).then(Then::ResetTools),
    structured(Rule::ProviderError, Environmental, server_error_code),
    // After every phrase: the agent's reason is evidence the rules above read first.
    structured(Rule::ReportedInterruption, Agent, reported_interruption),
    structured(Rule::Crashed, Agent, crashed),
    structured(Rule::KilledFromOutside, Ambiguous, killed_from_outside),
    structured(Rule::ExitNonzero, Agent, exit_nonzero),
    structured(Rule::NoDoneSignal, Agent, no_done_signal),
];

const fn structured(name: Rule, category: Category, matches: Matcher) -> Entry {
    Entry::new(name, category, Structured(matches))
}

/// Every ending of ralph's supervision is the agent's: it stopped making progress.
const fn ended(name: Rule, by: Detector, reason: &'static str) -> Entry {
    Entry::new(name, Agent, Ended(EndedBy::Ralph(by), reason))
}

const fn status(name: Rule, about: &'static str, any: fn(u16) -> bool) -> Entry {
    Entry::new(name, Environmental, Status { about, any })
}

const fn phrases(name: Rule, category: Category, about: &'static str, any: &'static [&'static str]) -> Entry {
    Entry::new(name, category, Phrases { about, any, own: &[] })
}

/// Classifies a failed attempt. Every failure lands in exactly one category; one
/// that no rule explains is `ambiguous`.
pub fn classify(report: &Report<'_>) -> Classification {
    let text = ErrorText::of(report, false);
    let own = OwnErrorText::of(report);
    for rule in RULES {
        let reason = match rule.evidence {
            Structured(matches) => matches(report),
            Ended(by, reason) => (report.ended_by == by).then(|| reason.to_string()),
            Status { about, any } => api_status(report).filter(|s| any(*s)).map(|s| format!("{about} (HTTP {s})")),
            Phrases { about, any, own: words } => {
                text.find(any).or_else(|| own.find(words)).map(|line| format!("{about}: {line}"))
            }
            Configured => match configured(report, &own) {
                Some(c) => return c,
                None => None,
            },
        };
        if let Some(reason) = reason {
            let mut c = Classification::new(rule.category, rule.name, reason);
            c.fresh_session = rule.then != Then::Default;
            c.reset_tool_registry = rule.then == Then::ResetTools;
            return c;
        }
    }
    Classification::new(Ambiguous, Rule::Unexplained, "the attempt failed in a way ralph cannot explain")
}

/// The first configured pattern that matches the agent's own error text, with the
/// reset time it captured. Patterns were checked when the config loaded; one that
/// does not compile here is skipped.
fn configured(report: &Report<'_>, own: &OwnErrorText<'_>) -> Option<Classification> {
    for pattern in report.errors {
        let Ok(re) = regex::Regex::new(&pattern.pattern) else { continue };
        for line in own.lines.iter().rev() {
            let Some(caps) = re.captures(line) else { continue };
            let reset = caps
                .name("reset_at")
                .and_then(|m| parse_reset_at(m.as_str()))
                .or_else(|| caps.name("reset_in").and_then(|m| parse_reset_in(m.as_str(), report.now)));
            let category = pattern.category;
            let excerpt = excerpt_at(line, caps.get(0).map_or(0, |m| m.start()));
            let rule =
                if category == Environmental && reset.is_some() { Rule::RateLimited } else { Rule::ConfiguredError };
            let mut c = Classification::new(category, rule, format!("the agent reported: {excerpt}"));
            c.reset_at = reset;
            return Some(c);
        }
    }
    None
}

fn parse_reset_at(text: &str) -> Option<i64> {
    let text = text.trim();
    text.parse::<i64>().ok().or_else(|| text.parse::<jiff::Timestamp>().ok().map(|t| t.as_second()))
}

fn parse_reset_in(text: &str, now: i64) -> Option<i64> {
    let text = text.trim();
    let secs = match text.parse::<u64>() {
        Ok(secs) => secs,
        Err(_) => humantime::parse_duration(text).ok()?.as_secs(),
    };
    now.checked_add(i64::try_from(secs).ok()?)
}

/// Lines of stderr read as the agent's own error report.
const OWN_STDERR_LINES: usize = 5;

/// Where an agent reports its own error: its error events, its results marked as
/// errors, and the last few lines of its stderr. Never tool results or assistant
/// text: a project's test suite prints "connection refused" too.
struct OwnErrorText<'a> {
    lines: Vec<&'a str>,
}

impl<'a> OwnErrorText<'a> {
    fn of(r: &Report<'a>) -> Self {
        let mut lines: Vec<&'a str> = error_reports(r.events).flat_map(str::lines).collect();
        let stderr: Vec<&'a str> = r.stderr_tail.lines().filter(|l| !l.trim().is_empty()).collect();
        lines.extend(&stderr[stderr.len().saturating_sub(OWN_STDERR_LINES)..]);
        // A CLI's notices of its own retries are not the failure (see `ErrorText`).
        lines.retain(|l| !l.to_ascii_lowercase().contains("reconnecting..."));
        Self { lines }
    }

    /// The last line holding any of `words` as whole words (any case), as an excerpt.
    fn find(&self, words: &[&str]) -> Option<String> {
        self.lines.iter().rev().find_map(|line| {
            let lower = line.to_ascii_lowercase();
            words.iter().find_map(|w| find_word(&lower, w, 0)).map(|at| excerpt_at(line, at))
        })
    }
}

/// The agent's own reports of its error among `events`: its error events and the
/// results it marked as errors.
pub(super) fn error_reports(events: &[AgentEvent]) -> impl Iterator<Item = &str> {
    events.iter().filter_map(|e| match e {
        AgentEvent::Result { text, is_error: true, .. } | AgentEvent::Error { message: text } => Some(text.as_str()),
        _ => None,
    })
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
        Self { lines: Self::sources(r, tool_outputs).into_iter().map(|l| (l, normalise(l))).collect() }
    }

    fn sources(r: &Report<'a>, tool_outputs: bool) -> Vec<&'a str> {
        let mut sources: Vec<&'a str> = vec![r.text_tail];
        for e in r.events {
            match e {
                AgentEvent::Result { text, is_error: true, .. } => sources.push(text),
                AgentEvent::Error { message } => sources.push(message),
                AgentEvent::ToolFinished { output, is_error: true, .. } if tool_outputs => sources.push(output),
                _ => {}
            }
        }
        sources
            .into_iter()
            .flat_map(str::lines)
            // Codex announces each of its own retries ("Reconnecting... 2/5 (...)");
            // they are not the failure, the final error is.
            .filter(|l| !l.to_ascii_lowercase().contains("reconnecting..."))
            .collect()
    }

    /// The last line containing any of `phrases`, as an excerpt around the match
    /// (a JSON line would otherwise show only its envelope).
    fn find(&self, phrases: &[&str]) -> Option<String> {
        self.lines.iter().rev().find_map(|(line, norm)| {
            let phrase = phrases.iter().find(|p| position(norm, p).is_some())?;
            Some(excerpt(line, phrase))
        })
    }
}

/// How much context precedes the match in an excerpt.
const EXCERPT_LEAD: usize = 60;

fn excerpt(line: &str, phrase: &str) -> String {
    let line = line.trim();
    // Offsets are shared with the ASCII-lowercased line; normalising may shift them,
    // in which case the excerpt starts at the line's beginning.
    let at = position(&line.to_ascii_lowercase(), phrase).unwrap_or(0);
    excerpt_at(line, at)
}

/// Up to [`EXCERPT_CHARS`] of `line` from a little before byte offset `at`.
fn excerpt_at(line: &str, at: usize) -> String {
    let lead = line.len() - line.trim_start().len();
    let line = line.trim();
    let at = at.saturating_sub(lead).min(line.len());
    let mut start = at.saturating_sub(EXCERPT_LEAD);
    while !line.is_char_boundary(start) {
        start -= 1;
    }
    let body = &line[start..];
    let mut out = if start > 0 { String::from("…") } else { String::new() };
    match body.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => {
            out.push_str(&body[..cut]);
            out.push('…');
        }
        None => out.push_str(body),
    }
    out
}

fn normalise(line: &str) -> String {
    line.to_ascii_lowercase().replace("\\\"", "\"").replace("\": ", "\":")
}

/// Substring search where `#` in `pattern` matches one ASCII digit; a pattern ending
/// in `#` does not match inside a longer number.
fn position(hay: &str, pattern: &str) -> Option<usize> {
    if !pattern.contains('#') {
        return hay.find(pattern);
    }
    let (h, p) = (hay.as_bytes(), pattern.as_bytes());
    if p.len() > h.len() {
        return None;
    }
    (0..=h.len() - p.len()).find(|&i| {
        let window = &h[i..i + p.len()];
        let same = window.iter().zip(p).all(|(&c, &q)| if q == b'#' { c.is_ascii_digit() } else { c == q });
        let bounded = p.last() != Some(&b'#') || !h.get(i + p.len()).is_some_and(u8::is_ascii_digit);
        same && bounded
    })
}

/// A tool the agent was given is gone: Claude's "No such tool available", or a
/// runtime's tool-dispatch error ("tool X is not registered", "Tool \"X\" not found
/// in registry", "tried to call unavailable tool"), in error text or a failed tool
/// call's output. Only the dispatch shape counts: a failed `systemctl` or `docker`
/// saying "is not registered" or "not found in registry" is not a lost tool.
fn tool_unavailable(r: &Report<'_>) -> Option<String> {
    let about = "a tool the agent was given is gone";
    ErrorText::sources(r, true).into_iter().rev().find_map(|line| {
        let lower = line.to_ascii_lowercase();
        let at = ["no such tool available", "tried to call unavailable tool"]
            .iter()
            .find_map(|p| lower.find(p))
            .or_else(|| tool_dispatch(&lower, "is not registered"))
            .or_else(|| tool_dispatch(&lower, "not found in registry"))?;
        Some(format!("{about}: {}", excerpt_at(line, at)))
    })
}

/// Where `phrase` follows "tool NAME" (the name quoted or not): a tool dispatcher's
/// error, as opposed to any program's.
fn tool_dispatch(lower: &str, phrase: &str) -> Option<usize> {
    let at = find_word(lower, phrase, 0)?;
    let mut words = lower[..at].split_whitespace().rev();
    let _name = words.next()?;
    let tool = words.next()?.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    (tool == "tool").then_some(at)
}

/// A stall right after the CLI announced a provider retry is the provider's silence,
/// not the agent's: Claude's retried request hung.
fn stall_in_provider_retry(r: &Report<'_>) -> Option<String> {
    if r.ended_by != EndedBy::Ralph(Detector::Stall) {
        return None;
    }
    let last =
        r.events.iter().rev().find(|e| {
            !matches!(e, AgentEvent::Unknown { .. } | AgentEvent::Usage { .. } | AgentEvent::Session { .. })
        })?;
    let AgentEvent::ApiRetry { error, status, .. } = last else { return None };
    let http = status.map(|s| format!("HTTP {s}, ")).unwrap_or_default();
    Some(format!("the provider went silent while the agent retried it ({http}{error})"))
}

/// Exit 127 is the shell's "command not found"; the text confirms it was the
/// command itself, not something it ran, that was missing.
fn binary_missing(r: &Report<'_>) -> Option<String> {
    if r.exit != Exit::Code(127) {
        return None;
    }
    let said = ["command not found", ": not found", "no such file or directory"];
    let line = r.text_tail.lines().rev().find(|l| {
        let lower = l.to_ascii_lowercase();
        said.iter().any(|p| lower.contains(p))
    })?;
    // The shell's line names the path that was missing.
    Some(format!("the agent's command was not found (exit 127): {}", excerpt_at(line, 0)))
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
        let about = "the provider's rate or usage limit was reached";
        return Some(limit.map_or_else(|| about.to_string(), |l| format!("{about} ({l})")));
    }
    if api_status(r) == Some(429) {
        return Some("the provider's rate or usage limit was reached (HTTP 429)".into());
    }
    error_code(r, "rate_limit").then(|| "the provider's rate or usage limit was reached (rate_limit)".into())
}

/// Claude's synthetic `server_error` code without an HTTP status also covers
/// failures to connect at all (captured: "Unable to connect to API
/// (ConnectionRefused)"), so the phrases get the first word and this comes after.
fn server_error_code(r: &Report<'_>) -> Option<String> {
    error_code(r, "server_error").then(|| "the provider failed (server_error)".into())
}

/// The exit code a CLI ends with when `--resume` names a session it does not have
/// (Gemini's 42, its input-error code).
fn unknown_session_exit(r: &Report<'_>) -> Option<String> {
    let code = kinds::descriptor(r.kind)?.unknown_session_exit?;
    (r.exit == Exit::Code(code))
        .then(|| format!("{} exited {code} (input error, as for an unknown --resume id)", r.kind.into_str()))
}

/// ralph ended the attempt because the agent reported an interruption.
fn reported_interruption(r: &Report<'_>) -> Option<String> {
    (r.ended_by == EndedBy::Interruption).then(|| match r.interruption {
        Some(reason) => format!("the agent reported an interruption: {reason}"),
        None => "the agent reported an interruption".to_string(),
    })
}

fn crashed(r: &Report<'_>) -> Option<String> {
    match r.exit {
        Exit::Signal(sig) if !is_outside_kill(sig) => Some(format!("the agent crashed ({})", signal_name(sig))),
        _ => None,
    }
}

/// Killed by a signal ralph did not send (ralph's own endings are named earlier in
/// the table): the OOM killer, a user, a service manager. Whether that was the
/// agent's doing or the machine's, ralph cannot tell.
fn killed_from_outside(r: &Report<'_>) -> Option<String> {
    match r.exit {
        Exit::Signal(sig) if is_outside_kill(sig) => {
            Some(format!("the agent was killed by {} from outside ralph (the OOM killer, a user?)", signal_name(sig)))
        }
        _ => None,
    }
}

/// Signals that end a process from outside, as opposed to its own crash.
fn is_outside_kill(sig: i32) -> bool {
    use nix::sys::signal::Signal::{SIGHUP, SIGINT, SIGKILL, SIGTERM};
    [SIGKILL, SIGTERM, SIGHUP, SIGINT].iter().any(|s| *s as i32 == sig)
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
pub(crate) fn signal_name(sig: i32) -> String {
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
            stderr_tail: "",
            missing_done: "exit 0 without the done tag",
            errors: &[],
            now: 0,
            interruption: None,
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
    fn a_kill_from_outside_is_ambiguous_a_crash_is_agent() {
        let c = classify(&report(Exit::Signal(9), &[]));
        assert_eq!((c.category, c.rule.into_str()), (Category::Ambiguous, "killed_from_outside"));
        assert_eq!(classify(&report(Exit::Signal(6), &[])).rule.into_str(), "crashed");
    }

    #[test]
    fn an_attempt_ended_on_the_agents_reported_interruption_is_read_by_its_reason() {
        let mut r = report(Exit::Signal(15), &[]);
        (r.ended_by, r.interruption) = (EndedBy::Interruption, Some("the package registry is down"));
        let c = classify(&r);
        assert_eq!((c.category, c.rule), (Category::Agent, Rule::ReportedInterruption));
        assert_eq!(c.reason, "the agent reported an interruption: the package registry is down");
        // Its words come first: an outage in them is the outage's.
        let tail = "the agent reported an interruption: the API said 529 overloaded\n";
        r.text_tail = tail;
        assert_eq!(classify(&r).rule, Rule::ProviderOverloaded);
    }

    #[test]
    fn exit_zero_without_done_is_agent() {
        let c = classify(&report(Exit::Code(0), &[]));
        assert_eq!((c.category, c.rule.into_str()), (Category::Agent, "no_done_signal"));
    }

    #[test]
    fn crash_and_nonzero_exit_are_agent() {
        let c = classify(&report(Exit::Signal(11), &[]));
        assert_eq!((c.category, c.rule.into_str()), (Category::Agent, "crashed"));
        assert!(c.reason.contains("SIGSEGV"));
        assert_eq!(classify(&report(Exit::Code(2), &[])).rule.into_str(), "exit_nonzero");
    }

    #[test]
    fn structured_provider_errors_come_first() {
        assert_eq!(classify(&report(Exit::Code(1), &[error_result(401)])).category, Category::UserConfig);
        assert_eq!(classify(&report(Exit::Code(1), &[error_result(529)])).category, Category::Environmental);
        assert_eq!(classify(&report(Exit::Code(1), &[error_result(429)])).rule.into_str(), "rate_limited");
    }

    #[test]
    fn ralph_ending_the_attempt_is_named() {
        let mut r = report(Exit::Signal(2), &[]);
        r.ended_by = EndedBy::Ralph(Detector::Stall);
        assert_eq!(classify(&r).rule.into_str(), "stall");
    }

    fn text_report<'a>(kind: AgentKind, exit: Exit, events: &'a [AgentEvent], tail: &'a str) -> Report<'a> {
        Report {
            kind,
            exit,
            ended_by: EndedBy::Agent,
            events,
            text_tail: tail,
            stderr_tail: tail,
            missing_done: "exit 0 without the done tag",
            errors: &[],
            now: 0,
            interruption: None,
        }
    }

    fn rule_of(tail: &str) -> (Category, String) {
        let c = classify(&text_report(AgentKind::Command, Exit::Code(1), &[], tail));
        (c.category, c.rule.to_string())
    }

    #[test]
    fn the_table_is_consistent() {
        let mut seen: std::collections::BTreeMap<Rule, Category> = std::collections::BTreeMap::new();
        for rule in RULES {
            if let Some(&c) = seen.get(&rule.name) {
                assert_eq!(c, rule.category, "{} appears with two categories", rule.name);
            }
            seen.insert(rule.name, rule.category);
            if let Phrases { any, own, .. } = rule.evidence {
                for p in any.iter().chain(own) {
                    assert_eq!(*p, normalise(p), "{}: phrase {p:?} is not normalised", rule.name);
                    assert!(
                        p.chars().filter(|c| c.is_ascii_alphabetic()).count() >= 4,
                        "{}: {p:?} is too bare",
                        rule.name
                    );
                }
            }
        }
        assert!(seen.contains_key(&Rule::ToolUnavailable));
    }

    #[test]
    fn digit_patterns_do_not_match_bare_or_longer_numbers() {
        assert_eq!(position("api error: 502 bad gateway", "api error: 5##"), Some(0));
        assert_eq!(position("api error: 5000 tokens", "api error: 5##"), None);
        assert_eq!(position("api error: 50", "api error: 5##"), None);
        assert_eq!(position("x \"statuscode\":504", "\"statuscode\":5##"), Some(2));
        assert_eq!(rule_of("wrote 500 lines; 529 tests passed").1, "exit_nonzero");
    }

    #[test]
    fn phrases_are_matched_case_insensitively_in_json_and_text() {
        assert_eq!(
            rule_of("API Error: 500 Internal server error."),
            (Category::Environmental, "provider_error".into())
        );
        assert_eq!(
            rule_of(r#"{"error":{"data":{"statusCode": 503,"responseBody":"{\"x\":1}"}}}"#),
            (Category::Environmental, "provider_overloaded".into())
        );
        assert_eq!(rule_of("getaddrinfo ENOTFOUND api.anthropic.com").1, "dns_failure");
        assert_eq!(rule_of("Error: Session not found"), (Category::Agent, "session_not_found".into()));
    }

    #[test]
    fn user_errors_win_over_transient_ones() {
        // OpenAI's insufficient_quota arrives as a 429.
        let quota = r#"{"statusCode":429,"message":"You exceeded your current quota, please check your plan and billing details."}"#;
        assert_eq!(rule_of(quota), (Category::UserConfig, "billing_disabled".into()));
        assert_eq!(
            rule_of("unexpected status 401 Unauthorized\nstream disconnected before completion").1,
            "auth_failed"
        );
    }

    #[test]
    fn retry_notices_are_not_the_failure() {
        let tail = "Reconnecting... 1/5 (unexpected status 529 Overloaded)\nsomething else went wrong";
        assert_eq!(rule_of(tail).1, "exit_nonzero");
    }

    #[test]
    fn model_text_and_tool_output_are_not_error_text() {
        let events = [
            AgentEvent::Text { text: "API Error: 529 Overloaded is what the test checks".into() },
            AgentEvent::ToolFinished { id: "t".into(), is_error: true, output: "ECONNREFUSED 127.0.0.1:9".into() },
            AgentEvent::Result {
                text: "Invalid API key".into(),
                is_error: false,
                subtype: "success".into(),
                api_error_status: None,
            },
        ];
        let c = classify(&text_report(AgentKind::Claude, Exit::Code(0), &events, ""));
        assert_eq!(c.rule.into_str(), "no_done_signal");
    }

    #[test]
    fn tool_unavailable_reads_tool_output_and_resets() {
        let events = [AgentEvent::ToolFinished {
            id: "t".into(),
            is_error: true,
            output: "<tool_use_error>Error: No such tool available: mcp__ralph__done</tool_use_error>".into(),
        }];
        let c = classify(&text_report(AgentKind::Claude, Exit::Code(0), &events, ""));
        assert_eq!((c.category, c.rule), (Category::Agent, Rule::ToolUnavailable));
        assert!(c.fresh_session && c.reset_tool_registry);
        assert!(c.reason.contains("No such tool available"), "{}", c.reason);
    }

    #[test]
    fn fresh_session_rules() {
        let c = classify(&text_report(AgentKind::Codex, Exit::Code(1), &[], "Error: no rollout found for thread id x"));
        assert!(c.fresh_session && !c.reset_tool_registry);
        let c = classify(&text_report(AgentKind::Gemini, Exit::Code(42), &[], ""));
        assert_eq!((c.rule.into_str(), c.fresh_session), ("session_not_found", true));
        // Exit 42 means nothing special for other kinds.
        assert_eq!(classify(&text_report(AgentKind::Claude, Exit::Code(42), &[], "")).rule.into_str(), "exit_nonzero");
        assert!(!classify(&text_report(AgentKind::Claude, Exit::Code(1), &[], "")).fresh_session);
    }

    #[test]
    fn claude_error_results_are_read_with_subtype_success() {
        let events = [AgentEvent::Result {
            text: "Prompt is too long · the request is ~212000 tokens (limit 200000)".into(),
            is_error: true,
            subtype: "success".into(),
            api_error_status: Some(400),
        }];
        let c = classify(&text_report(AgentKind::Claude, Exit::Code(1), &events, ""));
        assert_eq!((c.category, c.rule.into_str(), c.fresh_session), (Category::Agent, "context_too_long", true));
    }

    #[test]
    fn structured_evidence_beats_text() {
        // A 529 result whose text mentions a key problem is still the 529.
        let mut r = error_result(529);
        if let AgentEvent::Result { text, .. } = &mut r {
            *text = "API Error: 529 Overloaded (Invalid API key rotation pending)".into();
        }
        assert_eq!(classify(&report(Exit::Code(1), &[r])).rule.into_str(), "provider_overloaded");
        assert_eq!(classify(&report(Exit::Code(1), &[error_result(500)])).rule.into_str(), "provider_error");
        let allowed_after_rejected = [
            AgentEvent::RateLimit { status: "rejected".into(), resets_at: None, limit_type: None },
            AgentEvent::RateLimit { status: "allowed".into(), resets_at: None, limit_type: None },
        ];
        assert_eq!(classify(&report(Exit::Code(1), &allowed_after_rejected)).rule.into_str(), "exit_nonzero");
    }

    #[test]
    fn stall_after_a_provider_retry_is_environmental() {
        let events = [
            AgentEvent::ApiRetry { attempt: 1, error: "overloaded".into(), status: Some(529) },
            AgentEvent::Unknown { kind: "stream_event".into() },
        ];
        let mut r = report(Exit::Signal(2), &events);
        r.ended_by = EndedBy::Ralph(Detector::Stall);
        assert_eq!(classify(&r).rule.into_str(), "stall_in_provider_retry");
        let events = [
            AgentEvent::ApiRetry { attempt: 1, error: "x".into(), status: None },
            AgentEvent::Text { text: "ok".into() },
        ];
        let mut r = report(Exit::Signal(2), &events);
        r.ended_by = EndedBy::Ralph(Detector::Stall);
        assert_eq!(classify(&r).rule.into_str(), "stall");
    }

    #[test]
    fn missing_binary_needs_exit_127_and_the_shell_saying_so() {
        let c = classify(&text_report(AgentKind::Command, Exit::Code(127), &[], "bash: my-agent: command not found"));
        assert_eq!((c.category, c.rule.into_str()), (Category::UserConfig, "binary_missing"));
        assert_eq!(
            classify(&text_report(AgentKind::Command, Exit::Code(127), &[], "")).rule.into_str(),
            "exit_nonzero"
        );
        assert_eq!(
            classify(&text_report(AgentKind::Command, Exit::Code(1), &[], "bash: rg: command not found"))
                .rule
                .into_str(),
            "exit_nonzero"
        );
    }

    #[test]
    fn reasons_quote_the_matching_part_of_long_lines() {
        let line = format!(
            r#"{{"type":"result","padding":"{}","error":{{"message":"[API Error: The model is overloaded.]"}}}}"#,
            "x".repeat(300)
        );
        let (_, reason) = {
            let c = classify(&text_report(AgentKind::Gemini, Exit::Code(247), &[], &line));
            (c.rule, c.reason)
        };
        assert!(reason.contains("The model is overloaded"), "{reason}");
        assert!(reason.starts_with("the provider is overloaded: …"), "{reason}");
    }

    fn stderr_report<'a>(stdout: &'a str, stderr: &'a str, events: &'a [AgentEvent]) -> Report<'a> {
        Report {
            kind: AgentKind::Command,
            exit: Exit::Code(1),
            ended_by: EndedBy::Agent,
            events,
            text_tail: stdout,
            stderr_tail: stderr,
            missing_done: "",
            errors: &[],
            now: 1_000,
            interruption: None,
        }
    }

    #[test]
    fn common_wordings_from_any_agent_in_its_own_error() {
        let cases = [
            ("Error: rate limit exceeded", Category::Environmental, "rate_limited"),
            ("HTTP 429 Too Many Requests", Category::Environmental, "rate_limited"),
            ("Overloaded", Category::Environmental, "provider_overloaded"),
            ("error: Server is overloaded, try later", Category::Environmental, "provider_overloaded"),
            ("503 Service Unavailable", Category::Environmental, "provider_overloaded"),
            ("Error: connection refused", Category::Environmental, "connection_refused"),
            ("API Error: Connection error.", Category::Environmental, "connection_refused"),
            ("You exceeded your current quota, please check your plan", Category::UserConfig, "billing_disabled"),
        ];
        for (line, category, rule) in cases {
            let stderr = format!("starting\n{line}\n");
            let c = classify(&stderr_report("", &stderr, &[]));
            assert_eq!((c.category, c.rule.into_str()), (category, rule), "{line}");
            // The same words in an error event of a structured agent.
            let events = [AgentEvent::Error { message: line.to_string() }];
            assert_eq!(classify(&stderr_report("", "", &events)).rule.into_str(), rule, "{line} as an event");
        }
    }

    #[test]
    fn common_wordings_elsewhere_are_not_the_agents_error() {
        // A text agent's stdout (its test suite's output), tool results, assistant
        // text, early stderr lines, and words inside longer words.
        let tool = [AgentEvent::ToolFinished { id: "t".into(), is_error: true, output: "Connection refused".into() }];
        let said = [AgentEvent::Text { text: "The server is overloaded, I think.".into() }];
        let early = "Too Many Requests\n1\n2\n3\n4\n5\n";
        for (stdout, stderr, events) in [
            ("test_db ... connection refused\nFAILED", "", &[][..]),
            ("", "", &tool[..]),
            ("", "", &said[..]),
            ("", early, &[][..]),
            ("", "flag --not-overloadedness set", &[][..]),
        ] {
            let c = classify(&stderr_report(stdout, stderr, events));
            assert_eq!(c.rule.into_str(), "exit_nonzero", "{stdout:?} {stderr:?} {events:?}");
        }
    }

    #[test]
    fn a_rejected_flag_is_the_users_to_fix() {
        for line in [
            "error: unknown option '--output-format'",
            "error: unexpected argument '--skip-git-repo-check' found",
            "Unknown arguments: yolo",
        ] {
            let c = classify(&stderr_report("", line, &[]));
            assert_eq!((c.category, c.rule), (Category::UserConfig, Rule::CliRejectedArgument), "{line}");
        }
    }

    #[test]
    fn only_a_tool_dispatch_error_is_a_lost_tool() {
        let out = |output: &str| [AgentEvent::ToolFinished { id: "t".into(), is_error: true, output: output.into() }];
        for gone in [
            "Error: tool mcp__ralph__declare_complete is not registered",
            "Tool \"declare_complete\" is not registered",
            "No such tool available: mcp__x",
        ] {
            let events = out(gone);
            assert_eq!(classify(&stderr_report("", "", &events)).rule, Rule::ToolUnavailable, "{gone}");
        }
        for other in [
            "Failed to start foo.service: Unit foo.service is not registered",
            "Error: image foo not found in registry",
            "the handler is not registered yet",
        ] {
            let events = out(other);
            assert_eq!(classify(&stderr_report("", "", &events)).rule.into_str(), "exit_nonzero", "{other}");
        }
    }

    #[test]
    fn configured_wordings_classify_and_capture_the_reset() {
        let errors = [
            ErrorPattern { pattern: r"quota resets in (?P<reset_in>\d+)s".into(), category: Category::Environmental },
            ErrorPattern { pattern: r"(?i)licen[cs]e expired".into(), category: Category::UserConfig },
            ErrorPattern { pattern: r"blip".into(), category: Category::Environmental },
        ];
        let mut r = stderr_report("", "warming up\nmy-agent: quota resets in 90s", &[]);
        r.errors = &errors;
        let c = classify(&r);
        assert_eq!((c.category, c.rule, c.reset_at), (Category::Environmental, Rule::RateLimited, Some(1_090)));
        r.stderr_tail = "License expired on 2026-01-01";
        let c = classify(&r);
        assert_eq!((c.category, c.rule), (Category::UserConfig, Rule::ConfiguredError));
        assert!(c.reason.contains("License expired"), "{}", c.reason);
        r.stderr_tail = "network blip";
        assert_eq!(classify(&r).category, Category::Environmental);
        assert_eq!(parse_reset_at("2026-01-15T12:00:00Z"), Some(1_768_478_400));
        assert_eq!(parse_reset_in("5m", 0), Some(300));
    }
}

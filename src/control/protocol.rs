//! The control protocol, as data and pure rules: one JSON request per line, one JSON
//! reply per line. [`route`] decides what a request means for the run given its live
//! state: an answer now, or a message for the dispatcher plus the answer.

use serde::{Deserialize, Serialize};

/// The longest request line accepted, in bytes; a longer one gets an error reply.
pub(crate) const MAX_LINE: usize = 64 * 1024;
/// Evidence shorter than this (after trimming) does not prove anything.
pub(crate) const MIN_EVIDENCE: usize = 20;
/// Evidence that says nothing about how the work was verified (compared lowercase,
/// trimmed, without a final full stop).
pub(crate) const PLACEHOLDERS: &[&str] = &[
    "done",
    "n/a",
    "na",
    "none",
    "tested",
    "it works",
    "works",
    "all good",
    "looks good",
    "verified",
    "see above",
    "completed",
    "complete",
    "ok",
    "todo",
    "tbd",
    "all tests pass",
    "tests pass",
];
/// Bytes kept of any free text an agent sends (a summary, a reason).
pub(crate) const MAX_TEXT: usize = 4 * 1024;

/// A request, as `{"op": "...", ...}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Request {
    /// The live state.
    Status {},
    /// Stop after the current iteration (`now = false`) or as a first Ctrl+C.
    Stop {
        #[serde(default)]
        now: bool,
    },
    /// `ralph mcp` started (or reconnected) for this attempt.
    Hello {
        attempt: u32,
    },
    /// `ralph mcp` is shutting down in order.
    Bye {
        attempt: u32,
    },
    Progress {
        attempt: u32,
        message: String,
    },
    Checkpoint {
        attempt: u32,
        summary: String,
        #[serde(default)]
        files_touched: Vec<String>,
        steps_done: Vec<String>,
        next_steps: Vec<String>,
    },
    TaskStatus {
        attempt: u32,
    },
    Interruption {
        attempt: u32,
        reason: String,
    },
    Complete {
        attempt: u32,
        summary: String,
        evidence: String,
        #[serde(default)]
        goal_complete: bool,
    },
    Cancel {
        attempt: u32,
        reason: String,
    },
    /// The session connection of `ralph mcp` closed without its `bye`: the server
    /// crashed or was killed. Never on the wire: only the server itself sends it.
    #[serde(skip)]
    McpLost {
        attempt: u32,
    },
}

/// A reply: `{"ok": true, ...}` or `{"ok": false, "error": "..."}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub(crate) struct Reply {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Live>,
}

impl Reply {
    pub(crate) fn ok(message: impl Into<String>) -> Self {
        Self { ok: true, error: None, message: Some(message.into()), live: None }
    }
    pub(crate) fn error(error: impl Into<String>) -> Self {
        Self { ok: false, error: Some(error.into()), message: None, live: None }
    }
    pub(crate) fn live(live: Live) -> Self {
        Self { ok: true, error: None, message: None, live: Some(live) }
    }
}

/// What a running ralph is doing, as the dispatcher last published it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub(crate) struct Live {
    pub run_id: String,
    pub pid: u32,
    pub phase: String,
    pub iteration: u32,
    pub iterations: u32,
    pub agent: String,
    /// The attempt running now (0 before the first).
    pub attempt: u32,
    /// The checkpoint status: running, waiting, …
    pub status: String,
    /// What the run waits for, when it waits (a backoff, a rate-limit reset, …).
    pub waiting_for: Option<String>,
    /// The journal kind of the last run event.
    pub last_event: Option<String>,
    /// `ralph stop` was asked and the run will stop after this iteration.
    pub stop_requested: bool,
    /// Attempts left before the run's caps, when it has any.
    pub budget: Option<String>,
    /// The latest `save_checkpoint` summary of this iteration.
    pub last_checkpoint: Option<String>,
    /// The recovery note the agent was given.
    pub recovery_note: Option<String>,
}

/// What the dispatcher is told by the socket: a request [`route`] passed on (its free
/// text bounded), or [`Request::McpLost`]. Each names the attempt it belongs to.
pub(crate) type Inbound = Request;

/// Reads one request line (without its newline).
pub(crate) fn parse(line: &[u8]) -> Result<Request, String> {
    if line.len() > MAX_LINE {
        return Err(format!("request too long: {} bytes, at most {MAX_LINE}", line.len()));
    }
    let text = std::str::from_utf8(line).map_err(|_| "request is not UTF-8".to_string())?;
    serde_json::from_str(text).map_err(|e| format!("malformed request: {e}"))
}

/// Why this evidence is refused, if it is.
pub(crate) fn check_evidence(evidence: &str) -> Result<(), String> {
    let trimmed = evidence.trim();
    let bare = trimmed.trim_end_matches('.').to_lowercase();
    if PLACEHOLDERS.contains(&bare.as_str()) {
        return Err(format!(
            "evidence \"{trimmed}\" is a placeholder: say what you ran or checked and what it showed \
             (for example the test command and its result)"
        ));
    }
    if trimmed.chars().count() < MIN_EVIDENCE {
        return Err(format!(
            "evidence is too short ({} characters, at least {MIN_EVIDENCE}): say how the work was verified",
            trimmed.chars().count()
        ));
    }
    Ok(())
}

/// Cuts free text to [`MAX_TEXT`] bytes on a char boundary.
pub(crate) fn bounded(text: &str) -> String {
    let text = text.trim();
    if text.len() <= MAX_TEXT {
        return text.to_string();
    }
    let mut cut = MAX_TEXT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// What to do with a request: the reply, and what (if anything) the dispatcher must hear.
pub(crate) fn route(request: Request, live: &Live) -> (Reply, Option<Inbound>) {
    use Request::{
        Bye, Cancel, Checkpoint, Complete, Hello, Interruption, McpLost, Progress, Status, Stop, TaskStatus,
    };
    if let Hello { attempt }
    | TaskStatus { attempt }
    | Progress { attempt, .. }
    | Checkpoint { attempt, .. }
    | Interruption { attempt, .. }
    | Complete { attempt, .. }
    | Cancel { attempt, .. } = request
        && (attempt != live.attempt || live.attempt == 0)
    {
        let error = format!(
            "attempt {attempt} is not running (the run is at attempt {}); this session's tools are stale",
            live.attempt
        );
        return (Reply::error(error), None);
    }
    match request {
        Status {} | TaskStatus { .. } => (Reply::live(live.clone()), None),
        Stop { now } => {
            let msg = if now { "stopping now, like a first Ctrl+C" } else { "stopping after the current iteration" };
            (Reply::ok(msg), Some(Inbound::Stop { now }))
        }
        Hello { attempt } => (Reply::ok("connected"), Some(Inbound::Hello { attempt })),
        Bye { attempt } => (Reply::ok("bye"), Some(Inbound::Bye { attempt })),
        // Not deserialisable: only the server itself makes it.
        McpLost { .. } => (Reply::error("unknown request"), None),
        Progress { attempt, message } => {
            (Reply::ok("progress noted"), Some(Inbound::Progress { attempt, message: bounded(&message) }))
        }
        Checkpoint { summary, .. } if summary.trim().is_empty() => {
            (Reply::error("summary is empty: say what is verified so far"), None)
        }
        Checkpoint { attempt, summary, files_touched, steps_done, next_steps } => {
            let list = |v: Vec<String>| v.iter().take(50).map(|s| bounded(s)).collect::<Vec<_>>();
            let inbound = Inbound::Checkpoint {
                attempt,
                summary: bounded(&summary),
                files_touched: list(files_touched),
                steps_done: list(steps_done),
                next_steps: list(next_steps),
            };
            (Reply::ok("checkpoint saved; later recovery notes include it"), Some(inbound))
        }
        Interruption { attempt, reason } => (
            Reply::ok("interruption recorded; end your turn now"),
            Some(Inbound::Interruption { attempt, reason: bounded(&reason) }),
        ),
        Complete { attempt, summary, evidence, goal_complete } => match check_evidence(&evidence) {
            Err(why) => (Reply::error(why), None),
            Ok(()) => (
                Reply::ok("completion recorded; end your turn now"),
                Some(Inbound::Complete {
                    attempt,
                    summary: bounded(&summary),
                    evidence: bounded(&evidence),
                    goal_complete,
                }),
            ),
        },
        Cancel { reason, .. } if reason.trim().is_empty() => {
            (Reply::error("reason is empty: say why the task cannot go on"), None)
        }
        Cancel { attempt, reason } => (
            Reply::ok("the run will stop blocked once you end your turn"),
            Some(Inbound::Cancel { attempt, reason: bounded(&reason) }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(attempt: u32) -> Live {
        Live { attempt, ..Live::default() }
    }

    #[test]
    fn garbage_and_oversized_lines_are_errors_not_panics() {
        assert!(parse(b"not json").unwrap_err().contains("malformed"));
        assert!(parse(&[0xff, 0xfe]).unwrap_err().contains("UTF-8"));
        assert!(parse(&vec![b'x'; MAX_LINE + 1]).unwrap_err().contains("too long"));
        assert!(parse(br#"{"op":"status","extra":1}"#).is_err());
        assert!(parse(br#"{"op":"launch_missiles"}"#).is_err());
        // Only the server itself reports a lost session.
        assert!(parse(br#"{"op":"mcp_lost","attempt":1}"#).is_err());
        assert_eq!(parse(br#"{"op":"stop"}"#).unwrap(), Request::Stop { now: false });
    }

    #[test]
    fn evidence_must_say_how_the_work_was_verified() {
        for bad in ["done", " Tested. ", "n/a", "ok", "short but real", "   "] {
            assert!(check_evidence(bad).is_err(), "{bad}");
        }
        assert!(check_evidence("cargo test: 41 passed, 0 failed").is_ok());
    }

    #[test]
    fn tools_of_another_attempt_are_refused() {
        let (reply, inbound) = route(Request::Progress { attempt: 2, message: "x".into() }, &live(3));
        assert!(!reply.ok && inbound.is_none(), "{reply:?}");
        let (reply, inbound) = route(Request::Progress { attempt: 3, message: "x".into() }, &live(3));
        assert!(reply.ok && inbound.is_some());
    }

    #[test]
    fn a_placeholder_completion_is_refused_with_the_reason() {
        let req = Request::Complete { attempt: 1, summary: "s".into(), evidence: "done".into(), goal_complete: false };
        let (reply, inbound) = route(req, &live(1));
        assert!(reply.error.as_deref().unwrap_or("").contains("placeholder"));
        assert!(inbound.is_none());
    }

    #[test]
    fn stop_is_always_accepted() {
        let (reply, inbound) = route(Request::Stop { now: true }, &live(0));
        assert!(reply.ok);
        assert_eq!(inbound, Some(Inbound::Stop { now: true }));
    }

    #[test]
    fn free_text_is_bounded() {
        assert!(bounded(&"é".repeat(MAX_TEXT)).len() <= MAX_TEXT + 3);
    }
}

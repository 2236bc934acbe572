//! The control protocol, as data and pure rules: one JSON request per line, one JSON
//! reply per line. [`route`] decides what a request means for the run given its live
//! state: an answer now, or a message for the dispatcher plus the answer. A person's
//! command carries the run it is meant for ([`Claim`]: what the client sees of its
//! directory), and the run answers it only when that is itself ([`addressed_to`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::state::identity::{self, Identity, Mismatch, Recorded};

/// The longest request line accepted, in bytes; a longer one gets an error reply.
pub(crate) const MAX_LINE: usize = 64 * 1024;
/// Evidence whose distinct words make fewer characters than this does not prove
/// anything.
pub(crate) const MIN_EVIDENCE: usize = 20;
/// Evidence written with fewer different letters and digits than this is padding.
pub(crate) const MIN_DISTINCT: usize = 8;
/// Evidence that says nothing about how the work was verified (compared by their
/// words: case, punctuation, spacing and repeated words do not count).
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
/// Bytes kept of any free text an agent sends (a summary, a reason, a list item).
pub(crate) const MAX_TEXT: usize = 4 * 1024;
/// Items kept of each list of a `save_checkpoint`.
pub(crate) const MAX_ITEMS: usize = 50;
/// Bytes (as JSON) kept of a whole `save_checkpoint`: past it the last items of its
/// lists are left out, and each list that lost some says how many. It keeps every
/// request within [`MAX_LINE`], and the note that goes into every later prompt small.
pub(crate) const MAX_NOTE: usize = 48 * 1024;

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
    /// The request was meant for another run (its [`Claim`] is not this run): the
    /// client reached this socket through a record that is not this run's own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other_run: bool,
}

impl Reply {
    pub(crate) fn ok(message: impl Into<String>) -> Self {
        Self { ok: true, error: None, message: Some(message.into()), live: None, other_run: false }
    }
    pub(crate) fn error(error: impl Into<String>) -> Self {
        Self { ok: false, error: Some(error.into()), message: None, live: None, other_run: false }
    }
    pub(crate) fn live(live: Live) -> Self {
        Self { ok: true, error: None, message: None, live: Some(live), other_run: false }
    }
    /// The refusal of a request meant for another run.
    pub(crate) fn not_addressed(why: &Mismatch) -> Self {
        Self { other_run: true, ..Self::error(why.to_string()) }
    }
}

/// The run a person's command is meant for, as its client sees it: the identity of
/// the client's directory and the run id its `.agent/control.sock.path` names (when
/// the record has one). On the wire as the request's `"to"`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Claim {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub dir: Identity,
}

/// Who a run's socket serves: its run id and the identity of its directory, taken
/// when the run started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Serving {
    pub run_id: String,
    pub dir: Identity,
}

/// Whether a request with `claim` is meant for the run `serving`; a request without
/// one (`ralph mcp`, which the run itself told where to connect) always is.
pub(crate) fn addressed_to(claim: Option<&Claim>, serving: &Serving) -> Result<(), Mismatch> {
    let Some(claim) = claim else { return Ok(()) };
    // Both look at the same kernel now: devices count.
    let recorded = Recorded { run_id: &serving.run_id, identity: Some(&serving.dir) };
    identity::check(recorded, claim.run_id.as_deref(), &Ok(claim.dir), true)
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
    /// When the attempt running now started (unix seconds).
    pub attempt_started_at: Option<i64>,
    /// When its agent last printed anything (unix seconds).
    pub agent_output_at: Option<i64>,
    /// When the wait ends (unix seconds), while the run waits.
    pub waiting_until: Option<i64>,
    /// When the last run event happened (unix seconds).
    pub last_event_at: Option<i64>,
}

/// What the dispatcher is told by the socket: a request [`route`] passed on (its free
/// text bounded), or [`Request::McpLost`]. Each names the attempt it belongs to.
pub(crate) type Inbound = Request;

/// Reads one request line (without its newline).
pub(crate) fn parse(line: &[u8]) -> Result<Request, String> {
    parse_addressed(line).map(|(request, _)| request)
}

/// Reads one request line and the run it is meant for (its `"to"`), if it names one.
pub(crate) fn parse_addressed(line: &[u8]) -> Result<(Request, Option<Claim>), String> {
    if line.len() > MAX_LINE {
        return Err(format!("request too long: {} bytes, at most {MAX_LINE}", line.len()));
    }
    let text = std::str::from_utf8(line).map_err(|_| "request is not UTF-8".to_string())?;
    let malformed = |e: serde_json::Error| format!("malformed request: {e}");
    let mut object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).map_err(malformed)?;
    let claim = object.remove("to").map(serde_json::from_value::<Claim>).transpose().map_err(malformed)?;
    let request = serde_json::from_value(serde_json::Value::Object(object)).map_err(malformed)?;
    Ok((request, claim))
}

/// One request line (with its newline), meant for `claim` when there is one.
pub(crate) fn encode(request: &Request, claim: Option<&Claim>) -> Result<String, String> {
    let mut value = serde_json::to_value(request).map_err(|e| e.to_string())?;
    if let (Some(claim), Some(object)) = (claim, value.as_object_mut()) {
        object.insert("to".into(), serde_json::to_value(claim).map_err(|e| e.to_string())?);
    }
    Ok(format!("{value}\n"))
}

/// The substance of evidence: its words (runs of letters and digits), lowercase,
/// each once, in order, joined by single spaces. Padding (spaces, full stops,
/// repeated words) adds nothing to it.
fn substance(text: &str) -> String {
    let mut seen = BTreeSet::new();
    let words = text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase);
    words.filter(|w| seen.insert(w.clone())).collect::<Vec<_>>().join(" ")
}

/// Why this evidence is refused, if it is: evidence is judged by its substance.
pub(crate) fn check_evidence(evidence: &str) -> Result<(), String> {
    let words = substance(evidence);
    let shown = bounded(evidence.trim()).chars().take(80).collect::<String>();
    if words.is_empty() || PLACEHOLDERS.iter().any(|p| substance(p) == words) {
        return Err(format!(
            "evidence \"{shown}\" is a placeholder: say what you ran or checked and what it showed \
             (for example the test command and its result)"
        ));
    }
    let length = words.chars().count();
    if length < MIN_EVIDENCE {
        return Err(format!(
            "evidence is too short ({length} characters of distinct words, at least {MIN_EVIDENCE}): say how the \
             work was verified"
        ));
    }
    let distinct = words.chars().filter(|c| c.is_alphanumeric()).collect::<BTreeSet<_>>().len();
    if distinct < MIN_DISTINCT {
        return Err(format!(
            "evidence \"{shown}\" is padding ({distinct} different letters or digits): say what you ran or \
             checked and what it showed"
        ));
    }
    Ok(())
}

/// Cuts free text to [`MAX_TEXT`] bytes (an ellipsis included) on a char boundary;
/// text cut once is not cut again.
pub(crate) fn bounded(text: &str) -> String {
    let text = text.trim();
    if text.len() <= MAX_TEXT {
        return text.to_string();
    }
    let mut cut = MAX_TEXT - '…'.len_utf8();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// `request` within the bounds the run keeps (every free text at [`MAX_TEXT`], a
/// checkpoint's lists at [`MAX_ITEMS`] and the whole at [`MAX_NOTE`]), so that its
/// line always fits in [`MAX_LINE`]. `ralph mcp` sends requests fitted, and the run
/// fits what it receives: an agent's oversized note is cut, never refused.
pub(crate) fn fit(mut request: Request) -> Request {
    match &mut request {
        Request::Progress { message: text, .. }
        | Request::Interruption { reason: text, .. }
        | Request::Cancel { reason: text, .. } => *text = bounded(text),
        Request::Complete { summary, evidence, .. } => (*summary, *evidence) = (bounded(summary), bounded(evidence)),
        Request::Checkpoint { summary, files_touched, steps_done, next_steps, .. } => {
            *summary = bounded(summary);
            let lists = [&mut *files_touched, &mut *steps_done, &mut *next_steps].map(std::mem::take);
            [*files_touched, *steps_done, *next_steps] = fit_lists(summary, lists);
        }
        _ => {}
    }
    request
}

/// A checkpoint's lists within [`MAX_ITEMS`] and, with `summary`, [`MAX_NOTE`]: items
/// are taken in turn from each list (the first of each, then the second, …) while
/// they fit, and a list that lost items ends with one that says how many.
fn fit_lists(summary: &str, lists: [Vec<String>; 3]) -> [Vec<String>; 3] {
    // Bytes of JSON an item costs (with its comma), and room for the markers and keys.
    let cost = |item: &str| serde_json::to_string(item).map_or(item.len() * 6, |json| json.len()) + 1;
    let mut budget = MAX_NOTE.saturating_sub(cost(summary) + 512);
    // A list fitted before (by `ralph mcp`) ends with its marker: counted, not kept.
    let lists = lists.map(|mut list| {
        let earlier = list.last().and_then(|last| dropped(last));
        if earlier.is_some() {
            list.pop();
        }
        (list, earlier.unwrap_or(0))
    });
    let totals = lists.each_ref().map(|(list, earlier)| list.len() + earlier);
    let mut items = lists.map(|(list, _)| list.into_iter());
    let mut kept: [Vec<String>; 3] = Default::default();
    let mut open = [true; 3];
    for _ in 0..MAX_ITEMS {
        for k in 0..3 {
            let Some(item) = items[k].next().filter(|_| open[k]) else {
                open[k] = false;
                continue;
            };
            let item = bounded(&item);
            match cost(&item) {
                c if c <= budget => {
                    budget -= c;
                    kept[k].push(item);
                }
                _ => open[k] = false,
            }
        }
    }
    for (list, total) in kept.iter_mut().zip(totals) {
        if list.len() < total {
            list.push(format!("… {} more not kept", total - list.len()));
        }
    }
    kept
}

/// How many items a list's last item says were left out, when it is that marker.
fn dropped(item: &str) -> Option<usize> {
    item.strip_prefix("… ")?.strip_suffix(" more not kept")?.parse().ok()
}

/// What to do with a request: the reply, and what (if anything) the dispatcher must
/// hear (its free text within bounds, see [`fit`]).
pub(crate) fn route(request: Request, live: &Live) -> (Reply, Option<Inbound>) {
    use Request::{
        Bye, Cancel, Checkpoint, Complete, Hello, Interruption, McpLost, Progress, Status, Stop, TaskStatus,
    };
    let request = fit(request);
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
    let reply = match &request {
        Status {} | TaskStatus { .. } => return (Reply::live(live.clone()), None),
        // Not deserialisable: only the server itself makes it.
        McpLost { .. } => return (Reply::error("unknown request"), None),
        Stop { now: true } => Reply::ok("stopping now, like a first Ctrl+C"),
        Stop { now: false } => Reply::ok("stopping after the current iteration"),
        Hello { .. } => Reply::ok("connected"),
        Bye { .. } => Reply::ok("bye"),
        Progress { .. } => Reply::ok("progress noted"),
        Checkpoint { summary, .. } if summary.trim().is_empty() => {
            return (Reply::error("summary is empty: say what is verified so far"), None);
        }
        Checkpoint { .. } => Reply::ok("checkpoint saved; later recovery notes include it"),
        Interruption { .. } => Reply::ok("interruption recorded; end your turn now"),
        Complete { evidence, .. } => match check_evidence(evidence) {
            Err(why) => return (Reply::error(why), None),
            Ok(()) => Reply::ok("completion recorded; end your turn now"),
        },
        Cancel { reason, .. } if reason.trim().is_empty() => {
            return (Reply::error("reason is empty: say why the task cannot go on"), None);
        }
        Cancel { .. } => Reply::ok("the run will stop blocked once you end your turn"),
    };
    (reply, Some(request))
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
    fn padded_evidence_is_judged_by_its_substance() {
        let ok_padded = format!("ok{}.", " ".repeat(40));
        for bad in [
            ok_padded.as_str(),
            "aaaaaaaaaaaaaaaaaaaa",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "done done done done done done done done",
            "Tests pass!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
            "tests   pass . tests pass . tests pass",
            "N/A ....................................",
            "aaaa bbbb cccc dddd eeee ffff",
            ".....................................",
        ] {
            assert!(check_evidence(bad).is_err(), "{bad:?}");
        }
        for good in [
            "cargo test: 41 passed, 0 failed",
            "ran pytest, all green",
            "make check: 0 errors, 312 tests run",
            "全てのテストを実行し、すべて成功したことを確認しました",
        ] {
            assert_eq!(check_evidence(good), Ok(()), "{good:?}");
        }
        assert!(check_evidence(&ok_padded).unwrap_err().contains("placeholder"));
        assert!(check_evidence("aaaaaaaaaaaaaaaaaaaa").unwrap_err().contains("padding"));
    }

    #[test]
    fn a_checkpoint_of_a_thousand_items_is_cut_to_fit_not_refused() {
        let many = |what: &str| (0..1000).map(|i| format!("{what} {i}: {}", "x".repeat(100))).collect::<Vec<_>>();
        let request = Request::Checkpoint {
            attempt: 1,
            summary: "s".repeat(10_000),
            files_touched: many("file"),
            steps_done: many("step"),
            next_steps: vec!["the rest".into()],
        };
        let fitted = fit(request);
        let line = encode(&fitted, None).unwrap();
        assert!(line.len() <= MAX_LINE, "{} bytes", line.len());
        let Request::Checkpoint { summary, files_touched, steps_done, next_steps, .. } = fitted.clone() else {
            panic!("{fitted:?}")
        };
        assert!(summary.len() <= MAX_TEXT);
        assert_eq!(steps_done.len(), MAX_ITEMS + 1, "50 items and the marker");
        assert_eq!(steps_done.last().map(String::as_str), Some("… 950 more not kept"));
        assert_eq!(files_touched.len(), MAX_ITEMS + 1);
        assert_eq!(next_steps, ["the rest"]);
        let (reply, inbound) = route(fitted.clone(), &live(1));
        assert!(reply.ok, "{reply:?}");
        assert_eq!(inbound, Some(fitted.clone()), "fitting twice changes nothing");
        // Texts of escapes only (each byte six as JSON) still fit.
        let escapes = Request::Checkpoint {
            attempt: 1,
            summary: "\u{1}".repeat(MAX_TEXT),
            files_touched: vec![],
            steps_done: vec!["\u{1}".repeat(MAX_TEXT); 200],
            next_steps: vec!["\u{2}".repeat(MAX_TEXT); 200],
        };
        let line = encode(&fit(escapes), None).unwrap();
        assert!(line.len() <= MAX_LINE, "{} bytes", line.len());
    }

    #[test]
    fn a_request_names_the_run_it_is_meant_for_and_only_that_run_answers() {
        use crate::state::identity::DirId;
        let dir = |ino| Identity { project: DirId { dev: 1, ino }, agent_dir: DirId { dev: 1, ino: ino + 1 } };
        let serving = Serving { run_id: "r1".into(), dir: dir(10) };
        let claim = Claim { run_id: Some("r1".into()), dir: dir(10) };
        let line = encode(&Request::Stop { now: true }, Some(&claim)).unwrap();
        assert!(line.ends_with('\n') && line.contains("\"to\""), "{line}");
        let (request, parsed) = parse_addressed(line.trim_end().as_bytes()).unwrap();
        assert_eq!((request, parsed.as_ref()), (Request::Stop { now: true }, Some(&claim)));
        assert_eq!(addressed_to(Some(&claim), &serving), Ok(()));
        assert_eq!(addressed_to(None, &serving), Ok(()), "ralph mcp names no run");
        let copy = Claim { run_id: Some("r1".into()), dir: dir(20) };
        assert!(addressed_to(Some(&copy), &serving).is_err());
        let other = Claim { run_id: Some("r0".into()), dir: dir(10) };
        assert!(addressed_to(Some(&other), &serving).is_err());
        assert!(parse_addressed(br#"{"op":"status","to":{"dir":1}}"#).is_err());
        assert!(Reply::not_addressed(&identity::Mismatch::OtherDirectory(identity::Part::Project)).other_run);
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

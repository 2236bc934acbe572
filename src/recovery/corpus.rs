//! The classifier and the reset parser against `tests/corpus/errors/<cli>/<case>.txt`:
//! error output shaped like each CLI prints it, with the expected verdict in a header.
//!
//! File layout: `# key: value` header lines, then `--- stdout` / `--- stderr`
//! sections. Keys: `expect` (category and rule), `exit` (`N` or `signal N`),
//! `ended_by` (default `agent`), `reset` (RFC 3339 time and source, read with the
//! clock at [`NOW`]), `flags` (`fresh` or `reset_tools`; absent means neither),
//! `origin` (where the text comes from: "captured" from a real CLI run, or "shaped";
//! required, so nobody mistakes a shaped
//! case for a captured one), `note`, `requests` (informative: how many model
//! requests a captured run sent to the fake provider).
//!
//! stdout goes through the CLI's own stream parser, as in an attempt (ralph's own
//! cases are shaped like Claude's stream); a CLI without a parser contributes its
//! raw stdout to the text tail. stderr is always text tail.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::Category;
use super::classify::{EndedBy, Exit, Report, classify};
use super::reset::reset_time;
use crate::agent::claude_stream::ClaudeStreamParser;
use crate::agent::event::LineParser;
use crate::agent::{AgentEvent, kinds};
use crate::config::AgentKind;
use crate::supervise::Detector;

/// The corpus clock: 2026-01-15T12:00:00Z.
const NOW: i64 = 1_768_478_400;

/// Cases each CLI kind must cover.
const REQUIRED: &[&str] =
    &["overloaded", "500", "429", "usage_limit", "refused", "reset", "dns", "stalled", "401", "403"];

/// Every CLI also covers these rules.
const REQUIRED_RULES: &[&str] = &["model_invalid", "context_too_long", "tool_unavailable", "session_not_found"];

struct Case {
    path: PathBuf,
    header: BTreeMap<String, String>,
    stdout: Vec<String>,
    stderr: Vec<String>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/errors")
}

fn load(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let mut header = BTreeMap::new();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut section: Option<bool> = None;
    for line in text.lines() {
        match line {
            "--- stdout" => section = Some(false),
            "--- stderr" => section = Some(true),
            _ => match section {
                None => {
                    let (k, v) = line
                        .strip_prefix("# ")
                        .and_then(|l| l.split_once(": "))
                        .unwrap_or_else(|| panic!("{}: bad header line {line:?}", path.display()));
                    header.insert(k.to_string(), v.to_string());
                }
                Some(false) => stdout.push(line.to_string()),
                Some(true) => stderr.push(line.to_string()),
            },
        }
    }
    Case { path: path.to_path_buf(), header, stdout, stderr }
}

fn cases() -> Vec<(String, Case)> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(corpus_dir()).unwrap() {
        let dir = dir.unwrap().path();
        let cli = dir.file_name().unwrap().to_string_lossy().to_string();
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "txt") {
                out.push((cli.clone(), load(&file)));
            }
        }
    }
    out.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    out
}

fn kind_of(cli: &str) -> AgentKind {
    match kinds::ALL.into_iter().find(|d| d.kind.into_str() == cli) {
        Some(d) => d.kind,
        None if cli == "ralph" => AgentKind::Sim,
        None => panic!("unknown corpus directory {cli}"),
    }
}

fn category(s: &str) -> Category {
    match s {
        "environmental" => Category::Environmental,
        "agent" => Category::Agent,
        "user_config" => Category::UserConfig,
        "ambiguous" => Category::Ambiguous,
        other => panic!("unknown category {other}"),
    }
}

fn exit(s: &str) -> Exit {
    match s.strip_prefix("signal ") {
        Some(n) => Exit::Signal(n.parse().unwrap()),
        None => Exit::Code(s.parse().unwrap()),
    }
}

fn ended_by(s: Option<&String>) -> EndedBy {
    match s.map(String::as_str) {
        None | Some("agent") => EndedBy::Agent,
        Some("stall") => EndedBy::Ralph(Detector::Stall),
        Some("tool_timeout") => EndedBy::Ralph(Detector::ToolTimeout),
        Some("attempt_timeout") => EndedBy::Ralph(Detector::AttemptTimeout),
        Some(other) => panic!("unknown ended_by {other}"),
    }
}

/// Events, text tail and stderr as an attempt would gather them.
fn evidence(cli: &str, case: &Case) -> (Vec<AgentEvent>, String, String) {
    let mut events = Vec::new();
    let mut tail = String::new();
    let parser: Option<Box<dyn LineParser>> = match kinds::ALL.into_iter().find(|d| d.kind.into_str() == cli) {
        Some(d) => Some((d.parser)((0, 0))),
        None if cli == "ralph" => Some(Box::new(ClaudeStreamParser::new())),
        None => None,
    };
    if let Some(mut parser) = parser {
        for line in &case.stdout {
            let parsed = parser.parse_line(line);
            // As in an attempt: output that is not an event is evidence too.
            if parsed.iter().all(|e| matches!(e, AgentEvent::Unknown { kind } if kind == "non-json")) {
                tail.push_str(line);
                tail.push('\n');
            }
            for e in parsed {
                // The attempt copies error events into the tail.
                if let AgentEvent::Error { message } = &e {
                    tail.push_str(message);
                    tail.push('\n');
                }
                events.push(e);
            }
        }
    } else {
        for line in &case.stdout {
            tail.push_str(line);
            tail.push('\n');
        }
    }
    for line in &case.stderr {
        tail.push_str(line);
        tail.push('\n');
    }
    (events, tail, case.stderr.join("\n"))
}

#[test]
fn every_case_classifies_as_expected() {
    let all = cases();
    assert!(all.len() >= 60, "the corpus shrank to {} cases", all.len());
    let mut failures = Vec::new();
    for (cli, case) in &all {
        let name = case.path.strip_prefix(corpus_dir()).unwrap().display().to_string();
        let h = &case.header;
        let origin = h.get("origin").unwrap_or_else(|| panic!("{name}: no origin line"));
        assert!(
            ["captured", "shaped", "guess", "ralph's own"].iter().any(|w| origin.contains(w)),
            "{name}: the origin must say how the text was obtained"
        );
        let expect = h.get("expect").unwrap_or_else(|| panic!("{name}: no expect line"));
        let (want_category, want_rule) = expect.split_once(' ').unwrap();
        let (events, tail, stderr) = evidence(cli, case);
        let report = Report {
            kind: kind_of(cli),
            exit: exit(h.get("exit").map_or("1", String::as_str)),
            ended_by: ended_by(h.get("ended_by")),
            events: &events,
            text_tail: &tail,
            stderr_tail: &stderr,
            missing_done: "exit 0 without the done tag",
            errors: &[],
            now: NOW,
            interruption: None,
        };
        let got = classify(&report);
        if (got.category, got.rule.into_str()) != (category(want_category), want_rule) {
            failures.push(format!(
                "{name}: want {expect}, got {} {} ({})",
                got.category.into_str(),
                got.rule,
                got.reason
            ));
            continue;
        }
        let flags = h.get("flags").map_or("", String::as_str);
        let want_flags = (flags.contains("fresh") || flags.contains("reset_tools"), flags.contains("reset_tools"));
        if (got.fresh_session, got.reset_tool_registry) != want_flags {
            failures.push(format!(
                "{name}: flags want {want_flags:?}, got ({}, {})",
                got.fresh_session, got.reset_tool_registry
            ));
        }
        let now = Timestamp::from_second(NOW).unwrap();
        if let Some(want) = h.get("reset") {
            let (at, source) = want.split_once(' ').unwrap();
            let at: Timestamp = at.parse().unwrap();
            match reset_time(&events, &tail, now) {
                Some(r) if r.at == at && r.source == source => {}
                other => failures.push(format!("{name}: reset want {want}, got {other:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} corpus cases failed:\n{}", failures.len(), all.len(), failures.join("\n"));
}

#[test]
fn every_cli_covers_the_required_cases() {
    let all = cases();
    for cli in kinds::names() {
        let names: Vec<String> = all
            .iter()
            .filter(|(c, _)| c == cli)
            .map(|(_, case)| case.path.file_stem().unwrap().to_string_lossy().to_string())
            .collect();
        for needle in REQUIRED {
            assert!(names.iter().any(|n| n.contains(needle)), "{cli}: no case named like {needle:?}");
        }
        for rule in REQUIRED_RULES {
            assert!(
                all.iter().any(|(c, case)| c == cli && case.header.get("expect").is_some_and(|e| e.ends_with(rule))),
                "{cli}: no case expecting rule {rule}"
            );
        }
    }
    for rule in ["stall", "no_done_signal", "crashed", "binary_missing"] {
        assert!(
            all.iter().any(|(c, case)| c == "ralph" && case.header.get("expect").is_some_and(|e| e.ends_with(rule))),
            "ralph: no case expecting rule {rule}"
        );
    }
}

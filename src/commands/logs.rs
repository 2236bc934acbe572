//! `ralph logs [-f]`: the transcript of the current or last attempt, readable: a
//! structured stream (Claude Code, Codex, Gemini, OpenCode, the scripted agent) is
//! shown as its parsed events, a text agent's output as it is. `-f` follows it
//! (across the tail segments of a bounded log), and the attempts after it, while a
//! ralph runs here. The attempts are found where `state::attempt_log` says: parts
//! of the run's `attempts.log`, or the files of a run an older ralph began.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::AgentEvent;
use crate::agent::event::LineParser;
use crate::error::RalphError;
use crate::state::attempt_log::{Head, heads};
use crate::text::clock;

/// How often `-f` looks for more.
const POLL: Duration = Duration::from_millis(200);
/// Characters of a tool's input or output shown on one line.
const WIDTH: usize = 200;

pub(crate) fn main(dir: &Path, config: Option<&Path>, follow: bool) -> Result<i32, RalphError> {
    let logs = dir.join(".agent").join("logs");
    let run = current_run(dir, &logs)
        .ok_or_else(|| RalphError::Usage(format!("no attempt logs in {}: no run has started here", logs.display())))?;
    let loaded = crate::config::file::find(dir, config).ok().and_then(|p| crate::config::file::load(&p).ok());
    let mut shown: Option<u32> = None;
    loop {
        let Some(head) = last_attempt(&run, shown) else {
            if shown.is_none() {
                println!("no attempt has started yet in {}", run.display());
            }
            if follow && crate::commands::inspect::live_holder(dir).is_some() {
                std::thread::sleep(POLL);
                continue;
            }
            return Ok(crate::exit::DONE);
        };
        let mut parser = parser(loaded.as_ref(), &head.stem);
        println!("==> {} ({}) <==", head.stem, head.path.display());
        print_attempt(&run, &head, parser.as_deref_mut(), follow, || {
            // Stop following this attempt once a later one exists, or no ralph runs.
            last_attempt(&run, Some(head.number)).is_none() && crate::commands::inspect::live_holder(dir).is_some()
        })?;
        shown = Some(head.number);
        if !follow || last_attempt(&run, shown).is_none() {
            return Ok(crate::exit::DONE);
        }
    }
}

/// The log directory of the checkpoint's run, else the newest one.
fn current_run(dir: &Path, logs: &Path) -> Option<PathBuf> {
    if let Ok(Some(cp)) = crate::commands::inspect::read(dir) {
        let path = logs.join(&cp.run_id);
        if path.is_dir() {
            return Some(path);
        }
    }
    let mut runs: Vec<PathBuf> =
        std::fs::read_dir(logs).ok()?.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    // Run ids begin with their UTC start time: the name order is the time order.
    runs.sort();
    runs.pop()
}

/// The highest-numbered attempt of `run` (above `after`, if given).
fn last_attempt(run: &Path, after: Option<u32>) -> Option<Head> {
    heads(run).into_iter().filter(|h| after.is_none_or(|a| h.number > a)).max_by_key(|h| h.number)
}

/// The parser for the agent of the attempt `stem`, from the config: the stem is
/// `attempt-NNNN-<phase>-<agent>`, and the config names the phases.
fn parser(loaded: Option<&crate::config::Loaded>, stem: &str) -> Option<Box<dyn LineParser>> {
    let loaded = loaded?;
    let (_, rest) = crate::state::attempt_log::parts(stem)?;
    let agent = loaded.phases.iter().find_map(|p| rest.strip_prefix(&format!("{}-", p.name)))?;
    crate::agent::launch::parser_for(loaded.config.agents.get(agent)?)
}

/// Prints an attempt's log: the head, then its tail segments in order (a bounded
/// log goes on in `<stem>.log.1`, `.2`, …; the writer finishes a file before it
/// starts the next, and deletes the oldest of them, so a reader that fell behind
/// skips to the oldest one left, whose first line says how much was cut).
fn print_attempt(
    run: &Path,
    head: &Head,
    mut parser: Option<&mut (dyn LineParser + '_)>,
    follow: bool,
    keep_going: impl Fn() -> bool,
) -> Result<(), RalphError> {
    let segments = run.join(format!("{}.log", head.stem));
    let (mut number, mut path, mut start) = (0, head.path.clone(), head.start);
    // The end of a line the writer split between two segments.
    let mut carry = Vec::new();
    loop {
        // The head ends where the next attempt's begins; a segment, with its file.
        let end = || if number == 0 { end_of(run, head) } else { None };
        print_file(&path, start, end, parser.as_deref_mut(), follow, &mut carry, || {
            next_segment(&segments, number).is_none() && keep_going()
        })?;
        let next = next_segment(&segments, number);
        // Segments were deleted in between: the line's end is not its start.
        if next.as_ref().is_none_or(|(n, _)| *n != number + 1) && !carry.is_empty() {
            show(parser.as_deref_mut(), &std::mem::take(&mut carry));
        }
        match next {
            Some((n, next)) => (number, path, start) = (n, next, 0),
            None => return Ok(()),
        }
    }
}

/// Where `head` ends, as the run's index says now.
fn end_of(run: &Path, head: &Head) -> Option<u64> {
    // The same attempt twice (a crash before its count was saved): the later one.
    heads(run).into_iter().rfind(|h| (h.number, h.start, &h.path) == (head.number, head.start, &head.path))?.end
}

/// The lowest-numbered tail segment of the log `<stem>.log` above `after`.
fn next_segment(log: &Path, after: u32) -> Option<(u32, PathBuf)> {
    let name = log.file_name()?.to_string_lossy().into_owned();
    std::fs::read_dir(log.parent()?)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let n: u32 = file.strip_prefix(&name)?.strip_prefix('.')?.parse().ok()?;
            (n > after).then(|| (n, e.path()))
        })
        .min_by_key(|(n, _)| *n)
}

/// Prints `path` readably from `start` (up to the offset `end` gives, if any),
/// bytes as lossy UTF-8; with `follow`, keeps printing what is appended while
/// `keep_going` says so (and reads once more after it stops saying so: what was
/// written just before counts). `carry` comes in as the unfinished line of the
/// previous segment, and goes out as this file's.
fn print_file(
    path: &Path,
    start: u64,
    end: impl Fn() -> Option<u64>,
    mut parser: Option<&mut (dyn LineParser + '_)>,
    follow: bool,
    carry: &mut Vec<u8>,
    keep_going: impl Fn() -> bool,
) -> Result<(), RalphError> {
    let unreadable = |e| RalphError::io(format!("cannot read {}", path.display()), e);
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
    file.seek(SeekFrom::Start(start)).map_err(unreadable)?;
    let (mut reader, mut at) = (BufReader::new(file).take(0), start);
    let mut line = Vec::new();
    let mut last_pass = !follow;
    loop {
        // As far as the file is written, and never into the next attempt's head: its
        // index line is written before its bytes.
        let written = reader.get_ref().get_ref().metadata().map_err(unreadable)?.len();
        reader.set_limit(end().map_or(written, |end| end.min(written)).saturating_sub(at));
        loop {
            let n = reader.read_until(b'\n', &mut line).map_err(unreadable)?;
            at += n as u64;
            // The end for now, or a line still being written: kept for the next read.
            if n == 0 || !line.ends_with(b"\n") {
                break;
            }
            line.pop();
            // The cut marker that opens a segment comes before the split line's end.
            if !carry.is_empty() && !is_cut_marker(&line) {
                line.splice(0..0, carry.drain(..));
            }
            show(parser.as_deref_mut(), &std::mem::take(&mut line));
        }
        if last_pass {
            carry.append(&mut line);
            return Ok(());
        }
        if keep_going() {
            std::thread::sleep(POLL);
        } else {
            last_pass = true;
        }
    }
}

fn show(parser: Option<&mut (dyn LineParser + '_)>, line: &[u8]) {
    for out in render_line(parser, String::from_utf8_lossy(line).trim_end_matches('\r')) {
        println!("{out}");
    }
}

/// The first line of a tail segment written after older ones were deleted.
fn is_cut_marker(line: &[u8]) -> bool {
    line.starts_with(b"[ralph: ") && line.ends_with(b" bytes of output cut before this point]")
}

/// One line of a transcript as a person reads it: parsed events for a structured
/// stream, the line itself otherwise (and for anything the parser does not know).
pub(crate) fn render_line(parser: Option<&mut (dyn LineParser + '_)>, line: &str) -> Vec<String> {
    if let Some(rest) = line.strip_prefix("[stderr] ") {
        return vec![format!("stderr: {rest}")];
    }
    let Some(parser) = parser else { return vec![line.to_string()] };
    let events = parser.parse_line(line);
    let shown: Vec<String> = events.iter().filter_map(render_event).collect();
    if shown.is_empty() && events.iter().any(|e| matches!(e, AgentEvent::Unknown { kind } if kind == "non-json")) {
        return vec![line.to_string()];
    }
    shown
}

/// One event, readable; `None` for bookkeeping nobody reads.
pub(crate) fn render_event(event: &AgentEvent) -> Option<String> {
    Some(match event {
        AgentEvent::Session { id } => format!("· session {id}"),
        AgentEvent::Text { text } => text.trim_end().to_string(),
        AgentEvent::Thinking { text } => format!("(thinking) {}", cut(text.trim())),
        AgentEvent::ToolStarted { name, input, .. } => format!("→ {name} {}", cut(&input.to_string())),
        AgentEvent::ToolFinished { is_error, output, .. } => {
            format!("← {}{}", if *is_error { "error: " } else { "" }, cut(output.trim()))
        }
        AgentEvent::RateLimit { status, resets_at, limit_type } => {
            let kind = limit_type.as_deref().map(|t| format!(" ({t})")).unwrap_or_default();
            let at = resets_at.and_then(|s| jiff::Timestamp::from_second(s).ok());
            let resets = at.map(|t| format!(", resets {}", clock::stamp(&t.to_string(), &crate::report::zone())));
            format!("· rate limit {status}{kind}{}", resets.unwrap_or_default())
        }
        AgentEvent::ApiRetry { attempt, error, status } => format!(
            "· the agent retries its provider (attempt {attempt}{}): {}",
            status.map(|s| format!(", HTTP {s}")).unwrap_or_default(),
            cut(error)
        ),
        AgentEvent::Error { message } => format!("! error: {}", cut(message)),
        AgentEvent::Usage { input_tokens, output_tokens, cost_usd } => format!(
            "· usage: {input_tokens} input / {output_tokens} output tokens{}",
            cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default()
        ),
        AgentEvent::Result { text, is_error, .. } => {
            // The final message in full: it is what the done signal was read from.
            format!("= result{}:\n{}", if *is_error { " (error)" } else { "" }, text.trim())
        }
        AgentEvent::Unknown { .. } => return None,
    })
}

fn cut(text: &str) -> String {
    crate::text::ellipsis(&text.replace('\n', " ⏎ "), WIDTH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::claude_stream::ClaudeStreamParser;

    #[test]
    fn a_claude_stream_transcript_reads_as_events() {
        let transcript = [
            r#"{"type":"system","subtype":"init","session_id":"sess-1","tools":[]}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Reading the goal."}]},"session_id":"sess-1"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test"}}]},"session_id":"sess-1"}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"test result: ok. 3 passed","is_error":false}]},"session_id":"sess-1"}"#,
            "[stderr] warning: something on stderr",
            "not json at all",
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.\n\n<promise>DONE</promise>","session_id":"sess-1","total_cost_usd":0.0123,"usage":{"input_tokens":1200,"output_tokens":300}}"#,
        ];
        let mut parser = ClaudeStreamParser::default();
        let out: Vec<String> =
            transcript.iter().flat_map(|l| render_line(Some(&mut parser as &mut dyn LineParser), l)).collect();
        insta::assert_snapshot!(out.join("\n"));
    }

    #[test]
    fn a_text_transcript_is_shown_as_it_is_and_attempt_files_are_recognised() {
        assert_eq!(render_line(None, "plain output"), ["plain output"]);
        assert_eq!(crate::state::attempt_log::parts("attempt-0007-develop-a"), Some((7, "develop-a")));
        assert_eq!(crate::state::attempt_log::parts("attempts"), None);
    }
}

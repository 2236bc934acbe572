//! In-process benchmarks (`cargo bench --bench pipeline`), documented in
//! docs/performance.md: the per-line parts of an attempt (the text and stream-json
//! parsers, the supervisor's detectors, redaction, the whole per-line path as the
//! attempt runs it), the failure classifier, and one checkpoint write per
//! durability level.
//!
//! Divan rather than criterion: the figures here are per-call times and bytes per
//! second, which divan reports directly (`counter`), it needs three small crates
//! instead of criterion's plotting and statistics stack (which would compile for
//! minutes on the shared 2-core builder), and it is a plain `harness = false`
//! binary like `benches/overhead.rs`.
//!
//! The per-line figures are what bounds the whole-process flood throughput of
//! `benches/run.sh`: at 100 bytes a line, 200 MB/s per core means 0.5 µs a line for
//! everything together.

use std::hint::black_box;
use std::time::Duration;

use divan::counter::BytesCount;
use divan::{Bencher, Divan};
use ralph::bench::{
    AgentEvent, AgentKind, ClaudeStreamParser, Durability, EndedBy, Exit, LineParser, Report, Supervisor, TextParser,
    Timeouts, classify, redact, redacted, save_json_with, tool_text_detect,
};

fn main() {
    Divan::from_args().min_time(Duration::from_millis(300)).main();
}

/// A 100-byte plain-text line, the unit of the text flood in `benches/run.sh`.
const TEXT_LINE: &str =
    "Reading src/run/attempt.rs to see where the per-line work happens; next the parser and redact.   ";

/// A line with a credential in it (the slow path of redaction).
const SECRET_LINE: &str = "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 and then run the tests";

/// An assistant text message as Claude Code prints it in stream-json.
const STREAM_TEXT: &str = r#"{"type":"assistant","message":{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"Reading src/run/attempt.rs to see where the per-line work happens; next the parser and redact."}],"usage":{"input_tokens":12,"output_tokens":40}},"session_id":"0b5c6a1e-1f7e-4a43-9d0c-5b7f3c1f2a11"}"#;

/// A tool call as Claude Code prints it in stream-json.
const STREAM_TOOL: &str = r#"{"type":"assistant","message":{"id":"msg_02","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"cargo test --lib state::journal","description":"Run the journal tests"}}]},"session_id":"0b5c6a1e-1f7e-4a43-9d0c-5b7f3c1f2a11"}"#;

/// A tool result as Claude Code prints it in stream-json.
const STREAM_RESULT: &str = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"running 12 tests\ntest result: ok. 12 passed; 0 failed","is_error":false}]},"session_id":"0b5c6a1e-1f7e-4a43-9d0c-5b7f3c1f2a11"}"#;

fn bytes(line: &str) -> BytesCount {
    BytesCount::new(line.len() + 1)
}

#[divan::bench(name = "parse/text_line")]
fn parse_text(b: Bencher) {
    let mut p = TextParser;
    b.counter(bytes(TEXT_LINE)).bench_local(|| p.parse_line(black_box(TEXT_LINE)));
}

#[divan::bench(name = "parse/stream_json", args = ["text", "tool_use", "tool_result"])]
fn parse_stream(b: Bencher, kind: &str) {
    let line = stream_line(kind);
    let mut p = ClaudeStreamParser::new();
    b.counter(bytes(line)).bench_local(|| p.parse_line(black_box(line)));
}

fn stream_line(kind: &str) -> &'static str {
    match kind {
        "text" => STREAM_TEXT,
        "tool_use" => STREAM_TOOL,
        _ => STREAM_RESULT,
    }
}

/// `redact` returns a copy (what the journal and the checkpoint take); the attempt
/// log takes `redacted`, which borrows the line when nothing is hidden.
#[divan::bench(name = "redact", args = ["clean", "secret", "stream_json"])]
fn redact_line(b: Bencher, kind: &str) {
    let line = match kind {
        "clean" => TEXT_LINE,
        "secret" => SECRET_LINE,
        _ => STREAM_TEXT,
    };
    b.counter(bytes(line)).bench(|| redact(black_box(line)));
}

#[divan::bench(name = "redacted", args = ["clean", "secret", "stream_json"])]
fn redacted_line(b: Bencher, kind: &str) {
    let line = match kind {
        "clean" => TEXT_LINE,
        "secret" => SECRET_LINE,
        _ => STREAM_TEXT,
    };
    b.counter(bytes(line)).bench(|| redacted(black_box(line)).len());
}

#[divan::bench(name = "detect/tool_text")]
fn detect_tool_text(b: Bencher) {
    b.counter(bytes(TEXT_LINE)).bench(|| tool_text_detect(black_box(TEXT_LINE)));
}

#[divan::bench(name = "detect/supervisor_text_event")]
fn supervisor_text(b: Bencher) {
    let mut sup = Supervisor::new(&Timeouts::default(), tokio::time::Instant::now());
    let event = AgentEvent::Text { text: TEXT_LINE.to_owned() };
    b.counter(bytes(TEXT_LINE)).bench_local(|| sup.on_event(Some(black_box(&event)), tokio::time::Instant::now()));
}

/// The per-line work of `run::attempt` for one stdout line, in its order: redact for
/// the attempt log, parse, feed every event to the supervisor. The log write itself
/// goes to a `Vec` here (the file cost is in `benches/run.sh`), and the clock is
/// read once per read of the pipe there, so not here.
fn per_line(
    parser: &mut dyn LineParser,
    sup: &mut Supervisor,
    log: &mut Vec<u8>,
    line: &str,
    now: tokio::time::Instant,
) {
    log.extend_from_slice(redacted(line).as_bytes());
    log.push(b'\n');
    for event in parser.parse_line(line) {
        let _ = sup.on_event(Some(&event), now);
    }
    if log.len() > 1 << 20 {
        log.clear();
    }
}

#[divan::bench(name = "pipeline/text_line")]
fn pipeline_text(b: Bencher) {
    let mut sup = Supervisor::new(&Timeouts::default(), tokio::time::Instant::now());
    let mut parser = TextParser;
    let mut log = Vec::with_capacity(2 << 20);
    let now = tokio::time::Instant::now();
    b.counter(bytes(TEXT_LINE)).bench_local(|| per_line(&mut parser, &mut sup, &mut log, black_box(TEXT_LINE), now));
}

#[divan::bench(name = "pipeline/stream_json", args = ["text", "tool_use", "tool_result"])]
fn pipeline_stream(b: Bencher, kind: &str) {
    let line = stream_line(kind);
    let mut sup = Supervisor::new(&Timeouts::default(), tokio::time::Instant::now());
    let mut parser = ClaudeStreamParser::new();
    let mut log = Vec::with_capacity(2 << 20);
    let now = tokio::time::Instant::now();
    b.counter(bytes(line)).bench_local(|| per_line(&mut parser, &mut sup, &mut log, black_box(line), now));
}

#[divan::bench(name = "classify/agent_error_exit")]
fn classify_error(b: Bencher) {
    let events = vec![
        AgentEvent::Text { text: TEXT_LINE.to_owned() },
        AgentEvent::Result {
            text: "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}".to_owned(),
            is_error: true,
            subtype: "error_during_execution".to_owned(),
            api_error_status: Some(529),
        },
    ];
    let tail = "npm warn deprecated\nError: something went wrong while talking to the provider\n".repeat(20);
    b.bench(|| {
        classify(black_box(&Report {
            kind: AgentKind::Claude,
            exit: Exit::Code(1),
            ended_by: EndedBy::Agent,
            events: &events,
            text_tail: &tail,
            stderr_tail: &tail,
            missing_done: "",
            errors: &[],
            now: 0,
            interruption: None,
        }))
    });
}

/// A checkpoint of the shape and size ralph writes after an attempt (about 1.5 KB).
fn checkpoint() -> serde_json::Value {
    serde_json::json!({
        "version": 1,
        "run_id": "20261201T063000Z-4f2a",
        "status": "running",
        "clean_stop": false,
        "stop_cause": null,
        "stop_reason": null,
        "progress": {
            "phase": "work", "phase_index": 0, "iteration": 57, "attempt": 61,
            "chain_position": 0, "agent": "claude",
            "session_tokens": {"claude": "0b5c6a1e-1f7e-4a43-9d0c-5b7f3c1f2a11"},
            "budgets": {"claude": {"failures": 1, "resumes": 0}}
        },
        "in_flight": {"agent": "claude", "attempt": 61, "session": "0b5c6a1e-1f7e-4a43-9d0c-5b7f3c1f2a11",
                      "started_at": "2026-12-01T06:30:00Z", "tool": {"name": "Bash", "input": "cargo test", "finished": false}},
        "last_error": {"category": "environmental", "rule": "provider_overloaded", "detail": "API Error: 529 overloaded",
                       "agent": "claude", "text_tail": TEXT_LINE.repeat(6), "at": "2026-12-01T06:29:00Z"},
        "usage": {"cost_usd": 3.2101, "input_tokens": 1200345, "output_tokens": 80211},
        "phase_usage": {"work": {"cost_usd": 3.2101, "input_tokens": 1200345, "output_tokens": 80211}},
        "elapsed_secs": 1834.2,
        "config_path": "/home/user/project/ralph.toml",
        "config_checksum": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "prompt_checksum": "sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
        "started_at": "2026-12-01T06:00:00Z",
        "updated_at": "2026-12-01T06:30:00Z"
    })
}

/// One checkpoint replacement as the dispatcher does it. The figure depends on the
/// file system more than on ralph: run it on the disk `.agent/` lives on
/// (`TMPDIR=... cargo bench --bench pipeline checkpoint`).
#[divan::bench(name = "checkpoint/write", args = ["durable", "ordered"], sample_count = 200)]
fn checkpoint_write(b: Bencher, durability: &str) {
    let durability = if durability == "durable" { Durability::Durable } else { Durability::Ordered };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("checkpoint.json");
    let value = checkpoint();
    b.bench_local(|| save_json_with(&path, &value, durability).expect("checkpoint write"));
}

#[divan::bench(name = "checkpoint/serialize")]
fn checkpoint_serialize(b: Bencher) {
    let value = checkpoint();
    b.bench_local(|| serde_json::to_vec_pretty(black_box(&value)).expect("serialize"));
}

/// The primitives of the proposed cheaper durable checkpoint (docs/performance.md,
/// "The cheaper durable checkpoint"), measured on the same disk as
/// `checkpoint/write`: one `fdatasync`'d journal append per transition, and the
/// checkpoint replaced by a rename that does not wait for the disk.
mod durable {
    use std::fs::OpenOptions;
    use std::io::Write;

    use divan::Bencher;
    use ralph::bench::{Durability, replace};

    /// A 300-byte journal line, the size of an `attempt_succeeded` event.
    const EVENT: &[u8] = &[b'x'; 299];

    #[divan::bench(name = "journal_append_fdatasync", sample_count = 200)]
    fn journal_append(b: Bencher) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut f =
            OpenOptions::new().append(true).create(true).open(dir.path().join("events.jsonl")).expect("journal");
        b.bench_local(|| {
            f.write_all(EVENT).expect("append");
            f.write_all(b"\n").expect("append");
            f.sync_data().expect("fdatasync");
        });
    }

    #[divan::bench(name = "journal_append_no_sync", sample_count = 200)]
    fn journal_append_no_sync(b: Bencher) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut f =
            OpenOptions::new().append(true).create(true).open(dir.path().join("events.jsonl")).expect("journal");
        b.bench_local(|| {
            f.write_all(EVENT).expect("append");
            f.write_all(b"\n").expect("append");
        });
    }

    /// Temp file + write + rename, no fsync at all: what the checkpoint would cost
    /// once the journal carries durability.
    #[divan::bench(name = "checkpoint_rename_no_sync", sample_count = 200)]
    fn rename_no_sync(b: Bencher) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("checkpoint.json");
        let bytes = serde_json::to_vec_pretty(&super::checkpoint()).expect("serialize");
        b.bench_local(|| {
            let tmp = dir.path().join(".checkpoint.tmp");
            std::fs::write(&tmp, &bytes).expect("write");
            std::fs::rename(&tmp, &path).expect("rename");
        });
    }

    /// Today's `Durability::Ordered` for comparison (fsync of the temp file, no
    /// directory fsync); `checkpoint/write` has the serialization on top.
    #[divan::bench(name = "checkpoint_replace_ordered", sample_count = 200)]
    fn replace_ordered(b: Bencher) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("checkpoint.json");
        let bytes = serde_json::to_vec_pretty(&super::checkpoint()).expect("serialize");
        b.bench_local(|| replace(&path, &bytes, Durability::Ordered).expect("replace"));
    }
}

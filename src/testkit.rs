//! What the unit tests of many modules build the same way: a phase, the timeouts of
//! an attempt, a parser run over a few lines, an agent's launch request, a run's checkpoint, a fleet. One home, so a test states only what it
//! is about and a change to a shared type is made once here.
//!
//! Compiled for tests only; nothing outside `#[cfg(test)]` code may use it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::descriptor::Request;
use crate::agent::event::{AgentEvent, LineParser};
use crate::config::{DoneSignal, Phase, Timeouts};
use crate::fleet::state::{Fleet, FleetStatus};
use crate::outcome::Category;
use crate::recovery::{Classification, Rule};
use crate::state::checkpoint::{Checkpoint, LastError, Status};
use crate::workflow::Progress;

/// A phase `name` on the chain `main` of `chain`: one iteration, the `<promise>` tag
/// as its done signal, no prompt of its own. A test that needs more says so with
/// struct update syntax: `Phase { iterations: 5, ..phase("dev", &["a"]) }`.
pub(crate) fn phase(name: &str, chain: &[&str]) -> Phase {
    Phase {
        name: name.into(),
        chain_name: "main".into(),
        chain: chain.iter().map(|s| (*s).to_string()).collect(),
        iterations: 1,
        until_complete: false,
        done: DoneSignal::Tag,
        prompt: None,
    }
}

/// Limits of an attempt far from one another, so a test sees which one fired: a
/// stall of a minute, a tool of ten, an attempt of an hour, a grace of a second.
pub(crate) fn timeouts() -> Timeouts {
    Timeouts {
        stall: Duration::from_secs(60),
        tool: Duration::from_secs(600),
        attempt: Duration::from_secs(3600),
        grace: Duration::from_secs(1),
    }
}

/// A `ralph.toml` whose one agent `name`, with the keys `table` (`kind = …` first,
/// one a line), runs the one phase `develop` (with `phase`'s entries).
pub(crate) fn one_agent_config(name: &str, table: &str, phase: &str) -> String {
    format!("[agents.{name}]\n{table}\n[chains]\nmain = [\"{name}\"]\n[phases.develop]\nchain = \"main\"\n{phase}")
}

/// A running fleet `f1` of no task yet, in `/r` (into `ralph/fleet`, worktrees
/// under `/r-fleet`), created at the epoch.
pub(crate) fn fleet() -> Fleet {
    Fleet {
        version: crate::fleet::state::VERSION,
        fleet_id: "f1".into(),
        status: FleetStatus::Running,
        repo: "/r".into(),
        base: "b0".into(),
        base_branch: Some("main".into()),
        into: "ralph/fleet".into(),
        worktrees: "/r-fleet".into(),
        config: "/r/ralph.toml".into(),
        tasks_glob: "tasks/*.md".into(),
        created_at: jiff::Timestamp::UNIX_EPOCH,
        updated_at: jiff::Timestamp::UNIX_EPOCH,
        ..Fleet::default()
    }
}

/// A checkpoint as a run in its second attempt of `develop` leaves it.
pub(crate) fn checkpoint(status: Status) -> Checkpoint {
    let mut progress = Progress::new("develop");
    progress.counters.attempts = 4;
    progress.counters.iterations_done = 1;
    let begun = "2026-01-01T00:00:00Z".parse().expect("a timestamp");
    Checkpoint {
        status,
        clean_stop: true,
        last_error: Some(LastError {
            classification: Classification::new(
                Category::UserConfig,
                Rule::AuthFailed,
                "the provider rejected the credentials",
            ),
            agent: "claude".into(),
            text_tail:
                "starting\n\nAPI Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}}\n".into(),
            at: "2026-01-01T00:01:00Z".parse().expect("a timestamp"),
            log: Some(".agent/logs/20260101T000000Z-42/attempt-0004-develop-claude.log".into()),
        }),
        elapsed_secs: 75.0,
        updated_at: "2026-01-01T00:01:15Z".parse().expect("a timestamp"),
        ..crate::step::start::blank("20260101T000000Z-42".into(), progress, "ralph.toml".into(), begun)
    }
}

/// A temp directory (gone when the test drops it) and the path of a file `name`
/// in it, not yet written.
pub(crate) fn temp_file(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temp directory");
    let path = dir.path().join(name);
    (dir, path)
}

/// Every `.rs` file under `dir` (the crate's `src/`, for the tests that read the
/// code itself), in no particular order.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read src/").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The `.txt` files of `tests/corpus/<folder>` (not below it), as (file name, text),
/// sorted by name.
pub(crate) fn corpus(folder: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(folder);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    let mut files: Vec<(String, String)> = entries
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .map(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// A launch of agent `agent` with `prompt` in `/w`: the first, not a resume, no
/// control socket, and a settings writer that refuses (a descriptor's test writes
/// no file). A test that needs more says so with struct update syntax.
pub(crate) fn request<'a>(agent: &'a str, prompt: &'a str) -> Request<'a> {
    Request {
        agent,
        prompt,
        prompt_file: Path::new("/w/p.md"),
        resume: None,
        launch: 1,
        cwd: Path::new("/w"),
        run_id: "r",
        session_tokens: (0, 0),
        control: None,
        settings_file: |_, _, _| Err(std::io::Error::other("a test writes no file")),
    }
}

/// `Unknown` events of these kinds, in order.
pub(crate) fn unknowns_of(kinds: &[&str]) -> Vec<AgentEvent> {
    kinds.iter().map(|k| AgentEvent::Unknown { kind: (*k).into() }).collect()
}

/// A `Session` event.
pub(crate) fn session(id: &str) -> AgentEvent {
    AgentEvent::Session { id: id.into() }
}

/// A `Text` event.
pub(crate) fn text(text: &str) -> AgentEvent {
    AgentEvent::Text { text: text.into() }
}

/// A `Thinking` event.
pub(crate) fn thinking(text: &str) -> AgentEvent {
    AgentEvent::Thinking { text: text.into() }
}

/// A `ToolStarted` event.
pub(crate) fn tool_started(id: &str, name: &str, input: serde_json::Value) -> AgentEvent {
    AgentEvent::ToolStarted { id: id.into(), name: name.into(), input }
}

/// A `Result` event.
pub(crate) fn result(text: &str, is_error: bool, subtype: &str, api_error_status: Option<u16>) -> AgentEvent {
    AgentEvent::Result { text: text.into(), is_error, subtype: subtype.into(), api_error_status }
}

/// Every event a fresh parser of type `P` reads from `lines`, in order.
pub(crate) fn parse_all<P: LineParser + Default>(lines: &[&str]) -> Vec<AgentEvent> {
    let mut p = P::default();
    lines.iter().flat_map(|l| p.parse_line(l)).collect()
}

//! In-process tests of the scripted agent: the exact lines it prints, and that the
//! real Claude stream parser reads them back as the intended events.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::agent::claude_stream::ClaudeStreamParser;
use crate::agent::event::{AgentEvent, LineParser};
use crate::config::{SimRepeat, SimTool, SimWrite};

struct Run {
    code: i32,
    lines: Vec<String>,
    stderr: String,
    dir: tempfile::TempDir,
}

fn run_steps(session: Option<&str>, steps: Vec<SimStep>) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = SimArgs {
        session: session.map(str::to_owned),
        agent: "builder".into(),
        launch: 2,
        steps,
        prompt: "do it".into(),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_to(args, dir.path(), &mut out, &mut err);
    let stdout = String::from_utf8(out).expect("utf8 stdout");
    assert!(stdout.is_empty() || stdout.ends_with('\n'), "last line must be terminated");
    Run {
        code,
        lines: stdout.lines().map(str::to_owned).collect(),
        stderr: String::from_utf8(err).expect("utf8 stderr"),
        dir,
    }
}

fn json_lines(run: &Run) -> Vec<Value> {
    run.lines.iter().map(|l| serde_json::from_str(l).expect("every line is JSON")).collect()
}

fn events(run: &Run) -> Vec<AgentEvent> {
    let mut p = ClaudeStreamParser::new();
    run.lines.iter().flat_map(|l| p.parse_line(l)).collect()
}

fn text(t: &str) -> AgentEvent {
    AgentEvent::Text { text: t.into() }
}

#[test]
fn empty_script_is_init_then_success() {
    let run = run_steps(None, vec![]);
    assert_eq!(run.code, 0);
    let v = json_lines(&run);
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["type"], "system");
    assert_eq!(v[0]["subtype"], "init");
    assert_eq!(v[0]["session_id"], "sim-builder-2");
    assert_eq!(v[0]["model"], "sim");
    assert_eq!(v[0]["cwd"], run.dir.path().display().to_string());
    assert_eq!(v[1]["type"], "result");
    assert_eq!(v[1]["num_turns"], 1);
    assert_eq!(
        events(&run),
        vec![
            AgentEvent::Session { id: "sim-builder-2".into() },
            AgentEvent::Usage { input_tokens: 0, output_tokens: 0, cost_usd: Some(0.0) },
            AgentEvent::Result { text: "".into(), is_error: false, subtype: "success".into(), api_error_status: None },
        ]
    );
}

#[test]
fn full_script_round_trips_through_the_parser() {
    let steps = vec![
        SimStep::Think("planning".into()),
        SimStep::Say("hello\nworld".into()),
        SimStep::Tool(SimTool {
            name: "Bash".into(),
            input: json!({"command": "ls"}),
            result: "a.txt\nb.txt".into(),
            duration: Some(Duration::from_millis(5)),
            hang: false,
            error: false,
        }),
        SimStep::Write(SimWrite { path: "docs/PLAN.md".into(), content: "# Plan\n".into() }),
        SimStep::Stderr("warming up".into()),
        SimStep::RateLimit(Duration::from_secs(3600)),
        SimStep::ToolText(r#"<tool_call>{"name":"Read"}</tool_call>"#.into()),
        SimStep::RepeatTool(SimRepeat { name: "Read".into(), input: json!({"file_path": "x"}), times: 2 }),
        SimStep::Sleep(Duration::from_millis(1)),
        SimStep::Hang(false),
        SimStep::Pidfile("run/agent.pid".into()),
        SimStep::Usage(SimUsage { input_tokens: 100, output_tokens: 20, cost_usd: 0.5 }),
        SimStep::Done("  finished  ".into()),
    ];
    let run = run_steps(None, steps);
    assert_eq!(run.code, 0);
    let ws = run.dir.path();
    let plan = ws.join("docs/PLAN.md");
    assert_eq!(fs::read_to_string(&plan).expect("PLAN.md written"), "# Plan\n");
    let pid: u32 = fs::read_to_string(ws.join("run/agent.pid")).expect("pidfile").trim().parse().expect("pid");
    assert_eq!(pid, std::process::id());
    assert_eq!(run.stderr, "warming up\n");

    let ev = events(&run);
    let shown = plan.display().to_string();
    let expected_prefix = [
        AgentEvent::Session { id: "sim-builder-2".into() },
        AgentEvent::Thinking { text: "planning".into() },
        text("hello\nworld"),
        AgentEvent::ToolStarted { id: "toolu_1".into(), name: "Bash".into(), input: json!({"command": "ls"}) },
        AgentEvent::ToolFinished { id: "toolu_1".into(), is_error: false, output: "a.txt\nb.txt".into() },
        AgentEvent::ToolStarted {
            id: "toolu_2".into(),
            name: "Write".into(),
            input: json!({"file_path": shown, "content": "# Plan\n"}),
        },
        AgentEvent::ToolFinished {
            id: "toolu_2".into(),
            is_error: false,
            output: format!("File created successfully at: {shown}"),
        },
    ];
    assert_eq!(ev[..expected_prefix.len()], expected_prefix[..]);
    the_rest_of_the_full_script(&ev[expected_prefix.len()..]);

    // One JSON object per line, each stamped with the session.
    let v = json_lines(&run);
    assert_eq!(v.len(), 15);
    assert!(v.iter().all(|l| l["session_id"] == "sim-builder-2"));
    // Four tool results, so five model turns.
    assert_eq!(v[14]["num_turns"], 5);
}

/// The full script's events after its Write step: the rate limit, the tool text,
/// the repeated tool and the done message with its usage.
fn the_rest_of_the_full_script(rest: &[AgentEvent]) {
    let AgentEvent::RateLimit { status, resets_at, limit_type } = &rest[0] else {
        panic!("expected rate limit, got {:?}", rest[0]);
    };
    assert_eq!(status, "rejected");
    assert_eq!(limit_type.as_deref(), Some("five_hour"));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() as i64;
    let resets_at = resets_at.expect("resets_at");
    assert!((now + 3590..=now + 3610).contains(&resets_at), "{resets_at} vs {now}");
    let read = json!({"file_path": "x"});
    assert_eq!(
        rest[1..],
        [
            text(r#"<tool_call>{"name":"Read"}</tool_call>"#),
            AgentEvent::ToolStarted { id: "toolu_3".into(), name: "Read".into(), input: read.clone() },
            AgentEvent::ToolFinished { id: "toolu_3".into(), is_error: false, output: "ok".into() },
            AgentEvent::ToolStarted { id: "toolu_4".into(), name: "Read".into(), input: read },
            AgentEvent::ToolFinished { id: "toolu_4".into(), is_error: false, output: "ok".into() },
            text("finished\n\n<promise>DONE</promise>"),
            AgentEvent::Usage { input_tokens: 100, output_tokens: 20, cost_usd: Some(0.5) },
            AgentEvent::Result {
                text: "finished\n\n<promise>DONE</promise>".into(),
                is_error: false,
                subtype: "success".into(),
                api_error_status: None,
            },
        ]
    );
}

#[test]
fn resume_reports_the_given_session() {
    let run = run_steps(Some("sim-builder-1"), vec![SimStep::Say("again".into())]);
    let v = json_lines(&run);
    assert_eq!(v[0]["session_id"], "sim-builder-1");
    assert_eq!(events(&run)[0], AgentEvent::Session { id: "sim-builder-1".into() });
}

#[test]
fn error_step_is_a_claude_style_error_result() {
    let run = run_steps(
        None,
        vec![
            SimStep::Say("working".into()),
            SimStep::Error("API Error: 529 Overloaded. This is a server-side issue".into()),
            SimStep::Say("never printed".into()),
        ],
    );
    assert_eq!(run.code, 1);
    let v = json_lines(&run);
    assert_eq!(v.len(), 3);
    assert_eq!(v[2]["subtype"], "success");
    assert_eq!(v[2]["is_error"], true);
    assert_eq!(v[2]["api_error_status"], 529);
    assert_eq!(
        events(&run).last(),
        Some(&AgentEvent::Result {
            text: "API Error: 529 Overloaded. This is a server-side issue".into(),
            is_error: true,
            subtype: "success".into(),
            api_error_status: Some(529),
        })
    );
}

#[test]
fn error_without_status_has_null_status() {
    let run = run_steps(None, vec![SimStep::Error("Invalid API key · Fix external API key".into())]);
    assert_eq!(run.code, 1);
    assert_eq!(json_lines(&run)[1]["api_error_status"], Value::Null);
}

#[test]
fn exit_stops_without_result() {
    let run = run_steps(None, vec![SimStep::Say("bye".into()), SimStep::Exit(7), SimStep::Say("no".into())]);
    assert_eq!(run.code, 7);
    assert_eq!(run.lines.len(), 2);
    assert!(!events(&run).iter().any(|e| matches!(e, AgentEvent::Result { .. })));
}

#[test]
fn goal_tag_and_empty_done() {
    let run = run_steps(None, vec![SimStep::Done("".into()), SimStep::Goal("all of it".into())]);
    let ev = events(&run);
    assert_eq!(ev[1], text("<promise>DONE</promise>"));
    assert_eq!(ev[2], text("all of it\n\n<promise>COMPLETE</promise>"));
    assert!(matches!(&ev[4], AgentEvent::Result { text, .. } if text == "all of it\n\n<promise>COMPLETE</promise>"));
}

#[test]
fn tool_without_input_sends_empty_object() {
    let run = run_steps(
        None,
        vec![SimStep::Tool(SimTool {
            name: "Glob".into(),
            input: Value::Null,
            result: String::new(),
            duration: None,
            hang: false,
            error: false,
        })],
    );
    assert_eq!(
        events(&run)[1],
        AgentEvent::ToolStarted { id: "toolu_1".into(), name: "Glob".into(), input: json!({}) }
    );
}

#[test]
fn failed_write_is_a_tool_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A file where a directory is needed.
    let blocker = dir.path().join("blocker");
    fs::write(&blocker, "x").expect("write blocker");
    let run = run_steps(None, vec![SimStep::Write(SimWrite { path: blocker.join("f.txt"), content: "c".into() })]);
    assert_eq!(run.code, 0);
    assert!(matches!(&events(&run)[2], AgentEvent::ToolFinished { is_error: true, .. }));
}

#[test]
fn grandchild_writes_its_pid() {
    let run = run_steps(
        None,
        vec![SimStep::Grandchild(crate::config::SimGrandchild {
            pidfile: "gc.pid".into(),
            lives: Duration::from_millis(10),
        })],
    );
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let pid: u32 = fs::read_to_string(run.dir.path().join("gc.pid")).expect("pidfile").trim().parse().expect("pid");
    assert_ne!(pid, std::process::id());
    assert_eq!(
        events(&run)[2],
        AgentEvent::ToolFinished {
            id: "toolu_1".into(),
            is_error: false,
            output: format!("Command running in background with ID: {pid}"),
        }
    );
}

#[test]
fn steps_from_toml_run() {
    #[derive(serde::Deserialize)]
    struct Script {
        steps: Vec<SimStep>,
    }
    let script: Script = toml::from_str(
        r#"steps = [
            { say = "hi" },
            { tool = { name = "Bash", input = { command = "true" }, result = "" } },
            { usage = { input_tokens = 5, output_tokens = 6, cost_usd = 0.25 } },
            { goal = "" },
        ]"#,
    )
    .expect("toml");
    let run = run_steps(None, script.steps);
    assert_eq!(run.code, 0);
    assert_eq!(
        events(&run)[5..],
        [
            AgentEvent::Usage { input_tokens: 5, output_tokens: 6, cost_usd: Some(0.25) },
            AgentEvent::Result {
                text: "<promise>COMPLETE</promise>".into(),
                is_error: false,
                subtype: "success".into(),
                api_error_status: None,
            },
        ]
    );
}

/// Runs in a child copy of the test binary (see `crash_dies_by_the_signal`); a no-op in
/// a normal test run.
#[test]
fn crash_child() {
    let Ok(sig) = std::env::var("RALPH_SIM_TEST_CRASH") else {
        return;
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let steps = vec![SimStep::Ignore(vec!["SIGTERM".into(), "SIGINT".into()]), SimStep::Crash(sig)];
    let dir = tempfile::tempdir().expect("tempdir");
    run_to(SimArgs { steps, ..SimArgs::default() }, dir.path(), &mut out, &mut err);
    unreachable!("crash returned");
}

#[test]
fn crash_dies_by_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let exe = crate::os::self_exe().expect("test binary");
    for (name, want) in [("", 11), ("SIGSEGV", 11), ("SIGABRT", 6), ("SIGKILL", 9), ("SIGTERM", 15), ("bogus", 11)] {
        let status = std::process::Command::new(&exe)
            .args(["--exact", "agent::sim::tests::crash_child", "--test-threads=1"])
            .env("RALPH_SIM_TEST_CRASH", name)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("spawn test binary");
        assert_eq!(status.signal(), Some(want), "crash {name:?}: {status:?}");
    }
}

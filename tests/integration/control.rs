//! The control socket of a live run: `ralph status`, `ralph stop [--now]`, hostile
//! clients, and the scripted agent as an MCP client of its own run (`ralph mcp`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{DEFAULT_TIMEOUT, Project, fast, sim_project};

/// One agent `a` running `first` on its first launch and `later` after.
fn project(done: &str, timeouts: &str, iterations: u32, first: &str, later: &str) -> Project {
    sim_project()
        .retry("agent_attempts = 2")
        .timeouts(timeouts)
        .general("max_cycles = 1")
        .sim("a", &[&format!("[{first}]"), &format!("[{later}]")])
        .phase(&format!("iterations = {iterations}\ndone = \"{done}\""))
        .build()
}

/// A run whose agent writes `agent.pid`, then hangs in a Bash call until it is ended.
fn hanging() -> Project {
    project(
        "tag",
        "",
        1,
        r#"{ pidfile = "agent.pid" }, { tool = { name = "Bash", hang = true } }"#,
        r#"{ done = "x" }"#,
    )
}

/// The socket's path: the record's first line (its second names the run).
fn socket_of(p: &Project) -> PathBuf {
    p.wait_for_file(".agent/control.sock.path", DEFAULT_TIMEOUT);
    PathBuf::from(p.read(".agent/control.sock.path").lines().next().unwrap_or_default().trim())
}

/// Sends raw bytes, reads the one reply line.
fn raw(socket: &PathBuf, bytes: &[u8]) -> Value {
    let mut s = UnixStream::connect(socket).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The server stops reading an oversized line and answers: the rest may not go.
    let _ = s.write_all(bytes);
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).expect("a reply");
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"))
}

const SLOW: &str = r#"{ pidfile = "agent.pid" }, { sleep = "3s" }, { done = "one" }"#;

#[test]
fn status_asks_the_live_run_and_stop_now_pauses_it() {
    let p = hanging();
    let run = p.ralph().spawn();
    p.pid_file("agent.pid");
    let socket = socket_of(&p);
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    assert!(socket.as_os_str().len() < 108, "{}", socket.display());
    p.ralph().args(["status"]).run().expect_code(0).stdout_has("live: ralph pid").stdout_has("attempt 1");
    let out = p.ralph().args(["status", "--json"]).run();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["live_state"]["phase"], "develop", "{v:#}");
    assert_eq!(v["live_state"]["agent"], "a");

    p.ralph().args(["stop", "--now"]).run().expect_code(0).stdout_has("stopped: paused");
    run.finish().expect_code(130);
    assert_eq!(p.checkpoint()["status"], "paused");
    assert!(!socket.exists(), "the socket outlived the run");
    assert!(!p.exists(".agent/control.sock.path"));
    // No run: status reads the checkpoint as before, stop says there is none.
    p.ralph().args(["status"]).run().expect_code(0).stdout_has("paused");
    p.ralph().args(["stop"]).run().expect_code(2).stderr_has("no running ralph");
}

#[test]
fn stop_lets_the_iteration_finish_then_pauses() {
    let p = project("tag", "", 2, SLOW, r#"{ done = "two" }"#);
    let run = p.ralph().spawn();
    p.pid_file("agent.pid");
    p.ralph().args(["stop"]).run().expect_code(0).stdout_has("stopped: paused");
    run.finish().expect_code(130);
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused", "{cp:#}");
    assert_eq!(p.events("attempt_succeeded").len(), 1, "the running iteration finished");
    assert_eq!(p.events("stop_after_iteration").len(), 1);
    assert_eq!(cp["progress"]["position"]["iteration"], 2);
    p.ralph().args(["--resume"]).run().expect_code(0);
}

#[test]
fn hostile_clients_do_not_disturb_the_run() {
    let p = project("tag", "", 1, SLOW, r#"{ done = "x" }"#);
    let run = p.ralph().spawn();
    p.pid_file("agent.pid");
    let socket = socket_of(&p);
    assert_eq!(raw(&socket, b"garbage\n")["ok"], false);
    assert_eq!(raw(&socket, b"{\"op\":\"stop\",\"now\":\"yes\"}\n")["ok"], false);
    let huge = vec![b'x'; 10 * 1024 * 1024];
    let reply = raw(&socket, &huge);
    assert!(reply["error"].as_str().unwrap_or("").contains("too long"), "{reply}");
    // Many at once, held open: the run goes on; the extra ones are closed.
    let held: Vec<_> = (0..200).filter_map(|_| UnixStream::connect(&socket).ok()).collect();
    drop(held);
    // Once the crowd is gone, the socket serves again.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let reply = std::panic::catch_unwind(|| raw(&socket, b"{\"op\":\"status\"}\n"));
        if matches!(&reply, Ok(r) if r["ok"] == true) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the socket no longer serves: {reply:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    run.finish().expect_code(0);
    assert!(p.events("stop_requested").is_empty());
}

#[test]
fn declare_complete_decides_a_done_mcp_phase_and_refuses_placeholders() {
    let first = r#"
        { mcp = { tool = "declare_complete", arguments = { summary = "s", evidence = "tested" } } },
        { mcp = { tool = "save_checkpoint", arguments = { summary = "half", steps_done = ["a"], next_steps = ["b"] } } },
        { mcp = { tool = "declare_complete", arguments = { summary = "built it", evidence = "cargo test: 12 passed, 0 failed" } } },
        { say = "finished" }"#;
    let p = project("mcp", "", 1, first, r#"{ say = "never" }"#);
    p.ralph().run().expect_code(0);
    let declared = p.events("completion_declared");
    assert_eq!(declared.len(), 1, "the placeholder was refused: {declared:?}");
    assert_eq!(declared[0]["evidence"], "cargo test: 12 passed, 0 failed");
    assert_eq!(p.events("agent_checkpoint").len(), 1);
    assert_eq!(p.events("attempt_succeeded").len(), 1);
    assert!(p.events("mcp_lost").is_empty(), "servers shut down in order are no crash");
    let text = p.attempt_log(1);
    assert!(text.contains("placeholder"), "the refusal reached the model: {text}");
}

#[test]
fn without_declare_complete_a_done_mcp_phase_is_not_done() {
    let p = project("mcp", "", 1, r#"{ done = "the tag is not enough" }"#, r#"{ goal = "nor is this" }"#);
    p.ralph().run().expect_code(1);
    assert!(p.events("attempt_succeeded").is_empty());
}

#[test]
fn cancel_task_stops_the_run_blocked() {
    let first = r#"{ mcp = { tool = "cancel_task", arguments = { reason = "the API key for staging is missing" } } }, { say = "bye" }"#;
    let p = project("tag", "", 1, first, r#"{ done = "x" }"#);
    p.ralph().run().expect_code(3);
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "blocked");
    assert!(cp["stop_reason"].as_str().unwrap_or("").contains("API key for staging"), "{cp:#}");
}

#[test]
fn report_progress_keeps_a_silent_attempt_past_its_stall_limit() {
    let beat = r#"{ mcp = { tool = "report_progress", arguments = { message = "still building" }, silent = true } }"#;
    let first =
        format!(r#"{{ sleep = "2s" }}, {beat}, {{ sleep = "2s" }}, {beat}, {{ sleep = "2s" }}, {{ done = "built" }}"#);
    let p = project("tag", "stall = \"3s\"", 1, &first, r#"{ done = "second launch" }"#);
    p.ralph().run().expect_code(0);
    assert!(p.events("intervention").is_empty(), "{:?}", p.events("intervention"));
    assert_eq!(p.events("agent_progress").len(), 2);
    assert_eq!(p.events("attempt_started").len(), 1);
}

/// `ralph mcp` over real stdio with no run to reach, given `lines`: its first
/// `replies` answers.
fn mcp_without_a_run(lines: &[&str], replies: usize) -> Vec<Value> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(crate::harness::RALPH)
        .arg("mcp")
        .env_remove("RALPH_SOCKET")
        .env_remove("RALPH_ATTEMPT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let answers = (0..replies)
        .map(|_| {
            let line = rx.recv_timeout(DEFAULT_TIMEOUT).expect("ralph mcp answers");
            serde_json::from_str::<Value>(&line).unwrap()
        })
        .collect();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    answers
}

/// `ralph mcp` over real stdio, with no run to reach.
#[test]
fn ralph_mcp_lists_its_tools_and_says_when_no_run_is_reachable() {
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"report_progress","arguments":{"message":"hi"}}}"#,
    ];
    let replies = mcp_without_a_run(&requests, 3);
    assert_eq!(replies[0]["result"]["serverInfo"]["name"], "ralph", "{:#}", replies[0]);
    let tools = replies[1]["result"]["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "cancel_task",
            "declare_complete",
            "get_task_status",
            "report_interruption",
            "report_progress",
            "save_checkpoint"
        ]
    );
    for t in tools {
        assert!(t["description"].as_str().unwrap_or("").len() > 40, "{t:#}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t:#}");
    }
    let err = &replies[2]["error"];
    assert!(err["message"].as_str().unwrap_or("").contains("no ralph run is reachable"), "{:#}", replies[2]);
}

#[test]
fn a_saved_checkpoint_reaches_the_next_attempts_recovery_note() {
    let first = r#"
        { mcp = { tool = "save_checkpoint", arguments = { summary = "parser written and tested", steps_done = ["parser"], next_steps = ["the CLI flag"] } } },
        { mcp = { tool = "report_interruption", arguments = { reason = "the package registry is down" } } },
        { exit = 1 }"#;
    let p = project("tag", "", 1, first, r#"{ done = "finished" }"#);
    p.ralph().run().expect_code(0);
    assert_eq!(p.events("agent_interruption").len(), 1);
    assert_eq!(p.events("attempt_failed").len(), 1);
    let text = p.prompt_of(2);
    assert!(text.contains("parser written and tested") && text.contains("the CLI flag"), "{text}");
}

/// The official MCP Python SDK, as a `command` agent of a live run, starts
/// `ralph mcp --socket PATH --attempt ID`, lists the tools and calls every one.
#[test]
fn the_official_python_sdk_lists_and_calls_every_tool() {
    let Some(python) = crate::real_cli::python_mcp() else { return };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/python_client.py");
    // Its first word is a call over MCP after Python has loaded the SDK: 5 s on a
    // loaded machine, longer than the fast stall limit.
    let p = Project::new().config(&fast(
        "",
        r#"stall = "30s""#,
        &format!(
            r#"
[agents.py]
kind = "command"
command = [{python:?}, {script:?}, "{{prompt}}"]
output = "text"
env = {{ RALPH_BIN = {ralph:?} }}

[chains]
main = ["py"]

[phases.develop]
chain = "main"
done = "mcp"
"#,
            python = python.display().to_string(),
            ralph = crate::harness::RALPH,
        ),
    ));
    // cancel_task is the last call: the run stops blocked with its reason.
    let out = p.ralph().timeout(Duration::from_secs(60)).run();
    out.expect_code(3);
    for kind in ["agent_progress", "agent_checkpoint", "agent_interruption", "completion_declared", "task_cancelled"] {
        assert_eq!(p.events(kind).len(), 1, "{kind}: {out:?}");
    }
    assert_eq!(p.events("attempt_started").len(), 1);
    assert!(p.checkpoint()["stop_reason"].as_str().unwrap_or("").contains("ends the drill"));
}

#[test]
fn mcp_false_leaves_the_agent_without_ralphs_tools() {
    let first = r#"{ mcp = { tool = "report_progress", arguments = { message = "anyone there?" } } }, { done = "ok" }"#;
    let p = project("tag", "", 1, first, r#"{ done = "x" }"#);
    let config = p.read("ralph.toml").replace("kind = \"sim\"\n", "kind = \"sim\"\nmcp = false\n");
    p.write("ralph.toml", &config);
    p.ralph().run().expect_code(0);
    assert!(p.events("agent_progress").is_empty());
    let text = p.attempt_log(1);
    assert!(text.contains("no ralph run is reachable"), "{text}");
}

/// A `ralph mcp` killed while its agent runs is a crash, counted against
/// `[retry] mcp_restarts`; past it the run stops `failed` with the cap's phrase, once
/// the iteration the attempt finished is kept. One that is shut down in order
/// (stdin closed) is not.
#[test]
fn crashed_mcp_servers_use_up_the_restart_budget() {
    // Different messages: the same call three times would be a tool-call loop.
    let crash = crate::harness::mcp_crash;
    let first = format!(
        r#"{{ mcp = {{ tool = "report_progress", arguments = {{ message = "orderly" }} }} }}, {{ sleep = "500ms" }}, {}, {}, {}, {{ done = "ok" }}"#,
        crash("one"),
        crash("two"),
        crash("three")
    );
    let p = sim_project().retry("mcp_restarts = 2").sim("a", &[&format!("[{first}]")]).phase("iterations = 2").build();
    p.ralph().run().expect_code(1).stderr_has("the limit [retry] mcp_restarts was reached");
    assert_eq!(p.events("attempt_succeeded").len(), 1, "the finished iteration is kept");
    let lost = p.events("mcp_lost");
    assert_eq!(lost.len(), 3, "{lost:?}\n{:#?}", p.events("attempt_failed"));
    assert_eq!(lost[2]["restarts"], 3);
    assert_eq!(p.checkpoint()["status"], "failed");
    assert_eq!(p.events("cap_reached")[0]["cap"], "mcp_restarts", "{:?}", p.events("cap_reached"));
}

#[test]
fn an_oversized_line_is_told_by_its_length() {
    let p = project("tag", "", 1, SLOW, r#"{ done = "x" }"#);
    let run = p.ralph().spawn();
    p.pid_file("agent.pid");
    let socket = socket_of(&p);
    let mut line = vec![b'x'; 70_000];
    line.push(b'\n');
    let reply = raw(&socket, &line);
    let error = reply["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("request too long: 70000 bytes"), "{reply}");
    assert!(!error.contains("newline"), "it had one: {reply}");
    run.finish().expect_code(0);
}

#[test]
fn a_checkpoint_of_a_thousand_items_is_kept_capped_not_refused() {
    let items = (0..1000).map(|i| format!("\"step {i}: {}\"", "x".repeat(100))).collect::<Vec<_>>().join(", ");
    let first = format!(
        r#"{{ mcp = {{ tool = "save_checkpoint", arguments = {{ summary = "half way", steps_done = [{items}], next_steps = ["the rest"] }} }} }}, {{ done = "x" }}"#
    );
    let p = project("tag", "", 1, &first, r#"{ done = "y" }"#);
    p.ralph().run().expect_code(0);
    let saved = p.events("agent_checkpoint");
    assert_eq!(saved.len(), 1, "refused: {}", p.attempt_log(1));
    let steps = saved[0]["steps_done"].as_array().cloned().unwrap_or_default();
    assert_eq!(steps.len(), 51, "50 items and what was left out");
    assert_eq!(steps[50], "… 950 more not kept");
}

#[test]
fn padded_evidence_is_refused() {
    let padded = format!("ok{}.", " ".repeat(30));
    let first = format!(
        r#"{{ mcp = {{ tool = "declare_complete", arguments = {{ summary = "s", evidence = "{padded}" }} }} }},
           {{ mcp = {{ tool = "declare_complete", arguments = {{ summary = "s", evidence = "aaaaaaaaaaaaaaaaaaaa" }} }} }},
           {{ say = "finished" }}"#
    );
    let p = project("mcp", "", 1, &first, r#"{ say = "never" }"#);
    p.ralph().run().expect_code(1);
    assert!(p.events("completion_declared").is_empty(), "{:?}", p.events("completion_declared"));
}

/// A line that is not JSON gets JSON-RPC's parse error (-32700, id null), and the
/// server goes on answering.
#[test]
fn ralph_mcp_answers_malformed_json_with_a_parse_error() {
    let init = r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let replies = mcp_without_a_run(&[r#"{"jsonrpc": "2.0", "id": 1, "method": "#, init], 2);
    let error = replies.iter().find(|r| r["error"].is_object()).unwrap_or_else(|| panic!("{replies:#?}"));
    assert_eq!(error["error"]["code"], -32700, "{error:#}");
    assert!(error["id"].is_null(), "{error:#}");
    assert!(replies.iter().any(|r| r["id"] == 2 && r["result"]["serverInfo"]["name"] == "ralph"), "{replies:#?}");
}

/// `ralph status` of a live run: how long the attempt has run and when the agent
/// last printed (not the last journal event), and a wait in local time with its
/// zone, never a unix second.
#[test]
fn status_says_the_attempts_age_the_agents_last_output_and_a_wait_in_local_time() {
    let p = sim_project()
        .retry(r#"agent_backoff_base = "30s""#)
        .sim(
            "a",
            &[
                r#"[{ say = "working" }, { pidfile = "agent.pid" }, { say = "still working" }, { sleep = "2s" }, { crash = "SIGSEGV" }]"#,
                r#"[{ done = "x" }]"#,
            ],
        )
        .build();
    let run = p.ralph().spawn();
    p.pid_file("agent.pid");
    let status = p.ralph().args(["status"]).run();
    status.expect_code(0).stdout_has("attempt 1, running for ").stdout_has("the agent last printed: ");
    assert!(!status.stdout.contains("last event"), "{status:?}");
    // The agent crashes by itself: an agent failure, retried after its backoff.
    p.wait_for_checkpoint(|cp| cp["status"] == "waiting", DEFAULT_TIMEOUT);
    let waiting = p.ralph().args(["status"]).run();
    waiting.expect_code(0).stdout_has("waiting for a backoff before the next attempt until ").stdout_has(" (in ");
    assert!(!waiting.stdout.contains("unix second"), "{waiting:?}");
    p.ralph().args(["stop", "--now"]).run().expect_code(0);
    run.finish().expect_code(130);
}

/// After a kill -9 no ralph runs the run: `ralph status` says so, and what to do.
#[test]
fn status_after_a_kill_says_no_ralph_runs_it_and_what_to_do_next() {
    let p = hanging();
    let (run, agent) = p.start();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"].is_string(), DEFAULT_TIMEOUT);
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.wait(crate::harness::DEFAULT_TIMEOUT);
    crate::harness::cleanup(agent);
    let status = p.ralph().args(["status"]).run();
    status
        .expect_code(0)
        .stdout_has("interrupted: no ralph is running it")
        .stdout_has("  next: `ralph --resume` continues it");
    assert!(!status.stdout.contains("no clean stop)"), "{status:?}");
    // A failed run's next step names the key to raise.
    let q = project("tag", "", 1, r#"{ crash = "SIGSEGV" }"#, r#"{ crash = "SIGSEGV" }"#);
    q.ralph().run().expect_code(1);
    q.ralph().args(["status"]).run().expect_code(0).stdout_has("  next: ").stdout_has("raise [general] max_cycles");
}

#[test]
fn stop_exits_1_when_the_run_does_not_end_in_time() {
    let p = hanging();
    let (run, agent) = p.start();
    p.ralph()
        .args(["stop", "--timeout", "1s"])
        .run()
        .expect_code(1)
        .stderr_has("has not stopped after 1s")
        .stdout_has("still running at the timeout");
    p.ralph().args(["stop", "--now"]).run().expect_code(0);
    run.finish().expect_code(130);
    crate::harness::cleanup(agent);
}

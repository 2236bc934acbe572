//! Ctrl+C, SIGTERM and SIGHUP while an agent runs: exit codes, the saved state, and
//! no process left behind.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::harness::{DEFAULT_TIMEOUT, Output, Project, Running, alive, cleanup, gone_within, sim_project};

const GONE: Duration = Duration::from_secs(5);

/// The first launch's steps of an agent that ignores SIGINT and SIGTERM.
const STUBBORN: &str = r#"{ ignore = ["SIGINT", "SIGTERM"] },"#;

/// One agent `a` whose first launch runs `first` (then hangs in a tool call, which is
/// never a stall), and whose later launches finish.
fn project(timeouts: &str, first: &str) -> Project {
    let hangs = format!(
        r#"[{first} {{ pidfile = "agent.pid" }}, {{ tool = {{ name = "Bash", input = {{ command = "make" }}, hang = true }} }}]"#
    );
    sim_project().timeouts(timeouts).sim("a", &[&hangs, r#"[{ done = "finished after the resume" }]"#]).build()
}

/// ralph started on `p` and sent `signal` once its agent runs: ralph's output, and
/// the agent's pid (killed if ralph left it behind, which the test then sees).
fn stopped_by(p: &Project, signal: Signal) -> (Output, i32) {
    let (run, agent) = p.start();
    run.signal(signal);
    let out = run.finish();
    cleanup(agent);
    (out, agent)
}

/// The second Ctrl+C: a first one, `between` (until ralph is ending the agent), a
/// second; ralph must then exit 130 within `within`, its agent be gone soon after,
/// and the run be paused. ralph's output and the checkpoint.
fn ctrl_c_twice(p: &Project, run: Running, agent: i32, between: impl FnOnce(), within: Duration) -> (Output, Value) {
    run.signal(Signal::SIGINT);
    between();
    run.signal(Signal::SIGINT);
    let out = run.wait(within);
    let gone = gone_within(agent, GONE);
    cleanup(agent);
    out.expect_code(130);
    assert!(gone, "the agent {agent} outlived ralph");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused", "{cp:#}");
    (out, cp)
}

/// How soon ralph must be gone after the second Ctrl+C: far within a 30 s grace.
const SECOND_SOON: Duration = Duration::from_secs(10);

#[test]
fn first_ctrl_c_pauses_and_resume_continues_the_session() {
    let p = project("", "");
    let (out, agent) = stopped_by(&p, Signal::SIGINT);
    out.expect_code(130).stderr_has("--resume");
    assert!(!alive(agent), "the agent {agent} outlived ralph");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused", "{cp:#}");
    assert_eq!(cp["stop_cause"], "user");
    assert_eq!(cp["clean_stop"], true);
    assert_eq!(cp["progress"]["resume_session"], "sim-a-1", "{cp:#}");
    assert_eq!(cp["in_flight"], json!(null));
    // A stop is not a failure.
    assert!(p.events("attempt_failed").is_empty());

    p.ralph().args(["--resume"]).run().expect_code(0);
    let started = p.events("attempt_started");
    assert_eq!(started.len(), 2);
    assert_eq!(started[1]["resume_session"], "sim-a-1");
    assert_eq!(p.checkpoint()["status"], "completed");
    assert_eq!(p.events("run_resumed").len(), 1);
}

#[test]
fn ctrl_c_escalates_to_sigterm_when_the_agent_ignores_sigint() {
    let p = project("", r#"{ ignore = ["SIGINT"] },"#);
    let (out, agent) = stopped_by(&p, Signal::SIGINT);
    out.expect_code(130);
    assert!(!alive(agent), "the agent {agent} outlived ralph");
    let log = p.ralph_log();
    assert!(log.contains("sending SIGTERM"), "{log}");
    assert!(!log.contains("sending SIGKILL"), "{log}");
    assert_eq!(p.checkpoint()["status"], "paused");
}

#[test]
fn ctrl_c_escalates_to_sigkill_when_the_agent_ignores_sigint_and_sigterm() {
    let p = project("", STUBBORN);
    let (out, agent) = stopped_by(&p, Signal::SIGINT);
    out.expect_code(130);
    assert!(!alive(agent), "the agent {agent} outlived ralph");
    let log = p.ralph_log();
    assert!(log.contains("sending SIGTERM") && log.contains("sending SIGKILL"), "{log}");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused");
    assert_eq!(cp["progress"]["resume_session"], "sim-a-1");
}

/// Ctrl+C while the agent (running `first`) has a grandchild that would live a
/// minute: ralph exits 130; whether the agent and the grandchild were gone soon after.
fn ctrl_c_with_a_grandchild(first: &str) -> (bool, bool) {
    let p = project("", &format!(r#"{first} {{ grandchild = {{ pidfile = "gc.pid", lives = "60s" }} }},"#));
    let (run, agent) = p.start();
    let gc = p.pid_file("gc.pid");
    assert!(alive(gc));
    run.signal(Signal::SIGINT);
    let out = run.finish();
    let gone = (gone_within(agent, GONE), gone_within(gc, GONE));
    cleanup(agent);
    cleanup(gc);
    out.expect_code(130);
    gone
}

#[test]
fn ctrl_c_ends_the_agents_grandchild_too() {
    let (agent_gone, gc_gone) = ctrl_c_with_a_grandchild("");
    assert!(agent_gone, "the agent outlived ralph");
    assert!(gc_gone, "the agent's grandchild outlived ralph");
}

#[test]
fn stubborn_grandchild_is_killed_with_the_group() {
    let (agent_gone, gc_gone) = ctrl_c_with_a_grandchild(STUBBORN);
    assert!(agent_gone && gc_gone, "agent gone: {agent_gone}, grandchild gone: {gc_gone}");
}

#[test]
fn grandchild_of_an_agent_that_exits_normally_is_killed_when_the_attempt_ends() {
    let p = sim_project()
        .sim("a", &[r#"[{ grandchild = { pidfile = "gc.pid", lives = "60s" } }, { done = "done, with a server left running" }]"#])
        .build();
    let out = p.ralph().run();
    let gc = p.pid_file("gc.pid");
    let gone = gone_within(gc, GONE);
    cleanup(gc);
    out.expect_code(0);
    assert!(gone, "the grandchild {gc} outlived its attempt");
}

#[test]
fn second_ctrl_c_exits_at_once_and_leaves_a_valid_checkpoint() {
    let p = project(r#"grace = "30s""#, STUBBORN);
    let (run, agent) = p.start();
    // Far less than the 30 s grace: the second Ctrl+C does not wait.
    // The user's intent was recorded at the first Ctrl+C: a pause, not a crash that
    // a watchdog would resume.
    let (_, cp) = ctrl_c_twice(&p, run, agent, || p.wait_for_log("sending SIGINT", DEFAULT_TIMEOUT), SECOND_SOON);
    assert_eq!(cp["stop_cause"], "user", "{cp:#}");
    assert_eq!(cp["progress"]["resume_session"], "sim-a-1", "{cp:#}");
    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0);
    assert!(!out.stderr.contains("without a clean stop"), "the lock was left behind\n{out}");
}

#[test]
fn second_ctrl_c_exits_even_when_the_event_loop_is_blocked() {
    let p = project(r#"grace = "30s""#, STUBBORN);
    // Debug builds block the loop for a minute right after the first Ctrl+C is
    // recorded, as an fsync on a hung network file system would.
    let run = p.ralph().env("RALPH_TEST_HANG_AFTER_STOP", "1").spawn();
    let agent = p.pid_file("agent.pid");
    let paused = || p.wait_for_checkpoint(|cp| cp["status"] == "paused", DEFAULT_TIMEOUT);
    let (_, cp) = ctrl_c_twice(&p, run, agent, paused, Duration::from_secs(20));
    assert_eq!(cp["stop_cause"], "user", "{cp:#}");
}

/// The state letter of `/proc/PID/stat` ('T' = stopped).
fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

fn wait_for_state(pid: i32, state: char) -> bool {
    let deadline = std::time::Instant::now() + DEFAULT_TIMEOUT;
    while std::time::Instant::now() < deadline {
        if proc_state(pid) == Some(state) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn ctrl_z_stops_the_agent_with_ralph_and_pauses_the_stall_clock() {
    let p = sim_project()
        .timeouts(r#"stall = "2s""#)
        .sim("a", &[r#"[{ pidfile = "agent.pid" }, { sleep = "1s" }, { done = "done after fg" }]"#])
        .build();
    let (run, agent) = p.start();
    run.signal(Signal::SIGTSTP);
    let ralph_stopped = wait_for_state(run.pid(), 'T');
    let agent_stopped = wait_for_state(agent, 'T');
    // Longer than the stall limit: time stopped must not count as silence.
    std::thread::sleep(Duration::from_secs(3));
    run.signal(Signal::SIGCONT);
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(agent), Signal::SIGCONT);
    let out = run.finish();
    cleanup(agent);
    assert!(ralph_stopped, "ralph did not stop on SIGTSTP\n{out}");
    assert!(agent_stopped, "the agent kept running while ralph was stopped\n{out}");
    out.expect_code(0);
    assert!(p.events("intervention").is_empty(), "{:#?}", p.events("intervention"));
    assert_eq!(p.events("attempt_started").len(), 1);
}

#[test]
fn ctrl_c_at_the_resume_question_releases_the_lock() {
    use std::io::Read;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::sync::{Arc, Mutex};

    let p = project("", "");
    stopped_by(&p, Signal::SIGINT).0.expect_code(130);

    // The question is asked only on a terminal.
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let mut child = std::process::Command::new(crate::harness::RALPH)
        .current_dir(p.path())
        .env("XDG_STATE_HOME", p.join(".xdg-state"))
        .stdin(slave.try_clone().expect("dup"))
        .stdout(std::process::Stdio::null())
        .stderr(slave)
        .process_group(0)
        .spawn()
        .expect("spawn ralph");
    let seen = Arc::new(Mutex::new(String::new()));
    let mut master = std::fs::File::from(pty.master);
    let writer = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok(n @ 1..) = master.read(&mut buf) {
            writer.lock().expect("lock").push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let deadline = std::time::Instant::now() + DEFAULT_TIMEOUT;
    while !seen.lock().expect("lock").contains("[r]esume") {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("no resume question: {}", seen.lock().expect("lock"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), Signal::SIGINT).expect("signal");
    let status = crate::harness::wait_child(&mut child, Duration::from_secs(10), "ralph, Ctrl+C'd at the question,");
    assert_eq!(status.code(), Some(130), "signal {:?}: {}", status.signal(), seen.lock().expect("lock"));
    assert_eq!(p.checkpoint()["status"], "paused");
    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0);
    assert!(!out.stderr.contains("without a clean stop"), "the question left a stale lock\n{out}");
}

/// `kill PID` from a process of the user's own (this test): a deliberate stop, as
/// much the user's decision as Ctrl+C; the sender is recorded.
#[test]
fn a_sigterm_of_the_users_own_pauses_the_run() {
    let p = project("", "");
    let (out, agent) = stopped_by(&p, Signal::SIGTERM);
    out.expect_code(143).stderr_has(&format!("ralph: paused by a SIGTERM from pid {}", std::process::id()));
    out.stderr_has("a process of yours: a deliberate stop, which the watchdog leaves alone");
    assert!(!alive(agent));
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused", "{cp:#}");
    assert_eq!(cp["stop_cause"], "terminate");
    assert_eq!(cp["stop_sender"]["origin"], "user", "{cp:#}");
    assert_eq!(cp["stop_sender"]["pid"], std::process::id());
    assert_eq!(cp["progress"]["resume_session"], "sim-a-1");
    // `--resume-or-start` keeps a paused run's code, like a Ctrl+C'd one.
    p.ralph().args(["--resume-or-start"]).run().expect_code(143);
    p.ralph().args(["--resume"]).run().expect_code(0);
    assert_eq!(p.events("attempt_started")[1]["resume_session"], "sim-a-1");
}

/// A SIGTERM of a service manager (here: this test, named in `[watch]
/// service_managers`) interrupts: the run stays resumable.
#[test]
fn a_sigterm_of_a_service_manager_interrupts_with_143() {
    let p = sim_project()
        .toml(&format!("[watch]\n{}", crate::harness::sigterm_as_service_manager()))
        .sim("a", &[r#"[{ pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]"#, r#"[{ done = "finished after the resume" }]"#])
        .build();
    let (out, _) = stopped_by(&p, Signal::SIGTERM);
    out.expect_code(143).stderr_has("ralph: interrupted by SIGTERM from pid").stderr_has("a service manager");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "interrupted", "{cp:#}");
    assert_eq!(cp["stop_cause"], "terminate");
    assert_eq!(cp["stop_sender"]["origin"], "service_manager", "{cp:#}");
    // An interrupted run resumes like a paused one.
    p.ralph().args(["--resume-or-start"]).run().expect_code(0);
    assert_eq!(p.events("attempt_started")[1]["resume_session"], "sim-a-1");
}

/// The arguments of `unshare` that give a command its own pid namespace here (with
/// a user namespace when not root), or `None` when the system refuses them.
fn pid_namespace() -> Option<Vec<&'static str>> {
    let root = nix::unistd::geteuid().is_root();
    let args: Vec<&str> = if root {
        vec!["--pid", "--fork", "--mount-proc"]
    } else {
        vec!["--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]
    };
    let works =
        std::process::Command::new("unshare").args(&args).arg("true").output().is_ok_and(|o| o.status.success());
    works.then_some(args)
}

/// A SIGTERM from PID 1 (a shutdown, a container's init) and one from a sender
/// ralph cannot see (pid 0: a container runtime outside its pid namespace) are the
/// machine's: the run stays resumable.
#[test]
fn a_sigterm_from_pid_1_or_an_unknown_sender_interrupts() {
    let Some(unshare) = pid_namespace() else {
        assert!(std::env::var_os("CI").is_none(), "unshare cannot make a pid namespace under CI");
        eprintln!("unshare cannot make a pid namespace here; skipping");
        return;
    };
    let ralph = crate::harness::RALPH;
    // PID 1 of the namespace is a shell that starts ralph and, told so, stops it.
    let p = project("", "");
    let script =
        format!("{ralph} & pid=$!; while [ ! -e go ]; do sleep 0.05; done; kill -TERM $pid; wait $pid; exit $?");
    let mut args: Vec<String> = unshare.iter().map(|a| (*a).to_string()).collect();
    args.extend(["sh".to_string(), "-c".to_string(), script]);
    let run = p.ralph().through("unshare", args).spawn();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"].is_string(), DEFAULT_TIMEOUT);
    p.write("go", "");
    run.finish().expect_code(143);
    interrupted_by(&p, "init");

    // ralph is PID 1 of its namespace; this test, outside it, is nobody it can see.
    let q = project("", "");
    let mut args: Vec<String> = unshare.iter().map(|a| (*a).to_string()).collect();
    args.push(ralph.to_string());
    let run = q.ralph().through("unshare", args).spawn();
    q.wait_for_checkpoint(|cp| cp["in_flight"]["session"].is_string(), DEFAULT_TIMEOUT);
    let inner = children_of(run.pid());
    assert_eq!(inner.len(), 1, "unshare's child: {inner:?}");
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(inner[0]), Signal::SIGTERM);
    run.finish().expect_code(143);
    interrupted_by(&q, "unknown");
}

/// The run of `p` stands interrupted by a sender of `origin`.
#[track_caller]
fn interrupted_by(p: &Project, origin: &str) {
    let cp = p.checkpoint();
    assert_eq!(
        (cp["status"].as_str(), cp["stop_sender"]["origin"].as_str()),
        (Some("interrupted"), Some(origin)),
        "{cp:#}"
    );
}

fn children_of(pid: i32) -> Vec<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    text.split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

#[test]
fn sighup_interrupts_with_129() {
    let p = project("", "");
    let (out, agent) = stopped_by(&p, Signal::SIGHUP);
    out.expect_code(129);
    assert!(!alive(agent));
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "interrupted");
    assert_eq!(cp["stop_cause"], "hangup");
}

#[test]
fn ctrl_c_during_backoff_pauses() {
    // A crash is an `agent` failure: its retry waits `agent_backoff_base`.
    let p = sim_project().retry(r#"agent_backoff_base = "20s""#).sim("a", &[r#"[{ crash = "SIGSEGV" }]"#]).build();
    let run = p.ralph().spawn();
    // The journal says the retry waits: the Ctrl+C lands in that wait, not in a launch.
    let retry = p.wait_for_event("retry", DEFAULT_TIMEOUT);
    assert!(retry["delay_ms"].as_u64().is_some_and(|ms| ms >= 10_000), "no real backoff: {retry}");
    run.signal(Signal::SIGINT);
    let out = run.wait(Duration::from_secs(10));
    out.expect_code(130);
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused", "{cp:#}");
    assert_eq!(p.events("attempt_started").len(), 1, "the retry was launched: the stop came after the backoff");
}

#[test]
fn second_ctrl_c_keeps_the_usage_the_attempt_reported() {
    // An agent that reported its cost, then ignores SIGINT and SIGTERM.
    let agent_script = r#"#!/bin/sh
trap '' INT TERM
echo $$ > agent.pid
printf '%s\n' '{"type":"system","subtype":"init","session_id":"s-usage"}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"partial","session_id":"s-usage","total_cost_usd":0.5,"usage":{"input_tokens":100,"output_tokens":20}}'
exec sleep 60
"#;
    let p =
        sim_project().timeouts(r#"grace = "30s""#).program("a", "agent.sh", agent_script, "claude-stream-json").build();
    let (run, agent) = p.start();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"] == "s-usage", DEFAULT_TIMEOUT);
    let (_, cp) = ctrl_c_twice(&p, run, agent, || p.wait_for_log("sending SIGINT", DEFAULT_TIMEOUT), SECOND_SOON);
    assert_eq!(cp["usage"]["cost_usd"], 0.5, "{cp:#}");
    assert_eq!(cp["progress"]["resume_session"], "s-usage", "{cp:#}");
}

#[test]
fn a_backoff_says_how_long_and_until_when() {
    let provider = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = provider.local_addr().expect("addr").port();
    let p = sim_project()
        .retry("backoff_base = \"20s\"\nbackoff_max = \"20s\"")
        .toml(&format!("[offline]\nprobe = [\"127.0.0.1:{port}\"]"))
        .sim("a", &[r#"[{ error = "API Error: 529 Overloaded" }]"#])
        .build();
    let run = p.ralph().spawn();
    // The line is said before `waiting` is saved.
    p.wait_for_checkpoint(|cp| cp["status"] == "waiting", DEFAULT_TIMEOUT);
    run.signal(Signal::SIGINT);
    let out = run.wait(Duration::from_secs(10));
    drop(provider);
    out.expect_code(130);
    // The wait's length and end are said, in the zone named on the first line.
    out.stderr_has("(times are ").stderr_has("retrying after backoff: waiting ").stderr_has("s (until ");
}

#[test]
fn ctrl_c_says_what_it_waits_for_and_each_escalation_step() {
    let p = project("", STUBBORN);
    let (out, _) = stopped_by(&p, Signal::SIGINT);
    out.expect_code(130)
        .stderr_has("stopping: waiting for a to exit (Ctrl+C again to kill it now) · sent SIGINT; SIGTERM in 1s")
        .stderr_has("· sent SIGTERM; SIGKILL in 1s")
        .stderr_has("· sent SIGKILL")
        .stderr_has("a exited after SIGKILL")
        .stderr_has("next: `ralph --resume` continues where it stopped");
}

#[test]
fn second_ctrl_c_says_what_was_killed_and_how_to_continue() {
    let p = project(r#"grace = "30s""#, STUBBORN);
    let (run, agent) = p.start();
    let (out, _) = ctrl_c_twice(&p, run, agent, || p.wait_for_log("sending SIGINT", DEFAULT_TIMEOUT), SECOND_SOON);
    out.stderr_has("killed a and everything it started").stderr_has("`ralph --resume` continues");
}

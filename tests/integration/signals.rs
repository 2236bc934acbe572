//! Ctrl+C, SIGTERM and SIGHUP while an agent runs: exit codes, the saved state, and
//! no process left behind.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::json;

use crate::harness::{DEFAULT_TIMEOUT, Project, alive, cleanup, fast, gone_within};

const GONE: Duration = Duration::from_secs(5);

/// One agent `a` whose first launch runs `first` (then hangs in a tool call, which is
/// never a stall), and whose later launches finish.
fn project(timeouts: &str, first: &str) -> Project {
    Project::new().config(&fast(
        "",
        timeouts,
        &format!(
            r#"
[agents.a]
kind = "sim"

[[agents.a.script]]
steps = [{first} {{ pidfile = "agent.pid" }}, {{ tool = {{ name = "Bash", input = {{ command = "make" }}, hang = true }} }}]

[[agents.a.script]]
steps = [{{ done = "finished after the resume" }}]

[chains]
main = ["a"]

[phases.develop]
chain = "main"
"#
        ),
    ))
}

#[test]
fn first_ctrl_c_pauses_and_resume_continues_the_session() {
    let p = project("", "");
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGINT);
    let out = run.finish();
    cleanup(agent);
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
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGINT);
    let out = run.finish();
    cleanup(agent);
    out.expect_code(130);
    assert!(!alive(agent), "the agent {agent} outlived ralph");
    let log = p.ralph_log();
    assert!(log.contains("sending SIGTERM"), "{log}");
    assert!(!log.contains("sending SIGKILL"), "{log}");
    assert_eq!(p.checkpoint()["status"], "paused");
}

#[test]
fn ctrl_c_escalates_to_sigkill_when_the_agent_ignores_sigint_and_sigterm() {
    let p = project("", r#"{ ignore = ["SIGINT", "SIGTERM"] },"#);
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGINT);
    let out = run.finish();
    cleanup(agent);
    out.expect_code(130);
    assert!(!alive(agent), "the agent {agent} outlived ralph");
    let log = p.ralph_log();
    assert!(log.contains("sending SIGTERM") && log.contains("sending SIGKILL"), "{log}");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused");
    assert_eq!(cp["progress"]["resume_session"], "sim-a-1");
}

#[test]
fn ctrl_c_ends_the_agents_grandchild_too() {
    let p = project("", r#"{ grandchild = { pidfile = "gc.pid", lives = "60s" } },"#);
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    let gc = p.pid_file("gc.pid");
    assert!(alive(gc));
    run.signal(Signal::SIGINT);
    let out = run.finish();
    let (agent_gone, gc_gone) = (gone_within(agent, GONE), gone_within(gc, GONE));
    cleanup(agent);
    cleanup(gc);
    out.expect_code(130);
    assert!(agent_gone, "the agent outlived ralph");
    assert!(gc_gone, "the agent's grandchild outlived ralph");
}

#[test]
fn stubborn_grandchild_is_killed_with_the_group() {
    let p =
        project("", r#"{ ignore = ["SIGINT", "SIGTERM"] }, { grandchild = { pidfile = "gc.pid", lives = "60s" } },"#);
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    let gc = p.pid_file("gc.pid");
    run.signal(Signal::SIGINT);
    let out = run.finish();
    let (agent_gone, gc_gone) = (gone_within(agent, GONE), gone_within(gc, GONE));
    cleanup(agent);
    cleanup(gc);
    out.expect_code(130);
    assert!(agent_gone && gc_gone, "agent gone: {agent_gone}, grandchild gone: {gc_gone}");
}

#[test]
fn grandchild_of_an_agent_that_exits_normally_is_killed_when_the_attempt_ends() {
    let p = Project::new().config(&fast(
        "",
        "",
        r#"
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{ grandchild = { pidfile = "gc.pid", lives = "60s" } }, { done = "done, with a server left running" }]

[chains]
main = ["a"]

[phases.develop]
chain = "main"
"#,
    ));
    let out = p.ralph().run();
    let gc = p.pid_file("gc.pid");
    let gone = gone_within(gc, GONE);
    cleanup(gc);
    out.expect_code(0);
    assert!(gone, "the grandchild {gc} outlived its attempt");
}

#[test]
fn second_ctrl_c_exits_at_once_and_leaves_a_valid_checkpoint() {
    let p = project(r#"grace = "30s""#, r#"{ ignore = ["SIGINT", "SIGTERM"] },"#);
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGINT);
    p.wait_for_log("sending SIGINT", DEFAULT_TIMEOUT);
    run.signal(Signal::SIGINT);
    // Far less than the 30 s grace: the second Ctrl+C does not wait.
    let out = run.wait(Duration::from_secs(10));
    let gone = gone_within(agent, GONE);
    cleanup(agent);
    out.expect_code(130);
    assert!(gone, "the agent {agent} outlived ralph");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "running", "{cp:#}");
    assert_eq!(cp["clean_stop"], false);
}

#[test]
fn sigterm_interrupts_with_143() {
    let p = project("", "");
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGTERM);
    let out = run.finish();
    cleanup(agent);
    out.expect_code(143);
    assert!(!alive(agent));
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "interrupted", "{cp:#}");
    assert_eq!(cp["stop_cause"], "terminate");
    assert_eq!(cp["progress"]["resume_session"], "sim-a-1");
    // An interrupted run resumes like a paused one.
    p.ralph().args(["--resume"]).run().expect_code(0);
    assert_eq!(p.events("attempt_started")[1]["resume_session"], "sim-a-1");
}

#[test]
fn sighup_interrupts_with_129() {
    let p = project("", "");
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGHUP);
    let out = run.finish();
    cleanup(agent);
    out.expect_code(129);
    assert!(!alive(agent));
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "interrupted");
    assert_eq!(cp["stop_cause"], "hangup");
}

#[test]
fn ctrl_c_during_backoff_pauses() {
    let p = Project::new().config(&fast(
        r#"backoff_base = "20s"
backoff_max = "20s""#,
        "",
        r#"
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{ pidfile = "agent.pid" }, { crash = "SIGSEGV" }]

[chains]
main = ["a"]

[phases.develop]
chain = "main"
"#,
    ));
    let run = p.ralph().spawn();
    p.wait_for_log("\"retry\"", DEFAULT_TIMEOUT);
    run.signal(Signal::SIGINT);
    let out = run.wait(Duration::from_secs(10));
    out.expect_code(130);
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "paused", "{cp:#}");
}

#[test]
fn a_backoff_says_how_long_and_until_when() {
    let provider = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = provider.local_addr().expect("addr").port();
    let p = Project::new().config(&fast(
        r#"backoff_base = "20s"
backoff_max = "20s""#,
        "",
        &format!(
            r#"
[offline]
probe = ["127.0.0.1:{port}"]
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{{ error = "API Error: 529 Overloaded" }}]

[chains]
main = ["a"]

[phases.develop]
chain = "main"
"#
        ),
    ));
    let run = p.ralph().spawn();
    // `waiting` is written just before the wait is announced; a signal from then on
    // is handled after the announcement.
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
    let p = project("", r#"{ ignore = ["SIGINT", "SIGTERM"] },"#);
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGINT);
    let out = run.finish();
    cleanup(agent);
    out.expect_code(130)
        .stderr_has("stopping: waiting for a to exit (Ctrl+C again to kill it now) · sent SIGINT; SIGTERM in 1s")
        .stderr_has("· sent SIGTERM; SIGKILL in 1s")
        .stderr_has("· sent SIGKILL")
        .stderr_has("a exited after SIGKILL")
        .stderr_has("next: `ralph --resume` continues where it stopped");
}

#[test]
fn second_ctrl_c_says_what_was_killed_and_how_to_continue() {
    let p = project(r#"grace = "30s""#, r#"{ ignore = ["SIGINT", "SIGTERM"] },"#);
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
    run.signal(Signal::SIGINT);
    p.wait_for_log("sending SIGINT", DEFAULT_TIMEOUT);
    run.signal(Signal::SIGINT);
    let out = run.wait(Duration::from_secs(10));
    cleanup(agent);
    out.expect_code(130).stderr_has("killed a and everything it started").stderr_has("`ralph --resume` continues");
}

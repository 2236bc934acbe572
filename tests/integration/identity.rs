//! A run is who it says it is: a copy of a live project never reaches the original
//! through the copied socket record; the watchdog resumes only the run an entry
//! registered (not a stranger moved into its directory, not one run twice through a
//! link); a person's `status` and `stop` get through however many MCP sessions and
//! idle connections are open; and a run never goes on without its control socket
//! (a private directory of another user or a directory planted at the socket's path
//! is passed over, and with no private place at all the run does not start).

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::{DEFAULT_TIMEOUT, Project, RALPH, cleanup, sim_project};

const LIMIT: Duration = Duration::from_secs(60);

/// One iteration whose first launch hangs in a tool call (after its pid file), and
/// whose later launches finish at once.
fn hanging() -> Project {
    sim_project()
        .sim("a", &[r#"[{ pidfile = "agent.pid" }, { tool = { name = "Bash", hang = true } }]"#, r#"[{ done = "x" }]"#])
        .build()
}

/// A `done = "mcp"` phase that only the agent's `declare_complete` completes.
fn needs_the_channel() -> Project {
    let steps = r#"[
        { mcp = { tool = "declare_complete", arguments = { summary = "built it", evidence = "cargo test: 12 passed, 0 failed" } } },
        { say = "finished" },
    ]"#;
    sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .sim("a", &[steps])
        .phase("done = \"mcp\"")
        .build()
}

/// The socket's path, from the live run's record.
fn socket_of(p: &Project) -> PathBuf {
    p.wait_for_file(".agent/control.sock.path", DEFAULT_TIMEOUT);
    PathBuf::from(p.read(".agent/control.sock.path").lines().next().unwrap_or_default())
}

/// Starts `ralph` in `dir` (with `p`'s registry), waits until its agent hangs in its
/// tool call, and kills ralph with SIGKILL: an interrupted run.
fn kill_9_in(p: &Project, dir: &Path) {
    let run = p.ralph().current_dir(dir).spawn();
    let pid_file = dir.join("agent.pid");
    let deadline = std::time::Instant::now() + LIMIT;
    let agent = loop {
        if let Some(pid) = fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse::<i32>().ok()) {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "no agent in {}", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    };
    // The attempt's checkpoint (with its session) is on disk.
    let cp = dir.join(".agent/checkpoint.json");
    while !fs::read_to_string(&cp).is_ok_and(|t| t.contains("\"session\": \"")) {
        assert!(std::time::Instant::now() < deadline, "no attempt saved in {}", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    run.signal(Signal::SIGKILL);
    assert_eq!(run.wait(crate::harness::DEFAULT_TIMEOUT).signal, Some(9));
    cleanup(agent);
    let _ = fs::remove_file(pid_file);
}

#[test]
fn a_copy_of_a_live_project_never_reaches_the_original() {
    let p = hanging();
    let (run, agent) = p.start();
    socket_of(&p);
    let copy = tempfile::Builder::new().prefix("ralph-it-copy-").tempdir().expect("temp dir");
    let cp = Command::new("cp").arg("-a").arg(format!("{}/.", p.path().display())).arg(copy.path()).status();
    assert!(cp.expect("cp").success());
    assert_eq!(
        fs::read(copy.path().join(".agent/control.sock.path")).ok(),
        fs::read(p.join(".agent/control.sock.path")).ok()
    );

    // In the copy: no live run, and the original's socket is not talked to.
    let status = p.ralph().current_dir(copy.path()).args(["status"]).run();
    status.expect_code(0).stderr_has("serves another run");
    assert!(!status.stdout.contains("live:"), "{status}");
    let json = p.ralph().current_dir(copy.path()).args(["status", "--json"]).run();
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}\n{json}"));
    assert_eq!((v["live"].clone(), v["live_state"].clone()), (false.into(), serde_json::Value::Null), "{v:#}");
    let stop = p.ralph().current_dir(copy.path()).args(["stop", "--now"]).run();
    stop.expect_code(2).stderr_has("no running ralph").stderr_has("serves another run");
    assert!(!stop.stdout.contains("stopped"), "{stop}");

    // The original never heard of it.
    assert!(p.events("stop_requested").is_empty() && p.events("stop_after_iteration").is_empty());
    p.ralph().args(["status"]).run().expect_code(0).stdout_has("live: ralph pid").stdout_has("attempt 1");
    p.ralph().args(["stop", "--now"]).run().expect_code(0).stdout_has("stopped: paused");
    run.finish().expect_code(130);
    cleanup(agent);
}

#[test]
fn a_directory_that_now_holds_another_project_is_not_resumed_and_is_reported() {
    let p = hanging();
    kill_9_in(&p, p.path());
    // Another project, interrupted too (registered elsewhere), then moved to p's path.
    let q = hanging();
    kill_9_in(&p, q.path());
    let stranger_run = q.checkpoint()["run_id"].clone();
    fs::remove_dir_all(p.path()).expect("delete the registered project");
    fs::rename(q.path(), p.path()).expect("move the other project in its place");
    assert_eq!(p.checkpoint()["run_id"], stranger_run);

    let out = p.ralph().args(["watch", "--once"]).timeout(LIMIT).run();
    out.expect_code(0).stderr_has("left alone: the run").stderr_has("not the one the run recorded");
    assert!(!out.stderr.contains(": resumed: "), "{out}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!p.exists("agent.pid"), "the stranger's agent was launched");
    assert!(p.events("run_resumed").is_empty());
    assert_eq!(p.checkpoint()["status"], "running", "left as it was");

    let all = p.ralph().args(["status", "--all"]).run();
    all.expect_code(0).stdout_has("not the registered run");
    let json = p.ralph().args(["status", "--all", "--json"]).run();
    let rows: serde_json::Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}\n{json}"));
    let row = rows.as_array().and_then(|r| r.iter().find(|r| r["dir"] == p.path().display().to_string())).cloned();
    assert!(row.is_some_and(|r| r["other_run"].is_string()), "{rows:#}");
    let prune = p.ralph().args(["status", "--prune"]).run();
    prune.expect_code(0).stderr_has("its run is not there any more");
}

#[test]
fn a_run_reached_through_a_link_is_resumed_once_per_pass() {
    let p = hanging();
    kill_9_in(&p, p.path());
    // A second entry for the same run, through a link to its directory (a project
    // moved and linked back), and the per-entry locks an older watchdog left.
    let links = tempfile::tempdir().expect("temp dir");
    let link = links.path().join("linked-project");
    std::os::unix::fs::symlink(p.path(), &link).expect("link");
    let entry = fs::read_dir(p.registry())
        .expect("registry")
        .flatten()
        .map(|e| e.path())
        .find(|e| e.extension().is_some_and(|x| x == "json") && !e.to_string_lossy().ends_with(".watch.json"))
        .expect("the run's entry");
    let mut linked: serde_json::Value = serde_json::from_str(&fs::read_to_string(&entry).unwrap()).unwrap();
    linked["dir"] = link.display().to_string().into();
    fs::write(p.registry().join("0000000000000000.json"), linked.to_string()).unwrap();
    for key in ["0000000000000000", "1111111111111111"] {
        fs::write(p.registry().join(format!("{key}.watch.lock")), "").unwrap();
    }

    let out = p.ralph().args(["watch", "--once"]).timeout(LIMIT).run();
    out.expect_code(0);
    assert_eq!(out.stderr.matches(": resumed: ").count(), 1, "{out}");
    out.stderr_has(&format!("{}: left alone: the same run as", link.display()));
    p.wait_for_checkpoint(|cp| cp["status"] == "completed", LIMIT);
    assert_eq!(p.events("run_resumed").len(), 1);
    let locks: Vec<_> = fs::read_dir(p.registry())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".lock"))
        .map(|e| e.file_name())
        .collect();
    assert!(locks.is_empty(), "lock files left in the registry: {locks:?}");
}

/// `ralph mcp` of attempt 1, with its session open once it answers `initialize`.
fn mcp_session(socket: &Path) -> Child {
    let mut child = Command::new(RALPH)
        .args(["mcp", "--socket"])
        .arg(socket)
        .args(["--attempt", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ralph mcp");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    writeln!(child.stdin.as_mut().expect("stdin"), "{init}").expect("send");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout")).read_line(&mut line).expect("an answer");
    assert!(line.contains("serverInfo"), "{line}");
    child
}

#[test]
fn stop_and_status_get_through_many_mcp_sessions_and_idle_connections() {
    let p = hanging();
    let (run, agent) = p.start();
    let socket = socket_of(&p);
    let mut sessions: Vec<Child> = (0..18).map(|_| mcp_session(&socket)).collect();
    let idle: Vec<UnixStream> = (0..24).filter_map(|_| UnixStream::connect(&socket).ok()).collect();
    assert_eq!(idle.len(), 24);

    p.ralph().args(["status"]).run().expect_code(0).stdout_has("live: ralph pid").stdout_has("attempt 1");
    p.ralph().args(["stop", "--now"]).run().expect_code(0).stdout_has("stopped: paused");
    run.finish().expect_code(130);
    cleanup(agent);
    drop(idle);
    for session in &mut sessions {
        let _ = session.kill();
        let _ = session.wait();
    }
}

/// This user's id, and whether it may give a directory away (root).
fn uid() -> (u32, bool) {
    let uid = nix::unistd::getuid();
    (uid.as_raw(), uid.is_root())
}

#[test]
fn a_private_directory_another_user_made_first_is_passed_over() {
    let p = needs_the_channel();
    let tmp = tempfile::tempdir().expect("temp dir");
    let (me, root) = uid();
    let taken = tmp.path().join(format!("ralph-{me}"));
    fs::create_dir(&taken).unwrap();
    fs::set_permissions(&taken, fs::Permissions::from_mode(0o700)).unwrap();
    if root {
        // Another local user's, as `nobody` would have made it.
        nix::unistd::chown(&taken, Some(65534.into()), Some(65534.into())).expect("chown");
    } else {
        // Not ours to give away: a directory open to others is refused the same way.
        fs::set_permissions(&taken, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = p.ralph().env("TMPDIR", tmp.path().display().to_string()).env_remove("XDG_RUNTIME_DIR").run();
    out.expect_code(0);
    assert_eq!(p.events("completion_declared").len(), 1, "{out}");
    // The directory made for the run went with it; the other user's was not touched.
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, [taken.file_name().unwrap().to_owned()], "{left:?}");
}

#[test]
fn a_directory_planted_at_the_socket_path_is_passed_over() {
    use sha2::{Digest, Sha256};
    let p = needs_the_channel();
    let runtime = tempfile::tempdir().expect("temp dir");
    let private = runtime.path().join("ralph");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let digest = Sha256::digest(p.path().canonicalize().unwrap().as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let planted = private.join(format!("run-{hex}.sock"));
    fs::create_dir(&planted).unwrap();
    let out = p.ralph().env("XDG_RUNTIME_DIR", runtime.path().display().to_string()).run();
    out.expect_code(0);
    assert_eq!(p.events("completion_declared").len(), 1, "{out}");
    assert!(planted.is_dir(), "what was planted is not ralph's to remove");
}

#[test]
fn without_a_private_place_for_its_socket_the_run_does_not_start() {
    let p = hanging();
    let missing = p.join("no-such-temp-dir");
    let out = p.ralph().env("TMPDIR", missing.display().to_string()).env_remove("XDG_RUNTIME_DIR").run();
    out.expect_code(2).stderr_has("no private directory for the control socket").stderr_has("no-such-temp-dir");
    assert!(!p.exists("agent.pid"), "an agent ran without the channel");
    assert!(!p.exists(".agent/checkpoint.json"), "the run started");
    // The lock was let go cleanly: the next ralph reports no interrupted run.
    assert_eq!(fs::read_to_string(p.join(".agent/ralph.lock")).unwrap_or_default(), "");
}

#[test]
fn a_socket_removed_while_the_run_lives_is_bound_again_before_the_next_attempt() {
    let declare = r#"{ mcp = { tool = "declare_complete", arguments = { summary = "built it", evidence = "cargo test: 12 passed, 0 failed" } } }"#;
    let first = format!(r#"[{{ pidfile = "agent.pid" }}, {{ sleep = "2s" }}, {declare}, {{ say = "finished" }}]"#);
    let second = format!(r#"[{declare}, {{ say = "finished" }}]"#);
    let p = sim_project()
        .retry("agent_attempts = 2")
        .general("max_cycles = 1")
        .sim("a", &[&first, &second])
        .phase("done = \"mcp\"")
        .build();
    let run = p.ralph().spawn();
    p.pid_file("agent.pid");
    // A cleaner of the temp dir takes the socket while the first attempt runs.
    fs::remove_file(socket_of(&p)).expect("remove the socket");
    let out = run.finish();
    out.expect_code(0).stderr_has("listening again");
    assert_eq!(p.events("completion_declared").len(), 1, "{out}");
    assert_eq!(p.events("attempt_failed").len(), 1, "the first attempt had no channel");
}

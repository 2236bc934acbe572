//! The watchdog against real runs: `ralph watch --once` and a running `ralph watch`
//! resume a run killed with SIGKILL mid-attempt; user-paused runs are left alone
//! (until their checkpoint changes); runs a service manager SIGTERM'd are resumed; a crash loop ends
//! `blocked`; missing credentials block instead of launching; a simulated reboot;
//! two watchers give one ralph; `status --all`; notifications; the systemd unit
//! passes `systemd-analyze verify`.

use std::fs;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::harness::{Project, Running, cleanup, fast};

pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// Two iterations; the first launch of iteration 1 hangs in a long tool call (the
/// moment a test kills ralph), every later launch finishes at once.
pub(crate) fn project(watch: &str) -> Project {
    Project::new().config(&config(watch, LATER_LAUNCHES))
}

/// Every launch after the first finishes its iteration at once.
pub(crate) const LATER_LAUNCHES: &str = r#"
[[agents.a.script]]
steps = [{ write = { path = "done1.txt", content = "1" } }, { done = "one" }]

[[agents.a.script]]
steps = [{ write = { path = "done2.txt", content = "2" } }, { done = "two" }]
"#;

pub(crate) fn config(watch: &str, later_launches: &str) -> String {
    fast(
        "",
        "",
        &format!(
            r#"
[watch]
restart_backoff = "1s"
{watch}

[agents.a]
kind = "sim"

[[agents.a.script]]
steps = [
  {{ pidfile = "agent.pid" }},
  {{ tool = {{ name = "Bash", input = {{ command = "make" }}, result = "ok", duration = "60s" }} }},
  {{ done = "one" }},
]
{later_launches}
[chains]
main = ["a"]

[phases.develop]
chain = "main"
iterations = 2
"#
        ),
    )
}

/// Starts a run and waits until its agent is in the long tool call.
pub(crate) fn start_and_wait_for_agent(p: &Project) -> (Running, i32) {
    let (run, agent) = p.start();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"].is_string(), LIMIT);
    (run, agent)
}

/// Starts a run, stops it with `signal` while its agent works, and checks its exit code.
pub(crate) fn stop_with(p: &Project, signal: Signal, code: i32) {
    let (run, agent) = start_and_wait_for_agent(p);
    run.signal(signal);
    run.finish().expect_code(code);
    cleanup(agent);
}

pub(crate) fn kill_9(p: &Project) {
    let (run, agent) = start_and_wait_for_agent(p);
    run.signal(Signal::SIGKILL);
    let out = run.wait(crate::harness::DEFAULT_TIMEOUT);
    assert_eq!(out.signal, Some(9), "{out}");
    cleanup(agent);
    let _ = fs::remove_file(p.join("agent.pid"));
    assert_eq!(p.checkpoint()["status"], "running");
}

pub(crate) fn wait_for_status(p: &Project, status: &str) {
    p.wait_for_checkpoint(|cp| cp["status"] == status, LIMIT);
}

pub(crate) fn watch_once(p: &Project) -> crate::harness::Output {
    p.ralph().args(["watch", "--once"]).timeout(LIMIT).run()
}

#[test]
fn watch_once_resumes_a_run_killed_mid_attempt() {
    let p = project("");
    kill_9(&p);
    let entries = fs::read_dir(p.registry()).expect("the run registered itself").count();
    assert!(entries >= 1);
    let out = watch_once(&p);
    out.expect_code(0).stderr_has(": resumed: ");
    wait_for_status(&p, "completed");
    assert!(p.exists("done1.txt") && p.exists("done2.txt"));
    assert_eq!(p.events("run_resumed").len(), 1);
    // The resumed run's output is in its log directory.
    let run_id = p.checkpoint()["run_id"].as_str().unwrap_or_default().to_string();
    let logs: Vec<_> = fs::read_dir(p.join(&format!(".agent/logs/{run_id}")))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("watch-resume-"))
        .collect();
    assert_eq!(logs.len(), 1);
    // A completed run is left alone.
    watch_once(&p).expect_code(0);
    assert_eq!(p.events("run_resumed").len(), 1);
}

#[test]
fn a_run_whose_checkpoint_a_power_cut_tore_is_resumed_from_the_journal() {
    let p = project("");
    kill_9(&p);
    // What an unsynced rename may leave after a power cut.
    fs::write(p.join(".agent/checkpoint.json"), "{\"version\": 1, \"run_").expect("tear the checkpoint");
    watch_once(&p).expect_code(0).stderr_has(": resumed: ");
    // The journal's newest save is the attempt in flight with its session (a light
    // save): the resumed run continues that session, whose next launch finishes
    // (after the file was restored: until then it is torn).
    p.wait_for_file("done1.txt", LIMIT);
    wait_for_status(&p, "completed");
    assert!(p.exists("done1.txt") && p.exists("done2.txt"));
    let aside = fs::read_dir(p.join(".agent")).expect(".agent/").flatten();
    assert!(aside.into_iter().any(|e| e.file_name().to_string_lossy().starts_with("checkpoint.corrupt-")));
}

/// A power cut may bring back an older `checkpoint.json` (its rename is not synced)
/// while the journal holds the newer, synced save: the watcher decides on the newer,
/// as `--resume` does, not on a stale "paused".
#[test]
fn a_stale_checkpoint_file_does_not_hide_a_crashed_run() {
    let p = project("");
    kill_9(&p);
    let mut cp = p.checkpoint();
    // An early save of the run (the journal's last synced one is later).
    (cp["status"], cp["seq"]) = ("paused".into(), 1.into());
    fs::write(p.join(".agent/checkpoint.json"), cp.to_string()).expect("an older save");
    watch_once(&p).expect_code(0).stderr_has(": resumed: ");
    wait_for_status(&p, "completed");
}

/// A run paused by Ctrl+C, and one pass of the watchdog over it.
fn paused_and_watched_once() -> Project {
    let p = project("");
    stop_with(&p, Signal::SIGINT, 130);
    let _ = fs::remove_file(p.join("agent.pid"));
    watch_once(&p).expect_code(0);
    p
}

#[test]
fn a_paused_run_is_left_alone_and_a_sigterm_of_the_machine_is_resumed() {
    let p = paused_and_watched_once();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(p.checkpoint()["status"], "paused");
    assert!(p.events("run_resumed").is_empty());

    // A SIGTERM of a service manager (here: this test, named one in the config).
    let manager = crate::harness::sigterm_as_service_manager();
    let q = project(&manager);
    stop_with(&q, Signal::SIGTERM, 143);
    assert_eq!(q.checkpoint()["status"], "interrupted");
    watch_once(&q).expect_code(0).stderr_has(": resumed: interrupted by a shutdown or a service manager (SIGTERM)");
    wait_for_status(&q, "completed");

    let r = project(&format!("resume_after_shutdown = false\n{manager}"));
    stop_with(&r, Signal::SIGTERM, 143);
    watch_once(&r).expect_code(0).stderr_has("left alone: interrupted by a shutdown or a closed terminal");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(r.checkpoint()["status"], "interrupted");

    // A SIGTERM of the user's own (this test, unnamed): a deliberate stop.
    let s = project("");
    stop_with(&s, Signal::SIGTERM, 143);
    assert_eq!(s.checkpoint()["status"], "paused");
    watch_once(&s).expect_code(0).stderr_has("left alone: paused");
    std::thread::sleep(Duration::from_millis(500));
    assert!(s.events("run_resumed").is_empty());
}

/// A pass skips a run it found settled (paused) only until the run's checkpoint
/// changes: here to `running`, as a later ralph killed mid-attempt leaves it.
#[test]
fn a_settled_run_is_looked_at_again_once_its_checkpoint_changes() {
    let p = paused_and_watched_once();
    watch_once(&p).expect_code(0);
    assert!(p.events("run_resumed").is_empty());
    let mut cp = p.checkpoint();
    cp["status"] = "running".into();
    let path = p.join(".agent/checkpoint.json");
    fs::write(path.with_extension("tmp"), cp.to_string()).expect("write the checkpoint");
    fs::rename(path.with_extension("tmp"), &path).expect("replace the checkpoint");
    watch_once(&p).expect_code(0).stderr_has(": resumed: ");
    wait_for_status(&p, "completed");
}

#[test]
fn a_crash_loop_ends_blocked_after_its_budget_across_simulated_reboots() {
    // Every launch hangs (the last script repeats), so no resume makes progress.
    let p = Project::new().config(&config("max_restarts = 2", ""));
    let boot = p.join("boot_id");
    fs::write(&boot, "boot-1\n").unwrap();
    let boot_env = boot.display().to_string();
    kill_9(&p);
    for round in 1..=2 {
        fs::write(&boot, format!("boot-{}\n", round + 1)).unwrap();
        std::thread::sleep(Duration::from_millis(1100)); // the backoff
        p.ralph()
            .args(["watch", "--once"])
            .env("RALPH_BOOT_ID_FILE", boot_env.clone())
            .timeout(LIMIT)
            .run()
            .expect_code(0)
            .stderr_has(": resumed: ");
        // The resumed ralph dies like the first one, before finishing anything.
        stop_resumed(&p, Signal::SIGKILL);
        assert_eq!(p.checkpoint()["status"], "running");
        if round == 1 {
            // Once in a boot, without progress: the same boot does not resume it again.
            let again =
                p.ralph().args(["watch", "--once"]).env("RALPH_BOOT_ID_FILE", boot_env.clone()).timeout(LIMIT).run();
            again.expect_code(0);
            assert!(!again.stderr.contains(": resumed: "), "{again}");
        }
    }
    // The budget is spent: the next pass marks it blocked instead of resuming.
    p.ralph()
        .args(["watch", "--once"])
        .env("RALPH_BOOT_ID_FILE", boot_env)
        .timeout(LIMIT)
        .run()
        .expect_code(0)
        .stderr_has(": blocked: ");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "blocked", "{cp:#}");
    assert!(cp["stop_reason"].as_str().unwrap_or_default().contains("max_restarts"), "{cp:#}");
    // A blocked run needs a person; `status --all` says so.
    p.ralph().args(["status", "--all"]).run().expect_code(0).stdout_has("blocked");
}

#[test]
fn missing_credentials_block_the_run_naming_them() {
    let p = project("");
    p.write(
        "ralph.toml",
        &p.read("ralph.toml").replace("kind = \"sim\"\n", "kind = \"sim\"\npass_env = [\"RALPH_TEST_CREDENTIAL\"]\n"),
    );
    let (run, agent) = {
        let run = p.ralph().env("RALPH_TEST_CREDENTIAL", "x").spawn();
        let agent = p.pid_file("agent.pid");
        p.wait_for_checkpoint(|cp| cp["in_flight"]["session"].is_string(), LIMIT);
        (run, agent)
    };
    run.signal(Signal::SIGKILL);
    run.wait(crate::harness::DEFAULT_TIMEOUT);
    cleanup(agent);
    let entry = registry_entry(&p);
    if !entry["credential_names"].as_array().is_some_and(|a| a.iter().any(|n| n == "RALPH_TEST_CREDENTIAL")) {
        panic!("the entry does not record the credential name: {entry:#}");
    }
    watch_once(&p).expect_code(0).stderr_has(": blocked: ").stderr_has("RALPH_TEST_CREDENTIAL");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "blocked");
    assert!(cp["stop_reason"].as_str().unwrap_or_default().contains("RALPH_TEST_CREDENTIAL"));
    // Only the name was recorded, never the value.
    let text = fs::read_to_string(registry_file(&p)).unwrap();
    assert!(!text.contains("\"x\""), "{text}");
}

#[test]
fn a_reboot_resumes_a_run_whose_pid_now_belongs_to_another_process() {
    let p = project("");
    kill_9(&p);
    // The lock names a pid that is alive (this test) from an earlier boot: the
    // flock, which a reboot always drops, decides, not the pid.
    let lock_path = p.join(".agent/ralph.lock");
    let mut lock: Value = serde_json::from_str(&fs::read_to_string(&lock_path).unwrap()).unwrap();
    lock["pid"] = Value::from(std::process::id());
    lock["boot_id"] = Value::from("an-earlier-boot");
    fs::write(&lock_path, lock.to_string()).unwrap();
    watch_once(&p).expect_code(0).stderr_has(": resumed: ");
    wait_for_status(&p, "completed");
}

#[test]
fn two_watchers_resume_a_run_once() {
    let p = project("");
    kill_9(&p);
    let a = p.ralph().args(["watch", "--once"]).timeout(LIMIT).spawn();
    let b = p.ralph().args(["watch", "--once"]).timeout(LIMIT).spawn();
    let (a, b) = (a.finish(), b.finish());
    a.expect_code(0);
    b.expect_code(0);
    wait_for_status(&p, "completed");
    // At most one ralph ran the resume (a second one would have been refused by
    // the lock, and no iteration runs twice).
    assert_eq!(p.events("run_resumed").len(), 1, "{a}\n{b}");
    let started_it2 = p.journal().iter().filter(|e| e["kind"] == "attempt_started" && e["iteration"] == 2).count();
    assert_eq!(started_it2, 1);
}

#[test]
fn a_running_watcher_resumes_a_killed_run_and_stops_cleanly() {
    let p = project("");
    let watcher = p.ralph().args(["watch", "--interval", "1s"]).timeout(LIMIT).spawn();
    kill_9(&p);
    wait_for_status(&p, "completed");
    watcher.terminate().expect_code(0).stderr_has(": resumed: ").stderr_has("stopped");
}

#[test]
fn status_all_lists_runs_and_prune_removes_stale_ones() {
    let p = project("");
    kill_9(&p);
    let out = p.ralph().args(["status", "--all", "--json"]).run();
    out.expect_code(0);
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows:#}");
    assert_eq!(rows[0]["status"], "running");
    assert_eq!(rows[0]["phase"], "develop");
    assert_eq!(rows[0]["stale"], false);
    // An entry whose directory is gone is flagged, then pruned.
    let mut entry = registry_entry(&p);
    entry["dir"] = Value::from("/nonexistent/ralph-project");
    fs::write(p.registry().join("0000000000000000.json"), entry.to_string()).unwrap();
    p.ralph().args(["status", "--all"]).run().expect_code(0).stdout_has("the directory is gone");
    p.ralph().args(["status", "--prune"]).run().expect_code(0).stderr_has("removed");
    assert!(!p.registry().join("0000000000000000.json").exists());
    // A corrupt entry is skipped with a warning.
    fs::write(p.registry().join("1111111111111111.json"), "{ torn").unwrap();
    p.ralph().args(["status", "--all"]).run().expect_code(0).stderr_has("skipping");
}

#[test]
fn notifications_receive_the_event_and_a_broken_notifier_breaks_nothing() {
    let p = project("");
    let seen = p.join("notified.jsonl");
    p.write("notify.sh", &format!("#!/bin/sh\ncat >> {}\n", seen.display()));
    make_executable(&p.join("notify.sh"));
    let config = p
        .read("ralph.toml")
        .replace("[agents.a]", &format!("[notify]\ncommand = [\"{}\"]\n\n[agents.a]", p.join("notify.sh").display()));
    p.write("ralph.toml", &config);
    kill_9(&p);
    watch_once(&p).expect_code(0);
    wait_for_status(&p, "completed");
    wait_until(|| fs::read_to_string(&seen).is_ok_and(|t| t.lines().count() >= 2), "two notifications");
    let lines: Vec<Value> =
        fs::read_to_string(&seen).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["event"]["kind"], "run_resumed");
    assert_eq!(lines[0]["resumed_by"], "watch");
    assert_eq!(lines[1]["event"]["kind"], "run_ended");
    assert_eq!(lines[1]["event"]["status"], "completed");

    // A notifier that hangs and fails: the run completes all the same.
    let q = Project::new().config(&p.read("ralph.toml").replace(
        &format!("command = [\"{}\"]", p.join("notify.sh").display()),
        "command = [\"sleep\", \"600\"]\ntimeout = \"1s\"",
    ));
    q.write("ralph.toml", &q.read("ralph.toml").replace("duration = \"60s\"", "duration = \"10ms\""));
    q.ralph().timeout(LIMIT).run().expect_code(0);
}

/// A notifier that leaves a process behind in the background: its process group is
/// ended at its timeout, so nothing of it outlives ralph.
#[test]
fn a_notifiers_background_child_does_not_outlive_ralph() {
    let p = crate::harness::sim_project().sim("a", &[r#"[{ done = "at once" }]"#]).build();
    let pid_file = p.join("background.pid");
    let script = format!("sleep 300 & echo $! > {}", pid_file.display());
    p.write(
        "ralph.toml",
        &format!("{}\n[notify]\ncommand = [\"sh\", \"-c\", {script:?}]\ntimeout = \"1s\"\n", p.read("ralph.toml")),
    );
    p.ralph().run().expect_code(0);
    let background = p.pid_file("background.pid");
    let gone = crate::harness::gone_within(background, Duration::from_secs(5));
    cleanup(background);
    assert!(gone, "the notifier's background child {background} outlived ralph");
}

/// A notifier still running when an attempt ends is ralph's own helper, not an
/// orphan of the agent: the attempt's clean-up leaves it to finish.
#[test]
fn a_notifier_outlasts_the_attempt_that_ends_while_it_runs() {
    let p = project("");
    let seen = p.join("notified.jsonl");
    let script = format!("sleep 1; cat >> {}", seen.display());
    let config = p.read("ralph.toml").replace(
        "[agents.a]",
        &format!("[notify]\ncommand = [\"sh\", \"-c\", {script:?}]\ntimeout = \"20s\"\n\n[agents.a]"),
    );
    p.write("ralph.toml", &config);
    kill_9(&p);
    // As the watchdog resumes it: the resume is notified, and its attempts end while
    // that notifier sleeps.
    p.ralph().args(["--resume"]).env("RALPH_RESUMED_BY", "watch").timeout(LIMIT).run().expect_code(0);
    let lines: Vec<Value> =
        fs::read_to_string(&seen).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let kinds: Vec<_> = lines.iter().map(|l| l["event"]["kind"].as_str().unwrap_or_default().to_string()).collect();
    assert!(kinds.contains(&"run_resumed".to_string()) && kinds.contains(&"run_ended".to_string()), "{kinds:?}");
}

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let p = Project::new();
    let out = p.ralph().args(["watch", "--print-systemd-unit"]).run();
    out.expect_code(0).stdout_has("ExecStart=").stdout_has("EnvironmentFile=");
    if std::process::Command::new("systemd-analyze").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "systemd-analyze is missing under CI");
        eprintln!("systemd-analyze not installed; skipping the verify step");
        return;
    }
    let unit = p.join("ralph-watch.service");
    fs::write(&unit, &out.stdout).unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let verify = std::process::Command::new("systemd-analyze")
        .args(["verify", "--user"])
        .arg(&unit)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env("HOME", p.path())
        .output()
        .expect("systemd-analyze");
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert!(verify.status.success(), "systemd-analyze verify failed:\n{stderr}");
}

pub(crate) fn registry_file(p: &Project) -> std::path::PathBuf {
    fs::read_dir(p.registry())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            name.ends_with(".json") && !name.ends_with(".watch.json")
        })
        .expect("a registry entry")
}

pub(crate) fn registry_entry(p: &Project) -> Value {
    serde_json::from_str(&fs::read_to_string(registry_file(p)).unwrap()).unwrap()
}

fn wait_for_lock(p: &Project) -> Value {
    let path = p.join(".agent/ralph.lock");
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Ok(v) = serde_json::from_str::<Value>(fs::read_to_string(&path).unwrap_or_default().trim()) {
            return v;
        }
        assert!(Instant::now() < deadline, "no ralph took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` to the ralph a watchdog's resume started (named by its lock) once
/// its agent is at work, and waits until it is gone and its lock free; its agent is
/// ended.
pub(crate) fn stop_resumed(p: &Project, signal: Signal) {
    let agent = p.pid_file("agent.pid");
    let pid = wait_for_lock(p)["pid"].as_i64().unwrap_or_default() as i32;
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    let lock = p.join(".agent/ralph.lock");
    wait_until(|| !crate::harness::alive(pid) && !crate::harness::lock_held(&lock), "the resumed ralph to end");
    cleanup(agent);
    let _ = fs::remove_file(p.join("agent.pid"));
}

pub(crate) fn wait_until(ok: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + LIMIT;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

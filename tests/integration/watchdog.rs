//! The watchdog explains itself and has switches (issue 31), against real runs:
//! every decision of `ralph watch --once` is a line (one per registered run), a
//! long-running watcher says a decision once until it changes, `status --all` keeps
//! each run's last decision and next attempt, `-q` silences; `[watch] max_age`,
//! `[watch] max_resumes_per_boot`, `--hold` / `--release`, `ralph stop --all`, the
//! `--root` scan for runs the registry lost, and a blocked run leaving nothing
//! running.

use std::fs;
use std::time::{Duration, SystemTime};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::harness::{Project, alive, cleanup, gone_within};
use crate::watch::{
    LATER_LAUNCHES, LIMIT, config, kill_9, project, start_and_wait_for_agent, stop_resumed, stop_with, wait_for_status,
    watch_once,
};

/// The directory as the run registers it.
fn real(p: &Project) -> String {
    fs::canonicalize(p.path()).expect("project dir").display().to_string()
}

/// The lines `ralph watch` printed about runs.
fn decisions(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("ralph watch: /")).collect()
}

#[test]
fn watch_once_says_its_decision_about_every_run_and_status_all_keeps_it() {
    let p = project("");
    kill_9(&p);
    let q = p.beside().config(&config("", LATER_LAUNCHES));
    stop_with(&q, Signal::SIGINT, 130);
    let out = watch_once(&p);
    out.expect_code(0)
        .stderr_has(&format!("ralph watch: {}: resumed: interrupted without a clean stop", real(&p)))
        .stderr_has(&format!("ralph watch: {}: left alone: paused", real(&q)));
    assert_eq!(decisions(&out.stderr).len(), 2, "{out}");
    wait_for_status(&p, "completed");
    // `-q`: nothing but errors.
    let quiet = p.ralph().args(["watch", "--once", "-q"]).timeout(LIMIT).run();
    quiet.expect_code(0);
    assert_eq!(quiet.stderr, "", "{quiet}");
    // Settled runs are not read again, and still get their line.
    let again = watch_once(&p);
    again.stderr_has(&format!("{}: left alone: completed", real(&p))).stderr_has("left alone: paused");
    assert_eq!(decisions(&again.stderr).len(), 2, "{again}");
    let all = p.ralph().args(["status", "--all"]).run();
    all.expect_code(0)
        .stdout_has("ralph watch: left alone: paused")
        .stdout_has("ralph watch: left alone: completed")
        .stdout_has("agent a")
        .stdout_has("0 restarts by ralph watch")
        .stdout_has(" ago)");
    let json = p.ralph().args(["status", "--all", "--json"]).run();
    let rows: Value = serde_json::from_str(&json.stdout).expect("json");
    let words: Vec<&str> =
        rows.as_array().into_iter().flatten().filter_map(|r| r["watch"]["decision"].as_str()).collect();
    assert_eq!(words, ["left_alone", "left_alone"], "{rows:#}");
}

/// The case of the issue: a run resumed by the watchdog loses its terminal (SIGHUP)
/// without finishing an iteration; the watchdog leaves it until the next boot, and
/// says so, as `status --all` does.
#[test]
fn a_run_interrupted_again_after_a_resume_is_said_to_wait_for_the_next_boot() {
    // Every launch hangs in its tool call: no resume makes progress.
    let p = Project::new().config(&config("", ""));
    kill_9(&p);
    watch_once(&p).expect_code(0).stderr_has(": resumed: ");
    stop_resumed(&p, Signal::SIGHUP);
    assert_eq!(p.checkpoint()["status"], "interrupted");
    watch_once(&p)
        .expect_code(0)
        .stderr_has(": waiting until the next boot: interrupted when its terminal closed (SIGHUP)");
    p.ralph()
        .args(["status", "--all"])
        .run()
        .expect_code(0)
        .stdout_has("ralph watch: waiting until the next boot")
        .stdout_has("next attempt: after the next boot")
        .stdout_has("1 restart by ralph watch");
}

#[test]
fn a_long_running_watcher_says_a_decision_once_until_it_changes() {
    let p = project("");
    stop_with(&p, Signal::SIGINT, 130);
    let watcher = p.ralph().args(["watch", "--interval", "200ms"]).timeout(LIMIT).spawn();
    std::thread::sleep(Duration::from_millis(1500));
    let q = p.beside().config(&config("", LATER_LAUNCHES));
    kill_9(&q);
    wait_for_status(&q, "completed");
    std::thread::sleep(Duration::from_millis(1000));
    let out = watcher.terminate();
    out.expect_code(0);
    let paused = format!("ralph watch: {}: left alone: paused", real(&p));
    assert_eq!(out.stderr.matches(&paused).count(), 1, "{out}");
    let resumed = format!("ralph watch: {}: resumed: ", real(&q));
    assert_eq!(out.stderr.matches(&resumed).count(), 1, "{out}");
    out.stderr_has(&format!("ralph watch: {}: left alone: completed", real(&q)));
}

#[test]
fn a_run_last_active_longer_ago_than_max_age_is_stale_and_resumable_by_hand() {
    let p = project("");
    kill_9(&p);
    let long_ago = SystemTime::now() - Duration::from_secs(90 * 86_400);
    for file in [".agent/events.jsonl", ".agent/checkpoint.json"] {
        fs::File::options().write(true).open(p.join(file)).and_then(|f| f.set_modified(long_ago)).expect("age");
    }
    watch_once(&p).expect_code(0).stderr_has(": stale: ").stderr_has("longer ago than [watch] max_age (24h)");
    std::thread::sleep(Duration::from_millis(500));
    assert!(p.events("run_resumed").is_empty());
    p.ralph().args(["status", "--all"]).run().expect_code(0).stdout_has("ralph watch: stale").stdout_has("days ago)");
    p.ralph().args(["--resume"]).timeout(LIMIT).run().expect_code(0);
    assert_eq!(p.checkpoint()["status"], "completed");
}

#[test]
fn a_held_watchdog_resumes_nothing_until_released() {
    let p = project("");
    p.ralph().args(["watch", "--hold"]).run().expect_code(0).stdout_has("on hold");
    kill_9(&p);
    watch_once(&p).expect_code(0).stderr_has(": held: ");
    p.ralph()
        .args(["status", "--all"])
        .run()
        .expect_code(0)
        .stdout_has("ralph watch is on hold since")
        .stdout_has("next attempt: after `ralph watch --release`");
    // A running watcher wakes when the hold is lifted, not at its next scan.
    let watcher = p.ralph().args(["watch", "--interval", "60s"]).timeout(LIMIT).spawn();
    std::thread::sleep(Duration::from_millis(1000));
    assert!(p.events("run_resumed").is_empty());
    p.ralph().args(["watch", "--release"]).run().expect_code(0).stdout_has("hold released");
    wait_for_status(&p, "completed");
    watcher.terminate().expect_code(0).stderr_has(": held: ").stderr_has(": resumed: ");
}

#[test]
fn the_watchdog_resumes_at_most_max_resumes_per_boot_runs_in_a_boot() {
    let p = project("max_resumes_per_boot = 1");
    kill_9(&p);
    let q = p.beside().config(&config("max_resumes_per_boot = 1", LATER_LAUNCHES));
    kill_9(&q);
    let out = watch_once(&p);
    out.expect_code(0).stderr_has("waiting until the next boot").stderr_has("[watch] max_resumes_per_boot (1)");
    assert_eq!(out.stderr.matches(": resumed: ").count(), 1, "{out}");
}

/// An agent's background job outlives a killed ralph; a run the watchdog blocks
/// waits for a person and must leave nothing working on its tree.
#[test]
fn a_run_the_watchdog_blocks_leaves_no_process_behind() {
    let toml = config("", LATER_LAUNCHES).replace(
        "{ pidfile = \"agent.pid\" },\n",
        "{ pidfile = \"agent.pid\" },\n  { grandchild = { pidfile = \"bg.pid\", lives = \"60s\" } },\n",
    );
    let p = Project::new()
        .config(&toml.replace("kind = \"sim\"\n", "kind = \"sim\"\npass_env = [\"RALPH_TEST_CREDENTIAL\"]\n"));
    let run = p.ralph().env("RALPH_TEST_CREDENTIAL", "x").spawn();
    let agent = p.pid_file("agent.pid");
    let background = p.pid_file("bg.pid");
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"].is_string(), LIMIT);
    run.signal(Signal::SIGKILL);
    run.wait(crate::harness::DEFAULT_TIMEOUT);
    assert!(alive(background), "the background job should outlive the killed ralph");
    let out = watch_once(&p);
    out.expect_code(0).stderr_has(": blocked: ").stderr_has("process(es) the run had left running");
    let gone = gone_within(background, Duration::from_secs(5));
    cleanup(background);
    cleanup(agent);
    assert!(gone, "the blocked run's background job {background} is still running");
    assert_eq!(p.checkpoint()["status"], "blocked");
}

#[test]
fn stop_all_stops_every_live_run_and_exits_like_systemctl_stop() {
    let p = project("");
    let (run_p, agent_p) = start_and_wait_for_agent(&p);
    let q = p.beside().config(&config("", LATER_LAUNCHES));
    let (run_q, agent_q) = start_and_wait_for_agent(&q);
    let out = p.ralph().args(["stop", "--all", "--now"]).timeout(LIMIT).run();
    out.expect_code(0)
        .stdout_has(&format!("{}: stopped: paused", real(&p)))
        .stdout_has(&format!("{}: stopped: paused", real(&q)));
    run_p.finish().expect_code(130);
    run_q.finish().expect_code(130);
    cleanup(agent_p);
    cleanup(agent_q);
    assert_eq!(
        (p.checkpoint()["status"].clone(), q.checkpoint()["status"].clone()),
        ("paused".into(), "paused".into())
    );
    // No run answers now.
    p.ralph().args(["stop", "--all"]).run().expect_code(2).stderr_has("no running ralph");
}

#[test]
fn watch_root_finds_an_interrupted_run_the_registry_lost() {
    let p = project("");
    kill_9(&p);
    let run_id = p.checkpoint()["run_id"].as_str().unwrap_or_default().to_string();
    // A copy of the same run and a fleet's task: neither is registered.
    for (dir, marker) in [("nested/copy", None), ("nested/task", Some(".agent/fleet-task.json"))] {
        fs::create_dir_all(p.join(&format!("{dir}/.agent"))).expect("mkdir");
        fs::copy(p.join(".agent/checkpoint.json"), p.join(&format!("{dir}/.agent/checkpoint.json"))).expect("copy");
        if let Some(marker) = marker {
            p.write(&format!("{dir}/{marker}"), "{}");
        }
    }
    fs::remove_dir_all(p.registry()).expect("lose the registry");
    let root = real(&p);
    let out = p.ralph().args(["watch", "--once", "--root", &root]).timeout(LIMIT).run();
    out.expect_code(0)
        .stderr_has(&format!("{root}: found interrupted run {run_id} that the registry did not know; registered it"))
        .stderr_has(&format!("{root}: resumed: "))
        .stderr_has(&format!(
            "{root}/nested/copy: found interrupted run {run_id}, left alone: that run is registered at {root}"
        ))
        .stderr_has(&format!("{root}/nested/task: found interrupted run {run_id}, left alone: it is a fleet's task"));
    wait_for_status(&p, "completed");
    // Once per boot: the next pass does not scan again.
    let again = p.ralph().args(["watch", "--once", "--root", &root]).timeout(LIMIT).run();
    assert!(!again.stderr.contains("found interrupted run"), "{again}");
}

//! Run by a job engine: `ralph --resume-or-start` in every state a run can be left
//! in, a simulated engine that restarts ralph until it exits 0, and two "hosts"
//! sharing one run directory through the lease.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::crash_harness::{Rng, audit, env_count, journal_lines, multi_phase_with, restart_until_done, seed};
use crate::harness::{Project, gone_within, sim_project};

fn two_iterations() -> Project {
    sim_project()
        .sim("a", &[r#"[{ write = { path = "work.txt", content = "w" } }, { done = "one" }]"#])
        .phase("iterations = 2")
        .build()
}

fn attempts(p: &Project) -> usize {
    p.events("attempt_started").len()
}

#[test]
fn resume_or_start_starts_a_run_when_there_is_none() {
    let p = two_iterations();
    p.ralph().args(["--resume-or-start"]).run().expect_code(0);
    assert_eq!(p.checkpoint()["status"], "completed");
    assert_eq!(attempts(&p), 2);
}

/// Two job-engine starts at the same instant on a fresh directory: one runs the
/// workflow, the other waits for it and finds it completed; neither is refused. (A
/// start-up used to take the other's `.gitignore` on its way for a killed write's
/// leftover: "cannot create …/.agent". `scripts/start-race.sh` runs hundreds.)
#[test]
fn two_starts_racing_on_a_fresh_directory_both_succeed() {
    for round in 0..12 {
        let p = sim_project().sim("a", &[r#"[{ done = "at once" }]"#]).build();
        let (a, b) = (p.ralph().args(["--resume-or-start"]).spawn(), p.ralph().args(["--resume-or-start"]).spawn());
        let (a, b) = (a.finish(), b.finish());
        assert!(a.code == Some(0) && b.code == Some(0), "round {round}:\n{a}\n{b}");
        assert_eq!(attempts(&p), 1, "round {round}");
    }
}

#[test]
fn resume_or_start_on_a_completed_run_exits_0_and_runs_nothing() {
    let p = two_iterations();
    p.ralph().run().expect_code(0);
    let before = std::fs::read(p.checkpoint_path()).unwrap();
    p.ralph().args(["--resume-or-start"]).run().expect_code(0).stderr_has("already completed");
    assert_eq!(attempts(&p), 2);
    assert_eq!(std::fs::read(p.checkpoint_path()).unwrap(), before, "the checkpoint changed");
}

#[test]
fn resume_or_start_keeps_the_exit_code_of_a_settled_run_without_resuming_it() {
    for (status, cause, code) in
        [("failed", Value::Null, 1), ("blocked", Value::Null, 3), ("paused", json!("user"), 130)]
    {
        let p = two_iterations();
        p.ralph().run().expect_code(0);
        let mut cp = p.checkpoint();
        cp["status"] = json!(status);
        cp["stop_cause"] = cause;
        cp["stop_reason"] = json!(format!("the {status} reason"));
        p.write(".agent/checkpoint.json", &cp.to_string());
        let before = std::fs::read(p.checkpoint_path()).unwrap();
        let out = p.ralph().args(["--resume-or-start"]).run();
        out.expect_code(code).stderr_has(status).stderr_has("ralph --resume");
        assert_eq!(attempts(&p), 2, "{status}: an attempt ran");
        assert_eq!(std::fs::read(p.checkpoint_path()).unwrap(), before, "{status}: the checkpoint changed");
    }
}

/// What a ralph killed at that instant leaves: its lock record and lease, no
/// clean release.
fn leave_crash_marks(p: &Project) {
    let host = nix::unistd::gethostname().unwrap().to_string_lossy().into_owned();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default().trim().to_string();
    p.write(
        ".agent/ralph.lock",
        &json!({"pid": 999_999, "host": host, "boot_id": boot, "started_at": "2026-01-01T00:00:00Z"}).to_string(),
    );
    p.write(
        ".agent/ralph.lease",
        &json!({"host": host, "boot_id": boot, "pid": 999_999, "token": "dead", "renewals": 7,
                "acquired_at": "2026-01-01T00:00:00Z"})
        .to_string(),
    );
}

#[test]
fn a_crash_after_the_completed_checkpoint_still_ends_in_exit_0() {
    let p = two_iterations();
    p.ralph().run().expect_code(0);
    leave_crash_marks(&p);
    p.ralph().args(["--resume-or-start"]).run().expect_code(0).stderr_has("already completed");
    assert_eq!(attempts(&p), 2);
    // Released cleanly this time.
    assert_eq!(p.read(".agent/ralph.lock"), "");
    assert_eq!(p.read(".agent/ralph.lease"), "");
}

#[test]
fn a_crash_before_the_first_checkpoint_starts_the_run() {
    let p = two_iterations();
    leave_crash_marks(&p);
    p.write(
        ".agent/events.jsonl",
        "{\"at\":\"2026-01-01T00:00:00Z\",\"kind\":\"run_started\",\"run_id\":\"lost\"}\n{\"at\":",
    );
    p.ralph().args(["--resume-or-start"]).run().expect_code(0).stderr_has("interrupted");
    assert_eq!(p.checkpoint()["status"], "completed");
    // The lost run's journal, torn line and all, moved into that run's logs (never
    // deleted); the new run's journal is whole.
    let lost = std::fs::read_to_string(p.join(".agent/logs/lost/events.jsonl")).unwrap_or_default();
    assert!(lost.contains("\"run_id\":\"lost\"") && lost.contains("{\"at\":"), "{lost}");
    let journal = journal_lines(&p);
    assert_eq!(journal.iter().filter(|l| l.is_none()).count(), 0);
    let started = journal.iter().flatten().filter(|e| e["kind"] == "attempt_started").count();
    assert_eq!(started, 2);
}

/// A job controller: start `ralph --resume-or-start`, stop it at a random moment
/// (SIGKILL as a node dies, SIGTERM as a pod is evicted), start it again, until it
/// exits 0. The work is done exactly once: every iteration succeeds once, and only
/// interrupted attempts repeat.
#[test]
fn engine_restart_loop_until_exit_0_does_the_work_once() {
    let seed = seed("RALPH_ENGINE_SEED");
    let mut rng = Rng::new(seed);
    // Attempts long enough that the run outlasts the longest kill delay: the first
    // start is always stopped, whatever the machine's speed.
    let scenario = multi_phase_with("150ms");
    let restarts = env_count("RALPH_ENGINE_RESTARTS", 10);
    // The SIGTERMs are a job engine's evictions, not the user's deliberate stops.
    let manager = crate::harness::sigterm_as_service_manager();
    let p = Project::new().config(&format!("{}\n[watch]\n{manager}\n", scenario.config));
    let history = restart_until_done(&p, &scenario, &mut rng, restarts, 30);
    audit(&p, &scenario, &history);
    assert!(history.kills() > 0, "nothing was stopped: seed {seed}");
}

/// The config of the two-host test: three iterations, each with a tool call long
/// enough that a kill lands mid-attempt; a 1 s lease.
fn shared_volume() -> Project {
    sim_project()
        .toml(
            r#"[watch]
lease_timeout = "1s"
lease_renewal = "always""#,
        )
        .sim(
            "a",
            &[r#"[
  { pidfile = "agent.pid" },
  { tool = { name = "Bash", input = { command = "make" }, result = "ok", duration = "1500ms" } },
  { done = "one" },
]"#],
        )
        .phase("iterations = 3")
        .build()
}

fn lease_host(p: &Project) -> Option<String> {
    serde_json::from_str::<Value>(&p.read(".agent/ralph.lease")).ok()?["host"].as_str().map(str::to_string)
}

/// No iteration of the 3 succeeded twice. The owner that was killed (or frozen)
/// may have lost one success line between the checkpoint that recorded it and the
/// line, so at least 2 lines, never a repeat.
#[track_caller]
fn each_iteration_succeeded_once(journal: &[Value]) {
    let iteration_of: std::collections::BTreeMap<u64, u64> = journal
        .iter()
        .filter(|e| e["kind"] == "attempt_started")
        .filter_map(|e| Some((e["attempt"].as_u64()?, e["iteration"].as_u64()?)))
        .collect();
    let mut succeeded: Vec<u64> = journal
        .iter()
        .filter(|e| e["kind"] == "attempt_succeeded")
        .filter_map(|e| iteration_of.get(&e["attempt"].as_u64()?).copied())
        .collect();
    succeeded.sort_unstable();
    let mut once = succeeded.clone();
    once.dedup();
    assert_eq!(succeeded, once, "an iteration succeeded twice\n{journal:#?}");
    assert!((2..=3).contains(&succeeded.len()), "{journal:#?}");
}

/// Two ralphs with different host identities on one directory: the second waits
/// while the first renews its lease, and takes over only once the lease went a
/// whole `lease_timeout` without a renewal after the first was killed.
#[test]
fn two_hosts_on_one_directory_work_one_at_a_time() {
    let p = shared_volume();
    let alpha = p.ralph().args(["--resume-or-start"]).env("RALPH_TEST_HOST", "alpha").spawn();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["attempt"] == 1, Duration::from_secs(30));
    let beta =
        p.ralph().args(["--resume-or-start"]).env("RALPH_TEST_HOST", "beta").timeout(Duration::from_secs(60)).spawn();
    // Beta watches a lease that keeps being renewed: three lease timeouts go by
    // and beta writes nothing, while alpha goes on.
    let watch_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < watch_until {
        assert_eq!(lease_host(&p).as_deref(), Some("alpha"));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(p.events("run_started").len(), 1);
    assert!(p.events("run_resumed").is_empty(), "beta started while alpha's lease was live");
    assert!(p.events("lease_taken_over").is_empty());
    let lines_before_kill = p.journal().len();
    let alphas_agent = p.pid_file("agent.pid");
    alpha.signal(Signal::SIGKILL);
    assert_eq!(alpha.finish().signal, Some(9));
    // Alpha's agent dies with it, well before beta may take over.
    assert!(gone_within(alphas_agent, Duration::from_secs(5)), "alpha's agent outlived it");

    let out = beta.finish();
    out.expect_code(0).stderr_has("took the run directory over from ralph pid").stderr_has("host alpha");
    let journal = p.journal();
    let taken: Vec<&Value> = journal.iter().filter(|e| e["kind"] == "lease_taken_over").collect();
    assert_eq!(taken.len(), 1, "{journal:#?}");
    assert_eq!(taken[0]["from_host"], "alpha");
    assert!(taken[0]["waited_ms"].as_u64().unwrap() >= 1000, "{:#}", taken[0]);
    // Beta's first line (the takeover) comes after everything alpha wrote before
    // it was killed, and beta is the only ralph that resumed.
    let first_beta = journal.iter().position(|e| e["kind"] == "lease_taken_over").unwrap();
    assert!(first_beta >= lines_before_kill, "{journal:#?}");
    assert_eq!(journal[first_beta + 1]["kind"], "run_resumed", "{journal:#?}");
    assert_eq!(journal.iter().filter(|e| e["kind"] == "run_resumed").count(), 1);
    assert_eq!(p.checkpoint()["status"], "completed");
    assert_eq!(p.checkpoint()["progress"]["counters"]["iterations_done"], 3);
    each_iteration_succeeded_once(&journal);
    assert_eq!(p.read(".agent/ralph.lease"), "", "released at the end");
}

/// A plain `ralph --resume` on another host refuses a lease it sees renewed,
/// instead of waiting like `--resume-or-start`.
#[test]
fn another_host_refuses_a_live_lease_without_resume_or_start() {
    let p = shared_volume();
    let alpha = p.ralph().args(["--resume-or-start"]).env("RALPH_TEST_HOST", "alpha").spawn();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["attempt"] == 1, Duration::from_secs(30));
    let out = p.ralph().args(["--resume"]).env("RALPH_TEST_HOST", "beta").run();
    out.expect_code(2).stderr_has("holds the lease").stderr_has("host alpha");
    assert!(p.events("run_resumed").is_empty());
    alpha.signal(Signal::SIGKILL);
    let _ = alpha.finish();
}

/// A checkpoint that does not parse is never a crash's doing: `--resume-or-start`
/// keeps it aside and exits 2, and the next start refuses to begin a new run over
/// it instead of starting over the work tree.
#[test]
fn resume_or_start_never_starts_over_a_corrupt_checkpoint() {
    let p = two_iterations();
    p.write(".agent/checkpoint.json", "{ torn");
    // Refused and left in place, every time (a refusal changes nothing).
    for _ in 0..2 {
        p.ralph()
            .args(["--resume-or-start"])
            .run()
            .expect_code(2)
            .stderr_has("does not parse")
            .stderr_has("left in place");
        assert_eq!(p.read(".agent/checkpoint.json"), "{ torn");
    }
    // One an older ralph kept aside, with none in its place, is not started over either.
    std::fs::rename(p.join(".agent/checkpoint.json"), p.join(".agent/checkpoint.corrupt-20260101T000000Z.json"))
        .expect("aside");
    p.ralph().args(["--resume-or-start"]).run().expect_code(2).stderr_has("does not start a new run over it");
    p.ralph().args(["--no-resume"]).run().expect_code(0);
    p.ralph().args(["--resume-or-start"]).run().expect_code(0).stderr_has("already completed");
}

/// An owner frozen (SIGSTOP) for longer than the lease timeout loses the run to
/// the other host; when it wakes up it stops at once (exit 4) without writing the
/// run's state, and the new owner finishes the work, each iteration once.
#[test]
fn a_frozen_owner_that_lost_its_lease_stops_without_writing() {
    let p = shared_volume();
    let alpha = p.ralph().args(["--resume-or-start"]).env("RALPH_TEST_HOST", "alpha").spawn();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["attempt"] == 1, Duration::from_secs(30));
    alpha.signal(Signal::SIGSTOP);
    let beta =
        p.ralph().args(["--resume-or-start"]).env("RALPH_TEST_HOST", "beta").timeout(Duration::from_secs(60)).spawn();
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.events("lease_taken_over").is_empty() {
        assert!(Instant::now() < deadline, "beta did not take over");
        std::thread::sleep(Duration::from_millis(20));
    }
    alpha.signal(Signal::SIGCONT);
    let out = alpha.finish();
    out.expect_code(4).stderr_has("took this run over");
    beta.finish().expect_code(0);
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed");
    assert_eq!(cp["progress"]["counters"]["iterations_done"], 3);
    each_iteration_succeeded_once(&p.journal());
    assert_eq!(p.events("run_ended").len(), 1);
}

//! Checkpoints across runs: kill -9 and resume, corrupt checkpoints, the resume
//! choice, archiving, inspecting, and running without checkpoints.

use std::fs;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::{Project, alive, cleanup, gone_within, sim_project};

/// Three develop iterations; the second writes a marker, then runs a tool call that
/// takes 60 s (long enough to be interrupted).
fn three_iterations() -> Project {
    Project::new().config(&three_iterations_config("60s"))
}

/// [`three_iterations`] with a quick second iteration, for runs that go straight through.
fn three_quick_iterations() -> Project {
    Project::new().config(&three_iterations_config("50ms"))
}

fn three_iterations_config(tool_duration: &str) -> String {
    let second = format!(
        r#"[
  {{ pidfile = "agent.pid" }},
  {{ write = {{ path = "it2-started", content = "" }} }},
  {{ tool = {{ name = "Bash", input = {{ command = "cargo build" }}, result = "ok", duration = "{tool_duration}" }} }},
  {{ done = "iteration 2" }},
]"#
    );
    sim_project()
        .sim(
            "a",
            &[
                r#"[{ write = { path = "it1.txt", content = "1" } }, { done = "iteration 1" }]"#,
                &second,
                r#"[{ write = { path = "it2.txt", content = "2" } }, { done = "iteration 2, resumed" }]"#,
                r#"[{ write = { path = "it3.txt", content = "3" } }, { done = "iteration 3" }]"#,
            ],
        )
        .phase("iterations = 3")
        .config_text()
}

#[test]
fn kill_9_then_resume_finishes_without_redoing_finished_iterations() {
    let p = three_iterations();
    let (run, agent) = p.start();
    p.wait_for_file("it2-started", Duration::from_secs(30));
    // ralph saves the session as soon as it reads it; kill it after that.
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"] == "sim-a-2", Duration::from_secs(30));
    let first_pid = run.pid();
    run.signal(Signal::SIGKILL);
    let out = run.wait(crate::harness::DEFAULT_TIMEOUT);
    assert_eq!(out.signal, Some(9), "{out}");
    // ralph is gone; its agent must not keep working unsupervised in the project.
    let agent_gone = gone_within(agent, Duration::from_secs(5));
    cleanup(agent);

    let cp = p.checkpoint();
    assert_eq!(cp["status"], "running", "{cp:#}");
    assert_eq!(cp["clean_stop"], false);
    assert_eq!(cp["in_flight"]["session"], "sim-a-2", "{cp:#}");

    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0).stderr_has(&format!("pid {first_pid}")).stderr_has("interrupted");
    assert_eq!(fs::read_to_string(p.join("it1.txt")).unwrap(), "1");
    assert!(p.exists("it2.txt") && p.exists("it3.txt"));
    let journal = p.journal();
    let succeeded: Vec<_> = journal.iter().filter(|e| e["kind"] == "attempt_succeeded").collect();
    assert_eq!(succeeded.len(), 3, "{succeeded:#?}");
    // Iteration 1 ran once: one attempt started in it, in the first ralph.
    let started_it1 = journal.iter().filter(|e| e["kind"] == "attempt_started" && e["iteration"] == 1).count();
    assert_eq!(started_it1, 1);
    // The interrupted iteration continues its session.
    let resumed = p.events("attempt_started");
    assert_eq!(resumed[2]["iteration"], 2);
    assert_eq!(resumed[2]["resume_session"], "sim-a-2");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed");
    assert_eq!(cp["progress"]["launches"]["a"], 4);
    assert!(agent_gone, "after kill -9 of ralph, its agent (pid {agent}) kept running");
}

/// [`three_quick_iterations`] with a checkpoint of `text`, which does not parse.
fn with_a_broken_checkpoint(text: &str) -> Project {
    let p = three_quick_iterations();
    p.write(".agent/checkpoint.json", text);
    p
}

#[test]
fn corrupt_checkpoint_is_left_in_place_and_set_aside_only_by_no_resume() {
    let p = with_a_broken_checkpoint("{ this is not json");
    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(2).stderr_has("checkpoint.json").stderr_has("does not parse").stderr_has("left in place");
    // A refusal changes nothing: the file stays, nothing is set aside.
    assert_eq!(p.read(".agent/checkpoint.json"), "{ this is not json");
    assert!(!p.agent_dir_listing().iter().any(|n| n.contains("corrupt")), "{:?}", p.agent_dir_listing());

    let out = p.ralph().args(["--no-resume"]).run();
    out.expect_code(0);
    let aside = p.set_aside("{ this is not json");
    assert!(out.stderr.contains(&aside), "the message names {aside}\n{out}");
    assert_eq!(p.checkpoint()["status"], "completed");
}

#[test]
fn corrupt_checkpoint_without_flags_is_also_refused_in_place() {
    let p = with_a_broken_checkpoint("garbage");
    p.ralph().run().expect_code(2).stderr_has("does not parse").stderr_has("--no-resume");
    assert_eq!(p.read(".agent/checkpoint.json"), "garbage");
    assert!(!p.agent_dir_listing().iter().any(|n| n.contains("corrupt")));
}

/// A paused run: Ctrl+C during iteration 2.
fn paused(p: &Project) {
    let (run, agent) = p.start();
    p.wait_for_file("it2-started", Duration::from_secs(30));
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
}

#[test]
fn unfinished_checkpoint_without_a_flag_and_no_terminal_asks_for_one() {
    let p = three_iterations();
    paused(&p);
    let before = fs::read(p.checkpoint_path()).unwrap();
    p.ralph().run().expect_code(2).stderr_has("--resume").stderr_has("--no-resume");
    assert_eq!(fs::read(p.checkpoint_path()).unwrap(), before, "the checkpoint changed");
}

#[test]
fn no_resume_archives_the_old_checkpoint() {
    let p = three_iterations();
    paused(&p);
    let before = fs::read(p.checkpoint_path()).unwrap();
    let old_run = p.checkpoint()["run_id"].clone();
    p.write("ralph.toml", &three_iterations_config("50ms"));
    p.ralph().args(["--no-resume"]).run().expect_code(0);
    let archived: Vec<_> = p
        .agent_dir_listing()
        .into_iter()
        .filter(|n| n.starts_with("checkpoint.archived-") && n.ends_with(".json"))
        .collect();
    assert_eq!(archived.len(), 1, "{:?}", p.agent_dir_listing());
    assert_eq!(fs::read(p.join(&format!(".agent/{}", archived[0]))).unwrap(), before);
    let cp = p.checkpoint();
    assert_ne!(cp["run_id"], old_run);
    assert_eq!(cp["status"], "completed");
    // The fresh run starts from iteration 1 with fresh launch counts.
    assert_eq!(cp["progress"]["launches"]["a"], 3);
}

#[test]
fn resume_with_nothing_to_resume_is_a_usage_error() {
    let p = three_quick_iterations();
    p.ralph().args(["--resume"]).run().expect_code(2).stderr_has("nothing to resume");
    p.ralph().run().expect_code(0);
    p.ralph().args(["--resume"]).run().expect_code(2).stderr_has("nothing to resume");
}

#[test]
fn a_completed_run_is_archived_by_the_next_plain_run() {
    let p = three_quick_iterations();
    p.ralph().run().expect_code(0);
    p.ralph().run().expect_code(0);
    assert!(p.agent_dir_listing().iter().any(|n| n.starts_with("checkpoint.archived-")));
}

#[test]
fn inspect_checkpoint_changes_nothing() {
    let p = three_iterations();
    paused(&p);
    let listing = p.agent_dir_listing();
    let bytes = fs::read(p.checkpoint_path()).unwrap();
    let mtime = fs::metadata(p.checkpoint_path()).unwrap().modified().unwrap();
    let lock = fs::read(p.join(".agent/ralph.lock")).unwrap();

    let out = p.ralph().args(["--inspect-checkpoint"]).run();
    out.expect_code(0);
    assert!(out.stdout.contains("develop"), "{out}");
    let out = p.ralph().args(["--inspect-checkpoint", "--json"]).run();
    out.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
    // The one shape of `status --json` too: the checkpoint under "checkpoint".
    assert_eq!(v["live"], false);
    assert_eq!(v["checkpoint"]["status"], "paused");
    assert_eq!(v["checkpoint"]["progress"]["position"]["iteration"], 2);

    assert_eq!(p.agent_dir_listing(), listing);
    assert_eq!(fs::read(p.checkpoint_path()).unwrap(), bytes);
    assert_eq!(fs::metadata(p.checkpoint_path()).unwrap().modified().unwrap(), mtime);
    assert_eq!(fs::read(p.join(".agent/ralph.lock")).unwrap(), lock);
    // And the run still resumes (launch 3 is quick).
    p.ralph().args(["--resume"]).run().expect_code(0);
}

#[test]
fn inspect_checkpoint_with_a_corrupt_checkpoint_moves_nothing() {
    let p = with_a_broken_checkpoint("garbage");
    let listing = p.agent_dir_listing();
    p.ralph().args(["--inspect-checkpoint"]).run().expect_code(2).stderr_has("does not parse");
    assert_eq!(p.agent_dir_listing(), listing);
    assert_eq!(p.read(".agent/checkpoint.json"), "garbage");
}

#[test]
fn checkpoint_disabled_writes_nothing_and_every_run_starts_over() {
    let p = sim_project()
        .toml(r#"[general.workflow]
checkpoint_enabled = false"#)
        .sim("a", &[r#"[{ pidfile = "agent.pid" }, { write = { path = "it1.txt", content = "1" } }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]"#])
        .build();
    let (run, agent) = p.start();
    p.wait_for_file("it1.txt", Duration::from_secs(30));
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
    assert!(!p.exists(".agent/checkpoint.json"));
    assert!(!p.exists(".agent/events.jsonl"));
    fs::remove_file(p.join("agent.pid")).unwrap();

    // The next run starts from the beginning: launch 1 again, no question asked.
    let (run, agent) = p.start();
    assert!(alive(agent));
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
    assert!(!p.exists(".agent/checkpoint.json"));
}

/// The agent dies with ralph (parent-death signal); what the agent started cannot be
/// reached then, so the next ralph in the directory ends it (by its RALPH_RUN_ID)
/// before anything else happens.
#[test]
fn kill_9_of_ralph_then_the_next_ralph_ends_the_grandchild() {
    let p = sim_project()
        .sim("a", &[r#"[{ grandchild = { pidfile = "gc.pid", lives = "60s" } }, { pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]"#, r#"[{ done = "finished" }]"#])
        .build();
    let (run, agent) = p.start();
    let gc = p.pid_file("gc.pid");
    run.signal(Signal::SIGKILL);
    run.wait(crate::harness::DEFAULT_TIMEOUT);
    let agent_gone = gone_within(agent, Duration::from_secs(5));
    let out = p.ralph().args(["--resume"]).run();
    let gc_gone = gone_within(gc, Duration::from_secs(5));
    cleanup(agent);
    cleanup(gc);
    assert!(agent_gone, "the agent outlived ralph");
    assert!(gc_gone, "the agent's grandchild outlived the next ralph's start:\n{}", out.stderr);
    assert!(out.stderr.contains("left behind by the interrupted run"), "{}", out.stderr);
    out.expect_code(0);
}

/// One agent whose first launch hangs in `Bash make` (never a stall) and whose
/// later launches finish.
fn hangs_in_make() -> Project {
    sim_project()
        .sim("a", &[r#"[{ pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make deploy" }, hang = true } }]"#, r#"[{ done = "finished after the resume" }]"#])
        .build()
}

/// Starts `p`'s run and stops it with Ctrl+C once its agent's session `sim-a-1` is
/// known: the run ends paused (exit 130), its agent gone.
fn paused_in_session(p: &Project) {
    let (run, agent) = p.start();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"] == "sim-a-1", Duration::from_secs(30));
    run.signal(Signal::SIGINT);
    let out = run.finish();
    cleanup(agent);
    out.expect_code(130);
}

#[test]
fn a_goal_edited_during_a_pause_reaches_the_resumed_session() {
    let p = hangs_in_make();
    paused_in_session(&p);
    p.write("PROMPT.md", "GOAL-MARKER-7: build the other thing.\n");

    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0).stderr_has("the next attempt gets the new text");
    let prompt = p.prompt_of(2);
    assert!(prompt.contains("GOAL-MARKER-7"), "the resumed session got the old goal:\n{prompt}");
    assert!(!prompt.contains("Build the thing"), "{prompt}");
}

#[test]
fn a_run_interrupted_in_a_tool_call_resumes_with_a_note_naming_it() {
    let p = hangs_in_make();
    let (run, agent) = p.start();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["tool"]["name"] == "Bash", Duration::from_secs(30));
    run.signal(Signal::SIGTERM);
    let out = run.finish();
    cleanup(agent);
    out.expect_code(143);

    p.ralph().args(["--resume"]).run().expect_code(0);
    let prompt = p.prompt_of(2);
    assert!(prompt.contains("Bash (make deploy)"), "{prompt}");
    assert!(prompt.contains("outcome is unknown") && prompt.contains("before redoing it"), "{prompt}");
}

#[test]
fn a_crashed_run_resumes_with_a_note_naming_the_tool_call_in_flight() {
    let p = three_iterations();
    let (run, agent) = p.start();
    p.wait_for_checkpoint(|cp| cp["in_flight"]["tool"]["name"] == "Bash", Duration::from_secs(30));
    run.signal(Signal::SIGKILL);
    let _ = run.wait(crate::harness::DEFAULT_TIMEOUT);
    let _ = gone_within(agent, Duration::from_secs(5));
    cleanup(agent);

    p.ralph().args(["--resume"]).run().expect_code(0);
    // Attempt 3 is the resumed second iteration.
    let prompt = p.prompt_of(3);
    assert!(prompt.contains("Bash (cargo build)"), "{prompt}");
    assert!(prompt.contains("outcome is unknown") && prompt.contains("before redoing it"), "{prompt}");
    assert!(!prompt.contains("ralph was stopped while the attempt ran"), "{prompt}");
}

fn two_agents(chain: &[&str]) -> String {
    sim_project()
        .sim(
            "a",
            &[
                r#"[{ pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]"#,
                r#"[{ done = "a finished" }]"#,
            ],
        )
        .sim("b", &[r#"[{ done = "b finished" }]"#])
        .chain(chain)
        .config_text()
}

#[test]
fn a_session_is_resumed_only_by_the_agent_that_owns_it() {
    let p = Project::new().config(&two_agents(&["a"]));
    paused_in_session(&p);
    assert_eq!(p.checkpoint()["progress"]["position"]["chain"][0]["name"], "a");

    // The chain now names another agent at the same index.
    p.write("ralph.toml", &two_agents(&["b"]));
    let inspect = p.ralph().args(["--inspect-checkpoint"]).run();
    inspect.expect_code(0).stdout_has("agent a is no longer in the chain").stdout_has("agent b in a fresh session");

    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0).stderr_has("agent a is no longer in the chain");
    let started = p.events("attempt_started");
    assert_eq!(started[1]["agent"], "b");
    assert_eq!(started[1]["resume_session"], serde_json::Value::Null, "b was handed a's session");
    // A fresh session gets the full prompt.
    let prompt = p.prompt_of(2);
    assert!(prompt.contains("Build the thing"), "{prompt}");
}

#[test]
fn a_reordered_chain_resumes_the_same_agent_by_name() {
    let p = Project::new().config(&two_agents(&["a", "b"]));
    paused_in_session(&p);

    p.write("ralph.toml", &two_agents(&["b", "a"]));
    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0).stderr_has("resuming at agent a, now second in the chain");
    let started = p.events("attempt_started");
    assert_eq!(started[1]["agent"], "a");
    assert_eq!(started[1]["resume_session"], "sim-a-1");
}

#[test]
fn no_resume_on_a_corrupt_checkpoint_sets_it_aside_and_starts_in_one_call() {
    let p = with_a_broken_checkpoint("{ torn");
    let out = p.ralph().args(["--no-resume"]).run();
    out.expect_code(0).stderr_has("does not parse").stderr_has("kept aside as").stderr_has("starting fresh");
    assert_eq!(p.checkpoint()["status"], "completed");
    p.set_aside("{ torn");
}

#[test]
fn inspect_of_a_completed_run_promises_no_resume_that_resume_refuses() {
    let p = three_quick_iterations();
    p.ralph().run().expect_code(0);
    let out = p.nothing_to_resume();
    assert!(!out.stdout.contains("resume: continues") && !out.stdout.contains("starts a fresh session"), "{out}");
}

#[test]
fn logs_keep_the_newest_runs_each_with_its_journal_and_clean_prunes_by_hand() {
    let p = Project::new().config(&format!("[logs]\nkeep_runs = 2\n{}", three_iterations_config("50ms")));
    let mut runs = Vec::new();
    for _ in 0..3 {
        p.ralph().run().expect_code(0);
        runs.push(p.checkpoint()["run_id"].as_str().expect("run id").to_string());
    }
    let listing = |p: &Project| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(p.join(".agent/logs"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // Sorted as the listing is: two runs of one second sort by their pids' digits.
    let mut kept = runs[1..].to_vec();
    kept.sort();
    assert_eq!(listing(&p), kept, "the oldest run's logs were not pruned");
    // The previous run's journal moved into its directory; the current one is in place.
    let previous = p.read(&format!(".agent/logs/{}/events.jsonl", runs[1]));
    assert!(previous.contains(&runs[1]) && !previous.contains(&runs[2]), "{previous}");
    let current = p.read(".agent/events.jsonl");
    assert!(current.contains(&runs[2]) && !current.contains(&runs[1]), "{current}");
    let archived = p.agent_dir_listing().into_iter().filter(|n| n.starts_with("checkpoint.archived-")).count();
    assert_eq!(archived, 2, "archived checkpoints are never pruned");

    let out = p.ralph().args(["clean", "--keep", "1"]).run();
    out.expect_code(0).stdout_has(&runs[1]);
    assert_eq!(listing(&p), vec![runs[2].clone()]);
    assert_eq!(p.read(".agent/events.jsonl"), current);
}

#[test]
fn keep_runs_of_zero_is_a_config_error() {
    let p = Project::new().config(&format!("[logs]\nkeep_runs = 0\n{}", three_iterations_config("50ms")));
    p.ralph().run().expect_code(2).stderr_has("keep_runs must be at least 1");
}

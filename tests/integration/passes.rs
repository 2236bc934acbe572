//! Repeating review/fix passes (`[general.workflow] repeat`) and starting from a
//! phase (`--from`, `--resume --from`), with scripted agents.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::harness::{Project, cleanup, prompt_entries, sim_project};

/// develop, review, fix, commit; review and fix repeat up to `passes` passes. The
/// review and fix agents follow `review` and `fix` (one script per launch).
fn project(passes: u32, review: &[&str], fix: &[&str], retry: &str) -> Project {
    let workflow = format!(
        "[general.workflow]\nphases = [\"develop\", \"review\", \"fix\", \"commit\"]\n\
         repeat = {{ phases = [\"review\", \"fix\"], passes = {passes} }}"
    );
    sim_project()
        .retry(retry)
        .toml(&workflow)
        .sim("dev", &[r#"[{ done = "developed the parser" }]"#])
        .sim("rev", review)
        .sim("fixer", fix)
        .sim("com", &[r#"[{ done = "committed" }]"#])
        .phase_of("develop", "dev")
        .phase_of("review", "rev")
        .phase_of("fix", "fixer")
        .phase_of("commit", "com")
        .build()
}

/// (phase, pass) of every attempt started, in order.
fn attempts(p: &Project) -> Vec<(String, u64)> {
    p.events("attempt_started")
        .iter()
        .map(|e| (e["phase"].as_str().unwrap_or_default().to_string(), e["pass"].as_u64().unwrap_or(0)))
        .collect()
}

fn seq(items: &[(&str, u64)]) -> Vec<(String, u64)> {
    items.iter().map(|(p, n)| (p.to_string(), *n)).collect()
}

#[test]
fn issues_twice_then_clean_runs_three_passes_then_goes_on() {
    let p = project(
        3,
        &[
            r#"[{ done = "issue A in parse.rs" }]"#,
            r#"[{ done = "issue B in eval.rs" }]"#,
            r#"[{ goal = "nothing left" }]"#,
        ],
        &[r#"[{ done = "fixed A" }]"#, r#"[{ done = "fixed B" }]"#],
        "",
    );
    let out = p.ralph().run();
    out.expect_code(0).stderr_has("pass 2/3").stderr_has("review: clean in pass 3 of 3");
    assert_eq!(
        attempts(&p),
        seq(&[("develop", 1), ("review", 1), ("fix", 1), ("review", 2), ("fix", 2), ("review", 3), ("commit", 1)])
    );
    let verdicts: Vec<Value> = p.events("review_verdict").iter().map(|e| e["clean"].clone()).collect();
    assert_eq!(verdicts, [json!(false), json!(false), json!(true)]);
    let passes: Vec<Value> = p.events("pass_started").iter().map(|e| e["pass"].clone()).collect();
    assert_eq!(passes, [json!(2), json!(3)]);
    let ended = p.events("passes_ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(
        (&ended[0]["passes_run"], &ended[0]["clean"], &ended[0]["why"]),
        (&json!(3), &json!(true), &json!("clean"))
    );
    // The review's result reaches the fix of its pass, and the fix's the next review.
    assert!(p.prompt_of(2).contains("developed the parser"), "{}", p.prompt_of(2));
    assert!(p.prompt_of(3).contains("issue A in parse.rs"), "{}", p.prompt_of(3));
    let review2 = p.prompt_of(4);
    assert!(review2.contains("fixed A") && review2.contains("pass 2 of at most 3"), "{review2}");
    assert!(review2.contains("If you found nothing left to fix"), "{review2}");
    assert!(p.prompt_of(5).contains("issue B in eval.rs"));
    assert!(p.prompt_of(6).contains("fixed B"));
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed");
    assert_eq!(cp["progress"]["review"], json!({"pass": 3, "passes": 3, "clean": true}));
    assert_eq!(cp["progress"]["launches"]["rev"], 3);
    assert_eq!(cp["progress"]["launches"]["fixer"], 2);
}

#[test]
fn a_clean_first_review_runs_one_pass() {
    let p = project(3, &[r#"[{ goal = "nothing to fix" }]"#], &[r#"[{ exit = 1 }]"#], "");
    p.ralph().run().expect_code(0).stderr_has("review: clean in pass 1 of 3");
    assert_eq!(attempts(&p), seq(&[("develop", 1), ("review", 1), ("commit", 1)]));
    assert!(p.events("pass_started").is_empty());
    let ended = p.events("passes_ended");
    assert_eq!((&ended[0]["passes_run"], &ended[0]["clean"]), (&json!(1), &json!(true)));
    assert_eq!(p.checkpoint()["progress"]["launches"]["fixer"], Value::Null);
}

#[test]
fn passes_used_up_goes_on_and_says_issues_were_left() {
    let p = project(
        2,
        &[r#"[{ done = "issue A" }]"#, r#"[{ done = "issue A still there" }]"#],
        &[r#"[{ done = "tried A" }]"#, r#"[{ done = "tried A again" }]"#],
        "",
    );
    p.ralph().run().expect_code(0).stderr_has("review: all 2 passes used; the last review still had issues");
    assert_eq!(
        attempts(&p),
        seq(&[("develop", 1), ("review", 1), ("fix", 1), ("review", 2), ("fix", 2), ("commit", 1)])
    );
    let ended = p.events("passes_ended");
    assert_eq!(ended.len(), 1);
    assert_eq!(
        (&ended[0]["passes_run"], &ended[0]["clean"], &ended[0]["why"]),
        (&json!(2), &json!(false), &json!("passes_used"))
    );
    assert_eq!(p.checkpoint()["progress"]["review"], json!({"pass": 2, "passes": 2, "clean": false}));
    let status = p.ralph().args(["status"]).run();
    status.expect_code(0).stdout_has("last review: all 2 passes used; the last review still had issues");
}

#[test]
fn kill_9_during_pass_2_resumes_pass_2() {
    let p = project(
        3,
        &[
            r#"[{ done = "issue A" }]"#,
            r#"[{ pidfile = "agent.pid" }, { write = { path = "pass2-started", content = "" } }, { tool = { name = "Bash", input = { command = "cargo test" }, result = "ok", duration = "60s" } }, { done = "unreachable" }]"#,
            r#"[{ goal = "clean now" }]"#,
        ],
        &[r#"[{ done = "fixed A" }]"#],
        "",
    );
    let (run, agent) = p.start();
    p.wait_for_file("pass2-started", Duration::from_secs(30));
    p.wait_for_checkpoint(|cp| cp["in_flight"]["session"] == "sim-rev-2", Duration::from_secs(30));
    run.signal(Signal::SIGKILL);
    assert_eq!(run.wait(crate::harness::DEFAULT_TIMEOUT).signal, Some(9));
    cleanup(agent);
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["position"]["phase_name"], "review", "{cp:#}");
    assert_eq!((&cp["progress"]["position"]["pass"], &cp["progress"]["position"]["passes"]), (&json!(2), &json!(3)));
    p.ralph().args(["--inspect-checkpoint"]).run().expect_code(0).stdout_has("review/fix pass 2 of 3");
    p.ralph().args(["status"]).run().expect_code(0).stdout_has("review/fix pass 2 of 3");

    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0).stderr_has("phase review, pass 2 of 3").stderr_has("pass 2/3");
    let started = p.events("attempt_started");
    let resumed = &started[4];
    assert_eq!((&resumed["phase"], &resumed["pass"]), (&json!("review"), &json!(2)), "{started:#?}");
    assert_eq!(resumed["resume_session"], "sim-rev-2");
    assert_eq!(
        attempts(&p),
        seq(&[("develop", 1), ("review", 1), ("fix", 1), ("review", 2), ("review", 2), ("commit", 1)])
    );
    assert_eq!(p.checkpoint()["progress"]["review"], json!({"pass": 2, "passes": 3, "clean": true}));
}

#[test]
fn from_fix_starts_a_new_run_there_and_reuses_the_earlier_results() {
    let p = project(1, &[r#"[{ done = "issue A in parse.rs" }]"#], &[r#"[{ done = "fixed A" }]"#], "");
    p.ralph().run().expect_code(0);
    let first_run = p.checkpoint()["run_id"].clone();

    let out = p.ralph().args(["--from", "fix"]).run();
    out.expect_code(0);
    let cp = p.checkpoint();
    assert_ne!(cp["run_id"], first_run);
    assert_eq!(cp["progress"]["launches"]["fixer"], 1);
    assert_eq!(cp["progress"]["launches"]["rev"], Value::Null, "{cp:#}");
    let started = p.events("run_started");
    assert_eq!(started.last().unwrap()["from"], "fix");
    // The journal holds the current run only (the last run's moved into its logs).
    assert_eq!(attempts(&p), seq(&[("fix", 1), ("commit", 1)]));
    let run_id = cp["run_id"].as_str().unwrap();
    let prompts = prompt_entries(&p.join(&format!(".agent/logs/{run_id}")));
    let prompt = &prompts.iter().find(|(stem, _)| stem == "attempt-0001-fix-fixer").expect("the fix's prompt").1;
    assert!(prompt.contains("`ralph --from fix`"), "{prompt}");
    assert!(prompt.contains("Reused from the last run: the result of develop, review."), "{prompt}");
    assert!(prompt.contains("issue A in parse.rs"), "{prompt}");
}

#[test]
fn resume_from_review_moves_an_unfinished_run_and_misuse_is_exit_2() {
    let p = project(
        2,
        &[r#"[{ done = "issue A" }]"#, r#"[{ goal = "clean after all" }]"#],
        &[r#"[{ exit = 1 }]"#],
        "agent_attempts = 1",
    );
    p.write(
        "ralph.toml",
        &p.read("ralph.toml").replace("[general.workflow]", "[general]\nmax_cycles = 1\n\n[general.workflow]"),
    );
    p.ralph().run().expect_code(1).stderr_has("the limit [general] max_cycles was reached");
    assert_eq!(p.checkpoint()["progress"]["position"]["phase_name"], "fix");
    let before = std::fs::read(p.checkpoint_path()).unwrap();

    p.ralph().args(["--from", "nope"]).run().expect_code(2).stderr_has("the workflow has no phase `nope`");
    p.ralph().args(["--resume", "--from", "reviw"]).run().expect_code(2).stderr_has("did you mean `review`?");
    p.ralph()
        .args(["--from", "review", "--no-resume"])
        .run()
        .expect_code(2)
        .stderr_has("cannot be used with --no-resume");
    // An unfinished run is never dropped silently, not even for --from.
    p.ralph().args(["--from", "review"]).run().expect_code(2).stderr_has("ralph --resume --from review");
    assert_eq!(std::fs::read(p.checkpoint_path()).unwrap(), before, "misuse changed the checkpoint");

    let out = p.ralph().args(["--resume", "--from", "review"]).run();
    out.expect_code(0).stderr_has("moving the run from phase fix to phase review");
    let resumed = p.events("run_resumed");
    assert_eq!(resumed.last().unwrap()["from"], "review");
    assert_eq!(attempts(&p), seq(&[("develop", 1), ("review", 1), ("fix", 1), ("review", 1), ("commit", 1)]));
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed");
    assert_eq!(cp["progress"]["review"], json!({"pass": 1, "passes": 2, "clean": true}));
}

#[test]
fn every_pass_gets_a_fresh_budget_while_the_run_totals_keep_counting() {
    // One failure per fix is within agent_attempts = 2 only if each pass starts afresh;
    // a budget carried over from pass 1 would end the run in pass 2 (max_cycles = 1).
    let p = project(
        2,
        &[r#"[{ done = "issue A" }]"#, r#"[{ done = "issue B" }]"#],
        &[
            r#"[{ crash = "SIGSEGV" }]"#,
            r#"[{ done = "fixed A" }]"#,
            r#"[{ crash = "SIGSEGV" }]"#,
            r#"[{ done = "fixed B" }]"#,
        ],
        "agent_attempts = 2",
    );
    p.write(
        "ralph.toml",
        &p.read("ralph.toml").replace("[general.workflow]", "[general]\nmax_cycles = 1\n\n[general.workflow]"),
    );
    p.ralph().run().expect_code(0);
    assert_eq!(
        attempts(&p),
        seq(&[
            ("develop", 1),
            ("review", 1),
            ("fix", 1),
            ("fix", 1),
            ("review", 2),
            ("fix", 2),
            ("fix", 2),
            ("commit", 1)
        ])
    );
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["counters"]["failures"]["agent"], 2, "{cp:#}");
    assert_eq!(cp["progress"]["counters"]["attempts"], 8);
}

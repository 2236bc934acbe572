//! How a run and its attempts end, with real processes (issue 30): the summary names
//! what ended the run and nothing older, a finished iteration is kept (and committed)
//! whatever ends the run after it, an agent that signed off and crashed on its way
//! out keeps its iteration, the agent's own `report_interruption` ends its attempt at
//! once, and a detector's finding counts however quickly the agent exits after it.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Project, Ralph, sim_project};

/// Makes the project a git repository with one commit; git's config is the
/// repository's own (no system file, a temp `HOME` for ralph's runs).
struct Git {
    home: tempfile::TempDir,
}

impl Git {
    fn init(p: &Project) -> Git {
        let home = tempfile::Builder::new().prefix("ralph-endings-home-").tempdir().expect("temp home");
        let g = Git { home };
        p.write("README.md", "# project\n");
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["config", "user.name", "Tester"],
            &["config", "user.email", "tester@example.com"],
            &["add", "--", "README.md"],
            &["commit", "-q", "-m", "initial"],
        ] {
            g.git(p, args);
        }
        g
    }

    fn git(&self, p: &Project, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(p.path())
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path())
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn ralph(&self, p: &Project) -> Ralph {
        p.ralph().env("GIT_CONFIG_NOSYSTEM", "1").env("HOME", self.home.path().display().to_string())
    }
}

/// Three good iterations by `steady` after an early failure of `flaky`: the cap that
/// ends the run shows no error and no log of `flaky`'s.
#[test]
fn a_cap_without_an_error_shows_no_older_error() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .sim("flaky", &[r#"[{ say = "trying" }, { exit = 1 }]"#])
        .sim("steady", &[r#"[{ done = "one more step" }]"#])
        .phase("iterations = 3\nuntil = \"complete\"")
        .build();
    let out = p.ralph().run();
    out.expect_code(1).stderr_has("the limit [phases.develop] iterations");
    assert_eq!(p.events("attempt_succeeded").len(), 3, "{out}");
    assert_eq!(p.events("attempt_failed").len(), 1, "{out}");
    assert!(!out.stderr.contains("last error"), "{out}");
    assert!(!out.stderr.contains("develop-flaky.log"), "{out}");
    assert!(!out.stderr.contains("read the last error"), "{out}");
}

/// `ralph mcp` crashes past `[retry] mcp_restarts` during an attempt that finished its
/// iteration: the iteration is committed and counted, then the run stops on the cap
/// (with no error: none ended it).
#[test]
fn a_finished_iteration_is_committed_before_the_restart_cap_ends_the_run() {
    let crash = crate::harness::mcp_crash;
    let first = format!(
        r#"[{{ write = {{ path = "src/a.rs", content = "// a\n" }} }}, {}, {}, {}, {{ done = "wrote a" }}]"#,
        crash("one"),
        crash("two"),
        crash("three")
    );
    let p = sim_project().retry("mcp_restarts = 2").sim("a", &[&first]).phase("iterations = 2").build();
    let git = Git::init(&p);
    let out = git.ralph(&p).run();
    out.expect_code(1).stderr_has("the limit [retry] mcp_restarts").stderr_has("crashed 3 times in this iteration");
    assert_eq!(p.events("attempt_succeeded").len(), 1, "{out}");
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["counters"]["iterations_done"], 1, "{cp:#}");
    assert_eq!(cp["progress"]["position"]["iteration"], 2, "{cp:#}");
    let files = git.git(&p, &["show", "--name-only", "--format=%s", "HEAD"]);
    assert!(files.contains("develop iteration 1") && files.contains("src/a.rs"), "{files}");
    assert!(out.stderr.contains("whole run: 1 iteration"), "{out}");
    assert!(!out.stderr.contains("last error"), "{out}");
}

/// `[retry] mcp_restarts` counts per iteration: two crashes in each of two iterations
/// stay within a cap of two.
#[test]
fn mcp_restarts_count_per_iteration() {
    let crash = crate::harness::mcp_crash;
    let script =
        |n: &str| format!(r#"[{}, {}, {{ done = "{n}" }}]"#, crash(&format!("{n} one")), crash(&format!("{n} two")));
    let p = sim_project()
        .retry("mcp_restarts = 2")
        .sim("a", &[&script("first"), &script("second")])
        .phase("iterations = 2")
        .build();
    let out = p.ralph().run();
    out.expect_code(0);
    assert_eq!(p.events("mcp_lost").len(), 4, "{out}");
    assert_eq!(p.events("attempt_succeeded").len(), 2, "{out}");
}

/// A done tag the judge accepts, then a crash on the way out with no tool call after
/// the tag: the iteration counts (the exit is journaled), nothing is redone.
#[test]
fn a_crash_on_shutdown_after_the_done_tag_keeps_the_iteration() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .sim(
            "a",
            &[r#"[{ write = { path = "out.txt", content = "x\n" } }, { done = "Wrote out.txt." }, { exit = 1 }]"#],
        )
        .build();
    let out = p.ralph().run();
    out.expect_code(0);
    let succeeded = p.events("attempt_succeeded");
    assert_eq!(succeeded.len(), 1, "{out}");
    assert_eq!(succeeded[0]["exit"], json!("status 1"), "{succeeded:?}");
    assert!(p.events("attempt_failed").is_empty(), "{out}");
    assert_eq!(p.events("attempt_started").len(), 1, "{out}");
}

/// A tool call after the tag is work after the sign-off: a crash then is a failure.
#[test]
fn a_tool_call_after_the_done_tag_then_a_crash_is_a_failure() {
    let p = sim_project()
        .retry("agent_attempts = 2")
        .general("max_cycles = 1")
        .sim(
            "a",
            &[
                r#"[{ done = "Done." }, { tool = { name = "Bash", input = { command = "make" } } }, { exit = 1 }]"#,
                r#"[{ done = "Really done." }]"#,
            ],
        )
        .build();
    let out = p.ralph().run();
    out.expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1, "{out}");
    assert_eq!(failed[0]["rule"], json!("exit_nonzero"), "{failed:?}");
}

/// `report_interruption` ends the attempt at once: recovery starts, long before the
/// stall limit, and the agent's reason is the failure's evidence.
#[test]
fn report_interruption_ends_the_attempt_now() {
    let p = sim_project()
        .timeouts(r#"stall = "120s""#)
        .sim(
            "a",
            &[
                r#"[{ mcp = { tool = "report_interruption", arguments = { reason = "the package registry is down" } } }, { hang = true }]"#,
                r#"[{ done = "Installed after all." }]"#,
            ],
        )
        .build();
    let started = Instant::now();
    let out = p.ralph().timeout(Duration::from_secs(60)).run();
    out.expect_code(0);
    assert!(started.elapsed() < Duration::from_secs(60), "{out}");
    assert_eq!(p.events("agent_interruption").len(), 1, "{out}");
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1, "{out}");
    assert_eq!(failed[0]["rule"], json!("reported_interruption"), "{failed:?}");
    assert!(failed[0]["reason"].as_str().unwrap_or("").contains("the package registry is down"), "{failed:?}");
    assert!(p.events("intervention").is_empty(), "{:?}", p.events("intervention"));
}

/// Five identical tool calls that reach ralph only after the agent exited 0 (they
/// were still in the pipe): the loop is what is recorded, and the next prompt says
/// to stop repeating.
#[test]
fn a_loop_seen_after_a_quick_exit_is_recorded_as_the_loop() {
    let call = |n: u32| {
        format!(
            r#"{{"type":"assistant","session_id":"s1","message":{{"content":[{{"type":"tool_use","id":"t{n}","name":"Read","input":{{"file_path":"src/lib.rs"}}}}]}}}}"#
        )
    };
    let mut calls: Vec<String> = (1..=5).map(call).collect();
    calls.push(
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Still reading.","session_id":"s1"}"#.into(),
    );
    // The output arrives after the agent's exit: a writer outside its process group
    // (in a session of its own before the agent exits) holds its stdout and writes
    // once the agent is gone.
    let script = "if [ -f second ]; then cat done.jsonl; else touch second; \
                  setsid sh -c 'sleep 1; cat loop.jsonl' & sleep 0.3; fi; exit 0";
    let p = sim_project()
        .agent(
            "sh",
            &format!(
                "kind = \"command\"\ncommand = [\"sh\", \"-c\", {script:?}, \"{{prompt}}\"]\noutput = \"claude-stream-json\"\n"
            ),
        )
        .file("loop.jsonl", &format!("{}\n", calls.join("\n")))
        .file(
            "done.jsonl",
            "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"Read it once.\\n<promise>DONE</promise>\",\"session_id\":\"s2\"}\n",
        )
        .build();
    let out = p.ralph().run();
    out.expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1, "{out}");
    assert_eq!(failed[0]["rule"], json!("tool_call_loop"), "{failed:?}");
    let detectors: Vec<_> = p.events("intervention").iter().map(|e| e["detector"].clone()).collect();
    assert_eq!(detectors, [json!("tool_call_loop")], "{out}");
    assert!(p.prompt_of(2).contains("Stop repeating them"), "{}", p.prompt_of(2));
}

//! Whole runs: phases, done signals, fallover, caps, command agents, blocked runs.

use std::fs;

use serde_json::json;

use crate::harness::{Project, count, sim_project};

#[test]
fn full_multi_phase_run_completes() {
    let p = sim_project()
        .toml("[general.workflow]\nphases = [\"plan\", \"develop\", \"review\"]")
        .sim(
            "a",
            &[
                r#"[{ say = "planning" }, { write = { path = "PLAN.md", content = "1. code\n" } }, { say = "planned" }]"#,
                r#"[{ write = { path = "src/one.rs", content = "// one\n" } }, { done = "step one" }]"#,
                r#"[{ write = { path = "src/two.rs", content = "// two\n" } }, { goal = "all done" }]"#,
                r#"[{ tool = { name = "Bash", input = { command = "cargo test" }, result = "ok" } }, { done = "reviewed" }]"#,
            ],
        )
        .named_phase("plan", r#"done = "file:PLAN.md""#)
        .named_phase("develop", "until = \"complete\"\niterations = 5")
        .named_phase("review", "")
        .build();
    p.ralph().run().expect_code(0);
    assert_eq!(p.read("PLAN.md"), "1. code\n");
    assert!(p.exists("src/one.rs") && p.exists("src/two.rs"));
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed");
    assert_eq!(cp["clean_stop"], true);
    assert_eq!(cp["progress"]["launches"]["a"], 4, "{cp:#}");
    let journal = p.journal();
    assert_eq!(journal.iter().filter(|e| e["kind"] == "attempt_started").count(), 4);
    assert_eq!(journal.iter().filter(|e| e["kind"] == "attempt_succeeded").count(), 4);
    for phase in ["plan", "develop", "review"] {
        assert_eq!(count(&journal, "phase_done", "phase", &json!(phase)), 1, "phase_done {phase}");
    }
    assert_eq!(journal.first().unwrap()["kind"], "run_started");
    assert_eq!(journal.last().unwrap()["kind"], "run_ended");
    assert_eq!(journal.last().unwrap()["status"], "completed");
}

#[test]
fn fallover_after_agent_failures_resumes_the_session_then_next_agent_completes() {
    let p = sim_project()
        .retry("agent_attempts = 2")
        .sim("a", &[r#"[{ say = "starting" }, { crash = "SIGSEGV" }]"#, r#"[{ say = "all good, I think" }]"#])
        .sim("b", &[r#"[{ done = "finished" }]"#])
        .build();
    p.ralph().run().expect_code(0).stderr_has("falling over to b");
    let started = p.events("attempt_started");
    assert_eq!(started.len(), 3, "{started:#?}");
    assert_eq!(started[0]["agent"], "a");
    assert_eq!(started[0]["resume_session"], json!(null));
    // The crash left a known session: the retry resumes it.
    assert_eq!(started[1]["agent"], "a");
    assert_eq!(started[1]["resume_session"], "sim-a-1");
    // A fallover starts the next agent fresh.
    assert_eq!(started[2]["agent"], "b");
    assert_eq!(started[2]["resume_session"], json!(null));
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 2);
    assert_eq!(failed[0]["category"], "agent");
    assert_eq!(failed[1]["rule"], "no_done_signal");
    let fallover = p.events("fallover");
    assert_eq!(fallover.len(), 1);
    assert_eq!(fallover[0]["from"], "a");
    assert_eq!(fallover[0]["to"], "b");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed");
    assert_eq!(cp["progress"]["sessions"]["a"], "sim-a-1");
    assert_eq!(cp["progress"]["sessions"]["b"], "sim-b-1");
}

#[test]
fn max_cycles_exhausted_fails_the_run() {
    let p = sim_project()
        .general("max_cycles = 2")
        .sim("a", &["[{ exit = 1 }]"])
        .sim("b", &[r#"[{ crash = "SIGABRT" }]"#])
        .build();
    let out = p.ralph().run();
    out.expect_code(1).stderr_has("the limit [general] max_cycles was reached");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "failed");
    assert_eq!(cp["clean_stop"], true);
    assert!(cp["stop_reason"].as_str().unwrap().contains("max_cycles exhausted"), "{cp:#}");
}

#[test]
fn exit_zero_without_done_signal_is_an_agent_failure() {
    let p = sim_project().general("max_cycles = 1").sim("a", &[r#"[{ say = "I am done." }]"#]).build();
    p.ralph().run().expect_code(1);
    let failed = p.events("attempt_failed");
    assert!(!failed.is_empty());
    for f in &failed {
        assert_eq!(f["category"], "agent", "{f}");
        assert_eq!(f["rule"], "no_done_signal", "{f}");
    }
    // agent_attempts defaults to 3: three failures of the only agent, one cycle.
    assert_eq!(failed.len(), 3);
}

#[test]
fn iteration_cap_exhausted_when_the_goal_never_comes() {
    let p = sim_project()
        .sim("a", &[r#"[{ done = "one more step done" }]"#])
        .phase(r#"until = "complete""#)
        .phase("iterations = 2")
        .build();
    p.ralph().run().expect_code(1).stderr_has("iterations was reached");
    assert_eq!(p.events("attempt_succeeded").len(), 2);
    assert_eq!(p.checkpoint()["status"], "failed");
}

#[test]
fn command_agent_with_done_tag() {
    let p = sim_project()
        .command(
            "sh",
            r#"["sh", "-c", "echo working; echo ran > ran.txt; echo '<promise>DONE</promise>'", "{prompt}"]"#,
        )
        .build();
    p.ralph().run().expect_code(0);
    assert_eq!(p.read("ran.txt"), "ran\n");
    assert_eq!(p.checkpoint()["status"], "completed");
}

#[test]
fn command_agent_receives_the_prompt_as_an_argument() {
    let p = sim_project()
        .command("sh", r#"["sh", "-c", "printf '%s' \"$0\" > prompt.txt; echo '<promise>DONE</promise>'", "{prompt}"]"#)
        .file("PROMPT.md", "Build the frobnicator.\n")
        .build();
    p.ralph().run().expect_code(0);
    assert!(p.read("prompt.txt").contains("Build the frobnicator."), "{}", p.read("prompt.txt"));
}

#[test]
fn command_agent_with_exit0_done() {
    let p = sim_project()
        .command("t", r#"["true", "{prompt}"]"#)
        .named_phase("one", "done = \"exit0\"\niterations = 2")
        .build();
    p.ralph().run().expect_code(0);
    assert_eq!(p.events("attempt_succeeded").len(), 2);
}

#[test]
fn command_agent_failing_with_exit0_done_fails_the_run() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .command("f", r#"["false", "{prompt}"]"#)
        .named_phase("one", r#"done = "exit0""#)
        .build();
    let out = p.ralph().run();
    out.expect_code(1);
    assert_eq!(p.checkpoint()["status"], "failed");
    assert!(!p.events("attempt_failed").is_empty());
}

#[test]
fn bad_credentials_block_the_run() {
    let p =
        sim_project().sim("a", &[r#"[{ error = "API Error: 401 Invalid API key · Fix external API key" }]"#]).build();
    let out = p.ralph().run();
    out.expect_code(3);
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "blocked", "{cp:#}");
    assert_eq!(cp["clean_stop"], true);
    // Blocked at once: no retry against bad credentials.
    assert_eq!(p.events("attempt_started").len(), 1);
}

#[test]
fn file_done_signal_needs_the_artifact_to_change() {
    // PLAN.md exists before the run and the agent does not touch it: not done.
    let p = sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .sim("a", &[r#"[{ say = "the plan is fine as it is" }]"#])
        .named_phase("plan", r#"done = "file:PLAN.md""#)
        .file("PLAN.md", "old plan\n")
        .build();
    p.ralph().run().expect_code(1);
    assert_eq!(p.events("attempt_succeeded").len(), 0);
}

#[test]
fn stalled_agent_is_ended_and_its_session_resumed() {
    let p = sim_project()
        .timeouts(r#"stall = "1s""#)
        .sim("a", &[r#"[{ say = "thinking..." }, { hang = true }]"#, r#"[{ done = "back on track" }]"#])
        .build();
    p.ralph().run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["category"], "agent");
    assert_eq!(failed[0]["rule"], "stall");
    assert_eq!(p.events("attempt_started")[1]["resume_session"], "sim-a-1");
}

#[test]
fn a_quiet_tool_call_is_not_a_stall() {
    let p = sim_project()
        .timeouts(r#"stall = "1s""#)
        .sim("a", &[r#"[{ tool = { name = "Bash", input = { command = "cargo build" }, result = "ok", duration = "2500ms" } }, { done = "built" }]"#])
        .build();
    p.ralph().run().expect_code(0);
    assert!(p.events("attempt_failed").is_empty());
}

#[test]
fn a_text_agents_final_message_is_its_stdout_not_its_stderr() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .command("cmd", r#"["sh", "-c", "echo working; echo '<promise>DONE</promise>'; echo 'a log line after the tag' >&2", "{prompt}"]"#)
        .build();
    p.ralph().run().expect_code(0);
}

#[test]
fn every_agent_of_a_used_chain_is_checked_before_the_run_starts() {
    use std::os::unix::fs::PermissionsExt;
    let p = sim_project()
        .sim("a", &[r#"[{ done = "done by the first agent" }]"#])
        .command("gone", r#"["/nonexistent/dir/agent-bin", "{prompt}"]"#)
        .command("noexec", r#"["./noexec.sh", "{prompt}"]"#)
        .command("badbang", r#"["./badbang.sh", "{prompt}"]"#)
        .command("spare", r#"["/nonexistent/unused-agent", "{prompt}"]"#)
        .chain(&["a", "gone", "noexec", "badbang"])
        .build()
        .file("noexec.sh", "#!/bin/sh\nexit 0\n")
        .file("badbang.sh", "#!/no/such/interpreter\nexit 0\n");
    fs::set_permissions(p.join("noexec.sh"), fs::Permissions::from_mode(0o644)).expect("chmod");
    fs::set_permissions(p.join("badbang.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = p.ralph().run();
    // The first agent would finish the run; the ones behind it are checked anyway.
    out.expect_code(2)
        .stderr_has("/nonexistent/dir/agent-bin does not exist")
        .stderr_has("noexec.sh is not executable")
        .stderr_has("/no/such/interpreter");
    assert!(!out.stderr.contains("unused-agent"), "an agent no chain uses was checked\n{out}");
    assert!(p.events("attempt_started").is_empty());
}

#[test]
fn a_binary_that_disappears_after_the_start_blocks_the_run() {
    let p = sim_project().program("a", "agent.sh", "#!/bin/sh\nrm -f \"$0\"\nexit 1\n", "text").build();
    let out = p.ralph().run();
    out.expect_code(3).stderr_has("agent.sh");
    assert_eq!(p.checkpoint()["status"], "blocked");
    assert_eq!(p.events("attempt_started").len(), 2);
}

/// A goal longer than an argument may be, for an agent `sh -c script` given
/// `placeholder` as its `$0`.
fn long_goal_for(script: &str, placeholder: &str) -> Project {
    sim_project()
        .command("sh", &format!("[\"sh\", \"-c\", {script:?}, {placeholder:?}]"))
        .file("PROMPT.md", &crate::harness::long_goal("END"))
        .build()
}

#[test]
fn a_prompt_too_long_for_an_argument_is_the_users_to_fix_not_an_outage() {
    let p = long_goal_for("echo '<promise>DONE</promise>'", "{prompt}");
    p.ralph().run().expect_code(3).stderr_has("cannot start sh").stderr_has("{prompt_file}");
    assert_eq!(p.events("attempt_started").len(), 1, "no retries of a launch that cannot work");
    assert_eq!(p.events("attempt_failed")[0]["rule"], json!("launch_impossible"));
}

#[test]
fn a_command_agent_reads_a_long_prompt_from_its_prompt_file() {
    let p = long_goal_for("cp \"$0\" prompt.txt; echo '<promise>DONE</promise>'", "{prompt_file}");
    p.ralph().run().expect_code(0);
    let got = p.read("prompt.txt");
    assert!(got.len() > 200 * 1024 && got.contains("Build the frobnicator."), "{} bytes", got.len());
}

#[test]
fn an_agent_program_that_cannot_be_executed_is_the_users_to_fix() {
    // Executable, but not a program: no #! line, not a binary format. (exec falls
    // back to /bin/sh for such a file, which then fails on it: exit 127.)
    let p = sim_project().program("bad", "agent.bin", "\u{1}\u{2}\u{3} not a program\n", "").build();
    let out = p.ralph().run();
    assert_eq!(p.events("attempt_started").len(), 1, "never retried");
    out.expect_code(3).stderr_has("agent.bin");
}

#[test]
fn an_agent_script_with_a_bad_interpreter_is_the_users_to_fix() {
    let p = sim_project().program("bad", "agent.sh", "#!/no/such/interpreter\necho hi\n", "").build();
    // Found by the pre-flight before anything starts (exit 2); were it to appear
    // after the start, the launch's errno says the same (`recovery::spawn`).
    p.ralph().run().expect_code(2).stderr_has("agent.sh").stderr_has("#! interpreter /no/such/interpreter");
    assert!(p.events("attempt_started").is_empty(), "nothing was launched");
}

//! The other subcommands and the run lock: status, init, completions, demo.

use std::fs;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::{Project, cleanup, prompt_entries, sim_project};

/// One agent `a` whose first launch hangs in a tool call (its pid in `agent.pid`),
/// and whose later launches finish.
fn hanging_agent() -> Project {
    sim_project()
        .sim(
            "a",
            &[
                r#"[{ pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]"#,
                r#"[{ done = "ok" }]"#,
            ],
        )
        .build()
}

#[test]
fn second_ralph_in_the_same_directory_is_refused() {
    let p = hanging_agent();
    let (run, agent) = p.start();
    let out = p.ralph().args(["--resume"]).run();
    let pid = run.pid();

    // Meanwhile, `ralph status` sees the live run.
    let status = p.ralph().args(["status", "--json"]).run();
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);

    out.expect_code(2).stderr_has("another ralph").stderr_has(&format!("pid {pid}"));
    status.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&status.stdout).unwrap_or_else(|e| panic!("{e}\n{status}"));
    assert_eq!(v["live"], true, "{v:#}");
    assert_eq!(v["pid"], pid);
    // The refused ralph did not disturb the running one: its pause was saved.
    assert_eq!(p.checkpoint()["status"], "paused");
}

#[test]
fn a_live_run_is_not_called_unclean_and_both_json_views_have_one_shape() {
    let p = hanging_agent();
    let (run, agent) = p.start();
    let status = p.ralph().args(["status"]).run();
    let status_json = p.ralph().args(["status", "--json"]).run();
    let inspect_json = p.ralph().args(["--inspect-checkpoint", "--json"]).run();
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);

    status.expect_code(0).stdout_has("live: ralph pid");
    assert!(!status.stdout.contains("no clean stop"), "{status}");
    let keys = |out: &crate::harness::Output| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        assert_eq!(v["live"], true, "{out}");
        assert!(v["checkpoint"]["run_id"].is_string(), "{out}");
        k
    };
    assert_eq!(keys(&status_json), keys(&inspect_json));
    assert_eq!(keys(&status_json), ["checkpoint", "dir", "live", "live_state", "pid"]);
    // The attempt that Ctrl+C ended has its own journal event.
    let stopped = p.events("attempt_interrupted");
    assert_eq!(stopped.len(), 1, "{:#?}", p.journal());
    assert_eq!(stopped[0]["agent"], "a");
    assert_eq!(stopped[0]["signal"], "SIGINT");
}

/// The workflow of the two-phase tests: `plan`, then `develop`.
const PLAN_THEN_DEVELOP: &str = "[general.workflow]\nphases = [\"plan\", \"develop\"]";

#[test]
fn goal_reached_is_said_only_where_it_ends_the_phase() {
    let p = sim_project()
        .toml(PLAN_THEN_DEVELOP)
        .sim("a", &[r#"[{ goal = "the plan is the goal" }]"#, r#"[{ goal = "all done" }]"#])
        .named_phase("plan", "")
        .named_phase("develop", "until = \"complete\"\niterations = 3")
        .build();
    let out = p.ralph().run();
    out.expect_code(0);
    assert!(!out.stderr.contains("plan iteration 1 done (goal reached)"), "{out}");
    out.stderr_has("develop iteration 1 done (goal reached)");
}

#[test]
fn dry_run_shows_each_phases_first_prompt_and_argv_and_writes_nothing() {
    let p = sim_project()
        .toml(PLAN_THEN_DEVELOP)
        .sim("a", &[r#"[{ pidfile = "agent.pid" }, { done = "x" }]"#])
        .named_phase("plan", "")
        .named_phase("develop", "")
        .build();
    let out = p.ralph().args(["--dry-run"]).run();
    out.expect_code(0)
        .stdout_has("phases: plan → develop")
        .stdout_has("main: a")
        .stdout_has("phase 1/2 plan")
        .stdout_has("__sim --agent a --launch 1")
        .stdout_has("| Build the thing.")
        .stdout_has("<the result of phase plan, known once it has run>");
    assert!(!p.exists(".agent"), "a dry run wrote .agent/");
    assert!(!p.exists("agent.pid"), "a dry run launched the agent");
}

/// `--dry-run --from PHASE` previews the run `ralph --from PHASE` would start: from
/// that phase, with the last run's result it reuses; it shows how `ralph mcp`
/// reaches each agent, and says first that an unfinished run is here.
#[test]
fn dry_run_honours_from_shows_ralph_mcp_and_mentions_an_unfinished_run() {
    let p = sim_project()
        .sim("a", &[r#"[{ pidfile = "agent.pid" }, { tool = { name = "Bash", hang = true } }]"#])
        .named_phase("plan", "")
        .named_phase("develop", "")
        .build();
    let (run, agent) = p.start();
    run.signal(nix::sys::signal::Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
    p.write(".agent/artifacts/plan.md", "the plan\n");
    let before = p.agent_dir_listing();
    let out = p.ralph().args(["--dry-run", "--from", "develop"]).run();
    out.expect_code(0)
        .stdout_has("note: an unfinished run (paused, phase plan, iteration 1) has a checkpoint here")
        .stdout_has("phase 2/2 develop")
        .stdout_has("(`ralph --from develop`)")
        .stdout_has("<the result of phase plan from the last run, in .agent/artifacts/plan.md>")
        .stdout_has("ralph mcp: in its environment: RALPH_SOCKET='<control-socket>' RALPH_ATTEMPT=1");
    assert!(!out.stdout.contains("phase 1/2 plan"), "{out}");
    assert_eq!(p.agent_dir_listing(), before, "a dry run wrote into .agent/");
    p.ralph().args(["--dry-run", "--from", "devlop"]).run().expect_code(2).stderr_has("did you mean `develop`");
    // A CLI agent is told in its argv.
    let Some(claude) = crate::real_cli::find("claude") else { return };
    p.write(
        "ralph.toml",
        &p.read("ralph.toml")
            .replace(
                "[agents.a]",
                &format!("[agents.c]\nkind = \"claude\"\nbinary = {:?}\n[agents.a]", claude.display().to_string()),
            )
            .replace("main = [\"a\"]", "main = [\"c\"]"),
    );
    p.ralph().args(["--dry-run"]).run().expect_code(0).stdout_has("--mcp-config").stdout_has("<control-socket>");
}

#[test]
fn logs_prints_the_last_attempt_readably_and_follows_a_live_one() {
    let p = hanging_agent();
    // Nothing yet.
    p.ralph().args(["logs"]).run().expect_code(2).stderr_has("no attempt logs");
    let (run, agent) = p.start();
    // -f follows the live attempt until the run ends.
    let follow = p.ralph().args(["logs", "-f"]).spawn();
    p.wait_for_attempt_log(1, "tool_use");
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
    let followed = follow.finish();
    followed.expect_code(0).stdout_has("==> attempt-0001-develop-a (").stdout_has("→ Bash {\"command\":\"make\"}");

    p.ralph().args(["--resume"]).run().expect_code(0);
    let out = p.ralph().args(["logs"]).run();
    out.expect_code(0).stdout_has("==> attempt-0002-develop-a (").stdout_has("= result:").stdout_has("ok");
    assert!(!out.stdout.contains("{\"type\""), "raw stream-json was printed\n{out}");
}

#[test]
fn a_run_an_older_ralph_began_resumes_and_its_logs_read_in_both_layouts() {
    let p = hanging_agent();
    let (run, agent) = p.start();
    p.wait_for_attempt_log(1, "tool_use");
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
    // What an older ralph left: a file per attempt log and per prompt.
    let logs = p.join(&format!(".agent/logs/{}", p.checkpoint()["run_id"].as_str().expect("a run id")));
    fs::write(logs.join("attempt-0001-develop-a.log"), p.attempt_log(1)).expect("write");
    fs::write(logs.join("attempt-0001-develop-a.prompt.md"), p.prompt_of(1)).expect("write");
    for file in ["attempts.log", "attempts.index", "prompts.md"] {
        fs::remove_file(logs.join(file)).expect("remove");
    }
    let out = p.ralph().args(["logs"]).run();
    out.expect_code(0).stdout_has("attempt-0001-develop-a.log) <==").stdout_has("→ Bash {\"command\":\"make\"}");

    p.ralph().args(["--resume"]).run().expect_code(0);
    let out = p.ralph().args(["logs"]).run();
    out.expect_code(0).stdout_has("==> attempt-0002-develop-a (").stdout_has("= result:").stdout_has("ok");
    assert!(!out.stdout.contains("→ Bash"), "the older attempt was shown\n{out}");
    let prompts: Vec<String> = prompt_entries(&logs).into_iter().map(|(stem, _)| stem).collect();
    assert_eq!(prompts, ["attempt-0002-develop-a"]);
    assert!(logs.join("attempt-0001-develop-a.prompt.md").exists());
}

/// One crash, then done: a decision worth logging.
/// One agent `a` that crashes once, then finishes.
fn crash_then_done() -> Project {
    sim_project().sim("a", &[r#"[{ say = "working" }, { crash = "SIGSEGV" }]"#, r#"[{ done = "ok" }]"#]).build()
}

#[test]
fn verbose_levels_log_decisions_and_agent_events() {
    let p = crash_then_done();
    p.ralph().run().expect_code(0);
    let log = p.ralph_log();
    assert!(log.contains("attempt_failed") && !log.contains("policy decision"), "{log}");

    let p = crash_then_done();
    p.ralph().args(["-v"]).run().expect_code(0).stderr_has("log: ");
    let log = p.ralph_log();
    for needle in ["classified the failed attempt", "rule=crashed", "policy decision", "judged the attempt"] {
        assert!(log.contains(needle), "-v lacks {needle:?}:\n{log}");
    }
    assert!(!log.contains("agent event"), "{log}");

    let p = crash_then_done();
    p.ralph().args(["-vv"]).run().expect_code(0);
    assert!(p.ralph_log().contains("agent event"));
}

#[test]
fn ralph_log_takes_rust_log_syntax_and_json_is_for_machines() {
    let p = crash_then_done();
    p.ralph().env("RALPH_LOG", "warn,ralph::step::failure=debug").args(["--log-format", "json"]).run().expect_code(0);
    let log = p.ralph_log();
    let lines: Vec<serde_json::Value> =
        log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {e}: {l}"))).collect();
    assert!(lines.iter().any(|v| v["fields"]["message"] == "policy decision"), "{log}");
    // Only what the filter let through: no info lines of other modules.
    assert!(lines.iter().all(|v| v["level"] != "INFO"), "{log}");

    let p = crash_then_done();
    p.ralph().env("RALPH_LOG", "ralph=loud").run().expect_code(0).stderr_has("RALPH_LOG");
}

#[test]
fn status_after_a_run() {
    let p = hanging_agent();
    let (run, agent) = p.start();
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
    p.ralph().args(["--resume"]).run().expect_code(0);

    let out = p.ralph().args(["status"]).run();
    out.expect_code(0).stdout_has("completed");
    let out = p.ralph().args(["status", "--json"]).run();
    out.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(v["live"], false);
    assert_eq!(v["checkpoint"]["status"], "completed");
}

#[test]
fn status_without_a_run() {
    let p = Project::new();
    p.ralph().args(["status"]).run().expect_code(0).stdout_has("no run");
}

#[test]
fn init_without_an_agent_cli_writes_a_config_that_refuses_to_run_until_one_is_installed() {
    let p = Project::bare();
    // No agent CLI on PATH: the starter names the CLIs to install, never a fake agent.
    let empty_bin = p.join(".empty-bin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    let path = empty_bin.display().to_string();
    p.ralph().args(["init"]).env("PATH", path.clone()).run().expect_code(0).stdout_has("install one");
    assert!(p.exists("ralph.toml") && p.exists("PROMPT.md"));
    assert!(!p.read("ralph.toml").contains("\"sim\""));
    // The unedited goal is refused before anything is launched.
    let out = p.ralph().env("PATH", path.clone()).run();
    out.expect_code(2).stderr_has("PROMPT.md").stderr_has("placeholder").stderr_has("what you want built");
    assert!(!p.exists(".agent/checkpoint.json"), "a refused goal started a run");
    // A goal written below the placeholder: the placeholder's lines are named.
    p.write("PROMPT.md", &format!("{}\nWrite PLAN.md.\n", p.read("PROMPT.md")));
    let out = p.ralph().env("PATH", path.clone()).run();
    out.expect_code(2)
        .stderr_has("PROMPT.md: the goal file still holds the placeholder text")
        .stderr_has("delete lines 3-4");
    assert!(!p.exists(".agent/checkpoint.json"), "a refused goal started a run");
    p.write("PROMPT.md", "# Goal\n\nWrite PLAN.md.\n");
    let out = p.ralph().env("PATH", path.clone()).run();
    out.expect_code(2).stderr_has("not found on PATH").stderr_has("npm install -g @anthropic-ai/claude-code");
    assert!(!p.exists(".agent/checkpoint.json") && !p.exists("PLAN.md"), "{out}");
}

#[test]
fn an_empty_goal_is_refused() {
    let p = hanging_agent().file("PROMPT.md", "# Goal\n\n<!-- todo -->\n");
    p.ralph().run().expect_code(2).stderr_has("the goal file is empty").stderr_has("what you want built");
    assert!(!p.exists(".agent/checkpoint.json"));
}

#[test]
fn init_writes_only_what_is_missing_and_backs_up_with_force() {
    let p = Project::bare();
    let empty_bin = p.join(".empty-bin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    let path = empty_bin.display().to_string();
    p.write("PROMPT.md", "my own goal\n");
    let out = p.ralph().args(["init"]).env("PATH", path.clone()).run();
    out.expect_code(0).stdout_has("kept").stdout_has("wrote");
    assert_eq!(p.read("PROMPT.md"), "my own goal\n", "init replaced the user's goal");
    assert!(p.exists("ralph.toml"));
    // A second init changes nothing.
    p.write("ralph.toml", "# mine\n");
    p.ralph().args(["init"]).env("PATH", path.clone()).run().expect_code(0);
    assert_eq!(p.read("ralph.toml"), "# mine\n");
    // --force replaces, keeping each old file beside it.
    p.ralph().args(["init", "--force"]).env("PATH", path.clone()).run().expect_code(0).stdout_has(".bak");
    assert_eq!(p.read("ralph.toml.bak"), "# mine\n");
    assert_eq!(p.read("PROMPT.md.bak"), "my own goal\n");
    assert!(p.read("ralph.toml").contains("[chains]"));
    p.write("ralph.toml", "# second\n");
    p.ralph().args(["init", "--force"]).env("PATH", path).run().expect_code(0);
    assert_eq!(p.read("ralph.toml.bak"), "# mine\n", "an older backup was overwritten");
    assert_eq!(p.read("ralph.toml.bak.1"), "# second\n");
}

/// The starter points to `ralph init --example`, which writes the complete example:
/// a config that loads.
#[test]
fn init_example_writes_the_complete_example_the_starter_points_to() {
    let p = Project::bare();
    let empty_bin = p.join(".empty-bin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    p.ralph().args(["init"]).env("PATH", empty_bin.display().to_string()).run().expect_code(0);
    assert!(p.read("ralph.toml").contains("`ralph init --example`"), "{}", p.read("ralph.toml"));
    assert!(!p.read("ralph.toml").contains("in ralph's repository"));
    p.ralph().args(["init", "--example"]).run().expect_code(0).stdout_has("ralph.example.toml");
    let example = p.read("ralph.example.toml");
    assert!(example.contains("[watch]") && example.contains("max_resumes_per_boot"), "{example}");
    assert!(!example.contains("not supported by this build"), "{example}");
    p.ralph().args(["init", "--example"]).run().expect_code(0).stdout_has("kept");
    p.ralph().args(["doctor", "-c", "ralph.example.toml"]).run().stdout_has("is valid");
}

#[test]
fn init_honours_dash_c() {
    let p = Project::bare();
    let sub = p.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    p.ralph().args(["init", "-C", "sub"]).run().expect_code(0);
    assert!(p.exists("sub/ralph.toml") && p.exists("sub/PROMPT.md"));
    assert!(!p.exists("ralph.toml"), "init wrote into the current directory");
}

#[test]
fn completions_for_bash() {
    let p = Project::new();
    let out = p.ralph().args(["completions", "bash"]).run();
    out.expect_code(0).stdout_has("ralph").stdout_has("--resume");
}

/// The demo on a terminal: both runs end as they should, each of its messages is
/// on a line of its own (not run into the live line of the run it drives), and its
/// runs leave nothing in the user's run registry.
#[test]
fn demo_runs_on_a_terminal_and_leaves_no_registered_run() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let p = Project::new();
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let state = p.registry().parent().and_then(|r| r.parent()).expect("state").to_path_buf();
    let mut child = std::process::Command::new(crate::harness::RALPH)
        .arg("demo")
        .current_dir(p.path())
        .env("XDG_STATE_HOME", &state)
        .stdin(std::process::Stdio::null())
        .stdout(slave.try_clone().expect("dup"))
        .stderr(slave)
        .process_group(0)
        .spawn()
        .expect("spawn ralph demo");
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
        while let Ok(n @ 1..) = master.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let status = crate::harness::wait_child(&mut child, Duration::from_secs(90), "the demo");
    drop(child);
    let seen = reader.join().unwrap_or_default();
    assert_eq!(status.code(), Some(0), "{seen}");
    assert!(seen.contains("ralph exited with 130") && seen.contains("ralph exited with 0"), "{seen}");
    // The message after the Ctrl+C starts on a cleared line of its own.
    let at = seen.find("demo: pressing Ctrl+C").expect("the Ctrl+C message");
    assert!(seen[..at].ends_with("\r\x1b[2K\x1b[1m"), "{:?}", &seen[at.saturating_sub(80)..at + 20]);
    p.ralph().args(["status", "--all"]).run().expect_code(0).stdout_has("no registered runs");
}

#[test]
fn clean_without_logs_says_there_are_none() {
    let p = Project::new();
    p.ralph().args(["clean"]).run().expect_code(0).stdout_has("has no logs");
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let p = Project::new();
    p.ralph().args(["--resume", "--no-resume"]).run().expect_code(2);
    p.ralph().args(["--bogus"]).run().expect_code(2);
}

#[test]
fn doctor_checks_binary_version_credentials_and_provider_without_printing_secrets() {
    let Some(claude) = crate::real_cli::find("claude") else { return };
    let provider = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = provider.local_addr().expect("addr").port();
    let config = |key: &str| {
        format!(
            r#"
[agents.claude]
kind = "claude"
binary = "{}"
env = {{ ANTHROPIC_BASE_URL = "http://127.0.0.1:{port}"{key} }}
[agents.missing]
kind = "command"
command = ["no-such-agent-binary", "{{prompt}}"]
[chains]
main = ["claude"]
[phases.develop]
chain = "main"
"#,
            claude.display()
        )
    };
    let p = Project::new().config(&config(r#", ANTHROPIC_API_KEY = "sk-ant-secret-value""#));
    let out = p.ralph().args(["doctor"]).run();
    // `missing` is in no chain: a note, not a failure.
    out.expect_code(0)
        .stdout_has("ok   agent claude: version 2.1.197 (the version ralph was tested with)")
        .stdout_has("credentials present (ANTHROPIC_API_KEY)")
        .stdout_has(&format!("provider 127.0.0.1:{port} answers"))
        .stdout_has("note agent missing: no-such-agent-binary not found on PATH")
        .stdout_has("(no chain uses it)");
    assert!(!out.stdout.contains("sk-ant-secret-value"), "a secret was printed");
    drop(provider);
    let p = Project::new().config(&config(""));
    let out = p.ralph().args(["doctor"]).env("ANTHROPIC_API_KEY", "").run();
    out.expect_code(3).stdout_has("FAIL agent claude: no credentials found").stdout_has("unreachable");
}

#[test]
fn doctor_says_when_an_agent_cli_differs_from_the_tested_version() {
    use std::os::unix::fs::PermissionsExt;
    // A `codex` that says it is another version than the pinned one.
    let p = Project::new().file("codex", "#!/bin/sh\necho 'codex-cli 9.9.9'\n");
    std::fs::set_permissions(p.join("codex"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = format!(
        "[agents.codex]\nkind = \"codex\"\nbinary = \"{}\"\nenv = {{ OPENAI_BASE_URL = \"http://127.0.0.1:9\" }}\n[chains]\nmain = [\"codex\"]\n[phases.develop]\nchain = \"main\"\n",
        p.join("codex").display()
    );
    let p = p.config(&config);
    let out = p.ralph().args(["doctor"]).run();
    out.stdout_has("agent codex: version 9.9.9 differs from 0.171.0, the version ralph was tested with")
        .stdout_has("provider 127.0.0.1:9");
}

#[test]
fn doctor_passes_the_shipped_example_and_speaks_json() {
    let p = Project::new()
        .config(include_str!("../../ralph.example.toml"))
        .file("PROMPT.md", "Build the calculator; `cargo test` passes.\n");
    // The example's CLI agents are in no chain: notes, so the example passes.
    let out = p.ralph().args(["doctor", "--json"]).env("PATH", "/usr/bin:/bin").run();
    out.expect_code(0);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(report["ok"], true, "{report:#}");
    let checks = report["checks"].as_array().expect("checks");
    assert!(checks.iter().any(|c| c["what"].as_str().is_some_and(|w| w.contains("is writable"))), "{report:#}");
    assert!(checks.iter().any(|c| c["note"] == true), "{report:#}");
}

#[test]
fn doctor_fails_an_unwritable_state_directory_and_an_unedited_goal() {
    let p = Project::new()
        .config(
            "[agents.a]\nkind = \"sim\"\n[[agents.a.script]]\nsteps = [{ done = \"ok\" }]\n\
             [chains]\nmain = [\"a\"]\n[phases.develop]\nchain = \"main\"\n",
        )
        .file("PROMPT.md", "");
    let outside = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(outside.path(), p.join(".agent")).expect("symlink");
    p.ralph()
        .args(["doctor"])
        .run()
        .expect_code(3)
        .stdout_has("FAIL goal file")
        .stdout_has(".agent is a symbolic link");
}

/// `ralph status | head`, `ralph --inspect-checkpoint | head -1`: a reader that goes
/// away ends a command that only prints quietly (SIGPIPE, as any filter), never
/// with a panic and its backtrace.
#[test]
fn a_closed_pipe_ends_a_printing_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let p = sim_project().sim("a", &[r#"[{ done = "ok" }]"#]).build();
    p.ralph().run().expect_code(0);
    for args in [
        &["completions", "bash"][..],
        &["status"],
        &["status", "--json"],
        &["--inspect-checkpoint"],
        &["--dry-run"],
        &["doctor"],
        &["logs"],
    ] {
        // The reader is gone before ralph writes a byte: every write fails.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let mut child = std::process::Command::new(crate::harness::RALPH)
            .args(args)
            .current_dir(p.path())
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn ralph");
        let status = crate::harness::wait_child(&mut child, Duration::from_secs(30), &format!("ralph {args:?}"));
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("stderr");
        assert!(!stderr.contains("panicked"), "ralph {args:?} panicked on a closed pipe:\n{stderr}");
        assert!(
            status.signal() == Some(13) || status.code() == Some(0),
            "ralph {args:?} ended with {status:?}:\n{stderr}"
        );
    }
}

/// ralph upgraded in the middle of a run (its file replaced, as `cargo install` or a
/// package manager does): the next launch of `ralph sim` (and of `ralph mcp`) starts
/// the new file, not the kernel's `ralph (deleted)` name of the old one.
#[test]
fn a_ralph_replaced_during_the_run_still_starts_itself() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .command("up", r#"["sh", "upgrade.sh", "{prompt}"]"#)
        .sim("a", &[r#"[{ done = "ok" }]"#])
        .file("upgrade.sh", "cp bin/ralph bin/ralph.new && mv -f bin/ralph.new bin/ralph\nexit 1\n")
        .build();
    std::fs::create_dir_all(p.join("bin")).expect("bin/");
    std::fs::copy(crate::harness::RALPH, p.join("bin/ralph")).expect("copy ralph");
    let mut child = std::process::Command::new(p.join("bin/ralph"))
        .current_dir(p.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the copy of ralph");
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let status = crate::harness::wait_child(&mut child, Duration::from_secs(60), "ralph");
    let stderr = reader.join().unwrap_or_default();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("(deleted)"), "{stderr}");
}

//! The other subcommands and the run lock: status, init, completions, demo.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::{Project, cleanup, fast};

const AGENT: &str = r#"
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{ pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]
[[agents.a.script]]
steps = [{ done = "ok" }]

[chains]
main = ["a"]

[phases.develop]
chain = "main"
"#;

#[test]
fn second_ralph_in_the_same_directory_is_refused() {
    let p = Project::new().config(&fast("", "", AGENT));
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
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
fn status_after_a_run() {
    let p = Project::new().config(&fast("", "", AGENT));
    let run = p.ralph().spawn();
    let agent = p.pid_file("agent.pid");
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
fn init_writes_a_config_that_runs() {
    let p = Project::bare();
    // No agent CLI on PATH: the starter uses the scripted agent.
    let empty_bin = p.join(".empty-bin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    let path = empty_bin.display().to_string();
    p.ralph().args(["init"]).env("PATH", path.clone()).run().expect_code(0);
    assert!(p.exists("ralph.toml") && p.exists("PROMPT.md"));
    let out = p.ralph().env("PATH", path.clone()).run();
    out.expect_code(0);
    assert_eq!(p.checkpoint()["status"], "completed");
    // A second init refuses to overwrite.
    p.ralph().args(["init"]).env("PATH", path).run().expect_code(2).stderr_has("--force");
}

#[test]
fn completions_for_bash() {
    let p = Project::new();
    let out = p.ralph().args(["completions", "bash"]).run();
    out.expect_code(0).stdout_has("ralph").stdout_has("--resume");
}

#[test]
fn demo_runs() {
    let p = Project::new();
    let out = p.ralph().args(["demo"]).timeout(Duration::from_secs(90)).run();
    out.expect_code(0).stderr_has("ralph exited with 130").stderr_has("ralph exited with 0");
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
    out.expect_code(3)
        .stdout_has("ok   agent claude: version 2.1.197 (the version ralph was tested with)")
        .stdout_has("credentials present (ANTHROPIC_API_KEY)")
        .stdout_has(&format!("provider 127.0.0.1:{port} answers"))
        .stdout_has("FAIL agent missing: no-such-agent-binary not found on PATH");
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

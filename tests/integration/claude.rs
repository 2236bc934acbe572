//! The real Claude Code CLI (pinned, from npm) driven by ralph against the fake
//! provider on 127.0.0.1: a full run whose tool call writes a file, a resume in the
//! session the CLI reported, and provider failures ending in the category
//! design.md §4 gives them.

use serde_json::json;

use crate::fake_provider::{FakeProvider, Reply};
use crate::harness::Project;
use crate::real_cli;

/// A project whose only agent is the real `claude`, pointed at `provider`, with its
/// own HOME so nothing on the machine leaks in.
fn project(provider: &FakeProvider, retry: &str, timeouts: &str) -> Option<Project> {
    let claude = real_cli::find("claude")?;
    let p = Project::new();
    let home = p.join(".home");
    std::fs::create_dir_all(&home).expect("home");
    let table = format!(
        r#"kind = "claude"
model = "claude-sonnet-4-5"
binary = "{claude}"
env = {{ ANTHROPIC_BASE_URL = "{url}", ANTHROPIC_API_KEY = "dummy-key", HOME = "{home}" }}"#,
        claude = claude.display(),
        url = provider.base_url(),
        home = home.display(),
    );
    // Node's start-up on a loaded machine outlasts the fast tests' 3 s stall limit.
    let timeouts = if timeouts.is_empty() { real_cli::STALL } else { timeouts };
    Some(real_cli::configure(p, "claude", &table, retry, timeouts))
}

#[test]
fn a_full_run_through_claude_writes_the_file_of_its_tool_call() {
    let provider = FakeProvider::start(Vec::new());
    let Some(p) = project(&provider, "", "") else { return };
    // Claude's Write tool takes an absolute path, known once the project exists.
    let target = p.join("out.txt").display().to_string();
    provider.then(vec![
        Reply::Write { path: target, content: "hello from claude\n".into() },
        Reply::Text("Wrote it.\n\n<promise>DONE</promise>".into()),
    ]);
    p.ralph().run().expect_code(0);
    assert_eq!(p.read("out.txt"), "hello from claude\n");
    assert_eq!(p.events("attempt_started").len(), 1);
    let session = p.checkpoint()["progress"]["sessions"]["claude"].clone();
    assert!(session.as_str().is_some_and(|s| s.len() > 8), "the session id Claude reported: {session}");
    let requests = provider.message_requests();
    assert_eq!(requests.len(), 2, "the tool call, then the answer after its result");
    assert_eq!(requests[0].body["model"], json!("claude-sonnet-4-5"), "the configured model is passed");
}

#[test]
fn a_retry_resumes_the_session_claude_reported() {
    let provider = FakeProvider::start(vec![
        Reply::Text("I looked at the code; continuing next.".into()),
        Reply::Text("Finished and verified.\n\n<promise>DONE</promise>".into()),
    ]);
    let Some(p) = project(&provider, "", "") else { return };
    p.ralph().run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["rule"], json!("no_done_signal"));
    let first_session = failed[0]["session"].as_str().expect("session of attempt 1").to_string();
    let started = p.events("attempt_started");
    assert_eq!(started[1]["resume_session"], json!(first_session));
    // The resumed request carried the earlier conversation.
    let requests = provider.message_requests();
    let last = requests.last().expect("requests");
    let messages = last.body["messages"].as_array().map_or(0, Vec::len);
    assert!(messages >= 3, "the resumed session re-sent its history ({messages} messages)");
}

#[test]
fn overloaded_then_recovered_costs_no_budget() {
    let provider = FakeProvider::start(vec![Reply::overloaded(), Reply::overloaded(), Reply::overloaded()])
        .fallback(Reply::Text("All good now.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    p.ralph().run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert!(!failed.is_empty());
    assert!(failed.iter().all(|f| f["category"] == json!("environmental")), "{failed:#?}");
    assert_eq!(p.checkpoint()["progress"]["counters"]["agent_failures"], json!(0));
}

#[test]
fn bad_credentials_block_at_once() {
    let provider = FakeProvider::start(Vec::new()).fallback(Reply::unauthorized());
    let Some(p) = project(&provider, "", "") else { return };
    p.ralph().run().expect_code(3);
    assert_eq!(p.checkpoint()["status"], json!("blocked"));
    let failed = p.events("attempt_failed");
    assert_eq!((failed.len(), failed[0]["category"].clone()), (1, json!("user_config")));
}

#[test]
fn a_stalled_provider_stream_is_cut_by_ralph() {
    let provider = FakeProvider::start(Vec::new()).fallback(Reply::Text("Back.\n\n<promise>DONE</promise>".into()));
    let Some(_) = real_cli::a_stalled_stream_is_cut(&provider, Reply::StallAfterFirstEvent, project) else { return };
    assert!(!provider.message_requests().is_empty(), "the stall came from the provider's stream");
}

#[test]
fn a_stream_reset_mid_response_is_recovered() {
    let provider = FakeProvider::start(vec![Reply::ResetMidStream])
        .fallback(Reply::Text("Recovered.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    p.ralph().run().expect_code(0);
    // Claude may recover on its own (it falls back to a non-streaming request); if it
    // gives up, the failure must not use the budget.
    assert!(p.events("attempt_failed").iter().all(|f| f["category"] == json!("environmental")));
}

/// Captures what the real Claude Code prints for each provider failure into
/// `tests/corpus/errors/claude/captured_*.txt`, the classifier's corpus. Run by hand
/// after changing the pinned version:
/// `cargo test --test integration capture_claude_corpus -- --ignored`.
#[test]
#[ignore = "writes the corpus; run by hand"]
fn capture_claude_corpus() {
    let Some(claude) = real_cli::find("claude") else { return };
    let version = std::process::Command::new(&claude).arg("--version").output().expect("claude --version");
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_port = closed.local_addr().expect("addr").port();
    drop(closed);
    let cases: Vec<(&str, Option<Reply>, &str)> = vec![
        ("overloaded_529", Some(Reply::overloaded()), "environmental provider_overloaded"),
        ("server_500", Some(Reply::server_error()), "environmental provider_error"),
        ("rate_limit_429", Some(Reply::rate_limited(1)), "environmental rate_limited"),
        ("auth_401", Some(Reply::unauthorized()), "user_config auth_failed"),
        ("connection_refused", None, "environmental connection_refused"),
    ];
    for (name, reply, expect) in cases {
        let (url, _provider) = match reply {
            Some(r) => {
                let provider = FakeProvider::start(Vec::new()).fallback(r);
                (provider.base_url(), Some(provider))
            }
            None => (format!("http://127.0.0.1:{closed_port}"), None),
        };
        let work = tempfile::tempdir().expect("tmp");
        let out = std::process::Command::new(&claude)
            .args(["-p", "say hello", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5"])
            .current_dir(work.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", work.path())
            .env("ANTHROPIC_BASE_URL", &url)
            .env("ANTHROPIC_API_KEY", "dummy-key")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("CLAUDE_CODE_MAX_RETRIES", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run claude");
        let stdout = String::from_utf8_lossy(&out.stdout).replace(&work.path().display().to_string(), "/tmp/ws");
        let host_port = url.trim_start_matches("http://").to_string();
        let stdout = stdout.replace(&host_port, "127.0.0.1:PORT");
        let text = format!(
            "# expect: {expect}\n# exit: {}\n# origin: captured from {version} against tests/integration/fake_provider.rs with CLAUDE_CODE_MAX_RETRIES=0 (cargo test --test integration capture_claude_corpus -- --ignored)\n--- stdout\n{stdout}--- stderr\n{}",
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr)
        );
        let path = format!("{}/tests/corpus/errors/claude/captured_{name}.txt", env!("CARGO_MANIFEST_DIR"));
        std::fs::write(&path, text).expect("write the corpus file");
    }
}

#[test]
fn a_prompt_starting_with_a_dash_is_a_prompt_not_an_option() {
    let provider = FakeProvider::start(Vec::new()).fallback(Reply::Text("Done.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "", "") else { return };
    let config = p.read("ralph.toml").replace("chain = \"main\"\n", "chain = \"main\"\nprompt = \"dash.md\"\n");
    let p = p.config(&config).file("dash.md", "--- a template that starts like an option\n{{goal}}\n{{done}}\n");
    p.ralph().run().expect_code(0);
    let first = provider.message_requests().into_iter().next().expect("a request");
    assert!(first.body.to_string().contains("a template that starts like an option"));
}

#[test]
fn a_flag_the_cli_rejects_is_the_users_to_fix_and_names_the_version() {
    // As after an update that renamed a flag ralph passes: one attempt, exit 3,
    // both versions named, no budget burnt on retries.
    let provider = FakeProvider::start(Vec::new());
    let Some(p) = project(&provider, "agent_attempts = 5", "") else { return };
    let config = p.read("ralph.toml").replace(
        "model = \"claude-sonnet-4-5\"",
        "model = \"claude-sonnet-4-5\"\nargs = [\"--no-such-flag-in-any-version\"]",
    );
    p.write("ralph.toml", &config);
    p.ralph()
        .run()
        .expect_code(3)
        .stderr_has("rejected an argument ralph passes")
        .stderr_has("ralph was tested with 2.1.197");
    assert_eq!(p.events("attempt_started").len(), 1);
    assert_eq!(p.events("attempt_failed")[0]["rule"], json!("cli_rejected_argument"));
    assert!(provider.message_requests().is_empty());
}

#[test]
fn a_prompt_longer_than_an_argument_reaches_claude_on_stdin() {
    let provider = FakeProvider::start(vec![Reply::Text("Read it all.\n\n<promise>DONE</promise>".into())]);
    let Some(p) = project(&provider, "", "") else { return };
    real_cli::give_a_long_goal(&p);
    p.ralph().run().expect_code(0);
    real_cli::assert_the_whole_goal_reached_the_model(provider.message_requests().into_iter().map(|r| r.body));
}

/// ralph registers `ralph mcp` with Claude Code for the attempt; the provider
/// answers with a call of `declare_complete`, Claude runs it through `ralph mcp`, and
/// the `done = "mcp"` phase completes by it.
#[test]
fn claude_completes_a_done_mcp_phase_through_ralph_mcp() {
    let provider = FakeProvider::start(Vec::new());
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    real_cli::done_by_mcp(&p, None);
    provider.then(vec![
        Reply::Tool {
            name: "mcp__ralph__declare_complete".into(),
            input: json!({"summary": "nothing to build", "evidence": real_cli::EVIDENCE}),
        },
        Reply::Text("Declared.".into()),
    ]);
    let out = p.ralph().run();
    let declared = real_cli::assert_completed_through_mcp(&p, &out, &format!("{:#?}", p.journal()));
    assert_eq!(declared[0]["evidence"], json!(real_cli::EVIDENCE));
    // The tool's answer went back to the model.
    let requests = provider.message_requests();
    let last = requests.last().expect("requests").body.to_string();
    assert!(last.contains("completion recorded"), "{last}");
}

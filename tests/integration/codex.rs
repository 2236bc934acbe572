//! The real Codex CLI (pinned, from npm) driven by ralph against the fake OpenAI
//! Responses provider on 127.0.0.1: a full run whose `exec_command` call writes a
//! file, a resume of the thread the CLI reported, and provider failures ending in the
//! category design.md §4 gives them.

use serde_json::{Value, json};

use crate::fake_openai::{FakeOpenAi, Reply};
use crate::harness::Project;
use crate::real_cli;

/// A project whose only agent is the real `codex`, pointed at `provider` through its
/// own `CODEX_HOME/config.toml` (and its own HOME), with Codex's own retries off so
/// that ralph's policy decides.
fn project(provider: &FakeOpenAi, retry: &str, timeouts: &str) -> Option<Project> {
    let codex = crate::real_cli::find("codex")?;
    let p = Project::new();
    let home = p.join(".home");
    let codex_home = p.join(".home/codex");
    std::fs::create_dir_all(&codex_home).expect("codex home");
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            r#"model = "gpt-5-codex"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "{url}"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
unbounded_connection_retries = false
"#,
            url = provider.base_url()
        ),
    )
    .expect("config.toml");
    let table = format!(
        r#"kind = "codex"
model = "gpt-5-codex"
binary = "{codex}"
env = {{ CODEX_HOME = "{codex_home}", FAKE_API_KEY = "dummy-key", HOME = "{home}" }}"#,
        codex = codex.display(),
        codex_home = codex_home.display(),
        home = home.display(),
    );
    // A CLI's start-up on a loaded machine outlasts the fast tests' 3 s stall limit.
    let timeouts = if timeouts.is_empty() { real_cli::STALL } else { timeouts };
    Some(crate::real_cli::configure(p, "codex", &table, retry, timeouts))
}

/// The items of a request's `input` of the given type.
fn inputs<'a>(request: &'a Value, kind: &str) -> Vec<&'a Value> {
    request["input"].as_array().map(|items| items.iter().filter(|i| i["type"] == kind).collect()).unwrap_or_default()
}

#[test]
fn a_full_run_through_codex_writes_the_file_of_its_tool_call() {
    let provider = FakeOpenAi::start(vec![
        Reply::Exec { cmd: "printf 'hello from codex\\n' > out.txt".into() },
        Reply::Text("Wrote it.\n\n<promise>DONE</promise>".into()),
    ]);
    let Some(p) = project(&provider, "", "") else { return };
    p.ralph().run().expect_code(0);
    assert_eq!(p.read("out.txt"), "hello from codex\n");
    assert_eq!(p.events("attempt_started").len(), 1);
    let session = p.checkpoint()["progress"]["sessions"]["codex"].clone();
    assert!(session.as_str().is_some_and(|s| s.len() > 8), "the thread id Codex reported: {session}");
    let requests = provider.response_requests();
    assert_eq!(requests.len(), 2, "the tool call, then the answer after its output");
    assert_eq!(requests[0].body["model"], json!("gpt-5-codex"), "the configured model is passed");
    assert_eq!(requests[0].body["stream"], json!(true));
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(tools.contains(&"exec_command"), "Codex offers exec_command: {tools:?}");
    let outputs = inputs(&requests[1].body, "function_call_output");
    assert_eq!(outputs.len(), 1, "the tool output went back to the model");
    assert_eq!(outputs[0]["call_id"], json!("call_1"));
    // The journal saw the tool call through the Codex parser.
    let text = p.attempt_log(1);
    assert!(text.contains("\"command_execution\""), "{text}");
}

#[test]
fn a_retry_resumes_the_thread_codex_reported() {
    let provider = FakeOpenAi::start(vec![
        Reply::Text("I looked at the code; continuing next.".into()),
        Reply::Text("Finished and verified.\n\n<promise>DONE</promise>".into()),
    ]);
    let Some(p) = project(&provider, "", "") else { return };
    p.ralph().run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["rule"], json!("no_done_signal"), "{failed:#?}");
    let first_session = failed[0]["session"].as_str().expect("session of attempt 1").to_string();
    let started = p.events("attempt_started");
    assert_eq!(started[1]["resume_session"], json!(first_session));
    assert_eq!(p.checkpoint()["progress"]["sessions"]["codex"], json!(first_session), "resume keeps the thread id");
    // Codex reports usage as a running total over the thread; each turn's own tokens
    // are counted once.
    let per_turn = p.events("attempt_failed")[0]["usage"]["input_tokens"].as_u64().expect("usage");
    assert_eq!(p.checkpoint()["usage"]["input_tokens"], json!(per_turn * 2), "usage counted twice after resume");
    // The resumed request carried the earlier conversation.
    let requests = provider.response_requests();
    assert_eq!(requests.len(), 2);
    let history = inputs(&requests[1].body, "message");
    assert!(
        history.iter().any(|m| m["role"] == "assistant" && m.to_string().contains("continuing next")),
        "the resumed thread re-sent its history: {history:#?}"
    );
}

#[test]
fn overloaded_then_recovered_costs_no_budget() {
    let provider = FakeOpenAi::start(vec![Reply::overloaded(), Reply::overloaded(), Reply::overloaded()])
        .fallback(Reply::Text("All good now.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    p.ralph().run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 3, "one failed attempt per 529 (Codex's own retries are off): {failed:#?}");
    assert!(failed.iter().all(|f| f["category"] == json!("environmental")), "{failed:#?}");
    assert_eq!(p.checkpoint()["progress"]["counters"]["agent_failures"], json!(0));
}

#[test]
fn bad_credentials_block_at_once() {
    let provider = FakeOpenAi::start(Vec::new()).fallback(Reply::unauthorized());
    let Some(p) = project(&provider, "", "") else { return };
    p.ralph().run().expect_code(3);
    assert_eq!(p.checkpoint()["status"], json!("blocked"));
    let failed = p.events("attempt_failed");
    assert_eq!((failed.len(), failed[0]["category"].clone()), (1, json!("user_config")), "{failed:#?}");
    assert_eq!(provider.response_requests().len(), 1, "no retry of a 401");
}

#[test]
fn a_stalled_provider_stream_is_cut_by_ralph() {
    let provider = FakeOpenAi::start(Vec::new()).fallback(Reply::Text("Back.\n\n<promise>DONE</promise>".into()));
    let Some(_) = real_cli::a_stalled_stream_is_cut(&provider, Reply::StallAfterFirstEvent, project) else { return };
    assert!(!provider.response_requests().is_empty(), "the stall came from the provider's stream");
}

#[test]
fn a_prompt_longer_than_an_argument_reaches_codex_on_stdin() {
    let provider = FakeOpenAi::start(vec![Reply::Text("Read it all.\n\n<promise>DONE</promise>".into())]);
    let Some(p) = project(&provider, "", "") else { return };
    crate::real_cli::give_a_long_goal(&p);
    p.ralph().run().expect_code(0);
    let bodies = provider.response_requests().into_iter().map(|r| r.body);
    crate::real_cli::assert_the_whole_goal_reached_the_model(bodies);
}

/// ralph registers `ralph mcp` with Codex for the attempt (`-c mcp_servers.ralph.*`);
/// the provider answers with a call of `declare_complete`, Codex runs it through
/// `ralph mcp`, and the `done = "mcp"` phase completes by it.
#[test]
fn codex_completes_a_done_mcp_phase_through_ralph_mcp() {
    let provider = FakeOpenAi::start(vec![
        Reply::Call {
            namespace: Some("mcp__ralph".into()),
            name: "declare_complete".into(),
            arguments: json!({"summary": "nothing to build", "evidence": crate::real_cli::EVIDENCE}),
        },
        Reply::Text("Declared.".into()),
    ]);
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    crate::real_cli::done_by_mcp(&p, Some("10s"));
    let out = p.ralph().run();
    let requests = provider.response_requests();
    let offered = requests.first().map(|r| r.body["tools"].to_string()).unwrap_or_default();
    assert!(offered.contains("\"mcp__ralph\"") && offered.contains("declare_complete"), "{offered}");
    crate::real_cli::assert_completed_through_mcp(&p, &out, &format!("{:#?}", p.events("attempt_failed")));
    let outputs = requests.get(1).map(|r| r.body["input"].to_string()).unwrap_or_default();
    assert!(outputs.contains("completion recorded"), "the tool's answer went back to the model: {outputs}");
}

//! The real OpenCode CLI (pinned, from npm) driven by ralph against the fake OpenAI
//! Chat Completions provider on 127.0.0.1: a full run whose `write` tool call
//! creates a file, a resume in the session the CLI reported, and provider failures
//! ending in the category design.md §4 gives them.
//!
//! OpenCode prints nothing for its first ~5 s (longer on a busy machine) and nothing
//! while a part is being written, so these tests give the stall guard a minute
//! unless they test it, and every run a generous wall clock.

use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_chat::{ChatReply, FakeChat};
use crate::harness::{Output, Project};
use crate::real_cli;

/// Wall clock of one ralph run through OpenCode: it only bounds a hang.
const RUN_LIMIT: Duration = real_cli::RUN_LIMIT;

/// OpenCode's config: the fake provider as an `@ai-sdk/openai-compatible` provider,
/// a main and a title model, edits and shell commands allowed without asking, no
/// sharing or auto-update. The provider's own timeouts are long so that ralph's
/// stall guard is what cuts a silent stream.
fn opencode_config(provider: &FakeChat) -> Value {
    json!({
        "$schema": "https://opencode.ai/config.json",
        "model": "fake/fake-model",
        "small_model": "fake/fake-small",
        "autoupdate": false,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny", "external_directory": "allow"},
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {
                    "baseURL": provider.base_url(),
                    "apiKey": "dummy-key",
                    "timeout": 300_000,
                    "chunkTimeout": 300_000,
                    "headerTimeout": 60_000
                },
                "models": {
                    "fake-model": {"name": "Fake model", "tool_call": true,
                                   "limit": {"context": 128_000, "output": 8_000}},
                    "fake-small": {"name": "Fake small model", "tool_call": false,
                                   "limit": {"context": 128_000, "output": 1_000}}
                }
            }
        }
    })
}

/// A project whose only agent is the real `opencode`, pointed at `provider`, with
/// its own HOME, XDG directories, TMPDIR and config file so nothing on the machine
/// leaks in (and OpenCode's per-run files in TMPDIR go away with the project).
fn project(provider: &FakeChat, retry: &str, timeouts: &str) -> Option<Project> {
    let opencode = real_cli::find("opencode")?;
    let p = Project::new();
    let dir = |rel: &str| {
        let d = p.join(&format!(".oc/{rel}"));
        std::fs::create_dir_all(&d).expect("isolation dir");
        d.display().to_string()
    };
    let (home, config, data, cache, state, tmp) =
        (dir("home"), dir("config"), dir("data"), dir("cache"), dir("state"), dir("tmp"));
    let config_file = p.join(".oc/opencode.json");
    std::fs::write(&config_file, opencode_config(provider).to_string()).expect("opencode.json");
    let table = format!(
        r#"kind = "opencode"
model = "fake/fake-model"
binary = "{opencode}"
env = {{ HOME = "{home}", XDG_CONFIG_HOME = "{config}", XDG_DATA_HOME = "{data}", XDG_CACHE_HOME = "{cache}", XDG_STATE_HOME = "{state}", TMPDIR = "{tmp}", OPENCODE_CONFIG = "{config_file}", NO_PROXY = "127.0.0.1,localhost" }}"#,
        opencode = opencode.display(),
        config_file = config_file.display(),
    );
    let timeouts = format!("{}\n{timeouts}", real_cli::STALL);
    Some(real_cli::configure(p, "opencode", &table, retry, &timeouts))
}

fn run(p: &Project) -> Output {
    p.ralph().timeout(RUN_LIMIT).run()
}

/// The text of the chat messages with `role`, flattened.
fn messages_of(request: &Value, role: &str) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == role)
        .map(|m| m["content"].to_string())
        .collect()
}

#[test]
fn a_full_run_through_opencode_writes_the_file_of_its_tool_call() {
    let provider = FakeChat::start(Vec::new());
    let Some(p) = project(&provider, "", "") else { return };
    // The write tool takes an absolute path, known once the project exists.
    let target = p.join("out.txt").display().to_string();
    provider.then(vec![
        ChatReply::Write { path: target, content: "hello from opencode\n".into() },
        ChatReply::Text("Wrote it.\n\n<promise>DONE</promise>".into()),
    ]);
    run(&p).expect_code(0);
    assert_eq!(p.read("out.txt"), "hello from opencode\n");
    assert_eq!(p.events("attempt_started").len(), 1);
    let session = p.checkpoint()["progress"]["sessions"]["opencode"].clone();
    assert!(session.as_str().is_some_and(|s| s.starts_with("ses_")), "the session id OpenCode reported: {session}");
    let requests = provider.chat_requests();
    assert_eq!(requests.len(), 2, "the tool call, then the answer after its result");
    assert_eq!(requests[0].body["model"], json!("fake-model"), "the configured model is passed");
    assert!(
        messages_of(&requests[1].body, "tool").iter().any(|m| m.contains("Wrote file successfully")),
        "the tool result went back to the model: {:#?}",
        requests[1].body["messages"]
    );
    // Per-step usage adds up: 100 + 150 input, 20 + 10 output tokens.
    let usage = &p.checkpoint()["phase_usage"]["develop"];
    assert_eq!((usage["input_tokens"].clone(), usage["output_tokens"].clone()), (json!(250), json!(30)), "{usage}");
}

#[test]
fn a_retry_resumes_the_session_opencode_reported() {
    let provider = FakeChat::start(vec![
        ChatReply::Text("I looked at the code; continuing next.".into()),
        ChatReply::Text("Finished and verified.\n\n<promise>DONE</promise>".into()),
    ]);
    let Some(p) = project(&provider, "", "") else { return };
    run(&p).expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["rule"], json!("no_done_signal"), "{failed:#?}");
    let first_session = failed[0]["session"].as_str().expect("session of attempt 1").to_string();
    assert!(first_session.starts_with("ses_"), "{first_session}");
    let started = p.events("attempt_started");
    assert_eq!(started[1]["resume_session"], json!(first_session));
    assert!(p.attempt_log(2).contains(&first_session), "attempt 2 ran in the same session");
    // The resumed request carried the earlier conversation.
    let requests = provider.chat_requests();
    let last = requests.last().expect("requests");
    assert!(
        messages_of(&last.body, "assistant").iter().any(|m| m.contains("continuing next")),
        "the resumed session re-sent its history: {:#?}",
        last.body["messages"]
    );
}

#[test]
fn overloaded_then_recovered_costs_no_budget() {
    // OpenCode retries a 529 five times on its own: six requests fail one attempt.
    let provider = FakeChat::start(vec![ChatReply::overloaded(); 6])
        .fallback(ChatReply::Text("All good now.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    run(&p).expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["category"], json!("environmental"), "{failed:#?}");
    assert_eq!(p.checkpoint()["progress"]["counters"]["agent_failures"], json!(0));
    assert!(provider.chat_requests().len() >= 7, "OpenCode's own retries, then the next attempt");
}

#[test]
fn bad_credentials_block_at_once() {
    let provider = FakeChat::start(Vec::new()).fallback(ChatReply::unauthorized());
    let Some(p) = project(&provider, "", "") else { return };
    run(&p).expect_code(3);
    assert_eq!(p.checkpoint()["status"], json!("blocked"));
    let failed = p.events("attempt_failed");
    assert_eq!((failed.len(), failed[0]["category"].clone()), (1, json!("user_config")), "{failed:#?}");
    assert_eq!(provider.chat_requests().len(), 1, "OpenCode does not retry a 401");
}

#[test]
fn a_stalled_provider_stream_is_cut_by_ralph() {
    let provider = FakeChat::start(Vec::new()).fallback(ChatReply::Text("Back.\n\n<promise>DONE</promise>".into()));
    // The stall limit is long enough for OpenCode to start on this machine now, short
    // next to its own five-minute chunk timeout. OpenCode's tools run unseen, so its
    // silence limit is the larger of `stall` and `tool`: both are set.
    let stall_and_tool = |provider: &FakeChat, retry: &str, timeouts: &str| {
        project(provider, retry, &format!("{timeouts}\n{}", timeouts.replace("stall", "tool")))
    };
    let Some(_) = real_cli::a_stalled_stream_is_cut(&provider, ChatReply::StallAfterFirstChunk, stall_and_tool) else {
        return;
    };
    assert!(!provider.chat_requests().is_empty(), "the stall came from the provider's stream");
}

/// OpenCode ignores SIGINT; ralph's stop starts at SIGTERM for it, so Ctrl+C does not
/// cost a whole grace period.
#[test]
fn ctrl_c_ends_opencode_without_waiting_out_the_grace() {
    let provider = FakeChat::start(vec![ChatReply::StallAfterFirstChunk]);
    let Some(p) = project(&provider, "", "grace = \"60s\"") else { return };
    let run = p.ralph().timeout(RUN_LIMIT).spawn();
    p.wait_for_checkpoint(|cp| cp["in_flight"].is_object(), Duration::from_secs(60));
    // Let OpenCode get as far as the provider's stalled stream.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while provider.chat_requests().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    run.signal(nix::sys::signal::Signal::SIGINT);
    let out = run.wait(Duration::from_secs(30));
    out.expect_code(130);
    assert_eq!(p.checkpoint()["status"], json!("paused"));
}

#[test]
fn a_prompt_longer_than_an_argument_reaches_opencode_on_stdin() {
    let provider = FakeChat::start(vec![ChatReply::Text("Read it all.\n\n<promise>DONE</promise>".into())]);
    let Some(p) = project(&provider, "", "") else { return };
    real_cli::give_a_long_goal(&p);
    run(&p).expect_code(0);
    real_cli::assert_the_whole_goal_reached_the_model(provider.chat_requests().into_iter().map(|r| r.body));
}

#[test]
fn the_cost_cap_stops_the_attempt_in_progress() {
    // OpenCode reports its cost per step: a step that costs $1 (100 input tokens at
    // $10,000 per million) ends the attempt under a $0.60 cap, before it finishes.
    let provider = FakeChat::start(Vec::new());
    let Some(p) = project(&provider, "", "") else { return };
    let mut config: Value = serde_json::from_str(&p.read(".oc/opencode.json")).expect("opencode.json");
    config["provider"]["fake"]["models"]["fake-model"]["cost"] = json!({"input": 10_000, "output": 0});
    p.write(".oc/opencode.json", &config.to_string());
    let toml = p.read("ralph.toml");
    p.write("ralph.toml", &format!("{toml}\n[general]\nmax_cost_usd = 0.6\n"));
    let target = p.join("out.txt").display().to_string();
    provider.then(vec![
        ChatReply::Write { path: target.clone(), content: "one\n".into() },
        ChatReply::Write { path: target.clone(), content: "two\n".into() },
        ChatReply::Write { path: target, content: "three\n".into() },
        ChatReply::Text("Wrote it.\n\n<promise>DONE</promise>".into()),
    ]);
    run(&p).expect_code(1).stderr_has("the limit [general] max_cost_usd was reached");
    assert_eq!(p.events("attempt_started").len(), 1);
    let interventions = p.events("intervention");
    assert!(interventions.iter().any(|e| e["detector"] == json!("max_cost_usd")), "{interventions:#?}");
    let cost = p.checkpoint()["usage"]["cost_usd"].as_f64().unwrap_or(0.0);
    assert!((0.6..3.0).contains(&cost), "one step may overshoot the cap, not the whole attempt: ${cost}");
}

/// ralph registers `ralph mcp` with OpenCode for the attempt
/// (`OPENCODE_CONFIG_CONTENT`); the provider answers with a call of
/// `ralph_declare_complete`, OpenCode runs it through `ralph mcp`, and the
/// `done = "mcp"` phase completes by it.
#[test]
fn opencode_completes_a_done_mcp_phase_through_ralph_mcp() {
    let provider = FakeChat::start(Vec::new());
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    real_cli::done_by_mcp(&p, Some("60s"));
    provider.then(vec![
        ChatReply::Call {
            name: "ralph_declare_complete".into(),
            arguments: serde_json::json!({"summary": "nothing to build", "evidence": real_cli::EVIDENCE}),
        },
        ChatReply::Text("Declared.".into()),
    ]);
    let out = run(&p);
    let requests = provider.requests();
    let offered = requests.iter().map(|r| r.body["tools"].to_string()).find(|t| t.contains("declare_complete"));
    let why = format!("offered: {offered:?}\n{:#?}", p.events("attempt_failed"));
    real_cli::assert_completed_through_mcp(&p, &out, &why);
}

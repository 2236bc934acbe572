//! The real Gemini CLI (pinned, from npm) driven by ralph against the fake Gemini API
//! on 127.0.0.1: a full run whose tool call writes a file, a resume in the session
//! the CLI reported, and provider failures ending in the category design.md §4 gives
//! them.

use std::time::Duration;

use serde_json::json;

use crate::fake_gemini::{FakeGemini, Reply};
use crate::harness::Project;
use crate::real_cli;

/// Failed Gemini runs take ~5 s each at rest (the CLI lingers after its error
/// result); the limit only bounds a hang.
const RUN_LIMIT: Duration = real_cli::RUN_LIMIT;

/// What `$HOME/.gemini/settings.json` holds for every test: API-key auth without a
/// login, no folder-trust prompt, no statistics, telemetry or update checks, and one
/// request per API call so ralph's own policy decides every retry.
const SETTINGS: &str = r#"{
  "security": { "auth": { "selectedType": "gemini-api-key" }, "folderTrust": { "enabled": false } },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "enableAutoUpdate": false, "maxAttempts": 1 }
}
"#;

/// A project whose only agent is the real `gemini`, pointed at `provider`, with its
/// own HOME (and TMPDIR) so nothing on the machine leaks in.
fn project(provider: &FakeGemini, retry: &str, timeouts: &str) -> Option<Project> {
    let gemini = real_cli::find("gemini")?;
    let p = Project::new();
    let home = p.join(".home");
    let tmp = home.join("tmp");
    std::fs::create_dir_all(home.join(".gemini")).expect("home");
    std::fs::create_dir_all(&tmp).expect("tmp");
    std::fs::write(home.join(".gemini").join("settings.json"), SETTINGS).expect("settings");
    let table = format!(
        r#"kind = "gemini"
model = "gemini-2.5-flash"
binary = "{gemini}"
env = {{ GOOGLE_GEMINI_BASE_URL = "{url}", GEMINI_API_KEY = "dummy", HOME = "{home}", TMPDIR = "{tmp}" }}"#,
        gemini = gemini.display(),
        url = provider.base_url(),
        home = home.display(),
        tmp = tmp.display(),
    );
    // Gemini prints nothing for its first 1.5–4 s at rest (it starts, then relaunches
    // itself with a larger heap), 27 s seen on a loaded machine: the harness's 3 s
    // stall would cut a slow start.
    let timeouts =
        if timeouts.contains("stall") { timeouts.to_string() } else { format!("{}\n{timeouts}", real_cli::STALL) };
    Some(real_cli::configure(p, "gemini", &table, retry, &timeouts))
}

#[test]
fn a_full_run_through_gemini_writes_the_file_of_its_tool_call() {
    let provider = FakeGemini::start(Vec::new());
    let Some(p) = project(&provider, "", "") else { return };
    let target = p.join("out.txt").display().to_string();
    provider.then(vec![
        Reply::Write { path: target, content: "hello from gemini\n".into() },
        Reply::Text("Wrote it.\n\n<promise>DONE</promise>".into()),
    ]);
    p.ralph().timeout(RUN_LIMIT).run().expect_code(0);
    assert_eq!(p.read("out.txt"), "hello from gemini\n");
    assert_eq!(p.events("attempt_started").len(), 1, "{:#?}", p.events("attempt_failed"));
    let session = p.checkpoint()["progress"]["sessions"]["gemini"].clone();
    assert!(session.as_str().is_some_and(|s| s.len() == 36), "the session id Gemini reported: {session}");
    let requests = provider.content_requests();
    assert_eq!(requests.len(), 2, "the tool call, then the answer after its result: {requests:#?}");
    assert!(
        requests[0].path.starts_with("/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
        "the configured model is asked: {}",
        requests[0].path
    );
    assert_eq!(requests[0].header("x-goog-api-key"), Some("dummy"));
    assert!(requests[0].tools().iter().any(|t| t == "write_file"), "{:?}", requests[0].tools());
    let answered = requests[1].body["contents"].to_string();
    assert!(answered.contains("functionResponse"), "the tool result went back: {answered}");
}

#[test]
fn a_retry_resumes_the_session_gemini_reported() {
    let provider = FakeGemini::start(vec![
        Reply::Text("I looked at the code; continuing next.".into()),
        Reply::Text("Finished and verified.\n\n<promise>DONE</promise>".into()),
    ]);
    let Some(p) = project(&provider, "", "") else { return };
    p.ralph().timeout(RUN_LIMIT).run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["rule"], json!("no_done_signal"), "{failed:#?}");
    let first_session = failed[0]["session"].as_str().expect("session of attempt 1").to_string();
    let started = p.events("attempt_started");
    assert_eq!(started[1]["resume_session"], json!(first_session));
    assert_eq!(p.checkpoint()["progress"]["sessions"]["gemini"], json!(first_session), "the same id on resume");
    // The resumed request carried the earlier conversation.
    let requests = provider.content_requests();
    let last = requests.last().expect("requests");
    let contents = last.body["contents"].as_array().map_or(0, Vec::len);
    assert!(contents >= 3, "the resumed session re-sent its history ({contents} contents)");
    assert!(last.body["contents"].to_string().contains("continuing next"), "the first answer is in the history");
}

#[test]
fn overloaded_then_recovered_costs_no_budget() {
    let provider = FakeGemini::start(vec![Reply::overloaded(), Reply::overloaded()])
        .fallback(Reply::Text("All good now.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    p.ralph().timeout(RUN_LIMIT).run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 2, "{failed:#?}");
    assert!(failed.iter().all(|f| f["category"] == json!("environmental")), "{failed:#?}");
    assert_eq!(p.checkpoint()["progress"]["counters"]["agent_failures"], json!(0));
    // maxAttempts = 1: one request per attempt, no retries of Gemini's own.
    assert_eq!(provider.content_requests().len(), 3);
}

#[test]
fn bad_credentials_block_at_once() {
    let provider = FakeGemini::start(Vec::new()).fallback(Reply::unauthorized());
    let Some(p) = project(&provider, "", "") else { return };
    p.ralph().timeout(RUN_LIMIT).run().expect_code(3);
    assert_eq!(p.checkpoint()["status"], json!("blocked"));
    let failed = p.events("attempt_failed");
    assert_eq!((failed.len(), failed[0]["category"].clone()), (1, json!("user_config")), "{failed:#?}");
}

#[test]
fn a_stalled_provider_stream_is_cut_by_ralph() {
    let provider = FakeGemini::start(Vec::new()).fallback(Reply::Text("Back.\n\n<promise>DONE</promise>".into()));
    let Some(p) = real_cli::a_stalled_stream_is_cut(&provider, Reply::StallAfterFirstChunk, project) else { return };
    assert!(!provider.content_requests().is_empty(), "the stall came from the provider's stream");
    // Nothing was kept of the stalled session: the next attempt starts afresh
    // instead of failing a `--resume` (exit 42; a stall of a slow start-up on a
    // loaded machine comes first at most, and it has no session either).
    let started = p.events("attempt_started");
    assert!(started.iter().skip(1).all(|s| s["resume_session"] == json!(null)), "{started:#?}");
}

#[test]
fn a_stream_reset_mid_response_is_not_done_though_gemini_exits_0() {
    let provider = FakeGemini::start(vec![Reply::ResetMidStream])
        .fallback(Reply::Text("Recovered.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    p.ralph().timeout(RUN_LIMIT).run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1, "the reset attempt failed although Gemini exited 0: {failed:#?}");
    assert_eq!(failed[0]["category"], json!("environmental"), "{failed:#?}");
    assert_eq!(p.checkpoint()["progress"]["counters"]["agent_failures"], json!(0));
}

#[test]
fn a_prompt_longer_than_an_argument_reaches_gemini_on_stdin() {
    // Every content request gets the answer: a side request of the CLI (a retry of a
    // slow first turn on a loaded machine) must not take the one scripted reply.
    let provider =
        FakeGemini::start(Vec::new()).fallback(Reply::Text("Read it all.\n\n<promise>DONE</promise>".into()));
    let Some(p) = project(&provider, "", "") else { return };
    real_cli::give_a_long_goal(&p);
    p.ralph().timeout(RUN_LIMIT).run().expect_code(0);
    real_cli::assert_the_whole_goal_reached_the_model(provider.content_requests().into_iter().map(|r| r.body));
}

/// ralph registers `ralph mcp` with Gemini for the attempt (a system settings file
/// of its own, `GEMINI_CLI_SYSTEM_SETTINGS_PATH`); the provider answers with a call
/// of `declare_complete`, Gemini runs it through `ralph mcp`, and the
/// `done = "mcp"` phase completes by it.
#[test]
fn gemini_completes_a_done_mcp_phase_through_ralph_mcp() {
    let provider = FakeGemini::start(Vec::new());
    let Some(p) = project(&provider, "agent_attempts = 1", "") else { return };
    real_cli::done_by_mcp(&p, Some("60s"));
    provider.then(vec![
        Reply::Call {
            name: "mcp_ralph_declare_complete".into(),
            args: json!({"summary": "nothing to build", "evidence": real_cli::EVIDENCE}),
        },
        Reply::Text("Declared.".into()),
    ]);
    let out = p.ralph().run();
    let offered =
        provider.requests().iter().any(|r| r.body["tools"].to_string().contains("mcp_ralph_declare_complete"));
    assert!(offered, "Gemini offers the tool as mcp_ralph_declare_complete");
    real_cli::assert_completed_through_mcp(&p, &out, &format!("{:#?}", p.events("attempt_failed").first()));
    // The user's own settings file was not touched.
    assert!(!p.read(".home/.gemini/settings.json").contains("ralph"));
}

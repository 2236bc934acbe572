//! Rate and usage limits, provider outages and the run-wide caps: what the recovery
//! engine does that costs no budget, and every cap ending a run with its own message.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::json;

use crate::harness::{Project, count, fast, sim_project};

/// A loopback port that nothing listens on (until the test opens it).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `[offline]` probing `port` every 200 ms, each probe bounded by `timeout`.
fn offline(port: u16, timeout: &str) -> String {
    format!("[offline]\nprobe = [\"127.0.0.1:{port}\"]\ninterval = \"200ms\"\ntimeout = \"{timeout}\"")
}

#[test]
fn a_usage_limit_waits_for_the_reported_reset_then_completes_without_budget() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .sim(
            "a",
            &[
                r#"[{ rate_limit = "2s" }, { error = "Claude AI usage limit reached" }]"#,
                r#"[{ done = "Finished after the reset." }]"#,
            ],
        )
        .build();
    let out = p.ralph().run();
    out.expect_code(0);
    let waits = p.events("rate_limit_wait");
    assert_eq!(waits.len(), 1, "{}", out.stderr);
    let until = waits[0]["until"].as_i64().expect("until");
    let started: Vec<_> = p.events("attempt_started");
    assert_eq!(started.len(), 2);
    let second_at: jiff::Timestamp = started[1]["at"].as_str().expect("at").parse().expect("timestamp");
    assert!(second_at.as_second() >= until, "the retry started before the reset: {second_at} < {until}");
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["category"], json!("environmental"));
    assert_eq!(failed[0]["rule"], json!("rate_limited"));
    assert_eq!(p.checkpoint()["progress"]["counters"]["agent_failures"], json!(0));
}

#[test]
fn a_restart_during_a_rate_limit_wait_keeps_waiting_for_the_same_reset() {
    let p = sim_project()
        .sim(
            "a",
            &[
                r#"[{ rate_limit = "4s" }, { error = "Claude AI usage limit reached" }]"#,
                r#"[{ done = "Finished after the reset." }]"#,
            ],
        )
        .build();
    let run = p.ralph().spawn();
    p.wait_for_checkpoint(|cp| cp["status"] == json!("waiting"), crate::harness::DEFAULT_TIMEOUT);
    let until = p.checkpoint()["progress"]["rate_limit_until"].as_i64().expect("rate_limit_until in the checkpoint");
    run.signal(Signal::SIGKILL);
    run.wait(crate::harness::DEFAULT_TIMEOUT);
    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0);
    let started = p.events("attempt_started");
    assert_eq!(started.len(), 2, "the provider was asked again during the wait:\n{}", out.stderr);
    let second_at: jiff::Timestamp = started[1]["at"].as_str().expect("at").parse().expect("timestamp");
    assert!(second_at.as_second() >= until, "the resumed run did not wait for the reset");
}

#[test]
fn fallover_on_rate_limit_switches_agent_and_costs_no_cycle() {
    let p = sim_project()
        .retry("on_rate_limit = \"fallover\"")
        .general("max_cycles = 1")
        .sim("a", &[r#"[{ rate_limit = "1h" }, { error = "You've hit your limit" }]"#])
        .sim("b", &[r#"[{ done = "b did it" }]"#])
        .build();
    p.ralph().run().expect_code(0);
    assert_eq!(count(&p.journal(), "fallover", "to", &json!("b")), 1);
    assert!(p.checkpoint()["progress"]["cooldowns"]["a"].as_i64().is_some());
}

#[test]
fn an_overload_storm_that_ends_completes_without_using_the_budget() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .sim(
            "a",
            &[
                r#"[{ error = "API Error: 529 Overloaded. This is a server-side issue, usually temporary" }]"#,
                r#"[{ error = "API Error: 529 Overloaded. This is a server-side issue, usually temporary" }]"#,
                r#"[{ error = "API Error: 500 Internal server error. This is a server-side issue" }]"#,
                r#"[{ done = "the provider is back" }]"#,
            ],
        )
        .build();
    p.ralph().run().expect_code(0);
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["counters"]["failures"]["environmental"], json!(3));
    assert_eq!(cp["progress"]["counters"]["fallovers"], json!(0));
}

#[test]
fn the_cost_cap_ends_the_run_with_its_message() {
    let p = sim_project()
        .general("max_cost_usd = 1.0")
        .sim("a", &[r#"[{ usage = { input_tokens = 1000, output_tokens = 100, cost_usd = 0.6 } }, { done = "one" }]"#])
        .phase("iterations = 5")
        .build();
    let out = p.ralph().run();
    out.expect_code(1)
        .stderr_has("the limit [general] max_cost_usd was reached")
        .stderr_has("usage: $1.2000, 2000 input / 200 output tokens");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], json!("failed"));
    assert_eq!(p.events("attempt_started").len(), 2);
    // Summed per attempt (journal), per phase and per run (checkpoint).
    assert_eq!(p.events("attempt_succeeded")[0]["usage"]["cost_usd"], json!(0.6));
    assert_eq!(cp["phase_usage"]["develop"]["input_tokens"], json!(2000));
    assert_eq!(cp["usage"]["output_tokens"], json!(200));
}

#[test]
fn the_runtime_cap_ends_the_run_with_its_message() {
    let p = sim_project()
        .general(r#"max_runtime = "1s""#)
        .sim("a", &[r#"[{ sleep = "600ms" }, { done = "one" }]"#])
        .phase("iterations = 10")
        .build();
    p.ralph().run().expect_code(1).stderr_has("the limit [general] max_runtime was reached");
}

#[test]
fn offline_pauses_without_budget_and_resumes_when_the_network_returns() {
    // A loopback port that is closed now and opened by the test later stands in for
    // the provider.
    let port = closed_port();
    let p = sim_project()
        .retry("agent_attempts = 1")
        .toml(&offline(port, "500ms"))
        .sim(
            "a",
            &[
                r#"[{ error = "API Error: Unable to connect to API (ConnectionRefused)" }]"#,
                r#"[{ done = "Back online and finished." }]"#,
            ],
        )
        .build();
    let run = p.ralph().spawn();
    p.wait_for_checkpoint(|cp| cp["progress"]["offline_since"].is_i64(), crate::harness::DEFAULT_TIMEOUT);
    assert_eq!(p.events("attempt_started").len(), 1, "an attempt started while offline");
    let provider = std::net::TcpListener::bind(("127.0.0.1", port)).expect("reopen the port");
    let out = run.finish();
    drop(provider);
    out.expect_code(0).stderr_has("Offline — paused (since ").stderr_has("Recovery resumed after offline");
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["counters"]["failures"]["environmental"], json!(1));
    assert_eq!(cp["progress"]["counters"]["fallovers"], json!(0));
    assert_eq!(p.events("offline").len(), 1);
    assert_eq!(p.events("online").len(), 1);
}

#[test]
fn the_ambiguous_cap_ends_the_run_with_its_message() {
    let p = sim_project()
        .retry("ambiguous_attempts = 2")
        .sim("a", &[r#"[{ say = "Working." }, { crash = "SIGKILL" }]"#])
        .build();
    p.ralph().run().expect_code(1).stderr_has("the limit [retry] ambiguous_attempts was reached");
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|f| f["category"] == json!("ambiguous") && f["rule"] == json!("killed_from_outside")));
}

#[test]
fn the_tool_registry_reset_cap_ends_the_run_with_its_message() {
    let p = sim_project()
        .retry("tool_registry_resets = 2\nagent_attempts = 9")
        .sim("a", &[r#"[{ error = "<tool_use_error>Error: No such tool available: mcp__ralph__report_progress</tool_use_error>" }]"#])
        .build();
    p.ralph().run().expect_code(1).stderr_has("the limit [retry] tool_registry_resets was reached");
    let started = p.events("attempt_started");
    assert_eq!(started.len(), 3, "two resets, then the cap");
    assert!(started.iter().all(|e| e["resume_session"].is_null()), "every reset starts a fresh session");
}

#[test]
fn max_cycles_and_recovery_attempt_messages_name_their_caps() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .sim("a", &["[{ exit = 2 }]"])
        .sim("b", &["[{ exit = 2 }]"])
        .build();
    p.ralph()
        .run()
        .expect_code(1)
        .stderr_has("agent a failed [retry] agent_attempts times in this iteration")
        .stderr_has("the limit [general] max_cycles was reached");
}

#[test]
fn an_offline_pause_that_never_ends_is_bounded_by_max_runtime() {
    let port = closed_port();
    let p = sim_project()
        .general(r#"max_runtime = "2s""#)
        .toml(&offline(port, "200ms"))
        .sim("a", &[r#"[{ error = "API Error: Unable to connect to API (ConnectionRefused)" }]"#])
        .build();
    p.ralph()
        .run()
        .expect_code(1)
        .stderr_has("Offline — paused")
        .stderr_has("the limit [general] max_runtime was reached");
    assert_eq!(p.events("attempt_started").len(), 1);
}

#[test]
fn resume_gives_a_failed_run_a_fresh_tool_registry_budget() {
    const LOST: &str = r#"[{ error = "<tool_use_error>Error: No such tool available: mcp__ralph__report_progress</tool_use_error>" }]"#;
    let p = sim_project()
        .retry("tool_registry_resets = 1\nagent_attempts = 9")
        .sim("a", &[LOST, LOST, LOST, r#"[{ done = "done" }]"#])
        .build();
    let out = p.ralph().run();
    out.expect_code(1)
        .stderr_has("the limit [retry] tool_registry_resets was reached")
        .stderr_has("[retry] tool_registry_resets");
    // The third launch loses its tool again: with a fresh budget that is one reset,
    // and the fourth finishes.
    p.ralph().args(["--resume"]).run().expect_code(0);
    assert_eq!(p.events("attempt_started").len(), 4);
}

#[test]
fn a_cap_on_a_run_total_names_the_key_to_raise_instead_of_a_resume() {
    let p = sim_project()
        .sim("a", &[r#"[{ done = "one step done, the goal is not reached" }]"#])
        .phase(r#"until = "complete""#)
        .phase("iterations = 1")
        .build();
    let out = p.ralph().run();
    out.expect_code(1).stderr_has("iterations was reached").stderr_has("raise [phases.develop] iterations");
    assert!(!out.stderr.contains("with a fresh budget"), "{out}");
}

#[test]
fn the_summary_of_a_blocked_run_shows_the_error_its_log_and_the_credential_to_set() {
    let p = crate::harness::refused_credentials();
    let out = p.ralph().run();
    out.expect_code(3)
        .stderr_has("last error: the provider rejected the credentials (HTTP 401) (agent a)")
        .stderr_has("    | ")
        .stderr_has("invalid x-api-key")
        .stderr_has("log: ")
        .stderr_has("attempts.log (attempt-0001-develop-a)")
        .stderr_has("next: the provider refused agent a's credentials");
}

#[test]
fn the_summary_after_a_cap_names_the_key_to_raise() {
    let p = sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .sim("a", &[r#"[{ crash = "SIGSEGV" }]"#])
        .build();
    let out = p.ralph().run();
    out.expect_code(1)
        .stderr_has("last error: the agent crashed")
        .stderr_has("log: ")
        .stderr_has("raise [general] max_cycles in ")
        .stderr_has("`ralph --resume`");
}

#[test]
fn an_agent_failure_while_the_providers_do_not_answer_is_the_outage() {
    // The agent dies with no words (as a CLI does when the network is gone); the
    // probe then finds the provider unreachable: no budget, the offline pause.
    let port = closed_port();
    let p = sim_project()
        .retry("agent_attempts = 1")
        .toml(&offline(port, "500ms"))
        .sim("a", &[r#"[{ say = "Working." }, { exit = 1 }]"#, r#"[{ done = "Back online and finished." }]"#])
        .sim("b", &[r#"[{ done = "b finished." }]"#])
        .build();
    let run = p.ralph().spawn();
    p.wait_for_checkpoint(|cp| cp["progress"]["offline_since"].is_i64(), crate::harness::DEFAULT_TIMEOUT);
    let provider = std::net::TcpListener::bind(("127.0.0.1", port)).expect("reopen the port");
    let out = run.finish();
    drop(provider);
    out.expect_code(0).stderr_has("Offline — paused (since ").stderr_has("Recovery resumed after offline");
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["category"], json!("environmental"));
    assert_eq!(failed[0]["rule"], json!("offline"));
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["counters"]["fallovers"], json!(0), "no budget was spent: a did not fall over to b");
    assert!(p.events("attempt_succeeded").iter().all(|e| e["agent"] == json!("a")));
}

#[test]
fn a_reset_beyond_max_rate_limit_wait_falls_over_to_a_healthy_agent_even_when_waiting() {
    let p = sim_project()
        .retry("max_rate_limit_wait = \"2s\"")
        .sim("a", &[r#"[{ rate_limit = "1h" }, { error = "You've hit your limit" }]"#])
        .sim("b", &[r#"[{ done = "b did it" }]"#])
        .build();
    p.ralph().run().expect_code(0);
    assert_eq!(count(&p.journal(), "fallover", "to", &json!("b")), 1);
    assert_eq!(p.events("attempt_started").len(), 2, "a once, then b: a's limit was never asked again");
}

#[test]
fn a_reset_beyond_max_rate_limit_wait_with_nobody_else_fails_naming_it() {
    let p = sim_project()
        .retry("max_rate_limit_wait = \"2s\"")
        .sim("a", &[r#"[{ rate_limit = "1h" }, { error = "You've hit your limit" }]"#])
        .build();
    p.ralph()
        .run()
        .expect_code(1)
        .stderr_has("the limit [retry] max_rate_limit_wait was reached")
        .stderr_has("raise max_rate_limit_wait");
    assert_eq!(p.events("attempt_started").len(), 1);
}

#[test]
fn an_agent_crash_loop_backs_off_between_retries() {
    let p = sim_project()
        .retry("agent_attempts = 3\nagent_backoff_base = \"20s\"")
        .sim("a", &[r#"[{ crash = "SIGSEGV" }]"#])
        .build();
    // A 20 s backoff after the first crash: the run is waiting, not restarting.
    let run = p.ralph().spawn();
    p.wait_for_checkpoint(|cp| cp["status"] == json!("waiting"), crate::harness::DEFAULT_TIMEOUT);
    assert_eq!(p.events("attempt_started").len(), 1, "the crashed agent is not restarted at once");
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
}

/// A backoff too short for a reader of the checkpoint to see costs no save of its
/// own (a sync and two registry writes between the crash and the next attempt); a
/// longer one is saved as `waiting`.
#[test]
fn only_a_backoff_a_reader_could_see_is_saved_as_waiting() {
    let waiting_saves = |backoff: &str| {
        let p = sim_project()
            .retry(&format!("agent_attempts = 2\nagent_backoff_base = \"{backoff}\""))
            .sim("a", &[r#"[{ crash = "SIGSEGV" }]"#, r#"[{ done = "finished" }]"#])
            .build();
        p.ralph().run().expect_code(0);
        assert_eq!(p.events("attempt_started").len(), 2);
        p.events("checkpoint").iter().filter(|e| e["checkpoint"]["status"] == json!("waiting")).count()
    };
    assert_eq!(waiting_saves("1ms"), 0, "a 1 ms backoff was saved as a state of the run");
    assert_eq!(waiting_saves("300ms"), 1, "a backoff a reader could see was not saved");
}

#[test]
fn an_environmental_streak_is_bounded_without_max_runtime() {
    let p = sim_project()
        .retry("max_environmental_wait = \"1s\"")
        .sim("a", &[r#"[{ error = "API Error: 529 Overloaded. This is a server-side issue, usually temporary" }]"#])
        .build();
    p.ralph()
        .run()
        .expect_code(1)
        .stderr_has("the limit [retry] max_environmental_wait was reached")
        .stderr_has("the provider is overloaded");
}

#[test]
fn overloads_do_not_make_a_continue_storm() {
    let overloaded = r#"[{ say = "Working." }, { error = "API Error: 529 Overloaded. This is a server-side issue, usually temporary" }]"#;
    let p = sim_project()
        .retry("storm_recoveries = 2")
        .sim("a", &[overloaded, overloaded, overloaded, r#"[{ done = "finished" }]"#])
        .build();
    p.ralph().run().expect_code(0);
    assert!(p.events("intervention").iter().all(|e| e["detector"] != json!("continue_storm")));
    let started = p.events("attempt_started");
    assert_eq!(started.len(), 4);
    assert!(started[1..].iter().all(|e| e["resume_session"].is_string()), "the session survives the outage");
}

fn fake_claude_project(port: u16) -> Project {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new().file("fake-claude", FAKE_CLAUDE);
    std::fs::set_permissions(p.join("fake-claude"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let body = format!(
        r#"
[offline]
interval = "200ms"
timeout = "500ms"
[agents.claude]
kind = "claude"
binary = "{binary}"
env = {{ ANTHROPIC_BASE_URL = "http://127.0.0.1:{port}", ANTHROPIC_API_KEY = "dummy" }}
[chains]
main = ["claude"]
[phases.develop]
chain = "main"
"#,
        binary = p.join("fake-claude").display()
    );
    p.config(&fast("agent_attempts = 1", "", &body))
}

#[test]
fn a_default_endpoint_that_answered_earlier_makes_a_silent_failure_the_outage() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let p = fake_claude_project(port);
    let run = p.ralph().spawn();
    p.wait_for_checkpoint(|cp| cp["in_flight"].is_object(), crate::harness::DEFAULT_TIMEOUT);
    // The provider answered the start-up probe; now the network goes.
    std::thread::sleep(Duration::from_millis(300));
    drop(listener);
    p.write("go", "");
    p.wait_for_checkpoint(|cp| cp["progress"]["offline_since"].is_i64(), crate::harness::DEFAULT_TIMEOUT);
    let provider = std::net::TcpListener::bind(("127.0.0.1", port)).expect("reopen the port");
    let out = run.finish();
    drop(provider);
    out.expect_code(0).stderr_has("Offline — paused").stderr_has("Recovery resumed after offline");
    let failed = p.events("attempt_failed");
    assert_eq!((failed[0]["category"].clone(), failed[0]["rule"].clone()), (json!("environmental"), json!("offline")));
}

#[test]
fn a_default_endpoint_never_reached_in_this_run_is_no_evidence_of_being_offline() {
    // A sandbox that blocks TCP to the provider: the failure keeps its own category
    // and the run never pauses on a host it could not reach.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let p = fake_claude_project(port);
    p.write("go", "");
    p.ralph().run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["rule"], json!("exit_nonzero"));
    assert!(p.events("offline").is_empty());
}

const FAKE_CLAUDE: &str = r#"#!/bin/sh
while [ ! -e go ]; do sleep 0.05; done
if [ -e second ]; then
  echo '{"type":"result","subtype":"success","is_error":false,"result":"done <promise>DONE</promise>","session_id":"s1"}'
  exit 0
fi
touch second
exit 1
"#;

/// Issue 30, item 9: the cap that ended the run is the one named: by its config key in
/// the summary, by its stable phrase in the journal and the checkpoint (`--json`); a
/// chain of one agent never "falls over" to itself, and its run ends on `max_cycles`.
#[test]
fn the_cap_that_ended_the_run_is_named_by_its_key_and_its_phrase() {
    let p = sim_project().retry("agent_attempts = 2").general("max_cycles = 2").sim("a", &["[{ exit = 2 }]"]).build();
    let out = p.ralph().run();
    out.expect_code(1)
        .stderr_has("(the limit [general] max_cycles was reached)")
        .stderr_has("stopped by: the limit [general] max_cycles")
        .stderr_has("agent a failed [retry] agent_attempts times in this iteration: trying a again");
    let stderr = &out.stderr;
    assert!(!stderr.contains("falling over to a"), "{stderr}");
    let cap = &p.events("cap_reached")[0];
    assert_eq!(
        (&cap["cap"], &cap["key"], &cap["phrase"]),
        (&json!("max_cycles"), &json!("[general] max_cycles"), &json!("max_cycles exhausted"))
    );
    let ended = p.events("run_ended");
    assert!(ended[0]["reason"].as_str().is_some_and(|r| r.starts_with("max_cycles exhausted")), "{ended:?}");
    let status = p.ralph().args(["status", "--json"]).run();
    let json: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let by = &json["checkpoint"]["stopped_by"];
    assert_eq!((&by["key"], &by["phrase"]), (&json!("[general] max_cycles"), &json!("max_cycles exhausted")));
}

/// Issue 30, item 9: a chain member that spent its whole budget is not tried first
/// again when the next phase starts, until `[retry] exhausted_cooldown` has passed.
#[test]
fn a_member_that_spent_its_budget_is_skipped_by_the_next_phase_for_its_cool_down() {
    let project = |cooldown: &str| {
        sim_project()
            .retry(&format!("agent_attempts = 2\nexhausted_cooldown = \"{cooldown}\""))
            .toml("[phases.plan]\nchain = \"main\"\n")
            .sim("a", &["[{ exit = 2 }]"])
            .sim("b", &[r#"[{ done = "b did it" }]"#])
            .build()
    };
    let p = project("30m");
    p.ralph().run().expect_code(0).stderr_has("sits out [retry] exhausted_cooldown: starting with b");
    let agents: Vec<(String, String)> = p
        .events("attempt_started")
        .iter()
        .map(|e| (e["phase"].as_str().unwrap_or("").to_string(), e["agent"].as_str().unwrap_or("").to_string()))
        .collect();
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(agents, pairs(&[("plan", "a"), ("plan", "a"), ("plan", "b"), ("develop", "b")]));
    assert_eq!(p.events("fallover").last().map(|f| f["why"].clone()), Some(json!("cooling_down")));

    // With no cool-down the first member is tried first again.
    let p = project("0s");
    p.ralph().run().expect_code(0);
    let develop = p.events("attempt_started").into_iter().filter(|e| e["phase"] == json!("develop")).count();
    assert_eq!(develop, 3, "a twice, then b");
}

/// Issue 30, item 10: a `command` agent without `[offline] probe` whose failures carry
/// no words. The host had network, then loses its default route: the failure is the
/// outage's, the run pauses without spending budget, and goes on when the network
/// returns. (The host's network is the test hook's file, see `Project::host_offline`.)
#[test]
fn a_host_that_went_offline_pauses_the_run_without_budget_until_it_is_back() {
    let p = Project::new();
    // The agent takes the network away itself, once ralph has had time to see the
    // host online (its background probe at the start).
    let net = p.host_network();
    let script = format!(
        "if [ -f launched ]; then echo finished > out.txt; echo 'Wrote out.txt.'; echo '<promise>DONE</promise>'; \
         else touch launched; sleep 1.5; echo 'no default route' > {}; exit 1; fi",
        net.display()
    );
    let config = fast(
        "agent_attempts = 1",
        "",
        &format!(
            "[general]\nmax_cycles = 1\n\n[offline]\ninterval = \"200ms\"\ntimeout = \"1s\"\n\n\
             [agents.a]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", {script:?}, \"sh\", \"{{prompt_file}}\"]\n\n\
             [chains]\nmain = [\"a\"]\n\n[phases.develop]\nchain = \"main\"\n"
        ),
    );
    let p = p.config(&config);
    let run = p.ralph().spawn();
    p.wait_for_checkpoint(|cp| cp["progress"]["offline_since"].is_i64(), crate::harness::DEFAULT_TIMEOUT);
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(p.events("attempt_started").len(), 1, "an attempt started while offline");
    assert_eq!(p.checkpoint()["status"], json!("waiting"));
    p.host_offline(None);
    let out = run.finish();
    out.expect_code(0).stderr_has("Offline — paused (since ").stderr_has("this host's network");
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["counters"]["failures"], json!({ "environmental": 1 }), "no budget spent");
    let offline = p.events("offline");
    assert_eq!(offline.len(), 1);
    assert_eq!(offline[0]["error"], json!("no default route"));
    assert_eq!(p.events("online").len(), 1);
    assert_eq!(p.read("out.txt"), "finished\n");
}

/// Issue 30, item 10: a machine that never had network keeps its backoff (it never
/// pauses on a host it never saw online), and its summary says in plain words that
/// nothing answered since the start.
#[test]
fn a_host_without_network_from_the_start_never_pauses_and_the_summary_says_why() {
    let p = Project::new();
    p.host_offline(Some("this host has no default route"));
    let config = fast(
        "agent_attempts = 1",
        "",
        "[general]\nmax_cycles = 2\n\n[offline]\ninterval = \"200ms\"\n\n\
         [agents.a]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"sleep 0.3; exit 1\", \"sh\", \"{prompt_file}\"]\n\n\
         [chains]\nmain = [\"a\"]\n\n[phases.develop]\nchain = \"main\"\n",
    );
    let p = p.config(&config);
    let out = p.ralph().run();
    out.expect_code(1)
        .stderr_has("stopped by: the limit [general] max_cycles")
        .stderr_has("network: no provider answered since the start")
        .stderr_has("this host has no default route");
    assert!(p.events("offline").is_empty(), "never paused");
    assert_eq!(p.events("attempt_started").len(), 2);
}

//! Supervising a live attempt with real processes: a stall resumed in the same
//! session, a tool call printed as text, a tool-call loop, a continue storm, and the
//! recovery note that reaches the next attempt.

use serde_json::json;

use crate::harness::{Project, sim_project};

fn one_agent(retry: &str, timeouts: &str, scripts: &[&str]) -> Project {
    sim_project().retry(retry).timeouts(timeouts).sim("a", scripts).build()
}

/// The detectors of the run's interventions, in order.
fn interventions(p: &Project) -> Vec<String> {
    p.events("intervention").iter().map(|e| e["detector"].as_str().unwrap_or_default().to_string()).collect()
}

/// The run's one intervention was `detector`'s, and the second attempt resumed the
/// first's session with a prompt that says `told`.
#[track_caller]
fn resumed_after(p: &Project, detector: &str, told: &str) {
    assert_eq!(interventions(p), [detector]);
    assert_eq!(p.events("attempt_started")[1]["resume_session"], json!("sim-a-1"));
    let prompt = p.prompt_of(2);
    assert!(prompt.contains(told), "{prompt}");
}

#[test]
fn a_tool_call_printed_as_text_ends_the_attempt_and_the_next_one_is_told_why() {
    let p = one_agent(
        "",
        "",
        &[
            r#"[
  { say = "Let me fix the parser." },
  { tool_text = "I'll edit the file now.\n<function=edit>\n<parameter=path>src/parse.rs</parameter>\n<parameter=content>fn parse() {}</parameter>\n</function>" },
  { sleep = "20s" },
]"#,
            r#"[{ done = "Fixed, with a real tool call." }]"#,
        ],
    );
    p.ralph().run().expect_code(0);
    assert_eq!(interventions(&p), ["tool_text"]);
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["rule"], json!("tool_text"));
    assert_eq!(failed[0]["category"], json!("agent"));
    let prompt = p.prompt_of(2);
    assert!(
        prompt.contains("use your real tool-calling mechanism") || prompt.contains("real tool-calling mechanism"),
        "{prompt}"
    );
    assert_eq!(p.checkpoint()["progress"]["recovery_note"], json!(null), "a finished iteration clears the note");
}

/// The loop is seen at the third call's start, so ralph ends the attempt while that
/// call runs: the script's third call never finishes (whether a call finished
/// between the start ralph acted on and the agent's end was a race ralph may lose on
/// a loaded machine, and the note would then rightly say its result was not seen).
#[test]
fn a_tool_call_loop_is_broken_with_a_note() {
    let p = one_agent(
        "",
        "",
        &[
            r#"[
  { repeat_tool = { name = "Read", input = { file_path = "src/lib.rs" }, times = 2 } },
  { tool = { name = "Read", input = { file_path = "src/lib.rs" }, hang = true } },
]"#,
            r#"[{ done = "Tried another approach." }]"#,
        ],
    );
    p.ralph().args(["-v"]).run().expect_code(0);
    assert_eq!(p.events("attempt_failed")[0]["rule"], json!("tool_call_loop"));
    // The resumed attempt got the loop-breaking note as its prompt.
    resumed_after(&p, "tool_call_loop", "Stop repeating them and try a different approach");
    let prompt = p.prompt_of(2);
    assert!(prompt.contains("Read (src/lib.rs), started but its result was never seen"), "{prompt}");
}

#[test]
fn a_stall_ends_the_attempt_and_resumes_the_same_session_with_a_note() {
    let p = one_agent(
        "",
        r#"stall = "1s""#,
        &[r#"[{ say = "Thinking about it." }, { hang = true }]"#, r#"[{ done = "Continued after the stall." }]"#],
    );
    p.ralph().run().expect_code(0);
    resumed_after(&p, "stall", "no output for too long");
}

#[test]
fn a_continue_storm_escalates_to_a_fresh_session() {
    let p = one_agent(
        "agent_attempts = 9\nstorm_recoveries = 3",
        "",
        &[
            r#"[{ say = "Working." }, { exit = 1 }]"#,
            r#"[{ say = "Working." }, { exit = 1 }]"#,
            r#"[{ say = "Working." }, { exit = 1 }]"#,
            r#"[{ done = "A fresh start did it." }]"#,
        ],
    );
    p.ralph().run().expect_code(0);
    let started = p.events("attempt_started");
    let sessions: Vec<_> = started.iter().map(|e| e["resume_session"].clone()).collect();
    assert_eq!(sessions, [json!(null), json!("sim-a-1"), json!("sim-a-1"), json!(null)]);
    assert_eq!(interventions(&p), ["continue_storm"]);
}

#[test]
fn a_done_claim_in_words_gets_one_confirmation_question_in_the_same_session() {
    let p = one_agent(
        "",
        "",
        &[
            r#"[{ say = "All done, the feature is implemented." }]"#,
            r#"[{ done = "Verified: build and tests pass." }]"#,
        ],
    );
    p.ralph().run().expect_code(0);
    resumed_after(&p, "done_confirmation", "complete and verified");
}

#[test]
fn repeated_permission_denials_end_the_attempt_naming_the_tool() {
    let denied = "Claude requested permissions to use Bash, but you haven't granted it yet.";
    let rm = |args: &str| {
        format!(
            r#"{{ tool = {{ name = "Bash", input = {{ command = "rm {args}" }}, result = "{denied}", error = true }} }},"#
        )
    };
    let denials = format!(
        r#"[{} {} {} {{ say = "I will keep trying." }}, {{ hang = true }}]"#,
        rm("-rf build"),
        rm("-r build"),
        rm("build")
    );
    let p = sim_project()
        .retry("agent_attempts = 2")
        .sim("a", &[&denials, r#"[{ done = "Worked within my permissions." }]"#])
        .build();
    p.ralph().run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["category"], json!("agent"));
    assert_eq!(failed[0]["rule"], json!("repeated_permission_denials"));
    let interventions = p.events("intervention");
    assert!(
        interventions.iter().any(|e| e["detector"] == json!("repeated_permission_denials")
            && e["evidence"].as_str().is_some_and(|t| t.contains("Bash"))),
        "{interventions:#?}"
    );
    let note = p.prompt_of(2);
    assert!(note.contains("refused permission") && note.contains("Bash"), "{note}");
}

//! Sign-offs end to end (issue #12): the tag on its own last line is accepted whatever
//! the summary above it says; a doubtful tag costs one confirmation question in the
//! same session, not a failure; a denied tag fails the attempt and the journal and
//! the summary name the rule and the words.

use serde_json::{Value, json};

use crate::harness::{Project, sim_project};

/// A command agent (plain text output, so no session to resume) whose final message
/// is the file `final.txt`.
fn command_agent(retry: &str, message: &str) -> Project {
    sim_project()
        .retry(retry)
        .general("max_cycles = 1")
        .command("sh", r#"["sh", "-c", "cat final.txt", "{prompt}"]"#)
        .file("final.txt", message)
        .build()
}

/// A scripted agent (it reports a session) with one attempt of budget and one
/// cycle: any failure would end the run.
fn sim_agent(scripts: &[&str]) -> Project {
    sim_project().retry("agent_attempts = 1").general("max_cycles = 1").sim("a", scripts).build()
}

fn verdicts(p: &Project) -> Vec<(String, String)> {
    p.events("signoff")
        .iter()
        .map(|e: &Value| {
            (e["verdict"].as_str().unwrap_or_default().to_string(), e["rule"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
fn the_rows_of_the_issue_are_accepted_from_a_command_agent() {
    let rows = [
        "All 42 tests pass; no failures",
        "Added a --json flag so users can pipe the output",
        "Fixed the bug where the parser would crash on empty input",
        "ATTEMPT-OUTPUT-1234",
        "You can run cargo test to verify.",
        "- Removed the old config loader, which is no longer needed",
    ];
    for row in rows {
        for end in ["\n", "\r\n"] {
            let p = command_agent("agent_attempts = 1", &format!("{row}{end}<promise>DONE</promise>{end}"));
            p.ralph().run().expect_code(0);
            assert_eq!(p.events("attempt_succeeded").len(), 1, "{row:?}");
            assert!(p.events("attempt_failed").is_empty(), "{row:?}");
            assert!(verdicts(&p).is_empty(), "{row:?}: {:?}", verdicts(&p));
        }
    }
}

#[test]
fn a_doubtful_tag_is_confirmed_in_the_same_session_without_spending_budget() {
    let p = sim_agent(&[
        r#"[{ say = "Added a flag so users can pipe the output <promise>DONE</promise>" }]"#,
        r#"[{ done = "" }]"#,
    ]);
    p.ralph()
        .run()
        .expect_code(0)
        .stderr_has("asking the agent to confirm it is done: the line of the tag holds a word of doubt");
    assert_eq!(verdicts(&p), [("asked".to_string(), "doubt_word".to_string())]);
    let interventions = p.events("intervention");
    assert_eq!(interventions.len(), 1);
    assert_eq!(interventions[0]["detector"], json!("done_confirmation"));
    // No failure was recorded: with a budget of one attempt, a failure would have
    // ended the run.
    assert!(p.events("attempt_failed").is_empty());
    assert!(p.events("retry").is_empty());
    let started = p.events("attempt_started");
    assert_eq!(started.len(), 2);
    assert_eq!(started[1]["resume_session"], json!("sim-a-1"));
    let question = p.prompt_of(2);
    assert!(question.contains("Question from ralph"), "{question}");
    assert!(question.contains("reply with <promise>DONE</promise> alone"), "{question}");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], json!("completed"));
    assert_eq!(cp["progress"]["counters"]["agent_failures"], json!(0));
}

#[test]
fn a_claim_in_words_is_asked_about_once_without_spending_budget() {
    let p = sim_agent(&[
        r#"[{ say = "All done, the feature is implemented." }]"#,
        r#"[{ done = "Verified: build and tests pass." }]"#,
    ]);
    p.ralph().run().expect_code(0);
    assert_eq!(verdicts(&p), [("asked".to_string(), "claim_in_words".to_string())]);
    assert!(p.events("attempt_failed").is_empty());
    assert_eq!(p.events("attempt_started")[1]["resume_session"], json!("sim-a-1"));
    assert!(p.prompt_of(2).contains("said \"all done\" but did not give the completion signal"), "{}", p.prompt_of(2));
}

#[test]
fn the_question_is_asked_once_per_iteration() {
    let p = sim_project()
        .retry("agent_attempts = 2")
        .general("max_cycles = 1")
        .sim("a", &[r#"[{ say = "All done." }]"#, r#"[{ say = "Yes, all done." }]"#, r#"[{ done = "" }]"#])
        .build();
    p.ralph().run().expect_code(0);
    assert_eq!(verdicts(&p).len(), 1, "{:?}", verdicts(&p));
    let failed = p.events("attempt_failed");
    assert_eq!(failed.len(), 1, "the second claim in words is a failure");
    assert_eq!(failed[0]["rule"], json!("no_done_signal"));
}

#[test]
fn without_a_session_a_doubtful_tag_is_accepted_and_the_doubt_journaled() {
    let p = command_agent("agent_attempts = 1", "Added a flag so users can pipe the output <promise>DONE</promise>\n");
    p.ralph().run().expect_code(0).stderr_has("sign-off accepted despite a doubt");
    assert_eq!(verdicts(&p), [("accepted_with_doubt".to_string(), "doubt_word".to_string())]);
    let words = p.events("signoff")[0]["words"].as_str().unwrap_or_default().to_string();
    assert!(words.contains("can"), "{words}");
    assert_eq!(p.events("attempt_succeeded").len(), 1);
}

#[test]
fn a_denied_tag_fails_and_the_journal_names_the_rule_and_the_summary_says_it_in_words() {
    let p = command_agent(
        "agent_attempts = 1",
        "I added the retry, but the flaky test still fails about one run in five.\n<promise>DONE</promise>\n",
    );
    let out = p.ralph().run();
    out.expect_code(1).stderr_has(
        "last sign-off rejected: the words before the tag say the work is not done (\"i added the retry, but the \
             flaky test still fails",
    );
    assert!(!out.stderr.contains("negated_work"), "{out}");
    assert_eq!(verdicts(&p), [("rejected".to_string(), "negated_work".to_string())]);
    let failed = p.events("attempt_failed");
    assert_eq!(failed[0]["rule"], json!("no_done_signal"));
    let reason = failed[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("the work is not done") && reason.contains("still fails"), "{reason}");
}

#[test]
fn a_command_agent_that_reports_a_session_but_cannot_resume_is_not_asked() {
    let result = json!({"type": "result", "subtype": "success", "is_error": false,
        "result": "Added a flag so users can pipe the output <promise>DONE</promise>", "session_id": "s-42"});
    let p = sim_project()
        .retry("agent_attempts = 1")
        .general("max_cycles = 1")
        .sh("sh", "cat out.jsonl", r#"output = "claude-stream-json""#)
        .file("out.jsonl", &format!("{result}\n"))
        .build();
    p.ralph().run().expect_code(0);
    assert_eq!(verdicts(&p), [("accepted_with_doubt".to_string(), "doubt_word".to_string())]);
    assert_eq!(p.events("attempt_started").len(), 1);
}

use super::*;

fn ctx(trouble: Trouble, last_tool: Option<LastTool>) -> NoteContext<'static> {
    NoteContext {
        goal: "Build a CLI that converts CSV files to JSON.\n\nIt must stream large files and keep memory flat.",
        phase: "develop",
        iteration: 3,
        iterations: 20,
        done_summary: "phases plan done; develop iterations 1–2 done",
        what_went_wrong: trouble,
        last_tool,
    }
}

fn tool(state: ToolState) -> Option<LastTool> {
    Some(LastTool { name: "Bash".into(), input_summary: "cargo test --all".into(), state })
}

#[test]
fn the_note_states_goal_phase_progress_and_trouble() {
    let n = note(&ctx(Trouble::Stall, None));
    assert!(n.contains("Goal: Build a CLI that converts CSV files to JSON. It must stream"), "{n}");
    assert!(n.contains("Phase: develop, iteration 3 of 20."), "{n}");
    assert!(n.contains("Done so far: phases plan done; develop iterations 1–2 done."), "{n}");
    assert!(n.contains("What went wrong: it produced no output for too long"), "{n}");
    assert!(!n.contains("last tool call"), "{n}");
}

#[test]
fn a_finished_tool_is_not_to_be_repeated() {
    let n = note(&ctx(Trouble::Stall, tool(ToolState::Finished)));
    assert!(n.contains("Your last tool call, Bash (cargo test --all), finished: do not repeat it."), "{n}");
}

#[test]
fn a_tool_without_result_is_to_be_checked() {
    let n = note(&ctx(Trouble::Crash { detail: "killed by signal 9".into() }, tool(ToolState::StartedNoResult)));
    assert!(n.contains("check whether it took effect before redoing it"), "{n}");
    assert!(n.contains("the agent process ended unexpectedly (killed by signal 9)."), "{n}");
}

#[test]
fn tool_text_has_its_own_wording_for_thinking() {
    let excerpt = "<function=edit>\n<parameter=path>`src/a.rs`";
    let text = note(&ctx(Trouble::ToolText { in_thinking: false, excerpt: excerpt.into() }, None));
    assert!(text.contains("Make every tool call through your real tool-calling mechanism"), "{text}");
    assert!(text.contains("`<function=edit> <parameter=path>'src/a.rs'`"), "{text}");
    let thinking = note(&ctx(Trouble::ToolText { in_thinking: true, excerpt: excerpt.into() }, None));
    assert!(thinking.contains("inside its thinking"), "{thinking}");
    assert!(thinking.contains("outside your thinking"), "{thinking}");
    assert_ne!(text, thinking);
}

#[test]
fn a_quoted_note_is_not_itself_tool_text() {
    let n = note(&ctx(Trouble::ToolText { in_thinking: false, excerpt: "<invoke name=\"Bash\">".into() }, None));
    assert_eq!(crate::supervise::tool_text::detect(&n), None, "{n}");
}

#[test]
fn a_loop_note_asks_for_another_approach() {
    let description = "Read({\"file_path\":\"a.rs\"}) called 3 times in a row with the same arguments";
    let n = note(&ctx(Trouble::Loop { description: description.into() }, tool(ToolState::Finished)));
    assert!(n.contains(description), "{n}");
    assert!(n.contains("Stop repeating them and try a different approach"), "{n}");
}

#[test]
fn done_signal_troubles_ask_for_verification_and_the_signal() {
    let n = note(&ctx(Trouble::NoDoneSignal, None));
    assert!(n.contains("without the completion signal"), "{n}");
    assert!(n.contains("as the very last thing in your final message"), "{n}");
    let n = note(&ctx(Trouble::SignOffRejected { why: "negated_work (\"tests still fail\")".into() }, None));
    assert!(n.contains("did not accept it: negated_work (\"tests still fail\")"), "{n}");
    assert!(n.contains("Finish the work first"), "{n}");
}

#[test]
fn the_confirmation_question_asks_for_the_tag_alone() {
    let words = Why::new(Rule::ClaimInWords, "all done");
    let q = confirmation(&words, false, true);
    assert!(q.contains("your final message said \"all done\" but did not give the completion signal"), "{q}");
    assert!(q.contains("complete and verified"), "{q}");
    assert!(q.contains("reply with <promise>DONE</promise> (or <promise>COMPLETE</promise> alone"), "{q}");
    let doubt = Why::new(Rule::DoubtWord, "would: the parser would crash");
    let q = confirmation(&doubt, true, true);
    assert!(q.contains("words that leave a doubt (doubt_word: \"would: the parser would crash\")"), "{q}");
    assert!(q.contains("reply with <promise>COMPLETE</promise> alone"), "{q}");
    assert!(!q.contains("<promise>DONE</promise>"), "{q}");
}

#[test]
fn the_goal_line_shows_the_goal_at_launch_time() {
    let stored = note(&ctx(Trouble::Stall, None));
    let n = with_goal(&stored, "NEW-GOAL-MARKER: ship the importer");
    assert!(n.contains("Goal: NEW-GOAL-MARKER: ship the importer"), "{n}");
    assert!(!n.contains("converts CSV"), "{n}");
    assert!(n.starts_with("Recovery note from ralph:"), "{n}");
    assert!(n.contains("What went wrong: it produced no output"), "{n}");
    assert_eq!(n.lines().count(), stored.lines().count());
    // A note written while the goal file was empty gets the goal line back.
    let empty = note(&NoteContext { goal: "", ..ctx(Trouble::Stall, None) });
    let n = with_goal(&empty, "the goal");
    assert_eq!(n.lines().nth(1), Some("Goal: the goal"), "{n}");
    assert_eq!(with_goal(&n, ""), empty);
}

#[test]
fn text_that_is_not_a_note_is_left_alone() {
    assert_eq!(with_goal("Continue the task.", "new goal"), "Continue the task.");
}

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
    let n = note(&ctx(Trouble::DoneClaimWithoutSignal, None));
    assert!(n.contains("said the work was done"), "{n}");
    assert!(n.contains("Verify the work"), "{n}");
}

#[test]
fn other_troubles_have_a_sentence() {
    for t in [
        Trouble::Limit { detail: "five_hour limit, reset at 20:00".into() },
        Trouble::Interrupted,
        Trouble::Other("the workspace was changed outside the agent".into()),
    ] {
        let n = note(&ctx(t, None));
        assert!(n.contains("What went wrong: "), "{n}");
        assert!(n.contains("Continue from where it stopped"), "{n}");
    }
}

#[test]
fn the_note_stays_short() {
    let long = "word ".repeat(2000);
    let c = NoteContext {
        goal: &long,
        phase: "develop",
        iteration: 1,
        iterations: 0,
        done_summary: "",
        what_went_wrong: Trouble::Crash { detail: long.clone() },
        last_tool: Some(LastTool { name: "Write".into(), input_summary: long.clone(), state: ToolState::Finished }),
    };
    let n = note(&c);
    assert!(n.lines().count() <= 15, "{n}");
    let goal = n.lines().find(|l| l.starts_with("Goal: ")).unwrap_or_default();
    assert!(goal.chars().count() <= 410 && goal.ends_with('…'), "{goal}");
    assert!(n.contains("Phase: develop, iteration 1."), "{n}");
    assert!(n.contains("Done so far: nothing recorded yet."), "{n}");
    assert!(n.len() < 2000, "{} bytes", n.len());
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

use std::path::Path;

use super::*;

#[test]
fn a_tag_at_the_very_end_is_the_signal() {
    assert_eq!(judge("Implemented the parser; all 48 tests pass.\n\n<promise>DONE</promise>\n"), Claim::Done);
    assert_eq!(judge("Everything in the plan is built and verified. <promise>COMPLETE</promise>"), Claim::Goal);
    assert_eq!(judge("<promise>DONE</promise>"), Claim::Done);
    assert_eq!(judge("Iteration 3: done.\n<promise>DONE</promise>\n<promise>COMPLETE</promise>"), Claim::Goal);
    assert_eq!(judge("Final status:\n<promise>DONE</promise>"), Claim::Done);
}

#[test]
fn a_finished_sentence_before_the_tag_may_say_no() {
    assert_eq!(judge("No warnings, no failures. <promise>DONE</promise>"), Claim::Done);
    assert_eq!(judge("I could not run the Docker tests, but unit tests pass.\n\n<promise>DONE</promise>"), Claim::Done);
}

#[test]
fn negated_or_postponed_tags_are_not_signals() {
    let cases = [
        "I have not printed <promise>COMPLETE</promise>",
        "I won't output <promise>DONE</promise>",
        "The tests still fail, so I am not ready for <promise>DONE</promise>",
        "Once the migration runs I will print <promise>DONE</promise>",
        "I won't output\n<promise>DONE</promise>",
        "The tests still fail, so this is not done.\n<promise>DONE</promise>",
    ];
    for text in cases {
        assert!(matches!(judge(text), Claim::Nothing | Claim::ReadyToContinue(_) | Claim::ClaimedInWords(_)), "{text}");
    }
}

#[test]
fn echoed_instructions_are_not_signals() {
    assert_eq!(
        judge("When the iteration is done, end your final message with <promise>DONE</promise>"),
        Claim::Nothing
    );
    assert_eq!(judge("End your final message with:\n\n<promise>DONE</promise>"), Claim::Nothing);
    assert_eq!(judge("> When everything is finished, print <promise>COMPLETE</promise>"), Claim::Nothing);
}

#[test]
fn quoted_tags_are_not_signals() {
    assert_eq!(judge("The done signal is \"<promise>DONE</promise>\""), Claim::Nothing);
    assert_eq!(judge("The done signal is \"<promise>DONE</promise>"), Claim::Nothing);
    assert_eq!(judge("The done signal is `<promise>DONE</promise>`"), Claim::Nothing);
    assert_eq!(judge("Use this:\n```\n<promise>DONE</promise>\n```"), Claim::Nothing);
    assert_eq!(judge("Use this:\n```\n<promise>DONE</promise>"), Claim::Nothing);
}

#[test]
fn a_tag_followed_by_more_text_is_not_a_signal() {
    assert_eq!(judge("<promise>DONE</promise>\nActually, one test still fails; fixing it next."), Claim::Nothing);
    assert!(!matches!(
        judge("<promise>COMPLETE</promise> Now let me also update the docs."),
        Claim::Goal | Claim::Done
    ));
}

#[test]
fn a_limit_notice_is_nothing() {
    assert_eq!(judge("You've hit your limit · resets 8pm (Europe/Berlin)"), Claim::Nothing);
    assert_eq!(judge("All done!\nYou've hit your limit · resets 8pm"), Claim::Nothing);
    assert_eq!(judge("Claude AI usage limit reached|1718000000\n<promise>DONE</promise>"), Claim::Nothing);
}

#[test]
fn done_in_words() {
    assert_eq!(judge("All done! The endpoint now validates input."), Claim::ClaimedInWords("all done"));
    assert_eq!(judge("The task is complete."), Claim::ClaimedInWords("task is complete"));
    assert_eq!(judge("Finished."), Claim::ClaimedInWords("finished"));
    assert_eq!(judge("Everything is implemented and documented."), Claim::ClaimedInWords("everything is implemented"));
    assert_eq!(judge("Migration written, tests green. I've finished."), Claim::ClaimedInWords("i've finished"));
}

#[test]
fn negated_or_asked_claims_are_not_claims() {
    assert_eq!(judge("The task is not complete: two tests fail."), Claim::Nothing);
    assert_eq!(judge("It isn't finished yet, the parser still panics on empty input."), Claim::Nothing);
    assert_eq!(judge("Is the task complete? The plan lists one more item."), Claim::Nothing);
    assert_eq!(judge("I finished reading the module and found the bug in the cache."), Claim::Nothing);
}

#[test]
fn ready_to_continue() {
    assert_eq!(judge("Task 2 is complete. Proceeding with task 3."), Claim::ReadyToContinue("proceeding with"));
    assert_eq!(judge("The schema is in place. Shall I continue?"), Claim::ReadyToContinue("shall i continue"));
    assert_eq!(judge("Next I will wire up the CLI flag."), Claim::ReadyToContinue("next i will"));
    assert_eq!(
        judge("Let me know if you want me to continue with the remaining endpoints."),
        Claim::ReadyToContinue("want me to continue")
    );
    assert_eq!(judge("I'm ready to continue whenever you are."), Claim::ReadyToContinue("ready to continue"));
}

#[test]
fn the_last_word_wins() {
    assert_eq!(judge("Next I will add tests. ... Tests added; all done."), Claim::ClaimedInWords("all done"));
    assert_eq!(judge("Part one is complete. Next I'll do part two."), Claim::ReadyToContinue("next i'll"));
}

#[test]
fn words_in_code_do_not_count() {
    assert_eq!(judge("The log says `all done` but the job failed:\n```\ntask complete\n```\n"), Claim::Nothing);
}

#[test]
fn typographic_apostrophes_are_read() {
    assert_eq!(judge("I’ve finished."), Claim::ClaimedInWords("i've finished"));
    assert_eq!(judge("I won’t output <promise>DONE</promise>"), Claim::Nothing);
}

#[test]
fn nothing_for_plain_progress() {
    assert_eq!(judge("Refactored the loader and added two tests."), Claim::Nothing);
    assert_eq!(judge(""), Claim::Nothing);
}

/// Files are named `NAME.false.txt` (must be no Done/Goal), `NAME.done.txt` and
/// `NAME.goal.txt`.
#[test]
fn corpus_has_zero_false_completions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/completion");
    let mut counts = [0usize; 3];
    let mut wrong = Vec::new();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let got = judge(&text);
        let (slot, ok) = if name.ends_with(".false.txt") {
            (0, !matches!(got, Claim::Done | Claim::Goal))
        } else if name.ends_with(".done.txt") {
            (1, got == Claim::Done)
        } else if name.ends_with(".goal.txt") {
            (2, got == Claim::Goal)
        } else {
            continue;
        };
        counts[slot] += 1;
        if !ok {
            wrong.push(format!("{name}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "misjudged: {wrong:#?}");
    assert!(counts[0] >= 15, "only {} false cases", counts[0]);
    assert!(counts[1] + counts[2] >= 5, "only {} true cases", counts[1] + counts[2]);
}

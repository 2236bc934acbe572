use super::*;
use crate::testkit::corpus;

/// Each text's claim, the text named in a failure.
#[track_caller]
fn judged(cases: &[(&str, Claim)]) {
    for (text, want) in cases {
        assert_eq!(&judge(text), want, "{text}");
    }
}

/// The rule that denied `text`, or a panic naming what the judge said instead.
fn denied(text: &str) -> Rule {
    match judge(text) {
        Claim::Denied(why) => why.rule,
        other => panic!("not denied: {text:?} -> {other:?}"),
    }
}

/// The rule that denied each text.
#[track_caller]
fn denials(cases: &[(&str, Rule)]) {
    for (text, rule) in cases {
        assert_eq!(&denied(text), rule, "{text}");
    }
}

#[test]
fn a_tag_at_the_very_end_is_the_signal() {
    judged(&[
        ("Implemented the parser; all 48 tests pass.\n\n<promise>DONE</promise>\n", Claim::Done),
        ("Everything in the plan is built and verified. <promise>COMPLETE</promise>", Claim::Goal),
        ("<promise>DONE</promise>", Claim::Done),
        ("Iteration 3: done.\n<promise>DONE</promise>\n<promise>COMPLETE</promise>", Claim::Goal),
        ("Final status:\n<promise>DONE</promise>", Claim::Done),
    ]);
}

#[test]
fn a_finished_sentence_before_the_tag_may_say_no() {
    judged(&[
        ("No warnings, no failures. <promise>DONE</promise>", Claim::Done),
        ("I could not run the Docker tests, but unit tests pass.\n\n<promise>DONE</promise>", Claim::Done),
    ]);
}

#[test]
fn negated_or_postponed_tags_are_denied() {
    denials(&[
        ("I have not printed <promise>COMPLETE</promise>", Rule::PostponedSignal),
        ("I won't output <promise>DONE</promise>", Rule::PostponedSignal),
        ("The tests still fail, so I am not ready for <promise>DONE</promise>", Rule::NegatedWork),
        ("Once the migration runs I will print <promise>DONE</promise>", Rule::PostponedSignal),
        ("I won't output\n<promise>DONE</promise>", Rule::PostponedSignal),
        ("The tests still fail, so this is not done.\n<promise>DONE</promise>", Rule::NegatedWork),
        ("I will print the tag once the build is green.\n\n<promise>DONE</promise>", Rule::PostponedSignal),
        ("Two endpoints are left to implement.\n\n<promise>DONE</promise>", Rule::NegatedWork),
        ("cargo test: 41 passed; 3 failed\n<promise>DONE</promise>", Rule::NegatedWork),
        ("Fixing the last lint warning next.\n<promise>DONE</promise>", Rule::StillWorking),
    ]);
}

#[test]
fn the_tag_on_its_own_last_line_is_accepted_whatever_words_the_summary_uses() {
    // The rows of issue #12: ordinary words in a line without a period.
    for line in [
        "All 42 tests pass; no failures",
        "Added a --json flag so users can pipe the output",
        "Fixed the bug where the parser would crash on empty input",
        "ATTEMPT-OUTPUT-1234",
        "You can run cargo test to verify.",
        "- Removed the old config loader, which is no longer needed",
        "Users will now see the output of every step",
        "The parser no longer fails on empty input",
        "Fixed the bug where tests fail when TZ is unset",
        "Nothing is left to do",
    ] {
        assert_eq!(judge(&format!("{line}\n<promise>DONE</promise>")), Claim::Done, "{line}");
        assert_eq!(judge(&format!("{line}\r\n<promise>DONE</promise>\r\n")), Claim::Done, "{line} (CRLF)");
    }
}

#[test]
fn a_tag_embedded_after_words_of_doubt_is_doubtful_not_denied() {
    let got = judge("Added a --json flag so users can pipe the output <promise>DONE</promise>");
    match got {
        Claim::Doubtful { goal: false, why } => {
            assert_eq!(why.rule, Rule::DoubtWord);
            assert!(why.words.starts_with("can:"), "{}", why.words);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        judge("Everything works like the spec says <promise>COMPLETE</promise>"),
        Claim::Doubtful { goal: true, .. }
    ));
}

#[test]
fn an_unsure_paragraph_is_doubtful() {
    let got = judge("Migrated the sessions table. I'm not sure the rollback works.\n\n<promise>DONE</promise>");
    assert!(matches!(got, Claim::Doubtful { why: Why { rule: Rule::Uncertain, .. }, .. }), "{got:?}");
}

#[test]
fn echoed_instructions_are_not_signals() {
    denials(&[
        ("When the iteration is done, end your final message with <promise>DONE</promise>", Rule::InstructionEcho),
        ("End your final message with:\n\n<promise>DONE</promise>", Rule::InstructionEcho),
        ("> When everything is finished, print <promise>COMPLETE</promise>", Rule::Quoted),
        ("For example:\n<promise>DONE</promise>", Rule::Example),
    ]);
}

#[test]
fn quoted_tags_are_not_signals() {
    denials(&[
        ("The done signal is \"<promise>DONE</promise>\"", Rule::Quoted),
        ("The done signal is \"<promise>DONE</promise>", Rule::Quoted),
        ("The done signal is `<promise>DONE</promise>`", Rule::InCode),
        ("Use this:\n```\n<promise>DONE</promise>\n```", Rule::InCode),
        ("Use this:\n```\n<promise>DONE</promise>", Rule::InCode),
    ]);
}

#[test]
fn a_tag_followed_by_more_text_is_not_a_signal() {
    denials(&[
        ("<promise>DONE</promise>\nActually, one test still fails; fixing it next.", Rule::TagNotLast),
        ("<promise>COMPLETE</promise> Now let me also update the docs.", Rule::TagNotLast),
    ]);
}

#[test]
fn a_limit_notice_is_nothing() {
    judged(&[
        ("You've hit your limit · resets 8pm (Europe/Berlin)", Claim::Nothing),
        ("All done!\nYou've hit your limit · resets 8pm", Claim::Nothing),
    ]);
    assert_eq!(denied("Claude AI usage limit reached|1718000000\n<promise>DONE</promise>"), Rule::LimitNotice);
}

#[test]
fn done_in_words() {
    judged(&[
        ("All done! The endpoint now validates input.", Claim::ClaimedInWords("all done")),
        ("The task is complete.", Claim::ClaimedInWords("task is complete")),
        ("Finished.", Claim::ClaimedInWords("finished")),
        ("Everything is implemented and documented.", Claim::ClaimedInWords("everything is implemented")),
        ("Migration written, tests green. I've finished.", Claim::ClaimedInWords("i've finished")),
    ]);
}

#[test]
fn negated_or_asked_claims_are_not_claims() {
    judged(&[
        ("The task is not complete: two tests fail.", Claim::Nothing),
        ("It isn't finished yet, the parser still panics on empty input.", Claim::Nothing),
        ("Is the task complete? The plan lists one more item.", Claim::Nothing),
        ("I finished reading the module and found the bug in the cache.", Claim::Nothing),
    ]);
}

#[test]
fn ready_to_continue() {
    judged(&[
        ("Task 2 is complete. Proceeding with task 3.", Claim::ReadyToContinue("proceeding with")),
        ("The schema is in place. Shall I continue?", Claim::ReadyToContinue("shall i continue")),
        ("Next I will wire up the CLI flag.", Claim::ReadyToContinue("next i will")),
        (
            "Let me know if you want me to continue with the remaining endpoints.",
            Claim::ReadyToContinue("want me to continue"),
        ),
        ("I'm ready to continue whenever you are.", Claim::ReadyToContinue("ready to continue")),
    ]);
}

#[test]
fn the_last_word_wins() {
    judged(&[
        ("Next I will add tests. ... Tests added; all done.", Claim::ClaimedInWords("all done")),
        ("Part one is complete. Next I'll do part two.", Claim::ReadyToContinue("next i'll")),
    ]);
}

#[test]
fn words_in_code_do_not_count() {
    assert_eq!(judge("The log says `all done` but the job failed:\n```\ntask complete\n```\n"), Claim::Nothing);
}

#[test]
fn typographic_apostrophes_are_read() {
    assert_eq!(judge("I’ve finished."), Claim::ClaimedInWords("i've finished"));
    assert_eq!(denied("I won’t output <promise>DONE</promise>"), Rule::PostponedSignal);
}

#[test]
fn nothing_for_plain_progress() {
    judged(&[("Refactored the loader and added two tests.", Claim::Nothing), ("", Claim::Nothing)]);
}

/// Files are named `NAME.false.txt` (a tag must never be accepted, not even with a
/// doubt: an agent without a session would get no question), `NAME.done.txt` and
/// `NAME.goal.txt`.
#[test]
fn corpus_has_zero_false_completions() {
    let mut counts = [0usize; 3];
    let mut wrong = Vec::new();
    for (name, text) in corpus("completion") {
        let got = judge(&text);
        let (slot, ok) = if name.ends_with(".false.txt") {
            (0, !matches!(got, Claim::Done | Claim::Goal | Claim::Doubtful { .. }))
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
    println!(
        "adversarial completion corpus: {} cases, {} false completions; {} true cases",
        counts[0],
        wrong.len(),
        counts[1] + counts[2]
    );
    assert!(wrong.is_empty(), "misjudged: {wrong:#?}");
    assert!(counts[0] >= 100, "only {} false cases", counts[0]);
    assert!(counts[1] + counts[2] >= 5, "only {} true cases", counts[1] + counts[2]);
}

/// `honest/*.txt`: endings of finished work in the styles of the four CLIs. The first
/// line is `# origin: …` (what the ending imitates), the rest is the final message.
/// None may be rejected; a doubt is allowed (it costs a question, not a failure).
#[test]
fn honest_corpus_has_zero_rejections() {
    let mut cases = Vec::new();
    let mut bad = Vec::new();
    for (name, text) in corpus("completion/honest") {
        let Some((origin, body)) = text.split_once('\n') else {
            bad.push(format!("{name}: empty"));
            continue;
        };
        if !origin.starts_with("# origin: ") || origin.trim_end().len() <= "# origin: ".len() {
            bad.push(format!("{name}: the first line must be `# origin: …`"));
        }
        cases.push((name, body.to_string()));
    }
    let (mut accepted, mut doubted, mut rejected) = (0, 0, Vec::new());
    for (name, body) in &cases {
        match judge(body) {
            Claim::Done | Claim::Goal => accepted += 1,
            Claim::Doubtful { .. } => doubted += 1,
            other => rejected.push(format!("{name}: {other:?}")),
        }
    }
    println!(
        "honest completion corpus: {} endings, {} rejections ({accepted} accepted outright, {doubted} after a confirmation question)",
        cases.len(),
        rejected.len()
    );
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(rejected.is_empty(), "rejected honest endings: {rejected:#?}");
    assert!(cases.len() >= 150, "only {} honest endings", cases.len());
    assert!(doubted * 10 <= cases.len(), "{doubted} honest endings would need a question");
}

/// Two honest endings that differ by one substituted word test the same thing twice.
#[test]
fn honest_corpus_has_no_near_duplicates() {
    let cases: Vec<(String, Vec<String>)> = corpus("completion/honest")
        .into_iter()
        .map(|(name, text)| {
            let body = text.split_once('\n').map_or("", |(_, b)| b);
            (name, body.split_whitespace().map(str::to_string).collect())
        })
        .collect();
    let mut near = Vec::new();
    for (i, (a, wa)) in cases.iter().enumerate() {
        for (b, wb) in &cases[i + 1..] {
            if wa.len() == wb.len() && wa.iter().zip(wb).filter(|(x, y)| x != y).count() <= 1 {
                near.push(format!("{a} ~ {b}"));
            }
        }
    }
    assert!(near.is_empty(), "near-duplicate honest endings: {near:#?}");
}

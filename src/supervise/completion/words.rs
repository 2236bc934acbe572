//! Completion in words: "all done" is a claim to verify, "shall I continue?" is an
//! agent that stopped to ask. When a message says both, the later phrase is the
//! agent's last word and wins.

use super::{Claim, normalize};
use super::{DONE_TAG, GOAL_TAG};
use crate::supervise::markdown::mask_code;

const CLAIMS: &[&str] = &[
    "all done",
    "all finished",
    "all set",
    "i'm done",
    "i am done",
    "we're done",
    "we are done",
    "i'm finished",
    "i have finished",
    "i've finished",
    "i have completed",
    "i've completed",
    "task is complete",
    "task is completed",
    "task is done",
    "task is finished",
    "task complete",
    "tasks are complete",
    "tasks are done",
    "tasks are finished",
    "work is complete",
    "work is done",
    "work is finished",
    "is now complete",
    "is now done",
    "is now finished",
    "is complete",
    "is finished",
    "are complete",
    "everything is implemented",
    "everything is done",
    "everything is in place",
    "fully implemented",
    "goal is complete",
    "goal is achieved",
    "nothing left to do",
    "nothing more to do",
    "ready for review",
    "successfully completed",
];

const READY: &[&str] = &[
    "proceeding with",
    "proceeding to",
    "i'll proceed",
    "i will proceed",
    "ready to continue",
    "ready to proceed",
    "ready to move on",
    "ready for the next",
    "next i will",
    "next, i will",
    "next i'll",
    "next, i'll",
    "next step is",
    "next steps",
    "let me know if you want",
    "let me know if you'd like",
    "let me know whether",
    "want me to continue",
    "i will now",
    "i'll now",
    "now i will",
    "now i'll",
    "moving on to",
    "continuing with",
    "i'll continue",
    "i will continue",
    "remaining tasks",
];

/// Questions whether to go on: ready to continue here, still at the work to
/// [`super::denial`].
pub(super) const ASKS_TO_GO_ON: &[&str] = &[
    "shall i continue",
    "shall i proceed",
    "should i continue",
    "should i proceed",
    "do you want me to",
    "would you like me to",
];

/// A whole sentence of one word ("Done.", "Finished!") is a claim too.
const BARE: &[&str] = &["done", "finished", "complete", "completed"];

/// Words in the few before a claim that turn it around: "not", "almost", "once".
const TURNS: &[&str] = &[
    "not", "never", "almost", "nearly", "once", "when", "until", "if", "before", "after", "yet", "whether", "unless",
    "no",
];

pub(super) fn judge(msg: &str) -> Claim {
    let masked = mask_code(msg).replace(DONE_TAG, "").replace(GOAL_TAG, "");
    let text = normalize(&masked);
    let claim = CLAIMS.iter().filter_map(|p| last_claim(&text, p).map(|at| (at, *p, Claim::ClaimedInWords(p))));
    let bare = bare_sentence(&text).map(|(at, p)| (at, p, Claim::ClaimedInWords(p)));
    let ready = READY
        .iter()
        .chain(ASKS_TO_GO_ON)
        .filter_map(|p| words_at(&text, p).last().map(|at| (at, *p, Claim::ReadyToContinue(p))));
    // Of overlapping phrases ("task is complete", "is complete") the longer names it.
    claim
        .chain(bare)
        .chain(ready)
        .max_by_key(|(at, p, _)| (at + p.len(), p.len()))
        .map_or(Claim::Nothing, |(_, _, c)| c)
}

/// The last occurrence of `phrase` that is neither turned around nor a question.
fn last_claim(text: &str, phrase: &str) -> Option<usize> {
    let claims = words_at(text, phrase).filter(|&at| {
        let before = &text[sentence_start(text, at)..at];
        let turned = before.contains("n't")
            || before
                .split(|c: char| !c.is_alphanumeric())
                .rev()
                .filter(|w| !w.is_empty())
                .take(4)
                .any(|w| TURNS.contains(&w));
        let asked = text[at + phrase.len()..].trim_start().starts_with('?');
        !turned && !asked
    });
    claims.last()
}

fn bare_sentence(text: &str) -> Option<(usize, &'static str)> {
    let mut start = 0;
    let mut found = None;
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '\n') {
            let sentence = text[start..i].trim().trim_matches(|c: char| !c.is_alphanumeric());
            if let Some(p) = BARE.iter().find(|p| **p == sentence) {
                found = Some((start, *p));
            }
            start = i + 1;
        }
    }
    let tail = text[start..].trim().trim_matches(|c: char| !c.is_alphanumeric());
    BARE.iter().find(|p| **p == tail).map(|p| (start, *p)).or(found)
}

fn sentence_start(text: &str, at: usize) -> usize {
    text[..at].rfind(['.', '!', '?', '\n', ';']).map_or(0, |i| i + 1)
}

/// Every place `phrase` stands in `text` as whole words ([`find_word`]), in order.
pub(super) fn words_at<'a>(text: &'a str, phrase: &'a str) -> impl Iterator<Item = usize> + 'a {
    std::iter::successors(find_word(text, phrase, 0), move |&at| find_word(text, phrase, at + phrase.len()))
}

/// `phrase` at or after `from`, not inside a longer word; a phrase that starts with
/// "n't" may follow the rest of its word ("couldn't finish").
pub(crate) fn find_word(text: &str, phrase: &str, from: usize) -> Option<usize> {
    let glued = phrase.starts_with("n't");
    let mut start = from;
    while let Some(i) = text.get(start..)?.find(phrase) {
        let at = start + i;
        let end = at + phrase.len();
        let before = glued || text[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = text[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return Some(at);
        }
        start = at + phrase.len().max(1);
    }
    None
}

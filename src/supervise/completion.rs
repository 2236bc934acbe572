//! Honest completion: whether the agent's final message gives the done or goal
//! signal as its own sign-off, or only talks about being done.
//!
//! A tag counts only at the very end of the message, outside code and quotes, and
//! only when the words leading to it do not negate, postpone, condition or quote
//! it. The cost is asymmetric: a missed genuine signal costs one more attempt with
//! a note asking for the signal, a false one ends the iteration with the work
//! unfinished. So any doubt reads as no signal, and the agent's words are only
//! sorted into a claim or a wish to continue, for the wording of the next note.

use super::markdown::mask_code;
use crate::workflow::done::{DONE_TAG, GOAL_TAG};

/// What the final message says about completion.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Ends with the goal tag: the iteration is done and so is the whole goal.
    Goal,
    /// Ends with the done tag.
    Done,
    /// Says it is done, in these words, without a valid tag.
    ClaimedInWords(&'static str),
    /// Stops to ask or announce what comes next, in these words.
    ReadyToContinue(&'static str),
    /// None of these.
    Nothing,
}

/// Judges the agent's final message. Thinking text must never be passed here.
pub fn judge(final_message: &str) -> Claim {
    if ends_with_limit_notice(final_message) {
        return Claim::Nothing;
    }
    if let Some(signal) = closing_signal(final_message) {
        return signal;
    }
    words::judge(final_message)
}

/// The trailing tags (a goal tag may sit next to a done tag) and whether they are
/// the agent's own sign-off.
fn closing_signal(msg: &str) -> Option<Claim> {
    let masked = mask_code(msg);
    let mut end = msg.trim_end().len();
    let mut first = None;
    let mut goal = false;
    while let Some(tag) = [GOAL_TAG, DONE_TAG].into_iter().find(|t| msg[..end].ends_with(t)) {
        let at = end - tag.len();
        if masked[at..end] != msg[at..end] {
            return None;
        }
        goal |= tag == GOAL_TAG;
        first = Some(at);
        end = msg[..at].trim_end().len();
    }
    let at = first?;
    sincere(msg, at).then_some(if goal { Claim::Goal } else { Claim::Done })
}

/// Whether the text leading to the tag at `at` leaves it as a plain sign-off.
///
/// After a finished sentence (on its line or the line before) the tag stands on its
/// own, whatever that sentence says about other things ("no warnings"), unless it
/// says the work is not done. A tag that continues a clause takes that clause's
/// meaning, so the clause must hold no doubt word.
fn sincere(msg: &str, at: usize) -> bool {
    let line_start = msg[..at].rfind('\n').map_or(0, |i| i + 1);
    let lead = &msg[line_start..at];
    if quoted(lead) {
        return false;
    }
    if !lead.trim().is_empty() {
        return !denies_done(lead) && !doubtful(open_clause(lead));
    }
    let mut blank_between = false;
    for line in msg[..line_start].lines().rev() {
        let line = line.trim();
        if line.is_empty() {
            blank_between = true;
            continue;
        }
        let introduces = line.ends_with(':');
        let runs_on = !blank_between && !line.ends_with(['.', '!', '?', ')']) && !structural(line);
        let clause = if introduces { open_clause(line.trim_end_matches(':')) } else { open_clause(line) };
        return !denies_done(line) && !((introduces || runs_on) && doubtful(clause));
    }
    true
}

/// The unfinished clause at the end of `text`: what follows its last sentence end.
fn open_clause(text: &str) -> &str {
    let t = text.trim_end();
    match t.rfind(['.', '!', '?', ';']) {
        Some(i) if i + 1 == t.len() => "",
        Some(i) => &t[i + 1..],
        None => t,
    }
}

/// Words that say the work is not done, anywhere on the line before the tag.
fn denies_done(line: &str) -> bool {
    const DENIALS: &[&str] = &[
        "not done",
        "not finished",
        "not complete",
        "not completed",
        "not yet",
        "n't done",
        "n't finished",
        "n't complete",
        "n't completed",
        "n't pass",
        "incomplete",
        "unfinished",
        "still fail",
        "still failing",
        "still broken",
        "not working",
        "n't work",
    ];
    let text = normalize(line);
    DENIALS.iter().any(|d| text.contains(d))
}

/// The tag directly after an opening quote, or in a blockquote, is cited.
fn quoted(lead: &str) -> bool {
    let open_quote = lead.trim_end().ends_with(['"', '\'', '`', '“', '‘', '«', '„', '*', '_']);
    let odd_quotes = lead.matches('"').count() % 2 == 1 || lead.matches('“').count() > lead.matches('”').count();
    open_quote || odd_quotes || lead.trim_start().starts_with('>')
}

/// Markdown structure, not a sentence: a list item, a heading, a table row.
fn structural(line: &str) -> bool {
    line.starts_with(['-', '*', '+', '#', '|']) || line.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok())
}

/// Words that make a tag anything but a sign-off: negation, condition, future,
/// instruction, quotation.
const DOUBT: &[&str] = &[
    "not",
    "no",
    "never",
    "nor",
    "without",
    "instead",
    "rather",
    "yet",
    "unless",
    "until",
    "till",
    "if",
    "when",
    "whenever",
    "once",
    "after",
    "before",
    "will",
    "would",
    "should",
    "shall",
    "must",
    "can",
    "cannot",
    "could",
    "may",
    "might",
    "need",
    "needs",
    "have to",
    "has to",
    "going to",
    "ready for",
    "wait",
    "waiting",
    "later",
    "soon",
    "you",
    "your",
    "print",
    "printing",
    "printed",
    "output",
    "outputting",
    "emit",
    "emitting",
    "write",
    "writing",
    "type",
    "say",
    "saying",
    "reply",
    "respond",
    "end with",
    "ending with",
    "instruction",
    "instructions",
    "prompt",
    "asked",
    "told",
    "tag",
    "string",
    "signal",
    "means",
    "e.g",
    "for example",
    "such as",
    "like",
    "example",
    "whether",
];

fn doubtful(lead: &str) -> bool {
    let text = normalize(lead);
    text.contains("n't")
        || text.contains("'ll")
        || text.contains('=')
        || DOUBT.iter().any(|w| words::find_word(&text, w, 0).is_some())
}

/// Lowercase (ASCII only, so byte offsets hold) with typographic apostrophes made
/// plain.
fn normalize(text: &str) -> String {
    text.replace(['’', '‘'], "'").to_ascii_lowercase()
}

/// A usage-limit notice is the CLI talking, not the agent: whatever precedes it,
/// it is no claim.
fn ends_with_limit_notice(msg: &str) -> bool {
    const NOTICES: &[&str] = &[
        "hit your limit",
        "usage limit reached",
        "usage limit has been reached",
        "limit reached · resets",
        "limit reached ∙ resets",
        "credit balance is too low",
        "out of extra usage",
    ];
    let mut rest = msg.trim_end();
    while let Some(head) = [GOAL_TAG, DONE_TAG].iter().find_map(|t| rest.strip_suffix(t)) {
        rest = head.trim_end();
    }
    let last = normalize(rest.lines().last().unwrap_or(""));
    NOTICES.iter().any(|n| last.contains(n))
}

mod words;

#[cfg(test)]
mod tests;

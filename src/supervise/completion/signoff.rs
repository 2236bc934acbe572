//! The tags at the end of a message and whether they are the agent's sign-off:
//! accepted, doubted (the tag ends a clause with a word of doubt), or denied (the
//! words before it negate the work or the tag, or the tag is cited, in code or not
//! last). A message without any tag is left to the judge of words.

use super::denial;
use super::{Claim, Rule, Why, normalize};
use super::{DONE_TAG, GOAL_TAG};
use crate::supervise::markdown::mask_code;

/// How many lines of the last paragraph before the tag are read for a denial.
const PARAGRAPH_LINES: usize = 8;

/// The verdict on the message's tags; `None` when it has none outside code.
pub(super) fn closing(msg: &str) -> Option<Claim> {
    let masked = mask_code(msg);
    let Some((at, end, goal)) = trailing_tags(msg) else { return stray_tag(msg, &masked) };
    let line_start = msg[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = msg[end..].find('\n').map_or(msg.len(), |i| end + i);
    if masked[at..end] != msg[at..end] {
        return Some(Claim::Denied(Why::new(Rule::InCode, &msg[line_start..line_end])));
    }
    let lead = &msg[line_start..at];
    if quoted(lead) {
        return Some(Claim::Denied(Why::new(Rule::Quoted, &msg[line_start..line_end])));
    }
    // Judged on the text with code blanked: a denial quoted in code is no denial.
    let paragraph = normalize(&last_paragraph(&masked[..line_start], &masked[line_start..at]));
    let denied = denial::negated_work(&paragraph)
        .or_else(|| denial::still_working(&paragraph))
        .or_else(|| denial::postponed_signal(&paragraph));
    if let Some(why) = denied {
        return Some(Claim::Denied(why));
    }
    let lead_clause = open_clause(&masked[line_start..at]);
    let clause = if lead.trim().is_empty() { run_on_line(&masked[..line_start]) } else { Some((lead_clause, false)) };
    if let Some(why) = clause.and_then(|(c, introduces)| denial::clause_object(&normalize(c), introduces)) {
        return Some(Claim::Denied(why));
    }
    // Only a tag embedded in a clause on its own line is doubted: a tag on a line of
    // its own is the signal, whatever words the summary above it uses.
    if let Some(word) = doubt_word(&normalize(lead_clause)) {
        let why = Why::new(Rule::DoubtWord, format!("{word}: {}", lead.trim()));
        return Some(Claim::Doubtful { goal, why });
    }
    if let Some(why) = denial::uncertain(&paragraph) {
        return Some(Claim::Doubtful { goal, why });
    }
    Some(if goal { Claim::Goal } else { Claim::Done })
}

/// The run of tags at the very end (a goal tag may sit next to a done tag): where it
/// starts and ends, and whether the goal tag is among them.
fn trailing_tags(msg: &str) -> Option<(usize, usize, bool)> {
    let end = msg.trim_end().len();
    let mut at = end;
    let mut goal = false;
    let mut found = false;
    while let Some(tag) = [GOAL_TAG, DONE_TAG].into_iter().find(|t| msg[..at].ends_with(t)) {
        at -= tag.len();
        goal |= tag == GOAL_TAG;
        found = true;
        at = msg[..at].trim_end().len();
    }
    // `at` is now the end of the text before the tags; step to the first tag.
    let first = found.then(|| at + msg[at..].len() - msg[at..].trim_start().len())?;
    Some((first, end, goal))
}

/// A tag that is not at the end: in code, wrapped in markup, or followed by text.
fn stray_tag(msg: &str, masked: &str) -> Option<Claim> {
    let (at, tag) = [DONE_TAG, GOAL_TAG].into_iter().filter_map(|t| msg.rfind(t).map(|i| (i, t))).max()?;
    let end = at + tag.len();
    let line_start = msg[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = msg[end..].find('\n').map_or(msg.len(), |i| end + i);
    if masked[at..end] != msg[at..end] {
        return Some(Claim::Denied(Why::new(Rule::InCode, &msg[line_start..line_end])));
    }
    let after = msg[end..].trim();
    if after.chars().all(|c| !c.is_alphanumeric()) {
        return Some(Claim::Denied(Why::new(Rule::Quoted, &msg[line_start..line_end])));
    }
    let words: String = after.chars().take(120).collect();
    Some(Claim::Denied(Why::new(Rule::TagNotLast, words)))
}

/// The tag directly after an opening quote or emphasis, or in a blockquote, is cited.
fn quoted(lead: &str) -> bool {
    let open_quote = lead.trim_end().ends_with(['"', '\'', '`', '“', '‘', '«', '„', '*', '_']);
    let odd_quotes = lead.matches('"').count() % 2 == 1 || lead.matches('“').count() > lead.matches('”').count();
    open_quote || odd_quotes || lead.trim_start().starts_with('>')
}

/// The last paragraph before the tag (at most [`PARAGRAPH_LINES`] lines), with the
/// text on the tag's own line.
fn last_paragraph(before: &str, lead: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    let mut started = !lead.trim().is_empty();
    for line in before.lines().rev() {
        if line.trim().is_empty() {
            if started {
                break;
            }
            continue;
        }
        started = true;
        lines.push(line);
        if lines.len() == PARAGRAPH_LINES {
            break;
        }
    }
    lines.reverse();
    lines.push(lead);
    lines.join("\n")
}

/// The line above a tag on its own line, when the tag continues it: it introduces
/// the tag (ends with ':', even across a blank line), or runs on into it (right
/// above, no sentence end, not a list item, heading or table row). The flag says
/// whether it introduces.
fn run_on_line(before: &str) -> Option<(&str, bool)> {
    let mut blank_between = false;
    for line in before.lines().rev() {
        let t = line.trim();
        if t.is_empty() {
            blank_between = true;
            continue;
        }
        if t.ends_with(':') {
            return Some((open_clause(t.trim_end_matches(':')), true));
        }
        let abbreviation = ["e.g.", "i.e.", "eg."].iter().any(|a| t.to_ascii_lowercase().ends_with(a));
        let ended = t.ends_with(['.', '!', '?', ')', ']', '`', '"', '*']) && !abbreviation;
        let runs_on = !blank_between && !ended && !structural(t);
        return runs_on.then(|| (open_clause(t.trim_end_matches('.')), false));
    }
    None
}

/// Markdown structure, not a sentence: a list item, a heading, a table row.
fn structural(line: &str) -> bool {
    line.starts_with(['-', '*', '+', '#', '|', '>'])
        || line.split_once(['.', ')']).is_some_and(|(n, _)| !n.is_empty() && n.parse::<u32>().is_ok())
}

/// The unfinished clause at the end of `text`: what follows its last sentence end.
fn open_clause(text: &str) -> &str {
    let t = text.trim_end();
    match denial::sentence_ends(t).last() {
        Some(i) if i + 1 == t.len() => "",
        Some(i) => &t[i + 1..],
        None => t,
    }
}

/// Words that leave doubt about a tag that ends their clause: negation, condition,
/// future, instruction, quotation. A doubt costs a question, never a failure.
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

/// The first word of doubt in a clause (normalized).
fn doubt_word(clause: &str) -> Option<&'static str> {
    ["n't", "'ll", "="]
        .into_iter()
        .find(|mark| clause.contains(mark))
        .or_else(|| DOUBT.iter().copied().find(|w| super::words::find_word(clause, w, 0).is_some()))
}

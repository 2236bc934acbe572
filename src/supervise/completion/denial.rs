//! What counts as a clear denial of a sign-off: words that negate the work ("not
//! done", "tests still fail"), say the agent is still at it ("fixing it next"), or
//! postpone, negate or cite the tag itself ("I will print the tag once…", "end your
//! final message with"). Ordinary words are not denials: "no failures", "users can
//! pipe the output", "the parser would crash" all end honest summaries.

use super::words::{ASKS_TO_GO_ON, find_word, words_at};
use super::{Rule, Why};

/// Phrases that negate the work, anywhere in the last paragraph before the tag.
const NEGATED_WORK: &[&str] = &[
    "not done",
    "not finished",
    "not complete",
    "not completed",
    "not ready",
    "not yet",
    "not there yet",
    "n't done",
    "n't finished",
    "n't complete",
    "n't completed",
    "n't ready",
    "n't finish",
    "not finish",
    "n't been finished",
    "n't been completed",
    "n't been done",
    "not been finished",
    "not been completed",
    "not been done",
    "n't work",
    "not working",
    "not all tests",
    "is incomplete",
    "are incomplete",
    "still incomplete",
    "remains incomplete",
    "is unfinished",
    "still unfinished",
    "left unfinished",
    "partially implemented",
    "partially done",
    "only partially",
    "half done",
    "half-done",
    "still to do",
    "still todo",
    "still need",
    "still needs",
    "still have to",
    "still has to",
    "unable to finish",
    "unable to complete",
    "could not finish",
    "could not complete",
    "did not finish",
    "did not complete",
    "remains to be done",
    "remain to be done",
    "work remains",
    "work left",
    "remaining work",
    "more work is needed",
    "needs more work",
    "left to do",
    "left to implement",
    "to be finished",
    "to be implemented",
    "not implemented",
    "work in progress",
    "still in progress",
    "i'm blocked",
    "i am blocked",
    "we're blocked",
    "we are blocked",
    "gave up",
    "ongoing",
    "underway",
    "halfway",
    "half way",
    "n't get to",
    "did not get to",
    "ran out of time",
    "out of time",
    "mostly done",
    "almost done",
    "nearly done",
    "mostly finished",
    "almost finished",
    "nearly finished",
    "mostly complete",
    "almost complete",
    "nearly complete",
    "mostly working",
    "everything except",
    "all except",
    "done except",
    "complete except",
    "finished except",
    "todo:",
    "- [ ]",
    "* [ ]",
    "❌",
    "✗",
    "✘",
];

/// Phrases of failure that a summary also uses to describe the bug it fixed ("the
/// bug where tests fail on Windows"): a denial only in a sentence that names no fix.
const FAILING: &[&str] = &[
    "still fail",
    "still fails",
    "still failing",
    "still broken",
    "still red",
    "still missing",
    "still crash",
    "still crashes",
    "still panics",
    "still times out",
    "still errors",
    "still open",
    "still pending",
    "still not",
    "still does not",
    "still doesn't",
    "still don't",
    "tests fail",
    "tests are failing",
    "test fails",
    "test is failing",
    "tests don't pass",
    "tests do not pass",
    "tests didn't pass",
    "tests did not pass",
    "test doesn't pass",
    "test does not pass",
    "not passing",
    "failing tests",
    "failing test",
    "build fails",
    "build is failing",
    "build is broken",
    "build is red",
    "fails to compile",
    "failed to compile",
    "does not compile",
    "doesn't compile",
    "won't compile",
    "n't build",
];

/// Words of a sentence that describes a fixed failure rather than a present one.
const FIXED: &[&str] = &[
    "fix",
    "fixed",
    "fixes",
    "resolved",
    "repaired",
    "prevent",
    "prevents",
    "no longer",
    "where",
    "previously",
    "used to",
];

/// States of the work that a negation a few words before denies: "not quite
/// finished", "I haven't implemented the export".
const WORK_STATES: &[&str] =
    &["done", "finished", "complete", "completed", "implemented", "ready", "working", "passing", "fixed"];

/// Phrases of uncertainty in the last paragraph: a doubt worth a question, not a
/// denial.
const UNCERTAIN: &[&str] = &[
    "not sure",
    "unsure",
    "not certain",
    "i think",
    "i believe",
    "hopefully",
    "probably",
    "might not",
    "may not",
    "untested",
    "not tested",
    "not verified",
    "unverified",
    "could not verify",
    "couldn't verify",
    "unable to verify",
    "could not test",
    "couldn't test",
];

/// Phrases before a `NEGATED_WORK` match that turn it into a statement of done:
/// "nothing left to do", "no work left".
const UNDONE: &[&str] = &["nothing", "no", "none", "zero", "0"];

/// First-person statements that the agent is still at the work or stops to ask
/// (with [`ASKS_TO_GO_ON`]).
const STILL_WORKING: &[&str] = &[
    "i'll fix",
    "i will fix",
    "i'll finish",
    "i will finish",
    "i'll continue",
    "i will continue",
    "i'll keep",
    "i will keep",
    "i'll now",
    "i will now",
    "i'll next",
    "next i'll",
    "next i will",
    "next, i'll",
    "next, i will",
    "i still need",
    "i need to",
    "we need to",
    "i have to",
    "i'm going to",
    "i am going to",
    "i'm about to",
    "i am about to",
    "fixing it next",
    "fixing them next",
    "fixing that next",
    "working on it",
    "still working",
    "let me now",
    "now let me",
    "let me fix",
    "let me finish",
    "let me run",
    "let me check",
    "let me verify",
    "want me to continue",
    "proceeding with",
    "proceeding to",
    "moving on to",
    "continuing with",
];

/// Verbs that give a tag.
const SIGNAL_VERBS: &[&str] = &[
    "print",
    "prints",
    "printed",
    "printing",
    "output",
    "outputs",
    "outputting",
    "emit",
    "emits",
    "emitted",
    "emitting",
    "write",
    "writes",
    "wrote",
    "written",
    "writing",
    "say",
    "says",
    "said",
    "saying",
    "type",
    "typed",
    "add",
    "added",
    "adding",
    "append",
    "appended",
    "send",
    "sent",
    "give",
    "given",
    "giving",
    "post",
    "use",
    "include",
    "declare",
    "signal",
    "mark",
    "put",
    "show",
    "echo",
    "return",
];

/// Verbs that end a message "with" a tag.
const END_VERBS: &[&str] = &[
    "end",
    "ends",
    "ending",
    "finish",
    "finishing",
    "close",
    "closing",
    "conclude",
    "reply",
    "respond",
    "answer",
    "sign",
    "wrap",
    "terminate",
];

/// What names the tag in a sentence.
const SIGNAL_NOUNS: &[&str] = &[
    "the tag",
    "done tag",
    "goal tag",
    "completion tag",
    "done signal",
    "goal signal",
    "completion signal",
    "done marker",
    "completion marker",
    "<promise>",
    "promise tag",
    "the promise",
];

/// The plain forms of those verbs, which start an instruction.
const IMPERATIVES: &[&str] = &[
    "print", "output", "emit", "write", "say", "type", "add", "append", "send", "give", "post", "use", "include",
    "declare", "end", "finish", "close", "conclude", "reply", "respond", "answer", "sign", "wrap",
];

/// Words that negate, postpone or condition what follows; "you" makes it an
/// instruction.
const NOT_NOW: &[&str] = &[
    "not",
    "never",
    "no",
    "will",
    "shall",
    "should",
    "must",
    "going to",
    "about to",
    "once",
    "when",
    "whenever",
    "until",
    "till",
    "unless",
    "if",
    "after",
    "before",
    "as soon as",
    "ready",
    "need",
    "needs",
    "have to",
    "has to",
    "cannot",
    "you",
    "your",
    "later",
    "yet",
];

/// Words before a verb that make it a noun: "the output", "a print".
const DETERMINERS: &[&str] =
    &["the", "a", "an", "its", "their", "his", "her", "our", "my", "this", "that", "of", "any", "json", "same"];

/// Endings that present the tag as an example or a citation.
const EXAMPLE_ENDINGS: &[&str] = &[
    "for example",
    "for instance",
    "e.g",
    "i.e",
    "such as",
    "like this",
    "like so",
    "look like",
    "looks like",
    "as follows",
    "the following",
    "the literal",
    "the string",
    "expects",
    "expected",
    "accepts",
];

/// Last words of a line that introduces the tag (ends with ':') as a sample.
const EXAMPLE_INTROS: &[&str] = &[
    "example",
    "examples",
    "sample",
    "template",
    "format",
    "like",
    "following",
    "literal",
    "string",
    "text",
    "line",
    "output",
];

/// The first phrase in `text` (normalized) that negates the work.
pub(super) fn negated_work(text: &str) -> Option<Why> {
    let negated = places(text, NEGATED_WORK).find(|&at| !last_words(&text[..at], 2).iter().any(|w| UNDONE.contains(w)));
    let failing = || places(text, FAILING).find(|&at| !speaks_of_a_fix(clause_before(text, at)));
    let at = negated.or_else(failing).or_else(|| negated_state(text)).or_else(|| failing_count(text))?;
    Some(Why::new(Rule::NegatedWork, sentence_around(text, at)))
}

/// Every place of each phrase in `text` as whole words, phrase by phrase.
fn places<'a>(text: &'a str, phrases: &'a [&'a str]) -> impl Iterator<Item = usize> + 'a {
    phrases.iter().flat_map(move |phrase| words_at(text, phrase))
}

/// A state of the work with a negation among the three words before it, in the
/// same clause ("not quite finished", "haven't implemented"; not "no longer").
fn negated_state(text: &str) -> Option<usize> {
    places(text, WORK_STATES).find(|&at| {
        let before = last_words(clause_before(text, at), 3);
        before.iter().enumerate().any(|(i, w)| {
            let longer = before.get(i + 1).is_some_and(|n| *n == "longer");
            matches!(*w, "not" | "never") || w.ends_with("n't") || (*w == "no" && !longer)
        })
    })
}

/// The first phrase of uncertainty in `text` (normalized).
pub(super) fn uncertain(text: &str) -> Option<Why> {
    UNCERTAIN
        .iter()
        .filter_map(|p| find_word(text, p, 0))
        .min()
        .map(|at| Why::new(Rule::Uncertain, sentence_around(text, at)))
}

/// "3 failed", "2 failures", as a test runner summarises: a count above zero, in a
/// sentence that does not say they were fixed.
fn failing_count(text: &str) -> Option<usize> {
    places(text, &["failed", "failing", "failures", "failure"]).find(|&at| {
        let count = last_words(&text[..at], 1).first().and_then(|w| w.parse::<u64>().ok());
        count.is_some_and(|n| n > 0) && !speaks_of_a_fix(clause_before(text, at))
    })
}

fn speaks_of_a_fix(clause: &str) -> bool {
    FIXED.iter().any(|w| find_word(clause, w, 0).is_some())
}

/// The clause that leads to byte `at`: from the sentence start or the last ", " or
/// " but " before it, so "fixed A, but B still fails" is read as "but B still fails".
fn clause_before(text: &str, at: usize) -> &str {
    let sentence = sentence_ends(&text[..at]).last().map_or(0, |i| i + 1);
    let comma = text[sentence..at].rfind([',', ':']).map_or(sentence, |i| sentence + i + 1);
    let but = text[sentence..at].rfind(" but ").map_or(sentence, |i| sentence + i + 1);
    &text[comma.max(but)..at]
}

/// The first phrase in `text` (normalized) saying the agent is still at the work,
/// or a sentence that puts work off ("I'll look at them in the next iteration",
/// "fixing the last warning next").
pub(super) fn still_working(text: &str) -> Option<Why> {
    if let Some(at) = STILL_WORKING.iter().chain(ASKS_TO_GO_ON).filter_map(|p| find_word(text, p, 0)).min() {
        return Some(Why::new(Rule::StillWorking, sentence_around(text, at)));
    }
    sentences(text)
        .find(|s| {
            // "fixing the last warning next", "I do the docs next"; not "the tests run next".
            let first = s.split_whitespace().next().unwrap_or_default();
            let doer = first.ends_with("ing") || ["i", "we"].iter().any(|w| find_word(s, w, 0).is_some());
            let ends_next = doer && last_words(s, 1).first().is_some_and(|w| *w == "next");
            let future = ["i'll", "i will", "we'll", "we will"].iter().any(|w| find_word(s, w, 0).is_some());
            let later = ["next", "later", "afterwards", "tomorrow"].iter().any(|w| find_word(s, w, 0).is_some());
            let offer = ["if you", "if you'd", "if needed", "if wanted", "happy to"]
                .iter()
                .any(|w| find_word(s, w, 0).is_some());
            ends_next || (future && later && !offer)
        })
        .map(|s| Why::new(Rule::StillWorking, s.trim().to_string()))
}

/// A sentence that names the tag and postpones, negates or conditions giving it:
/// "I will print the tag once the tests pass", "I have not printed the done tag".
pub(super) fn postponed_signal(text: &str) -> Option<Why> {
    sentences(text).find_map(|s| {
        let names_tag = SIGNAL_NOUNS.iter().any(|n| find_word(s, n, 0).is_some());
        let gives = SIGNAL_VERBS.iter().chain(END_VERBS).any(|v| find_word(s, v, 0).is_some());
        (names_tag && gives && not_now(s)).then(|| Why::new(Rule::PostponedSignal, s.trim().to_string()))
    })
}

/// The clause the tag continues ("I won't output", "end your final message with",
/// "for example:"), when the tag is the object of what it says.
pub(super) fn clause_object(clause: &str, introduces: bool) -> Option<Why> {
    let clause = clause.trim().trim_end_matches([':', ',', ' ', '-', '—', '–']).trim_end();
    let words = last_words(clause, 3);
    let why = |rule| Some(Why::new(rule, clause.trim().to_string()));
    let intro_sample = introduces && EXAMPLE_INTROS.iter().any(|e| ends_with_words(clause, e));
    if intro_sample || EXAMPLE_ENDINGS.iter().any(|e| ends_with_words(clause, e)) {
        return why(Rule::Example);
    }
    let instruction = ["you", "your"].iter().any(|w| find_word(clause, w, 0).is_some());
    let last = words.last().copied().unwrap_or_default();
    let before = words.len().checked_sub(2).and_then(|i| words.get(i)).copied();
    let gives = SIGNAL_VERBS.contains(&last) && !before.is_some_and(|w| DETERMINERS.contains(&w));
    let ends_with = last == "with" && END_VERBS.iter().any(|v| find_word(clause, v, 0).is_some());
    let ready = ends_with_words(clause, "ready for") || ends_with_words(clause, "ready to");
    let names_tag =
        matches!(last, "is" | "be" | "are") && SIGNAL_NOUNS.iter().any(|n| find_word(clause, n, 0).is_some());
    // A clause that starts with a plain verb ("print", "end with") is an instruction.
    let imperative = clause.split_whitespace().next().is_some_and(|w| IMPERATIVES.contains(&w));
    let mentions_giving = SIGNAL_VERBS.iter().chain(END_VERBS).any(|v| find_word(clause, v, 0).is_some());
    if introduces && mentions_giving && (instruction || imperative) {
        return why(Rule::InstructionEcho);
    }
    if introduces && mentions_giving && not_now(clause) {
        return why(Rule::PostponedSignal);
    }
    if !(gives || ends_with || ready || names_tag) {
        return None;
    }
    if instruction || imperative {
        return why(Rule::InstructionEcho);
    }
    if names_tag || not_now(clause) {
        return why(Rule::PostponedSignal);
    }
    None
}

fn not_now(text: &str) -> bool {
    text.contains("n't") || text.contains("'ll") || NOT_NOW.iter().any(|w| find_word(text, w, 0).is_some())
}

/// Whether `text` ends with the whole words of `phrase`.
fn ends_with_words(text: &str, phrase: &str) -> bool {
    let text = text.trim_end_matches(|c: char| !c.is_alphanumeric());
    text.ends_with(phrase) && text[..text.len() - phrase.len()].chars().next_back().is_none_or(char::is_whitespace)
}

/// The last `n` words of `text`, in order.
fn last_words(text: &str, n: usize) -> Vec<&str> {
    let mut words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '.'))
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
        .rev()
        .take(n)
        .collect();
    words.reverse();
    words
}

fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut ends: Vec<usize> = sentence_ends(text).collect();
    ends.push(text.len());
    ends.into_iter()
        .map(move |end| {
            let s = &text[start..end];
            start = (end + 1).min(text.len());
            s
        })
        .filter(|s| !s.trim().is_empty())
}

/// Where sentences end: '.', '!', '?', ';' before a space or the end (so "PLAN.md"
/// and "e.g" stay whole), and every line end.
pub(super) fn sentence_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().filter_map(move |(i, b)| {
        let next_blank = bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
        (*b == b'\n' || (matches!(b, b'.' | b'!' | b'?' | b';') && next_blank)).then_some(i)
    })
}

/// The sentence of `text` that holds byte `at`, trimmed to a readable length.
fn sentence_around(text: &str, at: usize) -> String {
    let start = sentence_ends(&text[..at]).last().map_or(0, |i| i + 1);
    let end = sentence_ends(&text[at..]).next().map_or(text.len(), |i| at + i);
    let s = text[start..end].trim();
    crate::text::ellipsis(s, 120)
}

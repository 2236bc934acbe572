//! Honest completion: whether the agent's final message gives the done or goal
//! signal as its own sign-off, or only talks about being done.
//!
//! The tag on its own last line is the agent's signal. It is rejected only where the
//! words before it clearly deny it: they negate the work ("tests still fail"), say the
//! agent is still at it, or postpone, negate, cite or quote the tag ("I will print
//! the tag once…", "end your final message with"), or where the tag is in code,
//! quoted, or followed by more text. A tag embedded at the end of a clause whose
//! words leave a doubt ("…so users can pipe `<tag>`") is *doubtful*: the shell asks
//! the agent to confirm rather than failing finished work. Ordinary words ("no
//! failures", "would", "output") are never a denial.
//!
//! The adversarial corpus (`tests/corpus/completion/`) and the honest one
//! (`tests/corpus/completion/honest/`) measure both ways.

use serde::Serialize;

/// The done signal: the iteration's work is finished.
pub(crate) const DONE_TAG: &str = "<promise>DONE</promise>";
/// The goal signal: the whole goal is reached.
pub(crate) const GOAL_TAG: &str = "<promise>COMPLETE</promise>";

/// What the final message says about completion.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Ends with the goal tag: the iteration is done and so is the whole goal.
    Goal,
    /// Ends with the done tag.
    Done,
    /// Ends with a tag, but the words around it leave a doubt.
    Doubtful { goal: bool, why: Why },
    /// Has a tag that the words around it deny, cite or bury: no signal.
    Denied(Why),
    /// Says it is done, in these words, without a valid tag.
    ClaimedInWords(&'static str),
    /// Stops to ask or announce what comes next, in these words.
    ReadyToContinue(&'static str),
    /// None of these.
    Nothing,
}

/// Why a tag was doubted or denied: the rule and the agent's words that set it off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Why {
    pub rule: Rule,
    pub words: String,
}

impl Why {
    pub(crate) fn new(rule: Rule, words: impl Into<String>) -> Self {
        Self { rule, words: one_line(&words.into()) }
    }

    /// "negated_work (\"the flaky test still fails\")", for journals and notes.
    pub(crate) fn describe(&self) -> String {
        format!("{} (\"{}\")", self.rule.into_str(), self.words)
    }

    /// The same in words, for what a person reads: "the words before the tag say the
    /// work is not done (\"the flaky test still fails\")".
    pub(crate) fn plain(&self) -> String {
        format!("{} (\"{}\")", self.rule.plain(), self.words)
    }
}

/// The rules that doubt or deny a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub(crate) enum Rule {
    /// The words before the tag say the work is not done ("tests still fail").
    NegatedWork,
    /// The words before the tag say the agent is still at the work ("fixing it next").
    StillWorking,
    /// The words postpone, negate or condition the tag ("I won't output").
    PostponedSignal,
    /// The tag ends an instruction ("end your final message with").
    InstructionEcho,
    /// The tag is cited as an example ("for example:").
    Example,
    /// The tag is in quotes, emphasis or a blockquote.
    Quoted,
    /// The tag is inside a code span or block.
    InCode,
    /// More text follows the last tag.
    TagNotLast,
    /// The message ends with a usage-limit notice: the CLI talking, not the agent.
    LimitNotice,
    /// The tag ends a clause that holds a word of doubt (a doubt, never a denial).
    DoubtWord,
    /// The last paragraph before the tag is unsure ("not sure the migration works").
    Uncertain,
    /// No tag, but the message says the work is done (a doubt worth a question).
    ClaimInWords,
}

impl Rule {
    /// The rule in a sentence (its name stays in the journal's `signoff` event).
    pub(crate) fn plain(self) -> &'static str {
        match self {
            Rule::NegatedWork => "the words before the tag say the work is not done",
            Rule::StillWorking => "the words before the tag say the agent is still at it",
            Rule::PostponedSignal => "the agent puts the tag off or makes it conditional",
            Rule::InstructionEcho => "the tag ends a repeated instruction, not a sign-off",
            Rule::Example => "the tag is cited as an example",
            Rule::Quoted => "the tag is quoted",
            Rule::InCode => "the tag is inside code",
            Rule::TagNotLast => "more text follows the tag",
            Rule::LimitNotice => "the message ends with a usage-limit notice",
            Rule::DoubtWord => "the line of the tag holds a word of doubt",
            Rule::Uncertain => "the last paragraph before the tag is unsure",
            Rule::ClaimInWords => "the agent says it is done, without the done tag",
        }
    }
}

impl Claim {
    /// What a confirmation question would be about, and whether the doubted tag is
    /// the goal tag: a doubtful tag or a claim in words; `None` for anything else.
    pub(crate) fn doubt(&self) -> Option<(Why, bool)> {
        match self {
            Claim::Doubtful { goal, why } => Some((why.clone(), *goal)),
            Claim::ClaimedInWords(words) => Some((Why::new(Rule::ClaimInWords, *words), false)),
            _ => None,
        }
    }
}

/// Judges the agent's final message. Thinking text must never be passed here.
pub(crate) fn judge(final_message: &str) -> Claim {
    // Line ends from Windows tools or a PTY must not move the tag off "its own line".
    let msg = final_message.replace("\r\n", "\n").replace('\r', "\n");
    if let Some(notice) = limit_notice(&msg) {
        let has_tag = msg.contains(DONE_TAG) || msg.contains(GOAL_TAG);
        return if has_tag { Claim::Denied(Why::new(Rule::LimitNotice, notice)) } else { Claim::Nothing };
    }
    signoff::closing(&msg).unwrap_or_else(|| words::judge(&msg))
}

/// Collapses whitespace and cuts long words of evidence (160 characters).
pub(super) fn one_line(text: &str) -> String {
    crate::text::ellipsis(&text.split_whitespace().collect::<Vec<_>>().join(" "), 160)
}

/// Lowercase (ASCII only, so byte offsets hold) with typographic apostrophes made
/// plain.
fn normalize(text: &str) -> String {
    text.replace(['’', '‘'], "'").to_ascii_lowercase()
}

/// A usage-limit notice is the CLI talking, not the agent: whatever precedes it,
/// it is no claim. Returns the notice's line.
fn limit_notice(msg: &str) -> Option<String> {
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
    let line = rest.lines().last().unwrap_or("");
    let last = normalize(line);
    NOTICES.iter().any(|n| last.contains(n)).then(|| line.trim().to_string())
}

mod denial;
mod signoff;
mod words;

pub(crate) use words::find_word;

#[cfg(test)]
mod tests;

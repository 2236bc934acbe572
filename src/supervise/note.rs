//! Recovery notes: the short, self-contained message that starts the next attempt
//! after one went wrong. A fresh session knows nothing of the failed one and a
//! resumed one may have lost its tail, so the note restates the goal, where the
//! work stands, what went wrong and what to do about the last tool call.

use super::completion::{DONE_TAG, GOAL_TAG};
use crate::supervise::completion::{Rule, Why};

/// What ended the previous attempt, as far as the note is concerned.
/// `SignOffRejected`: the final message ended with a tag that its own words deny
/// (`why`: the rule and the words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trouble {
    Stall,
    Loop { description: String },
    ToolText { in_thinking: bool, excerpt: String },
    Crash { detail: String },
    Limit { detail: String },
    NoDoneSignal,
    SignOffRejected { why: String },
    Interrupted,
    Other(String),
}

/// Whether the last tool call's outcome is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    Finished,
    StartedNoResult,
}

/// The last tool call of the previous attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastTool {
    pub name: String,
    pub input_summary: String,
    pub state: ToolState,
}

/// Everything a note is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoteContext<'a> {
    /// The goal (PROMPT.md); the note keeps its first ~400 characters.
    pub goal: &'a str,
    pub phase: &'a str,
    pub iteration: u32,
    /// The iteration cap; 0 when the phase has none.
    pub iterations: u32,
    /// What the checkpoint says is done, e.g. "phases plan done; develop iterations 1–2 done".
    pub done_summary: &'a str,
    pub what_went_wrong: Trouble,
    pub last_tool: Option<LastTool>,
}

const GOAL_CHARS: usize = 400;
const DETAIL_CHARS: usize = 200;
const HEADER: &str = "Recovery note from ralph: your previous attempt at this iteration did not finish.";
const GOAL: &str = "Goal: ";

/// The note, a few lines of plain text.
#[must_use]
pub(crate) fn note(ctx: &NoteContext<'_>) -> String {
    let mut lines = vec![HEADER.to_owned()];
    let goal = one_line(ctx.goal, GOAL_CHARS);
    if !goal.is_empty() {
        lines.push(format!("{GOAL}{goal}"));
    }
    let of = if ctx.iterations > 0 { format!(" of {}", ctx.iterations) } else { String::new() };
    lines.push(format!("Phase: {}, iteration {}{of}.", ctx.phase, ctx.iteration));
    let done = one_line(ctx.done_summary, DETAIL_CHARS);
    lines.push(if done.is_empty() {
        "Done so far: nothing recorded yet.".to_owned()
    } else {
        format!("Done so far: {}.", done.trim_end_matches('.'))
    });
    let (wrong, advice) = trouble(&ctx.what_went_wrong);
    lines.push(format!("What went wrong: {wrong}"));
    lines.push(advice.to_owned());
    if let Some(tool) = &ctx.last_tool {
        let input = one_line(&tool.input_summary, DETAIL_CHARS);
        let call = if input.is_empty() { tool.name.clone() } else { format!("{} ({input})", tool.name) };
        lines.push(match tool.state {
            ToolState::Finished => format!("Your last tool call, {call}, finished: do not repeat it."),
            ToolState::StartedNoResult => format!(
                "Your last tool call, {call}, started but its result was never seen, so its outcome is unknown: check whether it took effect before redoing it."
            ),
        });
    }
    lines.push("Then carry on with this iteration; your task instructions still apply.".to_owned());
    lines.join("\n")
}

/// The stored `note` with its goal line showing the current `goal`. A note is kept
/// from the failure until the next launch, and the user may edit the goal file in
/// between (a pause, then `--resume`): the agent must get the new text. Text that
/// is not a note made by [`note`] is returned unchanged.
#[must_use]
pub(crate) fn with_goal(note: &str, goal: &str) -> String {
    let Some(rest) = note.strip_prefix(HEADER) else { return note.to_owned() };
    let mut lines: Vec<String> = rest.lines().map(str::to_owned).collect();
    // `rest` starts with the header's line break: lines[0] is empty.
    let goal = one_line(goal, GOAL_CHARS);
    let at = lines.get(1).is_some_and(|l| l.starts_with(GOAL)).then_some(1);
    match (at, goal.is_empty()) {
        (Some(i), false) => lines[i] = format!("{GOAL}{goal}"),
        (Some(i), true) => drop(lines.remove(i)),
        (None, false) => lines.insert(1.min(lines.len()), format!("{GOAL}{goal}")),
        (None, true) => {}
    }
    format!("{HEADER}{}", lines.join("\n"))
}

fn trouble(t: &Trouble) -> (String, &'static str) {
    const CONTINUE: &str = "Continue from where it stopped; check the files first rather than trusting memory.";
    match t {
        Trouble::Stall => (
            "it produced no output for too long while no tool was running, so it was stopped.".to_owned(),
            "Continue from where it stopped; run commands that may hang with a timeout.",
        ),
        Trouble::Loop { description } => (
            format!("it kept repeating the same tool calls without progress: {}.", one_line(description, DETAIL_CHARS)),
            "Stop repeating them and try a different approach: re-read the error, change the plan, or work on another part first.",
        ),
        Trouble::ToolText { in_thinking: false, excerpt } => (
            format!(
                "it wrote a tool call as plain text in its message instead of making the call, so nothing ran: {}.",
                quoted(excerpt)
            ),
            "Make every tool call through your real tool-calling mechanism; never type call syntax (XML tags or JSON) into your reply.",
        ),
        Trouble::ToolText { in_thinking: true, excerpt } => (
            format!(
                "a tool call was written inside its thinking and never made, because calls in reasoning do not run: {}.",
                quoted(excerpt)
            ),
            "Make that call now through your real tool-calling mechanism, outside your thinking.",
        ),
        Trouble::Crash { detail } => {
            (format!("the agent process ended unexpectedly ({}).", one_line(detail, DETAIL_CHARS)), CONTINUE)
        }
        Trouble::Limit { detail } => {
            (format!("it stopped at a provider usage or rate limit ({}).", one_line(detail, DETAIL_CHARS)), CONTINUE)
        }
        Trouble::NoDoneSignal => (
            "it ended without the completion signal, so this iteration does not count as done.".to_owned(),
            "If the work is complete, verify it and then give the completion signal exactly as your instructions say, as the very last thing in your final message; if not, finish it first.",
        ),
        Trouble::SignOffRejected { why } => (
            format!(
                "it ended with the completion signal, but its own words before it deny that the work is done, so ralph did not accept it: {}.",
                one_line(why, DETAIL_CHARS)
            ),
            "Finish the work first. When it is complete and verified, end your final message with the completion signal alone on its last line, and do not say anything before it that contradicts it.",
        ),
        Trouble::Interrupted => ("it was interrupted before it finished.".to_owned(), CONTINUE),
        Trouble::Other(what) => (format!("{}.", one_line(what, DETAIL_CHARS).trim_end_matches('.')), CONTINUE),
    }
}

/// The confirmation question that resumes the session when the judge doubts a
/// sign-off or the agent claimed done in words: `why` says what raised the doubt,
/// `goal` whether the doubted tag was the goal tag.
#[must_use]
pub(crate) fn confirmation(why: &Why, goal: bool, until_complete: bool) -> String {
    let tag = if goal { GOAL_TAG } else { DONE_TAG };
    let also = if until_complete && !goal {
        format!(" (or {GOAL_TAG} alone if the whole goal is reached and verified)")
    } else {
        String::new()
    };
    let words = one_line(&why.words, DETAIL_CHARS);
    let what = match why.rule {
        Rule::ClaimInWords => format!("your final message said \"{words}\" but did not give the completion signal"),
        _ => format!(
            "your final message gave the completion signal after words that leave a doubt ({}: \"{words}\")",
            why.rule.into_str()
        ),
    };
    [
        format!("Question from ralph before this iteration counts as done: {what}."),
        "Is the work of this iteration complete and verified (it builds, the tests pass, every requirement is met)?"
            .to_owned(),
        format!("If it is, reply with {tag}{also} alone, on a line of its own, and nothing else."),
        "If it is not, do not give the signal: finish the work first.".to_owned(),
    ]
    .join("\n")
}

/// Whitespace collapsed to single spaces and cut at a word boundary, so an agent's
/// multi-line text cannot stretch the note.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut}…")
}

/// In inline code, so that an agent quoting its note back is not read as printing
/// a tool call again.
fn quoted(excerpt: &str) -> String {
    format!("`{}`", one_line(&excerpt.replace('`', "'"), DETAIL_CHARS))
}

/// The agent's last `save_checkpoint` of the iteration (its summary, the steps done
/// and the next), as a part of the note.
pub(crate) fn saved_progress(summary: &str, steps_done: &[String], next_steps: &[String]) -> String {
    let list = |items: &[String]| items.iter().map(|i| format!("\n  - {i}")).collect::<String>();
    format!(
        "\n\nVerified progress an earlier attempt saved (save_checkpoint): {}\nSteps done:{}\nNext steps:{}\n",
        summary,
        list(steps_done),
        list(next_steps)
    )
}

#[cfg(test)]
mod tests;

//! Whether an attempt completed its iteration, from structured signals only.
//!
//! A clean exit is never enough on its own (except for `done = "exit0"`): the agent
//! must end its final message with the done tag, or change the configured artifact.
//! The goal tag also counts as that iteration's done signal.

use crate::config::DoneSignal;

pub const DONE_TAG: &str = "<promise>DONE</promise>";
pub const GOAL_TAG: &str = "<promise>COMPLETE</promise>";

/// What an attempt left behind that bears on completion.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// Exit status 0, and not ended by ralph.
    pub exited_cleanly: bool,
    /// The agent's own final message (the `result` of a stream, the end of text).
    pub final_message: Option<&'a str>,
    /// The agent reported its final result as an error.
    pub result_is_error: bool,
    /// For `file:PATH`: the file exists and its content changed during the attempt.
    pub artifact_changed: bool,
}

/// The verdict on one attempt.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The iteration is done and the agent says the whole goal is reached.
    Goal,
    /// The iteration is done.
    Done,
    /// Not done; the reason names the missing signal.
    NotDone(&'static str),
}

pub fn evaluate(signal: &DoneSignal, ev: &Evidence<'_>) -> Completion {
    if !ev.exited_cleanly {
        return Completion::NotDone("the agent did not exit cleanly");
    }
    if ev.result_is_error {
        return Completion::NotDone("the agent's final result is an error");
    }
    let message = ev.final_message.unwrap_or("");
    if ends_with_tag(message, GOAL_TAG) {
        return Completion::Goal;
    }
    match signal {
        DoneSignal::Tag if ends_with_tag(message, DONE_TAG) => Completion::Done,
        DoneSignal::Tag => Completion::NotDone("exit 0 without the done tag"),
        DoneSignal::Exit0 => Completion::Done,
        DoneSignal::File(_) if ev.artifact_changed => Completion::Done,
        DoneSignal::File(_) => Completion::NotDone("exit 0 without writing the artifact"),
    }
}

/// The tag must close the message: a tag quoted earlier in the text, or echoed from
/// the prompt, is not a signal.
fn ends_with_tag(message: &str, tag: &str) -> bool {
    message.trim_end().ends_with(tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn ev(msg: Option<&str>) -> Evidence<'_> {
        Evidence { exited_cleanly: true, final_message: msg, result_is_error: false, artifact_changed: false }
    }

    #[test]
    fn tag_at_the_end_is_done() {
        assert_eq!(evaluate(&DoneSignal::Tag, &ev(Some("ok <promise>DONE</promise>\n"))), Completion::Done);
    }

    #[test]
    fn goal_tag_is_goal_and_done() {
        assert_eq!(evaluate(&DoneSignal::Tag, &ev(Some("all <promise>COMPLETE</promise>"))), Completion::Goal);
        assert_eq!(evaluate(&DoneSignal::Exit0, &ev(Some("<promise>COMPLETE</promise>"))), Completion::Goal);
    }

    #[test]
    fn tag_not_at_the_end_or_missing_is_not_done() {
        let quoted = "I will print <promise>DONE</promise> when finished. Working on it.";
        assert!(matches!(evaluate(&DoneSignal::Tag, &ev(Some(quoted))), Completion::NotDone(_)));
        assert!(matches!(evaluate(&DoneSignal::Tag, &ev(None)), Completion::NotDone(_)));
    }

    #[test]
    fn unclean_exit_or_error_result_is_never_done() {
        let mut e = ev(Some("<promise>DONE</promise>"));
        e.exited_cleanly = false;
        assert!(matches!(evaluate(&DoneSignal::Tag, &e), Completion::NotDone(_)));
        let mut e = ev(Some("<promise>DONE</promise>"));
        e.result_is_error = true;
        assert!(matches!(evaluate(&DoneSignal::Tag, &e), Completion::NotDone(_)));
    }

    #[test]
    fn exit0_and_file_signals() {
        assert_eq!(evaluate(&DoneSignal::Exit0, &ev(None)), Completion::Done);
        let file = DoneSignal::File(PathBuf::from("PLAN.md"));
        assert!(matches!(evaluate(&file, &ev(None)), Completion::NotDone(_)));
        let mut e = ev(None);
        e.artifact_changed = true;
        assert_eq!(evaluate(&file, &e), Completion::Done);
    }
}

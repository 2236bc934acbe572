//! Whether an attempt completed its iteration, from structured signals only.
//!
//! A clean exit is never enough on its own (except for `done = "exit0"`): the agent
//! must end its own final message with the done tag (judged honestly by
//! [`completion::judge`]: not quoted, not negated, not an echo of the prompt), or
//! change the configured artifact. The goal tag also counts as that iteration's done
//! signal.

use crate::config::DoneSignal;
use crate::supervise::completion::{self, Claim};

pub const DONE_TAG: &str = "<promise>DONE</promise>";
pub const GOAL_TAG: &str = "<promise>COMPLETE</promise>";

/// What an attempt left behind that bears on completion.
#[derive(Debug, Clone, Copy)]
pub struct Evidence {
    /// Exit status 0, and not ended by ralph.
    pub exited_cleanly: bool,
    /// What the agent's own final message says (see [`judge`]).
    pub claim: Claim,
    /// The agent reported its final result as an error.
    pub result_is_error: bool,
    /// For `file:PATH`: the file exists and its content changed during the attempt.
    pub artifact_changed: bool,
    /// The attempt's accepted `declare_complete`, with its `goal_complete`.
    pub declared: Option<bool>,
}

/// Judges a final message; an absent one says nothing.
pub fn judge(final_message: Option<&str>) -> Claim {
    final_message.map_or(Claim::Nothing, completion::judge)
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

pub fn evaluate(signal: &DoneSignal, ev: &Evidence) -> Completion {
    if !ev.exited_cleanly {
        return Completion::NotDone("the agent did not exit cleanly");
    }
    if ev.result_is_error {
        return Completion::NotDone("the agent's final result is an error");
    }
    // Only the tool decides, for the iteration and for the goal alike.
    if *signal == DoneSignal::Mcp {
        return match ev.declared {
            Some(true) => Completion::Goal,
            Some(false) => Completion::Done,
            None => Completion::NotDone("exit 0 without calling declare_complete"),
        };
    }
    if ev.claim == Claim::Goal {
        return Completion::Goal;
    }
    match signal {
        DoneSignal::Tag if ev.claim == Claim::Done => Completion::Done,
        DoneSignal::Tag => Completion::NotDone(match ev.claim {
            Claim::ClaimedInWords(_) => "exit 0: the agent said it was done but did not print the done tag",
            Claim::ReadyToContinue(_) => "exit 0: the agent stopped to announce or ask about the next step",
            _ => "exit 0 without the done tag",
        }),
        DoneSignal::Exit0 => Completion::Done,
        DoneSignal::File(_) if ev.artifact_changed => Completion::Done,
        DoneSignal::File(_) => Completion::NotDone("exit 0 without writing the artifact"),
        DoneSignal::Mcp => Completion::NotDone("exit 0 without calling declare_complete"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn ev(msg: Option<&str>) -> Evidence {
        Evidence {
            exited_cleanly: true,
            claim: judge(msg),
            result_is_error: false,
            artifact_changed: false,
            declared: None,
        }
    }

    #[test]
    fn with_done_mcp_only_declare_complete_decides() {
        let goal_tag = ev(Some("<promise>COMPLETE</promise>"));
        assert!(matches!(evaluate(&DoneSignal::Mcp, &goal_tag), Completion::NotDone(_)));
        let declared = Evidence { declared: Some(false), ..ev(None) };
        assert_eq!(evaluate(&DoneSignal::Mcp, &declared), Completion::Done);
        let goal = Evidence { declared: Some(true), ..ev(None) };
        assert_eq!(evaluate(&DoneSignal::Mcp, &goal), Completion::Goal);
        // With another signal, a declaration is recorded but does not decide.
        assert!(matches!(evaluate(&DoneSignal::Tag, &declared), Completion::NotDone(_)));
    }

    #[test]
    fn tag_at_the_end_is_done() {
        assert_eq!(evaluate(&DoneSignal::Tag, &ev(Some("ok\n<promise>DONE</promise>\n"))), Completion::Done);
    }

    #[test]
    fn goal_tag_is_goal_and_done() {
        assert_eq!(evaluate(&DoneSignal::Tag, &ev(Some("all done\n<promise>COMPLETE</promise>"))), Completion::Goal);
        assert_eq!(evaluate(&DoneSignal::Exit0, &ev(Some("<promise>COMPLETE</promise>"))), Completion::Goal);
    }

    #[test]
    fn tag_not_at_the_end_quoted_or_missing_is_not_done() {
        let quoted = "I will print <promise>DONE</promise> when finished. Working on it.";
        assert!(matches!(evaluate(&DoneSignal::Tag, &ev(Some(quoted))), Completion::NotDone(_)));
        let negated = "I have not printed <promise>COMPLETE</promise> yet";
        assert!(matches!(evaluate(&DoneSignal::Tag, &ev(Some(negated))), Completion::NotDone(_)));
        assert!(matches!(evaluate(&DoneSignal::Tag, &ev(None)), Completion::NotDone(_)));
    }

    #[test]
    fn a_claim_in_words_is_named() {
        let e = ev(Some("All done, the feature is implemented."));
        assert_eq!(
            evaluate(&DoneSignal::Tag, &e),
            Completion::NotDone("exit 0: the agent said it was done but did not print the done tag")
        );
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

//! Whether an attempt completed its iteration, from structured signals only, and
//! what to do with a sign-off the judge doubts.
//!
//! A clean exit is never enough on its own (except for `done = "exit0"`): the agent
//! must end its own final message with the done tag (judged by
//! [`completion::judge`]), or change the configured artifact. The goal tag also counts
//! as that iteration's done signal. A doubtful tag or a claim in words costs a
//! question, not a failure: once per iteration, when the agent's session can be
//! resumed, ralph asks it to confirm; without a session a doubtful tag is accepted
//! (the doubt is recorded) and a claim in words is no signal. Only a denied tag or
//! no tag at all is a failure.
//!
//! An agent that crashes on its way out (a non-zero exit or a signal of its own,
//! with no tool call after its final message) after a done tag the judge accepts
//! outright had finished: the iteration counts, and the exit is journaled with it.

use crate::config::DoneSignal;
use crate::supervise::completion::{self, Claim};

pub(crate) use crate::supervise::completion::{DONE_TAG, GOAL_TAG};

/// What an attempt left behind that bears on completion.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evidence<'a> {
    /// Exit status 0, and not ended by ralph.
    pub exited_cleanly: bool,
    /// A tool call started after the final message: the agent worked on after it.
    pub tool_after_message: bool,
    /// What the agent's own final message says (see [`judge`]).
    pub claim: &'a Claim,
    /// The agent reported its final result as an error.
    pub result_is_error: bool,
    /// For `file:PATH`: the file exists and its content changed during the attempt.
    pub artifact_changed: bool,
    /// The attempt's session is known, so it can be resumed with a question.
    pub session_known: bool,
    /// This iteration already had its confirmation question.
    pub already_asked: bool,
    /// The attempt's accepted `declare_complete`, with its `goal_complete`.
    pub declared: Option<bool>,
}

/// Judges a final message; an absent one says nothing.
pub(crate) fn judge(final_message: Option<&str>) -> Claim {
    final_message.map_or(Claim::Nothing, completion::judge)
}

/// The verdict on one attempt.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Completion {
    /// The iteration is done and the agent says the whole goal is reached.
    Goal,
    /// The iteration is done.
    Done,
    /// Resume the agent's session with a confirmation question; no budget is spent.
    Confirm,
    /// Not done; the reason names the missing signal (and the rule and words of a
    /// rejected tag).
    NotDone(String),
}

/// What the journal records about a sign-off the judge did not simply accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SignOff {
    /// Denied: the attempt failed with `no_done_signal`.
    Rejected,
    /// Doubted (or claimed in words): the session is asked to confirm.
    Asked,
    /// Doubted, but no session could be asked: accepted, the doubt kept on record.
    AcceptedWithDoubt,
}

pub(crate) fn evaluate(signal: &DoneSignal, ev: &Evidence<'_>) -> Completion {
    if !ev.exited_cleanly && !signed_off_before_exit(signal, ev) {
        return Completion::NotDone("the agent did not exit cleanly".into());
    }
    if ev.result_is_error {
        return Completion::NotDone("the agent's final result is an error".into());
    }
    let can_ask = ev.session_known && !ev.already_asked;
    let tag_decides = *signal == DoneSignal::Tag;
    match ev.claim {
        // Only the tool decides, for the iteration and for the goal alike.
        _ if *signal == DoneSignal::Mcp => {}
        Claim::Goal => return Completion::Goal,
        Claim::Doubtful { goal, .. } if (*goal || tag_decides) && can_ask => return Completion::Confirm,
        Claim::Doubtful { goal: true, .. } => return Completion::Goal,
        _ => {}
    }
    match signal {
        DoneSignal::Tag => match ev.claim {
            Claim::Done | Claim::Doubtful { .. } => Completion::Done,
            Claim::ClaimedInWords(_) if can_ask => Completion::Confirm,
            Claim::ClaimedInWords(_) => {
                Completion::NotDone("exit 0: the agent said it was done but did not print the done tag".into())
            }
            Claim::ReadyToContinue(_) => {
                Completion::NotDone("exit 0: the agent stopped to announce or ask about the next step".into())
            }
            Claim::Denied(why) => {
                Completion::NotDone(format!("exit 0: the done tag was not accepted: {}", why.plain()))
            }
            _ => Completion::NotDone("exit 0 without the done tag".into()),
        },
        DoneSignal::Exit0 => Completion::Done,
        DoneSignal::File(_) if ev.artifact_changed => Completion::Done,
        DoneSignal::File(_) => Completion::NotDone("exit 0 without writing the artifact".into()),
        DoneSignal::Mcp => match ev.declared {
            Some(true) => Completion::Goal,
            Some(false) => Completion::Done,
            None => Completion::NotDone("exit 0 without calling declare_complete".into()),
        },
    }
}

/// The agent's last act was a done tag the judge accepts as it stands (where a tag
/// decides: the goal tag anywhere but a `done = "mcp"` phase, the done tag in a tag
/// phase), not an error result: whatever its exit says after that, it had finished.
fn signed_off_before_exit(signal: &DoneSignal, ev: &Evidence<'_>) -> bool {
    if ev.tool_after_message || ev.result_is_error {
        return false;
    }
    match ev.claim {
        Claim::Goal => *signal != DoneSignal::Mcp,
        Claim::Done => *signal == DoneSignal::Tag,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn claim(msg: Option<&str>) -> &'static Claim {
        Box::leak(Box::new(judge(msg)))
    }

    fn ev(msg: Option<&str>) -> Evidence<'static> {
        Evidence {
            exited_cleanly: true,
            tool_after_message: false,
            claim: claim(msg),
            result_is_error: false,
            artifact_changed: false,
            session_known: false,
            already_asked: false,
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
    fn a_crash_after_an_accepted_tag_with_no_tool_call_after_it_is_done() {
        let crashed = |msg, tool_after_message| Evidence { exited_cleanly: false, tool_after_message, ..ev(Some(msg)) };
        let done = "Wrote the parser.\n<promise>DONE</promise>";
        assert_eq!(evaluate(&DoneSignal::Tag, &crashed(done, false)), Completion::Done);
        assert_eq!(
            evaluate(&DoneSignal::File(PathBuf::from("x")), &crashed(done, false)),
            Completion::NotDone("the agent did not exit cleanly".into())
        );
        let goal = "All of it works.\n<promise>COMPLETE</promise>";
        assert_eq!(evaluate(&DoneSignal::Exit0, &crashed(goal, false)), Completion::Goal);
        assert!(matches!(evaluate(&DoneSignal::Mcp, &crashed(goal, false)), Completion::NotDone(_)));
        // Work after the tag, an error result, a doubtful or missing tag: not done.
        assert!(matches!(evaluate(&DoneSignal::Tag, &crashed(done, true)), Completion::NotDone(_)));
        let error = Evidence { result_is_error: true, ..crashed(done, false) };
        assert!(matches!(evaluate(&DoneSignal::Tag, &error), Completion::NotDone(_)));
        let doubtful = "Added a flag so users can pipe the output <promise>DONE</promise>";
        assert!(matches!(evaluate(&DoneSignal::Tag, &crashed(doubtful, false)), Completion::NotDone(_)));
        assert!(matches!(evaluate(&DoneSignal::Tag, &crashed("working on it", false)), Completion::NotDone(_)));
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
            Completion::NotDone("exit 0: the agent said it was done but did not print the done tag".into())
        );
    }

    fn with_session(msg: &str, already_asked: bool) -> Evidence<'static> {
        Evidence { session_known: true, already_asked, ..ev(Some(msg)) }
    }

    #[test]
    fn a_doubtful_tag_asks_once_when_the_session_can_be_resumed() {
        let doubtful = "Added a flag so users can pipe the output <promise>DONE</promise>";
        assert_eq!(evaluate(&DoneSignal::Tag, &with_session(doubtful, false)), Completion::Confirm);
        // Asked already, or nobody to ask: a doubt is not a denial, so it is accepted.
        assert_eq!(evaluate(&DoneSignal::Tag, &with_session(doubtful, true)), Completion::Done);
        assert_eq!(evaluate(&DoneSignal::Tag, &ev(Some(doubtful))), Completion::Done);
        let goal = "Everything works like the spec says <promise>COMPLETE</promise>";
        assert_eq!(evaluate(&DoneSignal::Exit0, &with_session(goal, false)), Completion::Confirm);
        assert_eq!(evaluate(&DoneSignal::Exit0, &ev(Some(goal))), Completion::Goal);
    }

    #[test]
    fn a_claim_in_words_asks_once_and_only_with_a_session() {
        let words = "All done, the feature is implemented.";
        assert_eq!(evaluate(&DoneSignal::Tag, &with_session(words, false)), Completion::Confirm);
        assert!(matches!(evaluate(&DoneSignal::Tag, &with_session(words, true)), Completion::NotDone(_)));
        assert!(matches!(evaluate(&DoneSignal::Tag, &ev(Some(words))), Completion::NotDone(_)));
        // Where the tag does not decide, words are no question.
        assert_eq!(evaluate(&DoneSignal::Exit0, &with_session(words, false)), Completion::Done);
    }

    #[test]
    fn a_denied_tag_is_not_done_and_never_asked_about() {
        let denied = "The flaky test still fails.\n<promise>DONE</promise>";
        assert_eq!(
            evaluate(&DoneSignal::Tag, &with_session(denied, false)),
            Completion::NotDone(
                "exit 0: the done tag was not accepted: the words before the tag say the work is not done (\"the \
                 flaky test still fails\")"
                    .into()
            )
        );
    }

    #[test]
    fn unclean_exit_after_work_past_the_tag_or_an_error_result_is_never_done() {
        let mut e = ev(Some("<promise>DONE</promise>"));
        (e.exited_cleanly, e.tool_after_message) = (false, true);
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

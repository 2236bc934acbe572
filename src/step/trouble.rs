//! What went wrong in an attempt, in the words of the recovery note: from the
//! classification, ralph's intervention (if it ended the attempt), and what the
//! agent's final message claimed. Also the "done so far" line from the progress.
//! Part of the step (pure): it reads the classification (`recovery`), the detectors'
//! findings and the note's words (`supervise`) and the progress (`workflow`), so it
//! sits above them all.

use crate::config::Phase;
use crate::recovery::{Classification, Rule};
use crate::supervise::completion::Claim;
use crate::supervise::note::Trouble;
use crate::supervise::{Detector, Intervention};
use crate::workflow::Progress;

/// The trouble for the note. A claim in words that got here was already asked about
/// (or could not be), so it gets the plain "no signal" note.
pub(crate) fn trouble(failure: &Classification, intervention: Option<&Intervention>, claim: &Claim) -> Trouble {
    if let Some(found) = intervention {
        return match found.detector {
            Detector::Stall => Trouble::Stall,
            Detector::ToolCallLoop => Trouble::Loop { description: found.evidence.clone() },
            Detector::ToolText => Trouble::ToolText { in_thinking: false, excerpt: excerpt(&found.evidence) },
            Detector::ToolTextInThinking => Trouble::ToolText { in_thinking: true, excerpt: excerpt(&found.evidence) },
            Detector::ToolTimeout
            | Detector::AttemptTimeout
            | Detector::CostCap
            | Detector::PermissionDenials
            | Detector::ContinueStorm
            | Detector::ReadyToContinue
            | Detector::DoneConfirmation => Trouble::Other(found.evidence.clone()),
        };
    }
    match (failure.rule, claim) {
        (Rule::NoDoneSignal, Claim::Denied(why)) => Trouble::SignOffRejected { why: why.describe() },
        (Rule::NoDoneSignal, Claim::ReadyToContinue(_)) => {
            Trouble::Other("it stopped to announce or ask about the next step instead of doing it".into())
        }
        (Rule::NoDoneSignal, _) => Trouble::NoDoneSignal,
        (Rule::Crashed | Rule::ExitNonzero, _) => Trouble::Crash { detail: failure.reason.clone() },
        (Rule::RateLimited, _) => Trouble::Limit { detail: failure.reason.clone() },
        _ => Trouble::Other(failure.reason.clone()),
    }
}

/// The excerpt part of a tool-text intervention's evidence ("pattern: excerpt").
fn excerpt(evidence: &str) -> String {
    evidence.split_once(": ").map_or(evidence, |(_, rest)| rest).to_string()
}

/// What the checkpoint says is done, e.g. "phases plan done; develop iterations 1–2 done".
pub(crate) fn done_summary(progress: &Progress, phases: &[Phase]) -> String {
    let pos = &progress.position;
    let mut parts = Vec::new();
    let finished: Vec<&str> = phases.iter().take(pos.phase).map(|p| p.name.as_str()).collect();
    match finished.as_slice() {
        [] => {}
        [one] => parts.push(format!("phase {one} done")),
        many => parts.push(format!("phases {} done", many.join(", "))),
    }
    let current = phases.get(pos.phase).map_or(pos.phase_name.as_str(), |p| p.name.as_str());
    match pos.iteration {
        0 | 1 => {}
        2 => parts.push(format!("{current} iteration 1 done")),
        n => parts.push(format!("{current} iterations 1–{} done", n - 1)),
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::Category;

    fn phase(name: &str) -> Phase {
        Phase { iterations: 5, until_complete: true, ..crate::testkit::phase(name, &["a"]) }
    }

    #[test]
    fn summarizes_finished_phases_and_iterations() {
        let phases = [phase("plan"), phase("develop"), phase("review")];
        let mut p = Progress::new("plan");
        assert_eq!(done_summary(&p, &phases), "");
        p.position.phase = 1;
        p.position.iteration = 3;
        assert_eq!(done_summary(&p, &phases), "phase plan done; develop iterations 1–2 done");
        p.position.phase = 2;
        p.position.iteration = 2;
        assert_eq!(done_summary(&p, &phases), "phases plan, develop done; review iteration 1 done");
    }

    #[test]
    fn a_rejected_sign_off_names_its_rule_and_words() {
        let f = Classification::new(Category::Agent, Rule::NoDoneSignal, "exit 0");
        let claim = crate::supervise::completion::judge("The flaky test still fails.\n<promise>DONE</promise>");
        assert_eq!(
            trouble(&f, None, &claim),
            Trouble::SignOffRejected { why: "negated_work (\"the flaky test still fails\")".into() }
        );
        assert_eq!(trouble(&f, None, &Claim::ClaimedInWords("all done")), Trouble::NoDoneSignal);
    }

    #[test]
    fn interventions_name_the_trouble() {
        let f = Classification::new(Category::Agent, Rule::ToolText, "tool text");
        let found = Intervention {
            detector: crate::supervise::detector::Detector::ToolTextInThinking,
            evidence: "function_tag: <function=edit>".into(),
        };
        assert_eq!(
            trouble(&f, Some(&found), &Claim::Nothing),
            Trouble::ToolText { in_thinking: true, excerpt: "<function=edit>".into() }
        );
    }
}

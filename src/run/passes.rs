//! Carrying out what a phase's end did to the repeating review/fix group (decided by
//! [`crate::workflow::advance`]): the journal's `review_verdict`, `pass_started` and
//! `passes_ended` events, and a line for the user.

use serde_json::json;

use crate::workflow::advance::{GroupMove, PhaseEnd};

use super::dispatch::Dispatcher;

impl Dispatcher {
    pub(super) fn phase_ended(&mut self, end: &PhaseEnd) {
        if let Some(v) = end.verdict {
            self.journal("review_verdict", json!({"pass": v.pass, "passes": v.passes, "clean": v.clean}));
            self.r.reporter.line(&format!("review: {}", v.describe()));
        }
        match end.group {
            None => {}
            Some(GroupMove::NextPass { pass, passes }) => {
                self.journal("pass_started", json!({"pass": pass, "passes": passes}));
                self.r.reporter.line(&format!("pass {pass} of {passes}: back to the review"));
            }
            Some(GroupMove::Ended(v)) => {
                let why = if v.clean { "clean" } else { "passes_used" };
                self.journal(
                    "passes_ended",
                    json!({"passes_run": v.pass, "passes": v.passes, "clean": v.clean, "why": why}),
                );
                if !v.clean {
                    self.r.reporter.line(&format!("review: {}; going on", v.describe()));
                }
            }
        }
    }
}

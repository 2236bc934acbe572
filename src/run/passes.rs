//! Carrying out a phase's end: its artifact kept, `phase_done`, and what it did to
//! the repeating review/fix group (decided by [`crate::workflow::advance`]): the
//! `review_verdict`, `pass_started` and `passes_ended` events.

use crate::events::RunEvent;
use crate::workflow::advance::{GroupMove, PhaseEnd};

use super::dispatch::Dispatcher;

impl Dispatcher {
    pub(super) fn phase_ended(&mut self, finished: String, end: &PhaseEnd) {
        self.save_artifact(&finished);
        self.emit(RunEvent::PhaseDone { phase: finished });
        if let Some(v) = end.verdict {
            self.emit(RunEvent::ReviewVerdict { pass: v.pass, passes: v.passes, clean: v.clean });
        }
        match end.group {
            None => {}
            Some(GroupMove::NextPass { pass, passes }) => self.emit(RunEvent::PassStarted { pass, passes }),
            Some(GroupMove::Ended(v)) => {
                let why = if v.clean { "clean" } else { "passes_used" }.to_string();
                self.emit(RunEvent::PassesEnded { passes_run: v.pass, passes: v.passes, clean: v.clean, why });
            }
        }
    }
}

//! Phase artifacts: the finished phase's result kept for the next phase's prompt,
//! and the before/after stamp that tells whether a `done = "file:PATH"` artifact
//! changed during an attempt.

use std::path::Path;

use crate::config::DoneSignal;
use crate::secrets::redact;

use super::dispatch::Dispatcher;

impl Dispatcher {
    /// Keeps the finished phase's artifact for the next phase's prompt: its done file,
    /// or the final message of its last iteration.
    pub(super) fn save_artifact(&mut self, phase_name: &str) {
        let Some(phase) = self.r.loaded.phases.iter().find(|p| p.name == phase_name) else { return };
        let text = match &phase.done {
            DoneSignal::File(path) => std::fs::read_to_string(self.r.dir.join(path)).ok(),
            _ => self.last_success.take(),
        };
        let Some(text) = text else { return };
        let path = self.r.artifacts_dir.join(format!("{phase_name}.md"));
        crate::state::private::ensure_dir(&self.r.artifacts_dir)
            .and_then(|()| crate::state::atomic::write_atomic(&path, redact(&text).as_bytes()))
            .unwrap_or_else(|e| tracing::warn!("cannot keep the artifact of phase {phase_name}: {e}"));
    }
}

/// What the done artifact looked like before the attempt, to see it change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stamp {
    NotApplicable,
    Missing,
    Content(String),
}

impl Stamp {
    pub(super) fn is_some_or_created(&self, dir: &Path, done: &DoneSignal) -> bool {
        !matches!(self, Stamp::NotApplicable) && matches!(artifact_stamp(dir, done), Stamp::Content(_))
    }
}

pub(super) fn artifact_stamp(dir: &Path, done: &DoneSignal) -> Stamp {
    match done {
        DoneSignal::File(path) => {
            std::fs::read(dir.join(path)).map_or(Stamp::Missing, |bytes| Stamp::Content(super::setup::checksum(&bytes)))
        }
        _ => Stamp::NotApplicable,
    }
}

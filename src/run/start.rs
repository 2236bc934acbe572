//! Whether a run starts fresh or resumes, decided from the checkpoint on disk and
//! the user's flags. Pure, apart from the question asked on a terminal.

use crate::state::checkpoint::{Checkpoint, Status};

use super::ResumeFlag;

/// What to do with the checkpoint found on disk.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// No checkpoint: a new run.
    Fresh,
    /// A checkpoint exists and is set aside; a new run starts.
    ArchiveThenFresh,
    /// Continue the checkpoint's run.
    Resume,
    /// Nothing to resume (`--resume` without an unfinished run).
    NothingToResume,
    /// Ask the user (terminal) or refuse (no terminal).
    Ask,
}

pub fn decide(existing: Option<&Checkpoint>, flag: ResumeFlag) -> Start {
    match (existing, flag) {
        (None, ResumeFlag::Resume) => Start::NothingToResume,
        (None, _) => Start::Fresh,
        (Some(_), ResumeFlag::Fresh) => Start::ArchiveThenFresh,
        (Some(cp), ResumeFlag::Resume) if cp.status.unfinished() => Start::Resume,
        (Some(_), ResumeFlag::Resume) => Start::NothingToResume,
        // A finished run's checkpoint is history: keep it, start anew.
        (Some(cp), ResumeFlag::Ask) if cp.status == Status::Completed => Start::ArchiveThenFresh,
        (Some(_), ResumeFlag::Ask) => Start::Ask,
    }
}

/// The answer to the question on a terminal.
pub fn parse_answer(line: &str) -> Option<ResumeFlag> {
    match line.trim().to_ascii_lowercase().as_str() {
        "" | "r" | "resume" | "y" | "yes" => Some(ResumeFlag::Resume),
        "n" | "new" | "fresh" => Some(ResumeFlag::Fresh),
        _ => None,
    }
}

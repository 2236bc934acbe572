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

/// An answer to the question on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Flag(ResumeFlag),
    /// Leave everything as it is and exit 0: the user decided, nothing failed.
    Quit,
}

/// The answer to the question on a terminal; `None` when it is not one.
pub fn parse_answer(line: &str) -> Option<Answer> {
    match line.trim().to_ascii_lowercase().as_str() {
        "" | "r" | "resume" | "y" | "yes" => Some(Answer::Flag(ResumeFlag::Resume)),
        "n" | "new" | "fresh" => Some(Answer::Flag(ResumeFlag::Fresh)),
        "q" | "quit" => Some(Answer::Quit),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_to_the_resume_question() {
        assert_eq!(parse_answer("\n"), Some(Answer::Flag(ResumeFlag::Resume)));
        assert_eq!(parse_answer("R"), Some(Answer::Flag(ResumeFlag::Resume)));
        assert_eq!(parse_answer("new"), Some(Answer::Flag(ResumeFlag::Fresh)));
        assert_eq!(parse_answer(" q \n"), Some(Answer::Quit));
        assert_eq!(parse_answer("quit"), Some(Answer::Quit));
        assert_eq!(parse_answer("maybe"), None);
    }
}

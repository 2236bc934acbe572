//! Whether a run starts fresh or resumes, decided from the checkpoint on disk and
//! the user's flags. Pure, apart from the question asked on a terminal.
//!
//! `--resume-or-start` is the entry point for job engines (a Kubernetes Job, a
//! Nomad batch job, a systemd service): any state a crash can leave behind (no
//! checkpoint yet, a `running` one, a `completed` one whose lock was never
//! released) leads to a started run, a resumed run or exit 0, never a refusal.

use crate::state::checkpoint::{Checkpoint, Status};

use super::ResumeFlag;

/// What to do with the checkpoint found on disk.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
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
    /// `--resume-or-start` found a run that is over or waits for a person
    /// (completed, paused, failed, blocked): leave it as it is and exit with its code.
    Settled,
}

pub(crate) fn decide(existing: Option<&Checkpoint>, flag: ResumeFlag) -> Start {
    match (existing, flag) {
        (None, ResumeFlag::Resume) => Start::NothingToResume,
        (None, _) => Start::Fresh,
        (Some(_), ResumeFlag::Fresh) => Start::ArchiveThenFresh,
        (Some(cp), ResumeFlag::Resume) if cp.status.unfinished() => Start::Resume,
        (Some(_), ResumeFlag::Resume) => Start::NothingToResume,
        // A finished run's checkpoint is history: keep it, start anew.
        (Some(cp), ResumeFlag::Ask) if cp.status == Status::Completed => Start::ArchiveThenFresh,
        (Some(_), ResumeFlag::Ask) => Start::Ask,
        (Some(cp), ResumeFlag::ResumeOrStart) => match cp.status {
            // Unfinished without anyone's decision: a crash, a restart, a wait.
            Status::Running | Status::Waiting | Status::Interrupted => Start::Resume,
            // Done, or stopped on purpose: a job engine restarting ralph must not
            // undo a person's pause or retry what a cap ended.
            Status::Completed | Status::Paused | Status::Failed | Status::Blocked => Start::Settled,
        },
    }
}

/// An answer to the question on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Flag(ResumeFlag),
    /// Leave everything as it is and exit 0: the user decided, nothing failed.
    Quit,
}

/// The answer to the question on a terminal; `None` when it is not one.
pub(crate) fn parse_answer(line: &str) -> Option<Answer> {
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

    use crate::state::checkpoint::Checkpoint;

    fn cp(status: Status) -> Checkpoint {
        let mut value = serde_json::json!({
            "version": 1, "run_id": "r", "status": "running", "clean_stop": false,
            "stop_cause": null, "stop_reason": null,
            "progress": crate::workflow::Progress::new("develop"),
            "in_flight": null, "last_error": null,
            "usage": {"cost_usd": 0.0, "input_tokens": 0, "output_tokens": 0},
            "elapsed_secs": 0.0, "config_path": "ralph.toml", "config_checksum": "",
            "prompt_checksum": "", "started_at": "", "updated_at": ""
        });
        value["status"] = serde_json::to_value(status).unwrap();
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn resume_or_start_starts_without_a_checkpoint() {
        assert_eq!(decide(None, ResumeFlag::ResumeOrStart), Start::Fresh);
    }

    #[test]
    fn resume_or_start_resumes_what_nobody_stopped() {
        for status in [Status::Running, Status::Waiting, Status::Interrupted] {
            assert_eq!(decide(Some(&cp(status)), ResumeFlag::ResumeOrStart), Start::Resume, "{status:?}");
        }
    }

    #[test]
    fn resume_or_start_leaves_finished_and_stopped_runs_alone() {
        for status in [Status::Completed, Status::Paused, Status::Failed, Status::Blocked] {
            assert_eq!(decide(Some(&cp(status)), ResumeFlag::ResumeOrStart), Start::Settled, "{status:?}");
        }
    }
}

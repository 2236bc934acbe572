//! ralph's error type: everything that stops ralph before or outside the run's own
//! outcome. Each variant maps to an exit code in [`crate::exit::for_error`].

use std::path::PathBuf;

use crate::config::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum RalphError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The goal file is missing or unreadable.
    #[error("{}: cannot read the goal file ({source}); write it, or set [general] prompt in {}", .path.display(), .config.display())]
    Prompt { path: PathBuf, config: PathBuf, source: std::io::Error },
    /// Another ralph holds the lock of this directory.
    #[error("{0}")]
    Locked(String),
    /// The checkpoint does not parse; it was moved aside.
    #[error(
        "the checkpoint {} does not parse ({message}); it was kept aside as {}. Run `ralph --no-resume` to start fresh, or repair it and move it back to resume",
        .path.display(),
        .aside.display()
    )]
    CheckpointCorrupt { path: PathBuf, aside: PathBuf, message: String },
    /// An unfinished run exists and the user did not say what to do with it.
    #[error(
        "an unfinished run ({status}, phase {phase}, iteration {iteration}) has a checkpoint in {}; run `ralph --resume` to continue it or `ralph --no-resume` to archive it and start fresh",
        .path.display()
    )]
    ResumeChoiceNeeded { path: PathBuf, status: String, phase: String, iteration: u32 },
    /// `--resume` with nothing to resume.
    #[error("{0}")]
    NothingToResume(String),
    /// The checkpoint cannot continue under the current config.
    #[error("{0}")]
    ResumeMismatch(String),
    /// Wrong use of the command line.
    #[error("{0}")]
    Usage(String),
    /// A symbolic link, or a directory of another user, where ralph keeps its state.
    #[error("{0}")]
    UnsafeState(String),
    /// ralph's own I/O failed (disk full, permissions).
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
}

impl RalphError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        if crate::state::private::is_refused(&source) {
            return RalphError::UnsafeState(source.to_string());
        }
        RalphError::Io { context: context.into(), source }
    }
}

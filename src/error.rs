//! ralph's error type: everything that stops ralph before or outside the run's own
//! outcome. Each variant maps to an exit code in [`crate::exit::code`]: problems
//! found before the first attempt are exit 2, failures ralph cannot wait out once
//! the run is under way are exit 4. The type sits above the modules whose errors it
//! wraps: the conversions from `state`'s (a refused checkpoint, the lease, the lock)
//! are here, so `state` never imports it.

use std::path::PathBuf;

use crate::config::ConfigError;
use crate::state::lock::LockError;
use crate::state::ownership::AcquireError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum RalphError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The goal file is missing or unreadable.
    #[error("{}: cannot read the goal file ({source}); write it, or set [general] prompt in {}", .path.display(), .config.display())]
    Prompt { path: PathBuf, config: PathBuf, source: std::io::Error },
    /// The goal file is empty or still the starter text: an agent would be paid to guess.
    #[error("{}: {}", .path.display(), .problem.describe())]
    Goal { path: PathBuf, problem: crate::workflow::goal::Unusable },
    /// The run lock: another ralph holds it, or it cannot be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The checkpoint does not parse; it is left where it is (a refusal changes nothing).
    #[error(
        "the checkpoint {} does not parse ({message}); it was left in place. Repair it to resume, or run `ralph --no-resume` to set it aside (it is kept) and start fresh",
        .path.display()
    )]
    CheckpointCorrupt { path: PathBuf, message: String },
    /// The checkpoint was written by a newer ralph; it is left where it is.
    #[error(
        "the checkpoint {} has format version {version}, newer than the version {supported} this ralph reads; it was left in place. Resume it with the newer ralph, or run `ralph --no-resume` to archive it and start fresh",
        .path.display()
    )]
    CheckpointTooNew { path: PathBuf, version: u64, supported: u32 },
    /// The checkpoint parses but describes an impossible position.
    #[error(
        "the checkpoint {} is not usable: {field} {problem}; it was left in place. Repair that field, or run `ralph --no-resume` to archive it and start fresh",
        .path.display()
    )]
    CheckpointInvalid { path: PathBuf, field: &'static str, problem: String },
    /// An unfinished run exists and the user did not say what to do with it.
    #[error(
        "an unfinished run ({status}, phase {phase}, iteration {iteration}) has a checkpoint in {}; {}",
        .path.display(),
        resume_hint(.from.as_deref())
    )]
    ResumeChoiceNeeded { path: PathBuf, status: String, phase: String, iteration: u32, from: Option<String> },
    /// Wrong use of the command line.
    #[error("{0}")]
    Usage(String),
    /// Refused before anything ran, as the message says in full: a ralph on another
    /// host holds the lease, `--resume` with nothing to resume, a checkpoint that
    /// cannot continue under the current config, no private place for the control
    /// socket, a link or another user's directory where ralph keeps its state, a git
    /// command that failed.
    #[error("{0}")]
    Refused(String),
    /// An I/O failure before the first attempt (`-C` missing, `.agent/` not writable).
    #[error("{context}: {source}")]
    Setup { context: String, source: std::io::Error },
    /// An agent of a chain the run uses cannot be started (one problem a line).
    #[error("the agent pre-flight found {} problem(s); nothing was started:\n  {}", .0.len(), .0.join("\n  "))]
    Preflight(Vec<String>),
    /// A signal stopped ralph before the run started (at the resume question);
    /// nothing was changed.
    #[error("stopped by {} before the run started; nothing was changed", .0.signal_name())]
    StoppedBeforeStart(crate::outcome::StopCause),
    /// ralph's own I/O failed while the run was under way.
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    /// The git repository cannot be used as it is (found before anything runs).
    #[error(transparent)]
    Git(#[from] crate::git::preflight::Refusal),
    /// A git lock another process kept while ralph waited (`GitError::Locked`).
    #[error(transparent)]
    GitLocked(crate::git::repo::GitError),
    /// A bug: something ralph itself should never do.
    #[error("internal error: {0}")]
    Internal(String),
}

/// What to run when an unfinished run is in the way.
fn resume_hint(from: Option<&str>) -> String {
    match from {
        None => "run `ralph --resume` to continue it or `ralph --no-resume` to archive it and start fresh".into(),
        Some(phase) => format!(
            "run `ralph --resume --from {phase}` to move that run to phase {phase}, or `ralph --no-resume` to \
             archive it and start a new run at the first phase"
        ),
    }
}

impl RalphError {
    /// A git failure: a lock another process keeps (exit 3), or any other (exit 2).
    pub(crate) fn git(e: crate::git::repo::GitError) -> Self {
        match e {
            e @ crate::git::repo::GitError::Locked { .. } => RalphError::GitLocked(e),
            e => RalphError::Refused(format!("git: {e}")),
        }
    }

    /// An I/O failure once the run is under way (exit 4).
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::refused(&source).unwrap_or_else(|| RalphError::Io { context: context.into(), source })
    }

    /// An I/O failure before the first attempt (exit 2).
    pub(crate) fn setup(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::refused(&source).unwrap_or_else(|| RalphError::Setup { context: context.into(), source })
    }

    /// ralph's state refused (a link, another user's directory) is that error, whatever the context.
    fn refused(source: &std::io::Error) -> Option<Self> {
        crate::state::private::is_refused(source).then(|| RalphError::Refused(source.to_string()))
    }
}

/// The checkpoint's refusal, as set-up and `--inspect-checkpoint` report it (exit 2).
impl RalphError {
    /// A checkpoint that is refused and left where it is.
    pub(crate) fn checkpoint(path: &std::path::Path, error: crate::state::format::ReadError) -> Self {
        use crate::state::format::{FormatError, ReadError};
        match error {
            ReadError::Format(FormatError::TooNew { version }) => {
                let supported = crate::state::checkpoint::VERSION;
                Self::CheckpointTooNew { path: path.to_path_buf(), version, supported }
            }
            ReadError::Format(FormatError::Invalid { field, problem }) => {
                Self::CheckpointInvalid { path: path.to_path_buf(), field, problem }
            }
            ReadError::Format(FormatError::Corrupt(message)) => {
                Self::CheckpointCorrupt { path: path.to_path_buf(), message }
            }
            ReadError::Io { path, source } => Self::setup(format!("cannot read {}", path.display()), source),
        }
    }
}

/// The lease cannot be used, or a live ralph elsewhere holds it (exit 2).
impl From<AcquireError> for RalphError {
    fn from(e: AcquireError) -> Self {
        match e {
            AcquireError::Io { path, source } => {
                Self::setup(format!("cannot use the lease {}", path.display()), source)
            }
            AcquireError::Held(message) => Self::Refused(message),
        }
    }
}

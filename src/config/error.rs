//! Configuration errors: each names the file, the line and column, the key, and what
//! is allowed.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("no ralph.toml found (looked for {}); run `ralph init` to write one, or pass -c FILE", list(.searched))]
    NotFound { searched: Vec<PathBuf> },
    #[error("cannot read {}: {source}", .path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// A problem at a place in the file.
    #[error("{}:{line}:{column}: {message}", .path.display())]
    At { path: PathBuf, line: usize, column: usize, message: String },
    /// A problem with no better place than the file itself.
    #[error("{}: {message}", .path.display())]
    File { path: PathBuf, message: String },
    /// Every problem of one file, in file order, each on its own line; `more` past
    /// the ones listed.
    #[error("{} problems in {}; fix them all, then run again:\n{}{}", .errors.len() + .more, .path.display(), lines(.errors), more_line(*.more))]
    Several { path: PathBuf, errors: Vec<ConfigError>, more: usize },
}

fn lines(errors: &[ConfigError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

fn more_line(more: usize) -> String {
    if more == 0 { String::new() } else { format!("\n… and {more} more, shown once these are fixed") }
}

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and ")
}

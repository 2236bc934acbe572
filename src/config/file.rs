//! Finding and reading `ralph.toml`: the I/O around the pure `config::parse` (the
//! shell's part of `config`, used by the run's set-up, the fleet, watch and the
//! subcommands; nothing of the pure `config` imports it).

use std::path::{Path, PathBuf};

use super::{ConfigError, Loaded, SEARCH_PATHS, parse};

/// Finds the config file: `explicit` if given, else the first of [`SEARCH_PATHS`]
/// under `dir` that exists.
pub(crate) fn find(dir: &Path, explicit: Option<&Path>) -> Result<PathBuf, ConfigError> {
    if let Some(path) = explicit {
        let path = if path.is_absolute() { path.to_path_buf() } else { dir.join(path) };
        return if path.is_file() { Ok(path) } else { Err(ConfigError::NotFound { searched: vec![path] }) };
    }
    let candidates: Vec<PathBuf> = SEARCH_PATHS.iter().map(|p| dir.join(p)).collect();
    candidates.iter().find(|p| p.is_file()).cloned().ok_or(ConfigError::NotFound { searched: candidates })
}

/// Reads and validates the config at `path`.
pub(crate) fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let source =
        std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    parse(path, &source)
}

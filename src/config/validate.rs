//! Semantic validation: chains bound to known agents, caps above zero, per-kind keys.

use std::path::Path;

use super::{ConfigError, Loaded};

pub(super) fn parse(path: &Path, _source: &str) -> Result<Loaded, ConfigError> {
    Err(ConfigError::File { path: path.to_path_buf(), message: "not implemented".into() })
}

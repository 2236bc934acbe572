//! What a command reads before it acts: `ralph.toml` found and read (the I/O around
//! the pure `config::parse`), the goal in the prompt file (checked), the phases'
//! templates, and the credentials written in the goal or the config. A run,
//! `--dry-run` and `doctor` start from the same reads; `status`, `logs`, `clean`,
//! `inspect`, the fleet and the watchdog read the config alone.

use std::path::{Path, PathBuf};

use crate::config::{ConfigError, Loaded, SEARCH_PATHS, parse};
use crate::error::RalphError;
use crate::secrets::found::GoalFinding;

/// Finds the config file: `explicit` if given, else the first of [`SEARCH_PATHS`]
/// under `dir` that exists.
pub(crate) fn find_config(dir: &Path, explicit: Option<&Path>) -> Result<PathBuf, ConfigError> {
    if let Some(path) = explicit {
        let path = if path.is_absolute() { path.to_path_buf() } else { dir.join(path) };
        return if path.is_file() { Ok(path) } else { Err(ConfigError::NotFound { searched: vec![path] }) };
    }
    let candidates: Vec<PathBuf> = SEARCH_PATHS.iter().map(|p| dir.join(p)).collect();
    candidates.iter().find(|p| p.is_file()).cloned().ok_or(ConfigError::NotFound { searched: candidates })
}

/// Reads and validates the config at `path`.
pub(crate) fn load_config(path: &Path) -> Result<Loaded, ConfigError> {
    let source =
        std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    parse(path, &source)
}

/// The config, the goal in the prompt file (checked) and the phases' templates: what
/// a run and `--dry-run` both start from.
pub(crate) fn read_config_and_goal(
    dir: &Path,
    config: Option<&Path>,
) -> Result<(Loaded, String, Vec<String>), RalphError> {
    let mut loaded = load_config(&find_config(dir, config)?)?;
    // A fleet task's goal is its task file; the rest resolves in the main checkout.
    crate::fleet::task::adapt(dir, &mut loaded);
    let prompt_path = dir.join(&loaded.config.general.prompt);
    let goal = read_prompt(&prompt_path, &loaded.path)?;
    if let Some(problem) = crate::workflow::goal::check(&goal) {
        return Err(RalphError::Goal { path: prompt_path, problem });
    }
    let templates = load_templates(dir, &loaded)?;
    Ok((loaded, goal, templates))
}

/// A credential in the goal file or the config, named by file and line (never by
/// value). The agent gets the goal as written; from here on everything ralph writes
/// hides the values found. Any goal file (a fleet's task file too) goes through
/// `secrets::found::check_goal_file`.
pub(crate) fn credentials(dir: &Path, loaded: &Loaded) -> Vec<GoalFinding> {
    let goal = &loaded.config.general.prompt;
    let config = loaded.path.strip_prefix(dir).unwrap_or(&loaded.path);
    [(dir.join(goal), goal.as_path()), (loaded.path.clone(), config)]
        .iter()
        .flat_map(|(path, shown)| crate::secrets::found::check_goal_file(path, &shown.display().to_string()))
        .collect()
}

/// The prompt template of each phase: its file, or the built-in one.
fn load_templates(dir: &Path, loaded: &Loaded) -> Result<Vec<String>, RalphError> {
    loaded
        .phases
        .iter()
        .map(|phase| match &phase.prompt {
            None => Ok(crate::workflow::prompt::builtin(&phase.name).to_string()),
            Some(rel) => read_prompt(&dir.join(rel), &loaded.path),
        })
        .collect()
}

/// A prompt file (the goal or a phase's template); its error names the config too.
fn read_prompt(path: &Path, config: &Path) -> Result<String, RalphError> {
    std::fs::read_to_string(path).map_err(|source| RalphError::Prompt {
        path: path.to_path_buf(),
        config: config.to_path_buf(),
        source,
    })
}

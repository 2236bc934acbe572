//! `ralph init`: a starter `ralph.toml` and `PROMPT.md`, with the agent CLIs found on
//! PATH in the chain. With none installed the file names the CLIs and how to
//! install them, and its chain holds the first of them, so `ralph` refuses to start
//! (the pre-flight, exit 2) until one is there: the built-in scripted agent never
//! enters a project's configuration (it would "finish" the work without doing any).
//! It writes only what is missing: a user's files are kept, or with `--force`
//! backed up before they are replaced.

use std::path::{Path, PathBuf};

use crate::agent::kinds;
use crate::config::Config;
use crate::error::RalphError;

/// What `init` does with one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Missing: written.
    Write,
    /// Present: left as it is.
    Keep,
    /// Present and `--force`: backed up, then written.
    Replace,
}

/// Never destroys work: a present file is kept, or with `--force` backed up first.
pub(crate) fn action(exists: bool, force: bool) -> Action {
    match (exists, force) {
        (false, _) => Action::Write,
        (true, false) => Action::Keep,
        (true, true) => Action::Replace,
    }
}

/// `ralph init --example`: `ralph.example.toml`, every key with its default and
/// meaning (the file a test loads, so it is always valid).
pub(crate) fn example(dir: &Path, force: bool) -> Result<i32, RalphError> {
    let path = dir.join("ralph.example.toml");
    let what = action(path.exists(), force);
    if what == Action::Keep {
        println!("kept {} (it exists; --force replaces it and keeps a backup)", path.display());
        return Ok(crate::exit::DONE);
    }
    let backup = if what == Action::Replace { Some(backup(&path)?) } else { None };
    write_new(&path, EXAMPLE)?;
    let kept = backup.map(|b| format!(" (the old one is kept as {})", b.display())).unwrap_or_default();
    println!("wrote {}{kept}: every key, its default and meaning; copy what you need into ralph.toml", path.display());
    Ok(crate::exit::DONE)
}

/// The complete example config of ralph's repository.
const EXAMPLE: &str = include_str!("../../ralph.example.toml");

pub(crate) fn main(dir: &Path, force: bool) -> Result<i32, RalphError> {
    let found: Vec<&str> =
        kinds::ALL.iter().filter(|d| which::which(d.binary).is_ok()).map(|d| d.kind.into_str()).collect();
    let config = starter(&found);
    let files = [("ralph.toml", config.as_str()), ("PROMPT.md", crate::workflow::goal::STARTER)];
    let mut wrote = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        let what = action(path.exists(), force);
        if what == Action::Keep {
            println!("kept {} (it exists; --force replaces it and keeps a backup)", path.display());
            continue;
        }
        let backup = if what == Action::Replace { Some(backup(&path)?) } else { None };
        write_new(&path, text)?;
        wrote.push(name);
        let kept = backup.map(|b| format!(" (the old one is kept as {})", b.display())).unwrap_or_default();
        println!("wrote {}{kept}", path.display());
    }
    if wrote.contains(&"ralph.toml") {
        if found.is_empty() {
            let known = kinds::names().collect::<Vec<_>>().join(", ");
            println!("no agent CLI found on PATH ({known}): install one before running ralph; ralph.toml names each");
            for d in kinds::ALL {
                println!("  {}: {}", d.product, d.install());
            }
            println!(
                "ralph.toml's chain holds {}: until it is installed `ralph` refuses to start (`ralph demo` shows a run \
                 with a scripted agent)",
                kinds::ALL[0].kind.into_str()
            );
        } else {
            println!("agents found on PATH: {}", found.join(", "));
        }
    }
    if wrote.contains(&"PROMPT.md") {
        println!("next: write your goal in PROMPT.md, then run `ralph`");
    } else {
        println!("next: run `ralph`");
    }
    Ok(crate::exit::DONE)
}

/// Creates `path`, never replacing anything (a file that appeared meanwhile is kept).
fn write_new(path: &Path, text: &str) -> Result<(), RalphError> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| RalphError::io(format!("cannot write {}", path.display()), e))?;
    file.write_all(text.as_bytes()).map_err(|e| RalphError::io(format!("cannot write {}", path.display()), e))
}

/// Moves `path` to a free `<name>.bak`, `<name>.bak.1`, ... beside it.
fn backup(path: &Path) -> Result<PathBuf, RalphError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let candidates = std::iter::once(format!("{name}.bak")).chain((1..1000).map(|i| format!("{name}.bak.{i}")));
    for candidate in candidates {
        let target = path.with_file_name(candidate);
        if target.symlink_metadata().is_err() {
            std::fs::rename(path, &target)
                .map_err(|e| RalphError::io(format!("cannot back up {}", path.display()), e))?;
            return Ok(target);
        }
    }
    Err(RalphError::Usage(format!("{}: too many backups beside it; remove some", path.display())))
}

/// The starter `ralph.toml`; `{name}` placeholders are filled in by [`starter`].
const TEMPLATE: &str = include_str!("init.toml");

/// The starter config for the agents found: the template, with the defaults it
/// spells out read from the `Default` impls.
pub(crate) fn starter(found: &[&str]) -> String {
    let defaults = Config::default();
    let human = |d| humantime::format_duration(d).to_string();
    let (agents, chain) = if found.is_empty() {
        let first = kinds::ALL[0].kind.into_str();
        (none_found(first), vec![format!("\"{first}\"")])
    } else {
        let tables = found.iter().map(|kind| format!("[agents.{kind}]\nkind = \"{kind}\"\n\n")).collect();
        (tables, found.iter().map(|k| format!("\"{k}\"")).collect())
    };
    let t = &defaults.timeouts;
    [
        ("prompt", defaults.general.prompt.display().to_string()),
        ("max_cycles", defaults.general.max_cycles.to_string()),
        ("agent_attempts", defaults.retry.agent_attempts.to_string()),
        ("stall", human(t.stall)),
        ("tool", human(t.tool)),
        ("attempt", human(t.attempt)),
        ("grace", human(t.grace)),
        ("agents", agents),
        ("chain", chain.join(", ")),
    ]
    .iter()
    .fold(TEMPLATE.to_string(), |text, (name, value)| text.replace(&format!("{{{name}}}"), value))
}

/// The agents of the starter when no CLI is installed: the first CLI ralph prefers,
/// under a comment that names every CLI and the command that installs it.
fn none_found(first: &str) -> String {
    let mut text = String::from(
        "# No agent CLI was found on PATH when `ralph init` wrote this file: ralph refuses to\n\
         # start until the agent of the chain below is installed. Install one of:\n",
    );
    for d in kinds::ALL {
        text.push_str(&format!("#   {}: {}\n", d.product, d.install()));
    }
    text.push_str(&format!(
        "# With {} installed this file runs as it is. For another CLI, use its name for the\n\
         # agent, its kind and the chain (kind = \"codex\", \"opencode\" or \"gemini\").\n\
         [agents.{first}]\nkind = \"{first}\"\n\n",
        kinds::ALL[0].product
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_files_are_kept_unless_forced_and_then_backed_up() {
        assert_eq!(action(false, false), Action::Write);
        assert_eq!(action(false, true), Action::Write);
        assert_eq!(action(true, false), Action::Keep);
        assert_eq!(action(true, true), Action::Replace);
    }

    /// Every placeholder is filled, and the file is a valid config that states the
    /// defaults it spells out.
    #[test]
    fn the_starter_is_a_valid_config_for_the_agents_found() {
        for found in [&[][..], &["claude", "codex"][..]] {
            let text = starter(found);
            let unfilled = text.split('{').skip(1).any(|rest| {
                rest.split_once('}').is_some_and(|(name, _)| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                })
            });
            assert!(!unfilled, "a placeholder is left:\n{text}");
            let loaded = crate::config::parse(Path::new("ralph.toml"), &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let defaults = Config::default();
            assert_eq!(loaded.config.timeouts, defaults.timeouts);
            assert_eq!(loaded.config.retry.agent_attempts, defaults.retry.agent_attempts);
            assert_eq!(loaded.config.general.max_cycles, defaults.general.max_cycles);
            assert_eq!(loaded.phases[0].chain.len(), found.len().max(1), "{text}");
        }
    }

    /// With no CLI installed: no scripted agent (no fake success), every CLI named
    /// with the command that installs it.
    #[test]
    fn with_no_cli_the_starter_names_them_and_never_the_scripted_agent() {
        let text = starter(&[]);
        let loaded = crate::config::parse(Path::new("ralph.toml"), &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(loaded.config.agents.values().all(|a| a.kind != crate::config::AgentKind::Sim), "{text}");
        assert_eq!(loaded.phases[0].chain, ["claude"]);
        for d in kinds::ALL {
            assert!(text.contains(&d.install()), "{} is not named\n{text}", d.product);
        }
    }
}

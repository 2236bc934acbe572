//! `ralph init`: a starter `ralph.toml` and `PROMPT.md`, with the agent CLIs found on
//! PATH in the chain (a scripted agent when none is installed, so the file runs).
//! It writes only what is missing: a user's files are kept, or with `--force`
//! backed up before they are replaced.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::error::RalphError;

/// The CLIs ralph can drive, as (kind, binary).
const KNOWN: [(&str, &str); 4] =
    [("claude", "claude"), ("codex", "codex"), ("opencode", "opencode"), ("gemini", "gemini")];

/// What `init` does with one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Missing: written.
    Write,
    /// Present: left as it is.
    Keep,
    /// Present and `--force`: backed up, then written.
    Replace,
}

/// Never destroys work: a present file is kept, or with `--force` backed up first.
pub fn action(exists: bool, force: bool) -> Action {
    match (exists, force) {
        (false, _) => Action::Write,
        (true, false) => Action::Keep,
        (true, true) => Action::Replace,
    }
}

pub fn main(dir: &Path, force: bool) -> Result<i32, RalphError> {
    let found: Vec<&str> = KNOWN.iter().filter(|(_, bin)| which::which(bin).is_ok()).map(|(kind, _)| *kind).collect();
    let config = starter(&found);
    let files = [("ralph.toml", config.as_str()), ("PROMPT.md", crate::workflow::goal::STARTER)];
    let mut wrote = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        match action(path.exists(), force) {
            Action::Keep => println!("kept {} (it exists; --force replaces it and keeps a backup)", path.display()),
            Action::Write => {
                write_new(&path, text)?;
                wrote.push(name);
                println!("wrote {}", path.display());
            }
            Action::Replace => {
                let backup = backup(&path)?;
                write_new(&path, text)?;
                wrote.push(name);
                println!("wrote {} (the old one is kept as {})", path.display(), backup.display());
            }
        }
    }
    if wrote.contains(&"ralph.toml") {
        if found.is_empty() {
            println!(
                "no agent CLI found on PATH (claude, codex, opencode, gemini): the chain uses the built-in scripted agent"
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

/// The starter config for the agents found.
pub fn starter(found: &[&str]) -> String {
    let usable = found;
    let mut s = String::from(
        "# ralph.toml — see ralph.example.toml in ralph's repository for every key.\n\n\
         [general]\nprompt = \"PROMPT.md\"\nmax_cycles = 3\nmax_runtime = \"8h\"\n\n\
         [general.workflow]\ncheckpoint_enabled = true\nphases = [\"plan\", \"develop\", \"review\"]\n\n\
         [retry]\nagent_attempts = 3\n\n[timeouts]\nstall = \"5m\"\ntool = \"30m\"\nattempt = \"2h\"\ngrace = \"10s\"\n\n",
    );
    for kind in usable {
        let _ = writeln!(s, "[agents.{kind}]\nkind = \"{kind}\"\n");
    }
    let chain: Vec<String> = if usable.is_empty() {
        s.push_str(
            "# No supported agent CLI was found on PATH: this scripted agent lets you try ralph.\n\
             [agents.sim]\nkind = \"sim\"\n\n[[agents.sim.script]]\nsteps = [\n  { say = \"Working on it.\" },\n  { write = { path = \"PLAN.md\", content = \"1. do the thing\\n\" } },\n  { goal = \"Done: the goal is complete.\" },\n]\n\n",
        );
        vec!["\"sim\"".to_string()]
    } else {
        usable.iter().map(|k| format!("\"{k}\"")).collect()
    };
    let _ = writeln!(s, "[chains]\nmain = [{}]\n", chain.join(", "));
    s.push_str(
        "[phases.plan]\nchain = \"main\"\ndone = \"file:PLAN.md\"\n\n\
         [phases.develop]\nchain = \"main\"\nuntil = \"complete\"\niterations = 20\n\n\
         [phases.review]\nchain = \"main\"\n",
    );
    s
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
}

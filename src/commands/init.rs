//! `ralph init`: a starter `ralph.toml` and `PROMPT.md`, with the agent CLIs found on
//! PATH in the chain (a scripted agent when none is installed, so the file runs).

use std::fmt::Write;
use std::path::Path;

use crate::error::RalphError;

/// The CLIs ralph can drive, as (kind, binary).
const KNOWN: [(&str, &str); 4] =
    [("claude", "claude"), ("codex", "codex"), ("opencode", "opencode"), ("gemini", "gemini")];

const PROMPT: &str = "# Goal\n\nDescribe what you want built, how to verify it (the commands that must pass),\nand what \"done\" means.\n";

pub fn main(dir: &Path, force: bool) -> Result<i32, RalphError> {
    let config_path = dir.join("ralph.toml");
    let prompt_path = dir.join("PROMPT.md");
    for path in [&config_path, &prompt_path] {
        if path.exists() && !force {
            return Err(RalphError::Usage(format!("{} exists; pass --force to overwrite it", path.display())));
        }
    }
    let found: Vec<&str> = KNOWN.iter().filter(|(_, bin)| which::which(bin).is_ok()).map(|(kind, _)| *kind).collect();
    let text = starter(&found);
    std::fs::write(&config_path, text)
        .map_err(|e| RalphError::io(format!("cannot write {}", config_path.display()), e))?;
    if !prompt_path.exists() || force {
        std::fs::write(&prompt_path, PROMPT)
            .map_err(|e| RalphError::io(format!("cannot write {}", prompt_path.display()), e))?;
    }
    println!("wrote {} and {}", config_path.display(), prompt_path.display());
    if found.is_empty() {
        println!(
            "no agent CLI found on PATH (claude, codex, opencode, gemini): the chain uses the built-in scripted agent"
        );
    } else {
        println!("agents found on PATH: {}", found.join(", "));
    }
    println!("edit PROMPT.md, then run `ralph`");
    Ok(crate::exit::DONE)
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

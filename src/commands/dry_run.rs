//! `ralph --dry-run`: the phases, the chains, and the exact prompt and argv the first
//! attempt of each phase would get, then exit. Nothing is launched, locked or written;
//! a later phase's `{previous}` (the earlier phase's result) is shown as a placeholder.

use std::fmt::Write;
use std::path::Path;

use crate::agent::descriptor::Request;
use crate::agent::launch;
use crate::config::{DoneSignal, Loaded, Phase};
use crate::error::RalphError;
use crate::workflow::prompt;

/// What the first attempt of one phase would be.
#[derive(Debug, Clone)]
pub(crate) struct Preview {
    pub phase: Phase,
    /// The prompt, filled.
    pub prompt: String,
    /// The argv, or why the agent cannot be launched.
    pub argv: Result<Vec<String>, String>,
}

pub(crate) fn main(dir: &Path, config_path: Option<&Path>) -> Result<i32, RalphError> {
    let (loaded, goal, templates) = crate::run::setup::read_config_and_goal(dir, config_path)?;
    let prompt_path = dir.join(&loaded.config.general.prompt);
    let previews = previews(dir, &loaded, &goal, &templates);
    for warning in crate::run::setup::secrets_in_inputs(dir, &loaded) {
        println!("{warning}");
    }
    // What the agent would get, as everything ralph shows: redacted.
    print!("{}", crate::secrets::redact(&render(&loaded.path, &prompt_path, &previews)));
    print!("\n{}", crate::git::session::preview(dir, &loaded));
    Ok(crate::exit::DONE)
}

fn previews(dir: &Path, loaded: &Loaded, goal: &str, templates: &[String]) -> Vec<Preview> {
    loaded
        .phases
        .iter()
        .enumerate()
        .map(|(i, phase)| {
            let placeholder = i
                .checked_sub(1)
                .and_then(|p| loaded.phases.get(p))
                .map(|p| (p.name.clone(), format!("<the result of phase {}, known once it has run>", p.name)));
            let ctx = prompt::Context {
                goal,
                phase: &phase.name,
                phase_number: i + 1,
                phase_count: loaded.phases.len(),
                iteration: 1,
                iterations: phase.iterations,
                until_complete: phase.until_complete,
                pass: loaded.repeat.filter(|g| g.contains(i)).map(|g| (1, g.passes)),
                review: crate::workflow::advance::is_review(i, loaded.repeat),
                done: &phase.done,
                previous: placeholder.as_ref().map(|(n, t)| (n.as_str(), t.as_str())),
                from_note: None,
                recovery: None,
            };
            let text = prompt::render(&templates[i], &ctx);
            let agent = phase.chain.first().cloned().unwrap_or_default();
            let argv = match loaded.config.agents.get(&agent) {
                None => Err(format!("agent {agent} is not configured")),
                Some(cfg) => launch::prepare(
                    cfg,
                    Request {
                        agent: &agent,
                        prompt: &text,
                        prompt_file: Path::new("<the prompt file>"),
                        resume: None,
                        launch: 1,
                        cwd: dir,
                        run_id: "dry-run",
                        control: None,
                        session_tokens: (0, 0),
                    },
                )
                .map(|p| p.launch.argv)
                .map_err(|e| e.to_string()),
            };
            Preview { phase: phase.clone(), prompt: text, argv }
        })
        .collect()
}

/// The whole preview as text.
pub(crate) fn render(config: &Path, goal: &Path, previews: &[Preview]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "dry run: nothing is launched or written");
    let _ = writeln!(s, "config: {}", config.display());
    let _ = writeln!(s, "goal:   {}", goal.display());
    let names: Vec<&str> = previews.iter().map(|p| p.phase.name.as_str()).collect();
    let _ = writeln!(s, "phases: {}", names.join(" → "));
    let mut chains: Vec<(&str, &[String])> = Vec::new();
    for Preview { phase: p, .. } in previews {
        if !chains.iter().any(|(n, _)| *n == p.chain_name) {
            chains.push((&p.chain_name, &p.chain));
        }
    }
    let _ = writeln!(s, "chains:");
    for (name, agents) in chains {
        let _ = writeln!(s, "  {name}: {}", agents.join(" → "));
    }
    for (i, Preview { phase, prompt, argv }) in previews.iter().enumerate() {
        let iterations = crate::report::plural(phase.iterations, "iteration");
        let repeat =
            if phase.until_complete { format!("until the goal is complete, at most {iterations}") } else { iterations };
        let done = match &phase.done {
            DoneSignal::Tag => "the done tag".to_string(),
            DoneSignal::Exit0 => "exit 0".to_string(),
            DoneSignal::File(path) => format!("the file {}", path.display()),
            DoneSignal::Mcp => "the agent's declare_complete (MCP)".to_string(),
        };
        let _ = writeln!(
            s,
            "\nphase {}/{} {}: chain {}, {repeat}, done by {done}",
            i + 1,
            previews.len(),
            phase.name,
            phase.chain_name
        );
        let agent = phase.chain.first().map_or("", String::as_str);
        let launch = match argv {
            Ok(argv) => {
                let shown: Vec<String> =
                    argv.iter().map(|a| if a == prompt { "<PROMPT>".to_string() } else { quote(a) }).collect();
                format!(": {}", shown.join(" "))
            }
            Err(e) => format!(" cannot be launched: {e}"),
        };
        let _ = writeln!(s, "  first attempt: agent {agent}{launch}");
        let _ = writeln!(s, "  PROMPT:");
        for line in prompt.lines() {
            let _ = writeln!(s, "  |{}{line}", if line.is_empty() { "" } else { " " });
        }
    }
    s
}

/// An argument as a shell would need it, for reading (ralph never runs a shell).
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c));
    if plain { arg.to_string() } else { format!("'{}'", arg.replace('\'', "'\\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_of_two_phases() {
        let p = |phase: &str, argv: Result<Vec<String>, String>, prompt: &str| Preview {
            phase: Phase {
                name: phase.into(),
                chain_name: "main".into(),
                chain: vec!["claude".into(), "codex".into()],
                iterations: if phase == "plan" { 1 } else { 20 },
                until_complete: phase != "plan",
                done: if phase == "plan" { DoneSignal::File("PLAN.md".into()) } else { DoneSignal::Tag },
                prompt: None,
            },
            prompt: prompt.into(),
            argv,
        };
        let previews = [
            p(
                "plan",
                Ok(vec!["claude".into(), "-p".into(), "Plan it.\n".into(), "--model".into(), "opus 4".into()]),
                "Plan it.\n",
            ),
            p(
                "develop",
                Err("agent claude: the claude binary was not found on PATH".into()),
                "# Goal\n\nx\n\n# Result of the previous phase (plan)\n\n<the result of phase plan, known once it has run>\n",
            ),
        ];
        insta::assert_snapshot!(render(Path::new("ralph.toml"), Path::new("PROMPT.md"), &previews));
    }
}

//! `ralph --dry-run [--from PHASE]`: the phases, the chains, and the exact prompt and
//! argv the first attempt of each phase would get (the flags that connect the agent
//! to `ralph mcp` included), then exit. Nothing is launched, locked or written; a
//! later phase's `{previous}` (the earlier phase's result) is shown as a
//! placeholder, or with `--from` the last run's result that the run would reuse. An
//! unfinished run in the directory is said first: `ralph` would ask about it.

use std::fmt::Write;
use std::path::Path;

use crate::agent::descriptor::Request;
use crate::agent::launch;
use crate::config::{DoneSignal, Loaded, Phase};
use crate::error::RalphError;
use crate::workflow::progress::FromStart;
use crate::workflow::prompt;

/// What the first attempt of one phase would be.
#[derive(Debug, Clone)]
pub(crate) struct Preview {
    pub phase: Phase,
    /// The phase's place in the workflow (1-based) and the number of phases.
    pub number: usize,
    pub count: usize,
    /// The prompt, filled.
    pub prompt: String,
    /// The argv, or why the agent cannot be launched.
    pub argv: Result<Vec<String>, String>,
    /// How `ralph mcp` reaches the agent when its argv does not say.
    pub mcp: Option<String>,
}

pub(crate) fn main(dir: &Path, config_path: Option<&Path>, from: Option<&str>) -> Result<i32, RalphError> {
    let (loaded, goal, templates) = crate::inputs::read_config_and_goal(dir, config_path)?;
    let prompt_path = dir.join(&loaded.config.general.prompt);
    let artifacts = dir.join(".agent").join("artifacts");
    let has = |phase: &str| artifacts.join(format!("{phase}.md")).is_file();
    let start = from
        .map(|name| crate::workflow::advance::start_at(&loaded.phases, loaded.repeat, name, has))
        .transpose()
        .map_err(|e| RalphError::Usage(format!("{e} ({})", loaded.path.display())))?;
    let first = start.as_ref().map_or(0, |p| p.position.phase);
    let from_start = start.as_ref().and_then(|p| p.from.as_ref());
    if let Some(note) = unfinished(dir, from) {
        println!("{note}\n");
    }
    let previews = previews(dir, &loaded, &goal, &templates, first, from_start);
    for warning in crate::inputs::credentials(dir, &loaded) {
        println!("{warning}");
    }
    // What the agent would get, as everything ralph shows: redacted.
    print!("{}", crate::secrets::redact(&render(&loaded.path, &prompt_path, &previews)));
    print!("\n{}", crate::git::session::preview(dir, &loaded));
    Ok(crate::exit::DONE)
}

/// An unfinished run in the directory, which `ralph` would ask about before the run
/// this preview shows.
fn unfinished(dir: &Path, from: Option<&str>) -> Option<String> {
    let cp = super::inspect::read(dir).ok().flatten().filter(|cp| cp.status.unfinished())?;
    let pos = &cp.progress.position;
    let flag = from.map(|f| format!(" --from {f}")).unwrap_or_default();
    Some(format!(
        "note: an unfinished run ({}, phase {}, iteration {}) has a checkpoint here: `ralph{flag}` asks what to \
         do with it; `ralph --resume` continues it, `ralph --no-resume{flag}` starts the run shown below",
        cp.status.into_str(),
        pos.phase_name,
        pos.iteration
    ))
}

/// The first attempt of each phase from `first` on; `from`: the run starts there
/// (`--from`), reusing the results of the earlier phases that the last run left.
fn previews(
    dir: &Path,
    loaded: &Loaded,
    goal: &str,
    templates: &[String],
    first: usize,
    from: Option<&FromStart>,
) -> Vec<Preview> {
    let artifacts = dir.join(".agent").join("artifacts");
    loaded
        .phases
        .iter()
        .enumerate()
        .skip(first)
        .map(|(i, phase)| {
            let previous = i.checked_sub(1).and_then(|p| loaded.phases.get(p)).map(|p| {
                let text = if i == first && artifacts.join(format!("{}.md", p.name)).is_file() {
                    format!("<the result of phase {} from the last run, in .agent/artifacts/{}.md>", p.name, p.name)
                } else {
                    format!("<the result of phase {}, known once it has run>", p.name)
                };
                (p.name.clone(), text)
            });
            let from_note = from
                .filter(|_| i == first)
                .and_then(|f| prompt::from_note(f, previous.as_ref().map(|(n, _)| n.as_str())));
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
                previous: previous.as_ref().map(|(n, t)| (n.as_str(), t.as_str())),
                from_note: from_note.as_deref(),
                recovery: None,
            };
            let text = prompt::render(&templates[i], &ctx);
            let agent = phase.chain.first().cloned().unwrap_or_default();
            let (argv, mcp) = match loaded.config.agents.get(&agent) {
                None => (Err(format!("agent {agent} is not configured")), None),
                Some(cfg) => first_launch(dir, &agent, cfg, &text),
            };
            Preview { phase: phase.clone(), number: i + 1, count: loaded.phases.len(), prompt: text, argv, mcp }
        })
        .collect()
}

/// The control socket's place in a preview: it is made when the run starts.
const SOCKET: &str = "<control-socket>";

/// The variables that register `ralph mcp` with an agent that is not told in its argv.
const MCP_VARS: [&str; 3] = ["OPENCODE_CONFIG_CONTENT", crate::env_names::ENV_SOCKET, crate::env_names::ENV_ATTEMPT];

/// The argv of an agent's first launch, connected to `ralph mcp` as the run connects
/// it, and how `ralph mcp` reaches it when that is not in the argv.
fn first_launch(
    dir: &Path,
    agent: &str,
    cfg: &crate::config::AgentConfig,
    prompt: &str,
) -> (Result<Vec<String>, String>, Option<String>) {
    // Gemini is told through a settings file the run writes: a preview writes nothing.
    let through_a_file = cfg.kind == crate::config::AgentKind::Gemini;
    let request = Request {
        agent,
        prompt,
        prompt_file: Path::new("<the prompt file>"),
        resume: None,
        launch: 1,
        cwd: dir,
        run_id: "dry-run",
        control: (cfg.mcp && !through_a_file).then_some((Path::new(SOCKET), 1)),
        session_tokens: (0, 0),
        settings_file: crate::control::path::write_settings,
    };
    let prepared = match launch::prepare(cfg, request) {
        Ok(prepared) => prepared,
        Err(e) => return (Err(e.to_string()), None),
    };
    let vars: Vec<String> = prepared
        .launch
        .env
        .iter()
        .filter(|(k, _)| MCP_VARS.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    let mcp = match (cfg.mcp, through_a_file) {
        (false, _) => Some("not registered (mcp = false)".to_string()),
        (true, true) => Some("registered in a settings file the run writes (GEMINI_CLI_SYSTEM_SETTINGS_PATH)".into()),
        (true, false) if !vars.is_empty() => Some(format!("in its environment: {}", vars.join(" "))),
        (true, false) => None,
    };
    (Ok(prepared.launch.argv), mcp)
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
    for Preview { phase, number, count, prompt, argv, mcp } in previews {
        let iterations = crate::text::plural(phase.iterations, "iteration");
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
            "\nphase {number}/{count} {}: chain {}, {repeat}, done by {done}",
            phase.name, phase.chain_name
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
        if let Some(mcp) = mcp {
            let _ = writeln!(s, "  ralph mcp: {mcp}");
        }
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
            number: if phase == "plan" { 1 } else { 2 },
            count: 2,
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
            mcp: None,
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

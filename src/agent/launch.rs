//! How an agent is launched and resumed: the argv, the extra environment, and the
//! parser for its output. The CLI kinds' own parts are in their descriptors
//! (`agent::kinds`); the scripted and command agents' are here.

use std::path::PathBuf;

use nix::sys::signal::Signal;

use super::env;
use crate::config::{AgentConfig, AgentKind, OutputFormat};
use crate::process::Launch;

use super::claude_stream::ClaudeStreamParser;
use super::descriptor::{Env, LaunchError, Request, flag};
use super::event::LineParser;
use super::kinds;
use super::text::TextParser;

/// A launch ready to spawn.
pub(crate) struct Prepared {
    pub launch: Launch,
    /// The first signal of the escalation that ends the agent.
    pub stop_signal: Signal,
    pub parser: Box<dyn LineParser>,
    /// The agent prints nothing while a tool runs (OpenCode reports a tool call only
    /// once it finished), so its silence may be a build at work.
    pub quiet_tools: bool,
    /// The final message is the end of stdout rather than a result event.
    pub text_output: bool,
    /// Names in ralph's environment the agent does not get (for the journal).
    pub withheld_env: Vec<String>,
    /// Marks every process of this attempt (see `process::escaped`).
    pub attempt_id: String,
    /// The agent reports its cost while it runs (OpenCode, per step), so the cost cap
    /// can end the attempt in progress; the others report it only at the end.
    pub running_cost: bool,
}

/// The parser of an agent's stdout, for reading a transcript back (`ralph logs`);
/// `None` for plain text output.
pub(crate) fn parser_for(cfg: &AgentConfig) -> Option<Box<dyn LineParser>> {
    match kinds::descriptor(cfg.kind) {
        Some(cli) => Some((cli.parser)((0, 0))),
        None if cfg.kind == AgentKind::Command && cfg.output.unwrap_or_default() == OutputFormat::Text => None,
        None => Some(Box::new(ClaudeStreamParser::default())),
    }
}

pub(crate) fn prepare(cfg: &AgentConfig, req: Request<'_>) -> Result<Prepared, LaunchError> {
    let cli = kinds::descriptor(cfg.kind);
    let parser = cli.map_or_else(|| parser_for(cfg), |cli| Some((cli.parser)(req.session_tokens)));
    let text_output = parser.is_none();
    let (argv, extra): (Vec<String>, Env) = match cli {
        Some(cli) => {
            let binary = find_binary(cfg, cli.binary, req.agent)?;
            ((cli.argv)(cfg, &req, &binary)?, (cli.env)(&req)?)
        }
        None if cfg.kind == AgentKind::Sim => (sim_argv(cfg, &req)?, Vec::new()),
        None => (command_argv(cfg, &req)?, Vec::new()),
    };
    let marker = (crate::process::leftovers::RUN_ID_VAR.to_string(), req.run_id.to_string());
    let attempt_id = format!("{}:{}:{}", req.run_id, req.agent, req.launch);
    let attempt_marker = (crate::process::escaped::ATTEMPT_ID_VAR.to_string(), attempt_id.clone());
    // A scripted or command agent may run `ralph mcp` itself: it finds its run here.
    let control = req.control.filter(|_| cli.is_none()).into_iter().flat_map(|(socket, attempt)| {
        [
            (crate::env_names::ENV_SOCKET.to_string(), socket.display().to_string()),
            (crate::env_names::ENV_ATTEMPT.to_string(), attempt.to_string()),
        ]
    });
    let extra = extra
        .into_iter()
        .chain(cfg.env.iter().map(|(k, v)| (k.clone(), v.clone())))
        .chain([marker, attempt_marker])
        .chain(control);
    let env = env::build(std::env::vars(), cfg.kind, &cfg.pass_env, extra);
    // No pattern catches a bare `sk-ant-secret123`: hide the exact values ralph hands
    // over wherever it writes.
    crate::secrets::hide_values(env::secret_values(&env.vars, cfg.kind));
    // The real CLIs read the prompt from stdin (see each kind's argv), so its length
    // is not bounded by the system's limit on one argument (128 KiB).
    let stdin = cli.map(|_| req.prompt.to_string());
    Ok(Prepared {
        launch: Launch { argv, cwd: req.cwd.to_path_buf(), env: env.vars, stdin },
        withheld_env: env.withheld,
        attempt_id,
        stop_signal: cli.map_or(Signal::SIGINT, |cli| cli.stop_signal),
        parser: parser.unwrap_or_else(|| Box::new(TextParser)),
        quiet_tools: cli.is_some_and(|cli| cli.quiet_tools),
        text_output,
        running_cost: cli.is_some_and(|cli| cli.running_cost),
    })
}

fn sim_argv(cfg: &AgentConfig, req: &Request<'_>) -> Result<Vec<String>, LaunchError> {
    let exe = crate::os::self_exe().map_err(LaunchError::SelfExe)?;
    let index = usize::try_from(req.launch.saturating_sub(1)).unwrap_or(usize::MAX);
    let invalid = |message: String| LaunchError::Invalid { agent: req.agent.to_string(), message };
    let script = cfg.script.get(index).or(cfg.script.last());
    let script = script.ok_or_else(|| invalid("the scripted agent has no script".to_string()))?;
    let steps = serde_json::to_string(&script.steps).map_err(|e| invalid(e.to_string()))?;
    let launch = req.launch.to_string();
    let mut argv = vec![exe.display().to_string()];
    argv.extend(["__sim", "--agent", req.agent, "--launch", &launch, "--steps", &steps].map(str::to_string));
    argv.extend(flag("--resume", req.resume));
    argv.extend(["--".to_string(), req.prompt.to_string()]);
    Ok(argv)
}

fn command_argv(cfg: &AgentConfig, req: &Request<'_>) -> Result<Vec<String>, LaunchError> {
    let template = match (req.resume, &cfg.resume) {
        (Some(_), Some(resume)) => resume,
        _ => cfg.command.as_ref().ok_or_else(|| LaunchError::Invalid {
            agent: req.agent.to_string(),
            message: "kind = \"command\" needs `command`".to_string(),
        })?,
    };
    let session = req.resume.unwrap_or("");
    let file = req.prompt_file.display().to_string();
    // {prompt_file} first: its name contains "{prompt" but is not {prompt}.
    Ok(template
        .iter()
        .map(|arg| arg.replace("{prompt_file}", &file).replace("{prompt}", req.prompt).replace("{session}", session))
        .collect())
}

/// The configured binary, or the default name found on PATH.
pub(crate) fn find_binary(cfg: &AgentConfig, default: &str, agent: &str) -> Result<PathBuf, LaunchError> {
    let name = cfg.binary.clone().unwrap_or_else(|| PathBuf::from(default));
    which::which(&name)
        .map_err(|_| LaunchError::BinaryMissing { agent: agent.to_string(), binary: name.display().to_string() })
}

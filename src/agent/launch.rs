//! How each agent kind is launched and resumed: the argv, the extra environment, and
//! the parser for its output.

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;

use crate::config::{AgentConfig, AgentKind, OutputFormat};
use crate::process::{Launch, env};

use super::claude_stream::ClaudeStreamParser;
use super::event::LineParser;
use super::text::TextParser;
use super::{codex, gemini, opencode};

/// Extra environment variables of a kind.
type Env = Vec<(String, String)>;

/// A launch ready to spawn.
pub struct Prepared {
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

/// Why an agent cannot be launched; all of these need a human.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("agent {agent}: the {binary} binary was not found on PATH; install it or set [agents.{agent}] binary")]
    BinaryMissing { agent: String, binary: String },
    #[error("agent {agent}: kind = \"{kind}\" is not supported by this build")]
    Unsupported { agent: String, kind: &'static str },
    #[error("agent {agent}: {message}")]
    Invalid { agent: String, message: String },
    #[error("cannot find ralph's own executable (for the scripted agent or ralph mcp): {0}")]
    SelfExe(std::io::Error),
}

/// The parser of an agent's stdout, for reading a transcript back (`ralph logs`);
/// `None` for plain text output.
pub fn parser_for(cfg: &AgentConfig) -> Option<Box<dyn LineParser>> {
    match cfg.kind {
        AgentKind::Command if cfg.output.unwrap_or_default() == OutputFormat::Text => None,
        AgentKind::Sim | AgentKind::Command | AgentKind::Claude => Some(Box::new(ClaudeStreamParser::default())),
        AgentKind::Codex => Some(Box::new(codex::CodexParser::with_baseline(0, 0))),
        AgentKind::Gemini => Some(Box::new(gemini::GeminiParser::default())),
        AgentKind::Opencode => Some(Box::new(opencode::OpenCodeParser::new())),
    }
}

/// What one attempt asks of the agent.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub agent: &'a str,
    pub prompt: &'a str,
    /// A file holding the prompt (for `{prompt_file}`).
    pub prompt_file: &'a Path,
    /// Resume this session instead of starting a fresh one.
    pub resume: Option<&'a str>,
    /// 1-based launch number of this agent in the run.
    pub launch: u32,
    pub cwd: &'a Path,
    /// Marks the agent and everything it starts (see `process::leftovers`).
    pub run_id: &'a str,
    /// Input and output tokens already counted for the resumed session.
    pub session_tokens: (u64, u64),
    /// The run's control socket and this attempt's number, for `ralph mcp`.
    pub control: Option<(&'a Path, u32)>,
}

pub fn prepare(cfg: &AgentConfig, req: Request<'_>) -> Result<Prepared, LaunchError> {
    let text_output = cfg.kind == AgentKind::Command && cfg.output.unwrap_or_default() == OutputFormat::Text;
    let (argv, extra, parser): (Vec<String>, Env, Box<dyn LineParser>) = match cfg.kind {
        AgentKind::Sim => (sim_argv(cfg, &req)?, Vec::new(), Box::new(ClaudeStreamParser::default())),
        AgentKind::Command if text_output => (command_argv(cfg, &req)?, Vec::new(), Box::new(TextParser)),
        AgentKind::Command => (command_argv(cfg, &req)?, Vec::new(), Box::new(ClaudeStreamParser::default())),
        AgentKind::Claude => (claude_argv(cfg, &req)?, claude_env(), Box::new(ClaudeStreamParser::default())),
        AgentKind::Codex => {
            let binary = find_binary(cfg, "codex", req.agent)?;
            let (input, output) = req.session_tokens;
            (codex::argv(cfg, &req, &binary), codex::env(), Box::new(codex::CodexParser::with_baseline(input, output)))
        }
        AgentKind::Gemini => {
            let binary = find_binary(cfg, "gemini", req.agent)?;
            let mut env = gemini::env();
            if let Some((socket, attempt)) = req.control {
                let exe = std::env::current_exe().map_err(LaunchError::SelfExe)?;
                let invalid = |e: std::io::Error| LaunchError::Invalid {
                    agent: req.agent.to_string(),
                    message: format!("cannot write the settings that register ralph mcp: {e}"),
                };
                let name = format!("gemini-{}.json", crate::control::path::socket_name(req.cwd));
                let file = crate::control::path::secure_dir().map_err(invalid)?.join(name);
                let var = gemini::mcp_env(&exe, socket, attempt, &file).map_err(invalid)?;
                env.push(var);
            }
            (gemini::argv(cfg, &req, &binary), env, Box::new(gemini::GeminiParser::default()))
        }
        AgentKind::Opencode => {
            let binary = find_binary(cfg, "opencode", req.agent)?;
            let mut env = opencode::env();
            if let Some((socket, attempt)) = req.control {
                let exe = std::env::current_exe().map_err(LaunchError::SelfExe)?;
                env.push(opencode::mcp_env(&exe, socket, attempt));
            }
            (opencode::argv(cfg, &req, &binary), env, Box::new(opencode::OpenCodeParser::new()))
        }
    };
    let marker = (crate::process::leftovers::RUN_ID_VAR.to_string(), req.run_id.to_string());
    let attempt_id = format!("{}:{}:{}", req.run_id, req.agent, req.launch);
    let attempt_marker = (crate::process::escaped::ATTEMPT_ID_VAR.to_string(), attempt_id.clone());
    // A scripted or command agent may run `ralph mcp` itself: it finds its run here.
    let control = req
        .control
        .filter(|_| matches!(cfg.kind, AgentKind::Sim | AgentKind::Command))
        .map(|(socket, attempt)| {
            [
                (crate::commands::mcp::ENV_SOCKET.to_string(), socket.display().to_string()),
                (crate::commands::mcp::ENV_ATTEMPT.to_string(), attempt.to_string()),
            ]
        })
        .into_iter()
        .flatten();
    let extra = extra
        .into_iter()
        .chain(cfg.env.iter().map(|(k, v)| (k.clone(), v.clone())))
        .chain([marker, attempt_marker])
        .chain(control);
    let env = env::build(std::env::vars(), cfg.kind, &cfg.pass_env, extra);
    // No pattern catches a bare `sk-ant-secret123`: hide the exact values ralph hands
    // over wherever it writes.
    crate::state::redact::hide_values(env::secret_values(&env.vars, cfg.kind));
    // OpenCode ignores SIGINT (measured: it ran on ~58 s); SIGTERM ends it at once.
    let stop_signal = if cfg.kind == AgentKind::Opencode { Signal::SIGTERM } else { Signal::SIGINT };
    let quiet_tools = cfg.kind == AgentKind::Opencode;
    // The real CLIs read the prompt from stdin (see each adapter's argv), so its
    // length is not bounded by the system's limit on one argument (128 KiB).
    let stdin = matches!(cfg.kind, AgentKind::Claude | AgentKind::Codex | AgentKind::Gemini | AgentKind::Opencode)
        .then(|| req.prompt.to_string());
    Ok(Prepared {
        launch: Launch { argv, cwd: req.cwd.to_path_buf(), env: env.vars, stdin },
        withheld_env: env.withheld,
        attempt_id,
        stop_signal,
        parser,
        quiet_tools,
        text_output,
        running_cost: cfg.kind == AgentKind::Opencode,
    })
}

fn sim_argv(cfg: &AgentConfig, req: &Request<'_>) -> Result<Vec<String>, LaunchError> {
    let exe = std::env::current_exe().map_err(LaunchError::SelfExe)?;
    let index = usize::try_from(req.launch.saturating_sub(1)).unwrap_or(usize::MAX);
    let script = cfg.script.get(index).or(cfg.script.last()).ok_or_else(|| LaunchError::Invalid {
        agent: req.agent.to_string(),
        message: "the scripted agent has no script".to_string(),
    })?;
    let steps = serde_json::to_string(&script.steps)
        .map_err(|e| LaunchError::Invalid { agent: req.agent.to_string(), message: e.to_string() })?;
    let mut argv = vec![
        exe.display().to_string(),
        "__sim".to_string(),
        "--agent".to_string(),
        req.agent.to_string(),
        "--launch".to_string(),
        req.launch.to_string(),
        "--steps".to_string(),
        steps,
    ];
    if let Some(session) = req.resume {
        argv.extend(["--resume".to_string(), session.to_string()]);
    }
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

fn claude_argv(cfg: &AgentConfig, req: &Request<'_>) -> Result<Vec<String>, LaunchError> {
    let binary = find_binary(cfg, "claude", req.agent)?;
    let mut argv = vec![
        binary.display().to_string(),
        // `-p` is a flag; the prompt comes on stdin, so a prompt that starts with `-`
        // is never read as an option (measured as an argument: "unknown option").
        "-p".to_string(),
        "--output-format".to_string(),
        "stream-json".to_string(),
        "--verbose".to_string(),
        // The default, acceptEdits, works as root, unlike --dangerously-skip-permissions.
        "--permission-mode".to_string(),
        cfg.kind.permission_mode(cfg.permission_mode.as_deref()).to_string(),
    ];
    if let Some(model) = &cfg.model {
        argv.extend(["--model".to_string(), model.clone()]);
    }
    if let Some(session) = req.resume {
        argv.extend(["--resume".to_string(), session.to_string()]);
    }
    if let Some((socket, attempt)) = req.control {
        argv.extend(claude_mcp_args(socket, attempt)?);
    }
    argv.extend(cfg.args.iter().cloned());
    // No prompt argument: `claude -p` reads it from stdin (see `prepare`).
    Ok(argv)
}

/// `ralph mcp` registered with Claude Code for this attempt only: an inline
/// `--mcp-config` (never the user's settings) and its tools allowed, since `-p`
/// cannot ask for permission.
fn claude_mcp_args(socket: &Path, attempt: u32) -> Result<Vec<String>, LaunchError> {
    let exe = std::env::current_exe().map_err(LaunchError::SelfExe)?;
    let server = serde_json::json!({"mcpServers": {"ralph": {
        "type": "stdio",
        "command": exe.display().to_string(),
        "args": ["mcp", "--socket", socket.display().to_string(), "--attempt", attempt.to_string()],
    }}});
    Ok(vec!["--mcp-config".to_string(), server.to_string(), "--allowedTools".to_string(), "mcp__ralph".to_string()])
}

/// Claude Code without side traffic, auto-update or telemetry, and with its own API
/// retries capped: by default it retries for minutes (a 401 ten times), and ralph's
/// policy, which knows about outages, limits and budgets, should decide long waits.
/// A user's own `CLAUDE_CODE_MAX_RETRIES` wins.
fn claude_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> =
        [("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"), ("DISABLE_AUTOUPDATER", "1"), ("DISABLE_TELEMETRY", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    if std::env::var_os(CLAUDE_RETRIES).is_none() {
        env.push((CLAUDE_RETRIES.to_string(), "2".to_string()));
    }
    env
}

const CLAUDE_RETRIES: &str = "CLAUDE_CODE_MAX_RETRIES";

/// The configured binary, or the default name found on PATH.
pub fn find_binary(cfg: &AgentConfig, default: &str, agent: &str) -> Result<PathBuf, LaunchError> {
    let name = cfg.binary.clone().unwrap_or_else(|| PathBuf::from(default));
    which::which(&name)
        .map_err(|_| LaunchError::BinaryMissing { agent: agent.to_string(), binary: name.display().to_string() })
}

//! Claude Code: how it is launched and resumed, and everything else ralph knows about
//! it (its descriptor). Its output is `--output-format stream-json`, read by
//! `agent::claude_stream`, which the scripted agent speaks too.

use std::path::Path;

use nix::sys::signal::Signal;

use super::claude_stream::ClaudeStreamParser;
use super::descriptor::{Descriptor, Env, LaunchError, Request, flag, mcp_args, url_or};
use crate::config::types::{AgentConfig, AgentKind};

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    kind: AgentKind::Claude,
    binary: "claude",
    product: "Claude Code",
    package: "@anthropic-ai/claude-code",
    tested_version: "2.1.197",
    argv,
    env: |_| Ok(env()),
    // Bedrock and Vertex set-ups are Claude Code's own settings too.
    passes: &[
        "ANTHROPIC_*",
        "CLAUDE_*",
        "DISABLE_*",
        "MCP_*",
        "AWS_*",
        "CLOUD_ML_REGION",
        "VERTEX_*",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ],
    credentials: &[
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ],
    login: Some((".claude/.credentials.json", "a Claude login")),
    nesting_markers: &["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"],
    endpoint: |_, lookup, _| url_or(lookup("ANTHROPIC_BASE_URL"), "api.anthropic.com:443"),
    stop_signal: Signal::SIGINT,
    quiet_tools: false,
    running_cost: false,
    parser: |_| Box::new(ClaudeStreamParser::default()),
    unknown_session_exit: None,
};

/// `claude -p --output-format stream-json --verbose --permission-mode MODE [--model M]
/// [--resume SESSION] [--mcp-config JSON --allowedTools mcp__ralph] [args…]`.
fn argv(cfg: &AgentConfig, req: &Request<'_>, binary: &Path) -> Result<Vec<String>, LaunchError> {
    let mut argv = vec![binary.display().to_string()];
    // `-p` is a flag; the prompt comes on stdin, so a prompt that starts with `-` is
    // never read as an option (measured as an argument: "unknown option"). The default
    // permission mode, acceptEdits, works as root, unlike --dangerously-skip-permissions.
    let mode = DESCRIPTOR.permission_mode(cfg);
    argv.extend(["-p", "--output-format", "stream-json", "--verbose", "--permission-mode", mode].map(str::to_string));
    argv.extend(flag("--model", cfg.model.as_deref()).chain(flag("--resume", req.resume)));
    if let Some((socket, attempt)) = req.control {
        argv.extend(mcp(socket, attempt)?);
    }
    argv.extend(cfg.args.iter().cloned());
    Ok(argv)
}

/// `ralph mcp` registered with Claude Code for this attempt only: an inline
/// `--mcp-config` (never the user's settings) and its tools allowed, since `-p`
/// cannot ask for permission.
fn mcp(socket: &Path, attempt: u32) -> Result<[String; 4], LaunchError> {
    let exe = crate::os::self_exe().map_err(LaunchError::SelfExe)?;
    let server = serde_json::json!({"mcpServers": {"ralph": {
        "type": "stdio",
        "command": exe.display().to_string(),
        "args": mcp_args(socket, attempt),
    }}});
    Ok(["--mcp-config".to_string(), server.to_string(), "--allowedTools".to_string(), "mcp__ralph".to_string()])
}

/// Claude Code without side traffic, auto-update or telemetry, and with its own API
/// retries capped: by default it retries for minutes (a 401 ten times), and ralph's
/// policy, which knows about outages, limits and budgets, should decide long waits.
/// A user's own `CLAUDE_CODE_MAX_RETRIES` wins.
fn env() -> Env {
    let mut env: Env =
        [("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"), ("DISABLE_AUTOUPDATER", "1"), ("DISABLE_TELEMETRY", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    if std::env::var_os(RETRIES).is_none() {
        env.push((RETRIES.to_string(), "2".to_string()));
    }
    env
}

const RETRIES: &str = "CLAUDE_CODE_MAX_RETRIES";

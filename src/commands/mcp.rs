//! `ralph mcp`: the MCP server an agent's CLI starts over stdio, built on the
//! official Rust SDK (`rmcp`). Each tool forwards one request to the run's control
//! socket and gives the model the run's answer; without a reachable run every tool
//! fails with an MCP error that says so. The socket and attempt come from the argv
//! ralph registered (`--socket PATH --attempt ID`) or, for scripted agents, from
//! `RALPH_SOCKET` and `RALPH_ATTEMPT`.

use std::path::PathBuf;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

use crate::control::client;
use crate::control::protocol::Request;
use crate::env_names::{ENV_ATTEMPT, ENV_SOCKET};
use crate::error::RalphError;

pub(crate) fn main(socket: Option<PathBuf>, attempt: Option<u32>) -> Result<i32, RalphError> {
    let socket = socket.or_else(|| std::env::var_os(ENV_SOCKET).map(PathBuf::from));
    let attempt = attempt.or_else(|| std::env::var(ENV_ATTEMPT).ok().and_then(|a| a.trim().parse().ok()));
    let server = Ralph { socket: socket.clone(), attempt, tool_router: Ralph::tool_router() };
    let runtime = crate::process::runtime().map_err(|e| RalphError::io("cannot start the runtime", e))?;
    // The session tells the run this server lives; without a run the tools say so.
    let session = match (&socket, attempt) {
        (Some(s), Some(a)) => client::open_session(s, a).map_err(|e| tracing::warn!("{e}")).ok(),
        _ => None,
    };
    let served = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let stdio = super::mcp_stdio::stdio();
        let running = server
            .serve((stdio.input, stdio.output))
            .await
            .map_err(|e| RalphError::Internal(format!("mcp: cannot start: {e}")))?;
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) =
            (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup()))
        else {
            return running.waiting().await.map(|_| ()).map_err(|e| RalphError::Internal(format!("mcp: {e}")));
        };
        // A CLI that ends its MCP servers with a signal is shutting them down, not
        // crashing them.
        let ended = tokio::select! {
            r = running.waiting() => r.map(|_| ()).map_err(|e| RalphError::Internal(format!("mcp: {e}"))),
            _ = term.recv() => return Ok(()),
            _ = int.recv() => return Ok(()),
            _ = hup.recv() => return Ok(()),
        };
        // What rmcp wrote last reaches stdout before the process ends.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stdio.writer).await;
        ended
    });
    if let (Some(stream), Some(a)) = (session, attempt) {
        client::end_session(stream, a);
    }
    served?;
    Ok(crate::exit::DONE)
}

#[derive(Clone)]
struct Ralph {
    socket: Option<PathBuf>,
    attempt: Option<u32>,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ProgressArgs {
    /// One line on what you are doing now or just finished.
    message: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct CheckpointArgs {
    /// What is done and verified so far.
    summary: String,
    /// Files changed so far.
    #[serde(default)]
    files_touched: Vec<String>,
    /// The steps finished and verified.
    steps_done: Vec<String>,
    /// What remains, in order.
    next_steps: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ReasonArgs {
    /// Why, in a sentence or two, with what a person would need to know.
    reason: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct CompleteArgs {
    /// What was done.
    summary: String,
    /// How the work was verified: the commands run and what they showed (at least 20 characters of distinct words; "done", "tested" and the like, however padded, are refused).
    evidence: String,
    /// True only when the whole goal is reached and verified, not just this iteration.
    #[serde(default)]
    goal_complete: bool,
}

#[tool_router]
impl Ralph {
    /// Report progress to ralph, the supervisor running you. Call it every few minutes during long work (a long build or test run): it tells ralph you are alive, so it does not end your session as stalled. The message is shown to the user.
    #[tool]
    async fn report_progress(&self, Parameters(a): Parameters<ProgressArgs>) -> Result<CallToolResult, ErrorData> {
        self.forward(|attempt| Request::Progress { attempt, message: a.message }).await
    }

    /// Save verified progress. If this session is interrupted, the next attempt starts from this note, so list only what is done and verified, and what remains.
    #[tool]
    async fn save_checkpoint(&self, Parameters(a): Parameters<CheckpointArgs>) -> Result<CallToolResult, ErrorData> {
        self.forward(|attempt| Request::Checkpoint {
            attempt,
            summary: a.summary,
            files_touched: a.files_touched,
            steps_done: a.steps_done,
            next_steps: a.next_steps,
        })
        .await
    }

    /// Get the task's status from ralph: phase, iteration, attempt, budget, and the recovery note and checkpoint of earlier attempts.
    #[tool]
    async fn get_task_status(&self, Parameters(_): Parameters<NoArgs>) -> Result<CallToolResult, ErrorData> {
        self.forward(|attempt| Request::TaskStatus { attempt }).await
    }

    /// Tell ralph you cannot finish this attempt (a broken environment, a missing dependency, a tool that keeps failing). Then end your turn; ralph decides whether to retry or hand the task to another agent.
    #[tool]
    async fn report_interruption(&self, Parameters(a): Parameters<ReasonArgs>) -> Result<CallToolResult, ErrorData> {
        self.forward(|attempt| Request::Interruption { attempt, reason: a.reason }).await
    }

    /// Declare this iteration's work complete, with evidence of how you verified it (for example the test command you ran and its result). Vague evidence is refused with the reason: then verify and call again. After it is accepted, end your turn.
    #[tool]
    async fn declare_complete(&self, Parameters(a): Parameters<CompleteArgs>) -> Result<CallToolResult, ErrorData> {
        self.forward(|attempt| Request::Complete {
            attempt,
            summary: a.summary,
            evidence: a.evidence,
            goal_complete: a.goal_complete,
        })
        .await
    }

    /// Cancel the whole task because a person must act first (missing access, a contradiction in the goal, a decision only the user can make). The run stops, blocked, with your reason, and is not retried. Then end your turn.
    #[tool]
    async fn cancel_task(&self, Parameters(a): Parameters<ReasonArgs>) -> Result<CallToolResult, ErrorData> {
        self.forward(|attempt| Request::Cancel { attempt, reason: a.reason }).await
    }
}

impl Ralph {
    /// Sends one request for this attempt; the run's refusal is a tool error the
    /// model can read and act on, no run at all is an MCP error.
    async fn forward(&self, build: impl FnOnce(u32) -> Request) -> Result<CallToolResult, ErrorData> {
        let (Some(socket), Some(attempt)) = (self.socket.clone(), self.attempt) else {
            return Err(ErrorData::internal_error(
                "no ralph run is reachable: this server was started without --socket and --attempt \
                 (or RALPH_SOCKET and RALPH_ATTEMPT)",
                None,
            ));
        };
        let request = build(attempt);
        let reply = tokio::task::spawn_blocking(move || client::call(&socket, &request))
            .await
            .map_err(|e| ErrorData::internal_error(format!("ralph mcp: {e}"), None))?
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if !reply.ok {
            let error = crate::secrets::redact(&reply.error.unwrap_or_default());
            return Ok(CallToolResult::error(vec![ContentBlock::text(error)]));
        }
        let text = match (&reply.live, &reply.message) {
            (Some(live), _) => serde_json::to_string_pretty(live).unwrap_or_default(),
            (None, Some(m)) => m.clone(),
            (None, None) => "ok".to_string(),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(crate::secrets::redact(&text))]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Ralph {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ralph", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "ralph supervises this session. Report progress during long work, save verified \
                 checkpoints, and declare completion with evidence of how you verified it.",
            )
    }
}

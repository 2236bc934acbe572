//! The JSON lines the scripted agent prints: the same shapes as Claude Code's
//! `--output-format stream-json --verbose`, reduced to the fields ralph reads plus the
//! ones that make a transcript look real. Pure functions, so tests can pin them.

use serde_json::{Value, json};

use crate::config::SimUsage;

/// The tools the sim claims to have, mirroring Claude Code's core set.
pub(crate) const TOOLS: &[&str] = &["Bash", "Edit", "Glob", "Grep", "Read", "Write"];

pub(crate) fn init(session_id: &str, cwd: &str) -> Value {
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": cwd,
        "session_id": session_id,
        "tools": TOOLS,
        "mcp_servers": [],
        "model": "sim",
        "permissionMode": "acceptEdits",
        "apiKeySource": "none",
        "claude_code_version": "ralph-sim",
    })
}

/// One assistant line holding a single content block, as Claude Code prints them.
fn assistant(session_id: &str, msg_id: &str, block: Value) -> Value {
    json!({
        "type": "assistant",
        "message": {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": "sim",
            "content": [block],
            "stop_reason": null,
            "stop_sequence": null,
        },
        "parent_tool_use_id": null,
        "session_id": session_id,
    })
}

pub(crate) fn text(session_id: &str, msg_id: &str, text: &str) -> Value {
    assistant(session_id, msg_id, json!({"type": "text", "text": text}))
}

pub(crate) fn thinking(session_id: &str, msg_id: &str, text: &str) -> Value {
    assistant(session_id, msg_id, json!({"type": "thinking", "thinking": text, "signature": ""}))
}

pub(crate) fn tool_use(session_id: &str, msg_id: &str, tool_id: &str, name: &str, input: &Value) -> Value {
    assistant(session_id, msg_id, json!({"type": "tool_use", "id": tool_id, "name": name, "input": input}))
}

pub(crate) fn tool_result(session_id: &str, tool_id: &str, output: &str, is_error: bool) -> Value {
    json!({
        "type": "user",
        "message": {
            "role": "user",
            "content": [{
                "tool_use_id": tool_id,
                "type": "tool_result",
                "content": output,
                "is_error": is_error,
            }],
        },
        "parent_tool_use_id": null,
        "session_id": session_id,
    })
}

pub(crate) fn rate_limit(session_id: &str, resets_at: i64) -> Value {
    json!({
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "rejected",
            "resetsAt": resets_at,
            "rateLimitType": "five_hour",
            "isUsingOverage": false,
        },
        "session_id": session_id,
    })
}

/// The final `result` line: `turns` model requests in `ms` milliseconds, with `usage`.
pub(crate) fn result(session: &str, is_error: bool, text: &str, turns: u32, ms: u64, usage: &SimUsage) -> Value {
    json!({
        "type": "result",
        // Claude Code reports API errors as `success` with `is_error: true`; the sim
        // copies that so the classifier is tested against the real quirk.
        "subtype": "success",
        "is_error": is_error,
        "api_error_status": if is_error { status_in_text(text) } else { None },
        "duration_ms": ms,
        "duration_api_ms": ms,
        "num_turns": turns,
        "result": text,
        "session_id": session,
        "total_cost_usd": usage.cost_usd,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": usage.output_tokens,
        },
        "permission_denials": [],
    })
}

/// The HTTP status an error text names ("API Error: 529 Overloaded", "Request
/// rejected (429)"), as Claude Code reports it in `api_error_status`.
pub(crate) fn status_in_text(text: &str) -> Option<u16> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|tok| tok.len() == 3)
        .filter_map(|tok| tok.parse::<u16>().ok())
        .find(|n| (400..=599).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_extraction() {
        assert_eq!(status_in_text("API Error: 529 Overloaded."), Some(529));
        assert_eq!(status_in_text("API Error: Request rejected (429) · slow down"), Some(429));
        assert_eq!(status_in_text("Invalid API key · Fix external API key"), None);
        assert_eq!(status_in_text("took 4290 ms, code 200"), None);
    }
}

//! The scripted agent as an MCP client of its own run: it starts `ralph mcp` (which
//! finds the run through `RALPH_SOCKET` and `RALPH_ATTEMPT`), speaks JSON-RPC over
//! the child's stdio, calls one tool, and either shuts the server down in order or
//! kills it (a crashed MCP server, as a real CLI would see one).

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// The protocol revision the scripted client asks for.
pub(super) const PROTOCOL: &str = "2025-06-18";

/// The tool's result text and whether it was an error (a tool error or an MCP error).
pub(super) fn call(tool: &str, arguments: &Value, kill: bool) -> io::Result<(String, bool)> {
    let exe = crate::os::self_exe()?;
    let mut child =
        Command::new(exe).arg("mcp").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?;
    let result = exchange(&mut child, tool, arguments);
    if kill {
        let _ = child.kill();
    } else {
        drop(child.stdin.take());
    }
    let _ = child.wait();
    result
}

fn exchange(child: &mut Child, tool: &str, arguments: &Value) -> io::Result<(String, bool)> {
    let (Some(stdin), Some(stdout)) = (child.stdin.as_mut(), child.stdout.take()) else {
        return Err(io::Error::other("ralph mcp has no pipes"));
    };
    let mut reader = BufReader::new(stdout);
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "ralph-sim", "version": env!("CARGO_PKG_VERSION")}
        }}),
    )?;
    let _ = response(&mut reader, 1)?;
    send(stdin, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}),
    )?;
    let reply = response(&mut reader, 2)?;
    if let Some(error) = reply.get("error") {
        return Ok((error.get("message").and_then(Value::as_str).unwrap_or("error").to_string(), true));
    }
    let result = &reply["result"];
    let text = result["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    Ok((text, result["isError"].as_bool().unwrap_or(false)))
}

fn send(stdin: &mut ChildStdin, message: &Value) -> io::Result<()> {
    writeln!(stdin, "{message}")?;
    stdin.flush()
}

/// Reads lines until the response with this id (skipping notifications).
fn response(reader: &mut BufReader<ChildStdout>, id: u64) -> io::Result<Value> {
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "ralph mcp closed its output"));
        }
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else { continue };
        if v.get("id").and_then(Value::as_u64) == Some(id) {
            return Ok(v);
        }
    }
}

//! The stdio of `ralph mcp`, between the agent's CLI and `rmcp`. JSON-RPC 2.0 asks
//! a server to answer a message that does not parse with a parse error (-32700, id
//! `null`); `rmcp` drops such lines without a word (its choice against error storms),
//! which leaves a client waiting for an answer that never comes. So stdin goes
//! through a filter: a line that is not JSON at all (or is longer than `rmcp` takes)
//! is answered here, every other line goes to `rmcp` as it came. Both answers reach
//! stdout a whole line at a time.

use serde::de::IgnoredAny;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line `rmcp` reads (its `DEFAULT_MAX_LINE_LENGTH`); a longer one is
/// refused here with a parse error.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// `rmcp`'s ends of the filtered stdio, and the task that writes stdout: it ends once
/// `rmcp` has closed its output and every answer of the filter is written.
pub(super) struct Filtered {
    pub input: DuplexStream,
    pub output: DuplexStream,
    pub writer: JoinHandle<()>,
}

/// Filters the process's stdin and stdout.
pub(super) fn stdio() -> Filtered {
    filter(tokio::io::stdin(), tokio::io::stdout())
}

/// Filters `input` into `rmcp`, and writes `rmcp`'s output and the filter's answers
/// to `output`.
pub(super) fn filter<R, W>(input: R, output: W) -> Filtered
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_input) = tokio::io::duplex(64 * 1024);
    let (rmcp_output, from_rmcp) = tokio::io::duplex(64 * 1024);
    let (answers, answered) = mpsc::unbounded_channel();
    tokio::spawn(read(input, to_rmcp, answers));
    let writer = tokio::spawn(write(from_rmcp, answered, output));
    Filtered { input: rmcp_input, output: rmcp_output, writer }
}

/// The answer to a line that is no JSON-RPC message at all.
fn parse_error(why: &str) -> String {
    let error = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("Parse error: {why}")}});
    format!("{error}\n")
}

/// Why `line` (without its newline) is not JSON, if it is not.
fn not_json(line: &[u8]) -> Option<String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<IgnoredAny>(line) {
        Err(e) if matches!(e.classify(), serde_json::error::Category::Syntax | serde_json::error::Category::Eof) => {
            Some(e.to_string())
        }
        _ => None,
    }
}

async fn read<R: AsyncRead + Unpin>(input: R, mut to_rmcp: DuplexStream, answers: mpsc::UnboundedSender<String>) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut input).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line).await;
        let Ok(n) = read else { return };
        if n == 0 {
            return;
        }
        if !line.ends_with(b"\n") && line.len() > MAX_LINE {
            let _ = answers.send(parse_error(&format!("a message longer than {MAX_LINE} bytes")));
            // The rest of that line goes unread.
            let mut rest = Vec::new();
            while !rest.ends_with(b"\n") {
                rest.clear();
                match (&mut input).take(64 * 1024).read_until(b'\n', &mut rest).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
            continue;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if let Some(why) = not_json(body) {
            let _ = answers.send(parse_error(&why));
            continue;
        }
        if to_rmcp.write_all(&line).await.is_err() {
            return;
        }
    }
}

async fn write<W: AsyncWrite + Unpin>(
    from_rmcp: DuplexStream,
    mut answered: mpsc::UnboundedReceiver<String>,
    mut output: W,
) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    let (mut rmcp_open, mut filter_open) = (true, true);
    let mut line = Vec::new();
    while rmcp_open || filter_open {
        line.clear();
        tokio::select! {
            read = from_rmcp.read_until(b'\n', &mut line), if rmcp_open => {
                if !matches!(read, Ok(n) if n > 0) {
                    rmcp_open = false;
                    continue;
                }
            }
            answer = answered.recv(), if filter_open => match answer {
                Some(answer) => line.extend_from_slice(answer.as_bytes()),
                None => {
                    filter_open = false;
                    continue;
                }
            },
        }
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_not_json_at_all_is_answered_here() {
        assert!(not_json(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}").is_none());
        assert!(not_json(b"\xef\xbb\xbf{\"a\":1}\r").is_none(), "a BOM and a CR are rmcp's to strip");
        assert!(not_json(b"   ").is_none(), "rmcp skips empty lines");
        // Valid JSON that is no message is rmcp's to answer (Invalid Request).
        assert!(not_json(b"[1, 2]").is_none());
        for bad in [&b"{not json"[..], b"{\"jsonrpc\":\"2.0\",", b"\xff\xfe", b"hello"] {
            assert!(not_json(bad).is_some(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_malformed_line_gets_a_parse_error_and_the_rest_goes_through() {
        let (client, server_input) = tokio::io::duplex(1024);
        let (server_output, mut from_server) = tokio::io::duplex(1024);
        let Filtered { mut input, mut output, writer } = filter(server_input, server_output);
        let mut client = client;
        client.write_all(b"{oops\n{\"id\":1}\n").await.unwrap();
        drop(client);
        let mut passed = String::new();
        input.read_to_string(&mut passed).await.unwrap();
        assert_eq!(passed, "{\"id\":1}\n");
        output.write_all(b"{\"id\":1,\"result\":{}}\n").await.unwrap();
        drop((input, output));
        writer.await.unwrap();
        let mut written = String::new();
        from_server.read_to_string(&mut written).await.unwrap();
        let lines: Vec<serde_json::Value> = written.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{written}");
        let error = lines.iter().find(|l| l["error"].is_object()).expect("a parse error");
        assert_eq!(error["error"]["code"], -32700);
        assert!(error["id"].is_null());
        assert!(lines.iter().any(|l| l["id"] == 1));
    }
}

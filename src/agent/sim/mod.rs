//! The built-in scripted agent (`kind = "sim"`): a deterministic, offline stand-in
//! for Claude Code that follows a script and misbehaves on purpose.
//!
//! It speaks Claude Code's `stream-json` (see `wire`), so ralph reads it with the real
//! [`ClaudeStreamParser`](super::claude_stream::ClaudeStreamParser). Plain blocking
//! std code: it runs as its own process (`ralph` re-executing itself), and process-level
//! steps (crash, hang, ignore, grandchild) live in `os`.

mod mcp;
mod os;
pub(crate) mod wire;

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::config::{SimStep, SimUsage};

/// One launch of the scripted agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SimArgs {
    /// The session to resume; reported back unchanged, like `claude --resume ID`.
    pub session: Option<String>,
    /// The agent's name in `ralph.toml`; part of the fresh session id.
    pub agent: String,
    /// Which launch of this agent this is; part of the fresh session id.
    pub launch: u32,
    pub steps: Vec<SimStep>,
    /// Accepted for parity with real agents; the script, not the prompt, drives output.
    pub prompt: String,
}

/// The session id a fresh (non-resumed) launch reports. Deterministic so tests can
/// predict it and check that a resume passes it back.
pub(crate) fn fresh_session_id(agent: &str, launch: u32) -> String {
    format!("sim-{agent}-{launch}")
}

/// Runs the script in the current directory on the real stdout/stderr and returns the
/// exit code; the caller passes it to `std::process::exit`. `crash` steps never return.
pub(crate) fn run(args: SimArgs) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let stdout = io::stdout();
    let stderr = io::stderr();
    run_to(args, &cwd, &mut stdout.lock(), &mut stderr.lock())
}

/// [`run`] with an explicit workspace and writers, so tests can capture the stream
/// (without changing the test process's cwd). Relative paths in steps resolve
/// against `cwd`.
pub(crate) fn run_to(args: SimArgs, cwd: &Path, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let session = args.session.clone().unwrap_or_else(|| fresh_session_id(&args.agent, args.launch));
    let mut sim = Sim {
        out,
        err,
        cwd: cwd.to_path_buf(),
        session,
        started: Instant::now(),
        turns: 1,
        tool_seq: 0,
        last_text: String::new(),
        usage: SimUsage::default(),
    };
    match sim.script(&args.steps) {
        Ok(code) => code,
        Err(e) => {
            // The reader went away (EPIPE) or stdout is broken: nobody can see the rest
            // of the script, so stop like a CLI whose pipe closed.
            let _ = writeln!(sim.err, "ralph sim: cannot write to stdout: {e}");
            1
        }
    }
}

struct Sim<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    cwd: PathBuf,
    session: String,
    started: Instant,
    /// Claude counts one turn per model request: the first, plus one after each tool
    /// result.
    turns: u32,
    tool_seq: u32,
    /// The final message reported in the `result` line.
    last_text: String,
    usage: SimUsage,
}

impl Sim<'_> {
    fn script(&mut self, steps: &[SimStep]) -> io::Result<i32> {
        self.emit(&wire::init(&self.session, &self.cwd.display().to_string()))?;
        for step in steps {
            if let Some(code) = self.step(step)? {
                return Ok(code);
            }
        }
        self.result(false)?;
        Ok(0)
    }

    /// One line, flushed at once: the supervisor measures liveness per line.
    fn emit(&mut self, v: &Value) -> io::Result<()> {
        writeln!(self.out, "{v}")?;
        self.out.flush()
    }

    fn stderr_line(&mut self, text: &str) {
        // Stderr is diagnostics only; losing it must not change the script's outcome.
        let _ = writeln!(self.err, "{text}");
        let _ = self.err.flush();
    }

    fn msg_id(&self) -> String {
        format!("msg_sim_{}", self.turns)
    }

    fn say(&mut self, text: &str) -> io::Result<()> {
        self.last_text = text.to_owned();
        self.emit(&wire::text(&self.session, &self.msg_id(), text))
    }

    fn tool_start(&mut self, name: &str, input: &Value) -> io::Result<String> {
        self.tool_seq += 1;
        let id = format!("toolu_{}", self.tool_seq);
        // Claude's tool inputs are always objects; an omitted `input` means "no args".
        let input = if input.is_null() { json!({}) } else { input.clone() };
        self.emit(&wire::tool_use(&self.session, &self.msg_id(), &id, name, &input))?;
        Ok(id)
    }

    fn tool_finish(&mut self, id: &str, output: &str, is_error: bool) -> io::Result<()> {
        self.emit(&wire::tool_result(&self.session, id, output, is_error))?;
        self.turns += 1;
        Ok(())
    }

    fn result(&mut self, is_error: bool) -> io::Result<()> {
        let duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.emit(&wire::result(&self.session, is_error, &self.last_text, self.turns, duration_ms, &self.usage))
    }

    fn flush_all(&mut self) {
        let _ = self.out.flush();
        let _ = self.err.flush();
    }

    fn hang(&mut self) -> ! {
        self.flush_all();
        os::hang()
    }

    /// The exit code when the script ends at `step`.
    fn step(&mut self, step: &SimStep) -> io::Result<Option<i32>> {
        match step {
            SimStep::Say(text) | SimStep::ToolText(text) => self.say(text)?,
            SimStep::Think(text) => self.emit(&wire::thinking(&self.session, &self.msg_id(), text))?,
            SimStep::Tool(tool) => {
                let id = self.tool_start(&tool.name, &tool.input)?;
                if tool.hang {
                    self.hang();
                }
                if let Some(d) = tool.duration {
                    thread::sleep(d);
                }
                self.tool_finish(&id, &tool.result, tool.error)?;
            }
            SimStep::Mcp(m) => self.mcp(m)?,
            SimStep::Write(w) => self.write(w)?,
            SimStep::Sleep(d) => thread::sleep(*d),
            SimStep::Hang(true) => self.hang(),
            SimStep::Hang(false) => {}
            SimStep::Crash(sig) => {
                self.flush_all();
                os::crash(sig);
            }
            SimStep::Exit(code) => {
                self.flush_all();
                return Ok(Some(*code));
            }
            SimStep::Error(text) => {
                self.last_text = text.clone();
                self.result(true)?;
                return Ok(Some(1));
            }
            SimStep::Stderr(text) => self.stderr_line(text),
            SimStep::RateLimit(d) => {
                let resets = SystemTime::now()
                    .checked_add(*d)
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(i64::MAX, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
                self.emit(&wire::rate_limit(&self.session, resets))?;
            }
            SimStep::RepeatTool(r) => {
                for _ in 0..r.times {
                    let id = self.tool_start(&r.name, &r.input)?;
                    self.tool_finish(&id, "ok", false)?;
                }
            }
            SimStep::Ignore(names) => {
                for problem in os::ignore(names) {
                    self.stderr_line(&format!("ralph sim: ignore: {problem}"));
                }
            }
            SimStep::Grandchild(g) => return self.grandchild(g),
            SimStep::Pidfile(path) => {
                if let Err(e) = os::write_pidfile(&self.cwd.join(path), std::process::id()) {
                    self.stderr_line(&format!("ralph sim: pidfile: {e}"));
                    return Ok(Some(2));
                }
            }
            SimStep::Usage(u) => self.usage = u.clone(),
            SimStep::Done(text) => self.say(&tagged(text, "<promise>DONE</promise>"))?,
            SimStep::Goal(text) => self.say(&tagged(text, "<promise>COMPLETE</promise>"))?,
        }
        Ok(None)
    }

    /// A call of a `ralph mcp` tool, shown as a tool call unless it is silent.
    fn mcp(&mut self, m: &crate::config::SimMcp) -> io::Result<()> {
        let arguments = if m.arguments.is_null() { json!({}) } else { m.arguments.clone() };
        if m.silent {
            if let Err(e) = mcp::call(&m.tool, &arguments, m.kill) {
                self.stderr_line(&format!("ralph mcp failed: {e}"));
            }
            return Ok(());
        }
        let id = self.tool_start(&format!("mcp__ralph__{}", m.tool), &arguments)?;
        match mcp::call(&m.tool, &arguments, m.kill) {
            Ok((text, is_error)) => self.tool_finish(&id, &text, is_error),
            Err(e) => self.tool_finish(&id, &format!("ralph mcp failed: {e}"), true),
        }
    }

    fn write(&mut self, w: &crate::config::SimWrite) -> io::Result<()> {
        let path = self.cwd.join(&w.path);
        let shown = path.display().to_string();
        let input = json!({"file_path": shown, "content": w.content});
        let id = self.tool_start("Write", &input)?;
        match write_file(&path, &w.content) {
            Ok(()) => self.tool_finish(&id, &format!("File created successfully at: {shown}"), false),
            Err(e) => self.tool_finish(&id, &format!("Error writing {shown}: {e}"), true),
        }
    }

    fn grandchild(&mut self, g: &crate::config::SimGrandchild) -> io::Result<Option<i32>> {
        // A broken fixture (no `sleep`, unwritable pidfile) must fail loudly, not
        // look like a well-behaved agent: exit 2 without a result.
        let pid = match os::spawn_grandchild(&self.cwd, g.lives) {
            Ok(pid) => pid,
            Err(e) => {
                self.stderr_line(&format!("ralph sim: grandchild: cannot spawn sleep: {e}"));
                return Ok(Some(2));
            }
        };
        if let Err(e) = os::write_pidfile(&self.cwd.join(&g.pidfile), pid) {
            self.stderr_line(&format!("ralph sim: grandchild pidfile: {e}"));
            return Ok(Some(2));
        }
        let secs = format!("{:.3}", g.lives.as_secs_f64());
        let input = json!({"command": format!("sleep {secs}"), "run_in_background": true});
        let id = self.tool_start("Bash", &input)?;
        self.tool_finish(&id, &format!("Command running in background with ID: {pid}"), false)?;
        Ok(None)
    }
}

/// The tag on a line of its own after the text, as ralph's prompts ask for.
fn tagged(text: &str, tag: &str) -> String {
    let text = text.trim();
    if text.is_empty() { tag.to_owned() } else { format!("{text}\n\n{tag}") }
}

fn write_file(path: &Path, content: &str) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, content)
}

#[cfg(test)]
mod tests;

//! One attempt: spawn the agent, read its output as events, keep its clock, and end
//! it (with grace) when it stalls, overruns, or the user stops the run. The child's
//! exit and its output are awaited in one `select!`, never polled.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use std::io::{BufWriter, Write};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::{Instant, sleep_until};

use crate::agent::AgentEvent;
use crate::agent::launch::Prepared;
use crate::config::Timeouts;
use crate::process::{Escalation, Step, signal_group, spawn};
use crate::recovery::classify::{EndedBy, Exit};
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::checkpoint::Usage;
use crate::state::redact::redact;
use crate::supervise::note::LastTool;
use crate::supervise::{Intervention, Supervisor};

/// Structured events kept for the classifier.
const EVENTS_KEPT: usize = 64;
/// Bytes of text kept for the classifier and the final message of text agents.
const TAIL_BYTES: usize = 8 * 1024;

/// How the attempt ended.
#[derive(Debug)]
pub enum End {
    /// The agent process is gone (by itself, or ended by ralph's clock).
    Exited { exit: Exit, ended_by: EndedBy },
    /// The run is stopping (Ctrl+C, SIGTERM, SIGHUP); the agent was ended with grace.
    Stopped(StopCause),
    /// The user's second Ctrl+C: the group was killed, exit now.
    ForceExit,
    /// The agent could not be started.
    SpawnFailed(std::io::Error),
}

/// Everything the attempt left behind.
#[derive(Debug)]
pub struct Outcome {
    pub end: End,
    /// The last session id the agent reported.
    pub session: Option<String>,
    /// The agent's own final message.
    pub final_message: Option<String>,
    pub result_is_error: bool,
    /// The last structured (non-text) events.
    pub events: Vec<AgentEvent>,
    /// The end of stderr and of unparsed stdout, redacted.
    pub text_tail: String,
    pub usage: Usage,
    pub duration: Duration,
    /// For `done = "file:PATH"`: the artifact exists and changed (set by the caller).
    pub artifact_changed: bool,
    /// Why ralph ended the attempt, when it did.
    pub intervention: Option<Intervention>,
    /// The last tool call and whether its result came.
    pub last_tool: Option<LastTool>,
}

/// What the dispatcher wants to hear while the attempt runs.
pub trait Observer {
    /// The agent reported a (new) session id; worth a checkpoint.
    fn session(&mut self, id: &str);
    /// Any output arrived.
    fn event(&mut self, event: Option<&AgentEvent>);
    /// Messages from the control socket, while the agent runs or not (any more);
    /// true when one is a heartbeat of the agent.
    fn control(&mut self, inbox: Vec<crate::control::Inbound>, agent_running: bool) -> bool;
}

impl Outcome {
    /// An attempt that produced nothing (it could not start).
    pub fn empty() -> Self {
        Collected::new(false).finish(End::SpawnFailed(std::io::Error::other("not started")), Instant::now())
    }
}

/// Runs one attempt to its end.
pub async fn run(
    prepared: Prepared,
    timeouts: &Timeouts,
    signals: &mut Signals,
    observer: &mut dyn Observer,
    log_path: &Path,
) -> Outcome {
    let started = Instant::now();
    let mut state = Collected::new(prepared.text_output);
    let mut child = match spawn(&prepared.launch) {
        Ok(child) => child,
        Err(e) => return state.finish(End::SpawnFailed(e), started),
    };
    let (Some(pgid), Some(stdout), Some(stderr)) = (child.id(), child.stdout.take(), child.stderr.take()) else {
        let err = std::io::Error::other("the agent's pipes were not set up");
        return state.finish(End::SpawnFailed(err), started);
    };
    // Plain buffered writes: a page-cache write takes microseconds, while tokio's
    // file type would hop to a blocking thread for every line.
    let mut log = match std::fs::File::create(log_path) {
        Ok(f) => Some(BufWriter::new(f)),
        Err(e) => {
            tracing::warn!("cannot write the attempt log {}: {e}", log_path.display());
            None
        }
    };
    let mut parser = prepared.parser;
    let mut out = BufReader::new(stdout).lines();
    let mut err = BufReader::new(stderr).lines();
    let (mut out_open, mut err_open) = (true, true);
    let mut supervisor = if prepared.quiet_tools {
        // Its tools run unseen: silence is bounded by the tool limit, never by the
        // stall limit, so a long build is not taken for a stall.
        let mut limits = timeouts.clone();
        limits.stall = limits.stall.max(limits.tool);
        Supervisor::new(&limits, started)
    } else {
        Supervisor::new(timeouts, started)
    };
    let mut exit: Option<Exit> = None;
    let mut ended_by = EndedBy::Agent;
    let mut intervention: Option<Intervention> = None;
    let mut stopping: Option<StopCause> = None;
    let mut escalation: Option<(Escalation, Option<Instant>)> = None;
    // After the agent exits, its pipes may be held open by something it left behind;
    // the group is killed then, and the rest of the output gets this long to drain.
    let mut drain_deadline: Option<Instant> = None;

    loop {
        if exit.is_some() && !out_open && !err_open {
            break;
        }
        let (watch_at, watch_reason) = supervisor.deadline();
        let escalate_at = escalation.as_ref().and_then(|(_, at)| *at);
        tokio::select! {
            line = out.next_line(), if out_open => match line {
                Ok(Some(line)) => {
                    write_log(&mut log, &line, false);
                    let events = parser.parse_line(&line);
                    let mut found = None;
                    if events.is_empty() {
                        found = supervisor.on_event(None, Instant::now());
                        observer.event(None);
                    }
                    // Lines that are not the agent's structured events (a CLI's own
                    // error printout) are evidence for the classifier.
                    let unparsed = events.iter().all(|e| matches!(e, AgentEvent::Unknown { kind } if kind == "non-json"));
                    for event in events {
                        found = found.or(supervisor.on_event(Some(&event), Instant::now()));
                        observer.event(Some(&event));
                        if let Some(id) = state.absorb(event) {
                            observer.session(&id);
                        }
                    }
                    if prepared.text_output {
                        state.push_stdout(&line);
                    }
                    if prepared.text_output || unparsed {
                        state.push_text(&line);
                    }
                    if let Some(found) = found
                        && exit.is_none()
                        && escalation.is_none()
                        && stopping.is_none()
                    {
                        tracing::info!("ending the attempt: {} ({})", found.detector, found.evidence);
                        ended_by = found.ended_by;
                        intervention = Some(found);
                        escalation = Some(begin(Escalation::start_with(prepared.stop_signal, timeouts.grace), pgid));
                    }
                }
                _ => out_open = false,
            },
            line = err.next_line(), if err_open => match line {
                Ok(Some(line)) => {
                    write_log(&mut log, &line, true);
                    let _ = supervisor.on_event(None, Instant::now());
                    observer.event(None);
                    state.push_text(&line);
                }
                _ => err_open = false,
            },
            status = child.wait(), if exit.is_none() => {
                exit = Some(match status {
                    Ok(s) => exit_of(s),
                    Err(_) => Exit::Code(-1),
                });
                // Nothing the agent started may outlive its attempt.
                let _ = signal_group(pgid, Signal::SIGKILL);
                drain_deadline = Some(Instant::now() + Duration::from_secs(2));
            },
            _ = sleep_until(watch_at), if exit.is_none() && escalation.is_none() => {
                ended_by = watch_reason;
                let found = clock_intervention(watch_reason, timeouts);
                tracing::info!("ending the attempt: {} ({})", found.detector, found.evidence);
                intervention = Some(found);
                escalation = Some(begin(Escalation::start_with(prepared.stop_signal, timeouts.grace), pgid));
            },
            _ = sleep_until(escalate_at.unwrap_or_else(Instant::now)), if exit.is_none() && escalate_at.is_some() => {
                if let Some((esc, at)) = escalation.as_mut() {
                    let step = esc.grace_elapsed();
                    *at = send(step, pgid);
                }
            },
            _ = sleep_until(drain_deadline.unwrap_or_else(Instant::now)), if drain_deadline.is_some() => {
                out_open = false;
                err_open = false;
            },
            action = signals.next() => match action {
                // Once the agent has exited, its attempt is complete: the stop is
                // remembered by the signal state and honoured by the dispatcher after
                // it has recorded this attempt's result.
                InterruptAction::Stop(cause) if exit.is_none() => {
                    stopping = Some(cause);
                    if escalation.is_none() {
                        escalation = Some(begin(Escalation::start_with(prepared.stop_signal, timeouts.grace), pgid));
                    }
                }
                InterruptAction::Stop(_) => {}
                InterruptAction::ForceExit => {
                    let _ = signal_group(pgid, Signal::SIGKILL);
                    return state.finish(End::ForceExit, started);
                }
                InterruptAction::Ignore => {}
                InterruptAction::Control => {
                    if observer.control(signals.take_inbox(), exit.is_none()) {
                        let _ = supervisor.on_event(None, Instant::now());
                    }
                }
            },
        }
    }
    if let Some(mut log) = log {
        let _ = log.flush();
    }
    let exit = exit.unwrap_or(Exit::Code(-1));
    let end = match stopping {
        Some(cause) => End::Stopped(cause),
        None => End::Exited { exit, ended_by },
    };
    let mut outcome = state.finish(end, started);
    outcome.intervention = if stopping.is_some() { None } else { intervention };
    outcome.last_tool = supervisor.last_tool();
    outcome
}

/// Appends a line, keeping the last `TAIL_BYTES` or so (cut on a char boundary).
fn push_bounded(buf: &mut String, line: &str) {
    buf.push_str(line);
    buf.push('\n');
    if buf.len() > TAIL_BYTES * 2 {
        let mut cut = buf.len() - TAIL_BYTES;
        while !buf.is_char_boundary(cut) {
            cut += 1;
        }
        buf.drain(..cut);
    }
}

/// The intervention of ralph's clock.
fn clock_intervention(reason: EndedBy, timeouts: &Timeouts) -> Intervention {
    let (detector, evidence) = match reason {
        EndedBy::ToolTimeout => ("tool_timeout", format!("a tool call ran longer than {}", fmt(timeouts.tool))),
        EndedBy::AttemptTimeout => {
            ("attempt_timeout", format!("the attempt ran longer than {}", fmt(timeouts.attempt)))
        }
        _ => ("stall", format!("no output for {} and no tool running", fmt(timeouts.stall))),
    };
    Intervention { ended_by: reason, detector, evidence }
}

fn fmt(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn begin((esc, step): (Escalation, Step), pgid: u32) -> (Escalation, Option<Instant>) {
    (esc, send(step, pgid))
}

/// Sends the step's signal; returns when to escalate next.
fn send(step: Step, pgid: u32) -> Option<Instant> {
    let Step::Send { signal, wait } = step;
    tracing::info!("sending {signal} to the agent's process group {pgid}");
    if let Err(e) = signal_group(pgid, signal) {
        tracing::warn!("cannot signal process group {pgid}: {e}");
    }
    wait.map(|w| Instant::now() + w)
}

fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(sig)) => Exit::Signal(sig),
        (None, None) => Exit::Code(-1),
    }
}

fn write_log(log: &mut Option<BufWriter<std::fs::File>>, line: &str, stderr: bool) {
    let Some(w) = log.as_mut() else { return };
    let prefix = if stderr { "[stderr] " } else { "" };
    if writeln!(w, "{prefix}{}", redact(line)).is_err() {
        *log = None;
    }
}

/// What the attempt gathered from the agent's output.
struct Collected {
    text_output: bool,
    session: Option<String>,
    last_text: Option<String>,
    result: Option<(String, bool)>,
    events: VecDeque<AgentEvent>,
    /// stderr and unparsed stdout, for the classifier.
    tail: String,
    /// The end of stdout alone: a text agent's final message.
    stdout_tail: String,
    usage: Usage,
}

impl Collected {
    fn new(text_output: bool) -> Self {
        Self {
            text_output,
            session: None,
            last_text: None,
            result: None,
            events: VecDeque::new(),
            tail: String::new(),
            stdout_tail: String::new(),
            usage: Usage::default(),
        }
    }

    /// Takes in one event; returns a session id when it is new.
    fn absorb(&mut self, event: AgentEvent) -> Option<String> {
        let mut new_session = None;
        match &event {
            AgentEvent::Session { id } if self.session.as_deref() != Some(id) => {
                self.session = Some(id.clone());
                new_session = Some(id.clone());
            }
            AgentEvent::Text { text } => {
                if !self.text_output {
                    self.last_text = Some(text.clone());
                }
                return None;
            }
            AgentEvent::Result { text, is_error, .. } => self.result = Some((text.clone(), *is_error)),
            AgentEvent::Usage { input_tokens, output_tokens, cost_usd } => {
                self.usage.input_tokens += input_tokens;
                self.usage.output_tokens += output_tokens;
                self.usage.cost_usd += cost_usd.unwrap_or(0.0);
            }
            AgentEvent::Error { message } => self.push_text(message),
            _ => {}
        }
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(event);
        new_session
    }

    fn push_text(&mut self, line: &str) {
        push_bounded(&mut self.tail, line);
    }

    fn push_stdout(&mut self, line: &str) {
        push_bounded(&mut self.stdout_tail, line);
    }

    fn finish(self, end: End, started: Instant) -> Outcome {
        let (final_message, result_is_error) = match self.result {
            Some((text, is_error)) if !text.is_empty() || self.last_text.is_none() => (Some(text), is_error),
            Some((_, is_error)) => (self.last_text, is_error),
            None if self.text_output => (Some(self.stdout_tail.clone()), false),
            None => (self.last_text, false),
        };
        Outcome {
            end,
            session: self.session,
            final_message,
            result_is_error,
            events: self.events.into(),
            text_tail: redact(&self.tail),
            usage: self.usage,
            duration: started.elapsed(),
            artifact_changed: false,
            intervention: None,
            last_tool: None,
        }
    }
}

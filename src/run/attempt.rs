//! One attempt: spawn the agent, read its output as events, keep its clock, and end
//! it (with grace) when it stalls, overruns, or the user stops the run. The child's
//! exit and its output are awaited in one `select!`, never polled.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::time::{Instant, sleep_until};

use crate::agent::AgentEvent;
use crate::agent::launch::Prepared;
use crate::config::Timeouts;
use crate::process::lines::{Item, LineReader};
use crate::process::{Escalation, Step, agent_group, signal_group, spawn};
use crate::recovery::classify::{EndedBy, Exit};
use crate::report::lines::EndWhy;
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::checkpoint::Usage;
use crate::state::redact::redact;
use crate::supervise::note::LastTool;
use crate::supervise::{Intervention, Supervisor};

use super::attempt_log::AttemptLog;

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
    SpawnFailed { error: std::io::Error, program: String },
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
    /// The end of stderr alone, redacted: where an agent words its own error.
    pub stderr_tail: String,
    pub usage: Usage,
    pub duration: Duration,
    /// For `done = "file:PATH"`: the artifact exists and changed (set by the caller).
    pub artifact_changed: bool,
    /// Why ralph ended the attempt, when it did.
    pub intervention: Option<Intervention>,
    /// The last tool call and whether its result came.
    pub last_tool: Option<LastTool>,
    /// The last signal ralph sent to end the agent, if it had to.
    pub last_signal: Option<Signal>,
    /// The log, when a full disk still holds part of it back (`run::disk_wait`).
    pub unsaved_log: Option<AttemptLog>,
}

/// What the dispatcher wants to hear while the attempt runs.
pub trait Observer {
    /// The agent reported a (new) session id; worth a checkpoint.
    fn session(&mut self, id: &str);
    /// Any output arrived.
    fn event(&mut self, event: Option<&AgentEvent>);
    /// A stop was asked for: record the intent now, before the agent is ended, so a
    /// second Ctrl+C or a crash during the escalation cannot lose it.
    fn stopping(&mut self, cause: StopCause);
    /// A tool call started or finished: what a resume after a crash must check.
    fn tool(&mut self, tool: &LastTool);
    /// ralph sent `sent` to the agent's group to end it, and will send `next` at
    /// `next_at` if it is still there.
    fn escalating(&mut self, why: EndWhy, sent: Signal, next: Option<(Signal, Instant)>);
    /// Messages from the control socket, while the agent runs or not (any more);
    /// true when one is a heartbeat of the agent.
    fn control(&mut self, inbox: Vec<crate::control::Inbound>, agent_running: bool) -> bool;
    /// The attempt log found the disk full, or space back.
    fn log_disk(&mut self, event: crate::events::RunEvent);
}

impl Outcome {
    /// An attempt that produced nothing (it could not start).
    pub fn empty() -> Self {
        let end = End::SpawnFailed { error: std::io::Error::other("not started"), program: String::new() };
        Collected::new(false).finish(end, Instant::now())
    }
}

/// Runs one attempt to its end.
pub async fn run(
    prepared: Prepared,
    timeouts: &Timeouts,
    cost_left: Option<f64>,
    signals: &mut Signals,
    observer: &mut dyn Observer,
    log_path: &Path,
    max_log: u64,
) -> Outcome {
    let started = Instant::now();
    let mut state = Collected::new(prepared.text_output);
    let program = prepared.launch.argv.first().cloned().unwrap_or_default();
    let mut child = match spawn(&prepared.launch) {
        Ok(child) => child,
        Err(error) => return state.finish(End::SpawnFailed { error, program }, started),
    };
    let (Some(pgid), Some(stdout), Some(stderr)) = (child.id(), child.stdout.take(), child.stderr.take()) else {
        let error = std::io::Error::other("the agent's pipes were not set up");
        return state.finish(End::SpawnFailed { error, program }, started);
    };
    // The signal paths that bypass this loop (second Ctrl+C, Ctrl+Z) need the group.
    agent_group::set(pgid);
    let _group = GroupGuard;
    if let (Some(text), Some(mut pipe)) = (prepared.launch.stdin.clone(), child.stdin.take()) {
        // Written while the output is read (a long prompt fills the pipe before the
        // agent reads it), then closed: the agent sees the end of its input. An agent
        // that exits without reading all of it ends the write with EPIPE, harmlessly.
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            if let Err(e) = pipe.write_all(text.as_bytes()).await {
                tracing::debug!("writing the prompt to the agent's stdin: {e}");
            }
            drop(pipe);
        });
    }
    // Plain buffered writes: a page-cache write takes microseconds, while tokio's
    // file type would hop to a blocking thread for every line.
    let mut log = AttemptLog::create(log_path, max_log);
    let mut parser = prepared.parser;
    let attempt_id = prepared.attempt_id.clone();
    let agent_pid = i32::try_from(pgid).unwrap_or(i32::MAX);
    // Bytes, not `String` lines: one invalid UTF-8 byte must not end the reading.
    let mut out = LineReader::new(stdout);
    let mut err = LineReader::new(stderr);
    // Whether a long line of each stream has started in the log.
    let (mut out_long, mut err_long) = (false, false);
    let mut pending_out: Option<String> = None;
    let (mut out_open, mut err_open) = (true, true);
    let mut supervisor = if prepared.quiet_tools {
        // Its tools run unseen: silence is bounded by the tool limit, never by the
        // stall limit, so a long build is not taken for a stall.
        let mut limits = timeouts.clone();
        limits.stall = limits.stall.max(limits.tool);
        Supervisor::new(&limits, started)
    } else {
        Supervisor::new(timeouts, started)
    }
    .with_cost_left(cost_left.filter(|_| prepared.running_cost));
    let mut exit: Option<Exit> = None;
    let mut ended_by = EndedBy::Agent;
    let mut intervention: Option<Intervention> = None;
    let mut stopping: Option<StopCause> = None;
    let mut escalation: Option<(Escalation, Option<Instant>)> = None;
    // Why the escalation under way was begun, for the display.
    let mut esc_why = EndWhy::User;
    // After the agent exits, its pipes may be held open by something it left behind;
    // the group is killed then, and the rest of the output gets this long to drain.
    let mut drain_deadline: Option<Instant> = None;
    let mut suspended = signals.suspended();

    loop {
        if exit.is_some() && !out_open && !err_open {
            break;
        }
        // Time stopped by Ctrl+Z is neither silence nor attempt time.
        let paused = signals.suspended().saturating_sub(suspended);
        if !paused.is_zero() {
            suspended = signals.suspended();
            supervisor.pause(paused);
            if let Some((_, Some(at))) = escalation.as_mut() {
                *at += paused;
            }
            if let Some(at) = drain_deadline.as_mut() {
                *at += paused;
            }
        }
        let (watch_at, watch_reason) = supervisor.deadline();
        let escalate_at = escalation.as_ref().and_then(|(_, at)| *at);
        let flush_at = log.flush_at();
        tokio::select! {
            item = out.next(), if out_open => match item {
                Some(Item::LongPart(bytes)) => {
                    log.part(&bytes, false, !out_long);
                    out_long = true;
                    // A long line still arriving is output, not a stall.
                    let _ = supervisor.on_event(None, Instant::now());
                }
                Some(Item::Line(bytes)) => {
                    log.line(&bytes, false);
                    pending_out = Some(String::from_utf8_lossy(&bytes).into_owned());
                }
                Some(Item::LongEnd(summary)) => {
                    log.end_line();
                    out_long = false;
                    pending_out = Some(summary);
                }
                None => out_open = false,
            },
            item = err.next(), if err_open => match item {
                Some(Item::LongPart(bytes)) => {
                    log.part(&bytes, true, !err_long);
                    err_long = true;
                    // A long line still arriving is output, not a stall.
                    let _ = supervisor.on_event(None, Instant::now());
                }
                Some(Item::Line(bytes)) => {
                    log.line(&bytes, true);
                    on_stderr(&mut supervisor, observer, &mut state, &String::from_utf8_lossy(&bytes));
                }
                Some(Item::LongEnd(summary)) => {
                    log.end_line();
                    err_long = false;
                    on_stderr(&mut supervisor, observer, &mut state, &summary);
                }
                None => err_open = false,
            },
            status = child.wait(), if exit.is_none() => {
                exit = Some(match status {
                    Ok(s) => exit_of(s),
                    Err(_) => Exit::Code(-1),
                });
                // Nothing the agent started may outlive its attempt.
                let _ = signal_group(pgid, Signal::SIGKILL);
                agent_group::clear();
                drain_deadline = Some(Instant::now() + Duration::from_secs(2));
            },
            _ = sleep_until(watch_at), if exit.is_none() && escalation.is_none() => {
                ended_by = watch_reason;
                let found = clock_intervention(watch_reason, timeouts);
                tracing::info!("ending the attempt: {} ({})", found.detector, found.evidence);
                esc_why = EndWhy::Intervention(found.detector.to_string());
                intervention = Some(found);
                escalation = Some(begin(Escalation::start_with(prepared.stop_signal, timeouts.grace), pgid));
                tell(observer, &esc_why, escalation.as_ref());
            },
            _ = sleep_until(escalate_at.unwrap_or_else(Instant::now)), if exit.is_none() && escalate_at.is_some() => {
                let mut stronger = false;
                if let Some((esc, at)) = escalation.as_mut() {
                    let before = esc.last_signal();
                    let step = esc.grace_elapsed();
                    *at = send(step, pgid);
                    stronger = esc.last_signal() != before;
                }
                // A repeated SIGKILL is no news for the person watching.
                if stronger {
                    tell(observer, &esc_why, escalation.as_ref());
                }
            },
            // What was shown is on disk within moments: a kill -9 loses little.
            _ = sleep_until(flush_at.unwrap_or_else(Instant::now)), if flush_at.is_some() => log.flush(),
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
                    observer.stopping(cause);
                    esc_why = match cause {
                        StopCause::User => EndWhy::User,
                        other => EndWhy::Signal(other.signal_name()),
                    };
                    if escalation.is_none() {
                        escalation = Some(begin(Escalation::start_with(prepared.stop_signal, timeouts.grace), pgid));
                    }
                    tell(observer, &esc_why, escalation.as_ref());
                }
                InterruptAction::Stop(_) => {}
                InterruptAction::ForceExit => {
                    let _ = signal_group(pgid, Signal::SIGKILL);
                    end_escaped(&attempt_id, agent_pid);
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
        for event in log.take_news() {
            observer.log_disk(event);
        }
        // A stdout line is handled outside the `select!`, whichever way it came.
        if let Some(line) = pending_out.take() {
            let events = parser.parse_line(&line);
            for event in &events {
                match event {
                    // The parser's anomalies: what a person debugging a night wants
                    // to see first when an agent "says nothing".
                    AgentEvent::Unknown { kind } if kind == "non-json" => {
                        tracing::debug!(line = %redact(&line), "agent output that is not its stream format");
                    }
                    AgentEvent::Unknown { kind } => tracing::debug!(kind, "agent event of an unknown kind"),
                    other => tracing::trace!(event = ?other, "agent event"),
                }
            }
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
                if matches!(event, AgentEvent::ToolStarted { .. } | AgentEvent::ToolFinished { .. })
                    && let Some(tool) = supervisor.last_tool()
                {
                    observer.tool(&tool);
                }
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
                esc_why = EndWhy::Intervention(found.detector.to_string());
                intervention = Some(found);
                escalation = Some(begin(Escalation::start_with(prepared.stop_signal, timeouts.grace), pgid));
                tell(observer, &esc_why, escalation.as_ref());
            }
        }
    }
    log.flush();
    for event in log.take_news() {
        observer.log_disk(event);
    }
    end_escaped(&attempt_id, agent_pid);
    let exit = exit.unwrap_or(Exit::Code(-1));
    let end = match stopping {
        Some(cause) => End::Stopped(cause),
        None => End::Exited { exit, ended_by },
    };
    let mut outcome = state.finish(end, started);
    outcome.intervention = if stopping.is_some() { None } else { intervention };
    outcome.last_tool = supervisor.last_tool();
    outcome.last_signal = escalation.map(|(esc, _)| esc.last_signal());
    outcome.unsaved_log = (!log.on_disk()).then_some(log);
    outcome
}

/// Forgets the agent's group however the attempt ends.
struct GroupGuard;

impl Drop for GroupGuard {
    fn drop(&mut self) {
        agent_group::clear();
    }
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

/// Tells the observer where the escalation stands: the signal sent, and the next one
/// with its time (none after SIGKILL, which is only repeated).
fn tell(observer: &mut dyn Observer, why: &EndWhy, escalation: Option<&(Escalation, Option<Instant>)>) {
    let Some((esc, at)) = escalation else { return };
    let sent = esc.last_signal();
    let next = match sent {
        Signal::SIGINT => Some(Signal::SIGTERM),
        Signal::SIGKILL => None,
        _ => Some(Signal::SIGKILL),
    };
    observer.escalating(why.clone(), sent, next.zip(*at));
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

/// Nothing the agent started outlives its attempt, not even what left its process
/// group (see `process::escaped`).
fn end_escaped(attempt_id: &str, agent_pid: i32) {
    let killed = crate::process::escaped::end_attempt(attempt_id, &[agent_pid]);
    if !killed.is_empty() {
        tracing::info!("ended {} process(es) that had left the agent's process group: {killed:?}", killed.len());
    }
}

/// A line of stderr: evidence for the classifier, and a sign of life.
fn on_stderr(supervisor: &mut Supervisor, observer: &mut dyn Observer, state: &mut Collected, line: &str) {
    let _ = supervisor.on_event(None, Instant::now());
    observer.event(None);
    state.push_text(line);
    state.push_stderr(line);
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
    /// The end of stderr alone.
    stderr_tail: String,
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
            stderr_tail: String::new(),
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

    fn push_stderr(&mut self, line: &str) {
        push_bounded(&mut self.stderr_tail, line);
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
            stderr_tail: redact(&self.stderr_tail),
            usage: self.usage,
            duration: started.elapsed(),
            artifact_changed: false,
            intervention: None,
            last_tool: None,
            last_signal: None,
            unsaved_log: None,
        }
    }
}

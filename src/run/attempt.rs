//! One attempt: spawn the agent, read its output as events, keep its clock, and end
//! it (with grace) when it stalls, overruns, or the user stops the run. The child's
//! exit and its output are awaited in one `select!`, never polled; each of its arms
//! is one named step of `Running`.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::time::{Instant, sleep_until};

use crate::agent::AgentEvent;
use crate::agent::launch::Prepared;
use crate::config::Timeouts;
use crate::process::lines::{Item, LineReader, text};
use crate::process::{Escalation, Step, agent_group, signal_group, spawn};
use crate::recovery::classify::{EndedBy, Exit};
use crate::report::lines::EndWhy;
use crate::secrets::redact;
use crate::signal::{InterruptAction, Signals, StopCause};
use crate::state::checkpoint::Usage;
use crate::supervise::note::LastTool;
use crate::supervise::{Intervention, Supervisor, final_message};

use super::attempt_log::AttemptLog;

/// Structured events kept for the classifier.
const EVENTS_KEPT: usize = 64;
/// Bytes of text kept for the classifier and the final message of text agents.
const TAIL_BYTES: usize = 8 * 1024;

/// How the attempt ended.
#[derive(Debug)]
pub(crate) enum End {
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
pub(crate) struct Outcome {
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
pub(crate) trait Observer {
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
    /// The attempt has run [`CATCH_UP`] since its start or its last light save:
    /// bring `checkpoint.json` up to the journal's newest snapshot.
    fn catch_up(&mut self);
}

/// Events of one line whose buffer is kept for the next: a line rarely holds more
/// than a few, and one with thousands should not keep their memory.
const EVENTS_BUFFER: usize = 64;

/// How long `checkpoint.json` may lag behind a light save while the agent runs: an
/// agent call that ends sooner costs no file of its own (the journal has the save),
/// and a person or tool reading the file sees the attempt within this long.
pub(crate) const CATCH_UP: Duration = Duration::from_millis(250);

impl Outcome {
    /// An attempt that produced nothing (it could not start).
    pub(crate) fn empty() -> Self {
        Self::not_started(std::io::Error::other("not started"), String::new())
    }

    /// An attempt whose agent could not be started.
    pub(crate) fn not_started(error: std::io::Error, program: String) -> Self {
        Collected::new(false).finish(End::SpawnFailed { error, program }, Instant::now())
    }
}

/// After the agent exits, its pipes may be held open by something it left behind:
/// the group is killed then, and the rest of the output gets this long to drain.
const DRAIN: Duration = Duration::from_secs(2);

/// Runs one attempt to its end under `limits` (see `supervise::watch::attempt_limits`).
pub(crate) async fn run(
    prepared: Prepared,
    limits: &Timeouts,
    cost_left: Option<f64>,
    signals: &mut Signals,
    observer: &mut dyn Observer,
    log_path: &Path,
    max_log: u64,
) -> Outcome {
    let started = Instant::now();
    let program = prepared.launch.argv.first().cloned().unwrap_or_default();
    let (mut child, pipes) = match spawn(&prepared.launch) {
        Ok(spawned) => spawned,
        Err(error) => return Collected::new(prepared.text_output).finish(End::SpawnFailed { error, program }, started),
    };
    let pgid = child.pid();
    // The signal paths that bypass this loop (second Ctrl+C, Ctrl+Z) need the group.
    agent_group::set(pgid);
    let _group = GroupGuard;
    write_prompt(prepared.launch.stdin.clone(), pipes.stdin);
    // Bytes, not `String` lines: one invalid UTF-8 byte must not end the reading.
    let (mut out, mut err) = (LineReader::new(pipes.stdout), LineReader::new(pipes.stderr));
    // Plain buffered writes: a page-cache write takes microseconds, while tokio's
    // file type would hop to a blocking thread for every line.
    let log = AttemptLog::create(log_path, max_log);
    let mut a = Running::new(prepared, limits, cost_left, observer, log, pgid, started);
    a.suspended = signals.suspended();
    // Until the agent is gone and its output read.
    while a.exit.is_none() || a.out.open || a.err.open {
        a.catch_up_suspension(signals.suspended());
        let (watch_at, watch_reason) = a.supervisor.deadline();
        let escalate_at = a.escalation.as_ref().and_then(|e| e.next_at);
        let (flush_at, drain_at, running) = (a.log.flush_at(), a.drain_at, a.exit.is_none());
        tokio::select! {
            () = out.fill(), if a.out.open => {}
            () = err.fill(), if a.err.open => {}
            status = child.wait(), if running => a.exited(status),
            _ = sleep_until(watch_at), if running && a.escalation.is_none() => {
                a.intervene(clock_intervention(watch_reason, limits));
            }
            _ = sleep_until(escalate_at.unwrap_or_else(Instant::now)), if running && escalate_at.is_some() => {
                a.grace_elapsed();
            }
            // What was shown is on disk within moments: a kill -9 loses little.
            _ = sleep_until(flush_at.unwrap_or_else(Instant::now)), if flush_at.is_some() => a.log.flush(),
            _ = sleep_until(a.catch_up_at.unwrap_or_else(Instant::now)), if running && a.catch_up_at.is_some() => {
                a.catch_up_at = None;
                a.observer.catch_up();
            }
            _ = sleep_until(drain_at.unwrap_or_else(Instant::now)), if drain_at.is_some() => {
                (a.out.open, a.err.open) = (false, false);
            }
            action = signals.next() => if a.signal(action, signals) {
                return a.force_exit();
            },
        }
        // Everything read is handled before the next wait: a flood costs one wakeup
        // and one clock reading per read, not per line.
        a.now = Instant::now();
        while a.out.open
            && let Some(item) = out.pop()
        {
            a.item(item, false);
        }
        while a.err.open
            && let Some(item) = err.pop()
        {
            a.item(item, true);
        }
        a.out.open &= !out.done();
        a.err.open &= !err.done();
        a.log_news();
    }
    a.finish()
}

/// Writes the prompt to the agent's stdin while its output is read (a long prompt
/// fills the pipe before the agent reads it), then closes it: the agent sees the end
/// of its input. An agent that exits without reading all of it ends the write with
/// EPIPE, harmlessly.
fn write_prompt(text: Option<String>, pipe: Option<tokio::process::ChildStdin>) {
    let (Some(text), Some(mut pipe)) = (text, pipe) else { return };
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        if let Err(e) = pipe.write_all(text.as_bytes()).await {
            tracing::debug!("writing the prompt to the agent's stdin: {e}");
        }
        drop(pipe);
    });
}

/// One of the agent's output streams.
struct Stream {
    open: bool,
    /// A long line has started in the log.
    long: bool,
}

/// ralph is ending the agent with grace.
struct Escalating {
    esc: Escalation,
    /// When the next, stronger signal is due.
    next_at: Option<Instant>,
    /// Why, for the display.
    why: EndWhy,
}

/// The attempt while its agent runs: each arm of the `select!` is one step here.
struct Running<'a> {
    prepared: Prepared,
    limits: &'a Timeouts,
    observer: &'a mut dyn Observer,
    pgid: u32,
    started: Instant,
    /// When the output being handled was read.
    now: Instant,
    log: AttemptLog,
    collected: Collected,
    supervisor: Supervisor,
    out: Stream,
    err: Stream,
    exit: Option<Exit>,
    ended_by: EndedBy,
    intervention: Option<Intervention>,
    stopping: Option<StopCause>,
    escalation: Option<Escalating>,
    /// Set when the agent exits (see [`DRAIN`]).
    drain_at: Option<Instant>,
    /// Time stopped by Ctrl+Z so far, as last seen.
    suspended: Duration,
    /// When to call [`Observer::catch_up`], after a light save.
    catch_up_at: Option<Instant>,
    /// A stdout line's events, the buffer kept from line to line (up to
    /// [`EVENTS_BUFFER`] of them).
    events: Vec<AgentEvent>,
}

impl<'a> Running<'a> {
    fn new(
        prepared: Prepared,
        limits: &'a Timeouts,
        cost_left: Option<f64>,
        observer: &'a mut dyn Observer,
        log: AttemptLog,
        pgid: u32,
        started: Instant,
    ) -> Self {
        Self {
            limits,
            observer,
            pgid,
            started,
            now: started,
            log,
            collected: Collected::new(prepared.text_output),
            supervisor: Supervisor::new(limits, started).with_cost_left(cost_left.filter(|_| prepared.running_cost)),
            prepared,
            out: Stream { open: true, long: false },
            err: Stream { open: true, long: false },
            exit: None,
            ended_by: EndedBy::Agent,
            intervention: None,
            stopping: None,
            escalation: None,
            drain_at: None,
            suspended: Duration::ZERO,
            catch_up_at: Some(started + CATCH_UP),
            events: Vec::new(),
        }
    }

    /// Time stopped by Ctrl+Z is neither silence nor attempt time.
    fn catch_up_suspension(&mut self, suspended: Duration) {
        let paused = suspended.saturating_sub(self.suspended);
        if paused.is_zero() {
            return;
        }
        self.suspended = suspended;
        self.supervisor.pause(paused);
        if let Some(at) = self.escalation.as_mut().and_then(|e| e.next_at.as_mut()) {
            *at += paused;
        }
        if let Some(at) = self.drain_at.as_mut() {
            *at += paused;
        }
    }

    /// An item of stdout or stderr: logged, then handled as a line (the parser reads
    /// it as received, the tails keep it as the log shows it: redacted with what the
    /// lines before it left, a key's body or a secret cut by a line break).
    fn item(&mut self, item: Item<'_>, stderr: bool) {
        let (line, shown) = match item {
            // Part of a long line: logged as it comes; a long line still arriving is
            // output, not a stall.
            Item::LongPart(bytes) => {
                let stream = if stderr { &mut self.err } else { &mut self.out };
                self.log.part(bytes, stderr, !stream.long);
                stream.long = true;
                let _ = self.supervisor.on_event(None, self.now);
                return;
            }
            Item::Line(bytes) => {
                let shown = match self.log.line(bytes, stderr) {
                    std::borrow::Cow::Borrowed(_) => None,
                    std::borrow::Cow::Owned(redacted) => Some(String::from_utf8_lossy(&redacted).into_owned()),
                };
                (text(bytes), shown)
            }
            Item::LongEnd(summary) => {
                self.log.end_line();
                if stderr { &mut self.err } else { &mut self.out }.long = false;
                (summary.into(), None)
            }
        };
        let shown = shown.as_deref().unwrap_or(&line);
        if !stderr {
            return self.stdout_line(&line, shown);
        }
        // A line of stderr: evidence for the classifier, and a sign of life.
        let _ = self.supervisor.on_event(None, self.now);
        self.observer.event(None);
        push_bounded(&mut self.collected.tail, shown);
        push_bounded(&mut self.collected.stderr_tail, shown);
    }

    /// A stdout line: the agent's events, for the supervisor, the observer and the
    /// outcome; `shown` is the line as the log has it.
    fn stdout_line(&mut self, line: &str, shown: &str) {
        let mut events = std::mem::take(&mut self.events);
        self.prepared.parser.parse_into(line, &mut events);
        trace_events(line, &events);
        let mut found = None;
        if events.is_empty() {
            found = self.supervisor.on_event(None, self.now);
            self.observer.event(None);
        }
        // Lines that are not the agent's structured events (a CLI's own error
        // printout) are evidence for the classifier.
        let unparsed = events.iter().all(|e| matches!(e, AgentEvent::Unknown { kind } if kind == "non-json"));
        for event in events.drain(..) {
            found = found.or(self.supervisor.on_event(Some(&event), self.now));
            self.observer.event(Some(&event));
            if matches!(event, AgentEvent::ToolStarted { .. } | AgentEvent::ToolFinished { .. })
                && let Some(tool) = self.supervisor.last_tool()
            {
                self.observer.tool(&tool);
            }
            if let Some(id) = self.collected.absorb(event) {
                self.observer.session(&id);
                self.catch_up_at.get_or_insert(self.now + CATCH_UP);
            }
        }
        // Kept for the next line, unless one huge line grew it (its memory goes back).
        if events.capacity() <= EVENTS_BUFFER {
            self.events = events;
        }
        if self.collected.text_output {
            push_bounded(&mut self.collected.stdout_tail, shown);
        }
        if self.collected.text_output || unparsed {
            push_bounded(&mut self.collected.tail, shown);
        }
        if let Some(found) = found
            && self.exit.is_none()
            && self.escalation.is_none()
            && self.stopping.is_none()
        {
            self.intervene(found);
        }
    }

    fn exited(&mut self, status: std::io::Result<std::process::ExitStatus>) {
        self.exit = Some(status.map_or(Exit::Code(-1), exit_of));
        // Nothing the agent started may outlive its attempt.
        let _ = signal_group(self.pgid, Signal::SIGKILL);
        agent_group::clear();
        self.drain_at = Some(Instant::now() + DRAIN);
    }

    /// ralph ends the attempt: a detector or its clock found why.
    fn intervene(&mut self, found: Intervention) {
        tracing::info!("ending the attempt: {} ({})", found.detector, found.evidence);
        self.ended_by = found.ended_by;
        let why = EndWhy::Intervention(found.detector.to_string());
        self.intervention = Some(found);
        self.escalate(why);
    }

    /// The one way an escalation starts: the agent's stop signal, then stronger ones
    /// after each grace period. One under way only changes its reason.
    fn escalate(&mut self, why: EndWhy) {
        match &mut self.escalation {
            Some(under_way) => under_way.why = why,
            None => {
                let (esc, step) = Escalation::start_with(self.prepared.stop_signal, self.limits.grace);
                let next_at = send(step, self.pgid);
                self.escalation = Some(Escalating { esc, next_at, why });
            }
        }
        self.tell();
    }

    fn grace_elapsed(&mut self) {
        let Some(e) = self.escalation.as_mut() else { return };
        let before = e.esc.last_signal();
        let step = e.esc.grace_elapsed();
        e.next_at = send(step, self.pgid);
        // A repeated SIGKILL is no news for the person watching.
        if e.esc.last_signal() != before {
            self.tell();
        }
    }

    /// Tells the observer where the escalation stands: the signal sent, and the next
    /// one with its time (none after SIGKILL, which is only repeated).
    fn tell(&mut self) {
        let Some(e) = &self.escalation else { return };
        let sent = e.esc.last_signal();
        let next = match sent {
            Signal::SIGINT => Some(Signal::SIGTERM),
            Signal::SIGKILL => None,
            _ => Some(Signal::SIGKILL),
        };
        self.observer.escalating(e.why.clone(), sent, next.zip(e.next_at));
    }

    /// A signal or a control message; true on the user's second Ctrl+C.
    fn signal(&mut self, action: InterruptAction, signals: &mut Signals) -> bool {
        match action {
            // Once the agent has exited, its attempt is complete: the stop is
            // remembered by the signal state and honoured by the dispatcher after
            // it has recorded this attempt's result.
            InterruptAction::Stop(cause) if self.exit.is_none() => {
                self.stopping = Some(cause);
                self.observer.stopping(cause);
                self.escalate(match cause {
                    StopCause::User => EndWhy::User,
                    other => EndWhy::Signal(other.signal_name()),
                });
            }
            InterruptAction::Stop(_) | InterruptAction::Ignore => {}
            InterruptAction::ForceExit => return true,
            InterruptAction::Control => {
                if self.observer.control(signals.take_inbox(), self.exit.is_none()) {
                    let _ = self.supervisor.on_event(None, Instant::now());
                }
            }
        }
        false
    }

    /// The user's second Ctrl+C: kill the group, exit now.
    fn force_exit(self) -> Outcome {
        let _ = signal_group(self.pgid, Signal::SIGKILL);
        end_escaped(&self.prepared.attempt_id, self.started, self.pgid);
        self.collected.finish(End::ForceExit, self.started)
    }

    /// The log's disk-full and space-back news, for the dispatcher.
    fn log_news(&mut self) {
        for event in self.log.take_news() {
            self.observer.log_disk(event);
        }
    }

    fn finish(mut self) -> Outcome {
        self.log.flush();
        self.log_news();
        end_escaped(&self.prepared.attempt_id, self.started, self.pgid);
        let end = match self.stopping {
            Some(cause) => End::Stopped(cause),
            None => End::Exited { exit: self.exit.unwrap_or(Exit::Code(-1)), ended_by: self.ended_by },
        };
        let mut outcome = self.collected.finish(end, self.started);
        outcome.intervention = if self.stopping.is_some() { None } else { self.intervention };
        outcome.last_tool = self.supervisor.last_tool();
        outcome.last_signal = self.escalation.map(|e| e.esc.last_signal());
        outcome.unsaved_log = (!self.log.on_disk()).then_some(self.log);
        outcome
    }
}

/// The parser's anomalies: what a person debugging a night wants to see first when
/// an agent "says nothing".
fn trace_events(line: &str, events: &[AgentEvent]) {
    for event in events {
        match event {
            AgentEvent::Unknown { kind } if kind == "non-json" => {
                tracing::debug!(line = %redact(line), "agent output that is not its stream format");
            }
            AgentEvent::Unknown { kind } => tracing::debug!(kind, "agent event of an unknown kind"),
            other => tracing::trace!(event = ?other, "agent event"),
        }
    }
}

/// Forgets the agent's group however the attempt ends.
struct GroupGuard;

impl Drop for GroupGuard {
    fn drop(&mut self) {
        agent_group::clear();
    }
}

/// Appends a line, keeping the last `TAIL_BYTES` or so, cut where a line starts (a
/// cut inside a line could part a secret from its name, or a key's body from its
/// `BEGIN` line, before the tail is redacted) or else on a char boundary.
fn push_bounded(buf: &mut String, line: &str) {
    buf.push_str(line);
    buf.push('\n');
    if buf.len() > TAIL_BYTES * 2 {
        let mut cut = buf.len() - TAIL_BYTES;
        while !buf.is_char_boundary(cut) {
            cut += 1;
        }
        if let Some(next) = buf[cut..buf.len() - 1].find('\n') {
            cut += next + 1;
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

/// Sends the step's signal; returns when to escalate next.
fn send(step: Step, pgid: u32) -> Option<Instant> {
    let Step::Send { signal, wait } = step;
    tracing::info!("sending {signal} to the agent's process group {pgid}");
    signal_group(pgid, signal).unwrap_or_else(|e| tracing::warn!("cannot signal process group {pgid}: {e}"));
    wait.map(|w| Instant::now() + w)
}

fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    status.code().map(Exit::Code).or(status.signal().map(Exit::Signal)).unwrap_or(Exit::Code(-1))
}

/// Nothing the agent started outlives its attempt, not even what left its process
/// group (see `process::escaped`).
fn end_escaped(attempt_id: &str, started: Instant, pgid: u32) {
    let agent_pid = i32::try_from(pgid).unwrap_or(i32::MAX);
    let killed = crate::process::escaped::end_attempt(attempt_id, started.into_std(), &[agent_pid]);
    if !killed.is_empty() {
        tracing::info!("ended {} process(es) that had left the agent's process group: {killed:?}", killed.len());
    }
}

/// What the attempt gathered from the agent's output.
#[derive(Default)]
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
        Self { text_output, ..Self::default() }
    }

    /// Takes in one event; returns a session id when it is new.
    fn absorb(&mut self, event: AgentEvent) -> Option<String> {
        if let AgentEvent::Text { text } = event {
            if !self.text_output {
                self.last_text = Some(text);
            }
            return None;
        }
        let mut new_session = None;
        match &event {
            AgentEvent::Session { id } if self.session.as_deref() != Some(id) => {
                self.session = Some(id.clone());
                new_session = Some(id.clone());
            }
            AgentEvent::Result { text, is_error, .. } => self.result = Some((text.clone(), *is_error)),
            AgentEvent::Usage { input_tokens, output_tokens, cost_usd } => {
                self.usage.input_tokens += input_tokens;
                self.usage.output_tokens += output_tokens;
                self.usage.cost_usd += cost_usd.unwrap_or(0.0);
            }
            AgentEvent::Error { message } => push_bounded(&mut self.tail, message),
            _ => {}
        }
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(event);
        new_session
    }

    fn finish(self, end: End, started: Instant) -> Outcome {
        let stdout_tail = self.text_output.then_some(self.stdout_tail);
        let (final_message, result_is_error) = final_message::choose(self.result, self.last_text, stdout_tail);
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

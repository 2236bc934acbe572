//! One attempt: spawn the agent, read its output as events, keep its clock, and end
//! it (with grace) when a detector or the clock says so, or when the run tells it to.
//! The child's exit, its output and the run's commands are awaited in one `select!`,
//! never polled; each of its arms is one named step of `Running`. What the run must
//! know goes back as typed messages ([`AttemptMsg`]: a session, a tool call, the
//! escalation, the log's disk) and, at the end, an [`AttemptReport`]; the attempt
//! decides nothing about the run and saves nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::time::{Instant, sleep_until};

use crate::agent::AgentEvent;
use crate::agent::launch::Prepared;
use crate::control::output_clock::OutputClock;
use crate::git::attribution::Touched;
use crate::listeners::Suspension;
use crate::process::ending::Ending;
use crate::process::lines::{Item, LineReader, text};
use crate::process::{agent_group, signal_group, spawn};
use crate::recovery::classify::{EndedBy, Exit};
use crate::report::Pulse;
use crate::secrets::redact;
use crate::signal::StopCause;
use crate::state::attempt_log::AttemptLog;
use crate::step::effect::StartAttempt;
use crate::step::input::{AttemptEnd, AttemptMsg, AttemptReport, SpawnError, Stamp};
use crate::step::{Command, EndWhy};
use crate::supervise::collected::Collected;
use crate::supervise::{Intervention, Supervisor};

/// Events of one line whose buffer is kept for the next: a line rarely holds more
/// than a few, and one with thousands should not keep their memory.
const EVENTS_BUFFER: usize = 64;

/// After the agent exits, its pipes may be held open by something it left behind:
/// the group is killed then, and the rest of the output gets this long to drain.
const DRAIN: Duration = Duration::from_secs(2);

/// An attempt to run.
pub(crate) struct Attempt {
    pub prepared: Prepared,
    /// How it runs, as the step decided, its done file in the project.
    pub how: StartAttempt,
    /// The run's log directory.
    pub log: PathBuf,
    pub max_log: u64,
    /// The live display's clock of the agent's last output.
    pub pulse: Pulse,
    /// `ralph status`'s clock of the agent's last output.
    pub output: OutputClock,
    /// The time ralph spent stopped by Ctrl+Z: the attempt's clocks leave it out.
    pub suspension: Suspension,
}

/// What the attempt leaves behind: its report, and its log when a full disk still
/// holds part of it back (the run writes it before anything new starts).
pub(crate) struct Outcome {
    pub report: AttemptReport,
    pub unsaved_log: Option<AttemptLog>,
}

/// Runs one attempt to its end.
pub(crate) async fn run(
    a: Attempt,
    tx: UnboundedSender<AttemptMsg>,
    mut commands: UnboundedReceiver<Command>,
) -> Outcome {
    let started = Instant::now();
    let before = stamp(a.how.done_file.as_deref());
    let program = a.prepared.launch.argv.first().cloned().unwrap_or_default();
    let (mut child, pipes) = match spawn(&a.prepared.launch) {
        Ok(spawned) => spawned,
        Err(error) => {
            let mut report = AttemptReport::not_started(SpawnError::of(&error, program));
            report.duration = started.elapsed();
            return Outcome { report, unsaved_log: None };
        }
    };
    let pgid = child.pid();
    // The signal paths that bypass this loop (second Ctrl+C, Ctrl+Z) need the group.
    agent_group::set(pgid);
    let _group = GroupGuard;
    write_prompt(a.prepared.launch.stdin.clone(), pipes.stdin);
    // Bytes, not `String` lines: one invalid UTF-8 byte must not end the reading.
    let (mut out, mut err) = (LineReader::new(pipes.stdout), LineReader::new(pipes.stderr));
    // Plain buffered writes: a page-cache write takes microseconds, while tokio's
    // file type would hop to a blocking thread for every line.
    let log = AttemptLog::create(&a.log, &a.how.stem, a.max_log);
    let limits = a.how.limits.clone();
    let mut r = Running::new(a, before, log, tx, pgid, started);
    // Until the agent is gone and its output read.
    while r.exit.is_none() || r.out.open || r.err.open {
        r.catch_up_suspension();
        let (watch_at, watch_reason) = r.supervisor.watch.deadline();
        let escalate_at = r.escalation.as_ref().and_then(|e| e.ending.next_at());
        let (flush_at, drain_at, running) = (r.log.flush_at(), r.drain_at, r.exit.is_none());
        tokio::select! {
            () = out.fill(), if r.out.open => {}
            () = err.fill(), if r.err.open => {}
            status = child.wait(), if running => r.exited(status),
            // A timer that went off while ralph was stopped (Ctrl+Z) is moved on first.
            _ = sleep_until(watch_at), if running && r.escalation.is_none() => if !r.catch_up_suspension() {
                r.intervene(Intervention::clock(watch_reason, &limits));
            },
            _ = sleep_until(escalate_at.unwrap_or_else(Instant::now)), if running && escalate_at.is_some() => {
                if !r.catch_up_suspension() {
                    r.grace_elapsed();
                }
            }
            // What was shown is on disk within moments: a kill -9 loses little.
            _ = sleep_until(flush_at.unwrap_or_else(Instant::now)), if flush_at.is_some() => r.log.flush(),
            _ = sleep_until(drain_at.unwrap_or_else(Instant::now)), if drain_at.is_some() => {
                if !r.catch_up_suspension() {
                    (r.out.open, r.err.open) = (false, false);
                }
            }
            Some(command) = commands.recv() => if r.command(command) {
                return r.force_exit();
            },
        }
        // Everything read is handled before the next wait: a flood costs one wakeup
        // and one clock reading per read, not per line.
        r.now = Instant::now();
        while r.out.open
            && let Some(item) = out.pop()
        {
            r.item(item, false);
        }
        while r.err.open
            && let Some(item) = err.pop()
        {
            r.item(item, true);
        }
        r.out.open &= !out.done();
        r.err.open &= !err.done();
        r.log_news();
    }
    r.finish()
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

/// ralph is ending the agent with grace, and why (for the display).
struct Escalating {
    ending: Ending,
    why: EndWhy,
}

/// The attempt while its agent runs: each arm of the `select!` is one step here.
struct Running {
    a: Attempt,
    tx: UnboundedSender<AttemptMsg>,
    pgid: u32,
    started: Instant,
    /// When the output being handled was read.
    now: Instant,
    log: AttemptLog,
    collected: Collected,
    supervisor: Supervisor,
    /// The files the agent reported editing.
    touched: Touched,
    /// The done artifact before the attempt.
    before: Stamp,
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
    /// A stdout line's events, the buffer kept from line to line (up to
    /// [`EVENTS_BUFFER`] of them).
    events: Vec<AgentEvent>,
}

impl Running {
    fn new(
        a: Attempt,
        before: Stamp,
        log: AttemptLog,
        tx: UnboundedSender<AttemptMsg>,
        pgid: u32,
        started: Instant,
    ) -> Self {
        Self {
            supervisor: Supervisor::new(&a.how.limits, started).with_cost_left(a.how.cost_left),
            collected: Collected::new(a.prepared.text_output),
            suspended: a.suspension.get(),
            a,
            tx,
            pgid,
            started,
            now: started,
            log,
            touched: Touched::default(),
            before,
            out: Stream { open: true, long: false },
            err: Stream { open: true, long: false },
            exit: None,
            ended_by: EndedBy::Agent,
            intervention: None,
            stopping: None,
            escalation: None,
            drain_at: None,
            events: Vec::new(),
        }
    }

    fn tell(&self, msg: AttemptMsg) {
        // The run outlives its attempts: a closed channel is a run ending anyway.
        let _ = self.tx.send(msg);
    }

    /// Time stopped by Ctrl+Z is neither silence nor attempt time; true when there
    /// was some since the last look (the clocks moved on).
    fn catch_up_suspension(&mut self) -> bool {
        let suspended = self.a.suspension.get();
        let paused = suspended.saturating_sub(self.suspended);
        if paused.is_zero() {
            return false;
        }
        self.suspended = suspended;
        self.supervisor.watch.pause(paused);
        if let Some(e) = self.escalation.as_mut() {
            e.ending.pause(paused);
        }
        if let Some(at) = self.drain_at.as_mut() {
            *at += paused;
        }
        true
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
        self.a.pulse.beat();
        self.a.output.beat(self.now);
        self.collected.stderr_line(shown);
    }

    /// A stdout line: the agent's events, for the supervisor, the run and the report;
    /// `shown` is the line as the log has it.
    fn stdout_line(&mut self, line: &str, shown: &str) {
        let mut events = std::mem::take(&mut self.events);
        self.a.prepared.parser.parse_into(line, &mut events);
        trace_events(line, &events);
        let mut found = None;
        if events.is_empty() {
            found = self.supervisor.on_event(None, self.now);
        }
        self.a.pulse.beat();
        self.a.output.beat(self.now);
        // Lines that are not the agent's structured events (a CLI's own error
        // printout) are evidence for the classifier.
        let unparsed = events.iter().all(|e| matches!(e, AgentEvent::Unknown { kind } if kind == "non-json"));
        for event in events.drain(..) {
            found = found.or(self.supervisor.on_event(Some(&event), self.now));
            self.touched.observe(&event);
            if matches!(event, AgentEvent::ToolStarted { .. } | AgentEvent::ToolFinished { .. })
                && let Some(tool) = self.supervisor.last_tool()
            {
                self.tell(AttemptMsg::Tool(tool));
            }
            if let Some(id) = self.collected.absorb(event) {
                self.tell(AttemptMsg::Session(id));
            }
        }
        // Kept for the next line, unless one huge line grew it (its memory goes back).
        if events.capacity() <= EVENTS_BUFFER {
            self.events = events;
        }
        self.collected.stdout_line(shown, unparsed);
        // The first finding ends the attempt, unless the run is ending it already. Once
        // the agent is gone (output read after its exit), what was seen is still what
        // happened: the report carries it, the run judges by it (`step::failure::seen_by`).
        match found {
            Some(_) if self.stopping.is_some() || self.escalation.is_some() || self.intervention.is_some() => {}
            Some(found) if self.exit.is_some() => self.intervention = Some(found),
            Some(found) => self.intervene(found),
            None => {}
        }
    }

    fn exited(&mut self, status: std::io::Result<std::process::ExitStatus>) {
        self.exit = Some(status.map_or(Exit::Code(-1), exit_of));
        // Nothing the agent started may outlive its attempt.
        let _ = signal_group(self.pgid, Signal::SIGKILL);
        agent_group::clear();
        self.drain_at = Some(Instant::now() + DRAIN);
        self.tell(AttemptMsg::Exited);
    }

    /// ralph ends the attempt: a detector or its clock found why.
    fn intervene(&mut self, found: Intervention) {
        tracing::info!("ending the attempt: {} ({})", found.detector, found.evidence);
        self.ended_by = found.ended_by();
        let why = EndWhy::Intervention(found.detector);
        self.intervention = Some(found);
        self.escalate(why);
    }

    /// The one way an escalation starts: the agent's stop signal, then stronger ones
    /// after each grace period. One under way only changes its reason.
    fn escalate(&mut self, why: EndWhy) {
        match &mut self.escalation {
            Some(under_way) => under_way.why = why,
            None => {
                let ending = Ending::start(self.a.prepared.stop_signal, self.a.how.limits.grace, self.pgid);
                self.escalation = Some(Escalating { ending, why });
            }
        }
        self.tell_escalation();
    }

    fn grace_elapsed(&mut self) {
        if self.escalation.as_mut().is_some_and(|e| e.ending.grace_elapsed()) {
            self.tell_escalation();
        }
    }

    /// Tells the run where the escalation stands: the signal sent, and the next one
    /// with its time.
    fn tell_escalation(&self) {
        let Some(e) = &self.escalation else { return };
        let next = e.ending.next().map(|(signal, at)| (signal.as_str(), at));
        self.tell(AttemptMsg::Escalating { why: e.why.clone(), sent: e.ending.sent().as_str(), next });
    }

    /// What the run says; true on the user's second Ctrl+C.
    fn command(&mut self, command: Command) -> bool {
        match command {
            // Once the agent has exited, its attempt is complete: the run honours the
            // stop after it has recorded this attempt's result.
            Command::Stop(cause) if self.exit.is_none() => {
                self.stopping = Some(cause);
                self.escalate(EndWhy::stop(cause));
            }
            Command::Stop(_) => {}
            Command::Interrupted if self.exit.is_none() && self.escalation.is_none() => {
                self.ended_by = EndedBy::Interruption;
                self.escalate(EndWhy::Reported);
            }
            Command::Interrupted => {}
            Command::Kill => return true,
            Command::Alive => {
                let _ = self.supervisor.on_event(None, Instant::now());
            }
        }
        false
    }

    /// The user's second Ctrl+C: kill the group, exit now.
    fn force_exit(self) -> Outcome {
        let _ = signal_group(self.pgid, Signal::SIGKILL);
        end_escaped(&self.a.prepared.attempt_id, self.started, self.pgid);
        Outcome { report: self.report(AttemptEnd::ForceExit), unsaved_log: None }
    }

    /// The log's disk-full and space-back news, for the run.
    fn log_news(&mut self) {
        for news in self.log.take_news() {
            self.tell(AttemptMsg::Disk(news));
        }
    }

    fn finish(mut self) -> Outcome {
        self.log.flush();
        self.log_news();
        end_escaped(&self.a.prepared.attempt_id, self.started, self.pgid);
        let end = match self.stopping {
            Some(cause) => AttemptEnd::Stopped(cause),
            None => AttemptEnd::Exited { exit: self.exit.unwrap_or(Exit::Code(-1)), ended_by: self.ended_by },
        };
        let last_signal = self.escalation.as_ref().map(|e| e.ending.sent().as_str());
        let intervention = if self.stopping.is_some() { None } else { self.intervention.take() };
        let last_tool = self.supervisor.last_tool();
        let unsaved_log = (!self.log.on_disk()).then(|| std::mem::take(&mut self.log));
        let mut report = self.report(end);
        (report.intervention, report.last_tool, report.last_signal) = (intervention, last_tool, last_signal);
        report.log_unsaved = unsaved_log.as_ref().map(|log| super::io::full(log.current()));
        Outcome { report, unsaved_log }
    }

    /// What the attempt leaves behind, its tails redacted (only redacted text is kept).
    fn report(self, end: AttemptEnd) -> AttemptReport {
        let mut output = self.collected.finish();
        (output.text_tail, output.stderr_tail) = (redact(&output.text_tail), redact(&output.stderr_tail));
        AttemptReport {
            output,
            duration: self.started.elapsed(),
            touched: self.touched,
            artifact: (self.before, stamp(self.a.how.done_file.as_deref())),
            ..AttemptReport::empty(end)
        }
    }
}

/// What the done artifact looks like now (its checksum), for `done = "file:PATH"`.
fn stamp(done_file: Option<&Path>) -> Stamp {
    match done_file {
        Some(path) => {
            std::fs::read(path).map_or(Stamp::Missing, |bytes| Stamp::Content(crate::config::checksum(&bytes)))
        }
        None => Stamp::NotApplicable,
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

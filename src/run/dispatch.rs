//! The dispatcher: one `select!` loop that owns the run state. Everything that can
//! happen to a run arrives as one typed [`Input`]: the attempt's messages and its
//! end (by channel), signals and control-socket requests, the step's timer, probe
//! answers, endpoints that answered in the background. The pure step
//! ([`crate::step`]) decides; [`Io`] carries out its effects in order, and an effect
//! that learns something (a prepared launch, a commit, the versions, the writes a
//! full disk refused) queues its answer, which comes before anything else. Between
//! attempts the loop hands the step `Input::Next` once nothing else is pending (a
//! signal that came meanwhile first).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::{Instant, sleep_until};

use crate::error::RalphError;
use crate::events::RunEvent;
use crate::git::record::CommitReport;
use crate::listeners::{Signals, Suspension};
use crate::notify::Notifier;
use crate::outcome::RunEnd;
use crate::recovery::probe::ProbeResult;
use crate::signal::InterruptAction;
use crate::step::effect::Effect;
use crate::step::input::{AttemptMsg, Heard};
use crate::step::{self, Command, Input, Now, RunState};

use super::attempt::{self, Attempt, Outcome};
use super::checkpoint_file::CheckpointFile;
use super::connect;
use super::control::ControlSocket;
use super::io::{self, Io};
use super::registration::Registration;
use super::setup::Ready;

/// Runs the run until it ends. `signals` were installed when the lock was taken, so
/// nothing that came since is lost.
pub(crate) async fn run(ready: Ready, mut signals: Signals) -> Result<RunEnd, RalphError> {
    let mut d = Dispatcher::new(ready, &mut signals)?;
    match d.drive(&mut signals).await {
        Ok(end) => {
            if end != RunEnd::ForceExit {
                d.io.notifier.flush().await;
            }
            Ok(end)
        }
        Err(e) => {
            // ralph's own failure: what is on disk stays the last valid state.
            d.io.emit(&RunEvent::RunError { error: e.to_string() }, &d.run);
            Err(e)
        }
    }
}

/// The loop's state: the run, its I/O, and what it waits on.
struct Dispatcher {
    run: RunState,
    io: Io,
    /// Answers of effects, handled before anything else arrives.
    queue: VecDeque<Input>,
    /// The step's timer.
    timer: Option<Instant>,
    /// The probe the step asked for.
    probe: Option<Pin<Box<dyn Future<Output = ProbeResult>>>>,
    /// The running attempt, its messages, and what the step tells it.
    attempt: Option<Pin<Box<dyn Future<Output = Outcome>>>>,
    messages: Option<UnboundedReceiver<AttemptMsg>>,
    commands: Option<UnboundedSender<Command>>,
    /// What the endpoints probed in the background said.
    answered: (UnboundedSender<Heard>, UnboundedReceiver<Heard>),
    suspension: Suspension,
}

impl Dispatcher {
    /// The run ready to start, its control socket served; a socket that cannot be
    /// recorded leaves the directory as set-up found it (nothing of the run changed yet).
    fn new(ready: Ready, signals: &mut Signals) -> Result<Self, RalphError> {
        let loaded = ready.setting.loaded.clone();
        let run = RunState::new(ready.setting, ready.checkpoint, ready.opening, Now::read());
        let mut io = Io {
            notifier: Notifier::new(&loaded.config.notify, &ready.dir),
            registration: Registration::new(loaded),
            dir: ready.dir,
            logs_dir: ready.logs_dir,
            artifacts_dir: ready.artifacts_dir,
            checkpoint: ready.checkpoint_path.map(CheckpointFile::new),
            journal: ready.journal,
            reporter: ready.reporter,
            summary: Default::default(),
            hold: ready.hold,
            git: ready.git,
            control: ControlSocket::default(),
            disk_full: None,
            unsaved_log: None,
            next_probe: None,
            prepared: None,
            finished: None,
            fleet: ready.fleet,
        };
        if let Err(e) = io.control.listen(ready.control, &io.dir, &run, signals) {
            io.hold.release(true);
            let record = crate::control::path::record_of(&io.dir);
            return Err(RalphError::setup(format!("cannot record the control socket in {}", record.display()), e));
        }
        Ok(Self {
            run,
            io,
            queue: VecDeque::new(),
            timer: None,
            probe: None,
            attempt: None,
            messages: None,
            commands: None,
            answered: unbounded_channel(),
            suspension: signals.suspension(),
        })
    }

    /// The loop: the next input, the step, its effects; until the run is finished.
    async fn drive(&mut self, signals: &mut Signals) -> Result<RunEnd, RalphError> {
        self.queue.push_back(Input::Start);
        loop {
            let input = match self.queue.pop_front() {
                Some(input) => input,
                None => match self.next(signals).await {
                    Some(input) => input,
                    None => continue,
                },
            };
            for effect in step::step(&mut self.run, input, Now::read()) {
                self.carry_out(effect).await?;
            }
            if let Some(end) = self.io.finished.take() {
                return Ok(end);
            }
        }
    }

    /// What happens next. Between attempts, a signal that came meanwhile, else the
    /// step's next move; otherwise the first of: a signal or a control request, the
    /// attempt's end (after its messages), a message of the attempt, the timer, the
    /// probe, a background probe's answer, the checkpoint's catch-up.
    async fn next(&mut self, signals: &mut Signals) -> Option<Input> {
        if self.run.ready() {
            // Calls shorter than the catch-up leave no time for its timer below.
            self.io.catch_up(false);
            return tokio::select! {
                biased;
                action = signals.next() => self.signal(action, signals),
                () = std::future::ready(()) => Some(Input::Next),
            };
        }
        let (timer, catch_up) = (self.timer, self.io.checkpoint.as_ref().and_then(CheckpointFile::due));
        tokio::select! {
            biased;
            // A signal first: the second Ctrl+C's handler kills the agent at once, and
            // its attempt may end in the same turn; the step hears the Ctrl+C before.
            action = signals.next() => self.signal(action, signals),
            outcome = finish(&mut self.attempt), if self.attempt.is_some() => {
                self.attempt_ended(outcome);
                None
            }
            Some(msg) = recv(&mut self.messages) => Some(Input::Attempt(msg)),
            _ = sleep_until(timer.unwrap_or_else(Instant::now)), if timer.is_some() => {
                self.timer = None;
                Some(Input::Timer)
            }
            result = finish(&mut self.probe), if self.probe.is_some() => {
                self.probe = None;
                Some(Input::Probed(result))
            }
            Some((endpoint, result)) = self.answered.1.recv() => Some(Input::Heard(endpoint, result)),
            // `checkpoint.json` catches up with the journal.
            _ = sleep_until(catch_up.unwrap_or_else(Instant::now)), if catch_up.is_some() => {
                self.io.catch_up(true);
                None
            }
        }
    }

    /// A signal, as the step hears it; Ctrl+Z was carried out already (`fg` came).
    fn signal(&mut self, action: InterruptAction, signals: &mut Signals) -> Option<Input> {
        match action {
            InterruptAction::Stop(cause) => Some(Input::Stop(cause, crate::signal::origin::stopped_by())),
            InterruptAction::ForceExit => Some(Input::ForceExit),
            InterruptAction::Control => Some(Input::Control(signals.take_inbox())),
            InterruptAction::Ignore => None,
        }
    }

    /// The attempt is over: its messages first, then its end. What a full disk held
    /// back of its log is written before anything new starts.
    fn attempt_ended(&mut self, outcome: Outcome) {
        (self.attempt, self.commands) = (None, None);
        if let Some(mut messages) = self.messages.take() {
            while let Ok(msg) = messages.try_recv() {
                self.queue.push_back(Input::Attempt(msg));
            }
        }
        if let Some(log) = outcome.unsaved_log {
            self.io.disk_full.get_or_insert_with(|| log.current().to_path_buf());
            self.io.unsaved_log = Some(log);
        }
        self.queue.push_back(Input::AttemptEnded(Box::new(outcome.report)));
    }

    /// Carries out one effect; an answer goes to the queue.
    async fn carry_out(&mut self, effect: Effect) -> Result<(), RalphError> {
        let was_full = self.io.disk_full.is_some();
        match effect {
            Effect::Save(cp, durability) => {
                self.io.save(&cp, durability)?;
                self.io.control.refresh(&self.run);
            }
            Effect::Emit(event) => self.io.emit(&event, &self.run),
            Effect::Record(event) => self.io.record(&event),
            Effect::Show(show) => self.io.show(show),
            Effect::Launch(plan) => {
                let prepared = self.io.launch(&plan, &self.run)?;
                self.queue.push_back(prepared);
            }
            Effect::Start(start) => self.start(*start),
            Effect::Attempt(command) => {
                // The stop's intent is saved: a test may block the loop here.
                #[cfg(debug_assertions)]
                if let Command::Stop(_) = command {
                    super::test_hooks::hang_if_asked("RALPH_TEST_HANG_AFTER_STOP");
                }
                if let Some(commands) = &self.commands {
                    let _ = commands.send(command);
                }
            }
            Effect::Timer(at) => self.timer = Some(at),
            Effect::Probe(endpoints) => {
                let timeout = self.run.setting.loaded.config.offline.timeout;
                self.probe = Some(Box::pin(async move { connect::probe(&endpoints, timeout).await }));
            }
            Effect::ProbeInBackground(endpoints) => self.probe_in_background(endpoints),
            Effect::AskVersions(agent) => {
                let versions = self.io.versions(&agent, &self.run).await;
                self.queue.push_back(versions);
            }
            Effect::KeepArtifact { phase, source } => self.io.keep_artifact(&phase, source),
            Effect::Commit { after_crash } => {
                let (cp, touched) = (&self.run.cp, &self.run.touched);
                let pending = cp.git.as_ref().and_then(|state| Some((state, state.pending.as_ref()?)));
                let report = match (&self.io.git, pending) {
                    (Some(git), Some((state, pending))) => git.commit(state, pending, &cp.run_id, touched, after_crash),
                    _ => CommitReport::failed("git features are off"),
                };
                self.queue.push_back(Input::Committed(report));
            }
            Effect::RetryWrites(cp) => {
                let retried = self.io.retry_writes(&cp)?;
                self.queue.push_back(retried);
                return Ok(());
            }
            Effect::RecordTree => {
                let tree = self.io.git.as_ref().and_then(|git| {
                    git.tree().inspect_err(|e| tracing::warn!("cannot record the working tree at the stop: {e}")).ok()
                });
                self.queue.push_back(Input::TreeRecorded(tree));
            }
            Effect::Finish(end) => self.io.finish(&end, &self.run),
            Effect::Fail(fatal) => return Err(fatal.into()),
            Effect::Fleet(asked) => {
                let answer = crate::fleet::task::carry_out(self.io.fleet.as_ref(), asked, &self.run.setting.loaded);
                self.queue.extend(answer);
            }
        }
        // A write found the disk full: the step hears of it once.
        if !was_full && let Some(path) = &self.io.disk_full {
            let (path, free) = io::full(path);
            self.queue.push_back(Input::DiskFull { path, free });
        }
        Ok(())
    }

    /// Starts the prepared attempt.
    fn start(&mut self, mut how: step::effect::StartAttempt) {
        let Some(prepared) = self.io.prepared.take() else { return };
        how.done_file = how.done_file.map(|path| self.io.dir.join(path));
        let attempt = Attempt {
            prepared,
            log: self.io.logs_dir.join(format!("{}.log", how.stem)),
            how,
            max_log: self.run.setting.loaded.config.logs.max_attempt_log,
            pulse: self.io.reporter.pulse(),
            output: self.io.control.output(),
            suspension: self.suspension.clone(),
        };
        let ((tx, rx), (commands, heard)) = (unbounded_channel(), unbounded_channel());
        self.attempt = Some(Box::pin(attempt::run(attempt, tx, heard)));
        (self.messages, self.commands) = (Some(rx), Some(commands));
    }

    /// Probes each endpoint on its own, without waiting: each answer comes back.
    fn probe_in_background(&self, endpoints: Vec<String>) {
        let timeout = self.run.setting.loaded.config.offline.timeout;
        for endpoint in endpoints {
            let heard = self.answered.0.clone();
            tokio::spawn(async move {
                let result = connect::probe(std::slice::from_ref(&endpoint), timeout).await;
                let _ = heard.send((endpoint, result));
            });
        }
    }
}

/// The end of a future that may not be there (then never).
async fn finish<T>(future: &mut Option<Pin<Box<dyn Future<Output = T>>>>) -> T {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

/// The next message of a channel that may not be there (then never).
async fn recv<T>(rx: &mut Option<UnboundedReceiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

//! The step's unit tests: each rule of the run driven through [`step`] with fixed
//! instants (the clocks are the test's: no runtime, no processes, no files), its
//! effects read back as a trace of what the shell would do, in order.

mod attempt;
mod begin;
mod chosen;
mod docs;
mod endings;
mod failure;
mod fleet;
mod git;
mod start;
mod waits;

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use crate::git::attribution::Touched;
use crate::recovery::classify::{EndedBy, Exit};
use crate::state::checkpoint::{Checkpoint, Status};
use crate::state::writes::Durability;
use crate::supervise::collected::Gathered;
use crate::workflow::Progress;

use super::effect::{Command, Effect, Fleet, Show};
use super::input::{AttemptEnd, AttemptReport, Input, Launched, Now, Stamp};
use super::state::{Opening, RunState, Setting};
use super::step;

/// Two sim agents `a` and `b` in one chain, one phase `develop` of two iterations.
pub(super) const TWO_AGENTS: &str = r#"
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{ done = "ok" }]
[agents.b]
kind = "sim"
[[agents.b.script]]
steps = [{ done = "ok" }]
[chains]
main = ["a", "b"]
[phases.develop]
chain = "main"
iterations = 2
"#;

/// A run driven by hand.
pub(super) struct Run {
    pub run: RunState,
    t0: Instant,
    /// Seconds since the start.
    pub secs: f64,
}

/// The unix second the tests' runs start at.
pub(super) const T0: i64 = 1_800_000_000;

impl Run {
    /// A new run of `toml` (appended to nothing: a whole config).
    pub(super) fn new(toml: &str) -> Run {
        Run::with(toml, |_| {})
    }

    /// A run whose setting or checkpoint `edit` changes first.
    pub(super) fn with(toml: &str, edit: impl FnOnce(&mut (Setting, Checkpoint))) -> Run {
        let loaded = crate::config::parse(Path::new("ralph.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        let first = loaded.phases[0].name.clone();
        let setting = Setting {
            endpoints: Default::default(),
            goal: "Make the tests pass.".into(),
            templates: loaded.phases.iter().map(|p| crate::workflow::prompt::builtin(&p.name).to_string()).collect(),
            resumed: false,
            from: None,
            git: false,
            pid: 42,
            task: None,
            tz: jiff::tz::TimeZone::UTC,
            loaded,
        };
        let mut both = (setting, checkpoint(&first));
        edit(&mut both);
        let t0 = Instant::now();
        let (setting, cp) = both;
        let run = RunState::new(setting, cp, Opening::default(), now_at(t0, 0.0));
        Run { run, t0, secs: 0.0 }
    }

    /// A resumed run of [`TWO_AGENTS`] in git whose checkpoint holds the commit of
    /// `develop/1` pending, as a ralph killed before making it leaves it.
    pub(super) fn with_a_pending_commit() -> Run {
        use crate::git::record::{GitState, Pending};
        Run::with(TWO_AGENTS, |(s, cp)| {
            (s.resumed, s.git) = (true, true);
            let pending = Pending { key: "develop/1".into(), message: "m".into(), goal: false };
            cp.git = Some(GitState { pending: Some(pending), ..GitState::default() });
        })
    }

    pub(super) fn now(&self) -> Now {
        now_at(self.t0, self.secs)
    }

    /// One step at the current time, its effects as a trace.
    pub(super) fn step(&mut self, input: Input) -> Vec<String> {
        trace(&self.effects(input))
    }

    /// One step at the current time.
    pub(super) fn effects(&mut self, input: Input) -> Vec<Effect> {
        let now = self.now();
        step(&mut self.run, input, now)
    }

    /// Lets `secs` pass.
    pub(super) fn after(&mut self, secs: f64) -> &mut Self {
        self.secs += secs;
        self
    }

    /// The run's opening, then the next move up to an attempt started (as prepared
    /// with `launched`).
    pub(super) fn started(toml: &str) -> Run {
        let mut r = Run::new(toml);
        let _ = r.step(Input::Start);
        r.attempt();
        r
    }

    /// The next move and its launch, up to the attempt started.
    pub(super) fn attempt(&mut self) -> Vec<String> {
        let mut trace = self.step(Input::Next);
        assert_eq!(trace.last().map(String::as_str), Some("launch"), "{trace:?}");
        trace.extend(self.step(Input::Prepared { launch: Ok(Launched::default()), moved: None }));
        trace
    }

    /// The attempt ends with `report`.
    pub(super) fn ends(&mut self, report: AttemptReport) -> Vec<String> {
        self.step(Input::AttemptEnded(Box::new(report)))
    }

    pub(super) fn status(&self) -> Status {
        self.run.cp.status
    }

    pub(super) fn progress(&self) -> &Progress {
        &self.run.cp.progress
    }
}

pub(super) fn now_at(t0: Instant, secs: f64) -> Now {
    let wall = jiff::Timestamp::from_second(T0).unwrap() + jiff::SignedDuration::from_secs_f64(secs);
    Now { wall, mono: t0 + Duration::from_secs_f64(secs) }
}

/// A new run's checkpoint at phase `first`.
pub(super) fn checkpoint(first: &str) -> Checkpoint {
    let at = jiff::Timestamp::from_second(T0).unwrap();
    crate::step::start::blank("R1".into(), Progress::new(first), "ralph.toml".into(), at)
}

/// An attempt whose agent exited with `code` after printing `stderr` (its output
/// ends with it too), with no final message.
pub(super) fn failed_saying(code: i32, stderr: &str) -> AttemptReport {
    let mut report = exited(code, None);
    report.output.stderr_tail = stderr.into();
    report.output.text_tail = stderr.into();
    report
}

/// An attempt whose agent exited with `code`, its final message `message`.
pub(super) fn exited(code: i32, message: Option<&str>) -> AttemptReport {
    ended(AttemptEnd::Exited { exit: Exit::Code(code), ended_by: EndedBy::Agent }, message)
}

/// An attempt that ended with `end`, its final message `message`.
pub(super) fn ended(end: AttemptEnd, message: Option<&str>) -> AttemptReport {
    AttemptReport {
        end,
        output: Gathered { final_message: message.map(str::to_string), ..Gathered::default() },
        duration: Duration::from_secs(3),
        intervention: None,
        last_tool: None,
        last_signal: None,
        touched: Touched::default(),
        artifact: (Stamp::NotApplicable, Stamp::NotApplicable),
        log_unsaved: None,
    }
}

/// What the shell would do, in order: the journal kind of each event, and a word
/// for every other act.
pub(super) fn trace(effects: &[Effect]) -> Vec<String> {
    effects.iter().map(word).collect()
}

fn word(effect: &Effect) -> String {
    match effect {
        Effect::Save(_, Durability::Durable) => "save".into(),
        Effect::Save(_, Durability::Ordered) => "save:ordered".into(),
        Effect::Save(_, Durability::Unsynced) => "save:unsynced".into(),
        Effect::Emit(event) => event.kind().into(),
        Effect::Record(event) => format!("record:{}", event.kind()),
        Effect::Show(show) => format!(
            "show:{}",
            match show {
                Show::Waiting { .. } => "waiting",
                Show::Offline { .. } => "offline",
                Show::NextProbe(_) => "next-probe",
                Show::Escalating { .. } => "escalating",
                Show::AgentStopped { .. } => "agent-stopped",
                Show::Killed { .. } => "killed",
                Show::Cost(_) => "cost",
                Show::Clear => "clear",
            }
        ),
        Effect::Launch(_) => "launch".into(),
        Effect::Start(_) => "start".into(),
        Effect::Attempt(Command::Stop(_)) => "attempt:stop".into(),
        Effect::Attempt(Command::Kill) => "attempt:kill".into(),
        Effect::Attempt(Command::Alive) => "attempt:alive".into(),
        Effect::Attempt(Command::Interrupted) => "attempt:interrupted".into(),
        Effect::Timer(_) => "timer".into(),
        Effect::Probe(_) => "probe".into(),
        Effect::ProbeInBackground(_) => "probe-in-background".into(),
        Effect::AskVersions(_) => "versions".into(),
        Effect::KeepArtifact { .. } => "artifact".into(),
        Effect::Commit { .. } => "commit".into(),
        Effect::RetryWrites(_) => "retry-writes".into(),
        Effect::RecordTree => "record-tree".into(),
        Effect::Finish(end) => format!("finish:{end:?}"),
        Effect::Fail(_) => "fail".into(),
        Effect::Fleet(fleet) => format!(
            "fleet:{}",
            match fleet {
                Fleet::OpenWindow { .. } => "open-window",
                Fleet::CheckIsolation { .. } => "check-isolation",
                Fleet::SharedReset { .. } => "shared-reset",
                Fleet::PublishReset { .. } => "publish-reset",
            }
        ),
    }
}

/// The effects without the live display's and the background probes (the host is
/// probed after every successful attempt until it answers), which most rules do not
/// care about.
pub(super) fn quiet(trace: Vec<String>) -> Vec<String> {
    trace.into_iter().filter(|w| !w.starts_with("show:") && w != "probe-in-background").collect()
}

/// The timer's instant among `effects`, in seconds after `t0`.
pub(super) fn timer_secs(r: &Run, effects: &[Effect]) -> Option<f64> {
    effects.iter().find_map(|e| match e {
        Effect::Timer(at) => Some(at.duration_since(r.t0).as_secs_f64()),
        _ => None,
    })
}

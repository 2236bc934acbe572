//! The live display: an indicatif spinner line on a terminal (phase i/N, iteration,
//! agent, attempt, elapsed, time since the agent's last event), plain timestamped
//! lines elsewhere (logs, CI, systemd), or nothing but errors with `-q`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

use crate::agent::AgentEvent;
use crate::run::RunEnd;
use crate::state::checkpoint::Checkpoint;
use crate::state::redact::redact;

use super::summary::Summary;

/// What an attempt line shows.
#[derive(Debug, Clone)]
pub struct AttemptLine {
    pub phase: String,
    pub phase_number: usize,
    pub phase_count: usize,
    pub iteration: u32,
    pub iterations: u32,
    pub agent: String,
    pub attempt: u32,
    pub resumed_session: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quiet,
    Plain,
    Terminal,
}

pub struct Reporter {
    mode: Mode,
    bar: Option<ProgressBar>,
    /// Milliseconds since `epoch` of the agent's last event, read by the bar.
    last_event_ms: Arc<AtomicU64>,
    epoch: Instant,
    /// The run's cost so far, shown when an agent reports one.
    cost_usd: f64,
}

impl Reporter {
    pub fn new(quiet: bool, terminal: bool) -> Self {
        let mode = match (quiet, terminal) {
            (true, _) => Mode::Quiet,
            (false, true) => Mode::Terminal,
            (false, false) => Mode::Plain,
        };
        Self { mode, bar: None, last_event_ms: Arc::new(AtomicU64::new(0)), epoch: Instant::now(), cost_usd: 0.0 }
    }

    /// A message worth a line of its own.
    pub fn line(&self, message: &str) {
        let message = &redact(message);
        match (self.mode, &self.bar) {
            (Mode::Quiet, _) => {}
            (Mode::Terminal, Some(bar)) => bar.println(message),
            _ => eprintln!("{} {message}", clock()),
        }
    }

    pub fn attempt_started(&mut self, a: &AttemptLine) {
        let resumed = a.resumed_session.as_ref().map(|s| format!(" · resuming {s}")).unwrap_or_default();
        let cost = if self.cost_usd > 0.0 { format!(" · ${:.2}", self.cost_usd) } else { String::new() };
        let text = format!(
            "phase {}/{} {} · iteration {}/{} · agent {} · attempt {}{resumed}{cost}",
            a.phase_number, a.phase_count, a.phase, a.iteration, a.iterations, a.agent, a.attempt
        );
        self.touch();
        match self.mode {
            Mode::Quiet => {}
            Mode::Plain => eprintln!("{} {text}", clock()),
            Mode::Terminal => {
                let last = Arc::clone(&self.last_event_ms);
                let epoch = self.epoch;
                let style = ProgressStyle::with_template("{spinner} {msg} · {elapsed} · last event {since} ago")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner())
                    .with_key("since", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let now = epoch.elapsed().as_millis() as u64;
                        let ago = now.saturating_sub(last.load(Ordering::Relaxed)) / 1000;
                        let _ = write!(w, "{ago}s");
                    });
                let bar = ProgressBar::new_spinner().with_style(style).with_message(text);
                bar.enable_steady_tick(Duration::from_millis(250));
                self.bar = Some(bar);
            }
        }
    }

    /// The run's cost so far.
    pub fn set_cost(&mut self, cost_usd: f64) {
        self.cost_usd = cost_usd;
    }

    /// The agent produced output.
    pub fn agent_event(&self, _event: Option<&AgentEvent>) {
        self.touch();
    }

    pub fn attempt_finished(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    pub fn waiting(&mut self, why: &str, delay: Duration) {
        let why = &redact(why);
        let secs = delay.as_secs_f64();
        match self.mode {
            Mode::Quiet => {}
            Mode::Plain => eprintln!("{} waiting {secs:.1}s: {why}", clock()),
            Mode::Terminal => {
                let style = ProgressStyle::with_template("{spinner} waiting: {msg} · {eta} left")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
                let bar = ProgressBar::new(delay.as_millis() as u64).with_style(style).with_message(why.to_string());
                bar.enable_steady_tick(Duration::from_millis(250));
                self.bar = Some(bar);
            }
        }
    }

    pub fn waiting_done(&mut self) {
        self.attempt_finished();
    }

    pub fn summary(&mut self, summary: &Summary, end: &RunEnd, checkpoint: &Checkpoint) {
        self.attempt_finished();
        // The summary is the run's answer: shown even with -q when the run did not
        // finish, so a quiet cron job still says why.
        if self.mode == Mode::Quiet && *end == RunEnd::Completed {
            return;
        }
        eprintln!("{}", redact(&summary.render(end, checkpoint)));
    }

    fn touch(&self) {
        self.last_event_ms.store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

fn clock() -> String {
    jiff::ZonedDateTime::now().strftime("%H:%M:%S").to_string()
}

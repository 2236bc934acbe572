//! The live display: an indicatif spinner line on a terminal (phase i/N, iteration,
//! agent, attempt, elapsed, time since the agent's last event; a ticking countdown
//! while ralph waits; the escalation while an agent is being stopped), plain
//! timestamped lines elsewhere (logs, CI, systemd), or nothing but errors with `-q`.
//!
//! Every time shown is local wall-clock time in one zone, named on the first line
//! ([`Reporter::header`]). The texts themselves are built by the pure functions of
//! [`super::lines`], which the snapshot tests cover.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use jiff::tz::TimeZone;

use crate::outcome::RunEnd;
use crate::secrets::redact;
use crate::state::checkpoint::Checkpoint;

use super::lines::{self, Escalating};
use super::summary::Summary;
use super::term::NoPadTerm;
use crate::text::clock;

/// The live line's clock of the agent's last output.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pulse(Option<(Arc<AtomicU64>, Instant)>);

impl Pulse {
    /// Something happened now: the agent printed, or an attempt started.
    pub(crate) fn beat(&self) {
        if let Some((last, epoch)) = &self.0 {
            last.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        }
    }
}

/// What a person sees: nothing but errors (`-q`), plain timestamped lines, or live
/// lines on a terminal (the fleet's display too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Quiet,
    Plain,
    Terminal,
}

impl Mode {
    pub(crate) fn of(quiet: bool, terminal: bool) -> Mode {
        match (quiet, terminal) {
            (true, _) => Mode::Quiet,
            (false, true) => Mode::Terminal,
            (false, false) => Mode::Plain,
        }
    }
}

/// How often the live line is redrawn: often enough for a countdown to tick.
const TICK: Duration = Duration::from_millis(250);

pub(crate) struct Reporter {
    mode: Mode,
    bar: Option<ProgressBar>,
    /// Milliseconds since `epoch` of the agent's last event, read by the bar.
    last_event_ms: Arc<AtomicU64>,
    epoch: Instant,
    /// The run's cost so far, shown when an agent reports one.
    cost_usd: f64,
    tz: TimeZone,
}

impl Reporter {
    pub(crate) fn new(quiet: bool, terminal: bool) -> Self {
        Self {
            mode: Mode::of(quiet, terminal),
            bar: None,
            last_event_ms: Arc::new(AtomicU64::new(0)),
            epoch: Instant::now(),
            cost_usd: 0.0,
            tz: super::zone(),
        }
    }

    /// The first line: which ralph, where, and the zone every time below is in.
    pub(crate) fn header(&self, dir: &std::path::Path) {
        let now = jiff::Timestamp::now();
        self.line(&lines::header(env!("CARGO_PKG_VERSION"), dir, &clock::zone_name(now, &self.tz)));
    }

    /// A message worth a line of its own.
    pub(crate) fn line(&self, message: &str) {
        let message = &redact(message);
        match (self.mode, &self.bar) {
            (Mode::Quiet, _) => {}
            (Mode::Terminal, Some(bar)) => bar.println(format!("{} {message}", self.clock())),
            _ => eprintln!("{} {message}", self.clock()),
        }
    }

    /// Shows a run event: the attempt line for a new attempt, else its line if it
    /// has one ([`super::lines`]).
    pub(crate) fn event(&mut self, event: &crate::events::RunEvent) {
        if let Some(text) = lines::attempt(event, self.cost_usd) {
            self.attempt_started(text);
        } else if let Some(text) = lines::line(event, &self.tz) {
            self.line(&text);
        }
    }

    /// `HH:MM:SS` of a unix second, in the display's zone.
    pub(crate) fn at(&self, unix_second: i64) -> String {
        jiff::Timestamp::from_second(unix_second).map(|t| clock::hms(t, &self.tz)).unwrap_or_default()
    }

    fn attempt_started(&mut self, text: String) {
        self.pulse().beat();
        match self.mode {
            Mode::Quiet => {}
            Mode::Plain => eprintln!("{} {text}", self.clock()),
            Mode::Terminal => {
                let (last, epoch) = (Arc::clone(&self.last_event_ms), self.epoch);
                let style = style("{spinner} {msg} · {elapsed} · last event {since} ago").with_key(
                    "since",
                    move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let ago = (epoch.elapsed().as_millis() as u64).saturating_sub(last.load(Ordering::Relaxed));
                        let _ = write!(w, "{}", clock::countdown(Duration::from_millis(ago / 1000 * 1000)));
                    },
                );
                self.spin(style, text);
            }
        }
    }

    /// The run's cost so far.
    pub(crate) fn set_cost(&mut self, cost_usd: f64) {
        self.cost_usd = cost_usd;
    }

    /// The clock the running attempt sets when its agent prints; only the live line
    /// shows it (a clock reading per line is a flood's cost elsewhere).
    pub(crate) fn pulse(&self) -> Pulse {
        Pulse((self.mode == Mode::Terminal).then(|| (Arc::clone(&self.last_event_ms), self.epoch)))
    }

    /// ralph is ending the agent: what it sent, what comes next and when, and (when
    /// the user asked for the stop) that a second Ctrl+C kills it now.
    pub(crate) fn escalating(&mut self, e: &Escalating, next_at: Option<Instant>) {
        let text = lines::escalating(e);
        match self.mode {
            Mode::Quiet => {}
            Mode::Plain => {
                let left = |at: Instant| clock::countdown(at.saturating_duration_since(Instant::now()));
                let next =
                    e.next.zip(next_at).map(|(next, at)| format!("; {next} in {}", left(at))).unwrap_or_default();
                eprintln!("{} {text}{next}", self.clock());
            }
            Mode::Terminal => {
                let next = e.next;
                let style = style("{spinner} {msg}{next}").with_key(
                    "next",
                    move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        if let (Some(next), Some(at)) = (next, next_at) {
                            let left = clock::countdown(at.saturating_duration_since(Instant::now()));
                            let _ = write!(w, " · {next} in {left}");
                        }
                    },
                );
                self.spin(style, text);
            }
        }
    }

    /// A wait begins: its length, what it waits for and until when, once as a line;
    /// then, on a terminal, a countdown that ticks.
    pub(crate) fn waiting(&mut self, why: &str, delay: Duration) {
        let why = &redact(why);
        let until = jiff::Timestamp::now().checked_add(delay);
        let until_clock = until.map(|t| clock::hms(t, &self.tz)).unwrap_or_default();
        self.clear();
        self.line(&lines::wait_begins(why, delay, &until_clock));
        if self.mode == Mode::Terminal {
            let deadline = Instant::now() + delay;
            let style = style("{spinner} waiting: {msg} · {left} left (until {until})")
                .with_key("left", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", clock::countdown(deadline.saturating_duration_since(Instant::now())));
                })
                .with_key("until", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{until_clock}");
                });
            self.spin(style, why.to_string());
        }
    }

    /// The offline pause: since when, and a countdown to the next probe.
    pub(crate) fn offline(&mut self, since_unix: i64, endpoints: &[String], next_probe: Arc<AtomicU64>) {
        self.clear();
        self.line(&lines::offline(&self.at(since_unix), endpoints));
        if self.mode == Mode::Terminal {
            let epoch = self.epoch;
            // Since the pause began, which a restart may have carried over.
            let since = jiff::Timestamp::from_second(since_unix).unwrap_or_else(|_| jiff::Timestamp::now());
            let style = style("{spinner} {msg} · offline for {for} · next probe in {probe}")
                .with_key("probe", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let at = Duration::from_millis(next_probe.load(Ordering::Relaxed));
                    let left = at.saturating_sub(epoch.elapsed());
                    let _ = write!(w, "{}", clock::countdown(left));
                })
                .with_key("for", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let secs = jiff::Timestamp::now().as_second().saturating_sub(since.as_second());
                    let _ = write!(w, "{}", clock::countdown(Duration::from_secs(u64::try_from(secs).unwrap_or(0))));
                });
            self.spin(style, "Offline — paused".to_string());
        }
    }

    /// For [`Reporter::offline`]: a clock the waits loop sets to the next probe's
    /// time (milliseconds since this reporter's epoch).
    pub(crate) fn probe_clock(&self, next_in: Duration) -> u64 {
        (self.epoch.elapsed() + next_in).as_millis() as u64
    }

    /// The second Ctrl+C: what was killed, and how to continue.
    pub(crate) fn killed(&mut self, agent: Option<&str>) {
        self.clear();
        // Even with -q: the user asked, and this is the only word of the run's end.
        eprintln!("{}", lines::killed(agent));
    }

    pub(crate) fn summary(&mut self, summary: &Summary, end: &RunEnd, checkpoint: &Checkpoint) {
        self.clear();
        // The summary is the run's answer: shown even with -q when the run did not
        // finish, so a quiet cron job still says why.
        if self.mode == Mode::Quiet && *end == RunEnd::Completed {
            return;
        }
        eprintln!("{}", redact(&summary.render(end, checkpoint)));
    }

    /// Replaces the live line.
    fn spin(&mut self, style: ProgressStyle, message: String) {
        self.clear();
        let target = ProgressDrawTarget::term_like_with_hz(Box::new(NoPadTerm::stderr()), 20);
        let bar = ProgressBar::with_draw_target(None, target).with_style(style).with_message(message);
        bar.enable_steady_tick(TICK);
        self.bar = Some(bar);
    }

    /// Removes the live line (an attempt's, a wait's), leaving nothing of it on the screen.
    pub(crate) fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn clock(&self) -> String {
        clock::hms(jiff::Timestamp::now(), &self.tz)
    }
}

impl Drop for Reporter {
    /// A live line must not outlive ralph: an abandoned bar stays drawn, and the
    /// shell's prompt would follow a spinner remnant.
    fn drop(&mut self) {
        self.clear();
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

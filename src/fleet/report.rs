//! What a person sees of a fleet: on a terminal one live line per running task
//! (indicatif's multi-progress, redrawn only when a task's checkpoint changes: no
//! ticking while every task waits), plain timestamped lines elsewhere, and at the
//! end a summary with each task's state, iterations, cost, branch and the exact next
//! command for anything unfinished. The texts are pure functions ([`summary`],
//! [`next_step`], [`live_line`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::Mode;
use crate::state::checkpoint::Checkpoint;

use super::state::{Fleet, Task, TaskState};

pub(super) struct Reporter {
    mode: Mode,
    multi: Option<MultiProgress>,
    bars: BTreeMap<String, ProgressBar>,
    tz: jiff::tz::TimeZone,
}

impl Reporter {
    pub(super) fn new(quiet: bool, terminal: bool) -> Reporter {
        let mode = Mode::of(quiet, terminal);
        let multi = (mode == Mode::Terminal).then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Reporter { mode, multi, bars: BTreeMap::new(), tz: crate::report::zone() }
    }

    fn clock(&self) -> String {
        crate::text::clock::hms(jiff::Timestamp::now(), &self.tz)
    }

    /// A line of its own.
    pub(super) fn line(&self, text: &str) {
        let text = crate::secrets::redact(text);
        match (self.mode, &self.multi) {
            (Mode::Quiet, _) => {}
            (Mode::Terminal, Some(multi)) => {
                let _ = multi.println(format!("{} {text}", self.clock()));
            }
            _ => eprintln!("{} {text}", self.clock()),
        }
    }

    /// Lines of their own.
    pub(super) fn lines(&self, texts: &[String]) {
        texts.iter().for_each(|text| self.line(text));
    }

    /// The live line of a running task (a terminal only).
    pub(super) fn live(&mut self, task: &str, checkpoint: Option<&Checkpoint>) {
        let Some(multi) = &self.multi else { return };
        let text = live_line(task, checkpoint, &self.tz);
        let bar = self.bars.entry(task.to_string()).or_insert_with(|| {
            let bar = multi.add(ProgressBar::hidden());
            bar.set_style(ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()));
            bar
        });
        bar.set_message(text);
    }

    /// A task is no longer running.
    pub(super) fn done(&mut self, task: &str) {
        if let (Some(bar), Some(multi)) = (self.bars.remove(task), &self.multi) {
            bar.finish_and_clear();
            multi.remove(&bar);
        }
    }

    /// The summary at the end, on stderr (always: it says what is left to do).
    pub(super) fn summary(&mut self, text: &str) {
        for (_, bar) in std::mem::take(&mut self.bars) {
            bar.finish_and_clear();
        }
        if let Some(multi) = &self.multi {
            let _ = multi.clear();
        }
        eprint!("{}", crate::secrets::redact(text));
    }
}

/// One running task's live line: phase, iteration, agent, cost, last activity.
pub(super) fn live_line(task: &str, cp: Option<&Checkpoint>, tz: &jiff::tz::TimeZone) -> String {
    let Some(cp) = cp else { return format!("{task}: starting") };
    let pos = &cp.progress.position;
    let agent = cp.in_flight.as_ref().map(|f| format!(" · agent {}", f.agent)).unwrap_or_default();
    let cost = if cp.usage.cost_usd > 0.0 { format!(" · ${:.2}", cp.usage.cost_usd) } else { String::new() };
    let at = crate::text::clock::hms(cp.updated_at, tz);
    format!(
        "{task}: {} · {} iteration {}{agent}{cost} · last activity {at}",
        cp.status.into_str(),
        pos.phase_name,
        pos.iteration
    )
}

/// The exact next command for a task that is not done.
pub(super) fn next_step(name: &str, task: &Task, landing: bool, into: &str) -> Option<String> {
    Some(match task.state {
        TaskState::Merged | TaskState::Discarded => return None,
        TaskState::Finished if landing => "`ralph fleet` lands it".to_string(),
        TaskState::Finished => {
            format!("review and merge its branch: `git diff {into}...{}`, `git merge {}`", task.branch, task.branch)
        }
        TaskState::Failed | TaskState::Blocked => {
            format!("`ralph fleet logs {name}` says why; fix it, then `ralph fleet retry {name}`")
        }
        TaskState::Stopped => format!("`ralph fleet retry {name}` continues it"),
        _ => "`ralph fleet` continues it".to_string(),
    })
}

/// The end-of-fleet summary: one block per task.
pub(super) fn summary(fleet: &Fleet, headline: &str, landing: bool, logs: &dyn Fn(&str) -> String) -> String {
    let mut out = format!("\nfleet {}: {headline}\n", fleet.fleet_id);
    for (name, t) in &fleet.tasks {
        let cost = if t.cost_usd > 0.0 { format!(", ${:.2}", t.cost_usd) } else { String::new() };
        let place = match &t.landed {
            Some(head) => format!("landed on {} as {}", fleet.into, crate::text::short(head)),
            None => format!("branch {}", t.branch),
        };
        let _ = writeln!(out, "  {name}: {}, {} iteration(s){cost}, {place}", t.state.into_str(), t.iterations);
        if let Some(reason) = &t.reason {
            let _ = writeln!(out, "    why: {reason}");
        }
        if matches!(t.state, TaskState::Failed | TaskState::Blocked) {
            let _ = writeln!(out, "    log: {}", logs(name));
        }
        if let Some(next) = next_step(name, t, landing, &fleet.into) {
            let _ = writeln!(out, "    next: {next}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::fleet;

    #[test]
    fn the_summary_names_each_task_and_what_to_do_next() {
        let mut f = fleet();
        let mut add = |name: &str, state, reason: Option<&str>| {
            let mut t = Task::new(&format!("tasks/{name}.md"), 1, format!("ralph/{name}"));
            (t.state, t.reason, t.iterations, t.cost_usd) = (state, reason.map(String::from), 2, 0.25);
            f.tasks.insert(name.into(), t);
        };
        add("done", TaskState::Merged, None);
        add("fin", TaskState::Finished, None);
        add("stuck", TaskState::Blocked, Some("its run is blocked"));
        add("halt", TaskState::Stopped, Some("stopped by `ralph fleet stop`"));
        let text = summary(&f, "2 of 4 tasks done", false, &|n| format!("/r/.agent/fleet/logs/{n}.log"));
        insta::assert_snapshot!(text);
    }
}

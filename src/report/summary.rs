//! The end-of-run summary: what was done, what failed and why, what it cost, and
//! what to do next.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use crate::outcome::RunEnd;
use crate::recovery::Category;
use crate::recovery::policy::Cap;
use crate::signal::StopCause;
use crate::state::checkpoint::{Checkpoint, Usage};

/// Counts of this process's part of the run, plus the run's totals.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub phases: u32,
    pub iterations: u32,
    pub attempts: u32,
    pub fallovers: u32,
    pub failures: BTreeMap<Category, u32>,
    /// ralph's interventions in this session, by detector.
    pub interventions: BTreeMap<String, u32>,
    pub cap: Option<Cap>,
    /// The last sign-off the judge rejected, as "rule (\"words\")".
    pub rejected_signoff: Option<String>,
    pub elapsed: Duration,
    pub usage: Usage,
    /// Commits ralph made in this session.
    pub commits: u32,
}

impl Summary {
    /// Counts this session's part of the run from the event stream.
    pub fn observe(&mut self, event: &crate::events::RunEvent) {
        use crate::events::RunEvent;
        match event {
            RunEvent::AttemptStarted { .. } => self.attempts += 1,
            RunEvent::AttemptSucceeded { .. } => self.iterations += 1,
            RunEvent::PhaseDone { .. } => self.phases += 1,
            RunEvent::Fallover { .. } => self.fallovers += 1,
            RunEvent::Intervention { detector, .. } => *self.interventions.entry(detector.clone()).or_insert(0) += 1,
            RunEvent::CapReached { cap, .. } => self.cap = Some(*cap),
            RunEvent::GitCommit { .. } => self.commits += 1,
            RunEvent::Signoff { verdict: crate::workflow::done::SignOff::Rejected, rule, words, .. } => {
                self.rejected_signoff = Some(crate::supervise::completion::Why::new(*rule, words.as_str()).describe());
            }
            _ => {}
        }
    }

    pub fn render(&self, end: &RunEnd, cp: &Checkpoint) -> String {
        let mut s = String::new();
        let headline = match end {
            RunEnd::Completed => "ralph: done — every phase finished".to_string(),
            RunEnd::Failed(why) => format!("ralph: failed — {why}"),
            RunEnd::Blocked(why) => format!("ralph: blocked — {why}"),
            RunEnd::Stopped(StopCause::User) => "ralph: paused by you".to_string(),
            RunEnd::Stopped(cause) => format!("ralph: interrupted by {}", cause.signal_name()),
            RunEnd::ForceExit => "ralph: stopped at once".to_string(),
        };
        let _ = writeln!(s, "{headline}");
        let c = &cp.progress.counters;
        let _ = writeln!(
            s,
            "  this session: {} phase(s) finished, {} iteration(s), {} attempt(s), {} fallover(s)",
            self.phases, self.iterations, self.attempts, self.fallovers
        );
        let _ = writeln!(
            s,
            "  whole run: {} iteration(s), {} attempt(s), active {}",
            c.iterations_done,
            c.attempts,
            fmt_duration(self.elapsed)
        );
        if let Some(verdict) = &cp.progress.review {
            let _ = writeln!(s, "  review: {}", verdict.describe());
        }
        if !self.failures.is_empty() {
            let _ = writeln!(s, "  failures: {}", counts(&self.failures, |k| k.as_str()));
        }
        if !self.interventions.is_empty() {
            let _ = writeln!(s, "  ralph stepped in: {}", counts(&self.interventions, String::as_str));
        }
        if let Some(why) = &self.rejected_signoff {
            let _ = writeln!(s, "  last sign-off rejected: {why}");
        }
        if let Some(cap) = self.cap {
            let _ = writeln!(s, "  stopped by: {}", cap.phrase());
        }
        if let Some(usage) = self.usage.describe() {
            let _ = writeln!(s, "  usage: {usage}");
            for (phase, usage) in &cp.phase_usage {
                if let Some(line) = usage.describe() {
                    let _ = writeln!(s, "    {phase}: {line}");
                }
            }
        }
        if let Some(git) = &cp.git {
            let _ = write!(s, "{}", commits(git, self.commits));
        }
        let phase = &cp.progress.position.phase_name;
        let next = match (end, self.cap) {
            (RunEnd::Completed, _) => None,
            (RunEnd::Stopped(_) | RunEnd::ForceExit, _) => {
                Some("ralph --resume continues where it stopped".to_string())
            }
            // A run total: resuming without raising the cap would stop again at once.
            (RunEnd::Failed(_), Some(cap)) if !cap.renewed_by_resume() => Some(format!(
                "raise {} in the config, then ralph --resume continues (the run's totals are kept)",
                cap.key(phase)
            )),
            (RunEnd::Failed(_), Some(cap)) => Some(format!(
                "fix the cause (or raise {}), then ralph --resume continues this iteration with a fresh budget",
                cap.key(phase)
            )),
            (RunEnd::Failed(_), None) | (RunEnd::Blocked(_), _) => {
                Some("fix the cause, then ralph --resume continues this iteration with a fresh budget".to_string())
            }
        };
        if let Some(next) = next {
            let _ = writeln!(s, "  next: {next}");
        }
        s.trim_end().to_string()
    }
}

/// Commits listed in the summary and `--inspect-checkpoint`, newest last.
const LISTED_COMMITS: usize = 20;

/// The commits ralph made (and any the agents made themselves), one per line.
pub fn commits(git: &crate::git::record::GitState, this_session: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  git: {} commit(s) by ralph in this run ({} in this session){}",
        git.commit_count,
        this_session,
        if git.agent_commits > 0 {
            format!(", {} made by the agents themselves", git.agent_commits)
        } else {
            String::new()
        }
    );
    let skip = git.commits.len().saturating_sub(LISTED_COMMITS);
    if skip > 0 || (git.commit_count as usize) > git.commits.len() {
        let _ = writeln!(
            s,
            "    … {} earlier (the journal lists every commit)",
            git.commit_count as usize - LISTED_COMMITS.min(git.commits.len())
        );
    }
    for c in &git.commits[skip..] {
        let _ = writeln!(
            s,
            "    {} {} ({} file(s), +{} -{})",
            c.hash.get(..12).unwrap_or(&c.hash),
            c.key,
            c.files,
            c.insertions,
            c.deletions
        );
    }
    if let Some(p) = &git.pending {
        let _ = writeln!(s, "    pending: the commit of {} (made or found on resume)", p.key);
    }
    s
}

/// "agent 2, environmental 1": named counts in one line.
pub fn counts<K>(map: &BTreeMap<K, u32>, name: impl Fn(&K) -> &str) -> String {
    map.iter().map(|(k, v)| format!("{} {v}", name(k))).collect::<Vec<_>>().join(", ")
}

fn fmt_duration(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

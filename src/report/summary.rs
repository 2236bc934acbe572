//! The end-of-run summary: what was done, what failed and why, what it cost, and
//! what to do next.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use crate::git::record::{CommitRecord, GitState};
use crate::outcome::RunEnd;
use crate::recovery::Category;
use crate::recovery::policy::Cap;
use crate::signal::StopCause;
use crate::state::checkpoint::{Checkpoint, LastError, Usage};

use super::words;
use crate::text::{labelled, plural};

/// Counts of this process's part of the run, plus the run's totals.
#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    pub phases: u32,
    pub iterations: u32,
    pub attempts: u32,
    /// Moves to another agent of the chain.
    pub fallovers: u32,
    /// Rounds begun again through the chain (a one-agent chain's only "fallover").
    pub rounds: u32,
    pub failures: BTreeMap<Category, u32>,
    /// ralph's interventions in this session, by detector.
    pub interventions: BTreeMap<crate::supervise::Detector, u32>,
    pub cap: Option<Cap>,
    /// Why the failures may be the network's: nothing ralph probed ever answered.
    pub network: Option<String>,
    /// The last sign-off the judge rejected, as "rule (\"words\")".
    pub rejected_signoff: Option<String>,
    pub elapsed: Duration,
    pub usage: Usage,
    /// Commits ralph made in this session.
    pub commits: u32,
    /// What to do next ([`super::next_step`]); `None` when the run finished.
    pub next: Option<String>,
    /// The error that ended the run, shown with its output and log; `None` when none
    /// did (a cap without an error, a signal, the finished work).
    pub error: Option<LastError>,
}

impl Summary {
    /// Completes the summary at the run's end from its state: the totals the
    /// checkpoint keeps, the error that ended it, whether the network was ever
    /// reached, and what to do next.
    pub(crate) fn close(&mut self, end: &RunEnd, run: &crate::step::state::RunState) {
        let cp = &run.cp;
        self.iterations += run.carried;
        self.elapsed = Duration::from_secs_f64(cp.elapsed_secs);
        self.usage = cp.usage.clone();
        self.failures = cp.progress.counters.failures.clone();
        self.error.clone_from(&run.ending_error);
        if *end != RunEnd::Completed && !self.failures.is_empty() {
            self.network = crate::recovery::probe::never_online(&run.answered, &run.unanswered);
        }
        let loaded = &run.setting.loaded;
        let phase = &run.phase().name;
        self.next = super::next_step(end, self.cap, self.error.as_ref(), &loaded.config, &loaded.path, phase);
    }

    /// Counts this session's part of the run from the event stream.
    pub(crate) fn observe(&mut self, event: &crate::events::RunEvent) {
        use crate::events::RunEvent;
        match event {
            RunEvent::AttemptStarted { .. } => self.attempts += 1,
            RunEvent::AttemptSucceeded { .. } => self.iterations += 1,
            RunEvent::PhaseDone { .. } => self.phases += 1,
            RunEvent::Fallover { from, to, new_cycle, .. } => {
                self.fallovers += u32::from(from != to);
                self.rounds += u32::from(*new_cycle);
            }
            RunEvent::Intervention { detector, .. } => *self.interventions.entry(*detector).or_insert(0) += 1,
            RunEvent::CapReached { cap, .. } => self.cap = Some(*cap),
            RunEvent::GitCommit { .. } => self.commits += 1,
            RunEvent::Signoff { verdict: crate::workflow::done::SignOff::Rejected, rule, words, .. } => {
                self.rejected_signoff = Some(crate::supervise::completion::Why::new(*rule, words.as_str()).plain());
            }
            _ => {}
        }
    }

    pub(crate) fn render(&self, end: &RunEnd, cp: &Checkpoint) -> String {
        let mut s = String::new();
        let phase = cp.progress.position.phase_name.as_str();
        let headline = match end {
            RunEnd::Completed => "ralph: done — every phase finished".to_string(),
            RunEnd::Failed(why) => format!("ralph: failed — {}", words::stop_reason(why, phase)),
            RunEnd::Blocked(why) => format!("ralph: blocked — {}", words::stop_reason(why, phase)),
            RunEnd::Stopped(StopCause::User) => "ralph: paused by you".to_string(),
            RunEnd::Stopped(cause) => stopped_by(*cause, cp.stop_sender.as_ref()),
            RunEnd::ForceExit => "ralph: stopped at once".to_string(),
            RunEnd::Declined => "ralph: nothing started".to_string(),
        };
        let _ = writeln!(s, "{headline}");
        let c = &cp.progress.counters;
        let _ = writeln!(
            s,
            "  this session: {} finished, {}, {}{}",
            plural(self.phases, "phase"),
            plural(self.iterations, "iteration"),
            plural(self.attempts, "attempt"),
            self.moves()
        );
        let _ = writeln!(
            s,
            "  whole run: {}, {}, active {}",
            plural(c.iterations_done, "iteration"),
            plural(c.attempts, "attempt"),
            humantime::format_duration(Duration::from_secs(self.elapsed.as_secs()))
        );
        labelled(&mut s, "  review", cp.progress.review.as_ref().map(|verdict| verdict.describe()));
        if !self.failures.is_empty() {
            let failed = self.failures.iter().map(|(k, n)| format!("{n} {}", words::category(*k)));
            let _ = writeln!(s, "  failures: {}", failed.collect::<Vec<_>>().join(", "));
        }
        labelled(&mut s, "  network", self.network.as_ref());
        if !self.interventions.is_empty() {
            let stepped = self.interventions.iter().map(|(k, n)| times(words::stepped_in(*k), *n));
            let _ = writeln!(s, "  ralph stepped in: {}", stepped.collect::<Vec<_>>().join(", "));
        }
        labelled(&mut s, "  last sign-off rejected", self.rejected_signoff.as_ref());
        let limit = self.cap.map(|cap| format!("the limit {}", cap.key(phase)));
        labelled(&mut s, "  stopped by", limit);
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
        if matches!(end, RunEnd::Failed(_) | RunEnd::Blocked(_))
            && let Some(e) = &self.error
        {
            let _ = writeln!(s, "  last error: {} (agent {})", e.classification.reason, e.agent);
            for line in excerpt(&e.text_tail, EXCERPT_LINES) {
                let _ = writeln!(s, "    | {line}");
            }
            labelled(&mut s, "  log", e.log.as_ref());
        }
        labelled(&mut s, "  next", self.next.as_ref());
        s.trim_end().to_string()
    }

    /// The chain's moves of this session, when there were any: to another agent, and
    /// through the chain again.
    fn moves(&self) -> String {
        let moves = [("fell over to another agent", self.fallovers), ("went through the chain again", self.rounds)];
        moves.into_iter().filter(|(_, n)| *n > 0).map(|(what, n)| format!(", {}", times(what, n))).collect()
    }
}

/// "asked the agent to confirm it was done (2 times)", "… (once)".
fn times(what: &str, n: u32) -> String {
    match n {
        1 => format!("{what} (once)"),
        n => format!("{what} ({n} times)"),
    }
}

/// The headline of a run a signal stopped: who sent it, and whether the watchdog
/// takes it up.
fn stopped_by(cause: StopCause, sender: Option<&crate::signal::origin::Sender>) -> String {
    let from = sender.map(|s| format!(" from {}", s.describe())).unwrap_or_default();
    match cause {
        StopCause::Deliberate => {
            format!("ralph: paused by a SIGTERM{from}: a deliberate stop, which the watchdog leaves alone")
        }
        StopCause::Hangup => {
            "ralph: interrupted: the terminal closed (SIGHUP); `ralph watch` may resume it".to_string()
        }
        _ => format!("ralph: interrupted by {}{from}; `ralph watch` may resume it", cause.signal_name()),
    }
}

/// Commits listed in the summary and `--inspect-checkpoint`, newest last.
const LISTED_COMMITS: usize = 20;

/// The commits ralph made (and any the agents made themselves), one per line.
pub(crate) fn commits(git: &GitState, this_session: u32) -> String {
    let mut s = String::new();
    let by_agents = (git.agent_commits > 0).then(|| format!(", {} made by the agents themselves", git.agent_commits));
    let _ = writeln!(
        s,
        "  git: {} commit(s) by ralph in this run ({this_session} in this session){}",
        git.commit_count,
        by_agents.unwrap_or_default()
    );
    let skip = git.commits.len().saturating_sub(LISTED_COMMITS);
    if skip > 0 || (git.commit_count as usize) > git.commits.len() {
        let _ = writeln!(
            s,
            "    … {} earlier (the journal lists every commit)",
            git.commit_count as usize - LISTED_COMMITS.min(git.commits.len())
        );
    }
    for CommitRecord { hash, key, files, insertions, deletions } in &git.commits[skip..] {
        let _ = writeln!(s, "    {} {key} ({files} file(s), +{insertions} -{deletions})", crate::text::short(hash));
    }
    if let Some(p) = &git.pending {
        let _ = writeln!(s, "    pending: the commit of {} (made or found on resume)", p.key);
    }
    s
}

/// Lines of the last error's output shown in the summary.
const EXCERPT_LINES: usize = 6;
/// Characters of one excerpt line.
const EXCERPT_WIDTH: usize = 160;

/// The last `n` non-empty lines of `text`, each cut to a readable width.
fn excerpt(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|l| crate::text::ellipsis(l, EXCERPT_WIDTH)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::checkpoint::Status;
    use crate::testkit::checkpoint;

    fn summary(next: Option<&str>) -> Summary {
        Summary {
            phases: 1,
            iterations: 1,
            attempts: 4,
            fallovers: 1,
            failures: [(Category::Agent, 2), (Category::UserConfig, 1)].into_iter().collect(),
            elapsed: Duration::from_secs(75),
            next: next.map(str::to_string),
            ..Summary::default()
        }
    }

    #[test]
    fn blocked_run_shows_the_error_excerpt_its_log_and_the_next_step() {
        let s = summary(Some(
            "the provider refused agent claude's credentials: set ANTHROPIC_API_KEY, then `ralph --resume`",
        ));
        let end = RunEnd::Blocked("the provider rejected the credentials".into());
        let cp = checkpoint(Status::Blocked);
        let s = Summary { error: cp.last_error.clone(), ..s };
        insta::assert_snapshot!(s.render(&end, &cp));
    }

    #[test]
    fn a_cap_that_no_error_reached_shows_no_older_error() {
        // The checkpoint keeps the last error of the run (an hour ago, another
        // agent's); the iteration cap that ended the run had none.
        let s = Summary { cap: Some(Cap::Iterations), ..summary(None) };
        let end = RunEnd::Failed("iteration cap exhausted: phase develop ran 3 iterations".into());
        let text = s.render(&end, &checkpoint(Status::Failed));
        assert!(text.contains("stopped by: the limit [phases.develop] iterations"), "{text}");
        assert!(!text.contains("last error") && !text.contains("log:"), "{text}");
    }

    #[test]
    fn paused_run_says_resume_is_all_it_takes() {
        let s = summary(Some("`ralph --resume` continues where it stopped"));
        insta::assert_snapshot!(s.render(&RunEnd::Stopped(StopCause::User), &checkpoint(Status::Paused)));
    }

    #[test]
    fn completed_run_counts_in_the_singular_too() {
        let s =
            Summary { phases: 1, iterations: 1, attempts: 1, elapsed: Duration::from_secs(3), ..Summary::default() };
        let mut cp = checkpoint(Status::Completed);
        cp.progress.counters.attempts = 1;
        cp.last_error = None;
        insta::assert_snapshot!(s.render(&RunEnd::Completed, &cp));
    }
}

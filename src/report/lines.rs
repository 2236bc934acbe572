//! The texts a person reads, as pure functions (the snapshot tests read them): the
//! line of each run event ([`line()`], one match over [`RunEvent`], so the terminal and
//! the journal never tell different stories; `None` for events without a line of
//! their own, which the live display or the summary shows), and the live display's
//! own texts: the first line, the attempt line, a wait, the offline pause, an agent
//! being stopped, and the second Ctrl+C.

use std::path::Path;
use std::time::Duration;

use super::clock;
use crate::events::{FalloverWhy, RunEvent};
use crate::supervise::completion::Why;
use crate::workflow::advance::Verdict;
use crate::workflow::done::SignOff;

/// An agent being ended by ralph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Escalating {
    pub agent: String,
    /// Why: the user's (or the machine's) stop, or one of ralph's detectors.
    pub why: EndWhy,
    /// The signal just sent to the agent's group.
    pub sent: &'static str,
    /// The signal that follows if the agent is still there after the grace period.
    pub next: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EndWhy {
    /// Ctrl+C: a second one kills at once.
    User,
    /// SIGTERM or SIGHUP: an orderly stop for the machine.
    Signal(&'static str),
    /// A detector of ralph's (stall, tool timeout, loop...).
    Intervention(String),
}

/// The first line of a run: version, directory, and the zone of every time shown.
pub(crate) fn header(version: &str, dir: &Path, zone: &str) -> String {
    format!("ralph {version} in {} (times are {zone})", dir.display())
}

/// The live line of an attempt; `None` for every other event.
pub(crate) fn attempt(event: &RunEvent, cost_usd: f64) -> Option<String> {
    let RunEvent::AttemptStarted {
        attempt,
        phase,
        phase_number,
        phase_count,
        iteration,
        iterations,
        pass,
        passes,
        agent,
        resume_session,
        ..
    } = event
    else {
        return None;
    };
    let resumed = resume_session.as_ref().map(|s| format!(" · resuming {s}")).unwrap_or_default();
    let cost = if cost_usd > 0.0 { format!(" · ${cost_usd:.2}") } else { String::new() };
    let pass = passes.map(|passes| format!(" · pass {pass}/{passes}")).unwrap_or_default();
    Some(format!(
        "phase {phase_number}/{phase_count} {phase}{pass} · iteration {iteration}/{iterations} · agent {agent} · attempt {attempt}{resumed}{cost}"
    ))
}

/// The line that starts a wait: how long, for what, until when.
pub(crate) fn wait_begins(why: &str, delay: Duration, until: &str) -> String {
    format!("{why}: waiting {} (until {until})", length(delay))
}

/// A wait's length: to the millisecond below a second (a short backoff is not "1s"),
/// to the nearest second above.
fn length(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        clock::countdown(Duration::from_secs(d.as_secs_f64().round() as u64))
    }
}

pub(crate) fn offline(since: &str, endpoints: &[String]) -> String {
    format!("Offline — paused (since {since}); probing {}", endpoints.join(", "))
}

pub(crate) fn escalating(e: &Escalating) -> String {
    let (what, hint) = match &e.why {
        EndWhy::User => ("stopping".to_string(), " (Ctrl+C again to kill it now)"),
        EndWhy::Signal(signal) => (format!("stopping ({signal})"), ""),
        EndWhy::Intervention(detector) => (format!("ending the attempt ({detector})"), ""),
    };
    format!("{what}: waiting for {} to exit{hint} · sent {}", e.agent, e.sent)
}

/// The agent is gone after an orderly stop, and what it took.
pub(crate) fn agent_stopped(agent: &str, last_signal: Option<&str>) -> String {
    format!("{agent} exited{}", last_signal.map(|signal| format!(" after {signal}")).unwrap_or_default())
}

/// After the second Ctrl+C.
pub(crate) fn killed(agent: Option<&str>) -> String {
    let what = agent
        .map_or_else(|| "stopped at once".to_string(), |a| format!("killed {a} and everything it started (SIGKILL)"));
    format!("{what}; `ralph --resume` continues from the last checkpoint")
}

/// A changed file left out of the commit; one that holds a secret loudly, with the
/// way to let a false alarm through.
fn left_out(path: &str, reason: &str, detail: &str) -> String {
    if reason == "credential" {
        format!(
            "git: WARNING: not committing {path}: {detail}\n  next: take the secret out of {path}, or name the file \
             in [git] allow_secrets in ralph.toml if it holds none (a test fixture, a documented example key)"
        )
    } else {
        format!("git: warning: not committing {path}: {detail}")
    }
}

pub(crate) fn line(event: &RunEvent) -> Option<String> {
    Some(match event {
        RunEvent::AttemptSucceeded { phase, iteration, goal, review, until_complete, .. } => {
            format!("{phase} iteration {iteration} done{}", goal_note(*goal, *review, *until_complete))
        }
        RunEvent::AttemptFailed { attempt, category, rule, reason, .. } => {
            format!("attempt {attempt} failed ({}, {rule}): {reason}", category.as_str())
        }
        RunEvent::Signoff { verdict, rule, words, .. } => {
            let why = Why::new(*rule, words.as_str()).describe();
            match verdict {
                SignOff::Rejected => format!("sign-off rejected: {why}"),
                SignOff::Asked => format!("asking the agent to confirm its sign-off: {why}"),
                SignOff::AcceptedWithDoubt => format!("sign-off accepted despite a doubt: {why}"),
            }
        }
        RunEvent::Intervention { detector, evidence } => format!("ralph stepped in ({detector}): {evidence}"),
        RunEvent::PhaseDone { phase } => format!("phase {phase} done"),
        RunEvent::ReviewVerdict { pass, passes, clean } => {
            format!("review: {}", Verdict { pass: *pass, passes: *passes, clean: *clean }.describe())
        }
        RunEvent::PassStarted { pass, passes } => format!("pass {pass} of {passes}: back to the review"),
        RunEvent::PassesEnded { passes_run, passes, clean: false, .. } => {
            let v = Verdict { pass: *passes_run, passes: *passes, clean: false };
            format!("review: {}; going on", v.describe())
        }
        RunEvent::Fallover { from, to, cycle, why, new_cycle } => {
            let why = match why {
                FalloverWhy::RecoveryAttempts => format!("recovery-attempt exhausted for agent {from}"),
                FalloverWhy::RateLimit => format!("agent {from} is rate-limited"),
            };
            let cycle = if *new_cycle { format!(" (cycle {cycle})") } else { String::new() };
            format!("{why}: falling over to {to}{cycle}")
        }
        RunEvent::Fallback { from, to, .. } => format!("the rate limit of {to} has reset: back from {from} to {to}"),
        RunEvent::GitCommit { hash, key, files, insertions, deletions, found_on_resume } => format!(
            "git: {} {} {key} ({files} file(s), +{insertions} -{deletions})",
            if *found_on_resume { "found the commit of" } else { "committed" },
            short(hash)
        ),
        RunEvent::GitLeftOut { path, reason, detail, .. } => left_out(path, reason, detail),
        RunEvent::GitAgentCommitted { from, to, commits, .. } => format!(
            "git: HEAD moved from {} to {} ({} commit(s) not made by ralph); ralph commits what is left",
            from.as_deref().map_or("nothing", short),
            short(to),
            commits.len()
        ),
        RunEvent::GitCommitRejected { key, .. } => format!("git: a hook rejected the commit of {key}"),
        RunEvent::GitStaleLockRemoved { path } => format!("git: removed {path} left by an interrupted commit"),
        RunEvent::DiskFull { path, free } => format!("waiting: disk full on {path} ({free} free)"),
        RunEvent::DiskSpaceBack { path } => format!("disk space is back on {path}: continuing"),
        RunEvent::Online {} => "Recovery resumed after offline".to_string(),
        RunEvent::StopAfterIteration {} => "ralph stop: stopping after this iteration".to_string(),
        RunEvent::AgentProgress { message, .. } => format!("agent: {message}"),
        RunEvent::AgentCheckpoint { summary, .. } => format!("agent saved a checkpoint: {summary}"),
        RunEvent::AgentInterruption { reason, .. } => format!("agent gave up: {reason}"),
        RunEvent::CompletionDeclared { summary, .. } => format!("agent declared the work complete: {summary}"),
        RunEvent::TaskCancelled { reason, .. } => format!("agent cancelled the task: {reason}"),
        RunEvent::McpLost { restarts, cap, .. } => {
            format!("ralph mcp crashed while the agent ran ({restarts} of {cap} restarts)")
        }
        RunEvent::RunStarted { .. }
        | RunEvent::RunResumed { .. }
        | RunEvent::RunError { .. }
        | RunEvent::RunEnded { .. }
        | RunEvent::AttemptInterrupted { .. }
        | RunEvent::LeaseTakenOver { .. }
        | RunEvent::Offline { .. }
        | RunEvent::StopRequested { .. }
        | RunEvent::AttemptStarted { .. }
        | RunEvent::IterationStarted { .. }
        | RunEvent::Retry { .. }
        | RunEvent::RateLimitWait { .. }
        | RunEvent::CapReached { .. }
        | RunEvent::GitBaseline { .. }
        | RunEvent::GitNothingToCommit { .. }
        | RunEvent::GitError { .. }
        | RunEvent::PassesEnded { clean: true, .. } => return None,
    })
}

/// "goal reached" only where the goal ends the phase: elsewhere the run goes on,
/// and it would read as the end.
fn goal_note(goal: bool, review: bool, until_complete: bool) -> &'static str {
    match (goal, review, until_complete) {
        (true, true, _) => " (nothing left to fix)",
        (true, false, true) => " (goal reached)",
        _ => "",
    }
}

/// A commit hash as people quote it: its first 12 characters.
pub(crate) fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::recovery::Category;

    #[test]
    fn each_event_reads_as_before() {
        let failed = RunEvent::AttemptFailed {
            attempt: 3,
            agent: "a".into(),
            category: Category::Agent,
            rule: crate::recovery::Rule::Stall,
            reason: "the agent stalled".into(),
            session: None,
            evidence: String::new(),
            duration_ms: 1,
            usage: Default::default(),
        };
        assert_eq!(line(&failed).as_deref(), Some("attempt 3 failed (agent, stall): the agent stalled"));
        let fallover = RunEvent::Fallover {
            from: "a".into(),
            to: "b".into(),
            cycle: 2,
            why: FalloverWhy::RecoveryAttempts,
            new_cycle: true,
        };
        assert_eq!(
            line(&fallover).as_deref(),
            Some("recovery-attempt exhausted for agent a: falling over to b (cycle 2)")
        );
        assert_eq!(line(&RunEvent::Retry { delay_ms: 5, resume_session: None }), None);
    }

    fn attempt_line() -> RunEvent {
        RunEvent::AttemptStarted {
            attempt: 7,
            phase: "develop".into(),
            phase_number: 2,
            phase_count: 3,
            iteration: 4,
            iterations: 20,
            pass: 1,
            passes: None,
            agent: "claude".into(),
            cycle: 1,
            resume_session: Some("sess-1".into()),
            env_withheld: Vec::new(),
        }
    }

    #[test]
    fn what_the_terminal_says_while_it_runs() {
        let stop = |why: EndWhy, sent, next| escalating(&Escalating { agent: "claude".into(), why, sent, next });
        let lines = [
            header("0.1.0", Path::new("/home/me/project"), "CET"),
            attempt(&attempt_line(), 0.0).unwrap_or_default(),
            attempt(&attempt_line(), 1.234).unwrap_or_default(),
            wait_begins("retrying after backoff", Duration::from_secs(5), "05:50:10"),
            wait_begins("retrying after backoff", Duration::from_millis(50), "05:50:10"),
            wait_begins("rate limit of claude", Duration::from_secs(3 * 3600 + 62), "09:00:00"),
            offline("05:50:10", &["api.anthropic.com:443".into()]),
            stop(EndWhy::User, "SIGINT", Some("SIGTERM")),
            stop(EndWhy::User, "SIGTERM", Some("SIGKILL")),
            stop(EndWhy::Signal("SIGTERM"), "SIGINT", Some("SIGTERM")),
            stop(EndWhy::Intervention("stall".into()), "SIGINT", Some("SIGTERM")),
            agent_stopped("claude", Some("SIGTERM")),
            killed(Some("claude")),
            killed(None),
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }
}

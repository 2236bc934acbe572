//! The texts a person reads, as pure functions (the snapshot tests read them): the
//! line of each run event ([`line()`], one match over [`RunEvent`], so the terminal and
//! the journal never tell different stories; `None` for events without a line of
//! their own, which the live display or the summary shows), and the live display's
//! own texts: the first line, the attempt line, a wait, the offline pause, an agent
//! being stopped, and the second Ctrl+C.

use std::path::Path;
use std::time::Duration;

use crate::text::{clock, short};
use jiff::tz::TimeZone;

use crate::events::{FalloverWhy, GitOffWhy, RunEvent};
use crate::state::checkpoint::Status;
use crate::supervise::Detector;
use crate::supervise::completion::Why;
use crate::workflow::done::SignOff;
use crate::workflow::progress::Verdict;

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

pub(crate) use crate::step::EndWhy;

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
        EndWhy::Intervention(detector) => (format!("ending the attempt ({})", super::words::detector(*detector)), ""),
        EndWhy::Reported => ("ending the attempt (the agent reported an interruption)".to_string(), ""),
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

/// The line of a sign-off's verdict.
fn signoff_line(verdict: SignOff, why: &Why) -> String {
    let why = why.plain();
    match verdict {
        SignOff::Rejected => format!("sign-off rejected: {why}"),
        SignOff::Asked => format!("asking the agent to confirm it is done: {why}"),
        SignOff::AcceptedWithDoubt => format!("sign-off accepted despite a doubt: {why}"),
    }
}

/// The line of `event`, times in `tz`; `None` for events without a line of their own.
pub(crate) fn line(event: &RunEvent, tz: &TimeZone) -> Option<String> {
    Some(match event {
        RunEvent::AttemptSucceeded { phase, iteration, goal, review, until_complete, .. } => {
            format!("{phase} iteration {iteration} done{}", goal_note(*goal, *review, *until_complete))
        }
        // The category and the rule stay in the journal and `ralph.log`.
        RunEvent::AttemptFailed { attempt, reason, .. } => format!("attempt {attempt} failed: {reason}"),
        RunEvent::Signoff { verdict, rule, words, .. } => signoff_line(*verdict, &Why::new(*rule, words.as_str())),
        // The sign-off's own line says it.
        RunEvent::Intervention { detector: Detector::DoneConfirmation, .. } => return None,
        RunEvent::Intervention { detector, evidence } => {
            format!("ralph stepped in: {} ({evidence})", super::words::detector(*detector))
        }
        RunEvent::PhaseDone { phase } => format!("phase {phase} done"),
        RunEvent::ReviewVerdict { .. } | RunEvent::PassStarted { .. } | RunEvent::PassesEnded { clean: false, .. } => {
            return review_line(event);
        }
        RunEvent::Fallover { .. } | RunEvent::Fallback { .. } => return chain_line(event),
        RunEvent::GitCommit { .. }
        | RunEvent::GitLeftOut { .. }
        | RunEvent::GitAgentCommitted { .. }
        | RunEvent::GitCommitRejected { .. }
        | RunEvent::GitStaleLockRemoved { .. }
        | RunEvent::GitOff { .. }
        | RunEvent::GitBranchCreated { .. }
        | RunEvent::GitDetached { .. }
        | RunEvent::GitHeld { .. }
        | RunEvent::GitChangedWhileStopped { .. } => return git_line(event),
        RunEvent::DiskFull { path, free } => format!("waiting: disk full on {path} ({free} free)"),
        RunEvent::DiskSpaceBack { path } => format!("disk space is back on {path}: continuing"),
        RunEvent::Online {} => "Recovery resumed after offline".to_string(),
        RunEvent::StopAfterIteration {}
        | RunEvent::ControlSocketMoved { .. }
        | RunEvent::AgentProgress { .. }
        | RunEvent::AgentCheckpoint { .. }
        | RunEvent::AgentInterruption { .. }
        | RunEvent::CompletionDeclared { .. }
        | RunEvent::TaskCancelled { .. }
        | RunEvent::McpLost { .. } => return control_line(event),
        RunEvent::LockStale { .. }
        | RunEvent::LockWait { .. }
        | RunEvent::LeaseWatch { .. }
        | RunEvent::LeaseLost { .. }
        | RunEvent::LeaseTakenOver { .. }
        | RunEvent::LeftoversEnded { .. }
        | RunEvent::CheckpointArchived { .. }
        | RunEvent::CheckpointSetAside { .. }
        | RunEvent::CheckpointRestored { .. }
        | RunEvent::ResumeChange { .. }
        | RunEvent::RunMoved { .. }
        | RunEvent::Resuming { .. }
        | RunEvent::RunSettled { .. }
        | RunEvent::SecretInInput { .. }
        | RunEvent::SetupWarning { .. }
        | RunEvent::FleetReopened { .. }
        | RunEvent::FleetGitAborted { .. }
        | RunEvent::LogFile { .. } => return setup_line(event, tz),
        RunEvent::RunStarted { .. }
        | RunEvent::RunResumed { .. }
        | RunEvent::RunError { .. }
        | RunEvent::RunEnded { .. }
        | RunEvent::AttemptInterrupted { .. }
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
        // Shown as the wait's own line.
        | RunEvent::FleetSharedReset { .. }
        | RunEvent::PassesEnded { clean: true, .. } => return None,
    })
}

/// The lines of the review/fix passes.
fn review_line(event: &RunEvent) -> Option<String> {
    Some(match event {
        RunEvent::ReviewVerdict { pass, passes, clean } => {
            format!("review: {}", Verdict { pass: *pass, passes: *passes, clean: *clean }.describe())
        }
        RunEvent::PassStarted { pass, passes } => format!("pass {pass} of {passes}: back to the review"),
        RunEvent::PassesEnded { passes_run, passes, clean: false, .. } => {
            let v = Verdict { pass: *passes_run, passes: *passes, clean: false };
            format!("review: {}; going on", v.describe())
        }
        _ => return None,
    })
}

/// The lines of what set-up found (the lock, the lease, the checkpoint, git).
fn setup_line(event: &RunEvent, tz: &TimeZone) -> Option<String> {
    Some(match event {
        RunEvent::LockStale { pid: Some(pid), host, started_at } => format!(
            "the previous ralph here (pid {pid} on {}, started {}) ended without a clean stop: its run was interrupted",
            host.as_deref().unwrap_or_default(),
            clock::stamp(started_at.as_deref().unwrap_or_default(), tz)
        ),
        RunEvent::LockStale { pid: None, .. } => {
            "the previous ralph here ended without a clean stop (its lock file does not parse): its run was interrupted"
                .to_string()
        }
        RunEvent::LockWait { path, pid, host } => format!(
            "{}; waiting for it (--resume-or-start)",
            crate::state::lock::held_message(Path::new(path), pid.zip(host.as_deref()))
        ),
        RunEvent::LeaseWatch { pid, host, renewals, timeout_ms } => format!(
            "the run directory is leased by ralph pid {pid} on host {host} (renewed {renewals} times); it is taken \
             over only after {} without a renewal",
            humantime::format_duration(Duration::from_millis(*timeout_ms))
        ),
        RunEvent::LeaseLost { host } => format!("host {host} took the lease at the same time; it continues the run"),
        RunEvent::LeaseTakenOver { from_pid: Some(pid), from_host: Some(host), waited_ms: 1.., why, .. } => {
            format!("took the run directory over from ralph pid {pid} on host {host}: its lease was {why}")
        }
        RunEvent::LeftoversEnded { run_id, pids } => format!(
            "ended {} left behind by the interrupted run {run_id}: pids {pids:?}",
            if pids.len() == 1 { "1 process".to_string() } else { format!("{} processes", pids.len()) }
        ),
        RunEvent::CheckpointArchived { aside } => format!("archived the previous checkpoint as {aside}"),
        RunEvent::CheckpointSetAside { path, aside, problem } => {
            format!("the checkpoint {path} {problem}; it was kept aside as {aside}; starting fresh")
        }
        RunEvent::CheckpointRestored { path, why, seq, run_id } => format!(
            "note: the checkpoint {path} {why}; restored save {seq} of run {run_id} from the journal (ralph or the \
             machine stopped before the file reached the disk)"
        ),
        RunEvent::ResumeChange { change } => format!("note: {change}"),
        RunEvent::RunMoved { from, to } => format!("moving the run from phase {from} to phase {to} (--from)"),
        RunEvent::Resuming { run_id, status, phase, pass, passes, iteration, agent_number, agent, session } => format!(
            "resuming run {run_id} ({}): phase {phase}{}, iteration {iteration}, agent {}{}",
            status.into_str(),
            passes.map(|n| format!(", pass {pass} of {n}")).unwrap_or_default(),
            agent.clone().unwrap_or_else(|| format!("#{agent_number}")),
            session.as_ref().map(|s| format!(", session {s}")).unwrap_or_default()
        ),
        RunEvent::RunSettled { run_id, status: Status::Completed, .. } => {
            format!("the run {run_id} is already completed; nothing to do")
        }
        RunEvent::RunSettled { run_id, status, reason, phase } => format!(
            "the run {run_id} is {}{}; --resume-or-start leaves it as it is (`ralph --resume` continues it)",
            status.into_str(),
            reason.as_ref().map(|r| format!(": {}", super::words::stop_reason(r, phase))).unwrap_or_default()
        ),
        RunEvent::SecretInInput { file, line, family } => crate::secrets::found::goal_warning(file, *line, family),
        RunEvent::SetupWarning { warning } => format!("note: {warning}"),
        RunEvent::FleetReopened { eviction, phase, iteration, agent } => format!(
            "the merge queue sent this fleet task back (eviction {eviction}): one more iteration of phase {phase} \
             (iteration {iteration}), agent {agent}"
        ),
        RunEvent::FleetGitAborted { op, error: None } => {
            format!("fleet: aborted the git {op} the agent left unfinished; the iteration runs again")
        }
        RunEvent::FleetGitAborted { op, error: Some(error) } => {
            format!("fleet: cannot abort the git {op} the agent left unfinished: {error}")
        }
        RunEvent::LogFile { path } => format!("log: {path}"),
        _ => return None,
    })
}

/// The lines of the chain moving to another agent and back.
fn chain_line(event: &RunEvent) -> Option<String> {
    Some(match event {
        RunEvent::Fallover { from, to, why: FalloverWhy::CoolingDown, .. } => format!(
            "agent {from} failed [retry] agent_attempts times in an earlier iteration and sits out \
             [retry] exhausted_cooldown: starting with {to}"
        ),
        RunEvent::Fallover { from, to, cycle, why, new_cycle } => {
            super::words::fallover(from, to, *why == FalloverWhy::RateLimit, new_cycle.then_some(*cycle))
        }
        RunEvent::Fallback { from, to, .. } => format!("the rate limit of {to} has reset: back from {from} to {to}"),
        _ => return None,
    })
}

/// The lines of what came through the control socket: `ralph stop`, the agent's MCP
/// tools, a lost `ralph mcp`.
fn control_line(event: &RunEvent) -> Option<String> {
    Some(match event {
        RunEvent::StopAfterIteration {} => "ralph stop: stopping after this iteration".to_string(),
        RunEvent::ControlSocketMoved { socket } => {
            format!("the control socket was gone; listening again at {socket}")
        }
        RunEvent::AgentProgress { message, .. } => format!("agent: {message}"),
        RunEvent::AgentCheckpoint { summary, .. } => format!("agent saved a checkpoint: {summary}"),
        RunEvent::AgentInterruption { reason, .. } => format!("agent gave up: {reason}"),
        RunEvent::CompletionDeclared { summary, .. } => format!("agent declared the work complete: {summary}"),
        RunEvent::TaskCancelled { reason, .. } => format!("agent cancelled the task: {reason}"),
        RunEvent::McpLost { restarts, cap, .. } => {
            format!("ralph mcp crashed while the agent ran (restart {restarts} of [retry] mcp_restarts, {cap})")
        }
        _ => return None,
    })
}

/// The lines of git's steps: set-up, commits, what they leave out.
fn git_line(event: &RunEvent) -> Option<String> {
    Some(match event {
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
        RunEvent::GitStaleLockRemoved { path, why } => format!("git: removed {path}: {why}"),
        RunEvent::GitOff { why: GitOffWhy::NotARepository } => "not a git repository: git features are off".into(),
        RunEvent::GitOff { why: GitOffWhy::GitMissing } => "git is not installed: git features are off".into(),
        RunEvent::GitOff { why: GitOffWhy::StartedWithoutGit } => {
            "this run started without git features: they stay off until it ends".into()
        }
        RunEvent::GitBranchCreated { branch } => format!("git: created branch {branch}; ralph commits on it"),
        RunEvent::GitDetached { head } => format!(
            "git: HEAD is detached{}; ralph commits on it (`git branch NAME` keeps the commits)",
            head.as_deref().map(|h| format!(" at {}", short(h))).unwrap_or_default()
        ),
        RunEvent::GitHeld { files } => {
            format!("git: --allow-dirty: {} changed file(s) are left out of every commit", files.len())
        }
        RunEvent::GitChangedWhileStopped { files } => {
            const SHOWN: usize = 20;
            let mut names = files.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
            if files.len() > SHOWN {
                names.push_str(&format!(" and {} more (the journal lists them)", files.len() - SHOWN));
            }
            format!(
                "git: changed while ralph was stopped, so yours: {names}; ralph leaves them out of every commit of \
                 this run (commit them yourself)"
            )
        }
        _ => return None,
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::recovery::Category;
    use crate::supervise::Detector;

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
        assert_eq!(line(&failed, &TimeZone::UTC).as_deref(), Some("attempt 3 failed: the agent stalled"));
        let fallover = RunEvent::Fallover {
            from: "a".into(),
            to: "b".into(),
            cycle: 2,
            why: FalloverWhy::RecoveryAttempts,
            new_cycle: true,
        };
        assert_eq!(
            line(&fallover, &TimeZone::UTC).as_deref(),
            Some(
                "agent a failed [retry] agent_attempts times in this iteration: falling over to b (round 2 through \
                 the chain, of [general] max_cycles)"
            )
        );
        assert_eq!(line(&RunEvent::Retry { delay_ms: 5, resume_session: None }, &TimeZone::UTC), None);
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
    fn what_set_up_says() {
        let s = |s: &str| s.to_string();
        let events = [
            RunEvent::LockStale { pid: Some(41), host: Some(s("box")), started_at: Some(s("2026-01-02T03:04:05Z")) },
            RunEvent::LockStale { pid: None, host: None, started_at: None },
            RunEvent::LockWait { path: s("/p/.agent/ralph.lock"), pid: Some(41), host: Some(s("box")) },
            RunEvent::LeaseWatch { pid: 7, host: s("alpha"), renewals: 3, timeout_ms: 30_000 },
            RunEvent::LeaseLost { host: s("beta") },
            RunEvent::LeaseTakenOver {
                from_host: Some(s("alpha")),
                from_pid: Some(7),
                from_boot_id: Some(s("b")),
                from_renewals: Some(3),
                waited_ms: 31_000,
                why: s("not renewed for 31s"),
            },
            RunEvent::LeftoversEnded { run_id: s("R1"), pids: vec![12, 13] },
            RunEvent::CheckpointArchived { aside: s("/p/.agent/checkpoint.archived-1.json") },
            RunEvent::CheckpointSetAside {
                path: s("/p/.agent/checkpoint.json"),
                aside: s("/p/.agent/checkpoint.corrupt-1.json"),
                problem: s("does not parse (EOF)"),
            },
            RunEvent::CheckpointRestored { path: s("/p/c.json"), why: s("is missing"), seq: 9, run_id: s("R1") },
            RunEvent::ResumeChange { change: s("the goal file changed since this run started") },
            RunEvent::RunMoved { from: s("develop"), to: s("review") },
            RunEvent::Resuming {
                run_id: s("R1"),
                status: Status::Paused,
                phase: s("review"),
                pass: 2,
                passes: Some(3),
                iteration: 1,
                agent_number: 2,
                agent: Some(s("codex")),
                session: Some(s("sess-1")),
            },
            RunEvent::RunSettled { run_id: s("R1"), status: Status::Completed, reason: None, phase: s("develop") },
            RunEvent::RunSettled {
                run_id: s("R1"),
                status: Status::Failed,
                reason: Some(s("max_cycles exhausted")),
                phase: s("develop"),
            },
            RunEvent::SecretInInput { file: s("PROMPT.md"), line: 4, family: s("Stripe") },
            RunEvent::SetupWarning { warning: s("cannot remove old run logs: permission denied") },
            RunEvent::LogFile { path: s("/p/.agent/logs/R1/ralph.log") },
            RunEvent::FleetReopened { eviction: 2, phase: s("develop"), iteration: 4, agent: s("claude") },
            RunEvent::FleetGitAborted { op: s("rebase"), error: None },
            RunEvent::FleetGitAborted { op: s("merge"), error: Some(s("fatal: no merge in progress")) },
            RunEvent::GitOff { why: GitOffWhy::NotARepository },
            RunEvent::GitOff { why: GitOffWhy::GitMissing },
            RunEvent::GitOff { why: GitOffWhy::StartedWithoutGit },
            RunEvent::GitBranchCreated { branch: s("ralph/work") },
            RunEvent::GitDetached { head: Some(s("0123456789abcdef")) },
            RunEvent::GitHeld { files: vec![s("NOTES.md"), s("scratch.txt")] },
            RunEvent::GitChangedWhileStopped { files: vec![s("NOTES.md"), s("agent.sh"), s("scratch.txt")] },
        ];
        let lines: Vec<String> = events.iter().map(|e| line(e, &TimeZone::UTC).unwrap_or_default()).collect();
        insta::assert_snapshot!(lines.join("\n"));
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
            stop(EndWhy::Intervention(Detector::Stall), "SIGINT", Some("SIGTERM")),
            agent_stopped("claude", Some("SIGTERM")),
            killed(Some("claude")),
            killed(None),
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }
}

//! [`RunEvent`]: one typed stream of everything that happens in a run. The dispatcher
//! emits events; subscribers render them: the journal (`events.jsonl`, this enum's one
//! serialisation, `"kind"` the variant's snake_case name), the terminal
//! ([`crate::report::lines`], one match), the tracing log, and the counters that
//! derive from events (the session summary, interventions). Later subscribers (the
//! watchdog's registry, notifications, MCP status) plug in here.
//!
//! Every variant is documented in `docs/operations.md` ("The journal"); a test fails
//! when one is added without its entry. Fields are only ever added, never renamed, so
//! old journals still read.

use serde::Serialize;

use crate::config::CommitMode;
use crate::outcome::{Status, Usage};
use crate::recovery::policy::Cap;
use crate::recovery::{Category, Rule};
use crate::signal::StopCause;
use crate::supervise::Detector;
use crate::supervise::completion::Rule as SignOffRule;
use crate::workflow::done::SignOff;

/// Why the chain moved to another agent, as the journal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FalloverWhy {
    /// The agent used its `agent_attempts` (`recovery-attempt exhausted`).
    RecoveryAttempts,
    /// The agent is rate-limited and `on_rate_limit = "fallover"`.
    RateLimit,
    /// A phase would start with an agent that spent its whole budget within
    /// `[retry] exhausted_cooldown`: the next member of the chain starts instead.
    CoolingDown,
}

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub(crate) enum RunEvent {
    RunStarted {
        run_id: String,
        pid: u32,
        /// `--from PHASE`, when given.
        from: Option<String>,
        phase: String,
        pass: u32,
    },
    RunResumed {
        run_id: String,
        pid: u32,
        from: Option<String>,
        phase: String,
        pass: u32,
    },
    /// ralph's own failure ended the run (exit 4); the checkpoint keeps the last
    /// valid state.
    RunError {
        error: String,
    },
    /// A stop signal arrived: the user's intent (or the shutdown) is recorded
    /// before the agent is ended.
    StopRequested {
        signal: String,
    },
    RunEnded {
        status: Status,
        reason: Option<String>,
        stop_cause: Option<StopCause>,
    },
    AttemptStarted {
        attempt: u32,
        phase: String,
        /// 1-based position of the phase in the workflow, and the number of phases.
        phase_number: usize,
        phase_count: usize,
        iteration: u32,
        /// The phase's iteration count (or cap, with `until = "complete"`).
        iterations: u32,
        /// The pass through the repeating review/fix group (1 outside it).
        pass: u32,
        /// The group's passes at most, inside the group.
        passes: Option<u32>,
        agent: String,
        cycle: u32,
        resume_session: Option<String>,
        /// Names only: what the agent did not get from ralph's environment.
        env_withheld: Vec<String>,
    },
    AttemptSucceeded {
        attempt: u32,
        agent: String,
        phase: String,
        iteration: u32,
        /// The goal signal (`until = "complete"` is satisfied), not only the done signal.
        goal: bool,
        /// The phase repeats until the goal signal (so the goal ends it).
        until_complete: bool,
        /// The phase is the review of a repeating group (the goal tag then means
        /// "nothing left to fix").
        review: bool,
        duration_ms: u64,
        session: Option<String>,
        usage: Usage,
        /// How the agent exited when that was not cleanly (`"status 1"`, `"SIGSEGV"`):
        /// it crashed on its way out after a done tag the judge accepted.
        exit: Option<String>,
    },
    AttemptFailed {
        attempt: u32,
        agent: String,
        category: Category,
        rule: Rule,
        reason: String,
        session: Option<String>,
        /// The end of the agent's output, redacted.
        evidence: String,
        duration_ms: u64,
        usage: Usage,
    },
    /// What the completion judge made of a sign-off it did not simply accept:
    /// rejected (a denial), asked to confirm (a doubt, with a session to ask), or
    /// accepted with the doubt on record (no session to ask).
    Signoff {
        attempt: u32,
        verdict: SignOff,
        rule: SignOffRule,
        words: String,
    },
    /// The attempt ended without an outcome of its own: a stop signal ended it
    /// (`signal`: Ctrl+C, SIGTERM, SIGHUP; its session continues on resume), or the
    /// ralph running it died (`signal` null, journaled by the ralph that resumes).
    AttemptInterrupted {
        attempt: u32,
        agent: String,
        session: Option<String>,
        started_at: Option<String>,
        signal: Option<String>,
    },
    /// This ralph took the run directory's lease over from a ralph on another host
    /// (or one that died on this host) after it went unrenewed.
    LeaseTakenOver {
        from_host: Option<String>,
        from_pid: Option<u32>,
        from_boot_id: Option<String>,
        from_renewals: Option<u64>,
        waited_ms: u64,
        why: String,
    },
    /// One of ralph's detectors stepped in (stall, loop, tool text, storm, nudge…).
    Intervention {
        detector: Detector,
        evidence: String,
    },
    IterationStarted {
        phase: String,
        iteration: u32,
    },
    PhaseDone {
        phase: String,
    },
    /// A review of the repeating group ended: clean, or issues for the fix.
    ReviewVerdict {
        pass: u32,
        passes: u32,
        clean: bool,
    },
    /// Back to the review for the next pass.
    PassStarted {
        pass: u32,
        passes: u32,
    },
    /// The repeating group was left; `why` is `clean` or `passes_used`.
    PassesEnded {
        passes_run: u32,
        passes: u32,
        clean: bool,
        why: String,
    },
    /// The same agent is tried again after `delay_ms`.
    Retry {
        delay_ms: u64,
        resume_session: Option<String>,
    },
    Fallover {
        from: String,
        to: String,
        cycle: u32,
        why: FalloverWhy,
        /// The chain wrapped around: a new cycle began.
        new_cycle: bool,
    },
    /// Back to an agent whose rate limit has reset.
    Fallback {
        from: String,
        to: String,
        why: String,
    },
    /// Waiting for a reported rate-limit reset: `reset` as the provider reported it,
    /// `until` with ralph's margin (unix seconds).
    RateLimitWait {
        until: i64,
        reset: i64,
        reason: String,
    },
    /// The providers are unreachable: the run pauses (unix seconds).
    Offline {
        since: i64,
        endpoints: Vec<String>,
        error: String,
    },
    Online {},
    /// The disk had no room for the checkpoint or the journal: the run waits (an
    /// outage, not a failure); `free` as the file system reported it.
    DiskFull {
        path: String,
        free: String,
    },
    /// Space is back: the waiting writes went through and the run continues.
    DiskSpaceBack {
        path: String,
    },
    /// A new run's git baseline (docs/git.md).
    GitBaseline {
        top: String,
        baseline: Option<String>,
        branch: Option<String>,
        /// Files dirty at the start (`--allow-dirty`), never committed.
        held: Vec<String>,
        commit: Option<CommitMode>,
    },
    /// ralph committed an iteration's work, or found on resume the commit it made.
    GitCommit {
        hash: String,
        /// `phase/iteration[/pass]`, the `Ralph-Iteration:` trailer.
        key: String,
        files: u32,
        insertions: u32,
        deletions: u32,
        found_on_resume: bool,
    },
    /// A changed file left out of the commit; `reason` is the rule's key.
    GitLeftOut {
        key: String,
        path: String,
        reason: String,
        detail: String,
    },
    GitNothingToCommit {
        key: String,
    },
    /// HEAD moved since ralph last committed: the agent (or someone) committed.
    GitAgentCommitted {
        key: String,
        from: Option<String>,
        to: String,
        commits: Vec<String>,
    },
    /// A git hook rejected the commit: an agent failure of the iteration.
    GitCommitRejected {
        key: String,
        /// The hook's output, redacted, at most 4000 characters.
        output: String,
    },
    /// git failed otherwise; the run is blocked with the commit pending.
    GitError {
        key: String,
        error: String,
    },
    /// A git lock file no process owned (left by a killed git) was removed.
    GitStaleLockRemoved {
        path: String,
        /// Why the rule called it stale (docs/git.md).
        why: String,
    },
    /// A cap or budget ran out; the run stops `failed`.
    CapReached {
        cap: Cap,
        /// The config key that sets it (`[general] max_cycles`).
        key: String,
        /// Its stable phrase (docs/recovery.md), which also starts the message.
        phrase: String,
        message: String,
    },
    /// `ralph stop` asked the run to stop `paused` after the current iteration.
    StopAfterIteration {},
    /// The agent's `report_progress` (MCP): a heartbeat with a message.
    AgentProgress {
        attempt: u32,
        message: String,
    },
    /// The agent's `save_checkpoint` (MCP): verified progress, used in later
    /// recovery notes.
    AgentCheckpoint {
        attempt: u32,
        summary: String,
        files_touched: Vec<String>,
        steps_done: Vec<String>,
        next_steps: Vec<String>,
    },
    /// The agent's `report_interruption` (MCP): it gives up on this attempt.
    AgentInterruption {
        attempt: u32,
        reason: String,
    },
    /// The agent's `declare_complete` (MCP), with its evidence.
    CompletionDeclared {
        attempt: u32,
        summary: String,
        evidence: String,
        goal_complete: bool,
    },
    /// The agent's `cancel_task` (MCP): the run stops `blocked`.
    TaskCancelled {
        attempt: u32,
        reason: String,
    },
    /// `ralph mcp` closed its session without shutting down while the agent ran:
    /// `restarts` of `cap` (`[retry] mcp_restarts`) used.
    McpLost {
        attempt: u32,
        restarts: u32,
        cap: u32,
    },
    /// The previous ralph here died without releasing the lock: its run was
    /// interrupted. Who it was, as the lock file says (all null when it does not parse).
    LockStale {
        pid: Option<u32>,
        host: Option<String>,
        started_at: Option<String>,
    },
    /// Another ralph of this host holds the lock; `--resume-or-start` waits for it.
    LockWait {
        path: String,
        pid: Option<u32>,
        host: Option<String>,
    },
    /// Another host's ralph holds the lease of the run directory: it is taken over
    /// only after `timeout_ms` without a renewal.
    LeaseWatch {
        pid: u32,
        host: String,
        renewals: u64,
        timeout_ms: u64,
    },
    /// Another host took the lease at the same moment as this ralph; it continues.
    LeaseLost {
        host: String,
    },
    /// Processes the interrupted run left behind (found by its run id) were ended.
    LeftoversEnded {
        run_id: String,
        pids: Vec<i32>,
    },
    /// `--no-resume` (or the answer "new") archived the previous checkpoint.
    CheckpointArchived {
        aside: String,
    },
    /// `--no-resume` found a checkpoint it cannot use and kept it aside.
    CheckpointSetAside {
        path: String,
        aside: String,
        problem: String,
    },
    /// `checkpoint.json` was older than the journal's last snapshot (or missing or
    /// torn): the snapshot was put in its place.
    CheckpointRestored {
        path: String,
        why: String,
        seq: u64,
        run_id: String,
    },
    /// What changed since the checkpoint was written, and what the resume does
    /// about it.
    ResumeChange {
        change: String,
    },
    /// `--resume --from PHASE` moved the run.
    RunMoved {
        from: String,
        to: String,
    },
    /// Where a resumed run continues.
    Resuming {
        run_id: String,
        status: Status,
        phase: String,
        pass: u32,
        passes: Option<u32>,
        iteration: u32,
        /// The agent's place in the chain, from 1.
        agent_number: usize,
        /// The agent's name, when the chain still has that place.
        agent: Option<String>,
        session: Option<String>,
    },
    /// `--resume-or-start` leaves a finished, paused, failed or blocked run as it is
    /// (shown only: no run starts).
    RunSettled {
        run_id: String,
        status: Status,
        reason: Option<String>,
        /// The phase it stopped in (a cap of iterations is that phase's key).
        phase: String,
    },
    /// The goal file or the config holds what looks like a credential (where, never
    /// the value): the agent gets the file as written, ralph hides it everywhere.
    SecretInInput {
        file: String,
        line: usize,
        family: String,
    },
    /// Something set-up could not do that does not stop the run.
    SetupWarning {
        warning: String,
    },
    /// ralph's own log (with `-v`).
    LogFile {
        path: String,
    },
    /// Git features are off for this run, and why.
    GitOff {
        why: GitOffWhy,
    },
    /// `[git] branch` did not exist: ralph created it and commits on it.
    GitBranchCreated {
        branch: String,
    },
    /// HEAD is detached at the start of a new run: ralph commits on it.
    GitDetached {
        head: Option<String>,
    },
    /// `--allow-dirty`: the files changed at the start are never committed.
    GitHeld {
        files: Vec<String>,
    },
    /// A resume after an orderly stop: these files were changed by a person while
    /// ralph was stopped; they are never committed in this run.
    GitChangedWhileStopped {
        files: Vec<String>,
    },
    /// Before an attempt the control socket was gone (a cleaner of the temp dir) and
    /// is bound anew at `socket`.
    ControlSocketMoved {
        socket: String,
    },
    /// A fleet task's completed run is reopened by the merge queue's eviction
    /// `eviction` (docs/fleet.md): one more iteration of its last phase.
    FleetReopened {
        eviction: u32,
        phase: String,
        iteration: u32,
        agent: String,
    },
    /// A fleet task's worktree held a git operation (`rebase`, `merge`,
    /// `cherry-pick`) its agent left unfinished: aborted (`error`: it could not be).
    FleetGitAborted {
        op: String,
        error: Option<String>,
    },
    /// A fleet task waits for a rate-limit reset another task learned for the same
    /// provider (unix seconds).
    FleetSharedReset {
        until: i64,
        provider: String,
        learned_by: String,
    },
}

impl RunEvent {
    /// The journal's `"kind"` of this event: its variant's name in snake_case, as
    /// serde writes it (the journal needs it as a `&'static str`).
    pub(crate) fn kind(&self) -> &'static str {
        self.into()
    }
}

/// Why git features are off for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GitOffWhy {
    NotARepository,
    GitMissing,
    /// A resumed run that started without them (its baseline would not be its start).
    StartedWithoutGit,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rel: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The variant names declared in this file's enum, in snake_case.
    fn declared_kinds() -> Vec<String> {
        let source = read("src/events.rs");
        let body =
            source.split("pub(crate) enum RunEvent {").nth(1).and_then(|rest| rest.split("\n}\n").next()).unwrap_or("");
        body.lines()
            .filter_map(|l| l.strip_prefix("    ").filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase())))
            .map(|l| {
                let name: String = l.chars().take_while(char::is_ascii_alphanumeric).collect();
                let mut snake = String::new();
                for (i, c) in name.chars().enumerate() {
                    if c.is_ascii_uppercase() && i > 0 {
                        snake.push('_');
                    }
                    snake.push(c.to_ascii_lowercase());
                }
                snake
            })
            .collect()
    }

    #[test]
    fn every_variant_is_documented_in_the_journal_schema() {
        let docs = read("docs/operations.md");
        let kinds = declared_kinds();
        assert!(kinds.len() >= 20, "{kinds:?}");
        let missing: Vec<_> = kinds.iter().filter(|k| !docs.contains(&format!("| `{k}` |"))).collect();
        assert!(missing.is_empty(), "journal kinds without a row in docs/operations.md: {missing:?}");
    }

    /// The kinds are a format (the journal, `--json`): pinned, and serde's names
    /// (the variants' in snake_case, as `declared_kinds` spells them) are strum's.
    #[test]
    fn the_journal_kinds_are_as_before() {
        use strum::VariantNames;
        assert_eq!(RunEvent::VARIANTS, declared_kinds());
        insta::assert_snapshot!(RunEvent::VARIANTS.join("\n"));
    }

    #[test]
    fn the_serialised_kind_is_the_kind_name() {
        let events = [
            RunEvent::Online {},
            RunEvent::PhaseDone { phase: "plan".into() },
            RunEvent::Fallover {
                from: "a".into(),
                to: "b".into(),
                cycle: 2,
                why: FalloverWhy::RecoveryAttempts,
                new_cycle: true,
            },
            RunEvent::CapReached {
                cap: Cap::MaxCycles,
                key: "[general] max_cycles".into(),
                phrase: "max_cycles exhausted".into(),
                message: "max_cycles exhausted".into(),
            },
        ];
        for e in events {
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(v["kind"], e.kind(), "{v}");
            assert!(declared_kinds().iter().any(|k| k == e.kind()));
        }
        let v = serde_json::to_value(RunEvent::Fallover {
            from: "a".into(),
            to: "b".into(),
            cycle: 2,
            why: FalloverWhy::RateLimit,
            new_cycle: false,
        })
        .unwrap();
        assert_eq!(v["why"], "rate_limit");
    }
}

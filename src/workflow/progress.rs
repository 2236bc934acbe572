//! Where a run stands: phase, iteration, chain position, cycle and every budget
//! counter. It is the part of the checkpoint that the decision core reads and
//! changes; the shell only stores it.
//!
//! The floor under `advance`: the phase-boundary decisions take and give these
//! types (the review's [`Verdict`] too), and nothing here imports them back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::AgentKind;
use crate::outcome::Category;

/// The review's verdict in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Verdict {
    /// The pass the review ran in, from 1.
    pub pass: u32,
    /// The group's passes at most.
    pub passes: u32,
    /// The review found nothing left to fix.
    pub clean: bool,
}

impl Verdict {
    /// One line for `status`, the summary and the journal's readers.
    pub(crate) fn describe(&self) -> String {
        let Verdict { pass, passes, clean } = *self;
        match (clean, pass >= passes) {
            (true, _) => format!("clean in pass {pass} of {passes}"),
            (false, true) if passes == 1 => "the only pass used; the review still had issues".to_string(),
            (false, true) => format!("all {passes} passes used; the last review still had issues"),
            (false, false) => format!("pass {pass} of {passes} found issues; the fix follows"),
        }
    }
}

/// The point in the workflow the next attempt belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Position {
    /// Index into the configured phase order.
    pub phase: usize,
    /// The phase's name, so a resume can tell when the order changed.
    pub phase_name: String,
    /// The current iteration of the phase, from 1.
    pub iteration: u32,
    /// The current pass through the repeating group (`[general.workflow] repeat`),
    /// from 1; 1 outside the group.
    pub pass: u32,
    /// The group's passes at most, while the position is inside the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u32>,
    /// Index of the current agent in the phase's chain.
    pub agent_index: usize,
    /// The current pass through the chain, from 1; bounded by `max_cycles`.
    pub cycle: u32,
    /// The phase's chain when this was written: the agent at `agent_index` owns
    /// `resume_session`, and a resume under a changed chain can tell (empty in
    /// checkpoints written before it was recorded).
    #[serde(default)]
    pub chain: Vec<ChainAgent>,
}

/// One agent of a chain, as the checkpoint records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChainAgent {
    pub name: String,
    pub kind: AgentKind,
}

/// Counters that survive a resume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counters {
    /// Attempts started in the whole run.
    pub attempts: u32,
    /// Iterations completed in the whole run.
    pub iterations_done: u32,
    /// `agent` failures of the current agent in the current iteration.
    pub agent_failures: u32,
    /// `ambiguous` failures in the current iteration.
    pub ambiguous_failures: u32,
    /// Consecutive failures that were retried with backoff (drives the delay).
    pub retry_streak: u32,
    /// Tool-registry resets in the current iteration.
    pub tool_registry_resets: u32,
    /// Crashes of `ralph mcp` while its agent ran, in the current iteration.
    pub mcp_restarts: u32,
    /// Failures by category in the whole run.
    pub failures: BTreeMap<Category, u32>,
    /// Fallovers in the whole run.
    pub fallovers: u32,
    /// Confirmation questions asked in the current iteration (at most one: a doubtful
    /// tag or a claim in words is asked about once, at no budget). The name on disk
    /// is that of the done-claim nudge it replaced.
    #[serde(default, rename = "done_claims")]
    pub confirmations: u32,
    /// ralph's interventions in the whole run, by detector.
    #[serde(default)]
    pub interventions: BTreeMap<String, u32>,
}

/// Where the run stands; stored in the checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Progress {
    pub position: Position,
    pub counters: Counters,
    /// The session to resume in the next attempt; `None` starts a fresh session.
    pub resume_session: Option<String>,
    /// The last session id each agent reported.
    pub sessions: BTreeMap<String, String>,
    /// Launches of each agent in the run (selects a scripted agent's script).
    pub launches: BTreeMap<String, u32>,
    /// Why the previous attempt of this iteration failed, for the recovery note.
    pub recovery_note: Option<String>,
    /// Unix seconds until which the run waits for a rate-limit reset before the next
    /// attempt; a restart during the wait keeps waiting.
    pub rate_limit_until: Option<i64>,
    /// Agents left because of a rate limit, with the unix second their limit resets;
    /// the chain returns to them afterwards.
    #[serde(default)]
    pub cooldowns: BTreeMap<String, i64>,
    /// Agents that spent their whole `agent_attempts` in an iteration, with the unix
    /// second their cool-down ends (`[retry] exhausted_cooldown`): until then a phase
    /// that would start with one starts with the next member of its chain.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exhausted: BTreeMap<String, i64>,
    /// Unix seconds of the recoveries of the current iteration (continue storms).
    #[serde(default)]
    pub recoveries: Vec<i64>,
    /// Unix second since which the providers have been unreachable (the offline
    /// pause); a restart during the pause keeps probing before any attempt.
    pub offline_since: Option<i64>,
    /// Input and output tokens counted per session, for agents that report usage as
    /// a running total over a session (Codex): a resumed launch starts from these.
    #[serde(default)]
    pub session_tokens: BTreeMap<String, (u64, u64)>,
    /// The verdict of the latest review of the repeating group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Verdict>,
    /// Set when the run was started at a later phase (`ralph --from`): which earlier
    /// results were reused from the last run, for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<FromStart>,
    /// The open streak of environmental failures, bounded by `[retry]
    /// max_environmental_wait`; `None` after any other ending of an attempt.
    pub environmental_streak: Option<EnvironmentalStreak>,
}

/// A run started at a later phase with `ralph --from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FromStart {
    /// The phase the run started at.
    pub phase: String,
    /// Earlier phases whose result from the last run is used.
    pub reused: Vec<String>,
    /// Earlier phases with no result on disk.
    pub missing: Vec<String>,
}

/// An unbroken run of environmental failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EnvironmentalStreak {
    /// Unix second of the streak's first failure.
    pub since: i64,
    /// Seconds of it spent in offline pauses and rate-limit waits, which have bounds
    /// of their own and do not count.
    pub excluded_secs: i64,
}

impl Progress {
    /// Time spent waiting for the network or a rate-limit reset does not count
    /// against the environmental streak.
    pub(crate) fn exclude_from_streak(&mut self, secs: i64) {
        if let Some(streak) = self.environmental_streak.as_mut() {
            streak.excluded_secs = streak.excluded_secs.saturating_add(secs.max(0));
        }
    }

    /// Everything that belongs to one iteration starts afresh: its budgets, its
    /// session, its recovery note, its storm window and environmental streak. One
    /// place, so a new iteration-scoped field is reset wherever an iteration begins.
    pub(crate) fn start_iteration(&mut self) {
        let c = &mut self.counters;
        c.agent_failures = 0;
        c.ambiguous_failures = 0;
        c.retry_streak = 0;
        c.confirmations = 0;
        // Per iteration, like the other budgets: a long night's unrelated incidents
        // in different iterations do not add up to a cap.
        c.tool_registry_resets = 0;
        c.mcp_restarts = 0;
        self.environmental_streak = None;
        self.resume_session = None;
        self.recovery_note = None;
        self.recoveries.clear();
    }

    /// A failed or blocked run resumed after a person fixed something: the
    /// iteration's budgets start afresh, and so does the chain's cycle; its session
    /// and recovery note are kept for the resumed attempt, and the run's totals stay.
    pub(crate) fn renew_budgets(&mut self) {
        let (session, note) = (self.resume_session.take(), self.recovery_note.take());
        self.start_iteration();
        (self.resume_session, self.recovery_note) = (session, note);
        self.position.cycle = 1;
    }

    /// Counts an attempt's tokens to its session, and forgets the sessions no later
    /// attempt can resume (only the last session of each agent and the one to resume
    /// next), so the checkpoint stays bounded however many launches a run makes.
    pub(crate) fn add_session_tokens(&mut self, session: &str, input: u64, output: u64) {
        let tokens = self.session_tokens.entry(session.to_string()).or_default();
        tokens.0 += input;
        tokens.1 += output;
        let (sessions, resume) = (&self.sessions, &self.resume_session);
        self.session_tokens
            .retain(|s, _| s == session || resume.as_deref() == Some(s.as_str()) || sessions.values().any(|v| v == s));
    }

    /// The start of a run whose first phase is `first_phase`.
    pub(crate) fn new(first_phase: &str) -> Self {
        let position =
            Position { phase_name: first_phase.to_string(), iteration: 1, pass: 1, cycle: 1, ..Position::default() };
        Self { position, ..Self::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_tokens_stay_bounded_over_many_launches() {
        let mut p = Progress::new("develop");
        for n in 0..1000 {
            let session = format!("s{n}");
            p.sessions.insert(format!("agent{}", n % 3), session.clone());
            p.add_session_tokens(&session, 10, 1);
            p.add_session_tokens(&session, 10, 1);
        }
        assert_eq!(p.session_tokens.len(), 3, "{:?}", p.session_tokens.keys());
        assert_eq!(p.session_tokens.get("s999"), Some(&(20, 2)));
        // The session a resume will continue keeps its running total.
        p.resume_session = Some("s997".into());
        p.sessions.insert("agent0".into(), "s1000".into());
        p.add_session_tokens("s1000", 1, 1);
        assert!(p.session_tokens.contains_key("s997"));
    }

    #[test]
    fn renewed_budgets_keep_the_session_and_the_note() {
        let mut p = Progress::new("develop");
        let c = &mut p.counters;
        (c.agent_failures, c.ambiguous_failures, c.retry_streak, c.confirmations) = (3, 2, 4, 1);
        (c.tool_registry_resets, c.mcp_restarts, c.attempts) = (1, 2, 9);
        (p.position.cycle, p.resume_session, p.recovery_note) = (3, Some("s1".into()), Some("note".into()));
        p.renew_budgets();
        let c = &p.counters;
        let budgets = [c.agent_failures, c.ambiguous_failures, c.retry_streak, c.confirmations, c.tool_registry_resets];
        assert_eq!((budgets, c.mcp_restarts, p.position.cycle, c.attempts), ([0; 5], 0, 1, 9));
        assert_eq!((p.resume_session.as_deref(), p.recovery_note.as_deref()), (Some("s1"), Some("note")));
    }
}

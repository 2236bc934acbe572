//! The clock of an attempt: stall (no event while no tool runs), the active-tool
//! guard (a started tool gets the longer tool timeout instead), and the attempt's
//! own wall-clock limit. ralph owns this clock because every agent CLI has network
//! failures in which it would wait for minutes or forever.

use std::collections::BTreeMap;

use tokio::time::{Duration, Instant};

use super::detector::Detector;
use crate::agent::AgentEvent;
use crate::config::Timeouts;

/// The limits one attempt runs under: the configured ones, where an agent whose tool
/// calls run unseen (`quiet_tools`) has its silence bounded by the tool limit, never
/// by the stall limit (a long build is not a stall), and no attempt runs past what
/// is left of the run's own time limit.
pub(crate) fn attempt_limits(timeouts: &Timeouts, quiet_tools: bool, runtime_left: Option<Duration>) -> Timeouts {
    let mut limits = timeouts.clone();
    if quiet_tools {
        limits.stall = limits.stall.max(limits.tool);
    }
    if let Some(left) = runtime_left {
        limits.attempt = limits.attempt.min(left);
    }
    limits
}

/// The timers of one attempt.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    stall: Duration,
    tool: Duration,
    attempt_deadline: Instant,
    last_event: Instant,
    /// Tool calls started and not finished, by id, with their start.
    tools_in_flight: BTreeMap<String, Instant>,
}

impl Watch {
    pub(crate) fn new(timeouts: &Timeouts, now: Instant) -> Self {
        Self {
            stall: timeouts.stall,
            tool: timeouts.tool,
            attempt_deadline: now + timeouts.attempt,
            last_event: now,
            tools_in_flight: BTreeMap::new(),
        }
    }

    /// Any output line resets the silence timer; tool events open and close the
    /// active-tool guard.
    pub(crate) fn on_event(&mut self, event: Option<&AgentEvent>, now: Instant) {
        self.last_event = now;
        match event {
            Some(AgentEvent::ToolStarted { id, .. }) => {
                self.tools_in_flight.insert(id.clone(), now);
            }
            Some(AgentEvent::ToolFinished { id, .. }) => {
                self.tools_in_flight.remove(id);
            }
            // A final result means no tool is still running in this session.
            Some(AgentEvent::Result { .. }) => self.tools_in_flight.clear(),
            _ => {}
        }
    }

    /// When the attempt must be ended if nothing happens before, and why.
    pub(crate) fn deadline(&self) -> (Instant, Detector) {
        let silence = match self.tools_in_flight.values().min() {
            Some(oldest) => (*oldest + self.tool, Detector::ToolTimeout),
            None => (self.last_event + self.stall, Detector::Stall),
        };
        if self.attempt_deadline <= silence.0 { (self.attempt_deadline, Detector::AttemptTimeout) } else { silence }
    }

    /// The attempt was suspended (Ctrl+Z) for `paused`: every clock moves on by
    /// that much, so time stopped counts neither as silence nor as attempt time.
    pub(crate) fn pause(&mut self, paused: Duration) {
        self.attempt_deadline += paused;
        self.last_event += paused;
        for started in self.tools_in_flight.values_mut() {
            *started += paused;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::timeouts;

    #[test]
    fn quiet_tools_bound_silence_by_the_tool_limit() {
        let t = timeouts();
        assert_eq!(attempt_limits(&t, false, None).stall, t.stall);
        let quiet = attempt_limits(&t, true, None);
        assert_eq!((quiet.stall, quiet.tool), (t.tool, t.tool));
        // A tool limit below the stall limit never shortens the silence allowed.
        let short_tool = Timeouts { tool: Duration::from_secs(10), ..timeouts() };
        assert_eq!(attempt_limits(&short_tool, true, None).stall, t.stall);
    }

    #[test]
    fn no_attempt_outlasts_the_run() {
        let t = timeouts();
        assert_eq!(attempt_limits(&t, false, None).attempt, t.attempt);
        assert_eq!(attempt_limits(&t, false, Some(Duration::from_secs(5))).attempt, Duration::from_secs(5));
        assert_eq!(attempt_limits(&t, false, Some(Duration::from_secs(86_400))).attempt, t.attempt);
    }

    #[tokio::test(start_paused = true)]
    async fn time_suspended_counts_for_no_clock() {
        let t0 = Instant::now();
        let mut w = Watch::new(&timeouts(), t0);
        w.on_event(Some(&started("t1")), t0);
        let before = w.deadline();
        w.pause(Duration::from_secs(900));
        assert_eq!(w.deadline(), (before.0 + Duration::from_secs(900), before.1));
        let mut quiet = Watch::new(&timeouts(), t0);
        quiet.pause(Duration::from_secs(30));
        assert_eq!(quiet.deadline(), (t0 + Duration::from_secs(90), Detector::Stall));
    }

    fn started(id: &str) -> AgentEvent {
        AgentEvent::ToolStarted {
            id: id.into(),
            name: "Bash".into(),
            input: serde_json::json!({"command": "cargo build"}),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn every_event_resets_the_stall_timer() {
        let t0 = Instant::now();
        let mut w = Watch::new(&timeouts(), t0);
        assert_eq!(w.deadline(), (t0 + Duration::from_secs(60), Detector::Stall));
        tokio::time::advance(Duration::from_secs(50)).await;
        let t1 = Instant::now();
        w.on_event(Some(&AgentEvent::Text { text: "hi".into() }), t1);
        assert_eq!(w.deadline(), (t1 + Duration::from_secs(60), Detector::Stall));
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_tool_gets_the_tool_timeout_not_the_stall() {
        let t0 = Instant::now();
        let mut w = Watch::new(&timeouts(), t0);
        w.on_event(Some(&started("t1")), t0);
        assert_eq!(w.deadline(), (t0 + Duration::from_secs(600), Detector::ToolTimeout));
        let t1 = t0 + Duration::from_secs(300);
        w.on_event(Some(&AgentEvent::ToolFinished { id: "t1".into(), is_error: false, output: String::new() }), t1);
        assert_eq!(w.deadline(), (t1 + Duration::from_secs(60), Detector::Stall));
    }

    #[tokio::test(start_paused = true)]
    async fn the_attempt_limit_bounds_everything() {
        let t0 = Instant::now();
        let mut w = Watch::new(&timeouts(), t0);
        let late = t0 + Duration::from_secs(3590);
        w.on_event(Some(&started("t1")), late);
        assert_eq!(w.deadline(), (t0 + Duration::from_secs(3600), Detector::AttemptTimeout));
    }
}

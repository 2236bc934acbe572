//! One attempt's supervisor: feeds every event to the clock ([`Watch`]), the
//! tool-call loop detector and the tool-text detector, remembers the last tool call
//! and whether its result came, and says when ralph must step in. Pure: events and
//! instants in, an [`Intervention`] out.

use serde_json::Value;
use tokio::time::Instant;

use super::ended_by::EndedBy;
use crate::agent::AgentEvent;
use crate::config::Timeouts;

use super::denials::Denials;
use super::detector::Detector;
use super::loops::LoopDetector;
use super::note::{LastTool, ToolState};
use super::{Watch, tool_text};

/// ralph ends the attempt, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intervention {
    /// The detector that fired, for the journal and the summary.
    pub detector: Detector,
    /// What it saw (redacted by the journal).
    pub evidence: String,
}

impl Intervention {
    /// Who ended the attempt: ralph, for the reason the detector names.
    pub fn ended_by(&self) -> EndedBy {
        EndedBy::fired(self.detector)
    }

    /// ralph's own clock ran out: the stall, tool or attempt limit of `timeouts`, as
    /// [`Watch::deadline`] named it.
    pub fn clock(detector: Detector, timeouts: &Timeouts) -> Intervention {
        let fmt = |d| humantime::format_duration(d).to_string();
        let (detector, evidence) = match detector {
            Detector::ToolTimeout => (detector, format!("a tool call ran longer than {}", fmt(timeouts.tool))),
            Detector::AttemptTimeout => (detector, format!("the attempt ran longer than {}", fmt(timeouts.attempt))),
            _ => (Detector::Stall, format!("no output for {} and no tool running", fmt(timeouts.stall))),
        };
        Intervention { detector, evidence }
    }
}

pub struct Supervisor {
    /// The attempt's clocks: when it must end if nothing happens before, and why.
    pub(crate) watch: Watch,
    loops: LoopDetector,
    denials: Denials,
    /// What the run may still spend (`max_cost_usd` minus the cost so far), and what
    /// this attempt reported so far, for kinds that report cost while they run.
    cost_left: Option<f64>,
    cost: f64,
    /// The last tool call: its id, and what the recovery note says about it.
    last_tool: Option<(String, LastTool)>,
}

impl Supervisor {
    pub fn new(timeouts: &Timeouts, now: Instant) -> Self {
        Self {
            watch: Watch::new(timeouts, now),
            loops: LoopDetector::default(),
            denials: Denials::default(),
            cost_left: None,
            cost: 0.0,
            last_tool: None,
        }
    }

    /// Ends the attempt once the cost it reports reaches `left` (the rest of
    /// `[general] max_cost_usd`).
    #[must_use]
    pub fn with_cost_left(mut self, left: Option<f64>) -> Self {
        self.cost_left = left;
        self
    }

    /// Takes in one output line's event (`None` for output that is not an event).
    #[must_use]
    pub fn on_event(&mut self, event: Option<&AgentEvent>, now: Instant) -> Option<Intervention> {
        self.watch.on_event(event, now);
        let event = event?;
        if let Some(evidence) = self.denials.on_event(event) {
            return Some(ralph(Detector::PermissionDenials, evidence));
        }
        match event {
            AgentEvent::ToolStarted { id, name, input } => {
                self.last_tool = Some((
                    id.clone(),
                    LastTool { name: name.clone(), input_summary: summarize(input), state: ToolState::StartedNoResult },
                ));
                self.loops.on_tool_call(name, input).map(|found| ralph(Detector::ToolCallLoop, found.description))
            }
            AgentEvent::ToolFinished { id, .. } => {
                if let Some((last_id, tool)) = self.last_tool.as_mut()
                    && last_id == id
                {
                    tool.state = ToolState::Finished;
                }
                None
            }
            AgentEvent::Text { text } => {
                tool_text::detect(text).map(|found| ralph(Detector::ToolText, found.evidence()))
            }
            AgentEvent::Thinking { text } => {
                tool_text::detect_in_thinking(text).map(|found| ralph(Detector::ToolTextInThinking, found.evidence()))
            }
            AgentEvent::Usage { cost_usd: Some(cost), .. } => {
                self.cost += cost;
                let left = self.cost_left?;
                (self.cost >= left).then(|| {
                    ralph(
                        Detector::CostCap,
                        format!(
                            "the attempt reported ${:.2} while the run had ${left:.2} left of [general] max_cost_usd",
                            self.cost
                        ),
                    )
                })
            }
            _ => None,
        }
    }

    /// The last tool call and whether its result was seen.
    pub fn last_tool(&self) -> Option<LastTool> {
        self.last_tool.as_ref().map(|(_, tool)| tool.clone())
    }
}

/// ralph steps in: `detector` saw `evidence`.
fn ralph(detector: Detector, evidence: String) -> Intervention {
    Intervention { detector, evidence }
}

/// A short, single-line form of a tool's input for the recovery note.
fn summarize(input: &Value) -> String {
    let text = match input {
        Value::Object(map) => {
            // The usual "what" of a call: a command, a path, a pattern.
            ["command", "file_path", "path", "filePath", "pattern", "url", "query"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str))
                .map_or_else(|| input.to_string(), str::to_string)
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    super::completion::one_line(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::testkit::timeouts;

    fn call(id: &str, name: &str, input: Value) -> AgentEvent {
        AgentEvent::ToolStarted { id: id.into(), name: name.into(), input }
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_call_three_times_is_a_loop() {
        let now = Instant::now();
        let mut s = Supervisor::new(&timeouts(), now);
        let input = json!({"file_path": "src/lib.rs"});
        assert_eq!(s.on_event(Some(&call("1", "Read", input.clone())), now), None);
        assert_eq!(s.on_event(Some(&call("2", "Read", input.clone())), now), None);
        let hit = s.on_event(Some(&call("3", "Read", input)), now).expect("loop");
        assert_eq!((hit.ended_by(), hit.detector), (EndedBy::Ralph(Detector::ToolCallLoop), Detector::ToolCallLoop));
    }

    #[tokio::test(start_paused = true)]
    async fn tool_text_in_message_and_in_thinking_are_told_apart() {
        let now = Instant::now();
        let mut s = Supervisor::new(&timeouts(), now);
        let text = "I will now edit the file.\n<function=edit>\n<parameter=path>src/main.rs</parameter>\n</function>";
        let hit = s.on_event(Some(&AgentEvent::Text { text: text.into() }), now).expect("tool text");
        assert_eq!(hit.ended_by(), EndedBy::Ralph(Detector::ToolText));
        let hit = s.on_event(Some(&AgentEvent::Thinking { text: text.into() }), now).expect("thinking");
        assert_eq!(hit.ended_by(), EndedBy::Ralph(Detector::ToolTextInThinking));
        let plain = AgentEvent::Text { text: "All tests pass; the parser handles nested parentheses.".into() };
        assert_eq!(s.on_event(Some(&plain), now), None);
    }

    #[tokio::test(start_paused = true)]
    async fn remembers_the_last_tool_and_whether_it_finished() {
        let now = Instant::now();
        let mut s = Supervisor::new(&timeouts(), now);
        assert_eq!(s.last_tool(), None);
        let _ = s.on_event(Some(&call("t1", "Bash", json!({"command": "cargo   test\n--all"}))), now);
        let tool = s.last_tool().expect("tool");
        assert_eq!((tool.name.as_str(), tool.input_summary.as_str()), ("Bash", "cargo test --all"));
        assert_eq!(tool.state, ToolState::StartedNoResult);
        let done = AgentEvent::ToolFinished { id: "t1".into(), is_error: false, output: "ok".into() };
        let _ = s.on_event(Some(&done), now);
        assert_eq!(s.last_tool().map(|t| t.state), Some(ToolState::Finished));
    }

    #[test]
    fn the_clock_names_the_limit_that_ran_out() {
        let t = timeouts();
        let stall = Intervention::clock(Detector::Stall, &t);
        assert_eq!(
            (stall.detector, stall.evidence.as_str()),
            (Detector::Stall, "no output for 1m and no tool running")
        );
        assert_eq!(Intervention::clock(Detector::ToolTimeout, &t).detector, Detector::ToolTimeout);
        let attempt = Intervention::clock(Detector::AttemptTimeout, &t);
        assert_eq!(
            (attempt.ended_by(), attempt.evidence.as_str()),
            (EndedBy::Ralph(Detector::AttemptTimeout), "the attempt ran longer than 1h")
        );
    }

    #[test]
    fn a_running_cost_past_the_rest_of_the_budget_ends_the_attempt() {
        let t0 = Instant::now();
        let mut s = Supervisor::new(&timeouts(), t0).with_cost_left(Some(0.6));
        let step = |c| AgentEvent::Usage { input_tokens: 1, output_tokens: 1, cost_usd: Some(c) };
        assert_eq!(s.on_event(Some(&step(0.5)), t0), None);
        let hit = s.on_event(Some(&step(0.5)), t0).expect("over the cap");
        assert_eq!((hit.ended_by(), hit.detector), (EndedBy::Ralph(Detector::CostCap), Detector::CostCap));
        let mut unlimited = Supervisor::new(&timeouts(), t0);
        assert_eq!(unlimited.on_event(Some(&step(100.0)), t0), None);
    }
}

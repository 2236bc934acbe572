//! The texts of the live display, as pure functions (the snapshot tests read them):
//! the first line, the attempt line, a wait, the offline pause, an agent being
//! stopped, and the second Ctrl+C.

use std::path::Path;
use std::time::Duration;

use super::clock;
use super::progress::AttemptLine;

/// An agent being ended by ralph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalating {
    pub agent: String,
    /// Why: the user's (or the machine's) stop, or one of ralph's detectors.
    pub why: EndWhy,
    /// The signal just sent to the agent's group.
    pub sent: &'static str,
    /// The signal that follows if the agent is still there after the grace period.
    pub next: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndWhy {
    /// Ctrl+C: a second one kills at once.
    User,
    /// SIGTERM or SIGHUP: an orderly stop for the machine.
    Signal(&'static str),
    /// A detector of ralph's (stall, tool timeout, loop...).
    Intervention(String),
}

/// The first line of a run: version, directory, and the zone of every time shown.
pub fn header(version: &str, dir: &Path, zone: &str) -> String {
    format!("ralph {version} in {} (times are {zone})", dir.display())
}

pub fn attempt(a: &AttemptLine, cost_usd: f64) -> String {
    let resumed = a.resumed_session.as_ref().map(|s| format!(" · resuming {s}")).unwrap_or_default();
    let cost = if cost_usd > 0.0 { format!(" · ${cost_usd:.2}") } else { String::new() };
    format!(
        "phase {}/{} {} · iteration {}/{} · agent {} · attempt {}{resumed}{cost}",
        a.phase_number, a.phase_count, a.phase, a.iteration, a.iterations, a.agent, a.attempt
    )
}

/// The line that starts a wait: how long, for what, until when.
pub fn wait_begins(why: &str, delay: Duration, until: &str) -> String {
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

pub fn offline(since: &str, endpoints: &[String]) -> String {
    format!("Offline — paused (since {since}); probing {}", endpoints.join(", "))
}

pub fn escalating(e: &Escalating) -> String {
    match &e.why {
        EndWhy::User => {
            format!("stopping: waiting for {} to exit (Ctrl+C again to kill it now) · sent {}", e.agent, e.sent)
        }
        EndWhy::Signal(signal) => {
            format!("stopping ({signal}): waiting for {} to exit · sent {}", e.agent, e.sent)
        }
        EndWhy::Intervention(detector) => {
            format!("ending the attempt ({detector}): waiting for {} to exit · sent {}", e.agent, e.sent)
        }
    }
}

/// The agent is gone after an orderly stop, and what it took.
pub fn agent_stopped(agent: &str, last_signal: Option<&str>) -> String {
    match last_signal {
        Some(signal) => format!("{agent} exited after {signal}"),
        None => format!("{agent} exited"),
    }
}

/// After the second Ctrl+C.
pub fn killed(agent: Option<&str>) -> String {
    match agent {
        Some(agent) => format!(
            "killed {agent} and everything it started (SIGKILL); `ralph --resume` continues from the last checkpoint"
        ),
        None => "stopped at once; `ralph --resume` continues from the last checkpoint".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt_line() -> AttemptLine {
        AttemptLine {
            phase: "develop".into(),
            phase_number: 2,
            phase_count: 3,
            iteration: 4,
            iterations: 20,
            agent: "claude".into(),
            attempt: 7,
            resumed_session: Some("sess-1".into()),
        }
    }

    #[test]
    fn what_the_terminal_says_while_it_runs() {
        let stop = |why: EndWhy, sent, next| escalating(&Escalating { agent: "claude".into(), why, sent, next });
        let lines = [
            header("0.1.0", Path::new("/home/me/project"), "CET"),
            attempt(&attempt_line(), 0.0),
            attempt(&attempt_line(), 1.234),
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

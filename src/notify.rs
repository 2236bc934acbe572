//! `[notify] command`: a program told about what a person wants to hear of, with
//! the event as one JSON object on stdin. A subscriber of the run-event stream.
//!
//! Told: the run completed, failed or is blocked; a long wait began (a rate-limit
//! reset, the offline pause, a full disk); the run was resumed by `ralph watch`. A failing or slow
//! notifier never blocks or breaks the run: each runs as its own task, in a process
//! group of its own that gets `[notify] timeout` in all (what the notifier starts in
//! the background included) and is killed whole then, and its failure is only
//! logged. Nothing of a notifier outlives the run.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::task::JoinSet;

use crate::events::RunEvent;
use crate::state::checkpoint::Status;

/// The variable `ralph watch` sets for the runs it resumes.
pub(crate) const RESUMED_BY: &str = "RALPH_RESUMED_BY";

/// Whether a person wants to hear of this event.
pub(crate) fn wanted(event: &RunEvent, resumed_by_watch: bool) -> bool {
    match event {
        RunEvent::RunEnded { status, .. } => matches!(status, Status::Completed | Status::Failed | Status::Blocked),
        RunEvent::RateLimitWait { .. } | RunEvent::Offline { .. } | RunEvent::DiskFull { .. } => true,
        RunEvent::RunResumed { .. } => resumed_by_watch,
        _ => false,
    }
}

pub(crate) struct Notifier {
    command: Option<Vec<String>>,
    timeout: Duration,
    dir: String,
    resumed_by_watch: bool,
    tasks: JoinSet<()>,
}

impl Notifier {
    pub(crate) fn new(config: &crate::config::Notify, dir: &std::path::Path) -> Self {
        Self {
            command: config.command.clone(),
            timeout: config.timeout,
            dir: dir.display().to_string(),
            resumed_by_watch: std::env::var(RESUMED_BY).is_ok_and(|v| v == "watch"),
            tasks: JoinSet::new(),
        }
    }

    /// Starts the notifier for `event` if one is configured and the event is wanted.
    pub(crate) fn observe(&mut self, event: &RunEvent, run_id: &str) {
        let Some(argv) = self.command.clone().filter(|_| wanted(event, self.resumed_by_watch)) else { return };
        let mut payload = json!({
            "at": jiff::Timestamp::now().to_string(),
            "dir": self.dir,
            "run_id": run_id,
            "event": event,
        });
        if self.resumed_by_watch && matches!(event, RunEvent::RunResumed { .. }) {
            payload["resumed_by"] = json!("watch");
        }
        crate::secrets::redact_json(&mut payload);
        let timeout = self.timeout;
        self.tasks.spawn(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            let notified = tokio::time::timeout_at(deadline, notify(&argv, &payload, deadline));
            if let Err(e) = notified.await.unwrap_or_else(|_| {
                Err(std::io::Error::new(std::io::ErrorKind::TimedOut, format!("did not finish within {timeout:?}")))
            }) {
                tracing::warn!("the notifier {argv:?} failed: {e}");
            }
        });
    }

    /// Gives the notifiers still running at the end of the run their time, no more.
    pub(crate) async fn flush(&mut self) {
        let all = async { while self.tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(self.timeout, all).await.is_err() {
            self.tasks.abort_all();
        }
    }
}

/// Runs the notifier in a process group of its own; what it leaves running in the
/// group gets until `deadline`, and the group is killed when this future ends or is
/// dropped (the timeout, the end of the run).
async fn notify(argv: &[String], payload: &serde_json::Value, deadline: tokio::time::Instant) -> std::io::Result<()> {
    let (program, args) = argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    let mut command = tokio::process::Command::new(program);
    command.args(args).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
    command.process_group(0).kill_on_drop(true);
    let (mut child, helper) = crate::process::escaped::spawn_helper(|| {
        let child = command.spawn()?;
        let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
        Ok((child, pid))
    })?;
    let mut group = helper.map(|helper| Group { helper, armed: true });
    if let Some(mut stdin) = child.stdin.take() {
        // A notifier that does not read its stdin is its own business.
        let _ = stdin.write_all(format!("{payload}\n").as_bytes()).await;
    }
    let status = child.wait().await?;
    while group.as_ref().is_some_and(Group::alive) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if group.as_ref().is_some_and(|g| !g.alive()) {
        // Nobody is left to end, and the group's number may be given to a new
        // process: leave it alone.
        group.iter_mut().for_each(|g| g.armed = false);
    }
    if status.success() { Ok(()) } else { Err(std::io::Error::other(format!("exited with {status}"))) }
}

/// The notifier's process group (its id is the notifier's pid), killed when dropped;
/// an attempt's end leaves it alone until then (see `process::escaped`).
struct Group {
    helper: crate::process::escaped::Helper,
    /// Unset once the group is known empty: its number may be another's by then.
    armed: bool,
}

impl Group {
    fn alive(&self) -> bool {
        crate::os::signal_group(self.helper.group(), None).is_ok()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.armed {
            let _ = crate::os::signal_group(self.helper.group(), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_a_person_wants_to_hear_of() {
        let ended = |status| RunEvent::RunEnded { status, reason: None, stop_cause: None };
        assert!(wanted(&ended(Status::Completed), false));
        assert!(wanted(&ended(Status::Failed), false));
        assert!(wanted(&ended(Status::Blocked), false));
        assert!(!wanted(&ended(Status::Paused), false));
        assert!(wanted(&RunEvent::RateLimitWait { until: 1, reset: 1, reason: "limit".into() }, false));
        assert!(wanted(&RunEvent::Offline { since: 1, endpoints: vec![], error: String::new() }, false));
        let resumed = RunEvent::RunResumed { run_id: "r".into(), pid: 1, from: None, phase: "p".into(), pass: 1 };
        assert!(wanted(&resumed, true));
        assert!(!wanted(&resumed, false));
        assert!(!wanted(&RunEvent::PhaseDone { phase: "p".into() }, true));
    }
}

//! The fleet's decisions, pure: what a task's ralph ending means for the task, which
//! tasks start next, when the fleet is over and with what, what a person's command
//! does to a task, and the cost caps. Functions of the state and what the shell saw;
//! the supervisor (`supervisor`) carries the answers out. Unit-tested without
//! processes or git.

use crate::signal::StopCause;
use crate::state::checkpoint::Status;

use super::state::{Fleet, FleetStatus, Task, TaskState};

/// Ends of a task's ralph without a clean stop, in a row and without a finished
/// iteration, before the task is blocked (like `[watch] max_restarts` for a run).
pub(crate) const MAX_RESTARTS: u32 = 3;

/// What the task's checkpoint said when its ralph was gone.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunView {
    pub status: Status,
    pub run_id: String,
    pub iterations_done: u32,
    pub cost_usd: f64,
    pub stop_reason: Option<String>,
}

/// How the task's ralph ended, when the supervisor started it (an adopted one's exit
/// status is not known: its parent was the previous supervisor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
    Unknown,
}

/// Why the task's ralph was asked to stop, if it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    Nothing,
    /// The whole fleet stops (a signal, `ralph fleet stop`): the task resumes first
    /// at the next start.
    FleetStop(StopCause),
    /// A person stopped this task (`ralph fleet stop TASK`).
    TaskStop,
    /// A person discards it.
    Discard,
}

/// What happens to a task whose ralph ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ended {
    pub state: TaskState,
    pub reason: Option<String>,
    pub paused: bool,
    pub restarts: u32,
}

/// The task's next state after its ralph ended, from its checkpoint (`None`: the run
/// wrote none), how the process ended and what it was asked. `log` names the task's
/// log in reasons.
pub(crate) fn on_exit(task: &Task, view: Option<&RunView>, exit: Exit, asked: Asked, log: &str) -> Ended {
    let keep = |state, reason: Option<String>| Ended { state, reason, paused: false, restarts: 0 };
    if asked == Asked::Discard {
        return keep(TaskState::Discarded, None);
    }
    let reason_or = |default: String| view.and_then(|v| v.stop_reason.clone()).or(Some(default));
    match view.map(|v| v.status) {
        Some(Status::Completed) => keep(TaskState::Finished, None),
        Some(Status::Failed) => keep(TaskState::Failed, reason_or(format!("its run failed; see {log}"))),
        Some(Status::Blocked) => keep(TaskState::Blocked, reason_or(format!("its run is blocked; see {log}"))),
        Some(Status::Paused) => match asked {
            Asked::FleetStop(_) => Ended { state: TaskState::Queued, reason: None, paused: true, restarts: 0 },
            _ => keep(
                TaskState::Stopped,
                Some(match asked {
                    Asked::TaskStop => "stopped by `ralph fleet stop`".to_string(),
                    _ => format!("its run was paused from outside the fleet (`ralph stop`?); see {log}"),
                }),
            ),
        },
        // A SIGTERM or SIGHUP: resumed like any interrupted run.
        Some(Status::Interrupted) => keep(TaskState::Queued, None),
        // Stopped by the fleet before it could save its stop (it had only just
        // started): not a crash, it resumes first next time.
        Some(Status::Running | Status::Waiting) | None if matches!(asked, Asked::FleetStop(_)) => {
            Ended { state: TaskState::Queued, reason: None, paused: true, restarts: task.restarts }
        }
        // A crash (the checkpoint still says running), or no checkpoint at all.
        Some(Status::Running | Status::Waiting) | None => crashed(task, view, exit, log),
    }
}

/// A ralph that ended without writing its final state.
fn crashed(task: &Task, view: Option<&RunView>, exit: Exit, log: &str) -> Ended {
    let blocked =
        |reason: String| Ended { state: TaskState::Blocked, reason: Some(reason), paused: false, restarts: 0 };
    match exit {
        Exit::Code(2) => return blocked(format!("its ralph refused to start (exit 2); the reason is in {log}")),
        Exit::Code(4) => return blocked(format!("its ralph stopped on an internal error (exit 4); see {log}")),
        _ => {}
    }
    let progressed = view.is_some_and(|v| v.iterations_done > task.iterations_at_start);
    let restarts = if progressed { 1 } else { task.restarts + 1 };
    if restarts > MAX_RESTARTS {
        return blocked(format!(
            "its ralph ended without a clean stop {MAX_RESTARTS} times in a row without finishing an iteration \
             ({}); see {log}",
            describe_exit(exit)
        ));
    }
    Ended { state: TaskState::Queued, reason: None, paused: false, restarts }
}

/// "exit status 1", "killed by signal 9", "its exit status is unknown".
pub(crate) fn describe_exit(exit: Exit) -> String {
    match exit {
        Exit::Code(code) => format!("exit status {code}"),
        Exit::Signal(signal) => format!("killed by signal {signal}"),
        Exit::Unknown => "its exit status is unknown".to_string(),
    }
}

/// How a queued task's ralph is started: `--resume` for a run a person or a cap
/// stopped (a queued task is meant to go on), `--resume-or-start` otherwise (a new
/// run, or one a crash or a shutdown interrupted). `None`: its run is already
/// completed (its ralph ended before the supervisor recorded it): it is finished.
#[must_use]
pub(crate) fn start_flag(checkpoint: Option<Status>) -> Option<&'static str> {
    match checkpoint {
        Some(Status::Completed) => None,
        Some(Status::Paused | Status::Failed | Status::Blocked) => Some("--resume"),
        Some(Status::Running | Status::Waiting | Status::Interrupted) | None => Some("--resume-or-start"),
    }
}

/// The tasks to start now: queued ones, runs that were started before first (they
/// hold work), then in discovery order, up to `max_parallel` active at once.
pub(crate) fn next_to_start(fleet: &Fleet, max_parallel: u32) -> Vec<String> {
    let active = fleet.tasks.values().filter(|t| t.state.active()).count();
    let free = (max_parallel as usize).saturating_sub(active);
    let mut queued: Vec<(&String, &Task)> = fleet.tasks.iter().filter(|(_, t)| t.state == TaskState::Queued).collect();
    // Sent back by the merge queue first: the others wait for it to land.
    queued.sort_by_key(|(_, t)| (t.eviction.is_none(), !t.started, t.seq));
    queued.into_iter().take(free).map(|(name, _)| name.clone()).collect()
}

/// How a fleet ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FleetEnd {
    /// Every task finished (and, with the merge queue, landed) or was discarded.
    Done,
    /// Nothing more can happen without a person: these tasks are failed, blocked or
    /// stopped.
    Unfinished(Vec<String>),
}

/// Whether the fleet is over: `None` while any task can still move. `landing`: the
/// merge queue runs, so a finished task still has to land.
pub(crate) fn outcome(fleet: &Fleet, landing: bool) -> Option<FleetEnd> {
    let pending = |t: &Task| match t.state {
        TaskState::Finished => landing,
        state => !state.settled(),
    };
    if fleet.tasks.values().any(pending) {
        return None;
    }
    let unfinished = fleet.names(|t| matches!(t.state, TaskState::Failed | TaskState::Blocked | TaskState::Stopped));
    Some(if unfinished.is_empty() { FleetEnd::Done } else { FleetEnd::Unfinished(unfinished) })
}

/// What a state of the task is called where people read it: a running task whose run
/// waits (a rate limit, a backoff) is `waiting`; one being set up is `running`.
pub(crate) fn shown_state(task: &Task, run: Option<Status>) -> &'static str {
    match (task.state, run) {
        (TaskState::Queued, _) if task.eviction.is_some() => "evicted",
        (TaskState::Running | TaskState::Starting, Some(Status::Waiting)) => "waiting",
        (TaskState::Starting, _) => "running",
        (state, _) => state.into_str(),
    }
}

/// What a person's command does to a task.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Ask its ralph to stop (it is running); the state follows when it ends.
    AskRun,
    /// Change the state now (nothing runs).
    Set(TaskState),
    /// Nothing to do; the text says why.
    Refuse(String),
}

/// `ralph fleet stop TASK`.
pub(crate) fn stop(name: &str, task: &Task) -> Command {
    match task.state {
        TaskState::Running | TaskState::Starting | TaskState::Evicted => Command::AskRun,
        TaskState::Queued => Command::Set(TaskState::Stopped),
        other => Command::Refuse(format!("task {name} is {}; there is nothing to stop", other.into_str())),
    }
}

/// `ralph fleet retry TASK`: a failed, blocked or stopped task goes back to the queue.
pub(crate) fn retry(name: &str, task: &Task) -> Command {
    match task.state {
        TaskState::Failed | TaskState::Blocked | TaskState::Stopped => Command::Set(TaskState::Queued),
        other => Command::Refuse(format!(
            "task {name} is {}; only a failed, blocked or stopped task can be retried",
            other.into_str()
        )),
    }
}

/// `ralph fleet discard TASK`.
pub(crate) fn discard(name: &str, task: &Task) -> Command {
    match task.state {
        TaskState::Merged => Command::Refuse(format!("task {name} is merged; there is nothing to discard")),
        TaskState::Discarded => Command::Refuse(format!("task {name} is discarded already")),
        TaskState::Merging => Command::Refuse(format!("task {name} is landing now; discard it once it has landed")),
        TaskState::Running | TaskState::Starting | TaskState::Evicted => Command::AskRun,
        _ => Command::Set(TaskState::Discarded),
    }
}

/// The cost cap one task's run gets: `[general] max_cost_usd` and what is left of
/// the fleet's `max_cost` after what the other tasks spent, whichever is lower.
pub(crate) fn task_cap(per_run: Option<f64>, fleet_cap: Option<f64>, spent_by_others: f64) -> Option<f64> {
    let left = fleet_cap.map(|cap| (cap - spent_by_others).max(0.0));
    match (per_run, left) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The total cost of the fleet's tasks so far.
pub(crate) fn spent(fleet: &Fleet) -> f64 {
    fleet.tasks.values().map(|t| t.cost_usd).sum()
}

/// The refusal when `[fleet] max_cost` is not set: the worst case the fleet could
/// cost, tasks × the per-run cap, or why it has none.
pub(crate) fn worst_case(tasks: usize, per_run: Option<f64>) -> String {
    let worst = match per_run {
        Some(cap) => format!("{tasks} task(s) × [general] max_cost_usd ${cap:.2} = up to ${:.2}", tasks as f64 * cap),
        None => format!("{tasks} task(s) and no [general] max_cost_usd: no limit at all"),
    };
    format!(
        "[fleet] max_cost is not set; the fleet could cost {worst}. Set [fleet] max_cost to the most the whole \
         fleet may cost in dollars (like max_cost = 40.0), or max_cost = \"none\" to run without a cap"
    )
}

/// The fleet's status when its supervisor ends: a person's stop, a shutdown, or the
/// end of the work.
pub(crate) fn final_status(stop: Option<StopCause>, end: Option<&FleetEnd>) -> FleetStatus {
    match (stop, end) {
        // A person's stop: Ctrl+C, or a SIGTERM of a process of their own.
        (Some(StopCause::User | StopCause::Deliberate), _) => FleetStatus::Stopped,
        (Some(_), _) => FleetStatus::Interrupted,
        (None, Some(FleetEnd::Done)) => FleetStatus::Finished,
        (None, Some(FleetEnd::Unfinished(_))) => FleetStatus::Unfinished,
        (None, None) => FleetStatus::Running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::fleet;

    fn task(state: TaskState, seq: u32) -> Task {
        let mut t = Task::new("tasks/x.md", seq, "ralph/x".into());
        t.state = state;
        t
    }

    fn view(status: Status, iterations: u32) -> RunView {
        RunView { status, run_id: "r".into(), iterations_done: iterations, cost_usd: 0.5, stop_reason: None }
    }

    #[test]
    fn the_run_status_decides_the_task_state() {
        let t = task(TaskState::Running, 1);
        let end = |status, asked| on_exit(&t, Some(&view(status, 1)), Exit::Code(0), asked, "log").state;
        assert_eq!(end(Status::Completed, Asked::Nothing), TaskState::Finished);
        assert_eq!(end(Status::Failed, Asked::Nothing), TaskState::Failed);
        assert_eq!(end(Status::Blocked, Asked::Nothing), TaskState::Blocked);
        assert_eq!(end(Status::Interrupted, Asked::Nothing), TaskState::Queued);
        assert_eq!(end(Status::Paused, Asked::TaskStop), TaskState::Stopped);
        assert_eq!(end(Status::Paused, Asked::Nothing), TaskState::Stopped);
        let fleet_stop =
            on_exit(&t, Some(&view(Status::Paused, 1)), Exit::Code(130), Asked::FleetStop(StopCause::User), "l");
        assert_eq!((fleet_stop.state, fleet_stop.paused), (TaskState::Queued, true));
        assert_eq!(end(Status::Completed, Asked::Discard), TaskState::Discarded);
        // Killed by the fleet's stop before it saved anything: no crash.
        let early = on_exit(&t, None, Exit::Signal(2), Asked::FleetStop(StopCause::User), "l");
        assert_eq!((early.state, early.paused, early.restarts), (TaskState::Queued, true, 0));
    }

    #[test]
    fn a_crash_loop_without_progress_ends_blocked() {
        let mut t = task(TaskState::Running, 1);
        t.iterations_at_start = 2;
        for n in 1..=MAX_RESTARTS {
            let e = on_exit(&t, Some(&view(Status::Running, 2)), Exit::Signal(9), Asked::Nothing, "log");
            assert_eq!((e.state, e.restarts), (TaskState::Queued, n));
            t.restarts = e.restarts;
        }
        let e = on_exit(&t, Some(&view(Status::Running, 2)), Exit::Signal(9), Asked::Nothing, "log");
        assert_eq!(e.state, TaskState::Blocked);
        assert!(e.reason.unwrap().contains("killed by signal 9"));
        // Progress starts the count again.
        let e = on_exit(&t, Some(&view(Status::Running, 3)), Exit::Unknown, Asked::Nothing, "log");
        assert_eq!((e.state, e.restarts), (TaskState::Queued, 1));
        // A refusal to start is a person's problem at once.
        let e = on_exit(&task(TaskState::Running, 1), None, Exit::Code(2), Asked::Nothing, "the log");
        assert_eq!(e.state, TaskState::Blocked);
        assert!(e.reason.unwrap().contains("the log"));
    }

    #[test]
    fn started_tasks_resume_first_then_discovery_order_up_to_the_cap() {
        let mut f = fleet();
        for (name, state, seq, started) in [
            ("a", TaskState::Queued, 1, false),
            ("b", TaskState::Queued, 2, true),
            ("c", TaskState::Running, 3, true),
            ("d", TaskState::Queued, 4, false),
            ("e", TaskState::Finished, 5, true),
        ] {
            let mut t = task(state, seq);
            t.branch = format!("ralph/{name}");
            t.started = started;
            f.tasks.insert(name.into(), t);
        }
        assert_eq!(next_to_start(&f, 3), ["b", "a"]);
        assert_eq!(next_to_start(&f, 1), Vec::<String>::new());
        assert_eq!(next_to_start(&f, 8), ["b", "a", "d"]);
    }

    #[test]
    fn the_fleet_is_over_when_nothing_can_move() {
        let mut f = fleet();
        f.tasks.insert("a".into(), task(TaskState::Finished, 1));
        f.tasks.insert("b".into(), task(TaskState::Discarded, 2));
        assert_eq!(outcome(&f, false), Some(FleetEnd::Done));
        assert_eq!(outcome(&f, true), None, "a finished task still lands");
        f.tasks.get_mut("a").unwrap().state = TaskState::Merged;
        assert_eq!(outcome(&f, true), Some(FleetEnd::Done));
        f.tasks.insert("c".into(), task(TaskState::Blocked, 3));
        assert_eq!(outcome(&f, true), Some(FleetEnd::Unfinished(vec!["c".into()])));
        f.tasks.insert("d".into(), task(TaskState::Queued, 4));
        assert_eq!(outcome(&f, true), None);
        assert_eq!(final_status(None, Some(&FleetEnd::Done)), FleetStatus::Finished);
        assert_eq!(final_status(Some(StopCause::User), None), FleetStatus::Stopped);
        assert_eq!(final_status(Some(StopCause::Terminate), None), FleetStatus::Interrupted);
        assert_eq!(final_status(Some(StopCause::Deliberate), None), FleetStatus::Stopped);
    }

    #[test]
    fn people_commands_act_on_the_states_they_fit() {
        assert_eq!(stop("x", &task(TaskState::Running, 1)), Command::AskRun);
        assert_eq!(stop("x", &task(TaskState::Queued, 1)), Command::Set(TaskState::Stopped));
        assert!(matches!(stop("x", &task(TaskState::Merged, 1)), Command::Refuse(_)));
        assert_eq!(retry("x", &task(TaskState::Blocked, 1)), Command::Set(TaskState::Queued));
        assert!(matches!(retry("x", &task(TaskState::Running, 1)), Command::Refuse(_)));
        assert_eq!(discard("x", &task(TaskState::Failed, 1)), Command::Set(TaskState::Discarded));
        assert!(matches!(discard("x", &task(TaskState::Merged, 1)), Command::Refuse(_)));
        assert_eq!(start_flag(Some(Status::Paused)), Some("--resume"));
        assert_eq!(start_flag(None), Some("--resume-or-start"));
        assert_eq!(start_flag(Some(Status::Completed)), None);
    }

    #[test]
    fn costs_are_capped_across_tasks() {
        assert_eq!(task_cap(Some(10.0), Some(25.0), 20.0), Some(5.0));
        assert_eq!(task_cap(None, Some(25.0), 30.0), Some(0.0));
        assert_eq!(task_cap(Some(10.0), None, 30.0), Some(10.0));
        assert_eq!(task_cap(None, None, 0.0), None);
        let text = worst_case(4, Some(10.0));
        assert!(text.contains("4 task(s) × [general] max_cost_usd $10.00 = up to $40.00"), "{text}");
        assert!(text.contains("max_cost = \"none\""), "{text}");
        assert!(worst_case(3, None).contains("no limit at all"));
    }

    #[test]
    fn a_waiting_run_shows_as_waiting() {
        assert_eq!(shown_state(&task(TaskState::Running, 1), Some(Status::Waiting)), "waiting");
        assert_eq!(shown_state(&task(TaskState::Starting, 1), None), "running");
        assert_eq!(shown_state(&task(TaskState::Blocked, 1), Some(Status::Blocked)), "blocked");
    }
}

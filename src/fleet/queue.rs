//! The merge queue's decisions, pure: which finished task lands next (in the order
//! they finished), how it lands (as it is, rebased, or rebased with its generated
//! files made again), when it goes back to its agent (an eviction, with what to tell
//! it) or is blocked, and when each queued task should land. The shell (`landing`)
//! carries them out with git, and settles a landing a crash cut short by asking git
//! (step 5).
//!
//! A landing, and why it is exactly once whatever dies:
//!
//! 1. the conflicts are found without touching a worktree (`git merge-tree
//!    --write-tree`), and the task's commits are rebased the same way, commit by
//!    commit, into new objects only (`merge-tree` and `commit-tree`): no rebase is
//!    ever half-done in a worktree;
//! 2. the landing (`into`'s tip it started from, the head it lands) is saved;
//! 3. `[fleet] check` runs on that head in the landing worktree;
//! 4. the landing is saved as swapping, then `git update-ref -m <reason>
//!    refs/heads/<into> <head> <onto>` moves `into` only if it still is at `onto`;
//! 5. git is asked whether `into` contains the head: only then is the task merged.
//!
//! A crash before 4 leaves `into` as it was: the landing starts again. A crash after
//! it is settled by asking git (5), never by assuming. A task is never both merged
//! and queued: it has one state.

use std::time::Duration;

use super::state::{Eviction, Fleet, Task, TaskState};

/// What comparing a task's branch with `into` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Merge {
    /// The branch contains `into`'s tip: it lands as it is.
    Contains,
    /// It merges without conflicts.
    Clean,
    /// These files conflict.
    Conflicts(Vec<String>),
}

/// How a task lands.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    AsIs,
    Rebase,
    /// Rebased with the landing side's version of these generated files; then the
    /// `regenerate` commands of these globs run.
    Regenerate(Vec<String>),
    /// Back to the agent: the conflict cannot be resolved by the queue.
    Evict,
}

/// How a task lands, from what the merge found, whether its branch (not containing
/// `into`) has merge commits, and the `[fleet] regenerate` globs.
pub(crate) fn plan(merge: &Merge, merges_in_branch: bool, regenerate: &[String]) -> Plan {
    match merge {
        Merge::Contains => Plan::AsIs,
        // A branch with merges is rebased by the agent (or merged into `into`).
        _ if merges_in_branch => Plan::Evict,
        Merge::Clean => Plan::Rebase,
        Merge::Conflicts(files) => {
            let globs: Vec<String> =
                regenerate.iter().filter(|g| files.iter().any(|f| matches(g, f))).cloned().collect();
            let all_generated = !files.is_empty() && files.iter().all(|f| regenerate.iter().any(|g| matches(g, f)));
            if all_generated { Plan::Regenerate(globs) } else { Plan::Evict }
        }
    }
}

/// Whether `path` matches a `regenerate` glob: within one component, and a glob
/// without `/` matches the file's name at any depth (`Cargo.lock`).
pub(crate) fn matches(glob: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if !glob.contains('/') {
        return crate::agent::env::glob_match(glob, name);
    }
    let (g, p): (Vec<&str>, Vec<&str>) = (glob.split('/').collect(), path.split('/').collect());
    g.len() == p.len() && g.iter().zip(&p).all(|(g, p)| crate::agent::env::glob_match(g, p))
}

/// The finished task that lands next: the one that finished first. `first` (`ralph
/// fleet land TASK`) goes before the others when it is finished.
pub(crate) fn next(fleet: &Fleet, first: Option<&str>) -> Option<String> {
    if fleet.landing.is_some() || fleet.no_land && first.is_none() {
        return None;
    }
    let finished = |t: &&Task| t.state == TaskState::Finished;
    if let Some(name) = first.filter(|n| fleet.tasks.get(*n).is_some_and(|t| finished(&t))) {
        return Some(name.to_string());
    }
    if fleet.no_land {
        return None;
    }
    fleet
        .tasks
        .iter()
        .filter(|(_, t)| finished(t))
        .min_by_key(|(_, t)| (t.finished_seq.unwrap_or(u32::MAX), t.seq))
        .map(|(name, _)| name.clone())
}

/// What went wrong with a landing that the task's agent can fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trouble {
    Conflict {
        files: Vec<String>,
        /// The commits on `into` since the task branched that touch those files.
        commits: Vec<String>,
        /// The conflicting hunks, `into`'s side first.
        hunks: String,
    },
    /// The branch has merge commits and does not contain `into`.
    MergeCommits,
    Check {
        command: String,
        /// "exit status 1", "timed out after 30m".
        ended: String,
        /// The last lines of its output.
        tail: String,
        log: String,
    },
}

/// What a trouble comes to: the task goes back to its agent, or (evictions spent)
/// is blocked with its branch kept.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Evicted {
    Back(Eviction),
    Blocked(String),
}

/// Sends `task` back with `trouble`, or blocks it when `max` evictions are spent.
pub(crate) fn evict(name: &str, task: &Task, into: &str, max: u32, trouble: &Trouble) -> Evicted {
    let number = task.evictions + 1;
    let what = short(trouble);
    if number > max {
        return Evicted::Blocked(format!(
            "{what}; the merge queue sent it back {} time(s) already ([fleet] max_evictions = {max}). Its branch {} is \
             kept: resolve it by hand (`ralph fleet diff {name}`, then in its worktree `git rebase {into}`), then \
             `ralph fleet land {name}`; or `ralph fleet retry {name}` gives its agent {max} more tries",
            task.evictions, task.branch
        ));
    }
    Evicted::Back(Eviction { number, text: eviction_text(task, into, number, max, trouble) })
}

/// One line for the log and the reason.
pub(crate) fn short(trouble: &Trouble) -> String {
    match trouble {
        Trouble::Conflict { files, .. } => format!("it conflicts with what landed before it ({})", files.join(", ")),
        Trouble::MergeCommits => "its branch has merge commits and does not contain the fleet's branch".to_string(),
        Trouble::Check { command, ended, .. } => format!("the check `{command}` failed ({ended})"),
    }
}

/// What the agent is told: the trouble, and what to do in its worktree.
pub(crate) fn eviction_text(task: &Task, into: &str, number: u32, max: u32, trouble: &Trouble) -> String {
    let head = format!(
        "The merge queue could not land this task's finished work (branch {}) on {into}, the fleet's branch \
         (eviction {number} of at most {max}).",
        task.branch
    );
    let body = match trouble {
        Trouble::Conflict { files, commits, hunks } => format!(
            "It conflicts with what other tasks landed on {into} since this task started.\n\nConflicting files: {}\n\n\
             Commits on {into} that touched them:\n{}\n\nThe conflicting hunks ({into}'s side first, then this task's):\n\
             ```\n{}\n```",
            files.join(", "),
            if commits.is_empty() { "  (none listed)".to_string() } else { commits.join("\n") },
            hunks.trim_end()
        ),
        Trouble::MergeCommits => {
            format!("The branch has merge commits and does not contain {into}'s tip, so the queue cannot rebase it.")
        }
        Trouble::Check { command, ended, tail, log } => format!(
            "The check `{command}` failed on this task's work rebased onto {into}: {ended}. The last lines of its \
             output (all of it: {log}):\n```\n{}\n```",
            tail.trim_end()
        ),
    };
    format!(
        "{head}\n\n{body}\n\nWhat to do, in this worktree only: bring {into} in (`git rebase {into}`, resolving each \
         conflict and continuing, or `git merge {into}`), keeping the intent of both sides; make sure it builds and \
         the tests pass; commit nothing else and move no other branch. Then end as the phase says (a branch that \
         contains {into} lands as it is)."
    )
}

/// When the task at `position` (0: next) of the queue should land, from the landings
/// so far: their mean duration, or a minute before there is any.
pub(crate) fn estimate(position: usize, landings: u32, landing_secs: f64) -> Duration {
    let mean = if landings == 0 { 60.0 } else { landing_secs / f64::from(landings) };
    Duration::from_secs_f64(mean * (position as f64 + 1.0))
}

/// The queue in landing order: the task landing now first, then the finished ones.
pub(crate) fn order(fleet: &Fleet) -> Vec<String> {
    let mut queued: Vec<(&String, &Task)> =
        fleet.tasks.iter().filter(|(_, t)| matches!(t.state, TaskState::Finished | TaskState::Merging)).collect();
    queued.sort_by_key(|(_, t)| (t.state != TaskState::Merging, t.finished_seq.unwrap_or(u32::MAX), t.seq));
    queued.into_iter().map(|(n, _)| n.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::fleet;

    fn task(state: TaskState, finished: Option<u32>) -> Task {
        let mut t = Task::new("tasks/x.md", 1, "ralph/x".into());
        (t.state, t.finished_seq) = (state, finished);
        t
    }

    #[test]
    fn tasks_land_in_the_order_they_finished_and_land_first_jumps_it() {
        let mut f = fleet();
        f.tasks.insert("late".into(), task(TaskState::Finished, Some(3)));
        f.tasks.insert("early".into(), task(TaskState::Finished, Some(1)));
        f.tasks.insert("running".into(), task(TaskState::Running, None));
        f.tasks.insert("merged".into(), task(TaskState::Merged, Some(0)));
        assert_eq!(next(&f, None).as_deref(), Some("early"));
        assert_eq!(next(&f, Some("late")).as_deref(), Some("late"));
        assert_eq!(next(&f, Some("running")).as_deref(), Some("early"), "only a finished task lands");
        f.no_land = true;
        assert_eq!(next(&f, None), None);
        assert_eq!(next(&f, Some("late")).as_deref(), Some("late"), "a person lands by hand");
        assert_eq!(order(&f), ["early", "late"]);
    }

    #[test]
    fn a_landing_plan_follows_what_the_merge_found() {
        let globs = vec!["Cargo.lock".to_string(), "gen/*.rs".to_string()];
        assert_eq!(plan(&Merge::Contains, true, &globs), Plan::AsIs);
        assert_eq!(plan(&Merge::Clean, false, &globs), Plan::Rebase);
        assert_eq!(plan(&Merge::Clean, true, &globs), Plan::Evict);
        let lock = Merge::Conflicts(vec!["Cargo.lock".into(), "sub/Cargo.lock".into()]);
        assert_eq!(plan(&lock, false, &globs), Plan::Regenerate(vec!["Cargo.lock".into()]));
        let mixed = Merge::Conflicts(vec!["Cargo.lock".into(), "src/lib.rs".into()]);
        assert_eq!(plan(&mixed, false, &globs), Plan::Evict);
        assert!(matches("gen/*.rs", "gen/a.rs") && !matches("gen/*.rs", "gen/x/a.rs"));
    }

    #[test]
    fn evictions_tell_the_agent_everything_and_end_blocked() {
        let mut t = task(TaskState::Merging, Some(1));
        let trouble = Trouble::Conflict {
            files: vec!["src/a.rs".into()],
            commits: vec!["  abc123 ralph: develop iteration 1: other (task y)".into()],
            hunks: "<<<<<<< ralph/fleet\nA\n=======\nB\n>>>>>>> ralph/x\n".into(),
        };
        let Evicted::Back(e) = evict("x", &t, "ralph/fleet", 2, &trouble) else { panic!() };
        assert_eq!(e.number, 1);
        for needle in ["eviction 1 of at most 2", "src/a.rs", "abc123", "<<<<<<< ralph/fleet", "git rebase ralph/fleet"]
        {
            assert!(e.text.contains(needle), "{needle}: {}", e.text);
        }
        t.evictions = 2;
        let Evicted::Blocked(why) = evict("x", &t, "ralph/fleet", 2, &trouble) else { panic!() };
        assert!(why.contains("ralph fleet land x") && why.contains("is kept"), "{why}");
        let check = Trouble::Check {
            command: "cargo test".into(),
            ended: "exit status 101".into(),
            tail: "FAILED".into(),
            log: "l".into(),
        };
        assert!(short(&check).contains("`cargo test` failed (exit status 101)"));
    }

    #[test]
    fn a_queued_task_lands_after_the_mean_landing_so_far() {
        assert_eq!(estimate(0, 0, 0.0), Duration::from_secs(60));
        assert_eq!(estimate(2, 4, 40.0), Duration::from_secs(30));
    }
}

//! The fleet's supervisor killed with SIGKILL at random moments (seeded; the seed is
//! printed), `ralph fleet` started again until it exits 0, then audited: every
//! task's work on its branch exactly once, no orphan worktree, no process left. About
//! 8 kills here; `scripts/fleet-kill-loop.sh` runs 100 and more (figures in
//! docs/reliability.md).

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::crash_harness::Rng;
use crate::fleet_harness::{Fleet, appends, kill_loop, shell_config};
use crate::harness::Running;

const TASKS: [&str; 4] = ["a", "b", "c", "d"];

#[test]
fn sigkill_of_the_supervisor_at_random_moments_loses_nothing() {
    let make = || {
        let config = shell_config(&appends("0.15"), "max_parallel = 2", "iterations = 2\n");
        Fleet::new(&config, &TASKS.map(|t| (t, "Do it.")))
    };
    let kill = |_: &mut Rng, run: &Running| run.signal(Signal::SIGKILL);
    kill_loop("fleet kill loop (the supervisor SIGKILLed)", "RALPH_FLEET", 8, Duration::from_millis(1500))
        .run(make, kill, audit);
}

/// Every task's two iterations are on its branch exactly once; git's worktrees are
/// the tasks' and nothing else; nothing runs any more.
fn audit(f: &Fleet, seed: u64) {
    assert!(f.archived(), "seed {seed}: the fleet is not archived");
    for task in TASKS {
        let commits = f.landed(task);
        let keys: Vec<&str> =
            commits.iter().filter_map(|c| c.lines().find(|l| l.starts_with("Ralph-Iteration:"))).collect();
        let why = || {
            format!(
                "seed {seed}: task {task}: {}\n{}",
                f.state()["tasks"][task],
                f.git(&["log", "--format=%h %s%n%b", "ralph/fleet"])
            )
        };
        assert_eq!(keys, ["Ralph-Iteration: develop/1", "Ralph-Iteration: develop/2"], "{}", why());
        assert_eq!(f.task_state(task), "merged", "seed {seed}: task {task}");
        assert!(f.git(&["branch", "--list", &format!("ralph/{task}")]).is_empty(), "seed {seed}: ralph/{task} left");
    }
    assert_eq!(f.worktrees().len(), 1, "seed {seed}: worktrees {:?}", f.worktrees());
    f.assert_no_process_left();
}

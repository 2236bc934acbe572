//! The fleet's supervisor killed with SIGKILL at random moments (seeded; the seed is
//! printed), `ralph fleet` started again until it exits 0, then audited: every
//! task's work on its branch exactly once, no orphan worktree, no process left. About
//! 8 kills here; `scripts/fleet-kill-loop.sh` runs 100 and more (figures in
//! docs/reliability.md).

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::crash_harness::{Rng, env_count, seed};
use crate::fleet_harness::{Fleet, appends, kill_loop, shell_config};
use crate::harness::Running;

/// Kills per fleet at most, so that every fleet also reaches its end.
const KILLS_PER_FLEET: usize = 6;
const TASKS: [&str; 4] = ["a", "b", "c", "d"];

#[test]
fn sigkill_of_the_supervisor_at_random_moments_loses_nothing() {
    let seed = seed("RALPH_FLEET_SEED");
    let make = || {
        let config = shell_config(&appends("0.15"), "max_parallel = 2", "iterations = 2\n");
        Fleet::new(&config, &TASKS.map(|t| (t, "Do it.")))
    };
    let kill = |_: &mut Rng, run: &Running| run.signal(Signal::SIGKILL);
    let target = env_count("RALPH_FLEET_KILLS", 8);
    let done = kill_loop(seed, target, KILLS_PER_FLEET, Duration::from_millis(1500), make, kill, audit);
    eprintln!(
        "fleet kill loop: seed {seed}, {} kills of the supervisor over {} fleets ({} starts), all consistent, in \
         {:.1}s",
        done.kills,
        done.fleets,
        done.starts,
        done.elapsed.as_secs_f64()
    );
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

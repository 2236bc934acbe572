//! The merge queue killed at random moments (seeded; the seed is printed): the
//! supervisor alone, or its whole process group with the git it runs, SIGKILLed
//! while tasks finish and land, `ralph fleet` started again until it exits 0; then
//! audited: each task's commit on `into` exactly once, every task merged and none
//! queued, no branch deleted before `into` had it, no rebase left in a worktree, no
//! orphan worktree, no process left. About 6 kills here;
//! `scripts/fleet-landing-kill-loop.sh` runs 100 and more (docs/reliability.md).

use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::crash_harness::Rng;
use crate::fleet_harness::{Fleet, appends, kill_loop, shell_config};
use crate::harness::Running;

const TASKS: [&str; 3] = ["a", "b", "c"];

#[test]
fn sigkill_during_landings_lands_every_task_exactly_once() {
    let make = || {
        let fleet = "max_parallel = 3\ncheck = [\"sh\", \"-c\", \"sleep 0.2\"]";
        Fleet::new(&shell_config(&appends("0.05"), fleet, ""), &TASKS.map(|t| (t, "Do it.")))
    };
    // Half the time the git and the check it runs die with it.
    let kill = |rng: &mut Rng, run: &Running| {
        if rng.next().is_multiple_of(2) {
            let _ = killpg(Pid::from_raw(run.pid()), Signal::SIGKILL);
        } else {
            run.signal(Signal::SIGKILL);
        }
    };
    kill_loop("landing kill loop", "RALPH_LANDING", 6, Duration::from_millis(2500)).run(make, kill, audit);
}

fn audit(f: &Fleet, seed: u64) {
    assert!(f.archived(), "seed {seed}: the fleet is not archived");
    for task in TASKS {
        let landed = f.landed(task);
        let why = || format!("seed {seed}: task {task}\n{}", f.git(&["log", "--format=%h %s%n%b", "ralph/fleet"]));
        assert_eq!(landed.len(), 1, "{}", why());
        assert!(landed[0].contains("Ralph-Iteration: develop/1"), "{}", why());
        assert_eq!(f.task_state(task), "merged", "{}", why());
        let left = f.git(&["branch", "-v", "--list", &format!("ralph/{task}")]);
        assert!(
            left.is_empty(),
            "seed {seed}: {left} left: {}\n{:?}\n{}",
            f.state()["tasks"][task],
            f.worktrees(),
            why()
        );
        assert!(f.git(&["show", &format!("ralph/fleet:{task}.txt")]).lines().count() >= 1);
    }
    // Only the landing worktree stays, and no rebase or merge is left in it.
    let listed = f.worktrees();
    assert!(listed.len() <= 2 && listed.iter().skip(1).all(|w| w.ends_with("/.land")), "seed {seed}: {listed:?}");
    let admin = f.repo.join(".git/worktrees");
    for entry in std::fs::read_dir(&admin).into_iter().flatten().flatten() {
        for op in ["rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD"] {
            assert!(!entry.path().join(op).exists(), "seed {seed}: {op} left in {}", entry.path().display());
        }
    }
    assert!(f.git(&["status", "--porcelain", "--untracked-files=no"]).is_empty(), "seed {seed}: the main checkout");
    f.assert_no_process_left();
}

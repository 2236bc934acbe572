//! The crash-consistency harness at test-suite size: about 50 SIGKILLs at random
//! moments of scripted multi-phase runs (seeded; the seed is printed). The same
//! test at 1000 kills is `scripts/crash-consistency.sh`; figures in
//! docs/reliability.md.

use std::time::{Duration, Instant};

use crate::crash_harness::{Rng, audit, crash_until_done, env_count, multi_phase, seed};
use crate::harness::Project;

/// Kills per run at most, so that every run also gets to its end.
const KILLS_PER_RUN: usize = 12;

#[test]
fn sigkill_at_random_moments_loses_nothing() {
    let seed = seed("RALPH_CRASH_SEED");
    let target = env_count("RALPH_CRASH_KILLS", 50);
    let mut rng = Rng::new(seed);
    let scenario = multi_phase();
    let started = Instant::now();
    let (mut kills, mut runs, mut lives) = (0, 0, 0);
    while kills < target {
        // Each ralph has its timeout; this bounds the loop when kills keep missing.
        assert!(started.elapsed() < Duration::from_secs(900), "seed {seed}: {kills} kills in 15 minutes");
        let p = Project::new().config(&scenario.config);
        let history = crash_until_done(&p, &scenario, &mut rng, KILLS_PER_RUN.min(target - kills));
        audit(&p, &scenario, &history);
        kills += history.kills();
        lives += history.lives.len();
        runs += 1;
    }
    eprintln!(
        "crash harness: seed {seed}, {kills} kills over {runs} runs ({lives} starts of ralph), all consistent, in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

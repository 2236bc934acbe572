#!/usr/bin/env bash
# The fleet's supervisor SIGKILLed at random moments, 100 times (or as many as the
# first argument says): `ralph fleet` started again after each until it exits 0,
# then every fleet audited (each task's work exactly once on its branch, no orphan
# worktree, no process left). Figures in docs/reliability.md ("Fleets").
# A failure prints the seed; replay it with RALPH_FLEET_SEED=<seed>.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-100}
RALPH_FLEET_KILLS=$kills cargo test --locked --test integration -- \
  --exact fleet_kill::sigkill_of_the_supervisor_at_random_moments_loses_nothing --nocapture

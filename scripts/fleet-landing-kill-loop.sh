#!/usr/bin/env bash
# The merge queue SIGKILLed at random moments, 100 times (or as many as the first
# argument says): the supervisor alone, or its whole process group with the git and
# the check it runs, while tasks finish and land; `ralph fleet` started again after
# each until it exits 0, then every fleet audited (each task's commit on `into`
# exactly once, every task merged, no rebase left, no orphan worktree, no process
# left). Figures in docs/reliability.md ("Fleets").
# A failure prints the seed; replay it with RALPH_LANDING_SEED=<seed>.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-100}
RALPH_LANDING_KILLS=$kills cargo test --locked --test integration -- \
  --exact fleet_landing_kill::sigkill_during_landings_lands_every_task_exactly_once --nocapture

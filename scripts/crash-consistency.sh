#!/usr/bin/env bash
# The crash-consistency harness at full size: SIGKILL ralph at 1000 random moments
# of scripted multi-phase runs (or as many as the first argument says), resume
# after each, audit every run (docs/reliability.md, "Crash consistency").
# A failure prints the seed; replay it with RALPH_CRASH_SEED=<seed>.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-1000}
RALPH_CRASH_KILLS=$kills cargo test --locked --test integration -- \
  --exact crash::sigkill_at_random_moments_loses_nothing --nocapture

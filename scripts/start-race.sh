#!/usr/bin/env bash
# Two job-engine starts racing on a fresh directory, N times (default 500): the figure
# for "the job-engine entry point never refuses a fresh directory" in
# docs/reliability.md.
#
#   scripts/start-race.sh [N] [RALPH_BINARY]
#
# Each round makes a fresh project (no `.agent/` yet) whose one-iteration workflow the
# scripted agent finishes at once, starts two `ralph --resume-or-start` in it at the
# same instant, and waits for both. Both must exit 0: one runs the workflow, the other
# waits for the lock and finds the run completed. Any other exit is a failure; its
# output is kept under the printed directory. Builds the debug binary unless a binary
# is given (to measure an older one).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-500}
ralph=${2:-}
if [ -z "$ralph" ]; then
  cargo build --locked --quiet
  ralph="$PWD/target/debug/ralph"
fi
work=$(mktemp -d)
export XDG_STATE_HOME="$work/state"
failures=0
started=$(date +%s)
for i in $(seq 1 "$rounds"); do
  dir="$work/p$i"
  mkdir -p "$dir"
  echo "Finish at once." > "$dir/PROMPT.md"
  cat > "$dir/ralph.toml" <<'TOML'
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{ done = "at once" }]

[chains]
main = ["a"]

[phases.develop]
chain = "main"
TOML
  "$ralph" -q -C "$dir" --resume-or-start >"$dir/a.out" 2>&1 &
  a=$!
  "$ralph" -q -C "$dir" --resume-or-start >"$dir/b.out" 2>&1 &
  b=$!
  code_a=0 code_b=0
  wait "$a" || code_a=$?
  wait "$b" || code_b=$?
  if [ "$code_a" -ne 0 ] || [ "$code_b" -ne 0 ]; then
    failures=$((failures + 1))
    echo "round $i: exit $code_a and $code_b" >&2
    sed 's/^/  a: /' "$dir/a.out" >&2
    sed 's/^/  b: /' "$dir/b.out" >&2
  else
    rm -rf "$dir"
  fi
done
elapsed=$(( $(date +%s) - started ))
echo "$rounds rounds, $failures failed, ${elapsed}s ($ralph)"
if [ "$failures" -eq 0 ]; then
  rm -rf "$work"
else
  echo "the failed rounds are kept in $work" >&2
  exit 1
fi

#!/usr/bin/env bash
# Regenerates scripts/symbol-order.txt: the functions a run of ralph executes, which
# build.rs asks the linker (lld) to place together at the start of the executable's
# code (docs/performance.md, "Peak RSS").
#
# Why: the kernel maps an executable's pages 64 KiB at a time around each page
# fault (fault-around), so a run that touches ~1,200 functions scattered over 6.8 MB
# of code keeps 4–5 MB of it resident; packed together they are 1.8 MiB.
#
#   cargo build --release && scripts/symbol-order.sh [target/release/ralph]
#
# Needs valgrind (callgrind lists every function executed, by its mangled name).
# Run it again after a toolchain or dependency upgrade: a name that no longer
# exists is skipped by the linker, so a stale list costs memory, never correctness;
# `ONLY=floods benches/run.sh` shows the peak RSS it buys.
set -euo pipefail

cd "$(dirname "$0")/.."
RALPH=$(realpath "${1:-target/release/ralph}")
OUT=scripts/symbol-order.txt
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export XDG_STATE_HOME="$WORK/state"

# One run per output shape the pipeline has: stream-json lines, text lines, one
# line past the long-line cap; each a real run from start-up to tear-down.
line99=$(printf '%099d' 0 | tr 0 x)
json="{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"${line99:0:29}\"}]},\"session_id\":\"s-1\"}"
workload() {
    # $1 name, $2 output format, $3 generator (shell)
    local ws="$WORK/$1"
    mkdir -p "$ws"
    printf 'profile\n' >"$ws/PROMPT.md"
    printf '%s\n' "$3" >"$ws/gen.sh"
    cat >"$ws/ralph.toml" <<EOF
[agents.a]
kind = "command"
command = ["sh", "gen.sh", "{prompt}"]
output = "$2"
[chains]
main = ["a"]
[phases.work]
chain = "main"
done = "exit0"
EOF
    (cd "$ws" && valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.$1" \
        "$RALPH" -q </dev/null >/dev/null 2>&1) || true
}
workload json claude-stream-json "yes '$json' | head -n 20000"
workload text text "yes $line99 | head -n 20000"
workload long text "head -c 3000000 /dev/zero | tr '\\0' x; echo"
# And the demo: a crash, a fallover, a Ctrl+C and a resume (its runs are children).
(cd "$WORK" && valgrind --tool=callgrind --demangle=no --trace-children=yes \
    --callgrind-out-file="$WORK/cg.demo.%p" "$RALPH" demo </dev/null >/dev/null 2>&1) || true

# Every function named in the profiles (callers and callees), once; Rust's mangled
# names only (the C library's are not ours to place). Sorted, so that a new list
# differs from the old by the functions that came and went: where in the packed
# stretch each one lands does not change what is resident.
grep -hE '^c?fn=\([0-9]+\) ' "$WORK"/cg.* | sed -E 's/^c?fn=\([0-9]+\) //' |
    sed -E "s/'[0-9]+$//" | grep -E '^_(ZN|R)' | LC_ALL=C sort -u >"$OUT"
echo "$OUT: $(wc -l <"$OUT") functions"

#!/usr/bin/env bash
# Whole-process benchmarks of ralph (docs/performance.md): every figure of the
# performance targets, each printed against its target.
#
#   benches/run.sh [path/to/ralph]        # default: target/release/ralph
#   ROUNDS=5 FLOOD_MB=200 LINE_MB=100 LAUNCHES=1000 IDLE_SECS=30 VALGRIND=1 benches/run.sh
#   ONLY=floods,idle benches/run.sh       # some figures only: calls, startup, floods,
#                                         # checkpoint, crash, stall, idle, watch, ctrlc
#
# Needs: bash, awk, python3, /usr/bin/time (GNU), strace; valgrind (optional) for the
# instruction counts that stay meaningful on a loaded machine. The runs happen in
# temp directories under $TMPDIR, so put TMPDIR on the disk whose behaviour you
# want to measure (checkpoint figures are mostly the file system's).
#
# Wall times are medians of ROUNDS runs. The floods' CPU is ralph's own (its
# threads, read by benches/own_cpu.py from the exited process before it is reaped);
# other CPU figures come from getrusage of the children (GNU time) or perf.
set -euo pipefail

RALPH=${1:-target/release/ralph}
RALPH=$(cd "$(dirname "$RALPH")" && pwd)/$(basename "$RALPH")
BENCHES=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-5}
FLOOD_MB=${FLOOD_MB:-200}
LINE_MB=${LINE_MB:-100}
LAUNCHES=${LAUNCHES:-1000}
IDLE_SECS=${IDLE_SECS:-30}
CALLS=100
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The runs register themselves (src/state/registry.rs): keep that out of ~/.local.
export XDG_STATE_HOME="$WORK/state"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# `report FIGURE MEASURED TARGET NOTE`
report() { printf '%-58s %-26s target %-24s %s\n' "$1" "$2" "$3" "${4:-}"; }
have() { command -v "$1" >/dev/null 2>&1; }
want() { [[ -z ${ONLY:-} || ",$ONLY," == *",$1,"* ]]; }

# A fresh workspace with PROMPT.md and the given ralph.toml (under $2, default
# $WORK); prints its path.
workspace() {
    local d
    d=$(mktemp -d "${2:-$WORK}/ws.XXXXXX")
    printf 'benchmark\n' >"$d/PROMPT.md"
    printf '%s\n' "$1" >"$d/ralph.toml"
    echo "$d"
}

quick_config() {
    cat <<EOF
[agents.quick]
kind = "command"
command = ["true", "{prompt}"]
[chains]
main = ["quick"]
[phases.work]
chain = "main"
done = "exit0"
iterations = $1
EOF
}

# Seconds for `ralph -q` in workspace $1 (fails the script if ralph fails).
time_ralph() {
    local t0 t1
    t0=$(now)
    (cd "$1" && "$RALPH" -q </dev/null >/dev/null 2>&1) || { echo "ralph failed in $1" >&2; exit 1; }
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f\n", b - a}'
}

time_bare() {
    local t0 t1 i
    t0=$(now)
    for ((i = 0; i < $1; i++)); do /usr/bin/true prompt; done
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f\n", b - a}'
}

echo "ralph: $RALPH ($("$RALPH" --version 2>/dev/null || echo '?'))"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), TMPDIR on $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2" "$1}')"
echo

# --- overhead per agent call ------------------------------------------------------
if want calls; then
# `per_call_rounds DIR`: the per-call overhead of ROUNDS 100-call runs in DIR, one
# figure a line (ms).
per_call_rounds() {
    local r ws with bare
    for ((r = 0; r < ROUNDS; r++)); do
        ws=$(workspace "$(quick_config $CALLS)" "$1")
        with=$(time_ralph "$ws")
        bare=$(time_bare $CALLS)
        awk -v w="$with" -v b="$bare" -v n=$CALLS 'BEGIN {printf "%.3f\n", (w - b) / n * 1000}'
    done
}
mapfile -t per_call < <(per_call_rounds "$WORK")
report "overhead per agent call (100 calls minus bare spawns)" \
    "$(printf '%s\n' "${per_call[@]}" | median) ms" "<= 1.5 ms" "runs: ${per_call[*]}"
# What the figure above is made of: ralph's own work, and one fdatasync of the
# journal per call, which is this disk's (docs/operations.md, "The checkpoint").
python3 - "$WORK" <<'PY' >"$WORK/fdatasync.out"
import os, sys, time
path = os.path.join(sys.argv[1], "sync-probe")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
took = []
for _ in range(100):
    os.write(fd, b"x" * 2047 + b"\n")
    t = time.perf_counter()
    os.fdatasync(fd)
    took.append((time.perf_counter() - t) * 1000)
took.sort()
print(f"{took[50]:.2f} ms ({took[10]:.2f}-{took[90]:.2f}, p10-p90)")
PY
# ralph's CPU per call, user and system, which the run queue does not inflate:
# a 101-call run minus a 1-call run, minus the CPU of 100 bare `true`s.
cpu_of() { # `cpu_of CMD...`: user and system seconds of CMD and its children
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime, r.ru_stime)' "$@"
}
cpu_rounds=()
for ((r = 0; r < 3; r++)); do
    ws1=$(workspace "$(quick_config 1)")
    ws101=$(workspace "$(quick_config $((CALLS + 1)))")
    one=$(cd "$ws1" && cpu_of "$RALPH" -q)
    many=$(cd "$ws101" && cpu_of "$RALPH" -q)
    bare=$(cpu_of bash -c "for ((i = 0; i < $CALLS; i++)); do /usr/bin/true prompt; done")
    cpu_rounds+=("$(awk -v a="$one" -v b="$many" -v t="$bare" -v n=$CALLS 'BEGIN {
        split(a, x, " "); split(b, y, " "); split(t, z, " ")
        printf "%.2f", (y[1] + y[2] - x[1] - x[2] - z[1] - z[2]) / n * 1000 }')")
done
# User and system together: the kernel splits them by sampling, their sum is exact.
report "  ralph's CPU per call, user + system (load-proof)" \
    "$(printf '%s\n' "${cpu_rounds[@]}" | median) ms" "-" \
    "runs: ${cpu_rounds[*]}; with the kernel's: the fork, the files, the sync"
report "  this disk's fdatasync of a 2 KB append (median of 100)" "$(cat "$WORK/fdatasync.out")" "-" \
    "the one sync a call waits for"
if [[ -d /dev/shm && -w /dev/shm && $(df -T "$WORK" | awk 'NR==2 {print $2}') != tmpfs ]]; then
    shm=$(mktemp -d /dev/shm/ralph-bench.XXXXXX)
    mapfile -t on_tmpfs < <(per_call_rounds "$shm")
    rm -rf "$shm"
    report "  the same on tmpfs (the sync costs nothing: ralph's own)" \
        "$(printf '%s\n' "${on_tmpfs[@]}" | median) ms" "-" "runs: ${on_tmpfs[*]}"
fi

ws=$(workspace "$(quick_config $CALLS)")
(cd "$ws" && /usr/bin/time -f '%M' -o "$WORK/rss-calls.out" "$RALPH" -q </dev/null >/dev/null 2>&1) || true
report "  peak RSS over a 100-call run (max over ralph and its children)" \
    "$(awk '{printf "%.1f MiB", $1 / 1024}' "$WORK/rss-calls.out")" "<= 12 MiB"

ws=$(workspace "$(quick_config $CALLS)")
(cd "$ws" && strace -f -c -o "$WORK/strace-calls" "$RALPH" -q </dev/null >/dev/null 2>&1) || true
syncs=$(awk '$NF ~ /^(fsync|fdatasync|sync_file_range)$/ {n += $4} END {print n + 0}' "$WORK/strace-calls")
renames=$(awk '$NF ~ /^rename/ {n += $4} END {print n + 0}' "$WORK/strace-calls")
opens=$(awk '$NF == "openat" {n += $4} END {print n + 0}' "$WORK/strace-calls")
report "  fsyncs / renames in a 100-call run (strace -c -f)" "$syncs / $renames" "-" \
    "$(awk -v s="$syncs" -v o="$opens" 'BEGIN {printf "%.1f fsyncs, %.0f openat per call (the agent'"'"'s too)", s / 100, o / 100}')"

if [[ ${VALGRIND:-1} != 0 ]] && have valgrind; then
    ws=$(workspace "$(quick_config $CALLS)")
    (cd "$ws" && valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.%p" "$RALPH" -q </dev/null \
        >/dev/null 2>"$WORK/cg-calls.txt") || true
    ir=$(grep -m1 'Collected' "$WORK/cg-calls.txt" | awk '{print $NF}')
    ws=$(workspace "$(quick_config 1)")
    (cd "$ws" && valgrind --tool=callgrind --callgrind-out-file="$WORK/cg1.%p" "$RALPH" -q </dev/null \
        >/dev/null 2>"$WORK/cg-one.txt") || true
    ir1=$(grep -m1 'Collected' "$WORK/cg-one.txt" | awk '{print $NF}')
    report "  ralph's instructions per call (callgrind, load-proof)" \
        "$(awk -v a="$ir" -v b="$ir1" -v n=$CALLS 'BEGIN {printf "%.0f", (a - b) / (n - 1)}')" "-" \
        "one-call run: $ir1 instructions in ralph's own process"
fi
fi

# --- start-up + tear-down -----------------------------------------------------------
if want startup; then
one=()
for ((r = 0; r < ROUNDS * 2; r++)); do
    ws=$(workspace "$(quick_config 1)")
    with=$(time_ralph "$ws")
    bare=$(time_bare 1)
    one+=("$(awk -v w="$with" -v b="$bare" 'BEGIN {printf "%.2f\n", (w - b) * 1000}')")
done
report "start-up + tear-down of a one-call run" "$(printf '%s\n' "${one[@]}" | median) ms" "<= 4 ms" \
    "runs: ${one[*]}"

# CPU time with sub-millisecond resolution (GNU time rounds to 10 ms): perf's
# task-clock over ralph and its agents. Unlike wall time, it does not grow with the
# run queue of a loaded machine.
if perf stat -x, -e task-clock true >/dev/null 2>&1; then
    task_clock() {
        (cd "$1" && perf stat -x, -e task-clock -o "$WORK/perf.out" "$RALPH" -q </dev/null >/dev/null 2>&1) || true
        awk -F, '$3 == "task-clock" {print $1}' "$WORK/perf.out"
    }
    bare_clock() {
        perf stat -x, -e task-clock -o "$WORK/perf.out" sh -c "for i in \$(seq $1); do /usr/bin/true prompt; done" \
            >/dev/null 2>&1
        awk -F, '$3 == "task-clock" {print $1}' "$WORK/perf.out"
    }
    c100=$(task_clock "$(workspace "$(quick_config $CALLS)")")
    c1=$(task_clock "$(workspace "$(quick_config 1)")")
    b100=$(bare_clock $CALLS)
    report "  CPU per call (perf task-clock, ralph and agents)" \
        "$(awk -v a="$c100" -v b="$c1" -v n=$CALLS 'BEGIN {printf "%.3f ms", (a - b) / (n - 1)}')" "-" \
        "a bare spawn of true from sh: $(awk -v a="$b100" -v n=$CALLS 'BEGIN {printf "%.3f ms", a / n}')"
    report "  CPU of a one-call run (perf task-clock)" "${c1} ms" "-" "start-up + tear-down + one call"
fi
fi

# --- floods: throughput, CPU, peak RSS --------------------------------------------
if want floods; then
line99=$(printf '%099d' 0 | tr 0 x)
flood_config() {
    # $1: output ("text" or "claude-stream-json"), $2: the generator argv as TOML
    cat <<EOF
[agents.flood]
kind = "command"
command = $2
output = "$1"
[chains]
main = ["flood"]
[phases.work]
chain = "main"
done = "exit0"
EOF
}
# ralph's own CPU (its threads, not the agent's) and the wall time, through
# benches/own_cpu.py; then the peak RSS of ralph and its children in a second run
# under GNU time (python's own pages would count in the first: a forked child's
# peak survives its exec). Prints "wall user sys maxrss_kb".
timed() {
    (cd "$1" && python3 "$BENCHES/own_cpu.py" "$WORK/time.out" "$RALPH" -q </dev/null >/dev/null 2>&1) || true
    rm -rf "$1/.agent"
    (cd "$1" && /usr/bin/time -f '%M' -o "$WORK/rss.out" "$RALPH" -q </dev/null >/dev/null 2>&1) || true
    echo "$(cat "$WORK/time.out") $(cat "$WORK/rss.out")"
}
flood() {
    # $1 label, $2 output, $3 shell generator (written to gen.sh in the workspace),
    # $4 the megabytes it writes, $5 the target of ralph's own CPU
    local ws t wall user sys rss cpu
    ws=$(workspace "$(flood_config "$2" '["sh", "gen.sh", "{prompt}"]')")
    printf '%s\n' "$3" >"$ws/gen.sh"
    t=$(timed "$ws")
    read -r wall user sys rss <<<"$t"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
    report "$1: wall" "${wall} s ($(awk -v w="$wall" -v m="$4" 'BEGIN {printf "%.0f", m / w}') MB/s)" "-"
    report "  ralph's own CPU (its threads, not the agent's)" "${cpu} s" "$5" "user+sys $user+$sys s"
    report "  peak RSS (max over ralph and its children)" \
        "$(awk -v k="$rss" 'BEGIN {printf "%.1f MiB", k / 1024}')" "<= 12 MiB"
    echo "  .agent/ after the run: $(du -sh "$ws/.agent" | cut -f1)"
}
lines=$((FLOOD_MB * 1000 * 1000 / 100))
flood "text flood, ${FLOOD_MB} MB of 100-byte lines" text "yes $line99 | head -n $lines" "$FLOOD_MB" \
    "<= 1.5 s per 200 MB"
# 100 bytes with the newline.
json_line="{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"${line99:0:29}\"}]}}"
flood "stream-json flood, ${FLOOD_MB} MB of 100-byte events" claude-stream-json \
    "yes '$json_line' | head -n $lines" "$FLOOD_MB" "<= 4 s per 200 MB"
# Generated once and `cat`ed: the peak RSS is the max over ralph and its children,
# and python's alone is ~26 MiB (the figure was the generator's, not ralph's).
python3 "$BENCHES/code_text.py" "$FLOOD_MB" >"$WORK/code.txt"
flood "code flood, ${FLOOD_MB} MB of generated Rust source (text)" text \
    "cat '$WORK/code.txt'" "$FLOOD_MB" "<= 1.5 s per 200 MB"
rm -f "$WORK/code.txt"
flood "one ${LINE_MB} MB line (text)" text "head -c $((LINE_MB * 1000 * 1000)) /dev/zero | tr '\\0' x; echo" "$LINE_MB" "-"
fi

# --- checkpoint after many launches of a session-reporting agent --------------------
if want checkpoint; then
sim_many() {
    cat <<EOF
[agents.s]
kind = "sim"
[[agents.s.script]]
steps = [{ usage = { input_tokens = 10, output_tokens = 5, cost_usd = 0.001 } }, { say = "ok" }]
[chains]
main = ["s"]
[phases.work]
chain = "main"
done = "exit0"
iterations = $1
EOF
}
for n in 100 "$LAUNCHES"; do
    ws=$(workspace "$(sim_many "$n")")
    w=$(time_ralph "$ws")
    report "checkpoint after $n launches: size" "$(wc -c <"$ws/.agent/checkpoint.json") B" "bounded" \
        "run wall $(awk -v w="$w" -v n="$n" 'BEGIN {printf "%.2f ms per launch", w / n * 1000}')"
done
fi

# --- crash -> next attempt ----------------------------------------------------------
if want crash; then
crash_config='[retry]
backoff_base = "1ms"
backoff_max = "1ms"
agent_backoff_base = "1ms"
[agents.c]
kind = "sim"
[[agents.c.script]]
steps = [{ say = "starting" }, { crash = "SIGSEGV" }]
[[agents.c.script]]
steps = [{ done = "ok" }]
[chains]
main = ["c"]
[phases.work]
chain = "main"'
gaps=()
for ((r = 0; r < ROUNDS; r++)); do
    ws=$(workspace "$crash_config")
    (cd "$ws" && strace -f --seccomp-bpf -ttt -q -e trace=execve,wait4 -o "$WORK/crash.st" "$RALPH" -q </dev/null \
        >/dev/null 2>&1) || true
    # The first agent's death (+++ killed by SIGSEGV +++) to the next execve of ralph's
    # binary (the second launch of the scripted agent).
    gaps+=("$(awk '/killed by SIGSEGV/ {d = $2} d && /execve\(/ && $2 > d {printf "%.2f\n", ($2 - d) * 1000; exit}' \
        "$WORK/crash.st")")
done
report "agent crash -> next attempt spawned (strace -ttt)" "$(printf '%s\n' "${gaps[@]}" | median) ms" \
    "<= 5 ms (backoff 1 ms)" "runs: ${gaps[*]}"
# strace stops ralph at every traced call and inflates the gap several times; the
# kernel's scheduler tracepoints (perf, where allowed) do not: the first agent's
# exit to the clone of the next one, both seen from the kernel.
if have perf && perf record -q -o /dev/null -e sched:sched_process_exit true >/dev/null 2>&1; then
    gaps=()
    for ((r = 0; r < ROUNDS; r++)); do
        ws=$(workspace "$crash_config")
        (cd "$ws" && perf record -q -o "$WORK/crash.perf" -e sched:sched_process_exit -e sched:sched_process_fork \
            -- "$RALPH" -q </dev/null >/dev/null 2>&1) || true
        gaps+=("$(perf script -i "$WORK/crash.perf" -F pid,time,event,trace 2>/dev/null | python3 -c '
import re, sys
root, kids, exits = None, [], {}
for line in sys.stdin:
    m = re.match(r"\s*(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
    if not m:
        continue
    pid, at, event, rest = m.group(1), float(m.group(2)), m.group(3), m.group(4)
    root = root or pid
    if event.endswith("fork") and pid == root:
        kids.append((at, re.search(r"child_pid=(\d+)", rest).group(1)))
    elif event.endswith("exit"):
        exits.setdefault(pid, at)
# The agents are the children of ralph that exited before the next one started.
agents = [(at, kid) for at, kid in kids if kid in exits]
gap = [b[0] - exits[a[1]] for a, b in zip(agents, agents[1:]) if exits[a[1]] < b[0]]
print("%.2f" % (gap[0] * 1000) if gap else "nan")
')")
    done
    report "agent crash -> next attempt spawned (perf sched)" "$(printf '%s\n' "${gaps[@]}" | median) ms" \
        "<= 5 ms (backoff 1 ms)" "runs: ${gaps[*]}"
fi
fi

# --- stall detection latency ---------------------------------------------------------
if want stall; then
stall_config='[retry]
agent_attempts = 1
[timeouts]
stall = "1s"
grace = "1s"
[agents.h]
kind = "sim"
[[agents.h.script]]
steps = [{ say = "about to go quiet" }, { hang = true }]
[chains]
main = ["h"]
[phases.work]
chain = "main"'
late=()
for ((r = 0; r < ROUNDS; r++)); do
    ws=$(workspace "$stall_config")
    (cd "$ws" && strace -ttt -qq -e trace=read,kill -e signal=none -o "$WORK/stall.st" "$RALPH" -q </dev/null \
        >/dev/null 2>&1) || true
    # The last successful read before ralph's first kill() of the agent's group is the
    # agent's last output; the stall limit is 1 s.
    late+=("$(awk '/ read\(/ && !/= 0$/ && !/EAGAIN/ {last = $1} / kill\(-/ {printf "%.2f\n", ($1 - last - 1) * 1000; exit}' \
        "$WORK/stall.st")")
done
report "stall detected after the configured limit (strace -ttt)" "$(printf '%s\n' "${late[@]}" | median) ms" \
    "<= 10 ms" "runs: ${late[*]}"
fi

# --- wakeups while the agent is silent ---------------------------------------------
if want idle; then
idle_config="[agents.q]
kind = \"sim\"
[[agents.q.script]]
steps = [{ say = \"thinking\" }, { sleep = \"$((2 * IDLE_SECS + 10))s\" }, { done = \"ok\" }]
[chains]
main = [\"q\"]
[phases.work]
chain = \"main\""
ws=$(workspace "$idle_config")
(cd "$ws" && exec "$RALPH" -q </dev/null >/dev/null 2>&1) &
pid=$!
sleep 2
# Wakeups, two ways: the syscalls strace sees complete in the window (a wait that was
# already blocked when strace attached and still is when it detaches is not counted),
# and the context switches of every ralph thread from /proc (each wakeup is one).
ctxt() { cat /proc/"$pid"/task/*/status 2>/dev/null | awk '/voluntary_ctxt_switches/ {n += $2} END {print n + 0}'; }
threads=$(ls /proc/"$pid"/task | wc -l)
c0=$(ctxt)
sleep "$IDLE_SECS"
c1=$(ctxt)
timeout -s INT "$IDLE_SECS" strace -c -f -p "$pid" -o "$WORK/idle.st" 2>/dev/null || true
kill -INT "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
calls=$(awk '$NF == "total" {print $(NF-1)}' "$WORK/idle.st")
report "syscalls in ${IDLE_SECS} s of a silent agent (strace -c -f)" "${calls:-0}" "none" \
    "$(awk 'NR > 2 && $NF != "total" && $NF !~ /^-/ && NF >= 5 {printf "%s=%s ", $NF, $4}' "$WORK/idle.st")"
report "  context switches of ralph's $threads threads (/proc), ${IDLE_SECS} s" "$((c1 - c0))" "none"
fi

# --- ralph watch over many registered runs ----------------------------------------
if want watch; then
# One finished run registers itself; its project is copied WATCH_RUNS - 1 times and
# its registry entry with it (the file name is the first 8 bytes of the SHA-256 of
# the project path, src/state/registry.rs), then `ralph watch --once` is timed. The
# first pass reads every run; later ones skip the runs it found settled (src/watch/seen.rs).
WATCH_RUNS=${WATCH_RUNS:-1000}
reg="$XDG_STATE_HOME/ralph/runs"
rm -rf "$reg"
src=$(workspace "$(quick_config 1)")
time_ralph "$src" >/dev/null
entry=$(ls "$reg"/*.json | grep -v '\.watch\.json$' | head -1)
for ((i = 1; i < WATCH_RUNS; i++)); do
    dst="$WORK/watched/p$i"
    mkdir -p "$dst"
    cp -r "$src/.agent" "$src/ralph.toml" "$src/PROMPT.md" "$dst/"
    key=$(printf '%s' "$dst" | sha256sum | cut -c1-16)
    sed "s|$src|$dst|g" "$entry" >"$reg/$key.json"
done
passes=()
for ((r = 0; r < ROUNDS; r++)); do
    t0=$(now)
    "$RALPH" watch --once </dev/null >/dev/null 2>&1 || true
    t1=$(now)
    passes+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", (b - a) * 1000}')")
done
report "ralph watch --once over $(ls "$reg"/*.json | grep -vc '\.watch\.json$') registered runs" \
    "$(printf '%s\n' "${passes[@]}" | median) ms" "<= 20 ms a pass" "runs (whole process): ${passes[*]}"
fi

# --- Ctrl+C to exit (also in cargo bench --bench overhead) ---------------------------
if want ctrlc; then
ctrlc_config='[agents.slow]
kind = "sim"
[[agents.slow.script]]
steps = [{ pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, duration = "60s" } }]
[chains]
main = ["slow"]
[phases.work]
chain = "main"'
stops=()
for ((r = 0; r < ROUNDS; r++)); do
    ws=$(workspace "$ctrlc_config")
    (cd "$ws" && exec "$RALPH" -q </dev/null >/dev/null 2>&1) &
    pid=$!
    for ((i = 0; i < 2000; i++)); do [[ -s $ws/agent.pid ]] && break; sleep 0.01; done
    sleep 0.2
    t0=$(now)
    kill -INT "$pid"
    wait "$pid" 2>/dev/null || true
    t1=$(now)
    stops+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", (b - a) * 1000}')")
done
report "first Ctrl+C to ralph's exit, agent in a tool call" "$(printf '%s\n' "${stops[@]}" | median) ms" "-" \
    "runs: ${stops[*]}"
fi

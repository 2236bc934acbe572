#!/usr/bin/env bash
# The fleet's figures (issues 33 and 34; docs/performance.md, "Fleets"), each printed
# against its target:
#
#   benches/fleet.sh [path/to/ralph]       # default: target/release/ralph
#   ONLY=idle,status,queue,shared benches/fleet.sh
#     idle    50 tasks, max_parallel 8, agents that wait: the supervisor's CPU while
#             every task waits on its agent, its peak RSS, the fleet's RSS against 8
#             single runs; then, from the fleet's journal, a task's run ending to the
#             next task's run starting (less git's worktree creation); 50 disjoint
#             tasks landing with 0 evictions. The yardstick is a task's run without
#             the fleet: the same ralph.toml and agent, output to a log file, sampled
#             at the tasks' age (past the 10 s an idle pool thread lives, as a run
#             waiting on its agent is), the mean of $SINGLES (3) such runs: one
#             process's file-backed pages vary by ~1 % from run to run
#     status  `ralph fleet status` over 200 tasks
#     queue   the queue's own cost per landing on a repository of 10,000 files and
#             5,000 commits
#     shared  10 tasks editing one shared file: evictions resolved by their agents,
#             none lost
#
# Needs: bash, git (2.40+), python3 (benches/fleet_figures.py reads the journals).
set -euo pipefail

RALPH=${1:-target/release/ralph}
RALPH=$(cd "$(dirname "$RALPH")" && pwd)/$(basename "$RALPH")
BENCHES=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export XDG_STATE_HOME="$WORK/state" GIT_CONFIG_NOSYSTEM=1 HOME="$WORK/home"
mkdir -p "$HOME"
git config --global user.email bench@example.com
git config --global user.name Bench
git config --global init.defaultBranch main
want() { [[ -z ${ONLY:-} || ",$ONLY," == *",$1,"* ]]; }
report() { printf '%-62s %-28s target %s\n' "$1" "$2" "$3"; }
figures() { python3 "$BENCHES/fleet_figures.py" "$@"; }

# A repository at $1 with one commit, `ralph.toml` ($2) and $3 task files.
repo() {
    local dir=$1 config=$2 tasks=$3
    mkdir -p "$dir/tasks"
    git -C "$dir" init -q
    echo "# bench" >"$dir/README.md"
    git -C "$dir" add README.md
    git -C "$dir" commit -qm initial
    printf '%s\n' "$config" >"$dir/ralph.toml"
    for i in $(seq -w 1 "$tasks"); do echo "Task $i: write your file." >"$dir/tasks/t$i.md"; done
}

# An agent that writes its own file, waits $1 seconds, and is done.
waits() {
    cat <<EOF
[fleet]
max_cost = "none"
max_parallel = ${2:-8}
[agents.w]
kind = "command"
command = ["sh", "-c", "echo \"\$RALPH_FLEET_TASK\" > \"\$RALPH_FLEET_TASK.txt\"; sleep $1; echo '<promise>DONE</promise>'", "agent", "{prompt}"]
[chains]
main = ["w"]
[phases.develop]
chain = "main"
EOF
}

# The sum of a /proc memory field (kB) over the processes whose command line
# contains $2: VmRSS, RssAnon (from status), Pss (from smaps_rollup).
mem_of() {
    local field=$1 total=0 pid file=status
    [[ $field == Pss ]] && file=smaps_rollup
    for pid in $(pgrep -f -- "$2" || true); do
        total=$((total + $(awk -v f="$field:" '$1 == f {print $2; exit}' "/proc/$pid/$file" 2>/dev/null || echo 0)))
    done
    echo "$total"
}

if want idle; then
    # The yardstick first: single runs of the same ralph.toml and agent, alone, each
    # as a task runs (not quiet, its output to a log file), sampled at the age the
    # tasks are sampled at below. Sampled younger, a run still has the pool thread
    # of its connectivity probe (tokio keeps an idle one 10 s), whose exit maps
    # ~200 kB more of libc: that is the age, not the fleet.
    singles=${SINGLES:-3}
    for s in $(seq 1 "$singles"); do
        single="$WORK/single$s"
        mkdir -p "$single"
        git -C "$single" init -q
        echo "Write your file." >"$single/PROMPT.md"
        git -C "$single" add PROMPT.md
        git -C "$single" commit -qm initial
        waits 20 >"$single/ralph.toml"
        "$RALPH" -C "$single" >"$WORK/single$s.log" 2>&1 &
    done
    sleep 14
    single_rss=$(( $(mem_of VmRSS "ralph.* -C $WORK/single") / singles ))
    single_anon=$(( $(mem_of RssAnon "ralph.* -C $WORK/single") / singles ))
    wait
    dir="$WORK/idle/repo"
    repo "$dir" "$(waits 20)" 50
    (cd "$dir" && exec "$RALPH" fleet -q >"$WORK/idle.out" 2>&1) &
    sup=$!
    # All 8 slots busy: every task's agent sleeps.
    sleep 5
    ticks() { awk '{print $14 + $15}' "/proc/$sup/stat"; }
    t0=$(ticks); sleep 5; t1=$(ticks)
    hz=$(getconf CLK_TCK)
    # The tasks started in the fleet's first 1-3 s: sampled at 15 s, they are as
    # old as the single runs were.
    sleep 5
    sup_hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$sup/status")
    sup_rss=$(awk '/^VmRSS/ {print $2}' "/proc/$sup/status")
    tasks="ralph.* -C $WORK/idle/repo-fleet/"
    running=$(pgrep -fc -- "$tasks" || true)
    tasks_rss=$(mem_of VmRSS "$tasks")
    tasks_anon=$(mem_of RssAnon "$tasks")
    fleet_pss=$(( $(mem_of Pss "$tasks") + $(awk '$1 == "Pss:" {print $2}' "/proc/$sup/smaps_rollup") ))
    report "supervisor CPU while every task waits (8 of 50 running)" \
        "$(( (t1 - t0) * 1000 / hz )) ms in 5 s" "~0 (no polling)"
    report "supervisor peak RSS (VmHWM)" "$sup_hwm kB" "≤ 16 MiB (16384 kB)"
    report "fleet's RSS: $running task ralphs + supervisor (sum of VmRSS)" "$((tasks_rss + sup_rss)) kB" \
        "≤ 8 × a single run's ($single_rss kB, mean of $singles) + $sup_rss = $((8 * single_rss + sup_rss)) kB"
    report "  the task ralphs' own memory (sum of RssAnon)" "$tasks_anon kB" "8 × a single run's = $((8 * single_anon)) kB"
    report "  the fleet's memory, shared pages counted once (sum of Pss)" "$fleet_pss kB" ""
    wait "$sup"
    figures idle "$dir"
fi

if want status; then
    dir="$WORK/status/repo"
    repo "$dir" "$(waits 0 4)" 0
    figures fake-fleet "$dir" 200 "$BENCHES/../tests/fixtures/checkpoints/v1-current.json"
    best=""
    for _ in 1 2 3 4 5; do
        s=$(date +%s%N); (cd "$dir" && "$RALPH" fleet status >/dev/null); e=$(date +%s%N)
        best="$best $(( (e - s) / 1000000 ))"
    done
    report "ralph fleet status over 200 tasks (5 runs, ms)" "$best" "≤ 100 ms"
fi

if want queue; then
    dir="$WORK/queue/repo"
    mkdir -p "$dir"
    figures big-repo "$dir" 10000 5000
    git -C "$dir" config user.email bench@example.com
    mkdir -p "$dir/tasks"
    waits 0 4 >"$dir/ralph.toml"
    for i in $(seq -w 1 10); do echo "Task $i." >"$dir/tasks/q$i.md"; done
    (cd "$dir" && "$RALPH" fleet -q >"$WORK/queue.out" 2>&1) || { cat "$WORK/queue.out"; exit 1; }
    figures queue "$dir"
fi

if want shared; then
    dir="$WORK/shared/repo"
    repo "$dir" "$(cat <<'EOF'
[fleet]
max_cost = "none"
max_parallel = 10
max_evictions = 12
[agents.s]
kind = "command"
command = ["sh", "-c", "case \"$1\" in *'merge queue could not land'*) git merge -q --no-edit ralph/fleet >/dev/null 2>&1 || { git show ralph/fleet:shared.txt > shared.txt; echo \"$RALPH_FLEET_TASK\" >> shared.txt; git add shared.txt; git commit -q --no-edit; };; *) echo \"$RALPH_FLEET_TASK\" >> shared.txt;; esac; echo '<promise>DONE</promise>'", "agent", "{prompt}"]
[chains]
main = ["s"]
[phases.develop]
chain = "main"
EOF
)" 10
    s=$(date +%s); (cd "$dir" && "$RALPH" fleet -q >"$WORK/shared.out" 2>&1) || { cat "$WORK/shared.out"; exit 1; }; e=$(date +%s)
    figures shared "$dir" $((e - s))
fi

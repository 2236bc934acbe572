#!/usr/bin/env python3
"""Figures of benches/fleet.sh from a fleet's journals, and the fixtures it needs.

    fleet_figures.py idle REPO                    latencies and evictions of a finished fleet
    fleet_figures.py fake-fleet REPO N CHECKPOINT a fleet state of N running tasks
    fleet_figures.py big-repo DIR FILES COMMITS   a repository of that size (git fast-import)
    fleet_figures.py queue REPO                   the queue's own cost per landing
    fleet_figures.py shared REPO SECONDS          evictions of tasks sharing a file
"""

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
from datetime import datetime


def stamp(text):
    # RFC 3339 with nanoseconds: keep microseconds for datetime.
    base, _, rest = text.partition(".")
    frac = "".join(c for c in rest if c.isdigit())[:6].ljust(6, "0")
    return datetime.fromisoformat(f"{base}.{frac}+00:00").timestamp()


def events(path):
    out = []
    for name in sorted(glob.glob(path)):
        with open(name) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def fleet_events(repo):
    return events(os.path.join(repo, ".agent/fleet/archive/*.events.jsonl")) + events(
        os.path.join(repo, ".agent/fleet/events.jsonl")
    )


def run_events(repo, task):
    return events(os.path.join(repo, f".agent/fleet/logs/{task}.agent/events.jsonl"))


def report(figure, measured, target):
    print(f"{figure:<62} {measured:<28} target {target}")


def ms(values):
    if not values:
        return "none"
    return f"median {statistics.median(values):.1f} ms, max {max(values):.1f} ms"


def idle(repo):
    ev = fleet_events(repo)
    finished = {e["task"] for e in ev if e["kind"] == "task_ended" and e.get("state") == "finished"}
    ended = [(stamp(e["at"]), e["task"]) for e in ev if e["kind"] == "task_exited" and e["task"] in finished]
    made = {e["task"]: e["ms"] for e in ev if e["kind"] == "worktree_created"}
    started = [(stamp(e["at"]), e["task"]) for e in ev if e["kind"] == "task_started"]
    supervisor, exit_tail, to_spawn, to_run = [], [], [], []
    for at, task in started:
        before = [t for t in ended if t[0] <= at]
        if not before:
            continue
        exit_at, done = max(before)
        # The ended task's own last word, and the new task's first.
        run_end = [stamp(e["at"]) for e in run_events(repo, done) if e["kind"] == "run_ended"]
        run_start = [stamp(e["at"]) for e in run_events(repo, task) if e["kind"] in ("run_started", "run_resumed")]
        if not run_end or not run_start or run_end[-1] > at:
            continue
        worktree = made.get(task, 0)
        supervisor.append((at - exit_at) * 1000 - worktree)
        exit_tail.append((exit_at - run_end[-1]) * 1000)
        to_spawn.append((at - run_end[-1]) * 1000 - worktree)
        to_run.append((min(run_start) - run_end[-1]) * 1000 - worktree)
    report("its ralph's exit seen → the next ralph started (less git)", ms(supervisor), "≤ 50 ms")
    report("a run's `run_ended` → its ralph's exit seen (the run's own end)", ms(exit_tail), "")
    report("a task's run ended → the next one's ralph started (less git)", ms(to_spawn), "≤ 50 ms")
    report("a task's run ended → the next run started (its ralph up)", ms(to_run), "(stricter)")
    report("git worktree add of one task", ms(list(made.values())), "(git's own)")
    merged = sum(1 for e in ev if e["kind"] == "task_merged")
    evicted = sum(1 for e in ev if e["kind"] == "task_evicted")
    report("50 disjoint tasks: landed, evictions", f"{merged} landed, {evicted} evictions", "50, 0")


def fake_fleet(repo, n, checkpoint):
    n = int(n)
    worktrees = repo.rstrip("/") + "-fleet"
    head = subprocess.check_output(["git", "-C", repo, "rev-parse", "HEAD"], text=True).strip()
    subprocess.check_call(["git", "-C", repo, "branch", "-f", "ralph/fleet", head])
    now = "2026-12-03T00:00:00Z"
    tasks = {}
    for i in range(1, n + 1):
        name = f"t{i:03d}"
        wt = os.path.join(worktrees, name)
        os.makedirs(os.path.join(wt, ".agent"), exist_ok=True)
        shutil.copy(checkpoint, os.path.join(wt, ".agent/checkpoint.json"))
        with open(os.path.join(wt, ".agent/events.jsonl"), "w") as f:
            f.write(json.dumps({"at": now, "kind": "run_started"}) + "\n")
        tasks[name] = {
            "file": f"tasks/{name}.md", "seq": i, "state": "running", "branch": f"ralph/{name}",
            "worktree": wt, "started": True, "cost_usd": 0.01, "iterations": 2, "disk_bytes": 1 << 20,
        }
    fleet = {
        "version": 1, "seq": 1, "fleet_id": "bench", "status": "running", "clean_stop": False,
        "repo": repo, "base": head, "base_branch": "main", "into": "ralph/fleet", "worktrees": worktrees,
        "config": os.path.join(repo, "ralph.toml"), "tasks_glob": "tasks/*.md", "discovered": n,
        "created_at": now, "updated_at": now, "tasks": tasks,
    }
    os.makedirs(os.path.join(repo, ".agent/fleet"), exist_ok=True)
    with open(os.path.join(repo, ".agent/fleet/fleet.json"), "w") as f:
        json.dump(fleet, f)


def big_repo(path, files, commits):
    files, commits = int(files), int(commits)
    subprocess.check_call(["git", "init", "-q", path])
    proc = subprocess.Popen(["git", "-C", path, "fast-import", "--quiet"], stdin=subprocess.PIPE)
    w = proc.stdin.write

    def blob(text):
        data = text.encode()
        w(b"data %d\n" % len(data) + data + b"\n")

    w(b"commit refs/heads/main\nmark :1\ncommitter Bench <b@e> 1700000000 +0000\n")
    blob("initial")
    for i in range(files):
        w(b"M 100644 inline src/d%02d/f%05d.txt\n" % (i % 100, i))
        blob(f"file {i}\n")
    for c in range(commits):
        w(b"commit refs/heads/main\ncommitter Bench <b@e> %d +0000\n" % (1700000001 + c))
        blob(f"change {c}")
        if c == 0:
            w(b"from :1\n")
        i = (c * 7919) % files
        w(b"M 100644 inline src/d%02d/f%05d.txt\n" % (i % 100, i))
        blob(f"file {i} change {c}\n")
    proc.stdin.close()
    proc.wait()
    subprocess.check_call(["git", "-C", path, "checkout", "-q", "main"])


def queue(repo):
    ev = fleet_events(repo)
    landing = [e["landing_ms"] for e in ev if e["kind"] == "task_merged" and e.get("landing_ms") is not None]
    cleanup = [e["ms"] for e in ev if e["kind"] == "task_cleaned"]
    files = subprocess.check_output(["git", "-C", repo, "ls-files"], text=True).count("\n")
    count = subprocess.check_output(["git", "-C", repo, "rev-list", "--count", "main"], text=True).strip()
    report(f"queue's own cost per landing ({files} files, {count} commits)", ms(landing), "≤ 300 ms")
    report("  then: its worktree and branch removed", ms(cleanup), "(git's own)")


def shared(repo, seconds):
    ev = fleet_events(repo)
    merged = sorted({e["task"] for e in ev if e["kind"] == "task_merged"})
    evicted = sum(1 for e in ev if e["kind"] == "task_evicted")
    text = subprocess.check_output(["git", "-C", repo, "show", "ralph/fleet:shared.txt"], text=True)
    lines = text.split()
    lost = [t for t in merged if lines.count(t) != 1]
    report("10 tasks editing one file: landed, evictions, time", f"{len(merged)}, {evicted}, {seconds} s", "10, resolved")
    report("  each task's line in shared.txt exactly once", "yes" if not lost and len(lines) == 10 else f"no: {lost} {lines}", "none lost")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    {"idle": idle, "fake-fleet": fake_fleet, "big-repo": big_repo, "queue": queue, "shared": shared}[command](*args)

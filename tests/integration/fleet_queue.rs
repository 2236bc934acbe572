//! The merge queue against real repositories (docs/fleet.md, "The merge queue"):
//! disjoint tasks land in the order they finished; two tasks editing the same lines
//! (an eviction, the agent's merge, the landing); a check that fails once; a check
//! that hangs; a generated file made again instead of an eviction; a hook that
//! rejects the landing; `into` moved by a person mid-landing; the watchdog resuming
//! a fleet that died mid-landing.

use std::fs;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::fleet_harness::{Fleet, appends, shell_config};
use crate::harness::{prompt_entries, run_dirs};

const LIMIT: Duration = Duration::from_secs(120);

/// The fleet's journal, parsed (the archived one once the fleet is archived).
pub(crate) fn events(f: &Fleet) -> Vec<Value> {
    let dir = f.repo.join(".agent/fleet");
    let mut files = vec![dir.join("events.jsonl")];
    if let Ok(listing) = fs::read_dir(dir.join("archive")) {
        files.extend(listing.flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(".events.jsonl")));
    }
    files
        .iter()
        .filter_map(|p| fs::read_to_string(p).ok())
        .flat_map(|t| t.lines().filter_map(|l| serde_json::from_str(l).ok()).collect::<Vec<Value>>())
        .collect()
}

fn kinds<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// The prompts task `task`'s agent was given, oldest first (its worktree's logs, or
/// where they went when it was removed).
fn prompts(f: &Fleet, task: &str) -> Vec<String> {
    let places = [f.worktree(task).join(".agent/logs"), f.repo.join(format!(".agent/fleet/logs/{task}.agent/logs"))];
    let runs = places.iter().flat_map(|logs| run_dirs(logs));
    runs.flat_map(|run| prompt_entries(&run)).map(|(_, text)| text).collect()
}

#[test]
fn disjoint_tasks_land_one_at_a_time_in_the_order_they_finished() {
    // Each task takes longer than the one before: c, then b, then a finish.
    let script = "case $RALPH_FLEET_TASK in a) sleep 2.4;; b) sleep 1.2;; esac; echo \"$RALPH_FLEET_TASK\" > \
                  \"$RALPH_FLEET_TASK.txt\"; echo '<promise>DONE</promise>'";
    let f = Fleet::new(&shell_config(script, "max_parallel = 3", ""), &[("a", "A."), ("b", "B."), ("c", "C.")]);
    let out = f.fleet(&[]).run();
    out.expect_code(0).stderr_has("task c: merged into ralph/fleet");
    let ev = events(&f);
    let finished: Vec<&str> = kinds(&ev, "task_ended")
        .iter()
        .filter(|e| e["state"] == "finished")
        .filter_map(|e| e["task"].as_str())
        .collect();
    let merged: Vec<&str> = kinds(&ev, "task_merged").iter().filter_map(|e| e["task"].as_str()).collect();
    assert_eq!(finished, ["c", "b", "a"], "{out}");
    assert_eq!(merged, finished, "they land in the order they finished");
    // Each its own commit, on top of the one before (rebased, never squashed).
    let subjects = f.git(&[
        "log",
        "--format=%s%x09%(trailers:key=Ralph-Task,valueonly,separator=)",
        "--reverse",
        "main..ralph/fleet",
    ]);
    assert_eq!(subjects.lines().count(), 3, "{subjects}");
    assert!(f.git(&["log", "--merges", "--format=%h", "ralph/fleet"]).is_empty(), "no merge commits");
    for task in ["a", "b", "c"] {
        assert_eq!(f.git(&["show", &format!("ralph/fleet:{task}.txt")]), format!("{task}\n"));
        assert_eq!(f.task_state(task), "merged");
    }
    assert!(kinds(&ev, "task_evicted").is_empty());
    assert_eq!(f.worktrees().len(), 1, "every worktree removed: {:?}", f.worktrees());
    // The person's branch is untouched; theirs to merge.
    assert_eq!(f.git(&["rev-list", "--count", "main"]).trim(), "1");
    f.assert_no_process_left();
}

/// An agent that writes its task's name into `shared.txt`, line 1 (tasks conflict);
/// sent back by the queue, it merges the fleet's branch and keeps both lines.
const SHARED: &str = "case \"$1\" in
  *'merge queue could not land'*)
    git merge -q --no-edit ralph/fleet >/dev/null 2>&1 || { printf 'a\\nb\\n' > shared.txt; git add shared.txt; git commit -q --no-edit; }
    echo 'Merged the fleet branch, kept both. <promise>DONE</promise>';;
  *) case $RALPH_FLEET_TASK in b) sleep 1;; esac
    echo \"$RALPH_FLEET_TASK\" > shared.txt; echo '<promise>DONE</promise>';;
esac";

#[test]
fn two_tasks_editing_the_same_lines_one_is_sent_back_resolves_it_and_lands() {
    let f = Fleet::new(&shell_config(SHARED, "max_parallel = 2", ""), &[("a", "A."), ("b", "B.")]);
    let out = f.fleet(&[]).run();
    out.expect_code(0).stderr_has("task b: evicted (1 of at most 3)").stderr_has("task b: merged");
    assert_eq!(f.git(&["show", "ralph/fleet:shared.txt"]), "a\nb\n", "{out}");
    let state = f.state();
    assert_eq!(state["tasks"]["b"]["evictions"], 1);
    assert_eq!(state["tasks"]["b"]["iterations"], 2, "one more iteration, same run: {state}");
    let prompts = prompts(&f, "b");
    let evicted = prompts.last().expect("b's prompts");
    for needle in ["Conflicting files: shared.txt", "<<<<<<<", "git rebase ralph/fleet", "B."] {
        assert!(evicted.contains(needle), "{needle} not in the eviction's prompt:\n{evicted}");
    }
    // The work of both, each once.
    assert_eq!(f.landed("a").len(), 1);
    assert!(!f.landed("b").is_empty());
    f.assert_no_process_left();
}

#[test]
fn a_check_that_fails_once_sends_the_task_back_and_passes_after_the_agent_fixes_it() {
    let script = "case \"$1\" in *'The check'*) echo fixed > fixed.txt;; *) echo work > work.txt;; esac; \
                  echo '<promise>DONE</promise>'";
    let check = r#"check = ["sh", "-c", "test -f fixed.txt || { echo 'fixed.txt is missing' >&2; exit 1; }"]"#;
    let f = Fleet::new(&shell_config(script, check, ""), &[("a", "A.")]);
    let out = f.fleet(&[]).run();
    out.expect_code(0).stderr_has("task a: evicted (1 of at most 3): the check").stderr_has("task a: merged");
    let evicted = prompts(&f, "a").pop().expect("prompts");
    assert!(evicted.contains("fixed.txt is missing") && evicted.contains("exit status 1"), "{evicted}");
    assert_eq!(f.git(&["show", "ralph/fleet:fixed.txt"]), "fixed\n");
    // The check ran in the one landing worktree, which stays (its caches warm).
    assert!(f.worktrees().iter().any(|w| w.ends_with("/.land")), "{:?}", f.worktrees());
    f.assert_no_process_left();
}

#[test]
fn a_check_that_hangs_is_timed_out_and_with_no_eviction_left_the_task_is_blocked() {
    let fleet = "check = [\"sleep\", \"30\"]\ncheck_timeout = \"1s\"\nmax_evictions = 0";
    let f = Fleet::new(&shell_config(&appends("0"), fleet, ""), &[("a", "A.")]);
    let started = Instant::now();
    let out = f.fleet(&[]).run();
    out.expect_code(1).stderr_has("timed out after 1s").stderr_has("ralph fleet land a");
    assert!(started.elapsed() < Duration::from_secs(30), "the check was ended at its timeout");
    assert_eq!(f.task_state("a"), "blocked");
    assert_eq!(f.git(&["rev-parse", "ralph/fleet"]), f.git(&["rev-parse", "main"]), "nothing landed");
    assert_eq!(f.commits("ralph/a").len(), 1, "its branch is kept with its work");
    f.assert_no_process_left();
}

#[test]
fn a_conflict_confined_to_a_generated_file_is_made_again_without_an_eviction() {
    let script = "case $RALPH_FLEET_TASK in b) sleep 1;; esac; echo \"$RALPH_FLEET_TASK\" > \"$RALPH_FLEET_TASK.txt\"; \
                  cat *.txt > gen.lock; echo '<promise>DONE</promise>'";
    let fleet = "max_parallel = 2\n[fleet.regenerate]\n\"gen.lock\" = [\"sh\", \"-c\", \"cat *.txt > gen.lock\"]";
    let f = Fleet::new(&shell_config(script, fleet, ""), &[("a", "A."), ("b", "B.")]);
    let out = f.fleet(&[]).run();
    out.expect_code(0).stderr_has("task b: merged");
    assert!(!out.stderr.contains("evicted"), "{out}");
    assert_eq!(f.git(&["show", "ralph/fleet:gen.lock"]), "a\nb\n");
    let subjects = f.git(&["log", "--format=%s", "ralph/fleet"]);
    assert!(subjects.contains("ralph fleet: make gen.lock again for task b"), "{subjects}");
    f.assert_no_process_left();
}

#[test]
fn a_hook_that_rejects_the_landing_blocks_the_task_and_nothing_is_merged() {
    let f = Fleet::new(&shell_config(&appends("0"), "", ""), &[("a", "A.")]);
    f.git(&["branch", "ralph/fleet"]);
    let hook = f.repo.join(".git/hooks/reference-transaction");
    fs::write(
        &hook,
        "#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\nwhile read old new ref; do\n  \
         [ \"$ref\" = refs/heads/ralph/fleet ] && { echo 'no landing today' >&2; exit 1; }\ndone\nexit 0\n",
    )
    .expect("hook");
    std::process::Command::new("chmod").arg("+x").arg(&hook).status().expect("chmod");
    let out = f.fleet(&[]).run();
    out.expect_code(1).stderr_has("task a: blocked").stderr_has("no landing today");
    assert_eq!(f.task_state("a"), "blocked");
    assert_eq!(f.git(&["rev-parse", "ralph/fleet"]), f.git(&["rev-parse", "main"]), "not merged");
    assert_eq!(f.commits("ralph/a").len(), 1, "its work is kept on its branch");
    f.assert_no_process_left();
}

#[test]
fn into_moved_by_a_person_mid_landing_is_refused_by_the_swap_and_the_task_lands_on_the_new_tip() {
    let f = Fleet::new("", &[("a", "A.")]);
    let marker = f.p.join("moved-once");
    let repo = f.repo.display();
    // The check, on its first run, commits on the fleet's branch as a person would.
    let check = format!(
        "test -e {m} && exit 0; touch {m}; t=$(git -C {repo} rev-parse ralph/fleet^{{tree}}); \
         c=$(git -C {repo} commit-tree $t -p ralph/fleet -m person); git -C {repo} update-ref refs/heads/ralph/fleet $c",
        m = marker.display()
    );
    let fleet = format!("check = [\"sh\", \"-c\", {check:?}]");
    f.write("ralph.toml", &shell_config(&appends("0"), &fleet, ""));
    let out = f.fleet(&[]).run();
    out.expect_code(0).stderr_has("ralph/fleet moved while it was landing").stderr_has("task a: merged");
    let subjects = f.git(&["log", "--format=%s", "main..ralph/fleet"]);
    assert!(subjects.lines().any(|s| s == "person"), "{subjects}");
    assert_eq!(f.landed("a").len(), 1, "{subjects}");
    assert_eq!(kinds(&events(&f), "landing_moved").len(), 1);
    f.assert_no_process_left();
}

#[test]
fn the_watchdog_resumes_a_fleet_that_died_mid_landing_and_it_lands_once() {
    let fleet = "check = [\"sleep\", \"3\"]";
    let f = Fleet::new(&shell_config(&appends("0"), fleet, "\n[watch]\nrestart_backoff = \"1s\"\n"), &[("a", "A.")]);
    let first = f.fleet(&[]).spawn();
    f.wait_for("a landing", |s| s["landing"]["task"] == "a", LIMIT);
    first.signal(Signal::SIGKILL);
    let _ = first.wait(crate::harness::DEFAULT_TIMEOUT);
    assert_eq!(f.task_state("a"), "merging");
    f.ralph().args(["watch", "--once"]).run().expect_code(0).stderr_has(": resumed: ");
    let deadline = Instant::now() + LIMIT;
    while !f.archived() {
        assert!(Instant::now() < deadline, "the resumed fleet did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(f.task_state("a"), "merged");
    assert_eq!(f.landed("a").len(), 1);
    f.assert_no_process_left();
}

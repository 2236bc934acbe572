//! `ralph fleet` against real repositories and real processes (docs/fleet.md): a
//! fleet of several tasks to the end; the refusals of a first start; two
//! supervisors (one after the other, and at the same moment); `ralph stop --all`
//! stopping a fleet through its supervisor; a stop and a continue; a task file added
//! mid-run; an agent that writes into the main checkout; a ralph started inside a
//! task; the supervisor killed with SIGKILL (its tasks adopted by the next one); the
//! watchdog resuming a crashed fleet (held while `ralph watch --hold` is in force);
//! discard and clean keeping a worktree that holds a file.

use std::fs;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::fleet_harness::{Fleet, WRITES, config, held, wait_until};
use crate::harness::RALPH;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn a_fleet_runs_each_task_on_its_own_branch_and_worktree_and_ends_0() {
    // A task file is a goal like any: a credential in it is named, never shown.
    let token = "ghp_1234567890abcdefghijABCDEFGHIJ0123";
    let c = format!("Task c: call the API with {token}.");
    let f = Fleet::new(&config(&[WRITES], "max_parallel = 2", ""), &[("a", "Task a."), ("b", "Task b."), ("c", &c)]);
    f.write("tasks/README.md", "Not a task.\n");
    // --no-land: every task stops at finished, on its branch, in its worktree.
    let out = f.fleet(&["--no-land"]).run();
    out.expect_code(0)
        .stderr_has("task a: finished")
        .stderr_has("tasks/c.md line 1 holds what looks like a credential");
    let events = fs::read_to_string(f.repo.join(".agent/fleet/events.jsonl")).expect("the fleet's journal");
    for text in [&out.stderr, &out.stdout, &events, &f.state().to_string()] {
        assert!(!text.contains(token), "the task file's credential was shown: {text}");
    }
    for task in ["a", "b", "c"] {
        let commits = f.commits(&format!("ralph/{task}"));
        assert_eq!(commits.len(), 1, "{task}: {commits:?}\n{out}");
        assert!(commits[0].contains(&format!("Ralph-Task: {task}\n")), "{}", commits[0]);
        // Its worktree: outside the main checkout, locked, the task's work in it.
        let wt = f.worktree(task);
        assert!(wt.join("out.txt").is_file());
        assert!(!wt.starts_with(&f.repo));
        assert_eq!(f.git_in(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), format!("ralph/{task}"));
    }
    assert!(f.git(&["worktree", "list"]).matches("locked").count() == 3, "{}", f.git(&["worktree", "list"]));
    assert!(f.git(&["branch", "--list", "ralph/README"]).is_empty(), "README.md is not a task");
    // The main checkout is as it was; the fleet's files are ralph's own.
    assert!(!f.repo.join("out.txt").exists());
    assert_eq!(f.git(&["status", "--porcelain"]), "?? .agent/\n?? ralph.toml\n?? tasks/\n");
    assert_eq!(f.git(&["rev-parse", "ralph/fleet"]), f.git(&["rev-parse", "main"]));
    // Not archived: its tasks have yet to land, by hand.
    assert!(!f.archived());
    let status = f.fleet(&["status", "--json"]).run();
    status.expect_code(0);
    let v: serde_json::Value = serde_json::from_str(&status.stdout).expect("json");
    assert_eq!(v["fleet"]["status"], "finished", "{}", status.stdout);
    assert_eq!(v["fleet"]["no_land"], true);
    assert_eq!(v["tasks"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["tasks"][0]["state"], "finished");
    assert_eq!(v["tasks"][0]["iterations"], 1);
    f.fleet(&["diff", "b"]).run().expect_code(0).stdout_has("+work");
    // A person lands one by hand (no supervisor runs): merged, its worktree and
    // branch gone, its commit on the fleet's branch once.
    let land = f.fleet(&["land", "b"]).run();
    land.expect_code(0).stdout_has("task b: merged into ralph/fleet").stdout_has("deleted its branch ralph/b");
    assert_eq!(f.landed("b").len(), 1);
    assert!(!f.worktree("b").exists());
    assert!(f.git(&["branch", "--list", "ralph/b"]).is_empty());
    assert_eq!(f.task_state("b"), "merged");
    f.assert_no_process_left();
}

#[test]
fn a_first_start_refuses_what_would_go_wrong_before_creating_anything() {
    // No cost cap: the worst case is printed.
    let mut no_cap = config(&[WRITES], "", "");
    no_cap = no_cap.replace("max_cost = \"none\"\n", "");
    no_cap.push_str("\n[general]\nmax_cost_usd = 5.0\n");
    let f = Fleet::new(&no_cap, &[("a", "A."), ("b", "B.")]);
    f.fleet(&[]).run().expect_code(2).stderr_has("[fleet] max_cost is not set").stderr_has("up to $10.00");
    assert!(!f.state_path().exists());
    // Commits off: nothing could land.
    let off = Fleet::new(&config(&[WRITES], "", "[git]\ncommit = \"off\"\n"), &[("a", "A.")]);
    off.fleet(&[]).run().expect_code(2).stderr_has("[git] commit = \"off\"");
    // A dirty main checkout, unless --allow-dirty; a task named like a branch that exists;
    // a name git would not take.
    let f = Fleet::new(&config(&[WRITES], "", ""), &[("a", "A.")]);
    f.write("README.md", "# changed\n");
    f.fleet(&[]).run().expect_code(2).stderr_has("changes of yours (README.md)").stderr_has("--allow-dirty");
    f.git(&["branch", "ralph/a"]);
    f.task("has space", "B.");
    let out = f.fleet(&["--allow-dirty"]).run();
    out.expect_code(2).stderr_has("ralph/a exists already").stderr_has("has space.md");
    assert!(f.git(&["branch", "--list", "ralph/fleet"]).is_empty(), "nothing was created: {out}");
    assert!(f.worktrees().len() == 1);
    // No commit at all.
    let unborn = Fleet::new(&config(&[WRITES], "", ""), &[("a", "A.")]);
    unborn.git(&["update-ref", "-d", "HEAD"]);
    unborn.fleet(&[]).run().expect_code(2).stderr_has("no commit yet");
    // Not in a repository, or inside a task's agent.
    let outside = crate::harness::Project::new();
    outside.ralph().args(["fleet"]).run().expect_code(2).stderr_has("not in a git repository");
    f.fleet(&[]).env("RALPH_FLEET_TASK", "x").run().expect_code(2).stderr_has("inside fleet task x");
}

#[test]
fn two_supervisors_one_refused_then_a_stop_and_a_continue() {
    let f = Fleet::new(&held("max_parallel = 1", ""), &[("a", "A."), ("b", "B.")]);
    let first = f.running("a", LIMIT);
    let second = f.fleet(&[]).run();
    second.expect_code(2).stderr_has(&format!("another ralph fleet (pid {}", first.pid()));
    // A task file added while it runs is picked up.
    f.task("late", "Late.");
    let stop = f.fleet(&["stop", "--now"]).run();
    stop.expect_code(0).stdout_has("stopped: stopped");
    let out = first.finish();
    out.expect_code(130);
    let state = f.state();
    assert_eq!(state["status"], "stopped");
    assert_eq!(state["tasks"]["a"]["state"], "queued", "{state}");
    assert_eq!(state["tasks"]["a"]["paused"], true);
    assert_eq!(state["tasks"]["late"]["state"], "queued");
    let listed = f.fleet(&["status"]).run();
    listed.expect_code(0).stdout_has("late").stdout_has("queued");
    // Continued: the paused task resumes (its run is paused, so --resume), none twice.
    f.open_gate();
    let out = f.fleet(&[]).run();
    out.expect_code(0).stderr_has("task a: resumed");
    for task in ["a", "b", "late"] {
        assert_eq!(f.landed(task).len(), 1, "{task}\n{out}");
        assert_eq!(f.task_state(task), "merged");
    }
    f.assert_no_process_left();
}

#[test]
fn two_supervisors_started_at_the_same_moment_one_runs_the_fleet_the_other_is_refused() {
    let f = Fleet::new(&config(&[WRITES], "max_parallel = 2", ""), &[("a", "A."), ("b", "B.")]);
    let (one, two) = (f.fleet(&[]).spawn(), f.fleet(&[]).spawn());
    let (one, two) = (one.finish(), two.finish());
    let mut codes = [one.code, two.code];
    codes.sort_unstable();
    assert_eq!(codes, [Some(0), Some(2)], "{one}\n{two}");
    let refused = if one.code == Some(2) { &one } else { &two };
    refused.stderr_has("another ralph fleet");
    for task in ["a", "b"] {
        assert_eq!(f.landed(task).len(), 1, "{task}\n{one}\n{two}");
    }
    f.assert_no_process_left();
}

#[test]
fn stop_all_stops_a_fleet_through_its_supervisor_and_ralph_fleet_continues_it() {
    let f = Fleet::new(&held("max_parallel = 2", ""), &[("a", "A."), ("b", "B."), ("c", "C.")]);
    let first = f.running("b", LIMIT);
    // Each task's run registered itself: `stop --all` must leave them to their
    // supervisor, which stops them in order with the fleet.
    for task in ["a", "b"] {
        let checkpoint = f.worktree(task).join(".agent/checkpoint.json");
        wait_until(&format!("task {task}'s run to save"), LIMIT, || checkpoint.exists());
    }
    let stop = f.ralph().args(["stop", "--all", "--now"]).run();
    stop.expect_code(0).stdout_has(&format!("{}: stopped: paused", f.repo.display()));
    assert!(!stop.stdout.contains(&f.worktree("a").display().to_string()), "a task stopped behind its fleet: {stop}");
    first.finish().expect_code(130);
    let state = f.state();
    assert_eq!(state["status"], "stopped", "{state}");
    for task in ["a", "b"] {
        assert_eq!(state["tasks"][task]["state"], "queued", "{state}");
        assert_eq!(state["tasks"][task]["paused"], true, "{state}");
    }
    f.open_gate();
    f.fleet(&[]).run().expect_code(0);
    for task in ["a", "b", "c"] {
        assert_eq!(f.landed(task).len(), 1, "{task}");
    }
    f.assert_no_process_left();
}

#[test]
fn an_agent_that_writes_into_the_main_checkout_blocks_its_task_and_nothing_is_committed() {
    let escape = "{ write = { path = \"ESCAPE\", content = \"escaped\\n\" } }";
    let f = Fleet::new("", &[("a", "A.")]);
    let steps = format!("[{escape}, {{ write = {{ path = \"mine.txt\", content = \"x\" }} }}, {{ done = \"done\" }}]");
    let escaped = f.repo.join("escaped.txt").display().to_string();
    f.write("ralph.toml", &config(&[&steps.replace("ESCAPE", &escaped)], "", ""));
    let out = f.fleet(&[]).run();
    out.expect_code(1).stderr_has("task a: blocked").stderr_has("escaped.txt in the main checkout");
    assert!(f.commits("ralph/a").is_empty(), "nothing of the iteration is committed");
    assert_eq!(f.task_state("a"), "blocked");
    let why = f.state()["tasks"]["a"]["reason"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("ralph fleet retry a"), "{why}");
    // The person undoes it; the task goes on and commits its own work only.
    fs::remove_file(f.repo.join("escaped.txt")).expect("undo");
    f.fleet(&["retry", "a"]).run().expect_code(0).stdout_has("queued again");
    let out = f.fleet(&[]).run();
    out.expect_code(1).stderr_has("task a: blocked");
    // The scripted agent escapes again on every launch: blocked again, still nothing committed.
    assert!(f.commits("ralph/a").is_empty());
}

#[test]
fn a_ralph_started_inside_a_task_cannot_start_a_fleet_or_a_run() {
    let f = Fleet::new("", &[("a", "A.")]);
    let script = format!(
        "{RALPH} fleet > fleet.txt 2>&1; echo $? > codes.txt; {RALPH} -C /tmp > run.txt 2>&1; echo $? >> codes.txt; \
         echo '<promise>DONE</promise>'"
    );
    let body = format!(
        "[fleet]\nmax_cost = \"none\"\n\n[agents.sh]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", {script:?}, \"{{prompt}}\"]\n\n\
         [chains]\nmain = [\"sh\"]\n\n[phases.develop]\nchain = \"main\"\n"
    );
    f.write("ralph.toml", &crate::harness::fast("", "", &body));
    let out = f.fleet(&["--no-land"]).run();
    out.expect_code(0);
    let wt = f.worktree("a");
    assert_eq!(fs::read_to_string(wt.join("codes.txt")).expect("codes"), "2\n2\n", "{out}");
    let fleet = fs::read_to_string(wt.join("fleet.txt")).expect("fleet output");
    assert!(fleet.contains("inside fleet task a"), "{fleet}");
    let run = fs::read_to_string(wt.join("run.txt")).expect("run output");
    assert!(run.contains("inside fleet task a") && run.contains("no recursion"), "{run}");
    // A person's ralph in the task's worktree is refused too: only the fleet runs it.
    let mine = f.ralph().current_dir(&wt).args(["--resume-or-start"]).run();
    mine.expect_code(2).stderr_has("worktree of fleet task a");
}

#[test]
fn a_supervisor_killed_with_sigkill_leaves_its_tasks_running_and_the_next_one_adopts_them() {
    let f = Fleet::new(&held("max_parallel = 2", ""), &[("a", "A."), ("b", "B."), ("c", "C.")]);
    let first = f.running("b", LIMIT);
    let lock = f.worktree("b").join(".agent/ralph.lock");
    let deadline = std::time::Instant::now() + LIMIT;
    while fs::read_to_string(&lock).unwrap_or_default().trim().is_empty() {
        assert!(std::time::Instant::now() < deadline, "task b's ralph never took its lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    first.signal(Signal::SIGKILL);
    let out = first.wait(crate::harness::DEFAULT_TIMEOUT);
    assert_eq!(out.signal, Some(9));
    // Its tasks go on without it.
    let task_pid: i32 = serde_json::from_str::<serde_json::Value>(&fs::read_to_string(&lock).expect("lock"))
        .expect("lock info")["pid"]
        .as_i64()
        .expect("pid") as i32;
    assert!(crate::harness::alive(task_pid), "task b's ralph goes on without its supervisor");
    f.open_gate();
    let again = f.fleet(&[]).run();
    again.expect_code(0).stderr_has("without a clean stop");
    for task in ["a", "b", "c"] {
        assert_eq!(f.landed(task).len(), 1, "{task}: exactly once\n{again}");
    }
    assert_eq!(f.worktrees().len(), 1, "no orphan worktree: {:?}", f.worktrees());
    f.assert_no_process_left();
}

#[test]
fn the_watchdog_resumes_a_fleet_whose_supervisor_died() {
    let f = Fleet::new(&held("max_parallel = 1", "\n[watch]\nrestart_backoff = \"1s\"\n"), &[("a", "A."), ("b", "B.")]);
    let first = f.running("a", LIMIT);
    // Its run has registered itself (at its first save, just after the checkpoint
    // is written: wait for the entry itself, not the checkpoint).
    let registry = f.p.registry();
    let entries = || -> Vec<String> {
        fs::read_dir(&registry)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default()
    };
    let task_entry = |n: &String| n.ends_with(".json") && !n.ends_with("-fleet.json") && !n.ends_with(".watch.json");
    wait_until("task a's run to register", LIMIT, || entries().iter().any(task_entry));
    first.signal(Signal::SIGKILL);
    let _ = first.wait(crate::harness::DEFAULT_TIMEOUT);
    let entries = entries();
    assert!(entries.iter().any(|n| n.ends_with("-fleet.json")), "{entries:?}");
    let all = f.ralph().args(["status", "--all"]).run();
    all.expect_code(0).stdout_has("fleet: 2 task(s)").stdout_has("fleet task a of");
    // The watchdog's hold covers fleets: held, not resumed, until released.
    let fleet_dir = f.repo.join(".agent/fleet");
    f.ralph().args(["watch", "--hold"]).run().expect_code(0);
    let held = f.ralph().args(["watch", "--once"]).run();
    held.expect_code(0).stderr_has(&format!("{}: held: ", fleet_dir.display()));
    assert!(!held.stderr.contains(": resumed: "), "{held}");
    f.open_gate();
    f.ralph().args(["watch", "--release"]).run().expect_code(0);
    let watch = f.ralph().args(["watch", "--once"]).run();
    watch.expect_code(0).stderr_has(&format!("{}: resumed: ", fleet_dir.display()));
    let deadline = std::time::Instant::now() + 2 * LIMIT;
    while !f.archived() {
        if std::time::Instant::now() > deadline {
            let logs = f.repo.join(".agent/fleet/logs");
            let resumed: Vec<String> = fs::read_dir(&logs)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("watch-resume-"))
                .map(|e| fs::read_to_string(e.path()).unwrap_or_default())
                .collect();
            panic!("the resumed fleet did not finish: {watch}\n{resumed:?}\n{}", f.state());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(f.state()["status"], "finished");
    for task in ["a", "b"] {
        assert_eq!(f.landed(task).len(), 1);
    }
    // The tasks' own entries are their supervisor's: the watchdog leaves them alone.
    let again = f.ralph().args(["watch", "--once"]).run();
    again.expect_code(0);
    assert!(!again.stderr.contains(": resumed: "), "{again}");
    f.assert_no_process_left();
}

#[test]
fn discard_and_clean_never_remove_a_worktree_that_holds_a_file_in_no_commit() {
    // Task b fails at once (its agent exits 1 on every launch): the fleet ends 1.
    let f = Fleet::new(&config(&[WRITES], "max_parallel = 2", ""), &[("a", "A.")]);
    let out = f.fleet(&[]).run();
    out.expect_code(0);
    // A finished fleet is archived: a second fleet with a failing task stays.
    let failing = config(&[r#"[{ exit = 1 }]"#], "", "");
    let g = Fleet::new(&failing.replace("[retry]\n", "[retry]\nagent_attempts = 1\n"), &[("x", "X."), ("y", "Y.")]);
    let out = g.fleet(&[]).run();
    out.expect_code(1).stderr_has("task x: failed").stderr_has("ralph fleet retry x");
    let wt = g.worktree("x");
    fs::write(wt.join("notes.txt"), "a person's notes").expect("notes");
    let out = g.fleet(&["discard", "x"]).run();
    out.expect_code(0).stdout_has("discarded").stdout_has("notes.txt");
    assert!(wt.join("notes.txt").is_file(), "kept");
    g.fleet(&["clean"]).run().expect_code(2).stderr_has("is kept");
    fs::remove_file(wt.join("notes.txt")).expect("remove");
    g.fleet(&["clean"]).run().expect_code(0).stdout_has("removed its worktree");
    assert!(!wt.exists());
    assert!(!g.git(&["branch", "--list", "ralph/x"]).is_empty(), "the branch is kept");
    let out = g.fleet(&["discard", "y", "--delete-branch"]).run();
    out.expect_code(0).stdout_has("deleted its branch ralph/y");
    assert!(g.git(&["branch", "--list", "ralph/y"]).is_empty());
    // Nothing left to do: the fleet ends 0 and is archived.
    g.fleet(&[]).run().expect_code(0);
    assert!(g.archived());
    g.assert_no_process_left();
}

/// `ralph fleet clean` is one rule with a supervisor and without: a worktree it must
/// keep (a file in no commit) fails the clean in both, with the same words and exit
/// code (through the supervisor it used to read as a success, exit 0).
#[test]
fn clean_answers_alike_through_the_supervisor_and_without_one() {
    let f = Fleet::new(&held("max_parallel = 2", ""), &[("a", "A."), ("b", "B.")]);
    let first = f.running("b", LIMIT);
    wait_until("task a's agent to write", LIMIT, || f.worktree("a").join("a.txt").exists());
    f.fleet(&["discard", "a"]).run().expect_code(0);
    f.wait_for("task a discarded", |s| s["tasks"]["a"]["state"] == "discarded", LIMIT);
    let wt = f.worktree("a");
    assert!(wt.is_dir(), "its agent's file in no commit keeps it");
    fs::write(wt.join("notes.txt"), "a person's notes").expect("notes");
    let through = f.fleet(&["clean"]).run();
    through.expect_code(2).stderr_has("is kept").stderr_has("notes.txt").stderr_has("then `ralph fleet clean`");
    f.fleet(&["stop", "--now"]).run().expect_code(0);
    first.finish();
    let offline = f.fleet(&["clean"]).run();
    assert_eq!((offline.code, &offline.stdout, &offline.stderr), (through.code, &through.stdout, &through.stderr));
    assert!(wt.join("notes.txt").is_file(), "kept");
    fs::remove_file(wt.join("notes.txt")).expect("remove");
    f.open_gate();
    f.assert_no_process_left();
}

//! Git lock files under the one rule (docs/git.md, "Lock files"): a lock no process
//! owns is removed and the run goes on; one a live process holds is never removed,
//! and the run waits, then ends with exit 3 naming it; a fleet continues past a
//! stale lock.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::fleet_harness::{Fleet, held};
use crate::fleet_queue::events;
use crate::git::{Repo, mark_pending, sim};

const LIMIT: Duration = Duration::from_secs(120);

/// A lock a killed git left: nobody holds it, and it is a minute old.
fn stale_lock(path: &Path) {
    let file = File::create(path).expect("lock");
    file.set_modified(SystemTime::now() - Duration::from_secs(60)).expect("mtime");
}

const WRITES_A: &str = r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#;

#[test]
fn a_stale_index_lock_after_a_crash_is_removed_and_the_commit_happens_once() {
    // Commits off for the first run: the work is in the tree, no commit made, as
    // when git commit was killed before it wrote the ref.
    let body = sim(&[WRITES_A], "[phases.develop]\nchain = \"main\"\n");
    let r = Repo::new(&format!("[git]\ncommit = \"off\"\n\n{body}"));
    r.ralph().run().expect_code(0);
    mark_pending(&r, "develop/1");
    r.p.write("ralph.toml", &body);
    let lock = r.p.join(".git/index.lock");
    stale_lock(&lock);
    let out = r.ralph().args(["--resume"]).timeout(LIMIT).run();
    out.expect_code(0).stderr_has("no process has it open");
    let commits = r.commits();
    assert_eq!(commits.len(), 1, "never zero, never two: {out}");
    assert_eq!(commits[0].1, ["a.rs"]);
    assert!(!lock.exists());
    let removed = r.p.events("git_stale_lock_removed");
    assert_eq!(removed.len(), 1, "{out}");
    assert!(removed[0]["why"].as_str().is_some_and(|w| w.contains("left by a git that was killed")), "{removed:?}");
}

#[test]
fn a_lock_a_live_process_holds_is_never_removed_and_the_run_ends_3_naming_it() {
    let r = Repo::new(&sim(&[WRITES_A], "[phases.develop]\nchain = \"main\"\n"));
    let lock = r.p.join(".git/index.lock");
    // A process that holds the lock open, as a git writing the index does.
    let mut holder = Command::new("sleep")
        .arg("120")
        .stdout(Stdio::from(File::create(&lock).expect("lock")))
        .spawn()
        .expect("sleep");
    stale_lock(&lock);
    let out = r.ralph().timeout(LIMIT).run();
    let _ = holder.kill();
    let _ = holder.wait();
    out.expect_code(3).stderr_has("index.lock").stderr_has(&format!("sleep (pid {}) has it open", holder.id()));
    assert!(lock.exists(), "a held lock is never removed");
    assert!(r.commits().is_empty());
}

#[test]
fn a_fleet_continues_past_a_stale_packed_refs_lock() {
    let f = Fleet::new(&held("max_parallel = 1", ""), &[("a", "A."), ("b", "B.")]);
    let first = f.running("a", LIMIT);
    f.fleet(&["stop", "--now"]).run().expect_code(0);
    first.finish().expect_code(130);
    let lock = f.repo.join(".git/packed-refs.lock");
    stale_lock(&lock);
    f.open_gate();
    let out = f.fleet(&[]).timeout(LIMIT).run();
    out.expect_code(0).stderr_has("removed the git lock");
    assert!(!lock.exists());
    for task in ["a", "b"] {
        assert_eq!(f.landed(task).len(), 1, "{task}\n{out}");
    }
    let removed: Vec<_> = events(&f).into_iter().filter(|e| e["kind"] == "git_lock_removed").collect();
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0]["path"].as_str().is_some_and(|p| p.ends_with("packed-refs.lock")), "{removed:?}");
    assert!(removed[0]["why"].as_str().is_some_and(|w| w.contains("no process has it open")), "{removed:?}");
}

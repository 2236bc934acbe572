//! A command that refuses changes nothing (issue 30, item 3): every check that can
//! refuse (config, goal, git state, pre-flight, lock, the checkpoint) runs before
//! any state changes. Each refusal here is made after a paused run and after a
//! crash, and must leave `.agent/` (checkpoint, journal, lock, logs, archives), the
//! run registry and the repository byte for byte as they were.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::git::Repo;
use crate::harness::sim_project;

fn project() -> Repo {
    let config = sim_project()
        .timeouts("stall = \"2m\"")
        .sim(
            "a",
            &[
                r#"[{ write = { path = "src/a.rs", content = "// a\n" } }, { write = { path = ".agent/it1-started", content = "" } }, { sleep = "60s" }, { done = "never" }]"#,
                r#"[{ write = { path = "src/b.rs", content = "// b\n" } }, { done = "Finished." }]"#,
            ],
        )
        .phase("iterations = 1")
        .config_text();
    Repo::with(&config, &[("NOTES.md", "notes\n")], true)
}

/// Every file under `dir` (sockets aside) with its bytes.
fn files(dir: &Path, into: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.is_dir() {
            into.insert(format!("{}/", path.display()), Vec::new());
            files(&path, into);
        } else if meta.is_file() {
            into.insert(path.display().to_string(), std::fs::read(&path).unwrap_or_default());
        }
    }
}

/// What a refused command must not change: ralph's state, the registry, the repository.
fn state(r: &Repo) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    files(&r.p.join(".agent"), &mut all);
    files(&r.home.path().join(".state"), &mut all);
    for (name, args) in [
        ("HEAD", &["rev-parse", "HEAD"][..]),
        ("branches", &["branch", "--list"][..]),
        ("status", &["status", "--porcelain", "--untracked-files=all"][..]),
    ] {
        all.insert(format!("git {name}"), r.git(args).into_bytes());
    }
    all
}

#[track_caller]
fn refused_without_a_change(r: &Repo, what: &str, args: &[&str], expect: &str) {
    ended_without_a_change(r, what, args, expect, 2);
}

/// [`refused_without_a_change`] with another exit code (a git lock another process
/// keeps is exit 3).
fn ended_without_a_change(r: &Repo, what: &str, args: &[&str], expect: &str, code: i32) {
    let before = state(r);
    let out = r.ralph().args(args.iter().copied()).run();
    out.expect_code(code).stderr_has(expect);
    let after = state(r);
    let changed: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(changed.is_empty(), "{what}: the refused `ralph {}` changed {changed:?}\n{out}", args.join(" "));
}

/// Each refusal a run or a resume can meet, one after another on the same stopped run.
fn every_refusal(r: &Repo) {
    // The git state: a dirty tree for a new run (the stopped agent's src/a.rs and a
    // person's file), an operation in progress, a branch that exists, the index
    // locked.
    r.p.write("scratch.txt", "mine\n");
    refused_without_a_change(r, "dirty tree", &["--no-resume"], "--allow-dirty");
    std::fs::remove_file(r.p.join("scratch.txt")).expect("clean again");
    let head = r.git(&["rev-parse", "HEAD"]);
    std::fs::write(r.p.join(".git/MERGE_HEAD"), &head).expect("merge head");
    refused_without_a_change(r, "merge, resume", &["--resume"], "git merge is in progress");
    refused_without_a_change(r, "merge, new run", &["--no-resume", "--allow-dirty"], "git merge is in progress");
    std::fs::remove_file(r.p.join(".git/MERGE_HEAD")).expect("merge over");
    // A live process holds the index lock (a stale one would be removed).
    let lock = std::fs::File::create(r.p.join(".git/index.lock")).expect("index lock");
    let mut holder = std::process::Command::new("sleep").arg("120").stdout(lock).spawn().expect("sleep");
    ended_without_a_change(r, "index lock", &["--no-resume", "--allow-dirty"], "index.lock", 3);
    let _ = holder.kill();
    let _ = holder.wait();
    std::fs::remove_file(r.p.join(".git/index.lock")).expect("unlocked");
    r.git(&["branch", "taken"]);
    let config = r.p.read("ralph.toml");
    r.p.write("ralph.toml", &format!("[git]\nbranch = \"taken\"\n\n{config}"));
    refused_without_a_change(r, "branch exists", &["--no-resume", "--allow-dirty"], "exists already");
    r.p.write("ralph.toml", &config);
    r.git(&["branch", "-D", "taken"]);
    // The config and the goal.
    r.p.write("ralph.toml", &config.replace("[phases.develop]", "[phases.dev]"));
    refused_without_a_change(r, "phase gone", &["--resume"], "no longer has");
    r.p.write("ralph.toml", &format!("{config}\nnot toml"));
    refused_without_a_change(r, "config", &["--no-resume"], "ralph.toml");
    r.p.write("ralph.toml", &config);
    refused_without_a_change(r, "from", &["--resume", "--from", "nowhere"], "nowhere");
    let goal = r.p.read("PROMPT.md");
    r.p.write("PROMPT.md", "");
    refused_without_a_change(r, "goal", &["--resume"], "PROMPT.md");
    r.p.write("PROMPT.md", &goal);
    // The pre-flight: an agent binary that is not there.
    r.p.write(
        "ralph.toml",
        &config
            .replace(
                "[agents.a]\nkind = \"sim\"",
                "[agents.a]\nkind = \"sim\"\n\n[agents.gone]\nkind = \"claude\"\nbinary = \"/nonexistent/claude\"",
            )
            .replace("main = [\"a\"]", "main = [\"a\", \"gone\"]"),
    );
    refused_without_a_change(r, "pre-flight", &["--no-resume"], "/nonexistent/claude");
    r.p.write("ralph.toml", &config);
    // A link planted where the run's state goes.
    let outside = tempfile::tempdir().expect("outside");
    std::os::unix::fs::symlink(outside.path(), r.p.join(".agent/artifacts")).expect("plant a link");
    refused_without_a_change(r, "planted link", &["--no-resume", "--allow-dirty"], "is a symbolic link");
    std::fs::remove_file(r.p.join(".agent/artifacts")).expect("unplant");
    // Neither flag, no terminal.
    refused_without_a_change(r, "no flag", &[], "--resume");
}

/// A run with `args`, stopped by the signal (SIGINT pauses, SIGKILL crashes it) once
/// its first attempt is under way.
fn stopped(r: &Repo, args: &[&str], signal: Signal) {
    let _ = std::fs::remove_file(r.p.join(".agent/it1-started"));
    let run = r.ralph().args(args.iter().copied()).timeout(Duration::from_secs(60)).spawn();
    r.p.wait_for_file(".agent/it1-started", Duration::from_secs(30));
    if signal == Signal::SIGKILL {
        let _ = killpg(Pid::from_raw(run.pid()), Signal::SIGKILL);
        let _ = run.wait(crate::harness::DEFAULT_TIMEOUT);
    } else {
        run.signal(signal);
        run.finish().expect_code(130);
    }
}

#[test]
fn a_refused_command_changes_nothing_after_a_pause() {
    let r = project();
    stopped(&r, &[], Signal::SIGINT);
    every_refusal(&r);
    // The paused run resumes as if nothing had been tried: no restore, no crash.
    let out = r.ralph().args(["--resume"]).run();
    out.expect_code(0);
    assert!(!out.stderr.contains("restored"), "{out}");
    assert!(r.p.events("checkpoint_archived").is_empty(), "{out}");
    assert_eq!(r.commits().len(), 1, "{out}");
}

#[test]
fn a_refused_command_changes_nothing_after_a_crash() {
    let r = project();
    stopped(&r, &[], Signal::SIGKILL);
    // The journal holds the newest state; the file is gone (as a power cut can leave
    // it): only a resume that goes on restores it.
    std::fs::remove_file(r.p.join(".agent/checkpoint.json")).expect("remove");
    every_refusal(&r);
    // The crash is still known: the lock says its ralph did not stop.
    let out = r.ralph().args(["--resume"]).run();
    out.expect_code(0);
    assert_eq!(r.p.events("lock_stale").len(), 1, "a refusal wiped the crash's mark\n{out}");
    assert_eq!(r.p.events("checkpoint_restored").len(), 1, "{out}");
    assert_eq!(r.commits().len(), 1, "{out}");
}

#[test]
fn a_checkpoint_that_does_not_parse_is_refused_and_left_in_place() {
    let r = project();
    stopped(&r, &[], Signal::SIGINT);
    // Neither the file nor the journal holds a usable checkpoint.
    r.p.write(".agent/checkpoint.json", "{ not json");
    r.p.write(".agent/events.jsonl", "");
    for args in [&["--resume"][..], &[], &["--resume-or-start"]] {
        refused_without_a_change(&r, "corrupt", args, "does not parse");
    }
    assert_eq!(r.p.read(".agent/checkpoint.json"), "{ not json");
    // Starting over is asked for: the file is kept aside, never lost.
    stopped(&r, &["--no-resume", "--allow-dirty"], Signal::SIGINT);
    r.p.set_aside("{ not json");
}

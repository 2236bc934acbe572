//! A person's edits and ralph's commits (issue 30, item 1): what a person changes
//! while ralph is stopped in order (Ctrl+C, SIGTERM, `ralph stop`, a cap) is never
//! committed by ralph, even when the agent later changes the same file; after a
//! crash the tree is the agent's (docs/git.md "exactly once").

use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::git::Repo;
use crate::harness::fast;

/// How the first run stops.
#[derive(Debug, Clone, Copy)]
enum Stop {
    CtrlC,
    Sigterm,
    RalphStopNow,
    /// The agent fails and the one-agent chain's budget ends the run (`failed`).
    Cap,
}

/// Launch 1 writes two files of the agent's and then waits (or fails, for the cap);
/// launch 2 (the resume) writes one more, touches the person's `NOTES.md` too, and
/// finishes the iteration.
fn project(stop: Stop) -> Repo {
    let first = match stop {
        Stop::Cap => {
            r#"[{ write = { path = "src/a.rs", content = "// a\n" } }, { write = { path = "src/c.rs", content = "// c\n" } }, { exit = 1 }]"#
        }
        _ => {
            r#"[{ write = { path = "src/a.rs", content = "// a\n" } }, { write = { path = "src/c.rs", content = "// c\n" } }, { write = { path = ".agent/it1-started", content = "" } }, { sleep = "60s" }, { done = "never" }]"#
        }
    };
    let second = r#"[{ write = { path = "src/b.rs", content = "// b\n" } }, { write = { path = "NOTES.md", content = "the agent's notes\n" } }, { done = "Finished the work." }]"#;
    let config = fast(
        "agent_attempts = 1",
        "stall = \"2m\"",
        &format!(
            "[general]\nmax_cycles = 1\n\n[agents.a]\nkind = \"sim\"\n\n[[agents.a.script]]\nsteps = {first}\n\n[[agents.a.script]]\nsteps = {second}\n\n[chains]\nmain = [\"a\"]\n\n[phases.develop]\nchain = \"main\"\niterations = 1\n"
        ),
    );
    Repo::with(&config, &[("NOTES.md", "notes\n"), ("agent.sh", "#!/bin/sh\necho old\n")], true)
}

/// The first run, stopped in order by `stop`; returns its exit code.
fn stopped(r: &Repo, stop: Stop) -> i32 {
    if let Stop::Cap = stop {
        let out = r.ralph().run();
        assert_eq!(r.p.checkpoint()["status"], "failed", "{out}");
        return out.code.unwrap_or(-1);
    }
    let run = r.ralph().timeout(Duration::from_secs(60)).spawn();
    r.p.wait_for_file(".agent/it1-started", Duration::from_secs(30));
    match stop {
        Stop::CtrlC => run.signal(Signal::SIGINT),
        Stop::Sigterm => run.signal(Signal::SIGTERM),
        Stop::RalphStopNow => {
            r.ralph().args(["stop", "--now"]).run();
        }
        Stop::Cap => unreachable!(),
    }
    let out = run.finish();
    // Ctrl+C and `ralph stop` pause; SIGTERM (the machine's shutdown) interrupts.
    let status = r.p.checkpoint()["status"].clone();
    assert!(status == "paused" || status == "interrupted", "{status}\n{out}");
    out.code.unwrap_or(-1)
}

#[test]
fn what_a_person_changes_while_ralph_is_stopped_is_never_committed_by_ralph() {
    for stop in [Stop::CtrlC, Stop::Sigterm, Stop::RalphStopNow, Stop::Cap] {
        let r = project(stop);
        let code = stopped(&r, stop);
        assert_ne!(code, 0, "{stop:?}");
        // The person, while ralph is stopped: a tracked file edited, a new file, an
        // agent script fixed, and a file the agent had changed changed again.
        r.p.write("NOTES.md", "notes\nmy own line\n");
        r.p.write("scratch.txt", "my scratch\n");
        r.p.write("agent.sh", "#!/bin/sh\necho fixed\n");
        r.p.write("src/c.rs", "// c, and my fix\n");
        let out = r.ralph().args(["--resume"]).run();
        out.expect_code(0);
        let commits = r.commits();
        assert_eq!(commits.len(), 1, "{stop:?}: {out}");
        let (body, files) = &commits[0];
        assert!(body.contains("develop iteration 1"), "{stop:?}: {body}");
        assert_eq!(files, &["src/a.rs", "src/b.rs"], "{stop:?}: the person's files were committed\n{out}");
        // Named once, when the run resumes.
        for path in ["NOTES.md", "scratch.txt", "agent.sh", "src/c.rs"] {
            let named = r.p.events("git_changed_while_stopped");
            assert_eq!(named.len(), 1, "{stop:?}: {out}");
            assert!(named[0]["files"].as_array().is_some_and(|f| f.iter().any(|f| f == path)), "{stop:?}: {named:?}");
        }
        let held = out.stderr.lines().filter(|l| l.contains("scratch.txt")).count();
        assert_eq!(held, 1, "{stop:?}: scratch.txt is named once\n{out}");
        // The agent changed the person's NOTES.md too: not committed, and said why.
        let left_out = r.p.events("git_left_out");
        let notes: Vec<_> = left_out.iter().filter(|e| e["path"] == "NOTES.md").collect();
        assert_eq!(notes.len(), 1, "{stop:?}: {left_out:?}");
        assert_eq!(notes[0]["reason"], "held", "{stop:?}");
        out.stderr_has("not committing NOTES.md");
        // Everything of the person's is still in the working tree, uncommitted.
        assert_eq!(r.p.read("scratch.txt"), "my scratch\n");
        assert_eq!(r.p.read("agent.sh"), "#!/bin/sh\necho fixed\n");
        assert_eq!(r.p.read("src/c.rs"), "// c, and my fix\n");
        let status = r.status();
        for line in [" M NOTES.md", " M agent.sh", "?? scratch.txt", "?? src/c.rs"] {
            assert!(status.lines().any(|l| l == line), "{stop:?}: {line:?} missing from\n{status}");
        }
    }
}

#[test]
fn after_a_crash_the_tree_is_the_agents() {
    let r = project(Stop::CtrlC);
    let run = r.ralph().timeout(Duration::from_secs(60)).spawn();
    r.p.wait_for_file(".agent/it1-started", Duration::from_secs(30));
    // No orderly stop: ralph's whole group is killed, as a power cut or an OOM kill
    // would end it. What changed since is the agent's (its leftovers' work included).
    let _ = killpg(Pid::from_raw(run.pid()), Signal::SIGKILL);
    let _ = run.wait(crate::harness::DEFAULT_TIMEOUT);
    r.p.write("src/c.rs", "// c, finished by the agent's leftover\n");
    let out = r.ralph().args(["--resume"]).run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 1, "{out}");
    assert_eq!(commits[0].1, ["NOTES.md", "src/a.rs", "src/b.rs", "src/c.rs"], "{out}");
    assert!(r.p.events("git_changed_while_stopped").is_empty(), "{out}");
}

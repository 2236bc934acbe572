//! The state-format policy and the exit-code table, from the outside: a checkpoint
//! of a newer version is refused and left in place by every reader, an impossible
//! one names its field, `--no-resume` sets either aside and starts in one call, and
//! problems found before the first attempt are exit 2 with the path named.

use crate::harness::{Project, sim_project};

fn project() -> Project {
    sim_project()
        .toml(
            r#"[general.workflow]
phases = ["develop"]"#,
        )
        .sim("a", &[r#"[{ done = "finished" }]"#])
        .build()
}

/// A real checkpoint of a paused run with one field changed.
fn checkpoint_with(p: &Project, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let sample = include_str!("../fixtures/checkpoints/v1-current.json");
    let mut v: serde_json::Value = serde_json::from_str(sample).expect("sample parses");
    edit(&mut v);
    let text = serde_json::to_string_pretty(&v).expect("serialise");
    p.write(".agent/checkpoint.json", &text);
    text
}

#[test]
fn a_newer_checkpoint_is_refused_by_every_reader_and_left_in_place() {
    let p = project();
    let text = checkpoint_with(&p, |v| v["version"] = 99.into());
    for args in [&["--resume"][..], &[], &["--inspect-checkpoint"], &["--inspect-checkpoint", "--json"], &["status"]] {
        p.ralph()
            .args(args.iter().copied())
            .run()
            .expect_code(2)
            .stderr_has("format version 99")
            .stderr_has("left in place");
        assert_eq!(p.read(".agent/checkpoint.json"), text, "{args:?} changed the file");
        assert!(!p.agent_dir_listing().iter().any(|n| n.contains("corrupt")), "{args:?} set it aside as corrupt");
    }
    // The user's explicit choice to start over sets it aside (never deletes it) and runs.
    p.ralph().args(["--no-resume"]).run().expect_code(0).stderr_has("kept aside as");
    assert_eq!(p.checkpoint()["status"], "completed");
    let aside: Vec<_> = p.agent_dir_listing().into_iter().filter(|n| n.contains("archived")).collect();
    assert_eq!(aside.len(), 1, "{:?}", p.agent_dir_listing());
    assert_eq!(p.read(&format!(".agent/{}", aside[0])), text);
}

#[test]
fn an_impossible_position_is_refused_naming_the_field() {
    let p = project();
    let text = checkpoint_with(&p, |v| v["progress"]["position"]["iteration"] = 0.into());
    for args in [&["--resume"][..], &["--inspect-checkpoint"], &["status"]] {
        p.ralph()
            .args(args.iter().copied())
            .run()
            .expect_code(2)
            .stderr_has("progress.position.iteration")
            .stderr_has("left in place");
        assert_eq!(p.read(".agent/checkpoint.json"), text);
    }
}

#[test]
fn no_resume_on_a_corrupt_checkpoint_sets_it_aside_and_starts() {
    let p = project();
    p.write(".agent/checkpoint.json", "{ torn");
    p.ralph().args(["--no-resume"]).run().expect_code(0).stderr_has("kept aside as");
    assert_eq!(p.checkpoint()["status"], "completed");
    p.set_aside("{ torn");
}

#[test]
fn inspect_of_a_completed_run_promises_no_resume() {
    let p = project();
    p.ralph().run().expect_code(0);
    p.nothing_to_resume();
}

#[test]
fn problems_before_the_first_attempt_are_exit_2_naming_the_path() {
    let p = project();
    p.ralph().args(["-C", "/nonexistent/ralph-dir"]).run().expect_code(2).stderr_has("/nonexistent/ralph-dir");
    p.ralph().args(["-c", "missing.toml"]).run().expect_code(2).stderr_has("missing.toml");
    // `.agent` is a file, so the state directory cannot be created (permission tricks
    // prove nothing as root).
    p.write(".agent", "not a directory");
    p.ralph().run().expect_code(2).stderr_has(".agent");
}

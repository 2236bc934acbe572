//! A simulated power cut. ralph (a debug build) records every length it syncs in the
//! file named by `RALPH_TEST_SYNC_LOG`; the test kills it in the middle of a run, cuts
//! the journal back to its last synced length and leaves `checkpoint.json` as an
//! unsynced rename may leave it after a power cut (missing, empty, torn, an older
//! save), and the resumed run must redo no iteration whose end ralph had reported.

use std::fs;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::{Project, cleanup, sim_project};

/// A command agent: every call counts itself in `calls`, and call 4 (iteration 4 of
/// the first ralph) hangs with its pid in `agent.pid`.
fn project() -> Project {
    sim_project()
        .command("a", r#"["sh", "agent.sh", "{prompt}"]"#)
        .phase("iterations = 6\ndone = \"exit0\"")
        .file(
            "agent.sh",
            r#"n=$(( $(cat calls 2>/dev/null || echo 0) + 1 ))
echo "$n" > calls
if [ "$n" = 4 ]; then echo $$ > agent.pid; exec sleep 60; fi
exit 0
"#,
        )
        .build()
}

/// What a power cut can leave of a `checkpoint.json` replaced by an unsynced rename.
#[derive(Debug, Clone, Copy)]
enum Left {
    Missing,
    Empty,
    Torn,
    /// An older save of the run (the journal's first snapshot).
    Older,
}

/// The journal's length at its last sync, from the side file.
fn last_synced(sync_log: &str, journal: &str) -> u64 {
    sync_log
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(path, _)| path.ends_with(journal))
        .filter_map(|(_, len)| len.parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no sync of {journal} recorded:\n{sync_log}"))
}

fn cut_and_resume(left: Left) {
    let p = project();
    let sync_log = p.join("sync.log");
    let run = p.ralph().env("RALPH_TEST_SYNC_LOG", sync_log.to_string_lossy()).spawn();
    let agent = p.pid_file("agent.pid");
    // The power goes: nothing more reaches the disk.
    run.signal(Signal::SIGKILL);
    let before = run.wait(Duration::from_secs(10));
    cleanup(agent);
    before.stderr_has("iteration 3 done");

    let log = fs::read_to_string(&sync_log).expect("sync log");
    assert!(!log.contains("checkpoint.json"), "checkpoint.json was synced; the journal should carry it:\n{log}");
    let journal = p.join(".agent/events.jsonl");
    let synced = last_synced(&log, ".agent/events.jsonl");
    assert!(synced < fs::metadata(&journal).unwrap().len(), "nothing after the last sync to lose");
    fs::OpenOptions::new().write(true).open(&journal).unwrap().set_len(synced).unwrap();
    let cp = p.checkpoint_path();
    match left {
        Left::Missing => fs::remove_file(&cp).unwrap(),
        Left::Empty => fs::write(&cp, "").unwrap(),
        Left::Torn => {
            let text = fs::read(&cp).unwrap();
            fs::write(&cp, &text[..text.len() / 2]).unwrap();
        }
        Left::Older => {
            let first = p.events("checkpoint").into_iter().next().expect("a snapshot");
            fs::write(&cp, first["checkpoint"].to_string()).unwrap();
        }
    }

    let out = p.ralph().args(["--resume"]).run();
    out.expect_code(0).stderr_has("restored save");
    // Iterations 1-3 were reported done before the cut: the resumed run starts at 4.
    let resumed: Vec<_> = p.journal().into_iter().skip_while(|e| e["kind"] != "run_resumed").collect();
    let iterations: Vec<_> =
        resumed.iter().filter(|e| e["kind"] == "attempt_started").map(|e| e["iteration"].clone()).collect();
    assert_eq!(iterations, [4, 5, 6], "{left:?}\n{out}");
    assert_eq!(p.read("calls").trim(), "7", "{left:?}: calls 1-3, the cut 4, then iterations 4-6");
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed", "{left:?}");
    if matches!(left, Left::Empty | Left::Torn) {
        let aside = p.agent_dir_listing().into_iter().filter(|n| n.contains("corrupt")).count();
        assert_eq!(aside, 1, "{left:?}: the bad file is kept aside");
    }
}

#[test]
fn a_power_cut_loses_no_reported_transition_whatever_checkpoint_json_it_leaves() {
    for left in [Left::Missing, Left::Empty, Left::Torn, Left::Older] {
        cut_and_resume(left);
    }
}

/// The journal syncs of a run of `iterations` agent calls that succeed at once, as
/// the debug build's hook records them.
fn syncs_of_a_run(iterations: u32) -> Vec<String> {
    let p = sim_project()
        .command("a", r#"["true", "{prompt}"]"#)
        .phase(&format!("iterations = {iterations}\ndone = \"exit0\""))
        .build();
    let sync_log = p.join("sync.log");
    p.ralph().env("RALPH_TEST_SYNC_LOG", sync_log.to_string_lossy()).run().expect_code(0);
    fs::read_to_string(&sync_log).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// What keeps a call's cost at one disk flush: the transition the call ends in is one
/// journal sync, and nothing else about a call is synced (its start and its session
/// are appended unsynced, `checkpoint.json` follows unsynced). The rest is per
/// run (its start and end) or per phase (the phase's artifact).
#[test]
fn an_agent_call_costs_one_sync_and_no_more() {
    let (three, six) = (syncs_of_a_run(3), syncs_of_a_run(6));
    assert_eq!(six.len() - three.len(), 3, "one sync per call:\n{}\n---\n{}", three.join("\n"), six.join("\n"));
    assert!(!six.iter().any(|l| l.contains("checkpoint.json")), "checkpoint.json is not synced:\n{}", six.join("\n"));
}

//! Integration tests: the real `ralph` binary against the built-in scripted agent
//! (`kind = "sim"`) and small command agents, each in its own temp directory.

mod crash_harness;
mod fake_chat;
mod fake_gemini;
mod fake_openai;
mod fake_provider;
mod fleet_harness;
mod harness;
mod http_fake;
mod real_cli;

mod capture;
mod claude;
mod codex;
mod commands;
mod config;
mod control;
mod crash;
mod deploy;
mod endings;
mod engine;
mod fleet;
mod fleet_kill;
mod fleet_landing_kill;
mod fleet_queue;
mod gemini;
mod git;
mod git_locks;
mod hostile;
mod identity;
mod limits;
mod opencode;
mod passes;
mod persons;
mod power_cut;
mod refusals;
mod resume;
mod secrets;
mod signals;
mod signoff;
mod snapshots;
mod state_format;
mod supervise;
mod watch;
mod watchdog;
mod workflow;

/// Every file of this directory is compiled into the test binary: a file without its
/// `mod` line above would never run, and nothing else would say so.
#[test]
fn every_file_of_the_directory_is_a_module_of_the_binary() {
    use std::collections::BTreeSet;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("main.rs");
    let modules: BTreeSet<String> =
        main.lines().filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';').map(str::to_string)).collect();
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("tests/integration")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .filter(|name| name != "main")
        .collect();
    assert_eq!(files, modules, "tests/integration/*.rs and the `mod` lines of main.rs differ");
}

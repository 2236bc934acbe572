//! Config errors stop ralph before anything runs (exit 2) with a precise message.

use std::time::Duration;

use crate::harness::{Output, Project, fast};

const AGENT: &str = r#"
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{ done = "ok" }]

[chains]
main = ["a"]

[phases.develop]
chain = "main"
"#;

fn run_with(config: &str) -> (Project, Output) {
    let p = Project::new().config(config);
    let out = p.ralph().run();
    (p, out)
}

#[track_caller]
fn config_error(config: &str, needles: &[&str]) -> Output {
    let (p, out) = run_with(config);
    out.expect_code(2);
    for needle in needles {
        out.stderr_has(needle);
    }
    // Nothing ran.
    assert!(!p.exists(".agent/checkpoint.json"), "a checkpoint was written\n{out}");
    out
}

#[test]
fn unknown_key_suggests_the_right_one() {
    config_error(
        &format!("[general]\nmax_cycle = 2\n{AGENT}"),
        &["ralph.toml:2:1", "max_cycle", "did you mean `max_cycles`"],
    );
}

#[test]
fn unknown_agent_in_a_chain() {
    config_error(
        "[agents.a]\nkind = \"sim\"\n[[agents.a.script]]\nsteps = [{ done = \"ok\" }]\n\n[chains]\nmain = [\"a\", \"nope\"]\n\n[phases.develop]\nchain = \"main\"\n",
        &["ralph.toml:7:", "`nope`", "not defined in [agents]"],
    );
}

#[test]
fn zero_cap_is_an_error() {
    config_error(&fast("agent_attempts = 0", "", AGENT), &["agent_attempts", "at least 1"]);
}

#[test]
fn negative_cap_is_an_error() {
    config_error(&fast("agent_attempts = -1", "", AGENT), &["agent_attempts", "-1"]);
}

#[test]
fn zero_max_cycles_is_an_error() {
    config_error(&format!("[general]\nmax_cycles = 0\n{AGENT}"), &["max_cycles"]);
}

#[test]
fn toml_syntax_error_has_line_and_column() {
    config_error(&format!("{AGENT}\n[general\nmax_cycles = 2\n"), &["ralph.toml:13:9", "invalid toml"]);
}

#[test]
fn missing_prompt_file() {
    let p = Project::bare().config(&fast("", "", AGENT));
    let out = p.ralph().run();
    out.expect_code(2).stderr_has("PROMPT.md").stderr_has("goal file");
}

#[test]
fn no_config_at_all_points_to_ralph_init() {
    let p = Project::new();
    p.ralph().run().expect_code(2).stderr_has("no ralph.toml found").stderr_has("ralph init");
}

#[test]
fn config_flag_points_elsewhere() {
    let p = Project::new().file("conf/other.toml", &fast("", "", AGENT));
    p.ralph().args(["-c", "conf/other.toml"]).run().expect_code(0);
    assert_eq!(p.checkpoint()["status"], "completed");
}

#[test]
fn config_in_dot_agent_is_found() {
    let p = Project::new().file(".agent/ralph.toml", &fast("", "", AGENT));
    p.ralph().run().expect_code(0);
}

#[test]
fn command_agent_without_prompt_placeholder_is_an_error() {
    config_error(
        &fast(
            "",
            "",
            "[agents.c]\nkind = \"command\"\ncommand = [\"true\"]\n[chains]\nmain = [\"c\"]\n[phases.x]\nchain = \"main\"\n",
        ),
        &["{prompt}"],
    );
}

#[test]
fn the_example_config_runs_to_completion() {
    let p = Project::new().file("ralph.toml", include_str!("../../ralph.example.toml"));
    let out = p.ralph().timeout(Duration::from_secs(60)).run();
    out.expect_code(0);
    assert!(p.exists("PLAN.md"));
    assert_eq!(p.checkpoint()["status"], "completed");
}

/// Every mistake in one run, in file order, each with its place: an agent whose own
/// table is wrong is reported there, not again where a chain names it.
#[test]
fn every_error_is_reported_at_once_in_file_order() {
    let toml = format!(
        "[phases.develop]\nchain = \"nope\"\n[retry]\nagent_attempts = 0\n[general]\nmax_cycle = 2\n{}",
        AGENT.replace("kind = \"sim\"", "kind = \"cursor\"").replace("[phases.develop]\nchain = \"main\"\n", "")
    );
    let out = config_error(&toml, &["4 problems in"]);
    let places: Vec<&str> = out.stderr.lines().skip(1).filter_map(|l| l.split(": ").next()).collect();
    let lines: Vec<usize> = places.iter().filter_map(|p| p.rsplit(':').nth(1)?.parse().ok()).collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "not in file order: {lines:?}\n{out}");
    assert!(!out.stderr.contains("not defined in [agents]"), "a follow-up was reported\n{out}");
    out.stderr_has("did you mean `max_cycles`").stderr_has("`cursor`").stderr_has("chain `nope`");
}

#[test]
fn at_most_twenty_errors_are_listed() {
    let keys: String = (0..25).map(|i| format!("bogus_{i} = 1\n")).collect();
    let out = config_error(&format!("[general]\n{keys}{AGENT}"), &["25 problems in", "… and 5 more"]);
    assert_eq!(out.stderr.lines().filter(|l| l.contains("unknown key")).count(), 20, "{out}");
}

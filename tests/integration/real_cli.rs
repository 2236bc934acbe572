//! Finding the real agent CLIs installed by `tests/agents/install.sh`. A missing CLI
//! skips its tests with a loud message on a developer's machine and fails them under
//! CI (`CI=true`), where the install step must have run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Output, Project, long_goal, sim_project};
use crate::http_fake::Fake;

/// The pinned CLI `name`, if installed.
pub(crate) fn find(name: &str) -> Option<PathBuf> {
    let versions = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/versions.txt");
    let text = std::fs::read_to_string(versions).expect("tests/agents/versions.txt");
    let version = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&name))
        .and_then(|f| f.get(2).map(|v| v.to_string()))
        .unwrap_or_else(|| panic!("{name} is not in tests/agents/versions.txt"));
    let bin = agents_dir().join(format!("{name}-{version}")).join("node_modules").join(".bin").join(name);
    installed(bin, || format!("{name} {version}"), "tests/agents/install.sh")
}

/// Where `tests/agents/install.sh` and `tests/deploy/install.sh` install:
/// `RALPH_AGENTS_DIR`, or `~/.cache/ralph-agents`.
pub(crate) fn agents_dir() -> PathBuf {
    std::env::var_os("RALPH_AGENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/ralph-agents"))
}

/// `path` if it exists; else `None` with a loud message that `what` is missing and
/// `script` installs it, or a panic under CI (`CI=true`), where it must have run.
pub(crate) fn installed(path: PathBuf, what: impl FnOnce() -> String, script: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let message = format!("{} is not installed at {}: run {script}", what(), path.display());
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}");
    }
    eprintln!("\n*** SKIPPED: {message} ***\n");
    None
}

/// The venv python with the pinned MCP Python SDK, if installed.
pub(crate) fn python_mcp() -> Option<PathBuf> {
    let reqs = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/python-requirements.txt");
    let text = std::fs::read_to_string(reqs).expect("tests/agents/python-requirements.txt");
    let version = text.lines().find_map(|l| l.strip_prefix("mcp==")).expect("mcp is pinned").trim().to_string();
    let python = agents_dir().join(format!("python-mcp-{version}")).join("bin").join("python");
    installed(python, || format!("mcp {version} (Python)"), "tests/agents/install.sh")
}

/// `p` with a `ralph.toml` whose one agent is the real CLI `name`, its table's keys
/// `table` (kind, model, binary, an environment of its own), in the phase `develop`.
pub(crate) fn configure(p: Project, name: &str, table: &str, retry: &str, timeouts: &str) -> Project {
    let config = sim_project().retry(retry).timeouts(timeouts).agent(name, table).config_text();
    p.config(&config)
}

/// The `[timeouts]` of the real-CLI tests that are not about a stall: a limit far
/// past any start-up, so that it only bounds a hang. A CLI says nothing until it has
/// started, and ralph's stall clock counts that silence: on two cores at a load of
/// 13, Gemini's first output came 27 s after its start and OpenCode said nothing for
/// 30 s seven times running.
pub(crate) const STALL: &str = r#"stall = "120s""#;

/// The wall clock of one ralph run through a real CLI: it only bounds a hang.
pub(crate) const RUN_LIMIT: Duration = Duration::from_secs(360);

/// The `[retry]` of the real-CLI stall tests: a start-up slow enough to count as a
/// stall too must not use up the budget before the provider's stall is reached.
pub(crate) const STREAM_STALL_RETRY: &str = "agent_attempts = 5";

/// The `[timeouts]` of a real-CLI stall test and the bound on its run.
pub(crate) struct StreamStall {
    pub(crate) timeouts: String,
    pub(crate) run_limit: Duration,
}

/// A stall limit for a real-CLI stall test that outlasts the CLI's start-up on this
/// machine now: twice what ralph took, in one run of `calibration` answered at once
/// by `provider` (whose fallback must be a done answer), from its start to the
/// CLI's first request, and at least 30 s. The limit is what the test waits for, so
/// it is no longer than the machine needs: 30 s at rest; a fixed limit long enough
/// for a loaded machine would cost every run minutes. The provider's stalls last
/// until the CLI is gone.
pub(crate) fn stream_stall<R: Clone>(provider: &Fake<R>, calibration: &Project) -> StreamStall {
    let before = provider.requests().len();
    let started = Instant::now();
    let run = calibration.ralph().timeout(RUN_LIMIT).spawn();
    while provider.requests().len() == before && started.elapsed() < RUN_LIMIT {
        std::thread::sleep(Duration::from_millis(50));
    }
    let startup = started.elapsed();
    run.wait(RUN_LIMIT).expect_code(0);
    let stall = (2 * startup).max(Duration::from_secs(30));
    StreamStall {
        timeouts: format!("stall = \"{}s\"", stall.as_secs() + 1),
        // Up to the retry's 5 attempts, each cut at the limit, and the last one.
        run_limit: 6 * stall + Duration::from_secs(60),
    }
}

/// A real CLI's stall test: after a calibration run (`stream_stall`), `provider`
/// (whose fallback must be a done answer) answers once with `stall`, a stream that
/// goes silent after its first event; ralph cuts every attempt it stalls as a
/// `stall`, and the run completes. `project(provider, retry, timeouts)` makes the
/// CLI's project. The stalled run's project, or `None` when the CLI is missing.
pub(crate) fn a_stalled_stream_is_cut<R: Clone>(
    provider: &Fake<R>,
    stall: R,
    project: fn(&Fake<R>, &str, &str) -> Option<Project>,
) -> Option<Project> {
    let calibration = project(provider, "", "")?;
    let limits = stream_stall(provider, &calibration);
    provider.then(vec![stall]);
    let p = project(provider, STREAM_STALL_RETRY, &limits.timeouts)?;
    p.ralph().timeout(limits.run_limit).run().expect_code(0);
    let failed = p.events("attempt_failed");
    assert!(!failed.is_empty() && failed.iter().all(|f| f["rule"] == json!("stall")), "{failed:#?}");
    Some(p)
}

/// The last words of the long goal of the stdin tests.
const GOAL_END: &str = "END-OF-GOAL-7731";

/// Gives `p` a goal longer than one argument may be (it reaches a CLI on stdin).
pub(crate) fn give_a_long_goal(p: &Project) {
    p.write("PROMPT.md", &long_goal(GOAL_END));
}

/// One of the provider's request `bodies` holds the whole goal of [`give_a_long_goal`].
#[track_caller]
pub(crate) fn assert_the_whole_goal_reached_the_model(bodies: impl IntoIterator<Item = Value>) {
    let reached = bodies.into_iter().any(|b| b.to_string().contains(GOAL_END));
    assert!(reached, "the whole goal reached the model");
}

/// `develop` done by a call of `ralph mcp`'s `declare_complete` (`done = "mcp"`),
/// with a `max_runtime` (a failure then ends within it instead of retrying an
/// exhausted fake provider), if given.
pub(crate) fn done_by_mcp(p: &Project, max_runtime: Option<&str>) {
    let config = p.read("ralph.toml").replace("chain = \"main\"\n", "chain = \"main\"\ndone = \"mcp\"\n");
    let general = max_runtime.map(|t| format!("[general]\nmax_runtime = \"{t}\"\n")).unwrap_or_default();
    p.write("ralph.toml", &format!("{general}{config}"));
}

/// The evidence the fake providers' `declare_complete` calls give.
pub(crate) const EVIDENCE: &str = "read the goal; ran ls: no files needed";

/// The run of [`done_by_mcp`] ended by the one completion the CLI declared through
/// `ralph mcp`, with exit 0, and the CLI's shutdown of its server was no crash;
/// `why` says more when it was not. The completions declared.
#[track_caller]
pub(crate) fn assert_completed_through_mcp(p: &Project, out: &Output, why: &str) -> Vec<Value> {
    let declared = p.events("completion_declared");
    assert_eq!(declared.len(), 1, "{out:?}\n{why}");
    out.expect_code(0);
    assert!(p.events("mcp_lost").is_empty(), "{:?}", p.events("mcp_lost"));
    declared
}

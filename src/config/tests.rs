//! Tests of the whole loader: the example file, the design sketch, every step of the
//! scripted agent, and the message of every error.

use std::path::{Path, PathBuf};

use super::{AgentKind, DoneSignal, Identity, Loaded, SimStep, check_branch, parse};

/// A minimal valid config; tests put the key under test in front of it, so its line
/// numbers are easy to predict.
const BASE: &str = r#"
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [{ done = "ok" }]
[chains]
main = ["a"]
[phases.p]
chain = "main"
"#;

fn load(source: &str) -> Loaded {
    match parse(Path::new("ralph.toml"), source) {
        Ok(loaded) => loaded,
        Err(e) => panic!("expected a valid config, got: {e}"),
    }
}

fn err(source: &str) -> String {
    match parse(Path::new("ralph.toml"), source) {
        Ok(_) => panic!("expected an error for:\n{source}"),
        Err(e) => e.to_string(),
    }
}

/// `source` is refused with a message that holds every one of `parts`.
#[track_caller]
fn refused(source: &str, parts: &[&str]) {
    let message = err(source);
    for part in parts {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }
}

#[test]
fn the_repositorys_own_workflow_loads_and_its_goal_is_usable() {
    let loaded = load(include_str!("../../.agent/ralph.toml"));
    assert_eq!(loaded.config.general.prompt, PathBuf::from(".agent/PROMPT.md"));
    let names: Vec<&str> = loaded.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["plan", "develop", "review", "fix"]);
    assert_eq!(crate::workflow::goal::check(include_str!("../../.agent/PROMPT.md")), None);
}

#[test]
fn example_file_loads() {
    let loaded = load(include_str!("../../ralph.example.toml"));
    let names: Vec<&str> = loaded.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["plan", "develop", "review", "fix"]);
    assert_eq!(loaded.repeat, Some(super::RepeatGroup { first: 2, last: 3, passes: 3 }));
    let plan = &loaded.phases[0];
    assert_eq!(plan.chain, ["sim"]);
    assert_eq!(plan.done, DoneSignal::File(PathBuf::from("PLAN.md")));
    let develop = &loaded.phases[1];
    assert_eq!(develop.chain, ["flaky", "sim"]);
    assert!(develop.until_complete);
    assert_eq!(develop.iterations, 20);
    assert_eq!(loaded.phases[2].done, DoneSignal::Tag);
    assert_eq!(loaded.phases[2].iterations, 1);
    assert_eq!(loaded.config.agents["claude"].kind, AgentKind::Claude);
    assert_eq!(loaded.checksum.len(), 64);
    assert!(loaded.checksum.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
}

#[test]
fn example_file_shows_every_step_kind() {
    let loaded = load(include_str!("../../ralph.example.toml"));
    let mut seen: Vec<&str> =
        loaded.config.agents.values().flat_map(|a| &a.script).flat_map(|s| &s.steps).map(step_name).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 20, "steps shown: {seen:?}");
}

fn step_name(step: &SimStep) -> &'static str {
    match step {
        SimStep::Say(_) => "say",
        SimStep::Think(_) => "think",
        SimStep::Tool(_) => "tool",
        SimStep::Write(_) => "write",
        SimStep::Sleep(_) => "sleep",
        SimStep::Hang(_) => "hang",
        SimStep::Crash(_) => "crash",
        SimStep::Exit(_) => "exit",
        SimStep::Error(_) => "error",
        SimStep::Stderr(_) => "stderr",
        SimStep::RateLimit(_) => "rate_limit",
        SimStep::ToolText(_) => "tool_text",
        SimStep::RepeatTool(_) => "repeat_tool",
        SimStep::Ignore(_) => "ignore",
        SimStep::Grandchild(_) => "grandchild",
        SimStep::Pidfile(_) => "pidfile",
        SimStep::Usage(_) => "usage",
        SimStep::Done(_) => "done",
        SimStep::Goal(_) => "goal",
        SimStep::Mcp(_) => "mcp",
    }
}

#[test]
fn every_sim_step_deserializes() {
    let source = r#"
[agents.a]
kind = "sim"
[[agents.a.script]]
steps = [
    { say = "hi" },
    { think = "hmm" },
    { tool = { name = "Bash", input = { command = "cargo test" }, result = "ok", duration = "1s", hang = false } },
    { write = { path = "PLAN.md", content = "plan" } },
    { sleep = "1s" },
    { hang = true },
    { crash = "SIGABRT" },
    { exit = 3 },
    { error = "overloaded" },
    { stderr = "oops" },
    { rate_limit = "1h" },
    { tool_text = "<tool_use>" },
    { repeat_tool = { name = "Read", input = { file_path = "a" }, times = 4 } },
    { ignore = ["SIGINT"] },
    { grandchild = { pidfile = "c.pid", lives = "30s" } },
    { pidfile = "a.pid" },
    { usage = { input_tokens = 1, output_tokens = 2, cost_usd = 0.5 } },
    { done = "ok" },
    { goal = "all" },
]
[chains]
main = ["a"]
[phases.p]
chain = "main"
"#;
    let loaded = load(source);
    let steps = &loaded.config.agents["a"].script[0].steps;
    let names: Vec<&str> = steps.iter().map(step_name).collect();
    assert_eq!(names.len(), 19);
    assert_eq!(steps[4], SimStep::Sleep(std::time::Duration::from_secs(1)));
    assert_eq!(steps[10], SimStep::RateLimit(std::time::Duration::from_secs(3600)));
}

#[test]
fn design_sketch_loads() {
    let source = r#"
[general]
prompt = "PROMPT.md"
max_cycles = 3                  # passes through a chain before the phase fails
max_runtime = "8h"              # humantime durations everywhere
max_cost_usd = 40.0

[general.workflow]
checkpoint_enabled = true
phases = ["plan", "develop", "review"]      # the order

[retry]
agent_attempts = 3              # agent-category failures per agent before fallover
ambiguous_attempts = 5
backoff_base = "5s"
backoff_max = "10m"
tool_registry_resets = 3
mcp_restarts = 3
on_rate_limit = "wait"          # or "fallover"
max_rate_limit_wait = "6h"

[timeouts]
stall = "5m"                    # no event and no tool running
tool = "30m"                    # one tool call
attempt = "2h"
grace = "10s"                   # between SIGINT, SIGTERM and SIGKILL

[offline]
probe = ["api.anthropic.com:443"]   # default: the configured agents' providers
interval = "10s"
timeout = "3s"

[agents.claude]
kind = "claude"                 # claude | codex | opencode | gemini | command | sim
model = "opus"                  # passed on every launch and every resume
# binary = "/opt/bin/claude"    # default: found on PATH

[agents.mine]
kind = "command"                # any program, argv only, never a shell string
command = ["./my-agent", "--prompt", "{prompt}"]
resume = ["./my-agent", "--resume", "{session}", "--prompt", "{prompt}"]
output = "text"                 # or "claude-stream-json"

[chains]
main = ["claude", "mine"]

[phases.plan]
chain = "main"
done = "file:PLAN.md"

[phases.develop]
chain = "main"
until = "complete"
iterations = 20

[phases.review]
chain = "main"
prompt = "prompts/review.md"    # overrides the built-in template
"#;
    let loaded = load(source);
    assert_eq!(loaded.phases.len(), 3);
    assert_eq!(loaded.phases[1].chain, ["claude", "mine"]);
    assert_eq!(loaded.phases[2].prompt, Some(PathBuf::from("prompts/review.md")));
    assert_eq!(loaded.config.general.max_cost_usd, Some(40.0));
}

#[test]
fn phases_default_to_file_order() {
    let source = format!("{BASE}[phases.zeta]\nchain = \"main\"\n[phases.alpha]\nchain = \"main\"\n");
    let names: Vec<String> = load(&source).phases.into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["p", "zeta", "alpha"]);
}

#[test]
fn defaults_apply() {
    let loaded = load(BASE);
    assert_eq!(loaded.config.general.max_cycles, 3);
    assert_eq!(loaded.phases[0].done, DoneSignal::Tag);
    assert_eq!(loaded.phases[0].iterations, 1);
    assert!(!loaded.phases[0].until_complete);
}

#[test]
fn checksum_is_sha256_hex() {
    // sha256 of the empty string is well known; the config around it is not needed.
    assert_eq!(
        super::validate::checksum_for_tests(""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn unknown_key_suggests() {
    refused(
        &format!("[general]\nmax_cyclse = 3\n{BASE}"),
        &["ralph.toml:2:1:", "unknown key `max_cyclse` in [general]", "did you mean `max_cycles`?", "`workflow`"],
    );
    refused(
        &format!("[general]\nworkflow.phasse = []\n{BASE}"),
        &["ralph.toml:2:10:", "in [general.workflow]", "did you mean `phases`?"],
    );
    refused(
        &format!("[general]\ncheckpoint_enabled = true\n{BASE}"),
        &["ralph.toml:2:1:", "`checkpoint_enabled` belongs in [general.workflow]"],
    );
    refused(&format!("bogus = 1\n{BASE}"), &["ralph.toml:1:1:", "unknown key `bogus` at the top level", "`general`"]);
}

#[test]
fn unknown_kind_suggests() {
    refused(
        &BASE.replace("kind = \"sim\"", "kind = \"claud\""),
        &["ralph.toml:3:8:", "[agents.a] kind", "unknown agent kind `claud`", "did you mean `claude`?", "`sim`"],
    );
}

#[test]
fn unknown_step_suggests() {
    refused(
        &BASE.replace("{ done = \"ok\" }", "{ dne = \"ok\" }"),
        &["ralph.toml:5:12:", "unknown script step `dne`", "did you mean `done`?"],
    );
    refused(
        &BASE.replace("{ done = \"ok\" }", "{ say = \"a\", done = \"ok\" }"),
        &["ralph.toml:5:10:", "exactly one key"],
    );
}

#[test]
fn negative_and_mistyped_caps() {
    refused(
        &format!("[retry]\nagent_attempts = -1\n{BASE}"),
        &["ralph.toml:2:18:", "[retry] agent_attempts", "`-1` is not a whole number ≥ 1"],
    );
    refused(
        &format!("[retry]\nagent_attempts = \"three\"\n{BASE}"),
        &["ralph.toml:2:18:", "is not a whole number ≥ 1"],
    );
}

#[test]
fn bad_durations() {
    refused(
        &format!("[timeouts]\nstall = \"5 parsecs\"\n{BASE}"),
        &["ralph.toml:2:9:", "[timeouts] stall", "is not a duration like \"5m\""],
    );
    refused(&format!("[timeouts]\nstall = 300\n{BASE}"), &["ralph.toml:2:9:", "is not a duration"]);
    refused(
        &format!("[timeouts]\ngrace = \"0s\"\n{BASE}"),
        &["ralph.toml:2:1:", "[timeouts] grace must be longer than 0"],
    );
    refused(
        &format!("[retry]\nbackoff_base = \"1h\"\n{BASE}"),
        &["ralph.toml:2:1:", "backoff_base (1h) is longer than backoff_max (10m)"],
    );
    refused(
        &format!("[general]\nmax_runtime = \"0s\"\n{BASE}"),
        &["ralph.toml:2:1:", "max_runtime must be longer than 0", "no limit"],
    );
}

#[test]
fn zero_caps() {
    for (table, key) in [
        ("general", "max_cycles"),
        ("retry", "agent_attempts"),
        ("retry", "ambiguous_attempts"),
        ("retry", "tool_registry_resets"),
        ("retry", "mcp_restarts"),
    ] {
        refused(
            &format!("[{table}]\n{key} = 0\n{BASE}"),
            &["ralph.toml:2:1:", &format!("[{table}] {key} must be at least 1")],
        );
    }
    refused(&format!("{BASE}iterations = 0\n"), &["ralph.toml:10:1:", "[phases.p] iterations must be at least 1"]);
}

#[test]
fn bad_cost() {
    refused(
        &format!("[general]\nmax_cost_usd = 0.0\n{BASE}"),
        &["ralph.toml:2:1:", "max_cost_usd must be a number of dollars above 0"],
    );
    refused(&format!("[general]\nmax_cost_usd = inf\n{BASE}"), &["ralph.toml:2:1:", "not inf"]);
    // A fleet's cap in whole dollars is dollars too.
    for (cap, usd) in [("40", 40.0), ("2.5", 2.5)] {
        let loaded = load(&format!("[fleet]\nmax_cost = {cap}\n{BASE}"));
        assert_eq!(loaded.config.fleet.max_cost, Some(super::types::MaxCost::Usd(usd)));
    }
    refused(&format!("[fleet]\nmax_cost = -1\n{BASE}"), &["max_cost must be a number of dollars above 0, not -1"]);
}

#[test]
fn chain_errors() {
    refused(
        &BASE.replace("chain = \"main\"", "chain = \"mian\""),
        &["ralph.toml:9:1:", "phase p uses chain `mian`, which is not defined in [chains]; did you mean `main`?"],
    );
    refused(
        &BASE.replace("main = [\"a\"]", "main = [\"a\", \"b\"]"),
        &["ralph.toml:7:14:", "[chains] main names agent `b`, which is not defined in [agents]", "`a`"],
    );
    refused(&BASE.replace("main = [\"a\"]", "main = [\"aa\"]"), &["did you mean `a`?"]);
    refused(&BASE.replace("main = [\"a\"]", "main = []"), &["ralph.toml:7:1:", "[chains] main is empty"]);
}

#[test]
fn missing_chain() {
    refused(
        &format!("{BASE}[phases.q]\niterations = 2\n"),
        &["ralph.toml:10:1:", "[phases.q]: missing key `chain`", "one of [chains]: `main`"],
    );
}

#[test]
fn workflow_phase_list() {
    refused(
        &format!("[general.workflow]\nphases = [\"p\", \"q\"]\n{BASE}"),
        &["ralph.toml:2:16:", "lists `q`, which has no [phases.q] table"],
    );
    refused(&format!("[general.workflow]\nphases = [\"p\", \"p\"]\n{BASE}"), &["ralph.toml:2:16:", "lists `p` twice"]);
    refused(
        &format!("[general.workflow]\nphases = [\"p\"]\n{BASE}[phases.extra]\nchain = \"main\"\n"),
        &["ralph.toml:12:9:", "phase extra is defined but not listed in [general.workflow] phases"],
    );
    refused("[agents.a]\nkind = \"sim\"\n[[agents.a.script]]\nsteps = []\n", &["ralph.toml: no phases defined"]);
}

#[test]
fn done_signals() {
    let with = |done: &str| format!("{BASE}done = {done:?}\n");
    assert_eq!(load(&with("exit0")).phases[0].done, DoneSignal::Exit0);
    assert_eq!(load(&with("tag")).phases[0].done, DoneSignal::Tag);
    assert_eq!(load(&with("mcp")).phases[0].done, DoneSignal::Mcp);
    // A CLI that ralph does not register `ralph mcp` with could never complete it.
    let off = with("mcp").replace("kind = \"sim\"", "kind = \"sim\"\nmcp = false");
    refused(&off, &["done = \"mcp\" needs every agent", "agent a (mcp = false)"]);
    refused(&with("file:"), &["ralph.toml:10:1:", "needs a path"]);
    refused(&with("tga"), &["ralph.toml:10:1:", "[phases.p] done", "did you mean `tag`?", "\"file:PATH\""]);
    refused(&format!("{BASE}until = \"forever\"\n"), &["ralph.toml:10:9:", "[phases.p] until", "`complete`"]);
}

/// The agent table of [`BASE`], its script included.
const SIM: &str = "kind = \"sim\"\n[[agents.a.script]]\nsteps = [{ done = \"ok\" }]\n";

/// [`BASE`] with an agent of kind `kind` and the keys `keys`, without a script.
fn of_kind(kind: &str, keys: &str) -> String {
    BASE.replace(SIM, &format!("kind = \"{kind}\"\n{keys}"))
}

/// [`BASE`] with a command agent.
fn command() -> String {
    of_kind("command", "command = [\"./agent\", \"{prompt}\"]\n")
}

#[test]
fn per_kind_keys() {
    let command = command();
    load(&command);
    refused(
        &command.replace("\"./agent\", \"{prompt}\"", "\"./agent\""),
        &["ralph.toml:4:1:", "[agents.a] command has no {prompt}"],
    );
    refused(
        &command.replace("command = [\"./agent\", \"{prompt}\"]\n", ""),
        &["ralph.toml:2:9:", "[agents.a] command is required for kind = \"command\""],
    );
    refused(
        &format!("{command}[agents.a.env]\nX = \"1\"\n")
            .replace("kind = \"command\"", "kind = \"command\"\nresume = [\"./agent\"]"),
        &["ralph.toml:4:1:", "[agents.a] resume", "{session}"],
    );
    refused(
        &command.replace("kind = \"command\"", "kind = \"command\"\nmodel = \"x\""),
        &["ralph.toml:4:1:", "[agents.a] model is not allowed for kind = \"command\""],
    );
    refused(
        &BASE.replace("kind = \"sim\"", "kind = \"sim\"\ncommand = [\"x\"]"),
        &["ralph.toml:4:1:", "[agents.a] command is not allowed for kind = \"sim\""],
    );
    refused(
        &BASE.replace("kind = \"sim\"", "kind = \"claude\""),
        &["ralph.toml:4:12:", "[agents.a] script is not allowed for kind = \"claude\"", "kind = \"sim\""],
    );
    refused(
        "[agents.a]\nkind = \"sim\"\n[chains]\nmain = [\"a\"]\n[phases.p]\nchain = \"main\"\n",
        &["ralph.toml:1:9:", "kind = \"sim\" needs a script"],
    );
    refused(
        &BASE.replace("{ done = \"ok\" }", "{ crash = \"SIGSEV\" }"),
        &["ralph.toml:5:10:", "crash signal \"SIGSEV\"", "did you mean `SIGSEGV`?"],
    );
}

#[test]
fn every_agent_kind_loads() {
    for kind in ["claude", "codex", "opencode", "gemini"] {
        let config = of_kind(kind, "");
        assert!(parse(Path::new("ralph.toml"), &config).is_ok(), "{kind}: {config}");
    }
}

#[test]
fn missing_kind() {
    refused(&BASE.replace("kind = \"sim\"\n", ""), &["ralph.toml:2:1:", "[agents.a]: missing key `kind`"]);
}

#[test]
fn syntax_error() {
    refused("[general\n", &["ralph.toml:1:", "invalid toml"]);
}

#[test]
fn bad_names_and_probes() {
    refused(
        &BASE.replace("agents.a", "agents.\"a b\"").replace("[\"a\"]", "[\"a b\"]"),
        &["ralph.toml:2:9:", "[agents] name \"a b\" is not allowed"],
    );
    refused(&format!("[offline]\nprobe = [\"example.com\"]\n{BASE}"), &["ralph.toml:2:10:", "is not host:port"]);
}

#[test]
fn permission_modes_are_checked_per_kind() {
    let claude = of_kind("claude", "permission_mode = \"bypassPermissions\"\n");
    assert!(parse(Path::new("ralph.toml"), &claude).is_ok());
    let wrong = claude.replace("bypassPermissions", "yolo");
    refused(
        &wrong,
        &[
            "ralph.toml:4:1:",
            "permission_mode = \"yolo\" is not a mode of kind = \"claude\"",
            "default \"acceptEdits\"",
        ],
    );
    let sim = BASE.replace("kind = \"sim\"", "kind = \"sim\"\npermission_mode = \"auto\"");
    refused(&sim, &["permission_mode is not allowed for kind = \"sim\""]);
}

/// [`BASE`] with phases r, f and c, in that order, for the repeat tests.
fn three() -> String {
    let phases: String = ["r", "f", "c"].iter().map(|p| format!("[phases.{p}]\nchain = \"main\"\n")).collect();
    BASE.replace("[phases.p]\nchain = \"main\"\n", &phases)
}

/// [`three`] with `repeat = ENTRY` in `[general.workflow]`, on line 2.
fn repeat(entry: &str) -> String {
    format!("[general.workflow]\nrepeat = {entry}\n{}", three())
}

#[test]
fn repeat_resolves_to_a_group_of_phase_indices() {
    let loaded = load(&repeat("{ phases = [\"r\", \"f\"], passes = 3 }"));
    assert_eq!(loaded.repeat, Some(super::RepeatGroup { first: 0, last: 1, passes: 3 }));
    let loaded = load(&repeat("{ phases = [\"f\"], passes = 1 }"));
    assert_eq!(loaded.repeat, Some(super::RepeatGroup { first: 1, last: 1, passes: 1 }));
    assert_eq!(load(&three()).repeat, None);
}

#[test]
fn repeat_errors_point_at_the_key() {
    refused(
        &repeat("{ phases = [\"r\", \"fx\"], passes = 3 }"),
        &["ralph.toml:2:", "repeat lists phase `fx`", "did you mean `f`?"],
    );
    refused(
        &repeat("{ phases = [\"r\", \"c\"], passes = 3 }"),
        &["ralph.toml:2:", "must be consecutive", "`c` does not follow `r`"],
    );
    refused(&repeat("{ phases = [\"f\", \"r\"], passes = 3 }"), &["must be consecutive"]);
    refused(&repeat("{ phases = [\"r\", \"r\"], passes = 3 }"), &["must be consecutive"]);
    refused(&repeat("{ phases = [], passes = 3 }"), &["ralph.toml:2:12:", "repeat phases is empty"]);
    refused(&repeat("{ phases = [\"r\"], passes = 0 }"), &["ralph.toml:2:", "passes must be at least 1, not 0"]);
    refused(&repeat("{ phases = [\"r\"], passes = -1 }"), &["ralph.toml:2:", "passes", "a whole number ≥ 1"]);
    refused(&repeat("{ phases = [\"r\"] }"), &["ralph.toml:2:", "missing key `passes`", "passes = 3"]);
    refused(&repeat("{ phases = [\"r\"], passes = 2, until = \"clean\" }"), &["ralph.toml:2:", "unknown key `until`"]);
    refused(
        &format!("[general]\nrepeat = {{ phases = [\"r\"], passes = 2 }}\n{}", three()),
        &["ralph.toml:2:1:", "belongs in [general.workflow]"],
    );
}

#[test]
fn the_example_git_table_is_the_default() {
    let loaded = load(include_str!("../../ralph.example.toml"));
    assert_eq!(loaded.config.git, super::GitConfig::default());
    assert_eq!(load(BASE).config.git.commit, super::CommitMode::Iteration);
}

#[test]
fn git_keys_are_checked() {
    let git = load(&format!(
        "[git]\ncommit = \"phase\"\nbranch = \"ralph/work\"\nmax_new_file = \"512KB\"\nauthor = \"Bot <bot@example.com>\"\n{BASE}"
    ))
    .config
    .git;
    assert_eq!(git.commit, super::CommitMode::Phase);
    assert_eq!(git.max_new_file, super::ByteSize(512 * 1024));
    assert_eq!(load(&format!("[git]\nmax_new_file = 100\n{BASE}")).config.git.max_new_file.0, 100);
    refused(&format!("[git]\ncommit = \"always\"\n{BASE}"), &["ralph.toml:2:", "iteration", "phase", "off"]);
    refused(&format!("[git]\nbranch = \"a b\"\n{BASE}"), &["ralph.toml:2:1:", "[git] branch \"a b\""]);
    refused(&format!("[git]\nauthor = \"just a name\"\n{BASE}"), &["ralph.toml:2:1:", "is not \"Name <email>\""]);
    refused(&format!("[git]\nmax_new_file = 0\n{BASE}"), &["ralph.toml:2:1:", "max_new_file must be more than 0"]);
    refused(&format!("[git]\nmax_new_file = \"5 parsecs\"\n{BASE}"), &["ralph.toml:2:", "is not a size"]);
    refused(&format!("[git]\nonly_agent_file = true\n{BASE}"), &["only_agent_files"]);
}

#[test]
fn max_attempt_log_takes_sizes_with_units_and_a_floor() {
    use super::ByteSize;
    let parse = |t: &str| ByteSize::parse(t).map(|b| b.0);
    assert_eq!(parse("64MiB"), Some(64 << 20));
    assert_eq!(parse("500 KB"), Some(500 << 10));
    assert_eq!(parse("1G"), Some(1 << 30));
    assert_eq!(parse("4096"), Some(4096));
    assert_eq!(parse("lots"), None);
    assert_eq!(load(&format!("[logs]\nmax_attempt_log = \"128KB\"\n{BASE}")).config.logs.max_attempt_log, 128 << 10);
    refused(&format!("[logs]\nmax_attempt_log = \"1KB\"\n{BASE}"), &["max_attempt_log must be at least 64KB"]);
    refused(&format!("[logs]\nmax_attempt_log = \"lots\"\n{BASE}"), &["is not a size"]);
}

#[test]
fn a_size_reads_back_as_it_is_written() {
    use super::ByteSize;
    for (n, text) in [(5 << 20, "5MB"), (64 << 10, "64KB"), (1 << 30, "1GB"), (1000, "1000"), (0, "0")] {
        assert_eq!(ByteSize(n).to_string(), text);
        assert_eq!(ByteSize::parse(text), Some(ByteSize(n)));
    }
}

#[test]
fn error_patterns_are_regular_expressions_of_command_agents() {
    let with = |pattern: &str| {
        format!("{}[[agents.a.errors]]\npattern = '{pattern}'\ncategory = \"environmental\"\n", command())
    };
    let loaded = load(&with(r"quota resets in (?P<reset_in>\d+)s"));
    assert_eq!(loaded.config.agents["a"].errors.len(), 1);
    refused(&with("unclosed ("), &["[agents.a] errors pattern \"unclosed (\" is not a regular expression"]);
    let claude = with("x")
        .replace("kind = \"command\"", "kind = \"claude\"")
        .replace("command = [\"./agent\", \"{prompt}\"]\n", "");
    refused(&claude, &["[agents.a] errors is not allowed for kind = \"claude\""]);
}

#[test]
fn the_watchdogs_keys_are_checked() {
    refused(
        &format!("[watch]\nmax_age = \"0s\"\nmax_resumes_per_boot = 0\nservice_managers = [\"\"]\n{BASE}"),
        &[
            "3 problems",
            "[watch] max_age must be longer than 0",
            "[watch] max_resumes_per_boot must be at least 1",
            "[watch] service_managers \"\" is not a program name",
        ],
    );
    let loaded = load(&format!("[watch]\nmax_age = \"7d\"\nservice_managers = [\"nomad\"]\n{BASE}"));
    assert_eq!(loaded.config.watch.max_age.as_secs(), 7 * 86_400);
}

#[test]
fn identities_need_a_name_and_an_email() {
    assert_eq!(
        Identity::parse("Ralph Bot <ralph@example.com>"),
        Some(Identity { name: "Ralph Bot".into(), email: "ralph@example.com".into() })
    );
    assert_eq!(Identity::parse("<a@b>"), None);
    assert_eq!(Identity::parse("Name"), None);
    assert_eq!(Identity::parse("Name <>"), None);
    assert_eq!(Identity::parse("Name <a@b> x"), None);
}

#[test]
fn branch_names_follow_git_rules() {
    assert!(check_branch("ralph/run-1").is_ok());
    for bad in ["", "-x", "a..b", "a b", "x.lock", "a:b", "end/", "a@{1}"] {
        assert!(check_branch(bad).is_err(), "{bad}");
    }
}

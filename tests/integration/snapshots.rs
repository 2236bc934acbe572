//! What people read, as snapshots (`insta`): the end-of-run summary, the recovery
//! note an agent is given, config errors, `ralph status` and
//! `ralph --inspect-checkpoint`. Everything that differs between two runs (the temp
//! directories, times, durations, pids, run ids) is replaced by a name before the
//! comparison, so the snapshots are the same on every machine. A changed text fails
//! the test (never writes a new snapshot silently): review it with `cargo insta
//! review`, or `INSTA_UPDATE=always` and `git diff`.

use nix::sys::signal::Signal;
use regex::Regex;

use crate::harness::{Project, cleanup, sim_project};

/// `text` with what differs between runs replaced.
fn redact(p: &Project, text: &str) -> String {
    let state = p.registry();
    let state = state.parent().and_then(|s| s.parent()).expect("state dir");
    let mut t = text.replace(&p.path().display().to_string(), "[project]");
    t = t.replace(&state.display().to_string(), "[state]");
    let rules = [
        // RFC 3339 times, then clock times.
        (r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?", "[time]"),
        (r"\b\d\d:\d\d(:\d\d)?\b", "[clock]"),
        // Run ids: the start time and the pid.
        (r"\b\d{8}T\d{6}Z-\d+\b", "[run-id]"),
        (r"\b(pid|PID) \d+", "$1 [pid]"),
        (r"\bpid\W+\d+", "pid [pid]"),
        // Durations and ages: "1.2s", "350ms", "3m 2s", "2s ago".
        (r"\b\d+(\.\d+)?(ms|s|m|h)\b( \d+(\.\d+)?(ms|s))?", "[duration]"),
    ];
    for (pattern, with) in rules {
        t = Regex::new(pattern).expect("pattern").replace_all(&t, with).into_owned();
    }
    t
}

/// The config errors of several kinds of bad `ralph.toml`, as `ralph` prints them.
#[test]
fn config_errors() {
    let good = "[agents.a]\nkind = \"sim\"\n[[agents.a.script]]\nsteps = [{ done = \"ok\" }]\n[chains]\nmain = [\"a\"]\n[phases.develop]\nchain = \"main\"\n";
    let cases = [
        ("a misspelt key", format!("[general]\nmax_cycle = 3\n{good}")),
        ("a value of the wrong type", format!("[general]\nmax_cycles = \"three\"\n{good}")),
        ("a zero cap", format!("[retry]\nagent_attempts = 0\n{good}")),
        ("a size that is not one", format!("[git]\nmax_new_file = \"5 parsecs\"\n{good}")),
        ("a chain that is not defined", good.replace("chain = \"main\"", "chain = \"nope\"")),
        ("an unknown agent kind", good.replace("kind = \"sim\"", "kind = \"cursor\"")),
        ("a TOML syntax error", format!("[general\n{good}")),
        (
            "six mistakes at once, reported in file order",
            format!(
                "[general]\nmax_cycle = 3\n[retry]\nagent_attempts = 0\nbackoff_base = \"soon\"\n{}",
                good.replace("kind = \"sim\"", "kind = \"sim\"\nbogus = 1")
                    .replace("main = [\"a\"]", "main = [\"a\", \"b\"]")
                    .replace("chain = \"main\"", "chain = \"main\"\ndone = \"maybe\"")
            ),
        ),
    ];
    let mut all = String::new();
    for (what, toml) in cases {
        let p = Project::new().config(&toml);
        let out = p.ralph().run();
        out.expect_code(2);
        all.push_str(&format!("--- {what} ---\n{}\n", redact(&p, out.stderr.trim_end())));
    }
    insta::assert_snapshot!(all);
}

/// The summary a blocked run ends with: the error, its log, the next step.
#[test]
fn the_summary_of_a_blocked_run() {
    let p = crate::harness::refused_credentials();
    let out = p.ralph().run();
    out.expect_code(3);
    insta::assert_snapshot!(redact(&p, &out.stderr));
}

/// The note a fresh attempt is given after a failure, as the agent reads it in its
/// prompt.
#[test]
fn the_recovery_note_of_a_retry() {
    let agent = "if [ -f failed-once ]; then printf '%s' \"$1\" > retry-prompt.txt; echo '<promise>DONE</promise>'; \
                 else touch failed-once; echo 'error: tests/parse.rs: 3 tests failed' >&2; exit 1; fi";
    let p = sim_project().command("a", &format!("[\"sh\", \"-c\", {agent:?}, \"agent\", \"{{prompt}}\"]")).build();
    p.ralph().run().expect_code(0);
    let prompt = p.read("retry-prompt.txt");
    // The note, up to the next section of the prompt.
    let start = prompt.find("Recovery note").expect("a recovery note");
    let note = &prompt[start..];
    let note = note.find("\n\n#").map_or(note, |end| &note[..end]);
    insta::assert_snapshot!(redact(&p, note));
}

/// A run stopped with Ctrl+C, then `ralph status` and `ralph --inspect-checkpoint`.
#[test]
fn status_and_inspect_of_a_paused_run() {
    let p = sim_project()
        .sim(
            "a",
            &[
                r#"[{ say = "working" }, { pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]"#,
            ],
        )
        .build();
    let (run, agent) = p.start();
    run.signal(Signal::SIGINT);
    run.finish().expect_code(130);
    cleanup(agent);
    let status = p.ralph().args(["status"]).run();
    status.expect_code(0);
    insta::assert_snapshot!("status", redact(&p, &status.stdout));
    let inspect = p.ralph().args(["--inspect-checkpoint"]).run();
    inspect.expect_code(0);
    insta::assert_snapshot!("inspect_checkpoint", redact(&p, &inspect.stdout));
}

/// A run that fails every way a one-agent chain can: a crash, a non-zero exit, a
/// claim of done in words, a silence, a denied tag, and the chain's second round.
/// The terminal and the summary say it in words and name limits by their keys; the
/// internal names stay in the journal.
#[test]
fn a_failing_run_reads_in_plain_words() {
    let p = sim_project()
        .retry("agent_attempts = 2")
        .timeouts(r#"stall = "2s""#)
        .general("max_cycles = 2")
        .sim(
            "a",
            &[
                r#"[{ crash = "SIGSEGV" }]"#,
                r#"[{ say = "All done!" }, { exit = 1 }]"#,
                r#"[{ say = "All done! Everything works." }]"#,
                r#"[{ say = "hmm" }, { sleep = "5s" }]"#,
                r#"[{ say = "The tests still fail.\n<promise>DONE</promise>" }]"#,
            ],
        )
        .build();
    let out = p.ralph().timeout(std::time::Duration::from_secs(60)).run();
    out.expect_code(1);
    let internal = [
        "claim_in_words",
        "done_confirmation",
        "exit_nonzero",
        "negated_work",
        "no_done_signal",
        "agent #",
        "(cycle",
        "fallover",
        "exhausted",
        "(agent,",
    ];
    for name in internal {
        assert!(!out.stderr.contains(name), "the terminal says {name:?}:\n{out}");
    }
    insta::assert_snapshot!(redact(&p, &out.stderr));
    // The names are where tools read them.
    let rules: Vec<String> =
        p.events("attempt_failed").iter().map(|e| e["rule"].as_str().unwrap_or("").into()).collect();
    assert!(rules.contains(&"exit_nonzero".to_string()) && rules.contains(&"no_done_signal".to_string()), "{rules:?}");
    let detectors: Vec<String> =
        p.events("intervention").iter().map(|e| e["detector"].as_str().unwrap_or("").into()).collect();
    assert!(detectors.contains(&"done_confirmation".to_string()), "{detectors:?}");
    assert!(p.checkpoint()["stop_reason"].as_str().unwrap_or("").starts_with("max_cycles exhausted"));
}

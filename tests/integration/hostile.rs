//! Hostile input (issue 10): odd bytes, floods, planted links, secrets in every
//! place, leftovers of kills. Each test failed on the code before its fix.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::harness::{Project, attempt_heads, run_dirs, sim_project};

/// A one-agent workflow running `script` with `sh -c`.
fn sh_agent(script: &str, timeouts: &str, extra: &str) -> String {
    sh_agent_with("", script, timeouts, extra)
}

/// [`sh_agent`] with `[general]` entries.
fn sh_agent_with(general: &str, script: &str, timeouts: &str, extra: &str) -> String {
    sim_project().timeouts(timeouts).general(general).sh("sh", script, extra).config_text()
}

/// Every attempt log of the run, as bytes.
fn attempt_logs(p: &Project) -> Vec<u8> {
    fs::read(p.join(&format!(".agent/logs/{}/attempts.log", p.checkpoint()["run_id"].as_str().unwrap_or_default())))
        .unwrap_or_default()
}

fn has(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(path.clone());
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn an_invalid_utf8_byte_does_not_blind_ralph() {
    // The byte comes first on both streams, then enough output to fill a pipe that
    // nobody reads, then the done signal.
    let script = r"printf 'bad \377\376 byte\n'; printf 'err \377\n' >&2; \
        i=0; while [ $i -lt 3000 ]; do echo 'filler line of some length to fill the pipe buffer'; i=$((i+1)); done; \
        echo '<promise>DONE</promise>'";
    let p = Project::new().config(&sh_agent(script, "stall = \"3s\"", ""));
    p.ralph().run().expect_code(0);
    let log = attempt_logs(&p);
    assert!(has(&log, b"bad \xff\xfe byte\n"), "the bytes are logged as received");
    assert!(has(&log, b"[stderr] err \xff\n"), "stderr too");
    assert!(has(&log, b"<promise>DONE</promise>"));
}

/// Variables a person may have set that no agent should see.
const FOREIGN: &[(&str, &str)] = &[
    ("DATABASE_URL", "postgres://app:hunter2pw@db.internal/app"),
    ("SLACK_WEBHOOK_URL", "https://hooks.example/T000/B000/XXXXXXXX"),
    ("SENTRY_DSN", "https://abcdef123456@sentry.example/1"),
    ("GH_PAT", "plainpatvalue123456"),
    ("PGPASS", "pgpassword987"),
];

#[test]
fn an_invalid_utf8_byte_in_stream_json_does_not_blind_ralph() {
    let script = r#"printf '{"type":"assistant","message":{"content":[{"type":"text","text":"caf\351"}]}}\n'; \
        printf '{"type":"result","subtype":"success","is_error":false,"result":"All finished.\\n<promise>DONE</promise>","session_id":"s1"}\n'"#;
    let p = Project::new().config(&sh_agent(script, "", r#"output = "claude-stream-json""#));
    p.ralph().run().expect_code(0);
    assert!(has(&attempt_logs(&p), b"caf\xe9"), "logged as received");
}

#[test]
fn the_agent_environment_is_an_allowlist_and_withheld_names_are_journaled() {
    let p = Project::new().config(&sh_agent(
        "env > seen.txt; echo '<promise>DONE</promise>'",
        "",
        r#"pass_env = ["PG_*"]"#,
    ));
    let mut ralph = p.ralph().env("PG_HOST", "localhost").env("NODE_EXTRA_CA_CERTS", "/etc/ca.pem");
    for (k, v) in FOREIGN {
        ralph = ralph.env(k, *v);
    }
    ralph.run().expect_code(0);
    let seen = p.read("seen.txt");
    for (k, _) in FOREIGN {
        assert!(!seen.lines().any(|l| l.starts_with(&format!("{k}="))), "{k} reached the agent");
    }
    assert!(seen.contains("PG_HOST=localhost"), "pass_env globs pass: {seen}");
    assert!(seen.contains("NODE_EXTRA_CA_CERTS=/etc/ca.pem"), "the base set passes");
    assert!(seen.contains("PATH=") && seen.contains("HOME="));
    let started = p.events("attempt_started");
    let withheld = started[0]["env_withheld"].as_array().cloned().unwrap_or_default();
    for (k, _) in FOREIGN {
        assert!(withheld.iter().any(|n| n == k), "{k} not journaled as withheld: {withheld:?}");
    }
    let journal = fs::read_to_string(p.join(".agent/events.jsonl")).unwrap_or_default();
    assert!(!journal.contains("hunter2pw"), "names only, never values");
}

#[test]
fn doctor_lists_what_each_agent_gets_and_what_not() {
    let p = Project::new().config(&sh_agent("true", "", ""));
    let out = p.ralph().args(["doctor"]).env("DATABASE_URL", "postgres://u:pw@h/db").run();
    assert!(out.stdout.contains("agent sh: environment gets"), "{out}");
    let line = out.stdout.lines().find(|l| l.contains("withholds")).unwrap_or_default().to_string();
    assert!(line.contains("DATABASE_URL") && line.contains("pass_env"), "{line}");
    assert!(!out.stdout.contains("pw@h"), "names only");
}

#[test]
fn the_exact_value_of_a_credential_handed_to_the_agent_is_redacted() {
    let secret = "sk-ant-secret123";
    // The bare value, on both streams and in the final message: no pattern knows it.
    let script = "echo \"using $ANTHROPIC_API_KEY\"; echo \"$ANTHROPIC_API_KEY\" >&2; \
        echo \"value $ANTHROPIC_API_KEY\"; exit 3";
    let p = Project::new().config(&sh_agent_with("max_cycles = 1", script, "", r#"pass_env = ["ANTHROPIC_API_KEY"]"#));
    let out = p.ralph().env("ANTHROPIC_API_KEY", secret).run();
    out.expect_code(1);
    assert!(p.attempt_log(1).contains("using [REDACTED]"), "{}", p.attempt_log(1));
    assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret), "terminal: {out}");
    for file in files_under(&p.join(".agent")) {
        let bytes = fs::read(&file).unwrap_or_default();
        assert!(!has(&bytes, secret.as_bytes()), "{} holds the credential", file.display());
    }
}

/// `.agent/` as a repository might ship it, with `name` a link to `target`.
fn planted(name: &str, target: &Path) -> Project {
    let p = Project::new().config(&sh_agent("echo '<promise>DONE</promise>'", "", ""));
    fs::create_dir_all(p.join(".agent")).expect("mkdir");
    std::os::unix::fs::symlink(target, p.join(&format!(".agent/{name}"))).expect("symlink");
    p
}

#[test]
fn no_link_planted_in_the_state_directory_is_followed() {
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim.txt");
    for name in ["ralph.lock", "events.jsonl", "checkpoint.json"] {
        fs::write(&victim, b"precious\n").expect("write");
        let p = planted(name, &victim);
        let out = p.ralph().run();
        out.expect_code(2).stderr_has(&format!("{name} is a symbolic link"));
        assert_eq!(fs::read(&victim).unwrap_or_default(), b"precious\n", "{name} wrote through its link");
    }
    for dir in ["logs", "artifacts"] {
        let target = outside.path().join(dir);
        fs::create_dir_all(&target).expect("mkdir");
        let p = planted(dir, &target);
        let out = p.ralph().run();
        if dir == "logs" {
            out.expect_code(2).stderr_has("logs is a symbolic link");
        }
        assert_eq!(fs::read_dir(&target).map(Iterator::count).unwrap_or(0), 0, "{dir} wrote outside the project");
    }
    // `.agent` itself as a link.
    let p = Project::new().config(&sh_agent("echo '<promise>DONE</promise>'", "", ""));
    std::os::unix::fs::symlink(outside.path(), p.join(".agent")).expect("symlink");
    p.ralph().run().expect_code(2).stderr_has(".agent is a symbolic link");
}

#[test]
fn everything_under_the_state_directory_is_private() {
    let p = Project::new().config(&sh_agent("echo '<promise>DONE</promise>'", "", ""));
    // An `.agent/` from before, with the modes a umask of 022 gives.
    fs::create_dir_all(p.join(".agent/logs/old")).expect("mkdir");
    fs::write(p.join(".agent/logs/old/ralph.log"), "old\n").expect("write");
    for (rel, mode) in [(".agent", 0o755), (".agent/logs", 0o755), (".agent/logs/old", 0o755)] {
        fs::set_permissions(p.join(rel), std::os::unix::fs::PermissionsExt::from_mode(mode)).expect("chmod");
    }
    p.ralph().run().expect_code(0);
    let mut seen = 0;
    for path in files_under(&p.join(".agent")).into_iter().chain([p.join(".agent")]) {
        if path.starts_with(p.join(".agent/logs/old")) {
            continue; // not ralph's to touch: another run's logs
        }
        let meta = fs::metadata(&path).expect("stat");
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(meta.mode() & 0o777, want, "{}", path.display());
        seen += 1;
    }
    assert!(seen >= 6, "checked {seen} paths");
}

#[test]
fn leftovers_of_kills_are_cleaned_and_a_garbage_lock_is_stale() {
    let p = Project::new().config(&sh_agent("echo '<promise>DONE</promise>'", "", ""));
    fs::create_dir_all(p.join(".agent")).expect("mkdir");
    fs::create_dir_all(p.join(".agent/artifacts")).expect("mkdir");
    // Leftovers of kills a while ago; one of a write that may be in progress now
    // (another ralph starting) is left alone.
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(11 * 60);
    let torn = |rel: &str| {
        fs::write(p.join(rel), b"{\"torn").expect("write");
        fs::File::options().write(true).open(p.join(rel)).and_then(|f| f.set_modified(long_ago)).expect("age");
    };
    (0..5).for_each(|i| torn(&format!(".agent/.tmp{i}xYz")));
    torn(".agent/artifacts/.tmpAbc");
    fs::write(p.join(".agent/.tmpNow"), b"{\"in progress").expect("write");
    fs::write(p.join(".agent/ralph.lock"), b"\xff\xfe\x00 not a lock").expect("write");
    p.ralph().run().expect_code(0);
    let left: Vec<_> = p.agent_dir_listing().into_iter().filter(|n| n.starts_with(".tmp")).collect();
    assert_eq!(left, [".tmpNow"]);
    assert!(!p.exists(".agent/artifacts/.tmpAbc"));
}

#[test]
fn a_second_ctrl_c_does_not_mark_the_lock_stopped_cleanly() {
    use nix::sys::signal::Signal;
    let p = sim_project()
        .timeouts(r#"grace = "30s""#)
        .sim("a", &[r#"[{ ignore = ["SIGINT", "SIGTERM"] }, { pidfile = "agent.pid" }, { tool = { name = "Bash", input = { command = "make" }, hang = true } }]"#])
        .build();
    let (run, agent) = p.start();
    run.signal(Signal::SIGINT);
    p.wait_for_log("sending SIGINT", crate::harness::DEFAULT_TIMEOUT);
    run.signal(Signal::SIGINT);
    let out = run.wait(std::time::Duration::from_secs(10));
    crate::harness::cleanup(agent);
    out.expect_code(130);
    // The user's intent was saved at the first Ctrl+C, so the lock may say "stopped
    // cleanly" only because the checkpoint says so too: the two never disagree.
    assert_eq!(p.checkpoint()["status"], "paused");
    let lock = fs::read(p.join(".agent/ralph.lock")).unwrap_or_default();
    assert!(lock.is_empty(), "the checkpoint says paused while the lock says the run crashed");
}

/// Credentials of known formats an agent may print or pass to its tools.
const BEARER: &str = "abcdefghijklmnopqrstu123";
const OPENAI: &str = "sk-abcdefghijklmnopqrstuvwxyz123";
const GITHUB: &str = "ghp_1234567890abcdefghijABCDEFGHIJ0123";

fn assert_nothing_holds(p: &Project, secrets: &[&str]) {
    for file in files_under(&p.join(".agent")) {
        let bytes = fs::read(&file).unwrap_or_default();
        for s in secrets {
            assert!(!has(&bytes, s.as_bytes()), "{} holds {s}", file.display());
        }
    }
}

#[test]
fn recovery_notes_and_reasons_are_redacted() {
    // The last tool call's input is quoted in the recovery note.
    let hangs = format!(
        r#"[{{ tool = {{ name = "Bash", input = {{ command = "curl -H 'Authorization: Bearer {BEARER}' https://api" }}, hang = true }} }}]"#
    );
    let p = sim_project()
        .retry("agent_attempts = 1")
        .timeouts(r#"tool = "2s""#)
        .general("max_cycles = 1")
        .sim("a", &[&hangs])
        .build();
    let out = p.ralph().run();
    out.expect_code(1);
    assert!(!out.stderr.contains(BEARER), "terminal: {out}");
    let cp = fs::read_to_string(p.checkpoint_path()).unwrap_or_default();
    assert!(cp.contains("Bash"), "the note names the tool: {cp}");
    assert_nothing_holds(&p, &[BEARER]);
    let status = p.ralph().args(["status"]).run();
    assert!(!status.stdout.contains(BEARER));
}

#[test]
fn artifacts_previous_and_prompt_logs_are_redacted() {
    let plan = format!(r#"[{{ done = "the plan: call the API with {OPENAI} and push with {GITHUB}" }}]"#);
    let p = sim_project().sim("a", &[&plan]).named_phase("plan", "").named_phase("build", "").build();
    p.ralph().run().expect_code(0);
    assert!(p.prompt_of(2).contains("the plan: call the API with [REDACTED]"), "{}", p.prompt_of(2));
    assert_nothing_holds(&p, &[OPENAI, GITHUB]);
}

#[test]
fn a_flood_of_output_is_bounded_on_disk() {
    // About 1.8 MB of output against a 64 KiB log bound, then the done signal.
    let script = "yes 0123456789abcdefghij0123456789abcdefghij | head -n 40000; \
        echo 'All finished.'; echo '<promise>DONE</promise>'";
    let p = Project::new()
        .config(&format!("{}\n[logs]\nmax_attempt_log = \"64KiB\"\n", sh_agent(script, "", r#"output = "text""#)));
    p.ralph().run().expect_code(0);
    // The head is in attempts.log, the tail segments beside it.
    let mut tails: Vec<PathBuf> = files_under(&p.join(".agent/logs"))
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("attempt-0001-")))
        .collect();
    let total = p.attempt_log(1).len() as u64
        + tails.iter().map(|f| fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum::<u64>();
    assert!(total <= 70 * 1024, "{total} bytes in the head and {} tail segments", tails.len());
    let all = attempt_logs(&p);
    tails.sort_by_key(|f| f.extension().and_then(|e| e.to_str()).and_then(|e| e.parse::<u32>().ok()));
    let last = fs::read_to_string(tails.last().expect("tail segments")).unwrap_or_default();
    assert!(last.contains("bytes of output cut before this point"), "{}", &last[..last.len().min(200)]);
    assert!(last.ends_with("<promise>DONE</promise>\n"));
    assert!(has(&all, b"0123456789abcdefghij"));
}

#[test]
fn logs_follow_reads_a_bounded_log_across_its_tail_segments_in_order() {
    // Numbers in batches with pauses, about 240 KB against a 64 KiB bound: the log
    // rotates through its tail segments while `ralph logs -f` follows it.
    let script = "i=0; while [ $i -lt 40 ]; do seq $((i*1000+1)) $((i*1000+1000)); i=$((i+1)); sleep 0.05; done; \
        echo 'All finished.'; echo '<promise>DONE</promise>'";
    let p = Project::new()
        .config(&format!("{}\n[logs]\nmax_attempt_log = \"64KiB\"\n", sh_agent(script, "", r#"output = "text""#)));
    let run = p.ralph().spawn();
    let deadline = std::time::Instant::now() + crate::harness::DEFAULT_TIMEOUT;
    while !files_under(&p.join(".agent/logs")).iter().any(|f| f.to_string_lossy().ends_with("attempts.index")) {
        assert!(std::time::Instant::now() < deadline, "no attempt log appeared");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let follow = p.ralph().args(["logs", "-f"]).spawn();
    run.finish().expect_code(0);
    let followed = follow.finish();
    let printed = p.ralph().args(["logs"]).run();
    for out in [&followed, &printed] {
        out.expect_code(0);
        let numbers: Vec<u64> = out.stdout.lines().filter_map(|l| l.trim().parse().ok()).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "out of order: {numbers:?}");
        assert_eq!((numbers.first(), numbers.last()), (Some(&1), Some(&40_000)), "{out}");
        assert!(out.stdout.contains("bytes of output cut before this point"), "{out}");
        assert!(out.stdout.contains("<promise>DONE</promise>"), "{out}");
    }
}

#[test]
fn a_huge_line_does_not_hide_the_done_signal_or_the_result() {
    // One 20 MB stream-json line (a tool result), then the final result whose long
    // text ends with the done tag.
    let script = r#"printf '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"'; \
        head -c 20000000 /dev/zero | tr '\0' 'a'; printf '","is_error":false}]}}\n'; \
        printf '{"type":"result","subtype":"success","is_error":false,"result":"'; \
        head -c 3000000 /dev/zero | tr '\0' 'b'; printf ' <promise>DONE</promise>","session_id":"s1"}\n'"#;
    let p = Project::new().config(&format!(
        "{}\n[logs]\nmax_attempt_log = \"1MiB\"\n",
        sh_agent(script, "", r#"output = "claude-stream-json""#)
    ));
    p.ralph().timeout(std::time::Duration::from_secs(60)).run().expect_code(0);
}

#[test]
fn processes_that_left_the_process_group_end_with_the_attempt() {
    // One escapes with setsid and keeps the environment; one also clears it, and is
    // found only because its orphan comes back to ralph, the subreaper.
    let script = "setsid sleep 300 & echo $! > kept-env.pid; \
        (setsid env -i sleep 301 & echo $! > cleared-env.pid); \
        echo 'All finished.'; echo '<promise>DONE</promise>'";
    let p = Project::new().config(&sh_agent(script, "", r#"output = "text""#));
    p.ralph().run().expect_code(0);
    let pids = [p.pid_file("kept-env.pid"), p.pid_file("cleared-env.pid")];
    let gone: Vec<bool> =
        pids.iter().map(|pid| crate::harness::gone_within(*pid, std::time::Duration::from_secs(2))).collect();
    for pid in pids {
        crate::harness::cleanup(pid);
    }
    assert_eq!(gone, [true, true], "escaped processes {pids:?} outlived a successful run");
}

#[test]
fn a_full_disk_is_an_outage_and_no_iteration_recorded_done_is_repeated() {
    // The disk fills during the first iteration (a debug-build fault hook: every
    // checkpoint and journal write fails with ENOSPC while the marker exists).
    let script = "[ -f did-one ] || touch did-one full.marker; echo 'All finished.'; echo '<promise>DONE</promise>'";
    let p = sim_project().sh("sh", script, r#"output = "text""#).phase("iterations = 2").build();
    let marker = p.join("full.marker");
    let run = p.ralph().env("RALPH_TEST_DISK_FULL", marker.display().to_string()).spawn();
    p.wait_for_log("kind=\"disk_full\"", crate::harness::DEFAULT_TIMEOUT);
    // The last good checkpoint is on disk: the attempt started, nothing recorded done.
    let cp = p.checkpoint();
    assert_eq!(cp["progress"]["counters"]["iterations_done"], 0, "{cp:#}");
    assert_eq!(cp["status"], "running");
    fs::remove_file(&marker).expect("free the disk");
    let out = run.finish();
    out.expect_code(0);
    let cp = p.checkpoint();
    assert_eq!(cp["status"], "completed", "{cp:#}");
    assert_eq!(cp["progress"]["counters"]["iterations_done"], 2);
    assert_eq!(p.events("attempt_started").len(), 2, "an iteration was repeated");
    assert!(out.stderr.contains("disk full on"), "{out}");
}

/// Whether this machine lets a test mount a tmpfs in its own user and mount
/// namespace; under `CI=true` a missing capability fails the test instead.
fn can_mount_tmpfs() -> bool {
    let ok = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs \"$d\" && umount \"$d\""])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("`unshare -rm` with a tmpfs mount is not available, and CI=true needs this test to run");
    }
    ok
}

/// ralph run on `p` in its own user and mount namespace with `.agent/` a 1 MiB
/// tmpfs, where a watcher frees the space (removes `.agent/filler`) once ralph says
/// it is waiting for it; `.agent/` is copied to `agent-copy/` after. ralph must exit
/// 0; its stderr.
fn on_a_full_tmpfs(p: &Project) -> String {
    let wrapper = format!(
        r#"set -e
mkdir -p .agent
mount -t tmpfs -o size=1m tmpfs .agent
( until grep -q 'disk full on' ralph.err 2>/dev/null; do sleep 0.05; done; rm -f .agent/filler ) &
watcher=$!
set +e
{ralph} 2> ralph.err
code=$?
kill $watcher 2>/dev/null
cp -r .agent agent-copy
exit $code"#,
        ralph = crate::harness::RALPH
    );
    let out = std::process::Command::new("timeout")
        .args(["60", "unshare", "-rm", "sh", "-c", &wrapper])
        .current_dir(p.path())
        .env("XDG_STATE_HOME", p.join(".xdg-state"))
        .output()
        .expect("run unshare");
    let err = p.read("ralph.err");
    assert_eq!(out.status.code(), Some(0), "{err}\n{}", String::from_utf8_lossy(&out.stderr));
    err
}

#[test]
fn a_real_full_disk_waits_and_continues() {
    if !can_mount_tmpfs() {
        eprintln!("skipped: cannot mount a tmpfs in a user namespace here");
        return;
    }
    // `.agent/` is a 1 MiB tmpfs; the first iteration's agent fills it. Inside the
    // namespace a watcher frees the space once ralph says it is waiting for it.
    let script = "[ -f did-one ] || { touch did-one; dd if=/dev/zero of=.agent/filler bs=4k count=1024 2>/dev/null; }; \
        echo 'All finished.'; echo '<promise>DONE</promise>'";
    let p = sim_project().sh("sh", script, r#"output = "text""#).phase("iterations = 2").build();
    let err = on_a_full_tmpfs(&p);
    assert!(err.contains("disk full on"), "{err}");
    let cp: serde_json::Value =
        serde_json::from_str(&p.read("agent-copy/checkpoint.json")).expect("checkpoint copied out");
    assert_eq!(cp["status"], "completed");
    assert_eq!(cp["progress"]["counters"]["iterations_done"], 2);
    assert_eq!(cp["progress"]["counters"]["attempts"], 2, "an iteration was repeated");
}

#[test]
fn an_attempt_log_waits_out_a_full_disk_and_loses_nothing() {
    if !can_mount_tmpfs() {
        eprintln!("skipped: cannot mount a tmpfs in a user namespace here");
        return;
    }
    // `.agent/` is a 1 MiB tmpfs; the agent fills it, then prints while it is full
    // and waits (up to 20 s) for the watcher to free the space, which it does once
    // ralph says it is waiting. The log used to stop at the first refused write.
    let script = "dd if=/dev/zero of=.agent/filler bs=4k count=1024 2>/dev/null; \
        echo 'printed on a full disk'; i=0; \
        while [ -f .agent/filler ] && [ $i -lt 200 ]; do echo \"still full $i\"; i=$((i+1)); sleep 0.1; done; \
        echo 'printed after space came back'; echo '<promise>DONE</promise>'";
    let p = Project::new().config(&sh_agent(script, "", r#"output = "text""#));
    let err = on_a_full_tmpfs(&p);
    assert!(err.contains("waiting: disk full on"), "{err}");
    let runs = run_dirs(&p.join("agent-copy/logs"));
    let text = runs.iter().flat_map(|run| attempt_heads(run)).map(|(_, text)| text).next().expect("the attempt log");
    let full = text.find("printed on a full disk").unwrap_or_else(|| panic!("lost while full:\n{text}"));
    let back = text.find("printed after space came back").unwrap_or_else(|| panic!("lost after:\n{text}"));
    assert!(full < back && text.contains("still full 0\n"), "{text}");
    let events: Vec<String> = p.read("agent-copy/events.jsonl").lines().map(String::from).collect();
    assert!(events.iter().any(|e| e.contains("\"disk_full\"") && e.contains("attempts.log")), "{events:?}");
}

#[test]
fn a_lock_file_that_does_not_parse_is_reported_as_an_interrupted_run() {
    // A crash mid-write, or an edit by hand: who held it is unknown, but the run
    // before did not stop cleanly, and the user is told so.
    let p = sim_project().sim("a", &[r#"[{ done = "ok" }]"#]).build();
    p.write(".agent/ralph.lock", "pid=garbage\u{1}");
    let out = p.ralph().args(["--no-resume"]).run();
    out.expect_code(0);
    assert!(out.stderr.contains("its lock file does not parse"), "{out}");
}

#[test]
fn a_lock_held_a_moment_after_its_ralph_died_is_waited_for() {
    // A ralph killed while starting a child: the child shares its lock descriptor
    // until it dies by its parent-death signal, a moment after ralph. A restart then
    // must not refuse with "another ralph is running".
    use nix::fcntl::{Flock, FlockArg};
    let p = sim_project().sim("a", &[r#"[{ done = "ok" }]"#]).build();
    let mut gone = std::process::Command::new("true").spawn().expect("spawn true");
    let dead = gone.id();
    gone.wait().expect("wait true");
    let host = nix::unistd::gethostname().expect("hostname").to_string_lossy().into_owned();
    let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    p.write(
        ".agent/ralph.lock",
        &format!(
            "{{\"pid\":{dead},\"host\":{host:?},\"boot_id\":{:?},\"started_at\":\"2026-12-01T00:00:00Z\"}}\n",
            boot.trim()
        ),
    );
    let file = fs::OpenOptions::new().read(true).write(true).open(p.join(".agent/ralph.lock")).expect("open lock");
    let held = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| e).expect("flock");
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(800));
        drop(held);
    });
    let out = p.ralph().args(["--no-resume"]).run();
    release.join().expect("release thread");
    out.expect_code(0);
    assert!(out.stderr.contains("ended without a clean stop"), "{out}");
}

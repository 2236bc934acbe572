//! Git-aware runs against real repositories in temp dirs (docs/git.md). The
//! machine's git config never matters: every git call here and every ralph run gets
//! `GIT_CONFIG_NOSYSTEM=1` and a temp `HOME`, and the identity is the repository's
//! own config.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tempfile::TempDir;

use crate::harness::{Project, Ralph, fast, sim_project};

/// A project that is a git repository with one commit (README.md, plus `extra`).
pub(crate) struct Repo {
    pub(crate) p: Project,
    pub(crate) home: TempDir,
}

impl Repo {
    pub(crate) fn new(config: &str) -> Repo {
        Repo::with(config, &[], true)
    }

    pub(crate) fn with(config: &str, extra: &[(&str, &str)], email: bool) -> Repo {
        let home = tempfile::Builder::new().prefix("ralph-git-home-").tempdir().expect("temp home");
        let p = Project::new().config(config);
        let r = Repo { p, home };
        r.git(&["init", "-q", "-b", "main"]);
        r.git(&["config", "user.name", "Tester"]);
        if email {
            r.git(&["config", "user.email", "tester@example.com"]);
        }
        r.p.write("README.md", "# project\n");
        let mut files = vec!["README.md"];
        for (path, text) in extra {
            r.p.write(path, text);
            files.push(path);
        }
        r.git(&[&["add", "--"][..], &files].concat());
        let ident = ["-c", "user.email=tester@example.com", "-c", "user.name=Tester"];
        r.git(&[&ident[..], &["commit", "-q", "-m", "initial"]].concat());
        r
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join(".config"))
            .env_remove("GIT_AUTHOR_EMAIL")
            .env_remove("GIT_COMMITTER_EMAIL")
            .env_remove("EMAIL")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE");
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(self.p.path()).args(args);
        self.env(&mut cmd);
        crate::harness::git_output(cmd, args)
    }

    pub(crate) fn ralph(&self) -> Ralph {
        self.p
            .ralph()
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.home.path().display().to_string())
            .env("XDG_CONFIG_HOME", self.home.path().join(".config").display().to_string())
            .env("XDG_STATE_HOME", self.home.path().join(".state").display().to_string())
    }

    /// Commits after the initial one, oldest first: (subject+body, files).
    pub(crate) fn commits(&self) -> Vec<(String, Vec<String>)> {
        let hashes = self.git(&["rev-list", "--reverse", "HEAD"]);
        hashes
            .lines()
            .skip(1)
            .map(|h| {
                let body = self.git(&["log", "-1", "--format=%B", h]);
                let files = self.git(&["diff-tree", "--no-commit-id", "--name-only", "-r", h]);
                (body, files.lines().map(String::from).collect())
            })
            .collect()
    }

    pub(crate) fn status(&self) -> String {
        self.git(&["status", "--porcelain", "--untracked-files=all"])
    }
}

pub(crate) fn sim(scripts: &[&str], phase: &str) -> String {
    let mut s = String::from("[agents.a]\nkind = \"sim\"\n\n");
    for steps in scripts {
        s.push_str(&format!("[[agents.a.script]]\nsteps = {steps}\n\n"));
    }
    s.push_str("[chains]\nmain = [\"a\"]\n\n");
    s.push_str(phase);
    fast("", "", &s)
}

const TWO_ITERATIONS: &str = "[phases.develop]\nchain = \"main\"\niterations = 2\n";

#[test]
fn each_iteration_is_one_commit_with_its_new_files_and_nothing_of_ralphs() {
    let r = Repo::new(&sim(
        &[
            r##"[{ write = { path = "src/a.rs", content = "// a\n" } }, { write = { path = "README.md", content = "# project\nmore\n" } }, { done = "Added a.\nWith detail." }]"##,
            r#"[{ write = { path = "src/b.rs", content = "// b\n" } }, { done = "Added b." }]"#,
        ],
        TWO_ITERATIONS,
    ));
    let out = r.ralph().run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 2, "{out}");
    let run_id = r.p.checkpoint()["run_id"].as_str().expect("run id").to_string();
    let (body, files) = &commits[0];
    assert_eq!(files, &["README.md", "src/a.rs"]);
    assert!(body.starts_with("ralph: develop iteration 1: Added a.\n\nAdded a.\nWith detail."), "{body}");
    assert!(body.contains(&format!("Ralph-Run: {run_id}\nRalph-Iteration: develop/1")), "{body}");
    assert!(!body.contains("<promise>"), "{body}");
    assert_eq!(commits[1].1, ["src/b.rs"]);
    assert!(commits[1].0.contains("Ralph-Iteration: develop/2"));
    // ralph's own files: never committed, never in the way.
    let everything = r.git(&["log", "--all", "--name-only", "--format="]);
    assert!(!everything.contains(".agent/") && !everything.contains("ralph.toml") && !everything.contains("PROMPT.md"));
    assert_eq!(r.status(), "?? .agent/.gitignore\n?? PROMPT.md\n?? ralph.toml\n");
    // Visible: the journal has every hash and diff stat, the checkpoint and summary list them.
    let journal = r.p.events("git_commit");
    assert_eq!(journal.len(), 2);
    let head = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(journal[1]["hash"], head.as_str());
    assert_eq!(journal[0]["files"], 2);
    assert_eq!(journal[0]["insertions"], 2);
    let cp = r.p.checkpoint();
    assert_eq!(cp["git"]["commits"].as_array().map(Vec::len), Some(2));
    assert!(cp["git"]["pending"].is_null());
    assert!(out.stderr.contains("git: 2 commit(s) by ralph"), "{out}");
    assert!(out.stderr.contains(&head[..12]), "{out}");
    let baseline = r.p.events("git_baseline");
    assert_eq!(baseline.len(), 1);
    assert_eq!(baseline[0]["branch"], "main");
    let inspect = r.ralph().args(["--inspect-checkpoint"]).run();
    assert!(inspect.stdout.contains(&head[..12]) && inspect.stdout.contains("develop/2"), "{inspect}");
}

#[test]
fn with_no_agent_cli_init_names_the_clis_and_ralph_refuses_until_one_is_there() {
    let r = Repo::with("", &[], true);
    std::fs::remove_file(r.p.join("ralph.toml")).expect("remove");
    std::fs::remove_file(r.p.join("PROMPT.md")).expect("remove");
    // No agent CLI on PATH: git only.
    let bin = r.home.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let git = which::which("git").expect("git on PATH");
    std::os::unix::fs::symlink(git, bin.join("git")).expect("link git");
    let path = bin.display().to_string();
    let out = r.ralph().args(["init"]).env("PATH", &path).run();
    out.expect_code(0).stdout_has("no agent CLI found on PATH").stdout_has("npm install -g @anthropic-ai/claude-code");
    let config = r.p.read("ralph.toml");
    // The scripted agent never enters a project's configuration: no fake success.
    assert!(!config.contains("\"sim\""), "{config}");
    for package in ["@anthropic-ai/claude-code", "@openai/codex", "opencode-ai", "@google/gemini-cli"] {
        assert!(config.contains(&format!("npm install -g {package}")), "{package} is not named\n{config}");
    }
    std::fs::write(r.p.join("PROMPT.md"), "Write the plan.\n").expect("goal");
    let out = r.ralph().env("PATH", &path).run();
    out.expect_code(2).stderr_has("agent claude").stderr_has("npm install -g @anthropic-ai/claude-code");
    assert!(r.commits().is_empty(), "{out}");
    assert!(!r.p.exists("PLAN.md") && !r.p.exists(".agent/checkpoint.json"), "{out}");
    // Once the agent is there (the scripted one stands in for the CLI here), the first
    // run after init is not refused for ralph's own files (ralph.toml, PROMPT.md).
    let script = "[[agents.claude.script]]\nsteps = [{ write = { path = \"PLAN.md\", content = \"1. do the thing\\n\" } }, { goal = \"Done.\" }]\n\n";
    let config = config.replacen("kind = \"claude\"\n", &format!("kind = \"sim\"\n\n{script}"), 1);
    std::fs::write(r.p.join("ralph.toml"), config).expect("config");
    let out = r.ralph().env("PATH", &path).timeout(Duration::from_secs(60)).run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 1, "{out}");
    assert_eq!(commits[0].1, ["PLAN.md"]);
}

#[test]
fn a_dirty_tree_refuses_a_new_run_and_allow_dirty_keeps_those_changes_out() {
    let r = Repo::with(
        &sim(
            &[
                r#"[{ write = { path = "src/a.rs", content = "// a\n" } }, { write = { path = "notes.txt", content = "agent too\n" } }, { done = "a" }]"#,
            ],
            "[phases.develop]\nchain = \"main\"\n",
        ),
        &[("notes.txt", "mine\n")],
        true,
    );
    r.p.write("notes.txt", "my edit\n");
    r.p.write("scratch.txt", "my new file\n");
    r.git(&["add", "scratch.txt"]);
    let out = r.ralph().run();
    out.expect_code(2).stderr_has("changes ralph did not make").stderr_has("notes.txt").stderr_has("--allow-dirty");
    assert!(!r.p.exists(".agent/checkpoint.json"), "refused before anything ran");
    let out = r.ralph().args(["--allow-dirty"]).run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 1, "{out}");
    assert_eq!(commits[0].1, ["src/a.rs"], "dirty files stay out even when they change again");
    assert_eq!(r.p.read("notes.txt"), "agent too\n");
    assert!(r.status().contains("A  scratch.txt"), "what you staged stays staged: {}", r.status());
    assert_eq!(r.p.checkpoint()["git"]["held"], serde_json::json!(["notes.txt", "scratch.txt"]));
}

#[test]
fn attribution_leaves_a_persons_parallel_edit_uncommitted() {
    // The pidfile step writes a file without any tool call: an edit the agent never
    // reported, as a person's editor would make it.
    let r = Repo::new(&format!(
        "[git]\nonly_agent_files = true\n\n{}",
        sim(
            &[
                r#"[{ write = { path = "a.rs", content = "// a\n" } }, { pidfile = "person.txt" }, { done = "a" }]"#,
                r#"[{ tool = { name = "Bash", input = { command = "cargo build" }, result = "ok" } }, { pidfile = "Cargo.lock" }, { done = "b" }]"#,
            ],
            TWO_ITERATIONS,
        )
    ));
    let out = r.ralph().run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 2, "{out}");
    assert_eq!(commits[0].1, ["a.rs"]);
    // With a shell in the iteration everything changed is the agent's, except the
    // file already judged someone else's.
    assert_eq!(commits[1].1, ["Cargo.lock"]);
    assert!(r.status().contains("?? person.txt"));
    let left = r.p.events("git_left_out");
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["path"], "person.txt");
    assert_eq!(left[0]["reason"], "not_the_agents");
    out.stderr_has("not committing person.txt");
}

#[test]
fn credentials_and_large_new_files_are_never_committed() {
    let secret = "tok-0123456789abcdef";
    let r = Repo::new(&format!(
        "[git]\nmax_new_file = \"1KB\"\n\n{}",
        sim(
            &[&format!(
                r#"[{{ write = {{ path = "deploy.env", content = "TOKEN={secret}\n" }} }}, {{ write = {{ path = "big.bin", content = "{}" }} }}, {{ write = {{ path = "ok.rs", content = "// ok\n" }} }}, {{ done = "x" }}]"#,
                "x".repeat(2000)
            )],
            "[phases.develop]\nchain = \"main\"\n",
        )
        .replace("kind = \"sim\"\n", "kind = \"sim\"\npass_env = [\"MY_SERVICE_TOKEN\"]\n")
    ));
    let out = r.ralph().env("MY_SERVICE_TOKEN", secret).run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 1, "{out}");
    assert_eq!(commits[0].1, ["ok.rs"]);
    let reasons: Vec<(String, String)> =
        r.p.events("git_left_out")
            .iter()
            .map(|e| (e["path"].as_str().unwrap_or("").to_string(), e["reason"].as_str().unwrap_or("").to_string()))
            .collect();
    assert!(reasons.contains(&("deploy.env".into(), "credential".into())), "{reasons:?}");
    assert!(reasons.contains(&("big.bin".into(), "too_large".into())), "{reasons:?}");
    assert!(!std::fs::read_to_string(r.p.join(".agent/events.jsonl")).unwrap_or_default().contains(secret));
}

/// A repository whose agent `c` runs `sh agent.sh` (`script`, committed with the
/// rest), done when it exits 0.
fn exit0_agent(script: &str) -> Repo {
    let config =
        sim_project().command("c", r#"["sh", "agent.sh", "{prompt}"]"#).phase(r#"done = "exit0""#).config_text();
    Repo::with(&config, &[("agent.sh", script)], true)
}

#[test]
fn an_agent_that_commits_by_itself_is_recorded_and_ralph_commits_the_rest() {
    let script = "#!/bin/sh\necho a > a.txt\ngit add a.txt\ngit commit -q -m \"the agent's own\"\necho b > b.txt\n";
    let r = exit0_agent(script);
    let out = r.ralph().run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 2, "{out}");
    assert!(commits[0].0.starts_with("the agent's own"));
    assert_eq!(commits[0].1, ["a.txt"]);
    assert_eq!(commits[1].1, ["b.txt"]);
    assert!(commits[1].0.contains("Ralph-Iteration: develop/1"));
    let moved = r.p.events("git_agent_committed");
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0]["commits"].as_array().map(Vec::len), Some(1));
    assert_eq!(r.p.checkpoint()["git"]["agent_commits"], 1);
}

#[test]
fn a_rejecting_pre_commit_hook_is_an_agent_failure_with_the_output_in_the_note() {
    let r = Repo::new(&sim(
        &[
            r#"[{ write = { path = "src/a.rs", content = "// TODO\n" } }, { done = "first try" }]"#,
            r#"[{ write = { path = "src/a.rs", content = "// clean\n" } }, { done = "fixed the lint" }]"#,
        ],
        "[phases.develop]\nchain = \"main\"\n",
    ));
    let hook = r.p.join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        "#!/bin/sh\nif git diff --cached | grep -q TODO; then echo 'lint: TODO left in src/a.rs' >&2; exit 1; fi\n",
    )
    .expect("hook");
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&hook).expect("meta").permissions(), 0o755);
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let out = r.ralph().run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 1, "{out}");
    assert!(commits[0].0.contains("fixed the lint"));
    assert_eq!(r.git(&["show", "HEAD:src/a.rs"]), "// clean\n");
    assert_eq!(r.p.events("git_commit_rejected").len(), 1);
    let failed = r.p.events("attempt_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["rule"], "commit_rejected");
    assert_eq!(failed[0]["category"], "agent");
    assert!(r.p.prompt_of(2).contains("lint: TODO left in src/a.rs"), "{}", r.p.prompt_of(2));
    assert!(r.status().is_empty() || !r.status().contains("src/a.rs"), "{}", r.status());
}

#[test]
fn a_detached_head_is_committed_on_and_a_branch_can_be_asked_for() {
    let r = Repo::new(&sim(
        &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
        "[phases.develop]\nchain = \"main\"\n",
    ));
    r.git(&["checkout", "-q", "--detach"]);
    let out = r.ralph().run();
    out.expect_code(0).stderr_has("detached");
    assert_eq!(r.commits().len(), 1);
    assert!(
        Command::new("git")
            .arg("-C")
            .arg(r.p.path())
            .args(["symbolic-ref", "-q", "HEAD"])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(false)
    );

    let b = Repo::new(&format!(
        "[git]\nbranch = \"ralph/work\"\n\n{}",
        sim(
            &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
            "[phases.develop]\nchain = \"main\"\n"
        )
    ));
    b.ralph().run().expect_code(0);
    assert_eq!(b.git(&["symbolic-ref", "--short", "HEAD"]).trim(), "ralph/work");
    assert_eq!(b.commits().len(), 1);
    assert_eq!(b.git(&["rev-list", "--count", "main"]).trim(), "1", "main is untouched");
}

#[test]
fn a_merge_in_progress_or_a_missing_email_stops_before_anything_runs() {
    let config = sim(&[r#"[{ done = "a" }]"#], "[phases.develop]\nchain = \"main\"\n");
    let r = Repo::new(&config);
    let head = r.git(&["rev-parse", "HEAD"]);
    std::fs::write(r.p.join(".git/MERGE_HEAD"), head).expect("merge head");
    r.ralph().run().expect_code(2).stderr_has("git merge is in progress");
    assert!(!r.p.exists(".agent/checkpoint.json"));

    let n = Repo::with(&config, &[], false);
    n.ralph().run().expect_code(2).stderr_has("no user.email");
    let off = Repo::with(&format!("[git]\ncommit = \"off\"\n\n{config}"), &[], false);
    off.ralph().run().expect_code(0);
    let with_author = Repo::with(
        &format!(
            "[git]\nauthor = \"Bot <bot@example.com>\"\n\n{}",
            sim(
                &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
                "[phases.develop]\nchain = \"main\"\n"
            )
        ),
        &[],
        false,
    );
    with_author.ralph().run().expect_code(0);
    assert_eq!(
        with_author.git(&["log", "-1", "--format=%an <%ae> / %cn <%ce>"]).trim(),
        "Bot <bot@example.com> / Bot <bot@example.com>"
    );
}

#[test]
fn not_a_repository_runs_fine_with_one_line() {
    let p = Project::new().config(&sim(
        &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
        "[phases.develop]\nchain = \"main\"\n",
    ));
    let home = tempfile::tempdir().expect("home");
    let out = p
        .ralph()
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home.path().display().to_string())
        .env("GIT_CEILING_DIRECTORIES", p.path().parent().map(Path::display).map(|d| d.to_string()).unwrap_or_default())
        .run();
    out.expect_code(0);
    assert_eq!(out.stderr.matches("not a git repository: git features are off").count(), 1, "{out}");
    assert!(p.checkpoint()["git"].is_null());
}

#[test]
fn kill_9_around_the_commit_resumes_into_exactly_one_commit_per_iteration() {
    let seed = crate::crash_harness::seed("RALPH_TEST_SEED");
    let mut rng = crate::crash_harness::Rng::new(seed);
    // Every launch adds a file of its own, so a rerun iteration makes more work that
    // must be committed too, and none may be lost.
    let agent = "#!/bin/sh\nmkdir -p work\necho $$ > work/f-$$.txt\n";
    let iterations = 6;
    let r = Repo::with(
        &fast(
            "",
            "",
            &format!(
                "[agents.c]\nkind = \"command\"\ncommand = [\"sh\", \"agent.sh\", \"{{prompt}}\"]\n\n[chains]\nmain = [\"c\"]\n\n[phases.develop]\nchain = \"main\"\ndone = \"exit0\"\niterations = {iterations}\n"
            ),
        ),
        &[("agent.sh", agent)],
        true,
    );
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut rounds = 0;
    let mut kills = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "seed {seed}: not done within the bound");
        rounds += 1;
        // Killed after the final state was written: the run is complete.
        if r.p.exists(".agent/checkpoint.json") && r.p.checkpoint()["status"] == "completed" {
            break;
        }
        // Not `--resume` only when checkpoint.json is there: a kill between the
        // journal's first save and the file's leaves a run ralph restores from the
        // journal (and then refuses to start over without `--resume`).
        let ralph = r.ralph().timeout(Duration::from_secs(60)).args(["--resume-or-start"]);
        if rounds > 15 {
            // Enough kills: let it finish.
            let out = ralph.run();
            assert!(out.code == Some(0), "seed {seed}: {out}");
            break;
        }
        let mut running = ralph.spawn();
        let delay = Duration::from_millis(rng.next() % 500);
        let start = Instant::now();
        while start.elapsed() < delay && !running.exited() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if running.exited() {
            let out = running.wait(crate::harness::DEFAULT_TIMEOUT);
            if out.code == Some(0) {
                break;
            }
            panic!("seed {seed}: ralph ended on its own: {out}");
        }
        // The whole group: ralph, the agent, a git commit under way.
        let _ = killpg(Pid::from_raw(running.pid()), Signal::SIGKILL);
        let _ = running.wait(crate::harness::DEFAULT_TIMEOUT);
        kills.push(delay.as_millis());
    }
    let found = r.p.events("git_commit").iter().filter(|e| e["found_on_resume"] == true).count();
    let locks = r.p.events("git_stale_lock_removed").len();
    eprintln!(
        "seed {seed}: killed after {kills:?} ms, then finished; {rounds} round(s); {found} commit(s) found on resume, {locks} stale lock(s) removed"
    );
    let commits = r.commits();
    for i in 1..=iterations {
        let key = format!("Ralph-Iteration: develop/{i}\n");
        let n = commits.iter().filter(|(body, _)| body.contains(&key)).count();
        assert_eq!(n, 1, "seed {seed}: iteration {i} has {n} commits: {commits:?}");
    }
    assert_eq!(commits.len(), iterations, "seed {seed}: {commits:?}");
    let status = r.status();
    assert!(!status.contains("work/"), "seed {seed}: uncommitted work: {status}");
    assert!(!r.p.join(".git/index.lock").exists());
}

#[test]
fn phase_mode_makes_one_commit_when_the_phase_ends() {
    let r = Repo::new(&format!(
        "[git]\ncommit = \"phase\"\n\n{}",
        sim(
            &[
                r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#,
                r#"[{ write = { path = "b.rs", content = "b\n" } }, { done = "b" }]"#,
            ],
            TWO_ITERATIONS,
        )
    ));
    r.ralph().run().expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0].1, ["a.rs", "b.rs"]);
    assert!(commits[0].0.contains("Ralph-Iteration: develop/2"));
}

#[test]
fn with_commits_off_nothing_is_committed_and_a_dirty_tree_is_fine() {
    let r = Repo::new(&format!(
        "[git]\ncommit = \"off\"\n\n{}",
        sim(
            &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
            "[phases.develop]\nchain = \"main\"\n"
        )
    ));
    r.p.write("README.md", "changed by me\n");
    r.ralph().run().expect_code(0);
    assert!(r.commits().is_empty());
}

/// Rewrites the checkpoint as a kill -9 right after `git commit` (or during it)
/// leaves it: the run unfinished, the iteration's commit marked pending.
pub(crate) fn mark_pending(r: &Repo, key: &str) {
    let mut cp = r.p.checkpoint();
    cp["status"] = "running".into();
    cp["clean_stop"] = false.into();
    cp["git"]["pending"] = serde_json::json!({"key": key, "message": format!("ralph: pending\n\nRalph-Run: {}\nRalph-Iteration: {key}\n", cp["run_id"].as_str().unwrap_or("")), "goal": false});
    std::fs::write(r.p.checkpoint_path(), serde_json::to_string(&cp).expect("json")).expect("write checkpoint");
}

#[test]
fn a_kill_after_the_commit_resumes_into_the_commit_found_by_its_trailers() {
    let r = Repo::new(&sim(
        &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
        "[phases.develop]\nchain = \"main\"\n",
    ));
    r.ralph().run().expect_code(0);
    assert_eq!(r.commits().len(), 1);
    mark_pending(&r, "develop/1");
    let out = r.ralph().args(["--resume"]).run();
    out.expect_code(0).stderr_has("found the commit of");
    assert_eq!(r.commits().len(), 1, "never two: {out}");
    let found = r.p.events("git_commit");
    assert_eq!(found.last().map(|e| e["found_on_resume"].clone()), Some(true.into()));
    assert!(r.p.checkpoint()["git"]["pending"].is_null());
}

#[test]
fn a_hook_that_hangs_is_ended_and_counts_as_a_failed_iteration() {
    let r = Repo::new(&fast(
        "agent_attempts = 1",
        "tool = \"1s\"",
        &format!(
            "[general]\nmax_cycles = 1\n\n{}",
            sim(
                &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
                "[phases.develop]\nchain = \"main\"\n"
            )
            .split_once("[agents.a]")
            .map(|(_, rest)| format!("[agents.a]{rest}"))
            .unwrap_or_default()
        ),
    ));
    let hook = r.p.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nsleep 60\n").expect("hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let out = r.ralph().timeout(Duration::from_secs(30)).run();
    out.expect_code(1);
    assert!(r.commits().is_empty());
    let rejected = r.p.events("git_commit_rejected");
    assert_eq!(rejected.len(), 1, "{out}");
    assert!(rejected[0]["output"].as_str().unwrap_or("").contains("did not finish"), "{rejected:?}");
    assert!(!r.p.join(".git/index.lock").exists());
}

#[test]
fn a_repository_without_commits_gets_its_first_commit_from_ralph() {
    let r = Repo::new(&sim(
        &[r#"[{ write = { path = "a.rs", content = "a\n" } }, { done = "a" }]"#],
        "[phases.develop]\nchain = \"main\"\n",
    ));
    // Start over as a fresh `git init` with nothing committed yet.
    std::fs::remove_dir_all(r.p.join(".git")).expect("remove .git");
    r.git(&["init", "-q", "-b", "main"]);
    r.git(&["config", "user.name", "Tester"]);
    r.git(&["config", "user.email", "tester@example.com"]);
    let out = r.ralph().args(["--allow-dirty"]).run();
    out.expect_code(0);
    assert!(r.p.checkpoint()["git"]["baseline"].is_null());
    let files = r.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files, "a.rs\n", "{out}");
    assert!(r.status().contains("?? README.md"), "README.md was there before the run: held");
}

#[test]
fn a_git_failure_blocks_the_run_and_resume_makes_the_pending_commit_once() {
    // The agent leaves a lock ralph cannot remove (a directory): git itself refuses,
    // no hook is involved, so a person must look (exit 3). (A stale lock file is
    // removed: tests/integration/git_locks.rs.)
    let script = "#!/bin/sh\necho x > x.txt\nmkdir .git/index.lock\n";
    let r = exit0_agent(script);
    let out = r.ralph().run();
    out.expect_code(3).stderr_has("git: cannot commit develop/1");
    assert_eq!(r.p.checkpoint()["git"]["pending"]["key"], "develop/1");
    assert!(r.commits().is_empty());
    // A person removes the lock; the agent does not run again for the commit.
    std::fs::remove_dir(r.p.join(".git/index.lock")).expect("unlock");
    let out = r.ralph().args(["--resume"]).run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 1, "{out}");
    assert_eq!(commits[0].1, ["x.txt"]);
    assert_eq!(r.p.checkpoint()["progress"]["counters"]["attempts"], 1);
}

#[test]
fn dry_run_says_what_would_be_committed_and_changes_nothing() {
    let r = Repo::with(
        &sim(
            &[r#"[{ write = { path = "src/a.rs", content = "// a\n" } }, { done = "a" }]"#],
            "[phases.develop]\nchain = \"main\"\n",
        ),
        &[("notes.txt", "mine\n")],
        true,
    );
    r.p.write("notes.txt", "my edit\n");
    let before = r.git(&["status", "--porcelain"]);
    let out = r.ralph().args(["--dry-run"]).run();
    out.expect_code(0)
        .stdout_has("git: would commit each finished iteration on branch main")
        .stdout_has("git: 1 file(s) changed now (notes.txt)")
        .stdout_has("--allow-dirty");
    assert_eq!(r.git(&["status", "--porcelain"]), before, "a dry run changed the working tree");
    assert!(r.commits().is_empty());
    // Outside a repository, one line says so.
    let p = Project::new().config(&sim(&[r#"[{ done = "a" }]"#], "[phases.develop]\nchain = \"main\"\n"));
    p.ralph().args(["--dry-run"]).run().expect_code(0).stdout_has("git: not a repository");
}

/// Issue 30, item 7: a text agent's final message is its whole stdout. The commit
/// keeps a subject of at most 72 characters and at most 10 lines and 1,000 characters
/// of it; the next phase's prompt gets it bounded the same way, without ralph's
/// control markup (the first phase's `<promise>COMPLETE</promise>`).
#[test]
fn the_commit_and_the_next_prompt_hold_the_end_of_the_work_not_the_whole_output() {
    let script = "n=$(ls ticks-* 2>/dev/null | wc -l); echo done > ticks-$n.txt; \
                  for i in $(seq 1 108); do echo \"tick $i of a long and chatty build log line\"; done; \
                  echo '<promise>COMPLETE</promise>'";
    let config = fast(
        "",
        "",
        &format!(
            "[agents.a]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", {script:?}, \"sh\", \"{{prompt_file}}\"]\n\n[chains]\nmain = [\"a\"]\n\n\
             [phases.plan]\nchain = \"main\"\nuntil = \"complete\"\niterations = 2\n\n\
             [phases.develop]\nchain = \"main\"\n"
        ),
    );
    let r = Repo::new(&config);
    let out = r.ralph().run();
    out.expect_code(0);
    let commits = r.commits();
    assert_eq!(commits.len(), 2, "{out}");
    for (message, _) in &commits {
        let subject = message.lines().next().unwrap_or("");
        assert!(subject.chars().count() <= 72, "{subject:?}");
        let body = message.split_once("\n\n").map_or("", |(_, rest)| rest);
        let body = body.split("\n\nRalph-Run:").next().unwrap_or("");
        assert!(body.lines().count() <= 10 && body.chars().count() <= 1000, "{body}");
        assert!(body.contains("tick 108 of") && !body.contains("tick 1 of"), "{body}");
        assert!(!message.contains("<promise>"), "{message}");
    }
    let prompt = r.p.prompt_of(2);
    assert!(prompt.contains("tick 108 of") && !prompt.contains("tick 90 of"), "{prompt}");
    assert!(!prompt.contains("COMPLETE</promise>"), "{prompt}");
}

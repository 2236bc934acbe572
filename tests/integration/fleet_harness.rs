//! A fleet's world for the tests: a temp directory holding the main checkout
//! (`repo/`, a git repository with one commit), the worktrees' default place beside it
//! (`repo-fleet/`), a `HOME` and the run registry. The machine's git config never
//! matters (`GIT_CONFIG_NOSYSTEM`, a temp `HOME`; the identity is the repository's).

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::crash_harness::Rng;
use crate::harness::{Project, Ralph, Running, alive, fast};

pub(crate) struct Fleet {
    pub p: Project,
    pub repo: PathBuf,
}

/// A config with the scripted agent `a` running `scripts` (one per launch, the last
/// repeating) in the phase `develop`, `[fleet]` entries and any other tables.
pub(crate) fn config(scripts: &[&str], fleet: &str, rest: &str) -> String {
    let mut s = format!("[fleet]\nmax_cost = \"none\"\n{fleet}\n\n[agents.a]\nkind = \"sim\"\n");
    for steps in scripts {
        s.push_str(&format!("[[agents.a.script]]\nsteps = {steps}\n"));
    }
    s.push_str("\n[chains]\nmain = [\"a\"]\n\n[phases.develop]\nchain = \"main\"\n");
    s.push_str(rest);
    fast("", "", &s)
}

/// A config whose agent `sh` is `sh -c script` (the prompt its `$1`), in the phase
/// `develop`; `[fleet]` entries and any other tables.
pub(crate) fn shell_config(script: &str, fleet: &str, rest: &str) -> String {
    let body = format!(
        "[fleet]\nmax_cost = \"none\"\n{fleet}\n\n[agents.sh]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", {script:?}, \"agent\", \"{{prompt}}\"]\n\n\
         [chains]\nmain = [\"sh\"]\n\n[phases.develop]\nchain = \"main\"\n{rest}"
    );
    fast("", "", &body)
}

/// A shell agent whose every launch appends a line to `<task>.txt` (its own file:
/// tasks never conflict) after `pause`, and is done.
pub(crate) fn appends(pause: &str) -> String {
    format!("echo work >> \"$RALPH_FLEET_TASK.txt\"; sleep {pause}; echo '<promise>DONE</promise>'")
}

/// A config like [`shell_config`] whose agent appends like [`appends`] and then
/// holds until the test opens the gate ([`Fleet::open_gate`]), for a test that acts
/// on running tasks: a pause of its own would end first on a loaded machine. The
/// agent says it is holding twice a second (ralph's stall guard sees it alive) and
/// gives up after 5 minutes (a test that panicked leaves nothing behind).
pub(crate) fn held(fleet: &str, rest: &str) -> String {
    let script = "echo work >> \"$RALPH_FLEET_TASK.txt\"; i=0; \
                  while [ ! -e \"$HOME/gate\" ] && [ $i -lt 600 ]; do echo holding; sleep 0.5; i=$((i+1)); done; \
                  echo '<promise>DONE</promise>'";
    shell_config(script, fleet, rest)
}

/// An agent that writes `out.txt` and is done.
pub(crate) const WRITES: &str = r#"[{ write = { path = "out.txt", content = "work\n" } }, { done = "did it" }]"#;

impl Fleet {
    /// The main checkout with `ralph.toml` (untracked) and the task files `tasks`
    /// (`(name, goal)`, untracked).
    pub(crate) fn new(config: &str, tasks: &[(&str, &str)]) -> Fleet {
        let p = Project::bare();
        let repo = p.join("repo");
        fs::create_dir_all(&repo).expect("repo dir");
        fs::create_dir_all(p.join("home")).expect("home");
        let f = Fleet { p, repo };
        f.git(&["init", "-q", "-b", "main"]);
        f.git(&["config", "user.name", "Tester"]);
        f.git(&["config", "user.email", "tester@example.com"]);
        f.write("README.md", "# project\n");
        f.git(&["add", "README.md"]);
        f.git(&["commit", "-q", "-m", "initial"]);
        f.write("ralph.toml", config);
        for (name, goal) in tasks {
            f.task(name, goal);
        }
        f
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let path = self.repo.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        fs::write(path, text).expect("write");
    }

    /// Lets the agents of [`held`] finish (they wait for `$HOME/gate`; `HOME` is
    /// the test's, and agents inherit it).
    pub(crate) fn open_gate(&self) {
        fs::write(self.p.join("home/gate"), "").expect("the gate");
    }

    pub(crate) fn task(&self, name: &str, goal: &str) {
        self.write(&format!("tasks/{name}.md"), &format!("{goal}\n"));
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.p.join("home"))
            .env("XDG_CONFIG_HOME", self.p.join("home/.config"))
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE");
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        self.git_in(&self.repo, args)
    }

    pub(crate) fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(dir).args(args);
        self.env(&mut cmd);
        crate::harness::git_output(cmd, args)
    }

    /// `ralph` in the main checkout.
    pub(crate) fn ralph(&self) -> Ralph {
        self.p
            .ralph()
            .current_dir(&self.repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.p.join("home").display().to_string())
            .env("XDG_CONFIG_HOME", self.p.join("home/.config").display().to_string())
            .timeout(Duration::from_secs(120))
    }

    /// `ralph fleet ARGS…`.
    pub(crate) fn fleet(&self, args: &[&str]) -> Ralph {
        self.ralph().args(["fleet"]).args(args.iter().copied())
    }

    pub(crate) fn state_path(&self) -> PathBuf {
        self.repo.join(".agent/fleet/fleet.json")
    }

    /// The fleet's state, or the newest archived one.
    pub(crate) fn state(&self) -> Value {
        let text = fs::read_to_string(self.state_path()).ok().or_else(|| {
            let mut archived: Vec<PathBuf> = fs::read_dir(self.repo.join(".agent/fleet/archive"))
                .ok()?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            archived.sort();
            fs::read_to_string(archived.last()?).ok()
        });
        serde_json::from_str(&text.expect("a fleet state")).expect("the fleet state parses")
    }

    pub(crate) fn task_state(&self, task: &str) -> String {
        self.state()["tasks"][task]["state"].as_str().unwrap_or_default().to_string()
    }

    pub(crate) fn archived(&self) -> bool {
        !self.state_path().exists() && self.repo.join(".agent/fleet/archive").is_dir()
    }

    pub(crate) fn worktree(&self, task: &str) -> PathBuf {
        self.p.join("repo-fleet").join(task)
    }

    /// The messages of the commits on `branch` after the initial one, oldest first.
    pub(crate) fn commits(&self, branch: &str) -> Vec<String> {
        let hashes = self.git(&["rev-list", "--reverse", branch]);
        hashes.lines().skip(1).map(|h| self.git(&["log", "-1", "--format=%B", h])).collect()
    }

    /// The messages of the commits on the fleet's branch that carry `Ralph-Task: task`,
    /// oldest first.
    pub(crate) fn landed(&self, task: &str) -> Vec<String> {
        self.commits("ralph/fleet").into_iter().filter(|m| m.contains(&format!("Ralph-Task: {task}\n"))).collect()
    }

    /// The worktrees git knows of, the main checkout's first.
    pub(crate) fn worktrees(&self) -> Vec<String> {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .map(String::from)
            .collect()
    }

    /// `ralph fleet` started, once `task` runs (within `timeout`).
    pub(crate) fn running(&self, task: &str, timeout: Duration) -> Running {
        let supervisor = self.fleet(&[]).spawn();
        self.wait_for(&format!("task {task} running"), |s| s["tasks"][task]["state"] == "running", timeout);
        supervisor
    }

    /// Waits (bounded) until the fleet's state satisfies `ok`.
    pub(crate) fn wait_for(&self, what: &str, ok: impl Fn(&Value) -> bool, timeout: Duration) {
        let state = || fs::read_to_string(self.state_path()).ok().and_then(|t| serde_json::from_str(&t).ok());
        wait_until(&format!("the fleet to get to {what}"), timeout, || state().is_some_and(|v: Value| ok(&v)));
    }

    /// Live processes of this test's fleet: any whose working directory or command
    /// line is under the test's directory.
    pub(crate) fn processes(&self) -> Vec<i32> {
        let root = self.p.path().to_string_lossy().into_owned();
        let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
            .filter(|pid| *pid != std::process::id() as i32)
            .filter(|pid| {
                let cwd = fs::read_link(format!("/proc/{pid}/cwd")).map(|c| c.to_string_lossy().into_owned());
                let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                cwd.is_ok_and(|c| c.starts_with(&root)) || String::from_utf8_lossy(&cmdline).contains(&root)
            })
            .filter(|pid| alive(*pid))
            .collect()
    }

    /// Waits (bounded) until no process of this fleet is left.
    pub(crate) fn assert_no_process_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.processes().is_empty() {
            assert!(Instant::now() < deadline, "processes left: {:?}", self.processes());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Fleet {
    /// A failing test shows what each task's ralph printed.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let logs = self.repo.join(".agent/fleet/logs");
        for entry in fs::read_dir(&logs).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|x| x == "log") {
                eprintln!("--- {} ---\n{}", path.display(), fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
}

/// A fleet kill loop: fleets made by `make`, each started with `ralph fleet -q`
/// again and again and killed by `kill` after a random moment of up to `window` (at
/// most [`KILLS_PER_FLEET`] times, so each fleet also reaches its end, exiting 0),
/// until `kills` kills (or as many as `{vars}_KILLS` says); each fleet then audited.
/// The seed is `{vars}_SEED`, or the clock's, and is printed with what the loop did.
pub(crate) struct KillLoop<'a> {
    name: &'a str,
    vars: &'a str,
    kills: usize,
    window: Duration,
}

/// Kills per fleet at most, so that every fleet also reaches its end.
pub(crate) const KILLS_PER_FLEET: usize = 6;

/// The kill loop `name` (see [`KillLoop`]).
pub(crate) fn kill_loop<'a>(name: &'a str, vars: &'a str, kills: usize, window: Duration) -> KillLoop<'a> {
    KillLoop { name, vars, kills, window }
}

impl KillLoop<'_> {
    pub(crate) fn run(
        self,
        make: impl Fn() -> Fleet,
        mut kill: impl FnMut(&mut Rng, &Running),
        audit: impl Fn(&Fleet, u64),
    ) {
        let seed = crate::crash_harness::seed(&format!("{}_SEED", self.vars));
        let target = crate::crash_harness::env_count(&format!("{}_KILLS", self.vars), self.kills);
        let mut rng = Rng::new(seed);
        let started = Instant::now();
        let (mut kills, mut fleets, mut starts) = (0, 0, 0);
        while kills < target {
            assert!(started.elapsed() < Duration::from_secs(1800), "seed {seed}: {kills} kills in 30 minutes");
            let f = make();
            let mut left = KILLS_PER_FLEET.min(target - kills);
            loop {
                let mut run = f.fleet(&["-q"]).timeout(Duration::from_secs(120)).spawn();
                starts += 1;
                if left == 0 {
                    run.finish().expect_code(0);
                    break;
                }
                std::thread::sleep(rng.below(self.window));
                if run.exited() {
                    let out = run.finish();
                    assert_eq!(out.code, Some(0), "seed {seed}: the fleet ended without a kill:\n{out}");
                    break;
                }
                kill(&mut rng, &run);
                let _ = run.wait(crate::harness::DEFAULT_TIMEOUT);
                kills += 1;
                left -= 1;
            }
            audit(&f, seed);
            fleets += 1;
        }
        eprintln!(
            "{}: seed {seed}, {kills} kills over {fleets} fleets ({starts} starts), each audited, in {:.1}s",
            self.name,
            started.elapsed().as_secs_f64()
        );
    }
}

/// Waits until `ok` holds, looking every 20 ms; fails naming `what` after `timeout`.
pub(crate) fn wait_until(what: &str, timeout: Duration, ok: impl Fn() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < deadline, "waited {timeout:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

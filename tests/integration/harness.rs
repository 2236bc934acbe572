//! A small builder harness: a temp project, a `ralph` command with a timeout on every
//! run, spawned runs for signal tests, and readers for the checkpoint and journal.

#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tempfile::TempDir;

/// Every run of ralph must end within this long unless a test says otherwise. It only
/// bounds a hang: a test waits for the run's end, and a loaded two-core machine
/// makes a run of a few seconds at rest take many times as long.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) const RALPH: &str = env!("CARGO_BIN_EXE_ralph");

/// A config with fast `[retry]` and `[timeouts]` defaults for tests; `retry` and
/// `timeouts` entries (`key = value` lines) override or add to them, `body` is the rest.
pub(crate) fn fast(retry: &str, timeouts: &str, body: &str) -> String {
    fn table(name: &str, defaults: &[(&str, &str)], extra: &str) -> String {
        let mut entries: Vec<(String, String)> =
            defaults.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
        for line in extra.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (k, v) = line.split_once('=').expect("key = value");
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            match entries.iter_mut().find(|(key, _)| *key == k) {
                Some(e) => e.1 = v,
                None => entries.push((k, v)),
            }
        }
        let mut s = format!("[{name}]\n");
        for (k, v) in entries {
            s.push_str(&format!("{k} = {v}\n"));
        }
        s
    }
    let retry = table(
        "retry",
        &[("backoff_base", "\"50ms\""), ("backoff_max", "\"200ms\""), ("agent_backoff_base", "\"0s\"")],
        retry,
    );
    let timeouts = table("timeouts", &[("stall", "\"3s\""), ("grace", "\"1s\"")], timeouts);
    format!("{retry}\n{timeouts}\n{body}")
}

/// The project most tests run: [`fast`] retries and timeouts, agents in one chain
/// `main`, and one phase `develop` on it. Each method adds to one part of the
/// `ralph.toml`, so a test states only what it is about:
///
/// ```ignore
/// sim_project().retry("agent_attempts = 1").sim("a", &[r#"[{ crash = "SIGSEGV" }]"#]).build()
/// ```
pub(crate) fn sim_project() -> SimProject {
    SimProject::default()
}

/// Builder methods that add lines to one part of the `ralph.toml` text: `name`
/// adds to the field `name` (or the one named after `=>`).
macro_rules! appenders {
    ($($(#[$doc:meta])* $name:ident $(=> $field:ident)?;)*) => {
        $(
            $(#[$doc])*
            pub(crate) fn $name(mut self, entries: &str) -> Self {
                appenders!(@field self, $name $(, $field)?).push_str(&format!("{entries}\n"));
                self
            }
        )*
    };
    (@field $self:ident, $name:ident) => { $self.$name };
    (@field $self:ident, $name:ident, $field:ident) => { $self.$field };
}

/// The builder of [`sim_project`]; [`SimProject::build`] writes the project.
#[derive(Default)]
pub(crate) struct SimProject {
    retry: String,
    timeouts: String,
    general: String,
    /// `(name, the keys of its table and its script tables)`, in chain order.
    agents: Vec<(String, String)>,
    chain: Option<Vec<String>>,
    phase: String,
    /// `(name, its chain, entries besides its chain)`: the phases, in order, when
    /// not `develop` alone.
    phases: Vec<(String, String, String)>,
    /// `(name, agents)`: chains besides `main`.
    chains: Vec<(String, Vec<String>)>,
    rest: String,
    files: Vec<(String, String)>,
    /// Files of `files` made executable.
    programs: Vec<String>,
}

impl SimProject {
    appenders! {
        /// `[retry]` entries (`key = value` lines) over the fast defaults.
        retry;
        /// `[timeouts]` entries over the fast defaults.
        timeouts;
        /// `[general]` entries.
        general;
        /// `[phases.develop]` entries besides its chain (written only when no named
        /// phase takes `develop`'s place).
        phase;
        /// Any other tables, as written.
        toml => rest;
    }

    /// A scripted agent: launch N runs `scripts[N]` (the last repeats), each the
    /// `steps` array of one `[[agents.NAME.script]]`.
    pub(crate) fn sim(self, name: &str, scripts: &[&str]) -> Self {
        let mut table = String::from("kind = \"sim\"\n");
        for steps in scripts {
            table.push_str(&format!("[[agents.{name}.script]]\nsteps = {steps}\n"));
        }
        self.agent(name, &table)
    }

    /// A `kind = "command"` agent running `sh -c script` (the prompt its `$1`), with
    /// `extra` keys of its table.
    pub(crate) fn sh(self, name: &str, script: &str, extra: &str) -> Self {
        self.agent(
            name,
            &format!("kind = \"command\"\ncommand = [\"sh\", \"-c\", {script:?}, \"{{prompt}}\"]\n{extra}"),
        )
    }

    /// A `kind = "command"` agent running the program `rel` of the project (written
    /// with `text`, executable) with the prompt, its output read as `output` (when
    /// not empty).
    pub(crate) fn program(mut self, name: &str, rel: &str, text: &str, output: &str) -> Self {
        self.programs.push(rel.to_string());
        let mut table = format!("kind = \"command\"\ncommand = [\"./{rel}\", \"{{prompt}}\"]\n");
        if !output.is_empty() {
            table.push_str(&format!("output = \"{output}\"\n"));
        }
        self.file(rel, text).agent(name, &table)
    }

    /// A `kind = "command"` agent running `argv` (a TOML array).
    pub(crate) fn command(self, name: &str, argv: &str) -> Self {
        self.agent(name, &format!("kind = \"command\"\ncommand = {argv}\n"))
    }

    /// An agent with its table's keys as written (`kind = …` first).
    pub(crate) fn agent(mut self, name: &str, table: &str) -> Self {
        self.agents.push((name.to_string(), table.to_string()));
        self
    }

    /// The chain `main`, when it is not every agent in the order added.
    pub(crate) fn chain(mut self, agents: &[&str]) -> Self {
        self.chain = Some(agents.iter().map(|a| (*a).to_string()).collect());
        self
    }

    /// A phase `name` on the chain `main` with `entries` besides its chain; the
    /// phases so named, in the order added, take the place of `develop`.
    pub(crate) fn named_phase(mut self, name: &str, entries: &str) -> Self {
        self.phases.push((name.to_string(), "main".to_string(), entries.to_string()));
        self
    }

    /// A phase `name` run by the one agent `agent` (on a chain named after the
    /// phase); like [`SimProject::named_phase`], it takes the place of `develop`.
    pub(crate) fn phase_of(mut self, name: &str, agent: &str) -> Self {
        self.chains.push((name.to_string(), vec![agent.to_string()]));
        self.phases.push((name.to_string(), name.to_string(), String::new()));
        self
    }

    /// Another file of the project.
    pub(crate) fn file(mut self, rel: &str, text: &str) -> Self {
        self.files.push((rel.to_string(), text.to_string()));
        self
    }

    /// The `ralph.toml` text.
    pub(crate) fn config_text(&self) -> String {
        let mut body = String::new();
        if !self.general.is_empty() {
            body.push_str(&format!("[general]\n{}\n", self.general));
        }
        body.push_str(&self.rest);
        for (name, table) in &self.agents {
            body.push_str(&format!("[agents.{name}]\n{table}\n"));
        }
        let chain = self.chain.clone().unwrap_or_else(|| self.agents.iter().map(|(n, _)| n.clone()).collect());
        let list = |agents: &[String]| agents.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ");
        body.push_str(&format!("[chains]\nmain = [{}]\n", list(&chain)));
        for (name, agents) in &self.chains {
            body.push_str(&format!("{name} = [{}]\n", list(agents)));
        }
        let develop = [("develop".to_string(), "main".to_string(), self.phase.clone())];
        let phases = if self.phases.is_empty() { &develop[..] } else { &self.phases[..] };
        for (name, chain, entries) in phases {
            body.push_str(&format!("\n[phases.{name}]\nchain = \"{chain}\"\n{entries}\n"));
        }
        fast(&self.retry, &self.timeouts, &body)
    }

    /// A [`Project`] with this `ralph.toml` and the files.
    pub(crate) fn build(self) -> Project {
        let p = Project::new().config(&self.config_text());
        for (rel, text) in &self.files {
            p.write(rel, text);
        }
        for rel in &self.programs {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(p.join(rel), fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        p
    }
}

/// The `[watch]` entry that makes a SIGTERM sent by this test process count as a
/// service manager's (an eviction, a shutdown: the run stays resumable) instead of
/// a deliberate stop of the user's own: the test binary's file name, as `/proc`
/// shows the sender's executable.
pub(crate) fn sigterm_as_service_manager() -> String {
    let exe = std::env::current_exe().expect("the test binary");
    let name = exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // A test binary rebuilt while it runs is `NAME (deleted)` to the kernel; ralph
    // names the sender without the suffix, as the program it was started as.
    let name = name.trim_end_matches(" (deleted)");
    format!("service_managers = [{name:?}]")
}

/// The project of a run blocked at once: its one agent's provider refuses the
/// credentials (HTTP 401, as Anthropic words it).
pub(crate) fn refused_credentials() -> Project {
    sim_project()
        .sim("a", &[r#"[{ say = "calling the API" }, { error = "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}" }]"#])
        .build()
}

/// A temp directory with a `PROMPT.md`.
pub(crate) struct Project {
    tmp: TempDir,
    /// `XDG_STATE_HOME` of every ralph the test starts: the run registry lives here,
    /// outside the project (a git test sees no stray files) and outside the user's home.
    /// Shared by the projects of one test that share a registry ([`Project::beside`]).
    state: std::sync::Arc<TempDir>,
}

impl Project {
    pub(crate) fn new() -> Self {
        let p = Project::bare();
        p.write("PROMPT.md", "Build the thing.\n");
        p
    }

    /// A project without `PROMPT.md`.
    pub(crate) fn bare() -> Self {
        let dir = || tempfile::Builder::new().prefix("ralph-it-").tempdir().expect("temp dir");
        Project { tmp: dir(), state: std::sync::Arc::new(dir()) }
    }

    /// Another project (with a `PROMPT.md`) whose ralphs share this one's run registry.
    pub(crate) fn beside(&self) -> Self {
        let dir = tempfile::Builder::new().prefix("ralph-it-").tempdir().expect("temp dir");
        let p = Project { tmp: dir, state: self.state.clone() };
        p.write("PROMPT.md", "Build the thing.\n");
        p
    }

    pub(crate) fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub(crate) fn join(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// Writes `ralph.toml`.
    pub(crate) fn config(self, toml: &str) -> Self {
        self.write("ralph.toml", toml);
        self
    }

    pub(crate) fn file(self, rel: &str, text: &str) -> Self {
        self.write(rel, text);
        self
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create dirs");
        }
        fs::write(&path, text).expect("write file");
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
    }

    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.join(rel).exists()
    }

    /// The file that stands for the host's network state for this test's ralphs
    /// (`RALPH_TEST_HOST_NETWORK`): absent, the host is online; [`Project::host_offline`]
    /// takes the network away.
    pub(crate) fn host_network(&self) -> PathBuf {
        self.state.path().join("host-network")
    }

    /// The host loses its network (`why`, as ralph would read it), or gets it back (`None`).
    pub(crate) fn host_offline(&self, why: Option<&str>) {
        match why {
            Some(why) => fs::write(self.host_network(), why).expect("write the host's network state"),
            None => {
                let _ = fs::remove_file(self.host_network());
            }
        }
    }

    /// The run registry of this test's ralphs.
    pub(crate) fn registry(&self) -> PathBuf {
        self.state.path().join("ralph").join("runs")
    }

    /// ralph started here, once its agent has written `agent.pid`: the run and the
    /// agent's pid.
    pub(crate) fn start(&self) -> (Running, i32) {
        let run = self.ralph().spawn();
        let agent = self.pid_file("agent.pid");
        (run, agent)
    }

    pub(crate) fn ralph(&self) -> Ralph {
        Ralph {
            program: RALPH.to_string(),
            dir: self.path().to_path_buf(),
            state: self.state.path().to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            unset: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    pub(crate) fn checkpoint_path(&self) -> PathBuf {
        self.join(".agent/checkpoint.json")
    }

    pub(crate) fn checkpoint(&self) -> Value {
        let text = fs::read_to_string(self.checkpoint_path()).expect("checkpoint exists");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("checkpoint does not parse: {e}\n{text}"))
    }

    /// Every line of `.agent/events.jsonl`, parsed.
    pub(crate) fn journal(&self) -> Vec<Value> {
        let text = fs::read_to_string(self.join(".agent/events.jsonl")).unwrap_or_default();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("journal line does not parse: {e}: {l}")))
            .collect()
    }

    /// The journal events of one kind.
    pub(crate) fn events(&self, kind: &str) -> Vec<Value> {
        self.journal().into_iter().filter(|e| e["kind"] == kind).collect()
    }

    /// The name of the one copy of a corrupt checkpoint set aside in `.agent/`,
    /// which must hold `text`, the checkpoint as it was.
    #[track_caller]
    pub(crate) fn set_aside(&self, text: &str) -> String {
        let aside: Vec<_> = self.agent_dir_listing().into_iter().filter(|n| n.contains("corrupt")).collect();
        assert_eq!(aside.len(), 1, "{:?}", self.agent_dir_listing());
        assert_eq!(self.read(&format!(".agent/{}", aside[0])), text);
        aside[0].clone()
    }

    /// A finished run: `--inspect-checkpoint` says there is nothing to resume, and
    /// `--resume` refuses so; what inspect printed.
    #[track_caller]
    pub(crate) fn nothing_to_resume(&self) -> Output {
        let out = self.ralph().args(["--inspect-checkpoint"]).run();
        out.expect_code(0).stdout_has("nothing to resume");
        self.ralph().args(["--resume"]).run().expect_code(2).stderr_has("nothing to resume");
        out
    }

    /// File names in `.agent/`, sorted.
    pub(crate) fn agent_dir_listing(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.join(".agent"))
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Waits (bounded) until `rel` exists; panics after `timeout`.
    pub(crate) fn wait_for_file(&self, rel: &str, timeout: Duration) {
        let path = self.join(rel);
        let deadline = Instant::now() + timeout;
        while !path.exists() {
            assert!(Instant::now() < deadline, "{rel} did not appear within {timeout:?}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Reads a pid file, waiting (bounded) for it to be written completely.
    pub(crate) fn pid_file(&self, rel: &str) -> i32 {
        self.wait_for_file(rel, DEFAULT_TIMEOUT);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(pid) = self.read(rel).trim().parse() {
                return pid;
            }
            assert!(Instant::now() < deadline, "{rel} holds no pid");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A `ralph` command line in a project.
pub(crate) struct Ralph {
    /// What runs: ralph, or a program that starts it ([`Ralph::through`]).
    program: String,
    dir: PathBuf,
    state: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    unset: Vec<String>,
    timeout: Duration,
}

#[derive(Debug)]
pub(crate) struct Output {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Panics with the captured output unless the exit code is `code`.
    #[track_caller]
    pub(crate) fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "unexpected exit\n{self}");
        self
    }

    #[track_caller]
    pub(crate) fn stderr_has(&self, needle: &str) -> &Self {
        assert!(self.stderr.contains(needle), "stderr lacks {needle:?}\n{self}");
        self
    }

    #[track_caller]
    pub(crate) fn stdout_has(&self, needle: &str) -> &Self {
        assert!(self.stdout.contains(needle), "stdout lacks {needle:?}\n{self}");
        self
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "code: {:?} signal: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.signal, self.stdout, self.stderr
        )
    }
}

impl Ralph {
    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub(crate) fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// Without `key` in its environment.
    pub(crate) fn env_remove(mut self, key: &str) -> Self {
        self.unset.push(key.to_string());
        self
    }

    /// Runs in `dir` instead of the project directory.
    pub(crate) fn current_dir(mut self, dir: &Path) -> Self {
        self.dir = dir.to_path_buf();
        self
    }

    pub(crate) fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs `program` with `args` (which start ralph themselves: `unshare … ralph`)
    /// in ralph's place, with its directory, environment and timeout.
    pub(crate) fn through(mut self, program: &str, args: Vec<String>) -> Self {
        (self.program, self.args) = (program.to_string(), args);
        self
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .current_dir(&self.dir)
            .env_remove("RALPH_LOG")
            .env_remove("RUST_LOG")
            // A test run from inside a fleet's task must not look like a nested ralph.
            .env_remove("RALPH_FLEET_TASK")
            .env_remove("RALPH_FLEET_SUPERVISOR")
            .env("XDG_STATE_HOME", &self.state)
            // The host's network, as the test sets it: online unless a test takes it away.
            .env("RALPH_TEST_HOST_NETWORK", self.state.join("host-network"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so a timeout can kill ralph with everything in it, and a
            // signal a test sends reaches ralph only.
            .process_group(0);
        for key in &self.unset {
            cmd.env_remove(key);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs to the end (bounded by the timeout).
    pub(crate) fn run(self) -> Output {
        let timeout = self.timeout;
        self.spawn().wait(timeout)
    }

    /// Starts ralph and returns at once.
    pub(crate) fn spawn(self) -> Running {
        let mut child = self.command().spawn().expect("spawn ralph");
        let stdout = reader(child.stdout.take().expect("stdout"));
        let stderr = reader(child.stderr.take().expect("stderr"));
        Running { child, stdout: Some(stdout), stderr: Some(stderr), timeout: self.timeout }
    }
}

fn reader(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// A ralph that is running.
pub(crate) struct Running {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
    timeout: Duration,
}

impl Running {
    pub(crate) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub(crate) fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid()), signal).expect("signal ralph");
    }

    /// SIGTERM, and the exit (bounded by the timeout).
    pub(crate) fn terminate(self) -> Output {
        self.signal(Signal::SIGTERM);
        self.finish()
    }

    /// Whether ralph has exited (without reaping output).
    pub(crate) fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits for the exit; on timeout kills ralph's group and panics with the output.
    pub(crate) fn wait(mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = killpg(Pid::from_raw(self.pid()), Signal::SIGKILL);
                let status = self.child.wait().expect("wait");
                let out = self.collect(status);
                panic!("ralph did not exit within {timeout:?}\n{out}");
            }
            thread::sleep(Duration::from_millis(20));
        };
        self.collect(status)
    }

    /// Waits with the default timeout.
    pub(crate) fn finish(self) -> Output {
        let timeout = self.timeout;
        self.wait(timeout)
    }

    fn collect(&mut self, status: ExitStatus) -> Output {
        // Readers end when every holder of the pipes is gone; an agent that outlives
        // ralph would keep them open, so do not wait for ever.
        let take = |h: Option<JoinHandle<String>>| -> String {
            let Some(h) = h else { return String::new() };
            let deadline = Instant::now() + Duration::from_secs(10);
            while !h.is_finished() {
                if Instant::now() > deadline {
                    return "<output still open: something outlived ralph>".to_string();
                }
                thread::sleep(Duration::from_millis(20));
            }
            h.join().unwrap_or_default()
        };
        let stdout = take(self.stdout.take());
        let stderr = take(self.stderr.take());
        Output { code: status.code(), signal: status.signal(), stdout, stderr }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = killpg(Pid::from_raw(self.pid()), Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// The stdout of `git`, given `args` for the message; panics with git's stderr if
/// it fails.
pub(crate) fn git_output(mut git: Command, args: &[&str]) -> String {
    let out = git.output().expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits (bounded) for a child started outside [`Ralph`] to exit; on timeout kills it
/// and panics, saying `what` did not end.
pub(crate) fn wait_child(child: &mut Child, timeout: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end within {timeout:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a live process: one of its threads is neither a zombie nor
/// dead. Its first thread may be a zombie while the others still end (and hold its
/// descriptors, its locks among them).
pub(crate) fn alive(pid: i32) -> bool {
    let Ok(threads) = fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    threads.flatten().any(|thread| {
        let stat = fs::read_to_string(thread.path().join("stat")).unwrap_or_default();
        // "pid (comm) S ...": the state follows the last ')'.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        !matches!(state, Some('Z') | Some('X') | None)
    })
}

/// Whether a process holds the flock of the lock at `path` (a shared flock is
/// refused only while someone holds the exclusive one).
pub(crate) fn lock_held(path: &Path) -> bool {
    use nix::fcntl::{Flock, FlockArg};
    let Ok(file) = fs::File::open(path) else { return false };
    matches!(Flock::lock(file, FlockArg::LockSharedNonblock), Err((_, nix::errno::Errno::EWOULDBLOCK)))
}

/// Waits (bounded) for `pid` to be gone; returns whether it is.
pub(crate) fn gone_within(pid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if !alive(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Kills a leftover process so a failing test does not leak it.
pub(crate) fn cleanup(pid: i32) {
    if alive(pid) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Counts journal events of `kind` whose `field` equals `value`.
pub(crate) fn count(events: &[Value], kind: &str, field: &str, value: &Value) -> usize {
    events.iter().filter(|e| e["kind"] == kind && &e[field] == value).count()
}

/// The run log directories under `logs` (a project's `.agent/logs`), by name.
pub(crate) fn run_dirs(logs: &Path) -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = fs::read_dir(logs).into_iter().flatten().flatten().map(|e| e.path()).collect();
    runs.sort();
    runs
}

/// The prompts of the run whose log directory is `run`, in order: each attempt's
/// stem and the text `prompts.md` frames (`==> <stem>: <length> bytes <==`, the
/// text, a newline), read independently of ralph's own reader.
pub(crate) fn prompt_entries(run: &Path) -> Vec<(String, String)> {
    let bytes = fs::read(run.join("prompts.md")).unwrap_or_default();
    let (mut entries, mut rest) = (Vec::new(), &bytes[..]);
    while let Some(newline) = rest.iter().position(|b| *b == b'\n') {
        let header = String::from_utf8_lossy(&rest[..newline]).into_owned();
        let framed = header.strip_prefix("==> ").and_then(|h| h.strip_suffix(" bytes <==")?.rsplit_once(": "));
        let Some((stem, len)) = framed.and_then(|(stem, len)| Some((stem, len.parse::<usize>().ok()?))) else { break };
        let Some(text) = rest.get(newline + 1..newline + 1 + len) else { break };
        entries.push((stem.to_string(), String::from_utf8_lossy(text).into_owned()));
        rest = rest.get(newline + 2 + len..).unwrap_or_default();
    }
    entries
}

/// The heads of the attempt logs of the run whose log directory is `run`, in
/// order: each attempt's stem and its output, where `attempts.index` (lines
/// `<offset> <stem>`) places it in `attempts.log`, after its line `==> <stem> <==`.
pub(crate) fn attempt_heads(run: &Path) -> Vec<(String, String)> {
    let log = fs::read(run.join("attempts.log")).unwrap_or_default();
    let index = fs::read_to_string(run.join("attempts.index")).unwrap_or_default();
    let entries: Vec<(usize, &str)> =
        index.lines().filter_map(|l| l.split_once(' ').and_then(|(at, stem)| Some((at.parse().ok()?, stem)))).collect();
    let mut heads = Vec::new();
    for (i, (at, stem)) in entries.iter().enumerate() {
        let end = entries.get(i + 1).map_or(log.len(), |(next, _)| *next).min(log.len());
        let start = (at + format!("==> {stem} <==\n").len()).min(end);
        heads.push((stem.to_string(), String::from_utf8_lossy(&log[start..end]).into_owned()));
    }
    heads
}

impl Project {
    /// What `each` (a reader of one run's log directory) says of attempt `n`, in the
    /// newest run that has it.
    fn of_attempt(&self, n: u32, each: fn(&Path) -> Vec<(String, String)>) -> String {
        let prefix = format!("attempt-{n:04}-");
        let runs = run_dirs(&self.join(".agent/logs"));
        let found = runs.iter().flat_map(|run| each(run)).rfind(|(stem, _)| stem.starts_with(&prefix));
        found.map(|(_, text)| text).unwrap_or_default()
    }

    /// The prompt attempt `n` was given (its entry in `prompts.md`).
    pub(crate) fn prompt_of(&self, n: u32) -> String {
        self.of_attempt(n, prompt_entries)
    }

    /// The raw output of attempt `n` (its head in `attempts.log`).
    pub(crate) fn attempt_log(&self, n: u32) -> String {
        self.of_attempt(n, attempt_heads)
    }

    /// Waits (bounded) until the log of attempt `n` contains `needle`.
    pub(crate) fn wait_for_attempt_log(&self, n: u32, needle: &str) {
        let deadline = Instant::now() + DEFAULT_TIMEOUT;
        while !self.attempt_log(n).contains(needle) {
            assert!(Instant::now() < deadline, "attempt {n} did not log {needle:?}:\n{}", self.attempt_log(n));
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// ralph's own logs (`.agent/logs/*/ralph.log`), concatenated.
    pub(crate) fn ralph_log(&self) -> String {
        let mut text = String::new();
        if let Ok(rd) = fs::read_dir(self.join(".agent/logs")) {
            for entry in rd.flatten() {
                text.push_str(&fs::read_to_string(entry.path().join("ralph.log")).unwrap_or_default());
            }
        }
        text
    }

    /// Waits (bounded) for the first journal event of `kind`, and returns it. A line
    /// being written (not yet whole) is passed over until it is.
    pub(crate) fn wait_for_event(&self, kind: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let text = fs::read_to_string(self.join(".agent/events.jsonl")).unwrap_or_default();
            let found = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|e| e["kind"] == kind);
            if let Some(event) = found {
                return event;
            }
            assert!(Instant::now() < deadline, "no {kind:?} event in the journal within {timeout:?}:\n{text}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (bounded) until the checkpoint on disk satisfies `ok`.
    pub(crate) fn wait_for_checkpoint(&self, ok: impl Fn(&Value) -> bool, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            // Written atomically: whatever is there parses.
            if let Ok(text) = fs::read_to_string(self.checkpoint_path())
                && ok(&serde_json::from_str(&text).expect("checkpoint parses"))
            {
                return;
            }
            assert!(Instant::now() < deadline, "the checkpoint did not get there within {timeout:?}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (bounded) until ralph's log contains `needle`.
    pub(crate) fn wait_for_log(&self, needle: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.ralph_log().contains(needle) {
            assert!(Instant::now() < deadline, "ralph.log lacks {needle:?} after {timeout:?}:\n{}", self.ralph_log());
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The sim steps of a `ralph mcp` killed during a `report_progress` call saying
/// `message` (let each call differ: the same call three times is a tool-call loop),
/// and a pause for ralph to see it.
pub(crate) fn mcp_crash(message: &str) -> String {
    format!(
        r#"{{ mcp = {{ tool = "report_progress", arguments = {{ message = "{message}" }}, kill = true }} }}, {{ sleep = "500ms" }}"#
    )
}

/// A goal longer than one command-line argument may be (128 KiB on Linux), starting
/// with a dash (never to be read as an option) and ending with `marker`.
pub(crate) fn long_goal(marker: &str) -> String {
    let mut goal = String::from("-- Build the frobnicator.\n");
    while goal.len() < 200 * 1024 {
        goal.push_str("Every requirement of the frobnicator is spelled out here at length.\n");
    }
    goal.push_str(marker);
    goal.push('\n');
    goal
}

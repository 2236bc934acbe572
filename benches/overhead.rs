//! The overhead benchmark (`cargo bench --bench overhead`), documented in
//! docs/performance.md. Two numbers:
//!
//! 1. ralph's overhead per agent call: a workflow of N iterations of an agent that
//!    exits at once (`true`, `done = "exit0"`), durable checkpoints on, minus the cost
//!    of spawning and reaping the same program N times directly.
//! 2. Ctrl+C to exit: a scripted agent in a long tool call (it dies on SIGINT at
//!    once); the time from SIGINT to ralph's exit, and whether the agent's process
//!    group is gone.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ITERATIONS: u32 = 100;
const ROUNDS: usize = 5;

fn main() {
    let ralph = env!("CARGO_BIN_EXE_ralph");
    let per_call = overhead(ralph);
    let interrupt = ctrl_c(ralph);
    println!(
        "overhead per agent call (median of {ROUNDS} runs of {ITERATIONS}): {:.3} ms",
        per_call.as_secs_f64() * 1e3
    );
    println!("Ctrl+C to exit, cooperative agent (median of {ROUNDS}): {:.1} ms", interrupt.as_secs_f64() * 1e3);
}

fn overhead(ralph: &str) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..ROUNDS {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "PROMPT.md", "benchmark\n");
        write(
            dir.path(),
            "ralph.toml",
            &format!(
                "[agents.quick]\nkind = \"command\"\ncommand = [\"true\", \"{{prompt}}\"]\n\
                 [chains]\nmain = [\"quick\"]\n\
                 [phases.work]\nchain = \"main\"\ndone = \"exit0\"\niterations = {ITERATIONS}\n"
            ),
        );
        let start = Instant::now();
        let status =
            Command::new(ralph).arg("-q").current_dir(dir.path()).stdin(Stdio::null()).status().expect("ralph");
        let with_ralph = start.elapsed();
        assert!(status.success(), "the benchmark run failed: {status}");

        let start = Instant::now();
        for _ in 0..ITERATIONS {
            let s = Command::new("true").arg("prompt").stdin(Stdio::null()).status().expect("true");
            assert!(s.success());
        }
        let bare = start.elapsed();
        samples.push(with_ralph.saturating_sub(bare) / ITERATIONS);
    }
    median(samples)
}

fn ctrl_c(ralph: &str) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..ROUNDS {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "PROMPT.md", "benchmark\n");
        write(
            dir.path(),
            "ralph.toml",
            "[agents.slow]\nkind = \"sim\"\n[[agents.slow.script]]\n\
             steps = [{ pidfile = \"agent.pid\" }, { tool = { name = \"Bash\", input = { command = \"make\" }, duration = \"60s\" } }]\n\
             [chains]\nmain = [\"slow\"]\n[phases.work]\nchain = \"main\"\n",
        );
        let mut child =
            Command::new(ralph).arg("-q").current_dir(dir.path()).stdin(Stdio::null()).spawn().expect("ralph");
        let pidfile = dir.path().join("agent.pid");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::fs::read_to_string(&pidfile).map_or(true, |s| s.trim().is_empty()) {
            assert!(Instant::now() < deadline, "the agent did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(200));
        let agent: i32 = std::fs::read_to_string(&pidfile).expect("pid").trim().parse().expect("pid number");
        let start = Instant::now();
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
        let status = child.wait().expect("wait");
        samples.push(start.elapsed());
        assert_eq!(status.code(), Some(130));
        let gone = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(agent), None).is_err();
        assert!(gone, "the agent's process group outlived ralph");
    }
    median(samples)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

//! `ralph demo`: a complete run on the built-in scripted agent, in a temp directory,
//! with no network: a crash, a claim of done without the done tag and ralph's
//! confirmation question, a fallover, a Ctrl+C in the middle of a long tool call,
//! and `--resume` finishing the work.
//!
//! The demo drives a real `ralph` child process, so what it shows is exactly what a
//! user's run does.

use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::RalphError;

const CONFIG: &str = include_str!("demo.toml");
const GOAL: &str = "Build a command-line calculator that evaluates + - * / with precedence.\n";

pub(crate) fn main(keep: bool) -> Result<i32, RalphError> {
    let tmp = tempfile::Builder::new()
        .prefix("ralph-demo-")
        .tempdir()
        .map_err(|e| RalphError::io("cannot create the demo directory", e))?;
    let dir = tmp.path().to_path_buf();
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| RalphError::io(format!("cannot write {name}"), e))
    };
    write("ralph.toml", CONFIG)?;
    write("PROMPT.md", GOAL)?;
    // The demo's runs register in a registry of their own, inside the demo directory:
    // the user's `ralph status --all` and watchdog never see a run whose directory is
    // removed a moment later.
    let state = dir.join(".demo").join("state");
    let exe = crate::os::self_exe().map_err(|e| RalphError::io("cannot find ralph's own executable", e))?;
    let ralph = || {
        let mut ralph = Command::new(&exe);
        ralph.current_dir(&dir).env("XDG_STATE_HOME", &state);
        ralph
    };
    say(&format!("demo directory: {}", dir.display()));
    say("1/2  `ralph`: plan, then develop; the first agent crashes and falls over; Ctrl+C during a long build");

    let mut child = ralph().spawn().map_err(|e| RalphError::io("cannot start ralph", e))?;
    let marker = dir.join(".demo/step2-started");
    let deadline = Instant::now() + Duration::from_secs(60);
    // The demo is the user here: it waits to see the long build start, then presses
    // Ctrl+C once. (Polling a file is fine for a human stand-in; ralph itself never polls.)
    while !marker.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(RalphError::Internal(format!("the demo run ended early ({status}); see {}", dir.display())));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(RalphError::Internal("the demo run did not reach its second iteration within 60s".into()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    say("demo: pressing Ctrl+C (SIGINT to ralph)");
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
    }
    let first = child.wait().map_err(|e| RalphError::io("cannot wait for ralph", e))?;
    say(&format!("demo: ralph exited with {} (130 = paused by the user)", code(first)));

    say("2/2  `ralph --resume`: continues the paused session and finishes");
    let second = ralph().arg("--resume").status().map_err(|e| RalphError::io("cannot start ralph", e))?;
    say(&format!("demo: ralph exited with {}", code(second)));
    show_files(&dir);
    if keep {
        let kept = tmp.keep();
        say(&format!("kept {}", kept.display()));
    }
    Ok(if second.success() && code(first) == crate::exit::INTERRUPTED {
        crate::exit::DONE
    } else {
        crate::exit::FAILED
    })
}

fn show_files(dir: &Path) {
    for name in ["PLAN.md", "src/parse.rs", "src/eval.rs", ".agent/checkpoint.json", ".agent/events.jsonl"] {
        let mark = if dir.join(name).exists() { "✓" } else { "✗" };
        say(&format!("  {mark} {name}"));
    }
}

fn code(status: ExitStatus) -> i32 {
    status.code().unwrap_or(-1)
}

fn say(line: &str) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        // The run's live line may be on the screen: the message goes over it, on a
        // line of its own (the run draws its line again below).
        eprintln!("\r\x1b[2K\x1b[1m{line}\x1b[0m");
    } else {
        eprintln!("{line}");
    }
}

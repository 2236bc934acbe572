//! `ralph fleet` and its subcommands: arguments to [`crate::fleet`]. A command that
//! changes the fleet asks the running supervisor over its socket; when none runs it
//! takes the fleet's lock and does the same itself.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::fleet_find::{Found, find};
use crate::cli::{FleetCli, FleetCommand, Place};
use crate::error::RalphError;
use crate::exit;
use crate::fleet::control::{self, Request};
use crate::fleet::ops::Book;
use crate::fleet::state::{FleetStatus, TaskState};

pub(crate) fn main(cli: FleetCli) -> i32 {
    let Some(command) = cli.command else {
        let run = cli.run;
        return super::in_dir(&run.place, |dir| {
            crate::fleet::main(crate::fleet::Options {
                dir: dir.to_path_buf(),
                config: run.config.clone(),
                allow_dirty: run.allow_dirty,
                no_land: run.no_land,
                quiet: run.quiet,
            })
        });
    };
    match command {
        FleetCommand::Status { json, place } => super::in_dir(&place, |d| super::fleet_status::main(d, json)),
        FleetCommand::Stop { task, now, timeout, place } => in_fleet(&place, |f| stop(&f, task, now, timeout)),
        FleetCommand::Logs { task, follow, place } => in_fleet(&place, |f| logs(&f, &task, follow)),
        FleetCommand::Path { task, place } => in_fleet(&place, |f| path(&f, &task)),
        FleetCommand::Discard { task, delete_branch, place } => {
            in_fleet(&place, |f| change(&f, &Request::Discard { task: task.clone(), delete_branch }))
        }
        FleetCommand::Clean { place } => in_fleet(&place, |f| change(&f, &Request::Clean {})),
        FleetCommand::Retry { task, place } => in_fleet(&place, |f| change(&f, &Request::Retry { task: task.clone() })),
        FleetCommand::Land { task, place } => in_fleet(&place, |f| change(&f, &Request::Land { task: task.clone() })),
        FleetCommand::Diff { task, place } => in_fleet(&place, |f| diff(&f, &task)),
    }
}

fn in_fleet(place: &Place, command: impl FnOnce(Found) -> Result<i32, RalphError>) -> i32 {
    super::in_dir(place, |dir| command(find(dir)?))
}

/// A change by a person: through the supervisor, or under the fleet's lock (`ralph
/// fleet land TASK`: the supervisor lands it next, or it is landed here and now).
fn change(found: &Found, request: &Request) -> Result<i32, RalphError> {
    if let Some(reply) = control::call(&found.paths.socket_record, request) {
        return answer(reply);
    }
    let mut book = offline(found)?;
    let done = match request {
        Request::Retry { task } => book.retry(task).map(|said| format!("{said}; `ralph fleet` runs it")),
        Request::Discard { task, delete_branch } => discard_offline(&mut book, task, *delete_branch),
        Request::Clean {} => book.clean(),
        Request::Land { task } => {
            let runtime = crate::process::runtime().map_err(|e| RalphError::io("cannot start the runtime", e))?;
            let (ok, lines) = runtime.block_on(crate::fleet::landing::land_now(&mut book, task))?;
            runtime.shutdown_background();
            if ok { Ok(lines.join("\n")) } else { Err(lines.join("\n")) }
        }
        _ => Err("not a change".to_string()),
    };
    answer(done)
}

fn answer(done: Result<String, String>) -> Result<i32, RalphError> {
    println!("{}", done.map_err(RalphError::Usage)?);
    Ok(exit::DONE)
}

/// The fleet's book under its lock, for a command that runs without a supervisor.
/// The lock is held until the process ends (a command is short).
fn offline(found: &Found) -> Result<Book, RalphError> {
    let lock = match crate::state::lock::acquire(&found.paths.lock) {
        Ok(acquired) => acquired.lock,
        Err(crate::state::lock::LockError::Held { .. }) => {
            return Err(RalphError::Usage(
                "the fleet's supervisor runs but does not answer on its socket; wait, or stop it".into(),
            ));
        }
        Err(e) => return Err(RalphError::Lock(e)),
    };
    // Released when the process exits; nothing is left half-done before that.
    std::mem::forget(lock);
    let fleet = fleet_of(found)?;
    let repo = crate::git::repo::Repo::at(&found.top);
    let loaded = crate::config::file::load(&fleet.config)?;
    Ok(Book::new(repo, found.paths.clone(), loaded, fleet, None))
}

fn discard_offline(book: &mut Book, task: &str, delete_branch: bool) -> Result<String, String> {
    let t = book.task(task)?.clone();
    if let Some(w) = &t.worktree
        && crate::state::lock::read_info(&w.join(".agent").join("ralph.lock")).is_some_and(|i| i.process_alive())
    {
        return Err(format!("task {task}'s ralph still runs; `ralph fleet stop {task}` first"));
    }
    if let crate::fleet::core::Command::Refuse(why) = crate::fleet::core::discard(task, &t) {
        return Err(why);
    }
    book.set(task, TaskState::Discarded, Some("discarded by `ralph fleet discard`".into()))
        .map_err(|e| e.to_string())?;
    let mut said = vec![format!("task {task}: discarded")];
    said.extend(book.discarded(task, delete_branch));
    Ok(said.join("\n"))
}

/// `ralph fleet stop [--now] [TASK]`: asks the supervisor; waits for the stop.
fn stop(found: &Found, task: Option<String>, now: bool, timeout: Duration) -> Result<i32, RalphError> {
    let request = Request::Stop { task: task.clone(), now };
    let Some(reply) = control::call(&found.paths.socket_record, &request) else {
        return stop_without_supervisor(found, task.as_deref(), now);
    };
    eprintln!("ralph: {}", reply.map_err(RalphError::Usage)?);
    let started = Instant::now();
    loop {
        let state = crate::fleet::state::read(&found.paths.state).ok().flatten();
        let done = match (&task, &state) {
            // The whole fleet: its supervisor is gone (its lock released).
            (None, _) => !crate::state::lock::is_held(&found.paths.lock),
            (Some(name), Some(f)) => f.tasks.get(name).is_none_or(|t| !t.state.active()),
            (Some(_), None) => true,
        };
        if done {
            let shown = state.map(|f| match &task {
                Some(name) => f.tasks.get(name).map_or("gone".into(), |t| t.state.into_str().to_string()),
                None => f.status.into_str().to_string(),
            });
            println!("stopped: {}", shown.unwrap_or_else(|| "archived".into()));
            return Ok(exit::DONE);
        }
        if started.elapsed() >= timeout {
            eprintln!(
                "ralph: not stopped after {}; `ralph fleet status` shows where it is",
                humantime::format_duration(timeout)
            );
            return Ok(exit::FAILED);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// No supervisor runs: task ralphs a crashed supervisor left running are stopped
/// through their own sockets; the next `ralph fleet` sees them paused.
fn stop_without_supervisor(found: &Found, task: Option<&str>, now: bool) -> Result<i32, RalphError> {
    let fleet = fleet_of(found)?;
    let mut stopped = Vec::new();
    for (name, t) in fleet.tasks.iter().filter(|(n, _)| task.is_none_or(|want| want == n.as_str())) {
        let Some(w) = &t.worktree else { continue };
        let Ok(socket) = crate::control::client::socket_of(w) else { continue };
        if crate::control::client::call(&socket, &crate::control::Request::Stop { now }).is_ok_and(|r| r.ok) {
            stopped.push(name.clone());
        }
    }
    if stopped.is_empty() {
        let status = fleet.status;
        println!(
            "no fleet supervisor runs in {} (the fleet is {}) and no task's ralph is running",
            found.top.display(),
            status.into_str()
        );
        return Ok(if status == FleetStatus::Running { exit::FAILED } else { exit::DONE });
    }
    println!("asked task(s) {} to stop; `ralph fleet` continues them", stopped.join(", "));
    Ok(exit::DONE)
}

/// The fleet's state; an error when there is none.
fn fleet_of(found: &Found) -> Result<crate::fleet::state::Fleet, RalphError> {
    crate::fleet::setup::read_state(&found.paths.state)?
        .ok_or_else(|| RalphError::Usage(format!("no fleet in {}; `ralph fleet` starts one", found.top.display())))
}

fn task_worktree(found: &Found, task: &str) -> Result<(crate::fleet::state::Fleet, Option<PathBuf>), RalphError> {
    let fleet = fleet_of(found)?;
    let t = crate::fleet::ops::task_of(&fleet, task).map_err(RalphError::Usage)?;
    let worktree = t.worktree.clone().filter(|w| w.exists());
    Ok((fleet, worktree))
}

/// `ralph fleet path TASK`.
fn path(found: &Found, task: &str) -> Result<i32, RalphError> {
    match task_worktree(found, task)? {
        (_, Some(w)) => {
            println!("{}", w.display());
            Ok(exit::DONE)
        }
        (f, None) => Err(RalphError::Usage(format!(
            "task {task} has no worktree ({}); its branch is {}",
            f.tasks.get(task).map_or("unknown", |t| t.state.into_str()),
            crate::fleet::names::branch_of(task)
        ))),
    }
}

/// `ralph fleet logs [-f] TASK`: the task's transcripts as `ralph logs` shows them,
/// or (its worktree gone) what its ralph printed.
fn logs(found: &Found, task: &str, follow: bool) -> Result<i32, RalphError> {
    let (fleet, worktree) = task_worktree(found, task)?;
    eprintln!("ralph: task {task}: its ralph's own output is in {}", found.paths.task_log(task).display());
    match worktree {
        Some(w) if w.join(".agent").join("logs").is_dir() => super::logs::main(&w, Some(&fleet.config), follow),
        _ => {
            let text = std::fs::read_to_string(found.paths.task_log(task)).unwrap_or_default();
            print!("{}", crate::secrets::redact(&text));
            Ok(exit::DONE)
        }
    }
}

/// `ralph fleet diff TASK`: `git diff <into>...<branch>`, git's own output.
fn diff(found: &Found, task: &str) -> Result<i32, RalphError> {
    let fleet = fleet_of(found)?;
    let branch = crate::fleet::names::branch_of(task);
    let merged = fleet.tasks.get(task).is_some_and(|t| t.landed.is_some());
    // A merged task's branch is gone: what it landed is its commits on `into`.
    let args: Vec<String> = if merged {
        let grep = format!("--grep=^{}: {task}$", crate::git::message::TASK_TRAILER);
        vec!["log".into(), "-p".into(), grep, fleet.into.clone()]
    } else {
        vec!["diff".into(), format!("{}...{branch}", fleet.into)]
    };
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(&found.top)
        .args(&args)
        .status()
        .map_err(|e| RalphError::io("cannot run git", e))?;
    Ok(if status.success() { exit::DONE } else { exit::FAILED })
}

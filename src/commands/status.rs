//! `ralph status [--json] [--all] [--prune]`: the run in a directory, from its
//! checkpoint and lock (live when a ralph holds the lock), or every run in the run
//! registry.

use std::path::Path;

use crate::error::RalphError;
use crate::report::labelled;
use crate::state::lock;
use crate::state::redact::redact;

pub(crate) fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    // A running ralph answers for itself; otherwise the checkpoint tells.
    let live = crate::control::client::socket_of(dir)
        .and_then(|s| crate::control::client::call(&s, &crate::control::Request::Status {}))
        .ok()
        .and_then(|r| r.live);
    if let Some(live) = live.as_ref().filter(|_| !json) {
        print!("{}", describe_live(live));
        return Ok(crate::exit::DONE);
    }
    // With a live answer, a checkpoint that does not read is no error.
    let cp = if live.is_some() { super::inspect::read(dir).ok().flatten() } else { super::inspect::read(dir)? };
    let holder = super::inspect::live_holder(dir);
    if json {
        println!("{}", super::inspect::to_json(dir, cp.as_ref(), holder.as_ref(), live.as_ref())?);
        return Ok(crate::exit::DONE);
    }
    match (&cp, &holder) {
        (None, _) => println!("no run in {}", dir.display()),
        (Some(cp), Some(h)) => {
            print!("live: ralph pid {} on {}\n{}", h.pid, h.host, redact(&super::inspect::describe(cp, true)));
        }
        (Some(cp), None) => print!("{}", redact(&super::inspect::describe(cp, false))),
    }
    Ok(crate::exit::DONE)
}

/// The live state, as `ralph status` prints it.
fn describe_live(live: &crate::control::Live) -> String {
    let mut out = format!(
        "live: ralph pid {}, run {}\nstatus: {}\nphase: {}, iteration {} of {}\nagent: {}, attempt {}\n",
        live.pid, live.run_id, live.status, live.phase, live.iteration, live.iterations, live.agent, live.attempt
    );
    labelled(&mut out, "waiting for", live.waiting_for.as_ref());
    labelled(&mut out, "last event", live.last_event.as_ref());
    if live.stop_requested {
        out.push_str("stopping after this iteration (ralph stop)\n");
    }
    labelled(&mut out, "agent's last checkpoint", live.last_checkpoint.as_ref());
    out
}

/// One registered run, as `status --all` shows it.
#[derive(Debug, serde::Serialize)]
struct Row {
    dir: String,
    /// The directory is gone: `--prune` removes the entry.
    stale: bool,
    status: String,
    phase: Option<String>,
    iteration: Option<u32>,
    agent: Option<String>,
    /// RFC 3339, from the run's journal.
    last_activity: Option<String>,
    /// Resumes by `ralph watch` since the run last stopped cleanly.
    restarts: u32,
    run_id: String,
    /// A fleet's supervisor ("fleet: 3 tasks, 1 running, 2 finished") or one of its
    /// tasks ("fleet task a of /repo").
    #[serde(skip_serializing_if = "Option::is_none")]
    fleet: Option<String>,
}

/// `ralph status --all [--json] [--prune]`.
pub(crate) fn all(json: bool, prune: bool) -> Result<i32, RalphError> {
    use crate::state::registry;
    let Some(reg) = registry::dir() else {
        return Err(RalphError::Usage("cannot find the run registry: neither XDG_STATE_HOME nor HOME is set".into()));
    };
    let (entries, warnings) = registry::read_all(&reg);
    for warning in warnings {
        eprintln!("ralph: {warning}");
    }
    let mut rows = Vec::new();
    for entry in entries {
        let stale = !entry.dir.is_dir();
        if stale && prune {
            registry::remove(&reg, &entry)
                .map_err(|e| RalphError::io(format!("cannot remove the entry of {}", entry.dir.display()), e))?;
            eprintln!("removed the entry of {} (directory gone)", entry.dir.display());
            continue;
        }
        if entry.fleet_supervisor() {
            rows.push(fleet_row(&reg, &entry, stale));
            continue;
        }
        let path = entry.dir.join(".agent").join("checkpoint.json");
        let cp = crate::state::format::read_newest(&path).ok().flatten().map(|newest| newest.checkpoint);
        let pos = cp.as_ref().map(|c| &c.progress.position);
        let agent = cp.as_ref().and_then(|c| c.in_flight.as_ref().map(|f| f.agent.clone()));
        let journal = entry.dir.join(".agent").join("events.jsonl");
        let last_activity = std::fs::metadata(&journal)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| jiff::Timestamp::try_from(t).ok())
            .map(|t| t.to_string());
        let live = lock::read_info(&entry.dir.join(".agent").join("ralph.lock")).is_some_and(|i| i.process_alive());
        let status = cp.as_ref().map_or(entry.status, |c| c.status).as_str().to_string();
        rows.push(Row {
            dir: entry.dir.display().to_string(),
            stale,
            status: if live { format!("{status} (live)") } else { status },
            phase: pos.map(|p| p.phase_name.clone()),
            iteration: pos.map(|p| p.iteration),
            agent,
            last_activity,
            restarts: registry::read_watch(&reg, &entry.stem()).restarts,
            run_id: cp.as_ref().map_or(entry.run_id.clone(), |c| c.run_id.clone()),
            fleet: entry
                .fleet
                .as_ref()
                .and_then(|f| Some(format!("fleet task {} of {}", f.task.as_deref()?, f.repo.display()))),
        });
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| RalphError::Internal(e.to_string()))?);
        return Ok(crate::exit::DONE);
    }
    if rows.is_empty() {
        println!("no registered runs in {}", reg.display());
    }
    for r in &rows {
        let place = match (&r.phase, r.iteration) {
            (Some(p), Some(i)) => format!("phase {p}, iteration {i}"),
            _ => "no checkpoint".to_string(),
        };
        let agent = r.agent.as_ref().map(|a| format!(", agent {a}")).unwrap_or_default();
        let restarts =
            if r.restarts > 0 { format!(", {} restart(s) by ralph watch", r.restarts) } else { String::new() };
        let stale = if r.stale { " [stale: directory gone; `ralph status --prune` removes it]" } else { "" };
        let place = match (&r.fleet, r.phase.is_some()) {
            (Some(f), true) => format!("{f}, {place}"),
            (Some(f), false) => f.clone(),
            (None, _) => place,
        };
        println!(
            "{}  {}  {place}{agent}{restarts}  last activity {}{stale}",
            r.dir,
            r.status,
            r.last_activity.as_deref().unwrap_or("unknown")
        );
    }
    Ok(crate::exit::DONE)
}

/// A fleet's supervisor, as `status --all` shows it: the fleet's state and its tasks.
fn fleet_row(registry: &std::path::Path, entry: &crate::state::registry::Entry, stale: bool) -> Row {
    let dir = crate::fleet::paths::fleet_dir(&entry.dir);
    let fleet = crate::fleet::state::read(&dir.join("fleet.json")).ok().flatten();
    let live = crate::fleet::lock_held(&dir.join("fleet.lock"));
    let status = fleet.as_ref().map_or("finished (archived)", |f| f.status.as_str());
    let counts = fleet.as_ref().map(|f| {
        let mut by_state = std::collections::BTreeMap::new();
        f.tasks.values().for_each(|t| *by_state.entry(t.state.as_str()).or_insert(0) += 1);
        let list: Vec<String> = by_state.iter().map(|(s, n)| format!("{n} {s}")).collect();
        format!("fleet: {} task(s), {}", f.tasks.len(), list.join(", "))
    });
    let last_activity = std::fs::metadata(dir.join(crate::state::journal::FILE))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .map(|t| t.to_string());
    Row {
        dir: entry.dir.display().to_string(),
        stale,
        status: if live { format!("{status} (live)") } else { status.to_string() },
        phase: None,
        iteration: None,
        agent: None,
        last_activity,
        restarts: crate::state::registry::read_watch(registry, &entry.stem()).restarts,
        run_id: fleet.map_or(entry.run_id.clone(), |f| f.fleet_id),
        fleet: Some(counts.unwrap_or_else(|| "fleet".to_string())),
    }
}

//! `ralph status [--json] [--all] [--prune]`: the run in a directory, from its
//! checkpoint and lock (live when a ralph holds the lock), or every run in the run
//! registry.

use std::path::Path;

use crate::error::RalphError;
use crate::report::labelled;
use crate::secrets::redact;
use crate::state::lock;

pub(crate) fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    // A running ralph answers for itself; otherwise the checkpoint tells. A socket
    // recorded here that serves another run (this directory is a copy) is said.
    let asked = crate::control::client::call_run(dir, &crate::control::Request::Status {});
    if let Err(e @ crate::control::client::ClientError::OtherRun { .. }) = &asked {
        eprintln!("ralph: {e}");
    }
    let live = asked.ok().and_then(|r| r.live);
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
    /// The directory holds another run than the one registered (a copy, another
    /// project in its place), and why: the watchdog leaves it, `--prune` removes the
    /// entry.
    other_run: Option<String>,
    status: String,
    phase: Option<String>,
    iteration: Option<u32>,
    agent: Option<String>,
    /// RFC 3339, from the run's journal.
    last_activity: Option<String>,
    /// Resumes by `ralph watch` since the run last stopped cleanly.
    restarts: u32,
    run_id: String,
    /// A fleet's supervisor ("fleet: 3 task(s), 1 running, 2 finished") or one of
    /// its tasks ("fleet task a of /repo").
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
    let boot = lock::boot_id();
    let mut rows = Vec::new();
    for entry in entries {
        let row = row(&reg, &entry, &boot);
        let gone = match (&row.other_run, row.stale) {
            (_, true) => Some("directory gone".to_string()),
            (Some(why), false) => Some(format!("its run is not there any more: {why}")),
            (None, false) => None,
        };
        if let Some(why) = gone.filter(|_| prune) {
            registry::remove(&reg, &entry)
                .map_err(|e| RalphError::io(format!("cannot remove the entry of {}", entry.dir.display()), e))?;
            eprintln!("removed the entry of {} ({why})", entry.dir.display());
            continue;
        }
        rows.push(row);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| RalphError::Internal(e.to_string()))?);
        return Ok(crate::exit::DONE);
    }
    if rows.is_empty() {
        println!("no registered runs in {}", reg.display());
    }
    rows.iter().for_each(|r| println!("{}", line(r)));
    Ok(crate::exit::DONE)
}

/// What `status --all` shows of one entry: the run found in its directory now.
fn row(reg: &Path, entry: &crate::state::registry::Entry, boot: &str) -> Row {
    let stale = !entry.dir.is_dir();
    if entry.fleet_supervisor() {
        return fleet_row(reg, entry, stale);
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
    let live = lock::is_held(&entry.dir.join(".agent").join("ralph.lock"));
    let status = cp.as_ref().map_or(entry.status, |c| c.status).as_str().to_string();
    let identity = crate::state::identity::Identity::of(&entry.dir).map_err(|e| e.to_string());
    let found_run = cp.as_ref().map(|c| c.run_id.as_str());
    let other_run = (!stale).then(|| entry.matches(found_run, &identity, boot).err()).flatten();
    Row {
        dir: entry.dir.display().to_string(),
        stale,
        other_run: other_run.map(|why| why.to_string()),
        status: if live { format!("{status} (live)") } else { status },
        phase: pos.map(|p| p.phase_name.clone()),
        iteration: pos.map(|p| p.iteration),
        agent,
        last_activity,
        restarts: crate::state::registry::read_watch(reg, &entry.stem()).restarts,
        run_id: cp.as_ref().map_or(entry.run_id.clone(), |c| c.run_id.clone()),
        fleet: entry
            .fleet
            .as_ref()
            .and_then(|f| Some(format!("fleet task {} of {}", f.task.as_deref()?, f.repo.display()))),
    }
}

/// A fleet's supervisor, as `status --all` shows it: the fleet's state and its tasks.
fn fleet_row(registry: &Path, entry: &crate::state::registry::Entry, stale: bool) -> Row {
    let dir = crate::fleet::paths::fleet_dir(&entry.dir);
    let fleet = crate::fleet::state::read(&dir.join("fleet.json")).ok().flatten();
    let live = lock::is_held(&dir.join("fleet.lock"));
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
        other_run: None,
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

/// One row of `status --all` as text.
fn line(r: &Row) -> String {
    let place = match (&r.phase, r.iteration) {
        (Some(p), Some(i)) => format!("phase {p}, iteration {i}"),
        _ => "no checkpoint".to_string(),
    };
    let place = match (&r.fleet, r.phase.is_some()) {
        (Some(f), true) => format!("{f}, {place}"),
        (Some(f), false) => f.clone(),
        (None, _) => place,
    };
    let agent = r.agent.as_ref().map(|a| format!(", agent {a}")).unwrap_or_default();
    let restarts = if r.restarts > 0 { format!(", {} restart(s) by ralph watch", r.restarts) } else { String::new() };
    let flag = match (&r.other_run, r.stale) {
        (_, true) => " [stale: directory gone; `ralph status --prune` removes it]".to_string(),
        (Some(why), false) => {
            format!(" [not the registered run: {why}; ralph watch leaves it; `ralph status --prune` removes the entry]")
        }
        (None, false) => String::new(),
    };
    format!(
        "{}  {}  {place}{agent}{restarts}  last activity {}{flag}",
        r.dir,
        r.status,
        r.last_activity.as_deref().unwrap_or("unknown")
    )
}

//! `ralph status --all [--json] [--prune]`: every run in the run registry, as found
//! in its directory now, with the watchdog's last decision about it and when it
//! will try again; the watchdog's hold first. `--prune` removes the entries whose
//! directory is gone or now holds another run.

use std::fmt::Write as _;
use std::path::Path;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::error::RalphError;
use crate::state::lock;
use crate::state::registry::{self, Entry};
use crate::text::clock;
use crate::watch::book::{self, Decisions};
use crate::watch::words::{Again, Word};

/// One registered run, as `status --all` shows it.
#[derive(Debug, Default, serde::Serialize)]
struct Row {
    dir: String,
    /// The directory is gone: `--prune` removes the entry.
    stale: bool,
    /// The directory holds another run than the one registered (a copy, another
    /// project in its place), and why: the watchdog leaves it, `--prune` removes the
    /// entry.
    other_run: Option<String>,
    status: String,
    /// A ralph holds the run's lock now.
    live: bool,
    phase: Option<String>,
    iteration: Option<u32>,
    /// The agent of the attempt in flight, else the one the run continues with.
    agent: Option<String>,
    /// RFC 3339: the run's journal or checkpoint last written.
    last_activity: Option<String>,
    /// Resumes by `ralph watch` since the run last stopped cleanly.
    restarts: u32,
    run_id: String,
    /// The watchdog's last decision about the run; `null` before its first pass.
    watch: Option<Watch>,
    /// A fleet's supervisor ("fleet: 3 task(s), 1 running, 2 finished") or one of
    /// its tasks ("fleet task a of /repo").
    #[serde(skip_serializing_if = "Option::is_none")]
    fleet: Option<String>,
}

/// The watchdog's last decision about a run.
#[derive(Debug, serde::Serialize)]
struct Watch {
    decision: Word,
    reason: String,
    /// RFC 3339: since when this has been the decision.
    since: String,
    /// When it will look at resuming the run again.
    next: Option<Again>,
    /// `ralph watch --hold` is in force.
    held: bool,
}

/// `ralph status --all [--json] [--prune]`.
pub(crate) fn main(json: bool, prune: bool) -> Result<i32, RalphError> {
    let reg = crate::watch::registry()?;
    let (entries, warnings) = registry::read_all(&reg);
    for warning in warnings {
        eprintln!("ralph: {warning}");
    }
    let boot = lock::boot_id();
    let (decisions, hold) = (Decisions::load(&reg), book::hold(&reg));
    let mut rows = Vec::new();
    for entry in entries {
        let row = row(&reg, &entry, &boot, &decisions, hold.is_some());
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
    let (tz, now) = (crate::report::zone(), Timestamp::now());
    if let Some(hold) = &hold {
        println!(
            "ralph watch is on hold since {}: it resumes nothing until `ralph watch --release`\n",
            clock::stamp(&hold.since, &tz)
        );
    }
    if rows.is_empty() {
        println!("no registered runs in {}", reg.display());
    }
    let blocks: Vec<String> = rows.iter().map(|r| block(r, &tz, now)).collect();
    print!("{}", blocks.join("\n"));
    Ok(crate::exit::DONE)
}

/// What `status --all` shows of one entry: the run found in its directory now (a
/// fleet's supervisor: the fleet's state and its tasks).
fn row(reg: &Path, entry: &Entry, boot: &str, decisions: &Decisions, held: bool) -> Row {
    let found = Row {
        dir: entry.dir.display().to_string(),
        stale: !entry.dir.is_dir(),
        last_activity: crate::watch::last_active(entry)
            .and_then(|t| Timestamp::from_second(t).ok())
            .map(|t| t.to_string()),
        restarts: registry::read_watch(reg, &entry.stem()).restarts,
        watch: decisions.get(&book::decided_about(entry)).map(|r| Watch {
            decision: r.decision.word,
            reason: r.decision.reason.clone(),
            since: r.since.clone(),
            next: r.decision.next,
            held,
        }),
        ..Row::default()
    };
    if entry.fleet_supervisor() {
        let paths = crate::fleet::paths::Paths::new(&entry.dir);
        let fleet = crate::fleet::state::read(&paths.state).ok().flatten();
        let counts = fleet.as_ref().map(|f| {
            let mut by_state = std::collections::BTreeMap::new();
            f.tasks.values().for_each(|t| *by_state.entry(t.state.into_str()).or_insert(0) += 1);
            let list: Vec<String> = by_state.iter().map(|(s, n)| format!("{n} {s}")).collect();
            format!("fleet: {} task(s), {}", f.tasks.len(), list.join(", "))
        });
        return Row {
            status: fleet.as_ref().map_or("finished (archived)", |f| f.status.into_str()).to_string(),
            live: lock::is_held(&paths.lock),
            run_id: fleet.map_or(entry.run_id.clone(), |f| f.fleet_id),
            fleet: Some(counts.unwrap_or_else(|| "fleet".to_string())),
            ..found
        };
    }
    let path = entry.dir.join(".agent").join("checkpoint.json");
    let cp = crate::state::format::read_newest(&path).ok().flatten().map(|newest| newest.checkpoint);
    let pos = cp.as_ref().map(|c| &c.progress.position);
    let agent = cp.as_ref().and_then(|c| {
        let next = c.progress.position.chain.get(c.progress.position.agent_index).map(|a| a.name.clone());
        c.in_flight.as_ref().map(|f| f.agent.clone()).or(next)
    });
    let identity = crate::state::identity_now::of(&entry.dir).map_err(|e| e.to_string());
    let found_run = cp.as_ref().map(|c| c.run_id.as_str());
    let other_run = (!found.stale).then(|| entry.matches(found_run, &identity, boot).err()).flatten();
    Row {
        other_run: other_run.map(|why| why.to_string()),
        status: cp.as_ref().map_or(entry.status, |c| c.status).into_str().to_string(),
        live: lock::is_held(&entry.dir.join(".agent").join("ralph.lock")),
        phase: pos.map(|p| p.phase_name.clone()),
        iteration: pos.map(|p| p.iteration),
        agent,
        run_id: cp.as_ref().map_or(entry.run_id.clone(), |c| c.run_id.clone()),
        fleet: entry
            .fleet
            .as_ref()
            .and_then(|f| Some(format!("fleet task {} of {}", f.task.as_deref()?, f.repo.display()))),
        ..found
    }
}

/// One run of `status --all` as text: its directory, then what it is and what the
/// watchdog makes of it.
fn block(r: &Row, tz: &TimeZone, now: Timestamp) -> String {
    let mut s = format!("{}\n", r.dir);
    let status = if r.live { format!("{} (a ralph is running it)", r.status) } else { r.status.clone() };
    let place = match (&r.phase, r.iteration) {
        (Some(p), Some(i)) => format!("phase {p}, iteration {i}"),
        _ => "no checkpoint".to_string(),
    };
    let place = match (&r.fleet, r.phase.is_some()) {
        (Some(f), true) => format!("{f}, {place}"),
        (Some(f), false) => f.clone(),
        (None, _) => place,
    };
    let agent = r.agent.as_deref().unwrap_or("none yet");
    let restarts = match r.restarts {
        1 => "1 restart by ralph watch".to_string(),
        n => format!("{n} restarts by ralph watch"),
    };
    let _ = writeln!(s, "  {status} · run {} · {place} · agent {agent} · {restarts}", r.run_id);
    let last = r.last_activity.as_deref().and_then(|t| t.parse::<Timestamp>().ok());
    let _ =
        writeln!(s, "  last activity: {}", last.map_or_else(|| "unknown".into(), |t| clock::stamp_and_age(t, now, tz)));
    if r.stale {
        let _ = writeln!(s, "  the directory is gone: `ralph status --prune` removes the entry");
    } else if let Some(why) = &r.other_run {
        let _ = writeln!(
            s,
            "  not the registered run: {why}; ralph watch leaves it; `ralph status --prune` removes the entry"
        );
    }
    match &r.watch {
        None => {
            let _ = writeln!(s, "  ralph watch: no decision yet (the watchdog has not passed since it registered)");
        }
        Some(w) => {
            let decision = crate::watch::words::Decision::new(w.decision, w.reason.clone(), w.next);
            let since = clock::stamp(&w.since, tz);
            let _ = writeln!(s, "  ralph watch: {} (since {since})", decision.render(tz));
            if let Some(next) = decision.next_attempt(tz) {
                let _ = writeln!(s, "  next attempt: {next}");
            }
        }
    }
    s
}

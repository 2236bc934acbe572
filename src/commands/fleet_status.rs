//! `ralph fleet status [--json]`: one row per task, read from files only (the fleet's
//! state, each task's checkpoint and journal), so it answers the same whether a
//! supervisor runs or not, and in bounded time: nothing is measured here (a
//! worktree's disk use is the one its supervisor recorded when the task's ralph last
//! ended).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::error::RalphError;
use crate::fleet::state::{Fleet, Task};

/// One task, as `status` shows it.
#[derive(Debug, Serialize)]
struct Row {
    task: String,
    state: String,
    phase: Option<String>,
    iteration: Option<u32>,
    agent: Option<String>,
    /// RFC 3339, from the task's journal.
    last_activity: Option<String>,
    cost_usd: f64,
    iterations: u32,
    disk_bytes: Option<u64>,
    branch: String,
    worktree: Option<String>,
    reason: Option<String>,
    log: String,
}

pub(crate) fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    let found = super::fleet_find::find(dir)?;
    let current = crate::fleet::setup::read_state(&found.paths.state)?;
    // A finished fleet is archived: status shows the last one until a new one starts.
    let last_archived = || crate::fleet::ops::archived(&found.paths.archive).pop();
    let Some(fleet) = current.or_else(|| crate::fleet::state::read(&last_archived()?).ok().flatten()) else {
        if json {
            println!("{{\"fleet\": null, \"tasks\": []}}");
        } else {
            println!("no fleet in {}; `ralph fleet` starts one", found.top.display());
        }
        return Ok(crate::exit::DONE);
    };
    let live = crate::state::lock::is_held(&found.paths.lock);
    let rows: Vec<Row> = fleet.tasks.iter().map(|(name, t)| row(name, t, &found.paths.task_log(name))).collect();
    let queue = queue(&fleet);
    let onto_base = onto_base(&found.top, &fleet);
    if json {
        let value = serde_json::json!({
            "fleet": {
                "id": fleet.fleet_id,
                "status": fleet.status.into_str(),
                "live": live,
                "repo": fleet.repo,
                "base": fleet.base,
                "base_branch": fleet.base_branch,
                "into": fleet.into,
                "worktrees": fleet.worktrees,
                "cost_usd": crate::fleet::core::spent(&fleet),
                "no_land": fleet.no_land,
                "landing": fleet.landing.as_ref().map(|l| serde_json::json!({"task": l.task, "step": l.step.into_str()})),
                "into_onto_base": onto_base.as_ref().map(|b| serde_json::json!({
                    "base_branch": b.branch, "clean": b.conflicts.is_empty(), "conflicts": b.conflicts,
                })),
            },
            "queue": queue,
            "tasks": rows,
        });
        println!("{}", serde_json::to_string_pretty(&value).map_err(|e| RalphError::Internal(e.to_string()))?);
        return Ok(crate::exit::DONE);
    }
    let mut text = describe(&fleet, live, &rows);
    text.push_str(&describe_queue(&fleet, &queue, onto_base.as_ref()));
    print!("{}", crate::secrets::redact(&text));
    Ok(crate::exit::DONE)
}

fn row(name: &str, t: &Task, log: &Path) -> Row {
    let worktree = t.worktree.as_deref().filter(|w| w.exists());
    let path = worktree.map(|w| w.join(".agent").join("checkpoint.json"));
    let cp = path.and_then(|p| crate::state::format::read_newest(&p).ok().flatten()).map(|n| n.checkpoint);
    let journal = worktree.map(|w| w.join(".agent").join(crate::state::journal::FILE));
    let last_activity = journal
        .and_then(|j| std::fs::metadata(j).and_then(|m| m.modified()).ok())
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .map(|t| t.to_string());
    let pos = cp.as_ref().map(|c| &c.progress.position);
    Row {
        task: name.to_string(),
        state: crate::fleet::core::shown_state(t, cp.as_ref().map(|c| c.status)).to_string(),
        phase: pos.map(|p| p.phase_name.clone()),
        iteration: pos.map(|p| p.iteration),
        agent: cp.as_ref().and_then(|c| c.in_flight.as_ref().map(|f| f.agent.clone())),
        last_activity,
        cost_usd: cp.as_ref().map_or(t.cost_usd, |c| c.usage.cost_usd),
        iterations: cp.as_ref().map_or(t.iterations, |c| c.progress.counters.iterations_done),
        disk_bytes: t.disk_bytes,
        branch: t.branch.clone(),
        worktree: t.worktree.as_ref().map(|w| w.display().to_string()),
        reason: t.reason.clone().or_else(|| cp.as_ref().and_then(|c| c.stop_reason.clone())),
        log: log.display().to_string(),
    }
}

fn describe(fleet: &Fleet, live: bool, rows: &[Row]) -> String {
    let mut out = format!(
        "fleet {} ({}{}) in {}\nbase {} ({}), tasks land on {}\n",
        fleet.fleet_id,
        fleet.status.into_str(),
        if live { ", supervisor running" } else { "" },
        fleet.repo.display(),
        crate::text::short(&fleet.base),
        fleet.base_branch.as_deref().unwrap_or("detached"),
        fleet.into,
    );
    if let Some(reason) = &fleet.stop_reason {
        let _ = writeln!(out, "why: {reason}");
    }
    let tz = crate::report::zone();
    for r in rows {
        let place = match (&r.phase, r.iteration) {
            (Some(p), Some(i)) => format!("{p} {i}"),
            _ => "-".to_string(),
        };
        let at = r
            .last_activity
            .as_deref()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map_or("-".to_string(), |t| crate::text::clock::hms(t, &tz));
        let disk = r.disk_bytes.map_or("-".to_string(), |b| crate::config::ByteSize(b / 1024 * 1024).to_string());
        let _ = writeln!(
            out,
            "  {:<16} {:<9} {:<14} {:<8} {:<8} ${:<7.2} {:<8} {}",
            r.task,
            r.state,
            place,
            r.agent.as_deref().unwrap_or("-"),
            at,
            r.cost_usd,
            disk,
            r.branch
        );
        if let Some(reason) = &r.reason {
            let _ = writeln!(out, "    why: {reason}");
        }
    }
    out
}

/// A task in the merge queue, as `status` shows it.
#[derive(Debug, Serialize)]
struct Queued {
    task: String,
    /// "landing" for the one under way, else "waiting".
    state: &'static str,
    /// When it should have landed (RFC 3339), from the mean landing so far.
    estimate: String,
}

fn queue(fleet: &Fleet) -> Vec<Queued> {
    let now = jiff::Timestamp::now();
    crate::fleet::queue::order(fleet)
        .into_iter()
        .enumerate()
        .map(|(i, task)| {
            let wait = crate::fleet::queue::estimate(i, fleet.landings, fleet.landing_secs);
            let at = now.checked_add(jiff::SignedDuration::try_from(wait).unwrap_or_default()).unwrap_or(now);
            let landing = fleet.landing.as_ref().is_some_and(|l| l.task == task);
            Queued { task, state: if landing { "landing" } else { "waiting" }, estimate: at.to_string() }
        })
        .collect()
}

/// Whether the fleet's branch still merges cleanly onto the base branch's tip now.
struct OntoBase {
    branch: String,
    conflicts: Vec<String>,
}

fn onto_base(top: &Path, fleet: &Fleet) -> Option<OntoBase> {
    let branch = fleet.base_branch.clone()?;
    let repo = crate::git::repo::Repo::at(top);
    let conflicts = crate::fleet::rebase::conflicts_between(&repo, &branch, &fleet.into).ok()?;
    Some(OntoBase { branch, conflicts })
}

fn describe_queue(fleet: &Fleet, queue: &[Queued], base: Option<&OntoBase>) -> String {
    let mut out = String::new();
    let tz = crate::report::zone();
    if fleet.no_land {
        out.push_str("merge queue: off (--no-land): `ralph fleet land TASK` lands a finished task\n");
    } else if !queue.is_empty() {
        let items: Vec<String> = queue
            .iter()
            .map(|q| {
                let at =
                    q.estimate.parse::<jiff::Timestamp>().map(|t| crate::text::clock::hms(t, &tz)).unwrap_or_default();
                format!("{} ({}, ~{at})", q.task, q.state)
            })
            .collect();
        let _ = writeln!(out, "merge queue: {}", items.join(", "));
    }
    let _ = match base {
        Some(b) if b.conflicts.is_empty() => writeln!(out, "{} merges cleanly onto {}'s tip", fleet.into, b.branch),
        Some(b) => {
            writeln!(
                out,
                "{} no longer merges cleanly onto {}: {} conflict",
                fleet.into,
                b.branch,
                b.conflicts.join(", ")
            )
        }
        None => Ok(()),
    };
    out
}

//! `ralph --inspect-checkpoint [--json]`: what a resume would continue. Reads only;
//! never writes, moves or locks anything.

use std::fmt::Write;
use std::path::Path;

use crate::error::RalphError;
use crate::secrets::{redact, redact_json};
use crate::state::checkpoint::Checkpoint;
use crate::state::format;
use crate::state::lock::{self, LockInfo};
use crate::text::{labelled, plural};

/// Reads the checkpoint of the project in `dir`, without changing anything. The
/// same reader and the same refusals as `--resume`, so the two always agree.
pub(crate) fn read(dir: &Path) -> Result<Option<Checkpoint>, RalphError> {
    let path = dir.join(".agent").join("checkpoint.json");
    let newest = format::read_newest(&path);
    newest.map(|found| found.map(|n| n.checkpoint)).map_err(|e| crate::error::RalphError::checkpoint(&path, e))
}

pub(crate) fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    let cp = read(dir)?;
    let holder = live_holder(dir);
    if json {
        println!("{}", to_json(dir, cp.as_ref(), holder.as_ref(), None)?);
        return Ok(crate::exit::DONE);
    }
    match &cp {
        None => println!("no checkpoint in {}: `ralph` starts a new run", dir.join(".agent").display()),
        Some(cp) => {
            print!("{}", redact(&describe_in(cp, holder.is_some(), &crate::report::zone())));
            print!("{}", redact(&since(dir, cp)));
        }
    }
    Ok(crate::exit::DONE)
}

/// What changed since the checkpoint (config, goal, phases, agents) and what a
/// resume will therefore do.
fn since(dir: &Path, cp: &Checkpoint) -> String {
    let loaded = match crate::config::file::find(dir, None).and_then(|path| crate::config::file::load(&path)) {
        Ok(loaded) => loaded,
        Err(e) => return format!("  since the run started: cannot read the current config ({e})\n"),
    };
    let goal = dir.join(&loaded.config.general.prompt);
    let checksum = match std::fs::read(&goal) {
        Ok(bytes) => crate::config::checksum(&bytes),
        Err(e) => return format!("  since the run started: cannot read the goal file {} ({e})\n", goal.display()),
    };
    // A resume first takes the session of an attempt ralph lost track of.
    let mut cp = cp.clone();
    if let Some(session) = cp.in_flight.as_ref().and_then(|f| f.session.clone()) {
        cp.progress.resume_session = Some(session);
    }
    let plan = crate::step::start::plan(&cp, &loaded, &checksum);
    if plan.changes.is_empty() {
        return "  since the run started: nothing changed (config, goal, phases and agents are the same)\n".into();
    }
    let mut s = String::from("  since the run started:\n");
    for change in &plan.changes {
        let _ = writeln!(s, "    {change}");
    }
    if let Some(phase) = plan.phase.and_then(|i| loaded.phases.get(i)) {
        let agent = phase.chain.get(plan.agent_index).map_or("", String::as_str);
        let session = if plan.keep_session { "its session" } else { "a fresh session" };
        let _ = writeln!(s, "  resume therefore continues with agent {agent} in {session}");
    }
    s
}

/// The ralph that holds this directory's lock now (the kernel's flock: a lock record
/// copied with the project names a live pid that is not this directory's run).
pub(crate) fn live_holder(dir: &Path) -> Option<LockInfo> {
    lock::holder(&dir.join(".agent").join("ralph.lock"))
}

/// The one JSON shape of `status --json` and `--inspect-checkpoint --json`:
/// `{"dir", "live", "pid", "checkpoint", "live_state"}`, the checkpoint `null` when there is
/// none, `live_state` what a running ralph answered over its control socket (`status`).
pub(crate) fn to_json(
    dir: &Path,
    cp: Option<&Checkpoint>,
    holder: Option<&LockInfo>,
    live_state: Option<&crate::control::Live>,
) -> Result<String, RalphError> {
    let mut value = serde_json::json!({
        "dir": dir.display().to_string(),
        "live": holder.is_some() || live_state.is_some(),
        "pid": live_state.map(|l| l.pid).or(holder.map(|h| h.pid)),
        "checkpoint": cp,
        "live_state": live_state,
    });
    redact_json(&mut value);
    serde_json::to_string_pretty(&value).map_err(|e| RalphError::Internal(e.to_string()))
}

/// What `--resume` would do with the run.
fn what_resume_does(cp: &Checkpoint, live: bool) -> String {
    match (&cp.progress.resume_session, &cp.in_flight) {
        _ if live => "not now, a ralph is running this run".to_string(),
        _ if !cp.status.unfinished() => {
            format!("nothing to resume, the run is {}; `ralph` starts a new run", cp.status.into_str())
        }
        (Some(session), _) => format!("continues session {session}"),
        (None, Some(f)) if f.session.is_some() => "continues the in-flight session".to_string(),
        _ => "starts a fresh session".to_string(),
    }
}

/// The agent a run is at, by name, with its place in the chain when the chain has
/// more than one, and the round through the chain after the first.
fn in_chain(pos: &crate::workflow::progress::Position) -> String {
    let name = pos.chain.get(pos.agent_index).map_or_else(|| format!("#{}", pos.agent_index + 1), |a| a.name.clone());
    let place = match pos.chain.len() {
        0 | 1 => String::new(),
        n => format!(" ({} of the {n} of its chain)", pos.agent_index + 1),
    };
    let round = if pos.cycle > 1 { format!(", round {} through the chain", pos.cycle) } else { String::new() };
    format!("agent {name}{place}{round}")
}

/// The run's status as a person reads it: a run no ralph runs whose checkpoint says
/// `running` ended without a clean stop.
fn standing(cp: &Checkpoint, live: bool) -> String {
    use crate::state::checkpoint::Status;
    match cp.status {
        Status::Running | Status::Waiting if !live && !cp.clean_stop => {
            "interrupted: no ralph is running it (it ended without a clean stop: killed, crashed, or the machine \
             restarted)"
                .to_string()
        }
        status => status.into_str().to_string(),
    }
}

/// A human description of where a run stands and what `--resume` would do, its
/// times in `tz`. `live`: a ralph is running it now (so "no clean stop" is no news).
pub(crate) fn describe_in(cp: &Checkpoint, live: bool, tz: &jiff::tz::TimeZone) -> String {
    let stamp = |t: jiff::Timestamp| crate::text::clock::stamp(&t.to_string(), tz);
    let mut s = String::new();
    let p = &cp.progress;
    let pos = &p.position;
    let _ = writeln!(s, "run {} — {}", cp.run_id, standing(cp, live));
    let _ = writeln!(s, "  started {}, last written {}", stamp(cp.started_at), stamp(cp.updated_at));
    let pass = pos.passes.map(|n| format!(", review/fix pass {} of {n}", pos.pass)).unwrap_or_default();
    let _ = writeln!(s, "  position: phase {}{pass}, iteration {}, {}", pos.phase_name, pos.iteration, in_chain(pos));
    labelled(&mut s, "  last review", p.review.as_ref().map(|verdict| verdict.describe()));
    if let Some(from) = &p.from {
        let _ = writeln!(s, "  started at phase {} (--from)", from.phase);
    }
    let unix = |secs: i64| jiff::Timestamp::from_second(secs).map(stamp).unwrap_or_default();
    labelled(&mut s, "  waiting", p.rate_limit_until.map(|at| format!("for a rate-limit reset at {}", unix(at))));
    labelled(&mut s, "  waiting", p.offline_since.map(|since| format!("offline since {}", unix(since))));
    if let Some(f) = &cp.in_flight {
        let session = f.session.as_deref().unwrap_or("not yet known");
        let _ = writeln!(s, "  in flight: attempt {} of agent {} (session {session})", f.attempt, f.agent);
    }
    let _ = writeln!(s, "  resume: {}", what_resume_does(cp, live));
    let c = &p.counters;
    let _ = writeln!(
        s,
        "  counters: {}, {} done, {} of the current agent in this iteration",
        plural(c.attempts, "attempt"),
        plural(c.iterations_done, "iteration"),
        plural(c.agent_failures, "failure")
    );
    if !c.failures.is_empty() {
        let failed = c.failures.iter().map(|(k, n)| format!("{n} {}", crate::report::words::category(*k)));
        let _ = writeln!(s, "  failures: {}", failed.collect::<Vec<_>>().join(", "));
    }
    if let Some(e) = &cp.last_error {
        let _ = writeln!(s, "  last error: {} (agent {}, at {})", e.classification.reason, e.agent, stamp(e.at));
        labelled(&mut s, "  its log", e.log.as_ref());
    }
    let phase = pos.phase_name.as_str();
    labelled(&mut s, "  stopped because", cp.stop_reason.as_ref().map(|r| crate::report::words::stop_reason(r, phase)));
    let sender = cp.stop_sender.as_ref().map(|s| format!(" from {}", s.describe())).unwrap_or_default();
    labelled(&mut s, "  stopped by", cp.stop_cause.map(|cause| format!("{}{sender}", cause.signal_name())));
    labelled(&mut s, "  usage", cp.usage.describe());
    if let Some(git) = &cp.git {
        s.push_str(&crate::report::summary::commits(git, 0).replace(" (0 in this session)", ""));
    }
    let active = humantime::format_duration(std::time::Duration::from_secs(cp.elapsed_secs as u64));
    let _ = writeln!(s, "  active time: {active}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::checkpoint::{InFlight, Status};
    use crate::testkit::checkpoint;

    #[test]
    fn a_paused_run_says_what_resume_continues() {
        let mut cp = checkpoint(Status::Paused);
        cp.progress.rate_limit_until = Some(1_767_229_200);
        cp.progress.resume_session = Some("sess-1".into());
        insta::assert_snapshot!(describe_in(&cp, false, &jiff::tz::TimeZone::UTC));
    }

    #[test]
    fn a_live_run_is_not_called_unclean_nor_promised_a_resume() {
        let mut cp = checkpoint(Status::Running);
        cp.clean_stop = false;
        cp.in_flight = Some(InFlight {
            agent: "claude".into(),
            attempt: 5,
            session: Some("sess-2".into()),
            started_at: "2026-01-01T00:01:10Z".parse().unwrap(),
            tool: None,
        });
        let text = describe_in(&cp, true, &jiff::tz::TimeZone::UTC);
        assert!(!text.contains("no clean stop"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_completed_run_promises_no_resume() {
        let mut cp = checkpoint(Status::Completed);
        cp.progress.resume_session = Some("sess-1".into());
        let text = describe_in(&cp, false, &jiff::tz::TimeZone::UTC);
        assert!(text.contains("nothing to resume"), "{text}");
        assert!(!text.contains("continues session"), "{text}");
    }
}

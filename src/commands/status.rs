//! `ralph status [--json]`: the run in a directory, from its checkpoint and lock
//! (live when a ralph holds the lock); `--all` is [`super::status_all`].

use std::fmt::Write as _;
use std::path::Path;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::error::RalphError;
use crate::outcome::RunEnd;
use crate::recovery::policy::Cap;
use crate::secrets::redact;
use crate::signal::StopCause;
use crate::state::checkpoint::{Checkpoint, Status};
use crate::text::{clock, labelled};

pub(crate) fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    // A running ralph answers for itself; otherwise the checkpoint tells. A socket
    // recorded here that serves another run (this directory is a copy) is said.
    let asked = crate::control::client::call_run(dir, &crate::control::Request::Status {});
    if let Err(e @ crate::control::client::ClientError::OtherRun { .. }) = &asked {
        eprintln!("ralph: {e}");
    }
    let live = asked.ok().and_then(|r| r.live);
    if let Some(live) = live.as_ref().filter(|_| !json) {
        print!("{}", describe_live(live, jiff::Timestamp::now(), &crate::report::zone()));
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
            let described = super::inspect::describe_in(cp, true, &crate::report::zone());
            print!("live: ralph pid {} on {}\n{}", h.pid, h.host, redact(&described));
        }
        (Some(cp), None) => {
            let mut described = super::inspect::describe_in(cp, false, &crate::report::zone());
            labelled(&mut described, "  next", next(dir, cp));
            print!("{}", redact(&described));
        }
    }
    Ok(crate::exit::DONE)
}

/// What to do about a run no ralph runs, as the summary of its end said it (the
/// config key of the cap that stopped it, the credential to set, `ralph --resume`);
/// `None` for a completed run.
pub(crate) fn next(dir: &Path, cp: &Checkpoint) -> Option<String> {
    let reason = || cp.stop_reason.clone().unwrap_or_default();
    let end = match cp.status {
        Status::Completed => return None,
        Status::Failed => RunEnd::Failed(reason()),
        Status::Blocked => RunEnd::Blocked(reason()),
        Status::Paused | Status::Interrupted => RunEnd::Stopped(cp.stop_cause.unwrap_or(StopCause::User)),
        // Ended without a clean stop: a crash, a kill, a reboot.
        Status::Running | Status::Waiting => {
            return Some(
                "`ralph --resume` continues it (the watchdog, `ralph watch`, does it by itself if it runs)".into(),
            );
        }
    };
    let loaded = crate::config::file::find(dir, None).and_then(|p| crate::config::file::load(&p)).ok();
    let (config, path) = match &loaded {
        Some(loaded) => (loaded.config.clone(), loaded.path.clone()),
        None => (crate::config::Config::default(), std::path::PathBuf::from(&cp.config_path)),
    };
    let cap = cp.stop_reason.as_deref().and_then(Cap::of_reason);
    crate::report::next_step(&end, cap, cp.last_error.as_ref(), &config, &path, &cp.progress.position.phase_name)
}

/// The live state, as `ralph status` prints it, its times in `tz` as seen at `now`.
fn describe_live(live: &crate::control::Live, now: Timestamp, tz: &TimeZone) -> String {
    let ago = |at: Option<i64>| at.map(|at| clock::ago(now.as_second() - at));
    let mut out = format!(
        "live: ralph pid {}, run {}\nstatus: {}\nphase: {}, iteration {} of {}\n",
        live.pid, live.run_id, live.status, live.phase, live.iteration, live.iterations
    );
    let since =
        |at: i64| clock::countdown(std::time::Duration::from_secs(u64::try_from(now.as_second() - at).unwrap_or(0)));
    let attempt = match (live.attempt, live.attempt_started_at) {
        (0, _) => "no attempt yet".to_string(),
        (n, Some(at)) if live.waiting_for.is_none() => format!("attempt {n}, running for {}", since(at)),
        (n, _) => format!("attempt {n}"),
    };
    let _ = writeln!(out, "agent: {}, {attempt}", live.agent);
    if live.attempt > 0 && live.waiting_for.is_none() {
        let printed = ago(live.agent_output_at).unwrap_or_else(|| "nothing yet".to_string());
        let _ = writeln!(out, "the agent last printed: {printed}");
    }
    if let Some(what) = &live.waiting_for {
        let until = live.waiting_until.and_then(|at| Timestamp::from_second(at).ok());
        let until = until.map(|at| {
            let left = std::time::Duration::from_secs(u64::try_from(at.as_second() - now.as_second()).unwrap_or(0));
            format!(" until {} (in {})", clock::stamp_at(at, tz), clock::countdown(left))
        });
        let _ = writeln!(out, "waiting for {what}{}", until.unwrap_or_default());
    }
    // The start of the attempt is said above.
    if let (Some(kind), Some(age)) =
        (live.last_event.as_ref().filter(|k| *k != "attempt_started"), ago(live.last_event_at))
    {
        let _ = writeln!(out, "last step: {} {age}", kind.replace('_', " "));
    }
    if live.stop_requested {
        out.push_str("stopping after this iteration (ralph stop)\n");
    }
    labelled(&mut out, "agent's last checkpoint", live.last_checkpoint.as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_state_reads_in_local_time_and_ages() {
        let now: Timestamp = "2026-12-01T08:10:00Z".parse().expect("time");
        let at = |t: &str| t.parse::<Timestamp>().ok().map(|t| t.as_second());
        let mut live = crate::control::Live {
            run_id: "20261201T054329Z-12180".into(),
            pid: 4242,
            phase: "develop".into(),
            iteration: 2,
            iterations: 20,
            agent: "claude".into(),
            attempt: 3,
            status: "running".into(),
            attempt_started_at: at("2026-12-01T08:05:48Z"),
            agent_output_at: at("2026-12-01T08:09:48Z"),
            last_event: Some("attempt_started".into()),
            last_event_at: at("2026-12-01T08:05:48Z"),
            ..Default::default()
        };
        let tz = TimeZone::fixed(jiff::tz::offset(1));
        let running = describe_live(&live, now, &tz);
        (live.status, live.waiting_for, live.waiting_until) =
            ("waiting".into(), Some("the rate limit's reset".into()), at("2026-12-01T09:00:00Z"));
        insta::assert_snapshot!(format!("{running}---\n{}", describe_live(&live, now, &tz)));
    }
}

//! `ralph --inspect-checkpoint [--json]`: what a resume would continue. Reads only;
//! never writes, moves or locks anything.

use std::fmt::Write;
use std::path::Path;

use crate::error::RalphError;
use crate::state::checkpoint::Checkpoint;
use crate::state::store::{self, StoreError};

/// Reads the checkpoint of the project in `dir`, without changing anything.
pub fn read(dir: &Path) -> Result<Option<Checkpoint>, RalphError> {
    let path = dir.join(".agent").join("checkpoint.json");
    match store::load_json::<Checkpoint>(&path) {
        Ok(cp) => Ok(cp),
        Err(StoreError::Corrupt { message, .. }) => Err(RalphError::Usage(format!(
            "the checkpoint {} does not parse ({message}); `ralph --no-resume` sets it aside and starts fresh",
            path.display()
        ))),
        Err(StoreError::Io { path, source }) => Err(RalphError::io(format!("cannot read {}", path.display()), source)),
    }
}

pub fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    let Some(cp) = read(dir)? else {
        println!("no checkpoint in {}: `ralph` starts a new run", dir.join(".agent").display());
        return Ok(crate::exit::DONE);
    };
    if json {
        let mut value = serde_json::to_value(&cp).map_err(|e| RalphError::Usage(e.to_string()))?;
        crate::state::redact::redact_json(&mut value);
        let text = serde_json::to_string_pretty(&value).map_err(|e| RalphError::Usage(e.to_string()))?;
        println!("{text}");
    } else {
        print!("{}", crate::state::redact::redact(&describe(&cp)));
    }
    Ok(crate::exit::DONE)
}

/// A human description of where a run stands and what `--resume` would do.
pub fn describe(cp: &Checkpoint) -> String {
    let mut s = String::new();
    let p = &cp.progress;
    let pos = &p.position;
    let _ = writeln!(
        s,
        "run {} — {}{}",
        cp.run_id,
        cp.status.as_str(),
        if cp.clean_stop { "" } else { " (no clean stop)" }
    );
    let _ = writeln!(s, "  started {}, last written {}", cp.started_at, cp.updated_at);
    let _ = writeln!(
        s,
        "  position: phase {} (#{}), iteration {}, pass {}, agent #{} of the chain, cycle {}",
        pos.phase_name,
        pos.phase + 1,
        pos.iteration,
        pos.pass,
        pos.agent_index + 1,
        pos.cycle
    );
    if let Some(f) = &cp.in_flight {
        let _ = writeln!(
            s,
            "  in flight: attempt {} of agent {} (session {})",
            f.attempt,
            f.agent,
            f.session.as_deref().unwrap_or("not yet known")
        );
    }
    match (&p.resume_session, &cp.in_flight) {
        (Some(session), _) => {
            let _ = writeln!(s, "  resume: continues session {session}");
        }
        (None, Some(f)) if f.session.is_some() => {
            let _ = writeln!(s, "  resume: continues the in-flight session");
        }
        _ => {
            let _ = writeln!(s, "  resume: starts a fresh session");
        }
    }
    let c = &p.counters;
    let _ = writeln!(
        s,
        "  counters: {} attempts, {} iterations done, {} agent failures this iteration, {} fallovers",
        c.attempts, c.iterations_done, c.agent_failures, c.fallovers
    );
    if !c.failures.is_empty() {
        let _ = writeln!(s, "  failures: {}", crate::report::counts(&c.failures, |k| k.as_str()));
    }
    if let Some(e) = &cp.last_error {
        let _ = writeln!(
            s,
            "  last error: {} ({}, {}) from {} at {}",
            e.classification.reason,
            e.classification.category.as_str(),
            e.classification.rule,
            e.agent,
            e.at
        );
    }
    if let Some(reason) = &cp.stop_reason {
        let _ = writeln!(s, "  stopped because: {reason}");
    }
    if let Some(cause) = cp.stop_cause {
        let _ = writeln!(s, "  stopped by: {}", cause.signal_name());
    }
    if let Some(usage) = cp.usage.describe() {
        let _ = writeln!(s, "  usage: {usage}");
    }
    let _ = writeln!(
        s,
        "  active time: {}",
        humantime::format_duration(std::time::Duration::from_secs(cp.elapsed_secs as u64))
    );
    s
}

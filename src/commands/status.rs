//! `ralph status [--json]`: the run in a directory, from its checkpoint and lock:
//! live when a ralph holds the lock.

use std::path::Path;

use serde_json::json;

use crate::error::RalphError;
use crate::state::lock;
use crate::state::redact::{redact, redact_json};

pub fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    let cp = super::inspect::read(dir)?;
    let holder = lock::read_info(&dir.join(".agent").join("ralph.lock")).filter(|info| info.process_alive());
    if json {
        let value = json!({
            "dir": dir.display().to_string(),
            "live": holder.is_some(),
            "pid": holder.as_ref().map(|h| h.pid),
            "checkpoint": cp,
        });
        let mut value = value;
        redact_json(&mut value);
        println!("{}", serde_json::to_string_pretty(&value).map_err(|e| RalphError::Usage(e.to_string()))?);
        return Ok(crate::exit::DONE);
    }
    match (&cp, &holder) {
        (None, _) => println!("no run in {}", dir.display()),
        (Some(cp), Some(h)) => {
            print!("live: ralph pid {} on {}\n{}", h.pid, h.host, redact(&super::inspect::describe(cp)))
        }
        (Some(cp), None) => print!("{}", redact(&super::inspect::describe(cp))),
    }
    Ok(crate::exit::DONE)
}

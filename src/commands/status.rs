//! `ralph status [--json]`: the run in a directory, from its checkpoint and lock:
//! live when a ralph holds the lock.

use std::path::Path;

use crate::error::RalphError;

pub fn main(dir: &Path, json: bool) -> Result<i32, RalphError> {
    let cp = super::inspect::read(dir)?;
    let holder = super::inspect::live_holder(dir);
    if json {
        println!("{}", super::inspect::to_json(dir, cp.as_ref(), holder.as_ref())?);
        return Ok(crate::exit::DONE);
    }
    match (&cp, &holder) {
        (None, _) => println!("no run in {}", dir.display()),
        (Some(cp), Some(h)) => {
            print!("live: ralph pid {} on {}\n{}", h.pid, h.host, super::inspect::describe(cp, true));
        }
        (Some(cp), None) => print!("{}", super::inspect::describe(cp, false)),
    }
    Ok(crate::exit::DONE)
}

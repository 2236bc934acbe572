//! `ralph status [--json]`: the run in a directory, from its checkpoint and lock
//! (live when a ralph holds the lock); `--all` is [`super::status_all`].

use std::path::Path;

use crate::error::RalphError;
use crate::report::labelled;
use crate::state::redact::redact;

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

//! Running a workflow, the I/O shell around the pure step ([`crate::step`]):
//! [`setup`] turns the directory, the inputs (`crate::inputs` reads them) and any
//! checkpoint (fresh or resumed, as `step::start` decides) into a ready run (or a
//! precise error);
//! [`dispatch`] is the one loop that owns the run state, hands everything that
//! happens to the step and carries out its effects (`io`); [`attempt`] runs one
//! agent process. Around them, each carrying out what the step decided: the probe's
//! TCP connect ([`connect`]), the registry entry
//! (`registration`) and the control socket (`control`).

pub(crate) mod attempt;
mod checkpoint_file;
pub(crate) mod connect;
mod control;
pub(crate) mod dispatch;
mod io;
pub(crate) mod registration;
pub(crate) mod setup;
#[cfg(debug_assertions)]
mod test_hooks;

use crate::error::RalphError;

pub(crate) use crate::step::start::ResumeFlag;
pub(crate) use setup::Options;

pub(crate) use crate::outcome::RunEnd;

/// `ralph run`: set up, then dispatch until the workflow ends.
pub(crate) async fn run(options: Options) -> Result<RunEnd, RalphError> {
    // Orphans of agents (a daemon that called setsid) come back to ralph, which ends
    // them with their attempt; see `process::escaped`.
    if !crate::os::become_subreaper() {
        tracing::warn!("cannot become a child subreaper: escaped agent processes are found by their environment only");
    }
    match setup::prepare(&options).await? {
        setup::Prepared::Ready(ready, signals) => dispatch::run(*ready, signals).await,
        setup::Prepared::Settled(end) => Ok(end),
    }
}

//! `ralph clean [--keep N]`: prunes `.agent/logs/` by hand, as a run start does: the
//! newest `[logs] keep_runs` run directories stay (the checkpoint's run always), the
//! rest go. Checkpoints, archived ones included, and the journal are never touched.

use std::path::Path;

use crate::error::RalphError;
use crate::state::retention;

pub(crate) fn main(dir: &Path, config: Option<&Path>, keep: Option<u32>) -> Result<i32, RalphError> {
    let keep = match keep {
        Some(0) => return Err(RalphError::Usage("--keep must be at least 1".into())),
        Some(n) => n,
        // Without a config here, the default.
        None => match crate::inputs::find_config(dir, config) {
            Ok(path) => crate::inputs::load_config(&path)?.config.logs.keep_runs,
            Err(_) if config.is_none() => crate::config::Config::default().logs.keep_runs,
            Err(e) => return Err(e.into()),
        },
    };
    let current = crate::commands::inspect::read(dir).ok().flatten().map(|cp| cp.run_id);
    let logs = dir.join(".agent").join("logs");
    if std::fs::symlink_metadata(&logs).is_err() {
        println!("nothing to remove: {} has no logs (no run has written any here)", dir.display());
        return Ok(crate::exit::DONE);
    }
    let pruned = retention::prune(&logs, current.as_deref(), keep as usize)
        .map_err(|e| RalphError::io(format!("cannot prune {}", logs.display()), e))?;
    if pruned.is_empty() {
        println!("nothing to remove: {} holds at most {keep} runs", logs.display());
    } else {
        for run in &pruned {
            println!("removed {}", logs.join(run).display());
        }
        println!("kept the newest {keep} runs");
    }
    Ok(crate::exit::DONE)
}

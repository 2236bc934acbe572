//! Finding processes a dead ralph left behind. Every agent runs with
//! `RALPH_RUN_ID` in its environment, inherited by everything it starts, so after a
//! crash (kill -9, OOM) the next ralph of the same run can end them before it
//! resumes: no agent edits the work tree behind a new attempt's back.

use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The variable that marks an agent process and its descendants.
pub(crate) const RUN_ID_VAR: &str = "RALPH_RUN_ID";

/// Pids of live processes whose environment carries `RALPH_RUN_ID=run_id`.
pub(crate) fn find(proc_root: &Path, run_id: &str) -> Vec<i32> {
    let (needle, me) = (format!("{RUN_ID_VAR}={run_id}"), std::process::id());
    super::escaped::all_pids(proc_root)
        .into_iter()
        .filter(|pid| u32::try_from(*pid).is_ok_and(|p| p != me))
        .filter(|pid| {
            std::fs::read(proc_root.join(pid.to_string()).join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
        })
        .collect()
}

/// Kills (SIGKILL) every leftover process of the run; returns their pids.
pub(crate) fn kill_all(run_id: &str) -> Vec<i32> {
    let pids = find(crate::os::proc_root(), run_id);
    for pid in &pids {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_processes_by_their_run_id() {
        let root = tempfile::tempdir().expect("tempdir");
        let proc_dir = |pid: &str, env: &[u8]| {
            let d = root.path().join(pid);
            std::fs::create_dir(&d).expect("mkdir");
            std::fs::write(d.join("environ"), env).expect("write");
        };
        proc_dir("100", b"HOME=/root\0RALPH_RUN_ID=r1\0");
        proc_dir("101", b"RALPH_RUN_ID=r10\0");
        proc_dir("102", b"PATH=/bin\0");
        std::fs::create_dir(root.path().join("self")).expect("mkdir");
        assert_eq!(find(root.path(), "r1"), vec![100]);
    }
}

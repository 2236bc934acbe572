//! What `.agent/logs/` keeps: the newest `[logs] keep_runs` run directories (the
//! current run's always among them), each with its run's journal. When a new run
//! starts, the previous run's `events.jsonl` moves into that run's directory, so
//! history stays with its run and is pruned with it; the current run's journal and
//! the archived checkpoints in `.agent/` are never touched.

use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

/// The run directories to remove, from `runs` ordered oldest first: all but the
/// newest `keep`, never `current`. Pure.
pub(crate) fn to_prune(runs: Vec<String>, current: Option<&str>, keep: usize) -> Vec<String> {
    // `current` counts toward `keep` wherever its name sorts.
    let keep = keep.saturating_sub(usize::from(current.is_some_and(|c| runs.iter().any(|r| r == c))));
    let mut prune: Vec<String> = runs.into_iter().rev().filter(|r| Some(r.as_str()) != current).skip(keep).collect();
    prune.sort();
    prune
}

/// Removes the run directories [`to_prune`] names under `logs`; returns them.
pub(crate) fn prune(logs: &Path, current: Option<&str>, keep: usize) -> io::Result<Vec<String>> {
    let mut runs: Vec<(std::time::SystemTime, String)> = match std::fs::read_dir(logs) {
        Ok(rd) => rd
            .flatten()
            // Never follow a symlink out of .agent/: only real directories are runs.
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| {
                let modified = e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
                (modified, e.file_name().to_string_lossy().into_owned())
            })
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    // Oldest first: by the last write into the run's directory (a run resumed later is
    // recent), then by name (run ids begin with their UTC start).
    runs.sort();
    let doomed = to_prune(runs.into_iter().map(|(_, name)| name).collect(), current, keep);
    for run in &doomed {
        std::fs::remove_dir_all(logs.join(run))?;
    }
    Ok(doomed)
}

/// The run a journal belongs to: the run id of its last `run_started`.
pub(crate) fn journal_run(journal: &Path) -> io::Result<Option<String>> {
    // Never through a link a repository may have planted.
    let Some(file) = super::private::open_existing(journal)? else { return Ok(None) };
    let mut run = None;
    for line in BufReader::new(file).lines() {
        // A torn line from a crash is skipped, as every journal reader does.
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&line?) else { continue };
        run = value["run_id"].as_str().filter(|_| value["kind"] == "run_started").map(str::to_string).or(run);
    }
    Ok(run)
}

/// Moves the previous run's journal into its run directory, before a new run starts
/// its own. Returns where it went (`None`: there was none).
pub(crate) fn move_previous_journal(agent_dir: &Path) -> io::Result<Option<PathBuf>> {
    let journal = agent_dir.join(super::journal::FILE);
    let Some(run) = journal_run(&journal)? else {
        if journal.exists() {
            // A journal without a run start (older ralph): kept aside, never lost.
            let aside = agent_dir.join("logs").join("events-without-run.jsonl");
            std::fs::create_dir_all(agent_dir.join("logs"))?;
            std::fs::rename(&journal, &aside)?;
            return Ok(Some(aside));
        }
        return Ok(None);
    };
    let dir = agent_dir.join("logs").join(&run);
    std::fs::create_dir_all(&dir)?;
    let name = |n| if n == 0 { super::journal::FILE.to_string() } else { format!("events.{n}.jsonl") };
    let target = (0u32..).map(|n| dir.join(name(n))).find(|target| !target.exists()).unwrap_or_default();
    std::fs::rename(&journal, &target)?;
    // The new journal's creation syncs `agent_dir`; this keeps the old one's new name.
    super::atomic::sync_dir(&dir)?;
    Ok(Some(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_oldest_runs_go_and_the_current_one_stays() {
        let runs = names(&["20260101T000000Z-1", "20260102T000000Z-2", "20260103T000000Z-3", "20260104T000000Z-4"]);
        assert_eq!(
            to_prune(runs.clone(), Some("20260104T000000Z-4"), 2),
            names(&["20260101T000000Z-1", "20260102T000000Z-2"])
        );
        // A resumed old run is the current one: it stays even though it is the oldest.
        assert_eq!(
            to_prune(runs.clone(), Some("20260101T000000Z-1"), 2),
            names(&["20260102T000000Z-2", "20260103T000000Z-3"])
        );
        assert_eq!(to_prune(runs.clone(), None, 10), Vec::<String>::new());
        assert_eq!(to_prune(runs, Some("20260104T000000Z-4"), 1).len(), 3);
    }

    #[test]
    fn the_previous_journal_moves_into_its_run_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let agent = tmp.path();
        std::fs::write(
            agent.join("events.jsonl"),
            "{\"kind\":\"run_started\",\"run_id\":\"R1\"}\n{\"kind\":\"run_ended\"}\n{torn",
        )
        .unwrap();
        let moved = move_previous_journal(agent).unwrap().unwrap();
        assert_eq!(moved, agent.join("logs/R1/events.jsonl"));
        assert!(!agent.join("events.jsonl").exists());
        assert_eq!(move_previous_journal(agent).unwrap(), None);
    }
}

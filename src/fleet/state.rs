//! The fleet's durable state, `.agent/fleet/fleet.json` in the main checkout: which
//! tasks there are, where each stands, and (with the merge queue) what landed. One
//! writer, the supervisor (or a `ralph fleet` command holding the fleet's lock when
//! no supervisor runs); any reader, a second host included (plain JSON, paths
//! absolute, no process ids needed to make sense of it).
//!
//! The same format policy as the checkpoint (`docs/operations.md`, "The
//! state-format policy"): written atomically and durably after every transition; a
//! file that does not parse is [`StateError::Corrupt`] and set aside, never
//! overwritten; a newer version is refused and left in place; an older one is
//! migrated here; an impossible content names its field. A new field is optional
//! with a default and keeps the version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The format version this ralph writes.
pub(crate) const VERSION: u32 = 1;

/// Where the fleet as a whole stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub(crate) enum FleetStatus {
    /// A supervisor runs it (or died without a clean stop: the watchdog resumes it).
    #[default]
    Running,
    /// A person stopped it (Ctrl+C, `ralph fleet stop`); `ralph fleet` continues it.
    Stopped,
    /// SIGTERM or SIGHUP stopped it; the watchdog resumes it.
    Interrupted,
    /// The supervisor ended with tasks failed, blocked or stopped: a person must look.
    Unfinished,
    /// Every task finished (landed or discarded): archived.
    Finished,
    /// The watchdog gave up resuming it.
    Blocked,
}

impl FleetStatus {
    /// The run status that means the same to the registry and the watchdog: a fleet
    /// a person stopped is paused, one that needs a person is blocked.
    pub(crate) fn as_run_status(self) -> crate::state::checkpoint::Status {
        use crate::state::checkpoint::Status;
        match self {
            FleetStatus::Running => Status::Running,
            FleetStatus::Stopped => Status::Paused,
            FleetStatus::Interrupted => Status::Interrupted,
            FleetStatus::Finished => Status::Completed,
            FleetStatus::Unfinished | FleetStatus::Blocked => Status::Blocked,
        }
    }
}

/// Where one task stands (docs/fleet.md has the diagram).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub(crate) enum TaskState {
    /// Known, waiting for a slot.
    #[default]
    Queued,
    /// Its branch and worktree are being created (shown as running).
    Starting,
    /// Its ralph runs (or ran and died: the supervisor finds out).
    Running,
    /// Its run completed; handed to the merge queue.
    Finished,
    /// The merge queue is landing it.
    Merging,
    /// `into` contains its head (git confirmed); its worktree is removed.
    Merged,
    /// Sent back to its agent by the merge queue: a conflict or a failing check.
    Evicted,
    /// Its run ended on a cap or budget.
    Failed,
    /// A person must act: its run is blocked, or the fleet could not go on with it.
    Blocked,
    /// A person stopped it (`ralph fleet stop TASK`).
    Stopped,
    /// A person discarded it (`ralph fleet discard TASK`).
    Discarded,
}

impl TaskState {
    /// Its ralph may be running (or is about to).
    pub(crate) fn active(self) -> bool {
        matches!(self, TaskState::Starting | TaskState::Running | TaskState::Evicted)
    }

    /// Nothing more happens to it without a person.
    pub(crate) fn settled(self) -> bool {
        matches!(
            self,
            TaskState::Merged | TaskState::Failed | TaskState::Blocked | TaskState::Stopped | TaskState::Discarded
        )
    }
}

/// One task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Task {
    /// The task file, relative to the repository's top.
    pub file: String,
    /// Discovery order: the order tasks start in.
    pub seq: u32,
    pub state: TaskState,
    /// `ralph/<name>`.
    pub branch: String,
    /// The commit its branch was created from (recorded before the branch is made).
    pub from: Option<String>,
    /// Its worktree, once created.
    pub worktree: Option<PathBuf>,
    /// The run id of its ralph, once known.
    pub run_id: Option<String>,
    /// Why it is failed, blocked, stopped or evicted.
    pub reason: Option<String>,
    /// Its run was started at least once: it resumes before new tasks start.
    #[serde(default)]
    pub started: bool,
    /// Its run was paused by a stop of the whole fleet: the next start resumes it.
    #[serde(default)]
    pub paused: bool,
    /// Ends of its ralph without a clean stop, in a row without a finished iteration.
    #[serde(default)]
    pub restarts: u32,
    /// Iterations done when it was last started (progress resets `restarts`).
    #[serde(default)]
    pub iterations_at_start: u32,
    /// Iterations its run has done, as last seen.
    #[serde(default)]
    pub iterations: u32,
    /// Its run's cost so far, as last seen.
    #[serde(default)]
    pub cost_usd: f64,
    /// When it finished (the merge queue's order), counted over the fleet.
    pub finished_seq: Option<u32>,
    /// Bytes its worktree takes, measured when its ralph last ended.
    pub disk_bytes: Option<u64>,
    pub updated_at: Option<jiff::Timestamp>,
    /// Times the merge queue sent it back to its agent.
    #[serde(default)]
    pub evictions: u32,
    /// The eviction its run has yet to take (its ralph reopens the run with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction: Option<Eviction>,
    /// The commit it landed as on `into` (its head, rebased), once merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed: Option<String>,
}

/// The merge queue sent a task back: one more iteration of its run's last phase,
/// with this in the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Eviction {
    /// Counted from 1 over the task's life.
    pub number: u32,
    /// What went wrong and what to do (the conflict, or the check's output).
    pub text: String,
}

/// How far a landing got (see `queue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::VariantArray)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub(crate) enum LandingStep {
    /// The head to land is made (rebased onto `onto`); the check is next.
    Prepared,
    /// The compare-and-swap of `into` from `onto` to `head` may have happened.
    Swapping,
}

/// The landing under way, written before each step that changes git.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Landing {
    pub task: String,
    pub step: LandingStep,
    /// `into` when the landing began: the compare-and-swap's expected value.
    pub onto: String,
    /// What lands: the task's commits rebased onto `onto` (or its own head, when
    /// its branch contains `onto`).
    pub head: String,
    /// The task branch's tip when the landing began.
    pub task_head: String,
    /// Its commits (the rebase's), oldest first: `(task's, landed)`.
    #[serde(default)]
    pub rebased: Vec<(String, String)>,
    pub started_at: jiff::Timestamp,
}

impl Task {
    /// A queued task, as discovered.
    pub(crate) fn new(file: &str, seq: u32, branch: String) -> Task {
        Task { file: file.to_string(), seq, branch, ..Task::default() }
    }
}

/// `.agent/fleet/fleet.json`. Its `Default` is the counters of a fleet nothing has
/// happened to yet (no save, nothing discovered, finished or landed), for struct
/// update syntax after what a first start decides (its version, id and places).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub(crate) struct Fleet {
    pub version: u32,
    /// Counts saves.
    #[serde(default)]
    pub seq: u64,
    pub fleet_id: String,
    pub status: FleetStatus,
    /// Set when a supervisor wrote the final state; false while one runs.
    pub clean_stop: bool,
    pub stop_reason: Option<String>,
    /// The main checkout's top.
    pub repo: PathBuf,
    /// HEAD at the fleet's first start.
    pub base: String,
    /// The branch HEAD was on then; `None` for a detached HEAD.
    pub base_branch: Option<String>,
    /// The branch tasks branch from and the merge queue lands on.
    pub into: String,
    /// Where the worktrees are.
    pub worktrees: PathBuf,
    /// The config file every task uses.
    pub config: PathBuf,
    /// `[fleet] tasks` at the first start.
    pub tasks_glob: String,
    /// Tasks discovered so far (the next task's `seq`).
    #[serde(default)]
    pub discovered: u32,
    /// Tasks finished so far (the next `finished_seq`).
    #[serde(default)]
    pub finished: u32,
    /// Started with `--no-land`: tasks stop at finished; a person lands them.
    #[serde(default)]
    pub no_land: bool,
    /// The landing under way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing: Option<Landing>,
    /// Landings done, and the seconds they took in all (the queue's estimates).
    #[serde(default)]
    pub landings: u32,
    #[serde(default)]
    pub landing_secs: f64,
    pub created_at: jiff::Timestamp,
    pub updated_at: jiff::Timestamp,
    pub tasks: BTreeMap<String, Task>,
}

impl Fleet {
    /// The names of the tasks `keep` holds for.
    pub(crate) fn names(&self, keep: impl Fn(&Task) -> bool) -> Vec<String> {
        self.tasks.iter().filter(|(_, t)| keep(t)).map(|(n, _)| n.clone()).collect()
    }
}

/// Why the state file cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    #[error("{} does not parse ({message})", .path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("{} has format version {version}, newer than the version {VERSION} this ralph reads", .path.display())]
    TooNew { path: PathBuf, version: u64 },
    #[error("{} is not usable: {field} {problem}", .path.display())]
    Invalid { path: PathBuf, field: String, problem: String },
    #[error("cannot read {}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

/// Reads the fleet's state: `Ok(None)` when there is none. Changes nothing.
pub(crate) fn read(path: &Path) -> Result<Option<Fleet>, StateError> {
    let bytes = crate::state::private::read_existing(path)
        .map_err(|source| StateError::Io { path: path.to_path_buf(), source })?;
    bytes.map(|b| parse(path, &b)).transpose()
}

/// Parses, migrates and checks the file's bytes.
pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Fleet, StateError> {
    let corrupt = |message: String| StateError::Corrupt { path: path.to_path_buf(), message };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    let version = value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| corrupt("it has no format version".to_string()))?;
    if version > u64::from(VERSION) {
        return Err(StateError::TooNew { path: path.to_path_buf(), version });
    }
    if version == 0 {
        return Err(corrupt("format version 0 was never written by ralph".to_string()));
    }
    let fleet: Fleet = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
    check(&fleet).map_err(|(field, problem)| StateError::Invalid { path: path.to_path_buf(), field, problem })?;
    Ok(fleet)
}

/// Contents no fleet can reach.
fn check(fleet: &Fleet) -> Result<(), (String, String)> {
    if fleet.fleet_id.trim().is_empty() {
        return Err(("fleet_id".into(), "is empty".into()));
    }
    if fleet.base.trim().is_empty() {
        return Err(("base".into(), "is empty".into()));
    }
    for (name, task) in &fleet.tasks {
        if task.branch != super::names::branch_of(name) {
            return Err((format!("tasks.{name}.branch"), format!("is {:?}, not ralph/{name}", task.branch)));
        }
        if matches!(task.state, TaskState::Running | TaskState::Evicted) && task.worktree.is_none() {
            return Err((format!("tasks.{name}.worktree"), format!("is missing for a {} task", task.state.into_str())));
        }
    }
    Ok(())
}

/// Writes the state atomically and durably (a new `seq`).
pub(crate) fn save(path: &Path, fleet: &mut Fleet) -> std::io::Result<()> {
    fleet.seq += 1;
    fleet.updated_at = jiff::Timestamp::now();
    crate::state::store::save_json(path, fleet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::fleet;

    #[test]
    fn a_saved_state_reads_back() {
        let (dir, path) = crate::testkit::temp_file("fleet.json");
        let mut f = fleet();
        f.tasks.insert("a".into(), Task::new("tasks/a.md", 1, "ralph/a".into()));
        save(&path, &mut f).unwrap();
        assert_eq!(read(&path).unwrap(), Some(f));
        assert!(read(&dir.path().join("none.json")).unwrap().is_none());
    }

    #[test]
    fn the_format_policy_holds() {
        let p = Path::new("fleet.json");
        let mut v = serde_json::to_value(fleet()).unwrap();
        v["version"] = 2.into();
        assert!(matches!(parse(p, &serde_json::to_vec(&v).unwrap()), Err(StateError::TooNew { version: 2, .. })));
        for bytes in [&b"{"[..], b"[]", br#"{"version": 1}"#, br#"{"version": 0}"#] {
            assert!(matches!(parse(p, bytes), Err(StateError::Corrupt { .. })), "{}", String::from_utf8_lossy(bytes));
        }
        let mut bad = fleet();
        let mut t = Task::new("tasks/a.md", 1, "ralph/b".into());
        t.state = TaskState::Queued;
        bad.tasks.insert("a".into(), t);
        let err = parse(p, &serde_json::to_vec(&bad).unwrap()).unwrap_err();
        assert!(matches!(&err, StateError::Invalid { field, .. } if field == "tasks.a.branch"), "{err}");
        // A later minor change's unknown fields are ignored.
        let mut v = serde_json::to_value(fleet()).unwrap();
        v["something_new"] = serde_json::json!({"x": 1});
        assert!(parse(p, &serde_json::to_vec(&v).unwrap()).is_ok());
    }

    #[test]
    fn the_written_states_are_the_documented_words() {
        let all = [
            TaskState::Queued,
            TaskState::Starting,
            TaskState::Running,
            TaskState::Finished,
            TaskState::Merging,
            TaskState::Merged,
            TaskState::Evicted,
            TaskState::Failed,
            TaskState::Blocked,
            TaskState::Stopped,
            TaskState::Discarded,
        ];
        let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fleet.md")).unwrap();
        for s in all {
            assert!(
                docs.contains(&format!("`{}`", s.into_str())),
                "docs/fleet.md does not name the state {}",
                s.into_str()
            );
        }
    }
}

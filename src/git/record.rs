//! What the checkpoint keeps about git (optional fields with defaults, per the
//! state-format policy: no version bump). Bounded: the full history of commits is
//! in the journal; the checkpoint keeps the newest [`KEPT_COMMITS`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::plan::Tree;

/// Commits listed in the checkpoint (the journal has them all).
pub(crate) const KEPT_COMMITS: usize = 200;

/// The run's git state; `None` in the checkpoint when git features are off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GitState {
    /// The repository's top directory.
    pub top: String,
    /// The commit the run started from; `None` in a repository without commits.
    pub baseline: Option<String>,
    /// The branch ralph commits on; `None` for a detached HEAD.
    pub branch: Option<String>,
    /// Paths never committed in this run: dirty at the start (`--allow-dirty`), or
    /// edited by someone else (attribution).
    #[serde(default)]
    pub held: Vec<String>,
    /// A hash of each held file's content as ralph last saw it: a held file that
    /// changes again (the agent touching a person's file) is named, never committed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held_content: BTreeMap<String, String>,
    /// The working tree an orderly stop left (changed paths and their content):
    /// on resume, what differs is a person's. Absent after a crash, and used up by
    /// the resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Tree>,
    /// HEAD as ralph last left it; a different HEAD means someone else committed.
    pub head: Option<String>,
    /// The commits ralph made, oldest first (the newest [`KEPT_COMMITS`]).
    #[serde(default)]
    pub commits: Vec<CommitRecord>,
    /// All commits ralph made in the run, including those dropped from `commits`.
    #[serde(default)]
    pub commit_count: u32,
    /// Commits the agents made themselves, counted.
    #[serde(default)]
    pub agent_commits: u32,
    /// An iteration that is done but whose commit is not known to be made yet.
    pub pending: Option<Pending>,
}

/// One commit ralph made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CommitRecord {
    pub hash: String,
    /// The `Ralph-Iteration:` key.
    pub key: String,
    pub files: u32,
    pub insertions: u32,
    pub deletions: u32,
}

/// An iteration recorded done whose commit may or may not exist: on resume the
/// trailer lookup decides, so the commit happens exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pending {
    /// The `Ralph-Iteration:` key.
    pub key: String,
    /// The full message, so a commit made on resume is the one that was meant.
    pub message: String,
    /// The iteration reached the goal signal (replayed into the policy on resume).
    pub goal: bool,
}

/// What one commit step found and did, as the run's git session reports it: facts
/// only, in the order they happened; the run decides what they come to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommitReport {
    /// Lock files a commit killed mid-way left behind, removed first.
    pub stale_locks: Vec<super::stale_lock::Removed>,
    /// HEAD moved since ralph last committed: the agent (or someone) committed.
    pub agent_moved: Option<AgentMoved>,
    /// Changed files left out of the commit, and why.
    pub left_out: Vec<(String, super::plan::LeftOut)>,
    /// The content of held files as this step saw them (path, hash).
    pub seen: Vec<(String, String)>,
    pub outcome: CommitOutcome,
}

/// Commits someone else made since ralph's last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentMoved {
    pub from: Option<String>,
    pub to: String,
    pub commits: Vec<String>,
}

/// How the commit step ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum CommitOutcome {
    /// The commit exists already (a resume after a kill found its trailers).
    Found(CommitRecord),
    Committed(CommitRecord),
    /// The iteration changed nothing ralph commits.
    #[default]
    Nothing,
    /// A hook rejected the commit, with its output (redacted).
    Rejected(String),
    /// git failed otherwise.
    Failed(String),
}

impl CommitReport {
    /// A commit step that could not even start.
    pub(crate) fn failed(error: impl Into<String>) -> Self {
        CommitReport { outcome: CommitOutcome::Failed(error.into()), ..Self::default() }
    }
}

impl GitState {
    pub(crate) fn record(&mut self, commit: CommitRecord) {
        self.head = Some(commit.hash.clone());
        self.commits.push(commit);
        self.commit_count += 1;
        if self.commits.len() > KEPT_COMMITS {
            let extra = self.commits.len() - KEPT_COMMITS;
            self.commits.drain(..extra);
        }
    }

    pub(crate) fn hold(&mut self, path: &str) {
        if !self.held.iter().any(|p| p == path) {
            self.held.push(path.to_string());
            self.held.sort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_list_stays_bounded_and_the_count_does_not() {
        let mut s = GitState::default();
        for i in 0..(KEPT_COMMITS + 5) {
            s.record(CommitRecord {
                hash: format!("h{i}"),
                key: format!("p/{i}"),
                files: 1,
                insertions: 1,
                deletions: 0,
            });
        }
        assert_eq!(s.commits.len(), KEPT_COMMITS);
        assert_eq!(s.commit_count as usize, KEPT_COMMITS + 5);
        assert_eq!(s.head.as_deref(), Some(format!("h{}", KEPT_COMMITS + 4).as_str()));
        assert_eq!(s.commits[0].hash, "h5");
    }

    #[test]
    fn an_old_checkpoint_without_git_fields_reads() {
        let s: GitState = serde_json::from_str(r#"{"top": "/r"}"#).expect("parses");
        assert_eq!(s.top, "/r");
        assert!(s.pending.is_none() && s.commits.is_empty());
    }
}

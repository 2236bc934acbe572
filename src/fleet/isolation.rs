//! Isolation of a task, pure: what changed outside a task's worktree during one of
//! its iterations, and whom to stop for it.
//!
//! A task's ralph takes a [`Snapshot`] of the world outside its worktree when an
//! iteration starts (the main checkout's HEAD, branch, index and files; every ref)
//! and again when the iteration is done, before its commit. What [`changes`] finds
//! between the two, [`verdict`] judges with the *windows* of the other tasks (when
//! their iterations ran):
//!
//! * a change that carries this task's own work onto another ref (its agent pushed or
//!   reset `into` to its commits): this task is blocked;
//! * any other change that the iterations of no other task overlap: this task is
//!   blocked, naming what was touched; nothing of the iteration is committed;
//! * the same, overlapped by other tasks' iterations: ralph cannot tell which agent
//!   made it, so this task stops for a person, naming them (they stop too when their
//!   own iterations end, if their snapshots saw the change).
//!
//! What is not a change: ralph's own ref updates (written to the ledger before they
//! are made: the merge queue's landings and rebases, the branches of merged and
//! discarded tasks), branches created (the supervisor creates each task's), and a ref
//! that moved forward without losing a commit (another task's own commits, a
//! person's commits on the base branch outside the main checkout). A ref deleted or
//! moved so that it lost commits is a change. ralph's own files in the main
//! checkout (`.agent/`, the config, the goal, the task files) are not looked at.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The world outside one worktree, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    /// The branch the main checkout's HEAD names (`refs/heads/main`); `None` detached.
    pub head_ref: Option<String>,
    /// The commit the main checkout's HEAD is at.
    pub head: Option<String>,
    /// Each changed path of the main checkout (staged, modified, new), with a
    /// fingerprint of its status and file (so a second edit of a dirty file counts).
    pub files: BTreeMap<String, String>,
    /// Every ref and its object.
    pub refs: BTreeMap<String, String>,
}

/// A ref that differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Moved {
    pub name: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// What the shell found out about a moved ref that still exists and existed before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefFacts {
    /// The old value is an ancestor of the new one: nothing was lost.
    pub forward: bool,
    /// The new value holds this task's own latest commit and the old one did not.
    pub takes_own_work: bool,
}

/// One change outside the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// The main checkout's HEAD moved, or names another branch.
    Head { from: String, to: String },
    /// A file of the main checkout changed.
    File(String),
    /// A ref was deleted, or moved so that it lost commits.
    RefLost(String),
    /// A ref took this task's own commits.
    RefTookWork(String),
}

impl Change {
    fn describe(&self) -> String {
        match self {
            Change::Head { from, to } => format!("the main checkout's HEAD moved ({from} → {to})"),
            Change::File(path) => format!("{path} in the main checkout"),
            Change::RefLost(name) => format!("the ref {name} was deleted or lost commits"),
            Change::RefTookWork(name) => format!("the ref {name} was moved to this task's own commits"),
        }
    }

    /// Only this task's agent can have made it.
    fn ours(&self) -> bool {
        matches!(self, Change::RefTookWork(_))
    }
}

/// A ref update ralph made itself, recorded before it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LedgerEntry {
    #[serde(rename = "ref")]
    pub name: String,
    pub old: Option<String>,
    pub new: Option<String>,
    pub reason: String,
}

/// The refs that differ between `before` and `after`, but the task's own branch,
/// the ones ralph's ledger explains, and new refs.
pub(crate) fn moved_refs(before: &Snapshot, after: &Snapshot, own: &str, ledger: &[LedgerEntry]) -> Vec<Moved> {
    let names: BTreeSet<&String> = before.refs.keys().chain(after.refs.keys()).collect();
    names
        .into_iter()
        .filter(|name| name.as_str() != own)
        .filter_map(|name| {
            let (old, new) = (before.refs.get(name).cloned(), after.refs.get(name).cloned());
            let explained = ledger.iter().any(|e| &e.name == name && e.new == new);
            (old != new && old.is_some() && !explained).then(|| Moved { name: name.clone(), old, new })
        })
        .collect()
}

/// Every change between the two snapshots; `facts` answers for each moved ref of
/// [`moved_refs`] that still exists.
pub(crate) fn changes(
    before: &Snapshot,
    after: &Snapshot,
    moved: &[Moved],
    facts: &dyn Fn(&Moved) -> RefFacts,
) -> Vec<Change> {
    let mut out = Vec::new();
    if before.head != after.head || before.head_ref != after.head_ref {
        let show = |r: &Option<String>, h: &Option<String>| {
            let at = h.as_deref().map(crate::text::short).unwrap_or("no commit");
            match r {
                Some(name) => format!("{} at {at}", name.trim_start_matches("refs/heads/")),
                None => format!("detached at {at}"),
            }
        };
        out.push(Change::Head { from: show(&before.head_ref, &before.head), to: show(&after.head_ref, &after.head) });
    }
    let paths: BTreeSet<&String> = before.files.keys().chain(after.files.keys()).collect();
    out.extend(
        paths.into_iter().filter(|p| before.files.get(*p) != after.files.get(*p)).map(|p| Change::File(p.clone())),
    );
    for m in moved {
        if m.new.is_none() {
            out.push(Change::RefLost(m.name.clone()));
            continue;
        }
        let f = facts(m);
        if f.takes_own_work {
            out.push(Change::RefTookWork(m.name.clone()));
        } else if !f.forward {
            out.push(Change::RefLost(m.name.clone()));
        }
    }
    out
}

/// When one task's iteration ran (milliseconds since the epoch), and what it saw
/// at its start. Written by the task's ralph in the fleet's `windows/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Window {
    #[serde(flatten)]
    pub span: Span,
    pub snapshot: Snapshot,
}

/// A window without its snapshot: whose iteration ran, and when. What a task reads
/// of the other tasks' windows, and of its own to see whether it is open: the
/// snapshot (every ref of the repository) is skipped while parsing, never held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Span {
    pub task: String,
    /// The iteration's key (`develop/3`).
    pub key: String,
    pub opened_at: i64,
    pub closed_at: Option<i64>,
}

impl Span {
    /// Whether this window overlaps `[from, to]`.
    pub(crate) fn overlaps(&self, from: i64, to: i64) -> bool {
        self.opened_at <= to && self.closed_at.is_none_or(|closed| closed >= from)
    }
}

/// What the end of an iteration comes to.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Clean,
    /// This task is blocked: it made the change (or nobody else can have).
    Block(String),
    /// Several tasks may have made it: this one stops for a person.
    Pause(String),
}

/// The verdict for task `me` whose iteration ran `[from, to]`, given the changes and
/// the other tasks' windows.
pub(crate) fn verdict(me: &str, from: i64, to: i64, changes: &[Change], others: &[Span]) -> Verdict {
    if changes.is_empty() {
        return Verdict::Clean;
    }
    let what = changes.iter().map(Change::describe).collect::<Vec<_>>().join("; ");
    let fix = format!(
        "nothing of the iteration was committed. Undo the change (its agent must work only in its own worktree), \
         then `ralph fleet retry {me}`"
    );
    let mut overlapping: Vec<&str> =
        others.iter().filter(|w| w.task != me && w.overlaps(from, to)).map(|w| w.task.as_str()).collect();
    overlapping.sort_unstable();
    overlapping.dedup();
    if changes.iter().any(Change::ours) || overlapping.is_empty() {
        return Verdict::Block(format!(
            "task {me} changed things outside its worktree during its iteration: {what}; {fix}"
        ));
    }
    Verdict::Pause(format!(
        "things outside the worktrees changed while tasks {me}, {} were in an iteration: {what}; ralph cannot tell \
         which agent did it, so each stops for a person: {fix}",
        overlapping.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(head: &str, files: &[(&str, &str)], refs: &[(&str, &str)]) -> Snapshot {
        Snapshot {
            head_ref: Some("refs/heads/main".into()),
            head: Some(head.into()),
            files: files.iter().map(|(p, f)| (p.to_string(), f.to_string())).collect(),
            refs: refs.iter().map(|(n, o)| (n.to_string(), o.to_string())).collect(),
        }
    }

    const FORWARD: RefFacts = RefFacts { forward: true, takes_own_work: false };

    #[test]
    fn nothing_changed_is_clean_and_own_branch_and_new_refs_do_not_count() {
        let before = snap("h1", &[("dirty.txt", "M 1")], &[("refs/heads/ralph/a", "a1"), ("refs/heads/main", "h1")]);
        let after = snap(
            "h1",
            &[("dirty.txt", "M 1")],
            &[("refs/heads/ralph/a", "a2"), ("refs/heads/main", "h1"), ("refs/heads/ralph/new", "n1")],
        );
        let moved = moved_refs(&before, &after, "refs/heads/ralph/a", &[]);
        assert!(moved.is_empty(), "{moved:?}");
        assert!(changes(&before, &after, &moved, &|_| FORWARD).is_empty());
        assert_eq!(verdict("a", 0, 10, &[], &[]), Verdict::Clean);
    }

    #[test]
    fn a_write_in_the_main_checkout_blocks_the_only_task_in_an_iteration() {
        let before = snap("h1", &[], &[]);
        let after = snap("h1", &[("src/lib.rs", "M 2")], &[]);
        let found = changes(&before, &after, &[], &|_| FORWARD);
        assert_eq!(found, [Change::File("src/lib.rs".into())]);
        let other = Span { task: "b".into(), key: "develop/1".into(), opened_at: 0, closed_at: Some(5) };
        match verdict("a", 10, 20, &found, &[other]) {
            Verdict::Block(why) => {
                assert!(why.contains("src/lib.rs in the main checkout") && why.contains("ralph fleet retry a"), "{why}")
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn an_overlapping_iteration_makes_it_a_pause_for_a_person() {
        let found = [Change::Head { from: "main at h1".into(), to: "main at h2".into() }];
        let open = Span { task: "b".into(), key: "k".into(), opened_at: 15, closed_at: None };
        match verdict("a", 10, 20, &found, std::slice::from_ref(&open)) {
            Verdict::Pause(why) => assert!(why.contains("tasks a, b") && why.contains("HEAD moved"), "{why}"),
            v => panic!("{v:?}"),
        }
        // Its own work on another ref is this task's doing whoever else ran.
        match verdict("a", 10, 20, &[Change::RefTookWork("refs/heads/ralph/fleet".into())], &[open]) {
            Verdict::Block(why) => assert!(why.contains("this task's own commits"), "{why}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn refs_that_lose_commits_count_and_forward_moves_and_ledger_entries_do_not() {
        let before =
            snap("h", &[], &[("refs/heads/ralph/fleet", "f1"), ("refs/heads/ralph/b", "b1"), ("refs/tags/v1", "t1")]);
        let after = snap("h", &[], &[("refs/heads/ralph/fleet", "f2"), ("refs/heads/ralph/b", "b0")]);
        let ledger = [LedgerEntry {
            name: "refs/heads/ralph/fleet".into(),
            old: Some("f1".into()),
            new: Some("f2".into()),
            reason: "land".into(),
        }];
        let moved = moved_refs(&before, &after, "refs/heads/ralph/a", &ledger);
        assert_eq!(moved.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["refs/heads/ralph/b", "refs/tags/v1"]);
        let back = |m: &Moved| RefFacts { forward: m.name != "refs/heads/ralph/b", takes_own_work: false };
        let found = changes(&before, &after, &moved, &back);
        assert_eq!(found, [Change::RefLost("refs/heads/ralph/b".into()), Change::RefLost("refs/tags/v1".into())]);
        assert!(changes(&before, &after, &moved[..1], &|_| FORWARD).is_empty());
    }

    #[test]
    fn windows_overlap_when_their_spans_meet() {
        let w = |opened_at, closed_at| Span { task: "b".into(), key: "k".into(), opened_at, closed_at };
        assert!(w(5, Some(12)).overlaps(10, 20));
        assert!(w(15, None).overlaps(10, 20));
        assert!(!w(1, Some(9)).overlaps(10, 20));
        assert!(!w(21, None).overlaps(10, 20));
    }
}

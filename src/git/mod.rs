//! Git-aware runs (docs/git.md): a baseline at the start of a new run, one commit per
//! finished iteration (or phase) holding only the agents' work, exactly once across
//! kills and resumes.
//!
//! The decisions are pure and unit-tested: which files a commit takes and why the
//! others are left out ([`plan`]), which files the agent reported editing
//! ([`attribution`]), the message, trailers and identities ([`message`]), whether a
//! repository can be used at all ([`preflight`]), what the checkpoint keeps
//! ([`record`]), and whether a git lock file is stale ([`stale_lock`], its shell
//! [`locks`]). [`repo`] is the thin shell: the `git` binary run with argument arrays;
//! [`session`] is a run's use of it (opening, the commit step, reported as facts the
//! run's step decides on).
//!
//! Why the `git` binary and not a library (gix): ralph must behave exactly like the
//! user's own `git commit` — their hooks (pre-commit, commit-msg), their identity and
//! `includeIf` config, `core.hooksPath`, attributes and filters, sparse checkouts,
//! worktrees — and gix does not run hooks or cover every config git honours. A
//! handful of plumbing calls with stable, machine-readable output (`status
//! --porcelain -z`, `log -z`, `diff-tree --numstat`) is a small, stable surface, and
//! any machine that has a repository has `git`.

pub(crate) mod attribution;
pub(crate) mod locks;
pub(crate) mod message;
pub(crate) mod plan;
pub(crate) mod preflight;
pub(crate) mod record;
pub(crate) mod repo;
pub(crate) mod session;
pub(crate) mod stale_lock;

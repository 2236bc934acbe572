//! `ralph fleet`: many runs at once, one git worktree and branch per task, supervised
//! together (design §12, docs/fleet.md).
//!
//! **Shape.** A fleet is many ordinary runs, one `ralph` process each, in worktrees
//! outside the main checkout, plus one supervisor. Nothing of a run's recovery is
//! written twice: a task's ralph has its own checkpoint, lock, journal, exactly-once
//! commits and recovery; the supervisor only decides which tasks run, watches them
//! end, and hands finished ones on. Its decisions are a pure core, unit-tested
//! without processes or git:
//!
//! * [`state`]: the durable state (`.agent/fleet/fleet.json`), under the
//!   checkpoint's format policy;
//! * [`core`]: what a task's ralph ending means, what starts next, when the fleet is
//!   over, what a person's command does, the cost caps;
//! * [`names`]: task files to tasks;
//! * [`isolation`]: what changed outside a task's worktree during an iteration, and
//!   whom to stop for it.
//!
//! Around it a thin shell: `supervisor` (one `select!` loop that owns the state:
//! task ralphs ending, file-system events, signals, the control socket; it sleeps
//! while every task waits on its agent), `procs` (starting a task's ralph, or
//! adopting one a previous supervisor left running, by its pidfd), [`git`]
//! (worktrees, refs, snapshots), `report` (what a person sees), [`control`] (the
//! supervisor's socket) and [`task`] (the hooks inside a task's own run).
//!
//! **Why one process per task** and not tasks inside the supervisor: a task's run is
//! exactly a single run (a person can read it with `ralph status -C <worktree>`), a
//! crash of one task cannot take another down, and the supervisor holds no run
//! state that a crash could lose: after any crash `ralph fleet` rebuilds everything
//! from `fleet.json`, the tasks' checkpoints, their locks and `git worktree list`.
//!
//! **A crash of the supervisor leaves the tasks running.** A task's ralph is started
//! in its own process group with its output to a file, so it neither dies with the
//! supervisor nor stops on a Ctrl+C meant for the supervisor (the supervisor passes
//! its signals on, in order). The next `ralph fleet` adopts each running task: the
//! kernel's flock on the task's `ralph.lock` says it lives, the lock names its pid,
//! and a pidfd (bound to the process, not the number) tells when it ends. Killing
//! the tasks with the supervisor would throw away every attempt in flight (an hour
//! of an agent's work) for nothing the supervisor needs.

mod chores;
mod command;
pub(crate) mod control;
pub(crate) mod core;
pub(crate) mod git;
pub(crate) mod isolation;
pub(crate) mod landing;
mod merging;
pub(crate) mod names;
pub(crate) mod ops;
pub(crate) mod paths;
mod procs;
pub(crate) mod queue;
pub(crate) mod rebase;
mod report;
pub(crate) mod setup;
pub(crate) mod state;
mod supervisor;
pub(crate) mod task;
pub(crate) mod tidy;
pub(crate) mod worktree;

pub(crate) use supervisor::{Options, main};

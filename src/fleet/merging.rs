//! The supervisor's side of the merge queue: when a landing starts, what its job's
//! end and its compare-and-swap come to, evictions, and a person's `land` and
//! `retry` of a task the queue holds. Decisions are `queue`'s, git is `landing`'s;
//! this file only sequences them inside the supervisor's loop (one landing at a
//! time; the loop keeps serving task ends and requests while a check runs).

use serde_json::json;

use crate::error::RalphError;

use crate::git::repo::GitError;

use super::landing::{self, Begun, Done, Finished};
use super::queue::{self, Trouble};
use super::rebase::{Prep, Rebased};
use super::supervisor::Supervisor;
use super::tidy::{Tidied, Tidy};

/// Compare-and-swaps in a row that found `into` moved before the queue pauses.
const MOVED_IN_A_ROW: u32 = 5;

impl Supervisor {
    /// Starts the next landing, when none is under way: its rebase goes to a chore.
    /// Returns whether it settled a task at once (git failed: blocked), so the loop
    /// looks at the queue and the free slots again.
    pub(super) fn land_next(&mut self) -> Result<bool, RalphError> {
        let busy = self.job.is_some() || self.preparing.is_some() || self.book.fleet.landing.is_some();
        if busy || self.queue_paused.is_some() {
            return Ok(false);
        }
        let Some(name) = queue::next(&self.book.fleet, self.land_first.as_deref()) else { return Ok(false) };
        if self.land_first.as_deref() == Some(name.as_str()) {
            self.land_first = None;
        }
        match landing::open(&self.book, &name)? {
            Ok(prep) => {
                self.preparing = Some(name);
                self.chores.rebase(prep);
                Ok(false)
            }
            Err(begun) => self.on_begun(&name, begun),
        }
    }

    /// A landing's rebase is made: the landing begins (saved, the task merging), or
    /// the task lands as it is, goes back to its agent, or is blocked. A fleet that
    /// is stopping begins nothing: the task lands at the next start.
    pub(super) fn on_rebased(&mut self, prep: Prep, rebased: Result<Rebased, GitError>) -> Result<(), RalphError> {
        self.preparing = None;
        if self.stopping.is_some() {
            return Ok(());
        }
        let name = prep.task.clone();
        let begun = landing::begun(&mut self.book, prep, rebased)?;
        self.on_begun(&name, begun).map(drop)
    }

    /// Carries out what starting a landing came to. Returns whether it settled the
    /// task at once (merged, sent back or blocked).
    fn on_begun(&mut self, name: &str, begun: Begun) -> Result<bool, RalphError> {
        match begun {
            Begun::Paused(why) => {
                self.pause(why);
                return Ok(false);
            }
            Begun::Landed(head) => {
                landing::merged(&mut self.book, name, &head, jiff::Timestamp::now())?;
                self.landed(name, None);
            }
            Begun::Trouble(trouble) => self.evict(name, &trouble)?,
            Begun::Failed(why) => self.block(name, &why)?,
            Begun::Gone => return Ok(false),
            Begun::Ready(job) => {
                let commits = self.book.fleet.landing.as_ref().map_or(0, |l| l.rebased.len());
                self.reporter
                    .line(&format!("task {name}: landing on {} ({commits} commit(s) rebased)", self.book.fleet.into));
                self.event("landing_started", json!({"task": name, "head": job.head, "rebased": commits}));
                if job.is_empty() {
                    let head = job.head.clone();
                    self.swap(&head)?;
                } else {
                    self.job = Some(tokio::spawn(landing::run(job)));
                }
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The queue waits (`why` says for what) until the timer looks again.
    fn pause(&mut self, why: String) {
        self.reporter.line(&format!("the merge queue waits: {why}"));
        self.queue_paused = Some(why);
    }

    /// The landing's job ended.
    pub(super) fn on_job(&mut self, done: Done) -> Result<(), RalphError> {
        self.job = None;
        let Some(name) = self.book.fleet.landing.as_ref().map(|l| l.task.clone()) else { return Ok(()) };
        match done {
            Done::Passed(head) => self.swap(&head),
            Done::Trouble(trouble) => self.evict(&name, &trouble),
            Done::Failed(why) => self.block(&name, &why),
        }
    }

    /// Ends the landing's job (a stop): the landing starts again at the next start.
    pub(super) fn abort_job(&mut self) {
        if let Some(job) = self.job.take() {
            job.abort();
        }
    }

    fn swap(&mut self, head: &str) -> Result<(), RalphError> {
        let Some(landing) = self.book.fleet.landing.clone() else { return Ok(()) };
        let name = landing.task.clone();
        match landing::finish(&mut self.book, head)? {
            Finished::Landed => {
                self.moved_in_a_row = 0;
                // The queue's rebase, for the record: never the agent's commits.
                self.event("task_rebased", json!({"task": name, "onto": landing.onto, "commits": landing.rebased}));
                self.landed(&name, Some(landing.started_at));
            }
            Finished::Moved => {
                self.moved_in_a_row += 1;
                let into = self.book.fleet.into.clone();
                self.reporter
                    .line(&format!("task {name}: {into} moved while it was landing; landing it again on the new tip"));
                self.event("landing_moved", json!({"task": name}));
                if self.moved_in_a_row >= MOVED_IN_A_ROW {
                    let why =
                        format!("{into} moved during {MOVED_IN_A_ROW} landings in a row; someone else is moving it");
                    self.pause(why);
                    self.moved_in_a_row = 0;
                }
            }
            Finished::Failed(why) => {
                self.reporter.line(&format!("task {name}: blocked: {why}"));
                self.event("landing_failed", json!({"task": name, "error": why}));
            }
        }
        Ok(())
    }

    /// A task is merged: said, journaled (with how long its landing took since it
    /// began: the rebase, the check, the swap); its worktree and branch go in a
    /// chore (deleting a worktree's files takes a while).
    fn landed(&mut self, name: &str, began: Option<jiff::Timestamp>) {
        let (into, head) =
            (self.book.fleet.into.clone(), self.book.fleet.tasks.get(name).and_then(|t| t.landed.clone()));
        let short = head.as_deref().map(crate::text::short).unwrap_or_default().to_string();
        self.reporter.line(&format!("task {name}: merged into {into} at {short}"));
        let ms = began.map(|since| jiff::Timestamp::now().duration_since(since).as_secs_f64() * 1000.0);
        self.event("task_merged", json!({"task": name, "head": head, "landing_ms": ms}));
        if let Some(tidy) = Tidy::of(&self.book, name) {
            self.chores.tidy(tidy);
        }
    }

    /// A merged task's cleanup is done: said, and a worktree that is gone forgotten.
    pub(super) fn on_tidied(&mut self, done: &Tidied) -> Result<(), RalphError> {
        for line in &done.lines {
            self.reporter.line(line);
        }
        let ms = done.took.as_secs_f64() * 1000.0;
        self.event("task_cleaned", json!({"task": done.task, "ms": ms, "worktree_gone": done.worktree_gone}));
        done.apply(&mut self.book)
    }

    /// The task goes back to its agent with `trouble`, or is blocked.
    fn evict(&mut self, name: &str, trouble: &Trouble) -> Result<(), RalphError> {
        let (line, back) = landing::evict(&mut self.book, name, trouble)?;
        self.reporter.line(&line);
        let number = self.book.fleet.tasks.get(name).map_or(0, |t| t.evictions);
        let kind = if back { "task_evicted" } else { "task_blocked" };
        self.event(kind, json!({"task": name, "number": number, "why": queue::short(trouble)}));
        Ok(())
    }

    fn block(&mut self, name: &str, why: &str) -> Result<(), RalphError> {
        let line = landing::block(&mut self.book, name, why)?;
        self.reporter.line(&line);
        self.event("landing_failed", json!({"task": name, "error": why}));
        Ok(())
    }

    /// `ralph fleet land TASK`: it lands next, before the others; a blocked task
    /// whose run is complete (resolved by hand) too.
    pub(super) fn land_request(&mut self, name: &str) -> Result<String, String> {
        landing::may_land(&mut self.book, name)?;
        self.land_first = Some(name.to_string());
        self.queue_paused = None;
        Ok(format!("task {name}: lands next"))
    }
}

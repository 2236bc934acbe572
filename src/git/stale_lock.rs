//! The one rule for a git lock file (`index.lock`, `HEAD.lock`, `packed-refs.lock`,
//! a ref's lock, `config.lock`): keep it, remove it, or look again. Pure, over facts
//! the shell ([`super::locks`]) gathers from `/proc`.
//!
//! Why removing is safe: git creates a lock with `O_CREAT|O_EXCL` and keeps its
//! descriptor open until it commits (renames) or rolls back (unlinks) it. Where git
//! closes the descriptor early and still owns the lock (`git commit` closes
//! `index.lock` while its hooks run; a ref transaction closes its ref locks before it
//! commits them), the owning git process is alive and works in the repository. So a
//! lock that no live process has open, with no live git working in the repository,
//! has no owner: nothing will ever commit or roll it back. Two races remain, both
//! closed by the age floor: a git that starts after the shell read its process
//! entry (its lock is younger than the scan), and a lock whose file exists a moment
//! before the process that made it is visible. A process whose entry the shell
//! cannot read (another user's) counts as a holder when it could have made the
//! file, so doubt keeps the lock.
//!
//! A linked worktree's record that `git worktree add` left without `commondir` is
//! judged alike ([`half_made_record_goes`]): git writes it file by file, so it is an
//! add cut short only when no git may still be writing it.

use std::time::Duration;

/// A lock younger than this is never judged stale: see the module doc.
pub(crate) const AGE_FLOOR: Duration = Duration::from_secs(2);

/// Who may still own a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub pid: u32,
    /// Its process name (`git`), when readable.
    pub name: String,
    pub how: How,
    /// A child of this ralph (its own git, still finishing).
    pub ours: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    /// It has the lock file open.
    Open,
    /// A git working in the repository (it may own a lock it closed early).
    GitHere,
    /// Its open files cannot be read, and it could have made the lock.
    Unreadable,
}

/// What the shell found about one lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    /// Since its last change.
    pub age: Duration,
    /// The first possible owner found; `None` when no live process may own it.
    pub holder: Option<Holder>,
}

/// A lock file removed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Removed {
    pub path: std::path::PathBuf,
    pub why: String,
}

/// What to do with a lock file.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A live process may own it: never removed; it is named to the person.
    Keep(Holder),
    /// Nobody owns it: removed, for this reason.
    Remove(String),
    /// Too young to judge, or ralph's own git is finishing with it: look again.
    Wait,
}

/// The rule.
pub(crate) fn decide(facts: &Facts) -> Decision {
    match &facts.holder {
        Some(h) if h.ours => Decision::Wait,
        Some(h) => Decision::Keep(h.clone()),
        None if facts.age < AGE_FLOOR => Decision::Wait,
        None => Decision::Remove(format!(
            "no process has it open and no git works in the repository ({} old): left by a git that was killed",
            humantime::format_duration(Duration::from_secs(facts.age.as_secs()))
        )),
    }
}

/// Whether a worktree record whose `commondir` is not written (empty or missing)
/// is cleared: only when the lock rule finds it abandoned. One still being written
/// (another thread's or process's add), or too new to judge, stays for a later look.
#[must_use]
pub(crate) fn half_made_record_goes(commondir_written: bool, facts: &Facts) -> bool {
    !commondir_written && matches!(decide(facts), Decision::Remove(_))
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.how {
            How::Open => "has it open",
            How::GitHere => "works in the repository",
            How::Unreadable => "could not be inspected",
        };
        write!(f, "{} (pid {}) {what}", if self.name.is_empty() { "a process" } else { &self.name }, self.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(how: How, ours: bool) -> Option<Holder> {
        Some(Holder { pid: 7, name: "git".into(), how, ours })
    }

    fn at(secs: u64, holder: Option<Holder>) -> Decision {
        decide(&Facts { age: Duration::from_secs(secs), holder })
    }

    #[test]
    fn an_old_lock_nobody_holds_is_removed_with_its_reason() {
        let Decision::Remove(why) = at(60, None) else { panic!("{:?}", at(60, None)) };
        assert!(why.contains("no process has it open") && why.contains("1m"), "{why}");
        assert!(matches!(at(2, None), Decision::Remove(_)));
    }

    #[test]
    fn a_young_lock_nobody_holds_is_looked_at_again() {
        assert_eq!(at(0, None), Decision::Wait);
        assert_eq!(at(1, None), Decision::Wait);
    }

    #[test]
    fn a_lock_another_process_may_own_is_kept_however_old() {
        for how in [How::Open, How::GitHere, How::Unreadable] {
            for age in [0, 1, 3600] {
                assert_eq!(at(age, holder(how, false)), Decision::Keep(holder(how, false).unwrap()), "{how:?} {age}");
            }
        }
    }

    #[test]
    fn a_lock_our_own_git_holds_is_waited_for() {
        for how in [How::Open, How::GitHere] {
            assert_eq!(at(3600, holder(how, true)), Decision::Wait);
        }
    }

    #[test]
    fn a_half_made_record_goes_only_when_old_and_no_git_may_be_writing_it() {
        let facts = |secs, holder| Facts { age: Duration::from_secs(secs), holder };
        assert!(half_made_record_goes(false, &facts(60, None)));
        assert!(!half_made_record_goes(false, &facts(0, None)), "still being written, maybe");
        for (how, ours) in [(How::GitHere, false), (How::GitHere, true), (How::Unreadable, false)] {
            assert!(!half_made_record_goes(false, &facts(3600, holder(how, ours))), "{how:?} {ours}");
        }
        assert!(!half_made_record_goes(true, &facts(3600, None)), "a whole record is no add cut short");
    }

    #[test]
    fn a_holder_is_named() {
        assert_eq!(holder(How::Open, false).unwrap().to_string(), "git (pid 7) has it open");
        let nameless = Holder { pid: 9, name: String::new(), how: How::Unreadable, ours: false };
        assert_eq!(nameless.to_string(), "a process (pid 9) could not be inspected");
    }
}

//! Whether a run may start in this repository, and what the baseline is: pure, over
//! facts the shell gathered. Every refusal here is found before anything runs (exit 2).

/// What the shell found in the repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RepoFacts {
    /// Operations in progress: "rebase", "merge", "cherry-pick", "revert".
    pub in_progress: Vec<&'static str>,
    /// An email for the committer is known (config, environment or `[git]`).
    pub has_email: bool,
    /// Changed paths other than ralph's own.
    pub dirty: Vec<String>,
    /// The current branch; `None` for a detached HEAD.
    pub branch: Option<String>,
    /// The `[git] branch` exists already.
    pub wanted_branch_exists: bool,
}

/// What the user asked for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Wants<'a> {
    pub commits_on: bool,
    pub allow_dirty: bool,
    pub branch: Option<&'a str>,
}

/// How a new run starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Baseline {
    /// Dirty paths kept out of every commit (`--allow-dirty`).
    pub held: Vec<String>,
    /// Create and switch to this branch.
    pub create_branch: Option<String>,
    /// Commits go on a detached HEAD.
    pub detached: bool,
}

/// Why a run cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error(
        "a git {0} is in progress in this repository; finish or abort it (`git {0} --continue` or `--abort`) before running ralph"
    )]
    InProgress(&'static str),
    #[error(
        "git has no user.email, and ralph commits the agents' work; run `git config user.email you@example.com`, set [git] author, or set [git] commit = \"off\""
    )]
    NoEmail,
    #[error("the working tree has changes ralph did not make ({}); commit or stash them, or run with --allow-dirty to keep them out of ralph's commits", list(.0))]
    Dirty(Vec<String>),
    #[error("[git] branch {0:?} exists already; delete it, switch to it yourself, or name another branch")]
    BranchExists(String),
}

/// The first few of a list of paths, "a, b, c, d, e and 2 more".
pub(crate) fn list(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = paths.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > SHOWN {
        s.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    s
}

/// The checks every start makes, new run or resume.
pub(crate) fn check_always(facts: &RepoFacts, wants: Wants<'_>) -> Result<(), Refusal> {
    if let Some(op) = facts.in_progress.first() {
        return Err(Refusal::InProgress(op));
    }
    if wants.commits_on && !facts.has_email {
        return Err(Refusal::NoEmail);
    }
    Ok(())
}

/// A new run: the checks, then the baseline.
pub(crate) fn new_run(facts: &RepoFacts, wants: Wants<'_>) -> Result<Baseline, Refusal> {
    check_always(facts, wants)?;
    // Without commits a dirty tree is nobody's problem: nothing of it is committed.
    if wants.commits_on && !facts.dirty.is_empty() && !wants.allow_dirty {
        return Err(Refusal::Dirty(facts.dirty.clone()));
    }
    let create_branch = match wants.branch {
        Some(b) if facts.branch.as_deref() == Some(b) => None,
        Some(b) if facts.wanted_branch_exists => return Err(Refusal::BranchExists(b.to_string())),
        Some(b) => Some(b.to_string()),
        None => None,
    };
    Ok(Baseline {
        held: facts.dirty.clone(),
        detached: facts.branch.is_none() && create_branch.is_none(),
        create_branch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> RepoFacts {
        RepoFacts { has_email: true, branch: Some("main".into()), ..RepoFacts::default() }
    }

    fn on() -> Wants<'static> {
        Wants { commits_on: true, ..Wants::default() }
    }

    #[test]
    fn a_clean_repository_starts() {
        assert_eq!(new_run(&clean(), on()), Ok(Baseline::default()));
    }

    #[test]
    fn an_operation_in_progress_refuses_always() {
        let facts = RepoFacts { in_progress: vec!["rebase"], ..clean() };
        assert_eq!(new_run(&facts, on()), Err(Refusal::InProgress("rebase")));
        assert_eq!(check_always(&facts, Wants::default()), Err(Refusal::InProgress("rebase")));
        assert!(Refusal::InProgress("merge").to_string().contains("git merge --continue"));
    }

    #[test]
    fn a_missing_email_refuses_only_with_commits_on() {
        let facts = RepoFacts { has_email: false, ..clean() };
        assert_eq!(new_run(&facts, on()), Err(Refusal::NoEmail));
        assert!(new_run(&facts, Wants::default()).is_ok());
    }

    #[test]
    fn dirty_files_refuse_unless_allowed_and_are_then_held() {
        let facts = RepoFacts { dirty: (1..=7).map(|i| format!("f{i}")).collect(), ..clean() };
        let err = new_run(&facts, on()).unwrap_err();
        assert!(err.to_string().contains("f1, f2, f3, f4, f5 and 2 more"), "{err}");
        let allowed = new_run(&facts, Wants { allow_dirty: true, ..on() }).expect("allowed");
        assert_eq!(allowed.held, facts.dirty);
        let off = new_run(&facts, Wants::default()).expect("no commits, no refusal");
        assert_eq!(off.held, facts.dirty);
    }

    #[test]
    fn the_branch_is_created_unless_it_is_current_or_exists() {
        let wants = Wants { branch: Some("ralph/x"), ..on() };
        assert_eq!(new_run(&clean(), wants).map(|b| b.create_branch), Ok(Some("ralph/x".into())));
        let on_it = RepoFacts { branch: Some("ralph/x".into()), wanted_branch_exists: true, ..clean() };
        assert_eq!(new_run(&on_it, wants).map(|b| b.create_branch), Ok(None));
        let exists = RepoFacts { wanted_branch_exists: true, ..clean() };
        assert_eq!(new_run(&exists, wants), Err(Refusal::BranchExists("ralph/x".into())));
    }

    #[test]
    fn a_detached_head_is_committed_on() {
        let facts = RepoFacts { branch: None, ..clean() };
        assert_eq!(new_run(&facts, on()).map(|b| b.detached), Ok(true));
        let with_branch = Wants { branch: Some("b"), ..on() };
        assert_eq!(new_run(&facts, with_branch).map(|b| b.detached), Ok(false));
    }
}

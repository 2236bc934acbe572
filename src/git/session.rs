//! The run's git session, the shell over [`super::repo`] for one run: opening it (the
//! pre-flight checks and, for a new run, the baseline), and the commit step (the
//! trailer lookup that makes it exactly once, the agent's own commits, the files a
//! commit takes by [`super::plan`]'s rules, the commit), reported as facts
//! ([`CommitReport`]); what they come to is the run's decision (`step::git`). Also
//! what a new run would do, for `--dry-run`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::{CommitMode, GitConfig, Identity, Loaded};
use crate::events::{GitOffWhy, RunEvent};

use super::attribution::Touched;
use super::message;
use super::plan::Tree;
use super::plan::{self, Exempt, Facts, Rules};
use super::preflight::{self, Refusal, RepoFacts, Wants};
use super::record::{AgentMoved, CommitOutcome, CommitRecord, CommitReport, GitState, Pending};
use super::repo::{CommitFailure, Discovery, GitError, Identities, Repo};

/// Files larger than this are not searched for secrets (they are logs or binaries;
/// a new one is held back by `max_new_file` anyway).
const MAX_SCANNED: u64 = 64 * 1024 * 1024;

/// A run with git features on.
#[derive(Debug, Clone)]
pub(crate) struct GitSession {
    repo: Repo,
    config: GitConfig,
    exempt: Exempt,
    who: Identities,
    /// Where agents run (relative tool paths are relative to it).
    cwd: PathBuf,
    /// `cwd` relative to the top (`""` at the top).
    cwd_rel: String,
}

/// Why the session cannot be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// The repository's state refuses the run (a rebase under way, a dirty tree...).
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Git(#[from] GitError),
}

/// Git for a run, checked: every refusal is found here, before anything changes
/// (`open` then changes what it must: a branch, the baseline, the files held).
#[derive(Debug)]
pub(crate) enum Checked {
    /// Git features are off for the run, and why.
    Off(GitOffWhy),
    On(Box<Usable>),
}

/// A repository the run may use.
#[derive(Debug)]
pub(crate) struct Usable {
    session: GitSession,
    /// A new run's baseline; `None` on resume.
    baseline: Option<preflight::Baseline>,
    /// A fleet task: an operation its agent left unfinished is aborted first.
    abort_first: bool,
}

/// Checks git for the run, changing nothing: the repository's state (an operation
/// in progress, the committer's email) for every start, and for a new run a dirty
/// tree and the branch, after the index lock is waited out (a stale one removed). `state` is the resumed run's git state.
/// `fleet_tasks`: the run is a fleet task, and this is its fleet's `[fleet] tasks`
/// glob (docs/fleet.md): the task files are never committed, and a rebase, merge or
/// cherry-pick its agent left unfinished is no refusal: `open` aborts it (the
/// iteration runs again), never left for a person.
pub(crate) fn check(
    dir: &Path,
    loaded: &Loaded,
    state: Option<&GitState>,
    (resumed, allow_dirty): (bool, bool),
    fleet_tasks: Option<&str>,
) -> Result<Checked, OpenError> {
    let config = loaded.config.git.clone();
    let repo = match Repo::discover(dir) {
        Discovery::Repo(repo) => repo.with_commit_timeout(loaded.config.timeouts.tool),
        Discovery::NotARepo => return Ok(Checked::Off(GitOffWhy::NotARepository)),
        Discovery::NoGit => return Ok(Checked::Off(GitOffWhy::GitMissing)),
    };
    if resumed && state.is_none() {
        // The run started without git features; a baseline now would not be the
        // run's start, so it stays without them.
        return Ok(Checked::Off(GitOffWhy::StartedWithoutGit));
    }
    // A fleet task's unfinished operation is aborted by `open`, not refused.
    let abort_first = fleet_tasks.is_some();
    let who = identities(&repo, &config)?;
    let has_email = who.committer.is_some() || email_known(&repo)?;
    let top = repo.top().to_path_buf();
    let mut exempt = exempt(&top, dir, &loaded.path, &dir.join(&loaded.config.general.prompt));
    exempt.globs.extend(fleet_tasks.map(str::to_string));
    let commits_on = config.commit != CommitMode::Off;
    let mut facts = RepoFacts {
        in_progress: if abort_first { Vec::new() } else { repo.in_progress()? },
        has_email,
        dirty: Vec::new(),
        branch: repo.branch()?,
        wanted_branch_exists: false,
    };
    let wants = Wants { commits_on, allow_dirty, branch: config.branch.as_deref() };
    let baseline = if resumed {
        preflight::check_always(&facts, wants)?;
        None
    } else {
        // A stale index lock goes (the one rule); a held one is waited out, then
        // named (exit 3).
        repo.wait_out_index_lock()?;
        facts.dirty = plan::dirty_at_start(&repo.status()?, &exempt);
        if let Some(b) = &config.branch {
            facts.wanted_branch_exists = repo.branch_exists(b)?;
        }
        Some(preflight::new_run(&facts, wants)?)
    };
    let cwd_rel = std::fs::canonicalize(dir)
        .ok()
        .and_then(|real| real.strip_prefix(&top).ok().map(|r| r.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let session = GitSession { repo, config, exempt, who, cwd: dir.to_path_buf(), cwd_rel };
    Ok(Checked::On(Box::new(Usable { session, baseline, abort_first })))
}

impl Checked {
    /// Opens git for the checked run: a new run's branch and baseline (recorded in
    /// `state`); a resumed run's files a person changed while ralph was stopped in
    /// order (`clean_stop`), held for the rest of the run. `say` hears what a person
    /// should know.
    pub(crate) fn open(
        self,
        loaded: &Loaded,
        state: &mut Option<GitState>,
        clean_stop: bool,
        say: &mut dyn FnMut(RunEvent),
    ) -> Result<Option<GitSession>, GitError> {
        let usable = match self {
            Checked::Off(why) => {
                say(RunEvent::GitOff { why });
                return Ok(None);
            }
            Checked::On(usable) => usable,
        };
        let Usable { session, baseline, abort_first } = *usable;
        let repo = &session.repo;
        if abort_first {
            abort_unfinished(repo, say)?;
        }
        match (baseline, state.as_mut()) {
            (Some(baseline), _) => {
                if let Some(b) = &baseline.create_branch {
                    repo.create_branch(b)?;
                    say(RunEvent::GitBranchCreated { branch: b.clone() });
                }
                let head = repo.head()?;
                if baseline.detached {
                    say(RunEvent::GitDetached { head: head.clone() });
                }
                if !baseline.held.is_empty() {
                    say(RunEvent::GitHeld { files: baseline.held.clone() });
                }
                let held_content = baseline.held.iter().map(|p| (p.clone(), content_hash(repo.top(), p))).collect();
                *state = Some(GitState {
                    top: repo.top().display().to_string(),
                    baseline: head.clone(),
                    branch: repo.branch()?,
                    held: baseline.held,
                    held_content,
                    head,
                    ..GitState::default()
                });
            }
            (None, Some(git)) => session.hold_changed_while_stopped(git, clean_stop, say)?,
            (None, None) => {}
        }
        // Hidden by value everywhere from now on, the commit's files included, even
        // before the first attempt hands them out (a resume's pending commit).
        crate::secrets::hide_values(credential_values(loaded).iter().map(String::as_str));
        Ok(Some(session))
    }
}

/// What a new run here would do with git, for `--dry-run`: read-only (git status and
/// the branch), nothing is created or committed.
pub(crate) fn preview(dir: &Path, loaded: &Loaded) -> String {
    let config = &loaded.config.git;
    let repo = match Repo::discover(dir) {
        Discovery::Repo(repo) => repo,
        Discovery::NotARepo => return "git: not a repository: nothing would be committed\n".to_string(),
        Discovery::NoGit => return "git: git is not installed: nothing would be committed\n".to_string(),
    };
    let unit = match config.commit {
        CommitMode::Off => return "git: [git] commit = \"off\": nothing would be committed\n".to_string(),
        CommitMode::Iteration => "each finished iteration",
        CommitMode::Phase => "each finished phase",
    };
    let on = match (&config.branch, repo.branch().ok().flatten()) {
        (Some(wanted), _) => format!("branch {wanted} ([git] branch)"),
        (None, Some(current)) => format!("branch {current}"),
        (None, None) => "the detached HEAD".to_string(),
    };
    let top = repo.top().to_path_buf();
    let exempt = exempt(&top, dir, &loaded.path, &dir.join(&loaded.config.general.prompt));
    let mut s = format!(
        "git: would commit {unit} on {on}: the files changed during it, new ones included (not over {} bytes, \
         none holding a secret); never ralph.toml, the goal file or .agent/\n",
        config.max_new_file.0
    );
    match repo.status().map(|changed| plan::dirty_at_start(&changed, &exempt)) {
        Ok(dirty) if dirty.is_empty() => s.push_str("git: the working tree is clean\n"),
        Ok(dirty) => s.push_str(&format!(
            "git: {} file(s) changed now ({}): a new run refuses them without --allow-dirty, which keeps them \
             out of every commit\n",
            dirty.len(),
            dirty.join(", ")
        )),
        Err(e) => s.push_str(&format!("git: cannot read the working tree: {e}\n")),
    }
    s
}

impl GitSession {
    /// The working tree now: every changed path but ralph's own, with a hash of its
    /// content. Recorded at an orderly stop, so that a resume tells what a person
    /// changed meanwhile.
    pub(crate) fn tree(&self) -> Result<Tree, GitError> {
        let changed = self.repo.status()?;
        let top = self.repo.top();
        Ok(changed
            .into_iter()
            .filter(|c| !self.exempt.covers(&c.path))
            .map(|c| (c.path.clone(), content_hash(top, &c.path)))
            .collect())
    }

    /// A resume after an orderly stop: the paths a person changed since (by
    /// `plan::changed_while_stopped`) are held for the rest of the run, with their
    /// content, and named once. After a crash the tree is the agent's. Either way
    /// the tree of the stop is used up.
    fn hold_changed_while_stopped(
        &self,
        git: &mut GitState,
        clean_stop: bool,
        say: &mut dyn FnMut(RunEvent),
    ) -> Result<(), GitError> {
        let Some(at_stop) = git.stopped.take() else { return Ok(()) };
        if !clean_stop {
            return Ok(());
        }
        let now = self.tree()?;
        let files = plan::changed_while_stopped(&at_stop, &now);
        for path in &files {
            git.hold(path);
            if let Some(hash) = now.get(path) {
                git.held_content.insert(path.clone(), hash.clone());
            }
        }
        if !files.is_empty() {
            say(RunEvent::GitChangedWhileStopped { files });
        }
        Ok(())
    }

    /// The commit step of `pending`: stale locks first after a crash, then the
    /// trailer lookup, the agent's own commits, the files the commit takes, the
    /// commit. `git` is the run's git state when it was ordered.
    pub(crate) fn commit(
        &self,
        git: &GitState,
        pending: &Pending,
        run_id: &str,
        touched: &Touched,
        after_crash: bool,
    ) -> CommitReport {
        let stale_locks = if after_crash { self.repo.sweep_locks() } else { Vec::new() };
        let mut report = CommitReport { stale_locks, ..CommitReport::default() };
        report.outcome = match self.try_commit(git, pending, run_id, touched, &mut report) {
            Ok(outcome) => outcome,
            Err(e) => CommitOutcome::Failed(e.to_string()),
        };
        report
    }

    fn try_commit(
        &self,
        git: &GitState,
        pending: &Pending,
        run_id: &str,
        touched: &Touched,
        report: &mut CommitReport,
    ) -> Result<CommitOutcome, GitError> {
        let repo = &self.repo;
        let log = repo.log_since(git.baseline.as_deref())?;
        if let Some(hash) = message::find_commit(&log, run_id, &pending.key) {
            return Ok(CommitOutcome::Found(self.record(&hash, &pending.key)?));
        }
        let head = repo.head()?;
        if head != git.head
            && let Some(to) = &head
        {
            let commits = repo.commits_between(git.head.as_deref(), to)?;
            report.agent_moved = Some(AgentMoved { from: git.head.clone(), to: to.clone(), commits });
        }
        let held: BTreeSet<String> = git.held.iter().cloned().collect();
        let changed = repo.status()?;
        // A held file (a person's) that changed again, the agent's doing or not: never
        // committed, and said once per change.
        let held_now: Tree = changed
            .iter()
            .filter(|c| held.contains(&c.path))
            .map(|c| (c.path.clone(), content_hash(repo.top(), &c.path)))
            .collect();
        let again = plan::changed_again(&git.held_content, &held_now);
        report.left_out.extend(again.into_iter().map(|path| (path, plan::LeftOut::Held)));
        report.seen = held_now.into_iter().collect();
        let candidates = plan::candidates(changed, &self.exempt, &held);
        let allow = &self.config.allow_secrets;
        let facts = candidates.into_iter().map(|change| measure(repo.top(), change, allow)).collect();
        let bases: [(&Path, &str); 2] = [(repo.top(), ""), (&self.cwd, &self.cwd_rel)];
        let agent_files = if self.config.only_agent_files { touched.files(&bases, &self.cwd) } else { None };
        let selection =
            plan::select(facts, Rules { agent_files: agent_files.as_ref(), max_new_file: self.config.max_new_file.0 });
        for (path, why) in &selection.left_out {
            if why.held_for_the_run() {
                report.seen.push((path.clone(), content_hash(repo.top(), path)));
            }
        }
        report.left_out.extend(selection.left_out);
        if selection.commit.is_empty() {
            return Ok(CommitOutcome::Nothing);
        }
        match repo.commit(&selection.commit, &pending.message, &self.who) {
            Ok(hash) => Ok(CommitOutcome::Committed(self.record(&hash, &pending.key)?)),
            Err(CommitFailure::HookRejected(output)) => Ok(CommitOutcome::Rejected(crate::secrets::redact(&output))),
            Err(CommitFailure::Other(e)) => Err(e),
        }
    }

    fn record(&self, hash: &str, key: &str) -> Result<CommitRecord, GitError> {
        let (files, insertions, deletions) = self.repo.diff_stats(hash)?;
        Ok(CommitRecord { hash: hash.to_string(), key: key.to_string(), files, insertions, deletions })
    }
}

/// ralph's own files, relative to the top: the config, the goal, `.agent/`.
fn exempt(top: &Path, dir: &Path, config: &Path, goal: &Path) -> Exempt {
    let rel = |p: &Path| -> Option<String> {
        let real = std::fs::canonicalize(p).ok().or_else(|| {
            // `.agent/` exists by now; a missing file is still named relative to dir.
            let parent = std::fs::canonicalize(p.parent()?).ok()?;
            Some(parent.join(p.file_name()?))
        })?;
        let top = std::fs::canonicalize(top).unwrap_or_else(|_| top.to_path_buf());
        let r = real.strip_prefix(&top).ok()?;
        Some(r.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/"))
    };
    Exempt {
        files: [config, goal].into_iter().filter_map(rel).collect(),
        dirs: rel(&dir.join(".agent")).into_iter().collect(),
        globs: Vec::new(),
    }
}

/// A fleet task's worktree: the git operations its agent left unfinished (its ralph
/// stopped in the middle of an eviction) are aborted, each said.
fn abort_unfinished(repo: &Repo, say: &mut dyn FnMut(RunEvent)) -> Result<(), GitError> {
    for op in repo.in_progress()? {
        let error = repo.git(&[op, "--abort"]).err().map(|e| e.to_string());
        say(RunEvent::FleetGitAborted { op: op.to_string(), error });
    }
    Ok(())
}

fn identities(repo: &Repo, config: &GitConfig) -> Result<Identities, GitError> {
    let parse = |s: &Option<String>| s.as_deref().and_then(Identity::parse);
    let author = parse(&config.author);
    let mut committer = parse(&config.committer);
    // A configured author without a user identity commits as that author.
    if committer.is_none() && author.is_some() && !email_known(repo)? {
        committer = author.clone();
    }
    Ok(Identities { author, committer })
}

/// Whether git knows an email for the committer without `[git]` settings.
fn email_known(repo: &Repo) -> Result<bool, GitError> {
    let env = ["GIT_COMMITTER_EMAIL", "EMAIL"].iter().any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty()));
    Ok(env || repo.config("user.email")?.is_some())
}

/// The values of credential-like variables ralph passes to the configured agents.
fn credential_values(loaded: &Loaded) -> Vec<String> {
    let agents = loaded.config.agents.values();
    let values: BTreeSet<String> = agents
        .flat_map(|agent| crate::agent::env::build(std::env::vars(), agent.kind, &agent.pass_env, Vec::new()).vars)
        .filter_map(|(k, v)| (crate::agent::env::looks_secret(&k) && v.len() >= 8).then_some(v))
        .collect();
    values.into_iter().collect()
}

/// A hash of what `path` (relative to `top`) holds now: its bytes, a link's target,
/// or a mark for a path that is gone or not a file.
fn content_hash(top: &Path, path: &str) -> String {
    use sha2::Digest;
    let full = top.join(path);
    let hex = |bytes: &[u8]| sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>();
    match std::fs::symlink_metadata(&full) {
        Err(_) => "gone".to_string(),
        Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(&full)
            .map_or_else(|_| "link".into(), |t| format!("link:{}", hex(t.as_os_str().as_encoded_bytes()))),
        Ok(meta) if meta.is_file() => {
            // Streamed: a large file is never read into memory whole.
            let mut hasher = sha2::Sha256::new();
            let streamed = std::fs::File::open(&full).and_then(|mut file| {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match std::io::Read::read(&mut file, &mut buf)? {
                        0 => return Ok(()),
                        n => hasher.update(&buf[..n]),
                    }
                }
            });
            match streamed {
                Ok(()) => hasher.finalize().iter().map(|b| format!("{b:02x}")).collect(),
                Err(_) => "unreadable".to_string(),
            }
        }
        Ok(_) => "not a file".to_string(),
    }
}

/// Size and secret check of one candidate.
fn measure(top: &Path, change: plan::Changed, allow: &[String]) -> Facts {
    let path = top.join(&change.path);
    let size = std::fs::symlink_metadata(&path).ok().filter(|m| m.is_file()).map(|m| m.len());
    let secret = (!plan::allowed(&change.path, allow) && size.is_some_and(|s| s <= MAX_SCANNED))
        .then(|| std::fs::read(&path).ok())
        .flatten()
        .and_then(|content| crate::secrets::found::in_bytes(&content).into_iter().next());
    Facts { change, size, secret }
}

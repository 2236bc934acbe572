//! The dispatcher's git steps (docs/git.md): the baseline when a new run is set up,
//! the commit after an iteration (or phase) is recorded done, and on resume the
//! completion of a commit that a kill interrupted. Decisions are in `crate::git`;
//! this file carries them out and records them.
//!
//! Exactly once: before committing, the checkpoint durably says "iteration K is done,
//! commit pending" with the message. A resume that finds that looks the trailers up
//! (`Ralph-Run:`, `Ralph-Iteration: K`) and only commits when no such commit exists;
//! the position advances in the same checkpoint write that clears the mark.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::{CommitMode, GitConfig, Loaded};
use crate::error::RalphError;
use crate::events::RunEvent;
use crate::git::message::{self, Identity, MessageContext};
use crate::git::plan::{self, Exempt, Facts, Rules};
use crate::git::preflight::{self, RepoFacts, Wants};
use crate::git::record::{CommitRecord, GitState, Pending};
use crate::git::repo::{CommitFailure, Discovery, GitError, Identities, Repo};
use crate::recovery::policy::{self, Facts as PolicyFacts, Next, Stop};
use crate::recovery::{Category, Classification};
use crate::report::Reporter;
use crate::signal::Signals;
use crate::state::checkpoint::Checkpoint;
use crate::supervise::note::Trouble;
use crate::workflow::done::Completion;

use super::attempt::Outcome;
use super::dispatch::{Dispatcher, Flow};
use super::failure::tail_chars;

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

/// What the commit step came to.
#[derive(Debug)]
pub(crate) enum Step {
    /// Committed, found already committed, or nothing to commit.
    Done,
    /// A hook rejected the commit: the iteration failed, with this output.
    Rejected(String),
    /// git failed in a way a person must look at.
    Blocked(String),
}

/// Sets git up for the run: nothing outside a repository (one line), the pre-flight
/// checks and the baseline for a new run, only the checks on resume.
pub(crate) fn setup(
    dir: &Path,
    loaded: &Loaded,
    checkpoint: &mut Checkpoint,
    resumed: bool,
    allow_dirty: bool,
    reporter: &Reporter,
) -> Result<Option<GitSession>, RalphError> {
    let config = loaded.config.git.clone();
    let repo = match Repo::discover(dir) {
        Discovery::Repo(repo) => repo.with_commit_timeout(loaded.config.timeouts.tool),
        Discovery::NotARepo => {
            reporter.line("not a git repository: git features are off");
            return Ok(None);
        }
        Discovery::NoGit => {
            reporter.line("git is not installed: git features are off");
            return Ok(None);
        }
    };
    if resumed && checkpoint.git.is_none() {
        // The run started without git features; a baseline now would not be the
        // run's start, so it stays without them.
        reporter.line("this run started without git features: they stay off until it ends");
        return Ok(None);
    }
    // A fleet task's unfinished rebase (its agent was stopped mid-eviction) is aborted.
    for line in crate::fleet::task::abort_unfinished(dir, &repo) {
        reporter.line(&line);
    }
    let fail = |e: GitError| RalphError::GitSetup(format!("git: {e}"));
    let who = identities(&repo, &config).map_err(fail)?;
    let has_email = who.committer.is_some() || email_known(&repo).map_err(fail)?;
    let top = repo.top().to_path_buf();
    let exempt = exempt(&top, dir, &loaded.path, &dir.join(&loaded.config.general.prompt));
    let commits_on = config.commit != CommitMode::Off;
    let mut facts = RepoFacts {
        in_progress: repo.in_progress().map_err(fail)?,
        index_locked: repo.index_lock().map_err(fail)?.exists(),
        has_email,
        dirty: Vec::new(),
        branch: repo.branch().map_err(fail)?,
        wanted_branch_exists: false,
    };
    let wants = Wants { commits_on, allow_dirty, branch: config.branch.as_deref() };
    if resumed {
        preflight::check_always(&facts, wants)?;
    } else {
        facts.dirty = plan::dirty_at_start(&repo.status().map_err(fail)?, &exempt);
        if let Some(b) = &config.branch {
            facts.wanted_branch_exists = repo.branch_exists(b).map_err(fail)?;
        }
        let baseline = preflight::new_run(&facts, wants)?;
        if let Some(b) = &baseline.create_branch {
            repo.create_branch(b).map_err(fail)?;
            reporter.line(&format!("git: created branch {b}; ralph commits on it"));
        }
        let head = repo.head().map_err(fail)?;
        if baseline.detached {
            let at = head.as_deref().map(|h| format!(" at {}", crate::report::lines::short(h))).unwrap_or_default();
            reporter
                .line(&format!("git: HEAD is detached{at}; ralph commits on it (`git branch NAME` keeps the commits)"));
        }
        let held = baseline.held.len();
        if held > 0 {
            reporter.line(&format!("git: --allow-dirty: {held} changed file(s) are left out of every commit"));
        }
        checkpoint.git = Some(GitState {
            top: top.display().to_string(),
            baseline: head.clone(),
            branch: repo.branch().map_err(fail)?,
            held: baseline.held,
            head,
            ..GitState::default()
        });
    }
    // Hidden by value everywhere from now on, the commit's files included, even
    // before the first attempt hands them out (a resume's pending commit).
    crate::secrets::hide_values(credential_values(loaded).iter().map(String::as_str));
    let cwd_rel = std::fs::canonicalize(dir)
        .ok()
        .and_then(|real| real.strip_prefix(&top).ok().map(|r| r.to_string_lossy().into_owned()))
        .unwrap_or_default();
    Ok(Some(GitSession { repo, config, exempt, who, cwd: dir.to_path_buf(), cwd_rel }))
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
        // A fleet task never commits the task files (docs/fleet.md).
        globs: crate::fleet::task::exempt_globs(dir),
    }
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
        .flat_map(|agent| crate::process::env::build(std::env::vars(), agent.kind, &agent.pass_env, Vec::new()).vars)
        .filter_map(|(k, v)| (crate::process::env::looks_secret(&k) && v.len() >= 8).then_some(v))
        .collect();
    values.into_iter().collect()
}

impl Dispatcher {
    /// Journals the baseline of a new run (once: a resume keeps the first).
    pub(super) fn journal_git_start(&mut self) {
        let Some(git) = self.r.checkpoint.git.as_ref().filter(|_| !self.r.resumed) else { return };
        let event = RunEvent::GitBaseline {
            top: git.top.clone(),
            baseline: git.baseline.clone(),
            branch: git.branch.clone(),
            held: git.held.clone(),
            commit: self.r.git.as_ref().map(|s| s.config.commit),
        };
        self.emit(event);
    }

    /// After an attempt reached its done signal and before the position advances:
    /// commit the iteration's work when the config says so.
    pub(super) fn commit_done(&mut self, completion: Completion, final_message: &str) -> Result<Step, RalphError> {
        let (Some(session), Some(_)) = (&self.r.git, &self.r.checkpoint.git) else { return Ok(Step::Done) };
        let commit_now = match session.config.commit {
            CommitMode::Off => false,
            CommitMode::Iteration => true,
            CommitMode::Phase => {
                let mut progress = self.r.checkpoint.progress.clone();
                !matches!(
                    policy::on_success(&mut progress, &self.r.loaded.phases, self.r.loaded.repeat, completion.clone()),
                    Next::Iteration
                )
            }
        };
        if !commit_now {
            return Ok(Step::Done);
        }
        let pos = &self.r.checkpoint.progress.position;
        let key = message::iteration_key(&pos.phase_name, pos.iteration, pos.pass);
        let summary = message::summarize(final_message);
        let text = message::render(
            &session.config.message,
            &MessageContext {
                phase: &pos.phase_name,
                iteration: pos.iteration,
                run_id: &self.r.checkpoint.run_id,
                key: &key,
                summary: &summary,
                task: self.r.fleet.as_ref().map(crate::fleet::task::TaskRun::commit_trailer),
            },
        );
        if let Some(git) = self.r.checkpoint.git.as_mut() {
            git.pending = Some(Pending { key, message: text, goal: completion == Completion::Goal });
        }
        // From here a kill resumes into the trailer lookup, never into a rerun.
        self.save()?;
        Ok(self.complete_pending())
    }

    /// Makes the pending commit unless it exists. Clears the mark in memory only:
    /// the caller's next checkpoint write also carries the advanced position.
    fn complete_pending(&mut self) -> Step {
        let Some(session) = self.r.git.clone() else { return Step::Done };
        let Some(state) = self.r.checkpoint.git.clone() else { return Step::Done };
        let Some(pending) = state.pending.clone() else { return Step::Done };
        let run_id = self.r.checkpoint.run_id.clone();
        let result = self.commit_pending(&session, &state, &pending, &run_id);
        let touched = std::mem::take(&mut self.touched);
        match result {
            Ok(step) => {
                if let Some(git) = self.r.checkpoint.git.as_mut() {
                    git.pending = None;
                }
                step
            }
            Err(e) => {
                self.touched = touched;
                let message = format!("git: cannot commit {}: {e}", pending.key);
                self.emit(RunEvent::GitError { key: pending.key.clone(), error: e.to_string() });
                Step::Blocked(message)
            }
        }
    }

    fn commit_pending(
        &mut self,
        session: &GitSession,
        state: &GitState,
        pending: &Pending,
        run_id: &str,
    ) -> Result<Step, GitError> {
        let repo = &session.repo;
        let log = repo.log_since(state.baseline.as_deref())?;
        if let Some(hash) = message::find_commit(&log, run_id, &pending.key) {
            self.record_commit(repo, &hash, &pending.key, true)?;
            return Ok(Step::Done);
        }
        let head = repo.head()?;
        if head != state.head
            && let Some(to) = &head
        {
            let commits = repo.commits_between(state.head.as_deref(), to)?;
            let count = u32::try_from(commits.len()).unwrap_or(u32::MAX);
            self.emit(RunEvent::GitAgentCommitted {
                key: pending.key.clone(),
                from: state.head.clone(),
                to: to.clone(),
                commits,
            });
            if let Some(git) = self.r.checkpoint.git.as_mut() {
                git.head = head.clone();
                git.agent_commits += count;
            }
        }
        let held: BTreeSet<String> = state.held.iter().cloned().collect();
        let candidates = plan::candidates(repo.status()?, &session.exempt, &held);
        let allow = &session.config.allow_secrets;
        let facts = candidates.into_iter().map(|change| measure(repo.top(), change, allow)).collect();
        let bases: [(&Path, &str); 2] = [(repo.top(), ""), (&session.cwd, &session.cwd_rel)];
        let agent_files = if session.config.only_agent_files { self.touched.files(&bases, &session.cwd) } else { None };
        let selection = plan::select(
            facts,
            Rules { agent_files: agent_files.as_ref(), max_new_file: session.config.max_new_file.0 },
        );
        for (path, why) in &selection.left_out {
            self.emit(RunEvent::GitLeftOut {
                key: pending.key.clone(),
                path: path.clone(),
                reason: why.key().to_string(),
                detail: why.describe(),
            });
            if why.held_for_the_run()
                && let Some(git) = self.r.checkpoint.git.as_mut()
            {
                git.hold(path);
            }
        }
        if selection.commit.is_empty() {
            self.emit(RunEvent::GitNothingToCommit { key: pending.key.clone() });
            return Ok(Step::Done);
        }
        match repo.commit(&selection.commit, &pending.message, &session.who) {
            Ok(hash) => {
                self.record_commit(repo, &hash, &pending.key, false)?;
                Ok(Step::Done)
            }
            Err(CommitFailure::HookRejected(output)) => {
                let output = crate::secrets::redact(&output);
                self.emit(RunEvent::GitCommitRejected { key: pending.key.clone(), output: tail_chars(&output, 4000) });
                Ok(Step::Rejected(output))
            }
            Err(CommitFailure::Other(e)) => Err(e),
        }
    }

    fn record_commit(&mut self, repo: &Repo, hash: &str, key: &str, found: bool) -> Result<(), GitError> {
        let (files, insertions, deletions) = repo.diff_stats(hash)?;
        self.emit(RunEvent::GitCommit {
            hash: hash.to_string(),
            key: key.to_string(),
            files,
            insertions,
            deletions,
            found_on_resume: found,
        });
        if let Some(git) = self.r.checkpoint.git.as_mut() {
            git.record(CommitRecord { hash: hash.to_string(), key: key.to_string(), files, insertions, deletions });
        }
        Ok(())
    }

    /// What the commit step leaves the iteration to: the policy's next step after a
    /// success, the rejected commit's failure, or a stop.
    pub(super) fn after_commit(&mut self, step: Step, completion: Completion, outcome: &Outcome) -> Next {
        let progress = &mut self.r.checkpoint.progress;
        match step {
            Step::Done => policy::on_success(progress, &self.r.loaded.phases, self.r.loaded.repeat, completion),
            Step::Rejected(output) => self.commit_rejected(outcome, &output),
            Step::Blocked(message) => Next::Stop(Stop::Blocked { message }),
        }
    }

    /// A hook rejected the commit: an `agent` failure of the iteration, budgeted like
    /// any other, with the hook's output in the note so the agent can fix it.
    pub(super) fn commit_rejected(&mut self, outcome: &Outcome, output: &str) -> Next {
        let agent = self.current_agent();
        let failure = Classification::new(
            Category::Agent,
            crate::recovery::Rule::CommitRejected,
            "a git hook rejected the commit of the iteration's work".to_string(),
        );
        self.record_failure(&agent, &failure, outcome);
        let facts =
            PolicyFacts { session: outcome.session.clone(), rate_limit_reset: None, now: self.unix_now(), jitter: 0.5 };
        let next = self.on_failure(&failure, facts);
        let what = format!(
            "Your work is not committed: the repository's git hook rejected the commit with this output:\n\n{}\n\nFix what it reports, then end with the done signal again.",
            tail_chars(output, 3000)
        );
        self.r.checkpoint.progress.recovery_note = Some(self.note(Trouble::Other(what), None));
        next
    }

    /// On resume: clear stale git locks left by a killed commit, finish the pending
    /// commit, and carry on from the recorded completion.
    pub(super) async fn resume_pending(&mut self, signals: &mut Signals) -> Flow {
        let pending = self.r.checkpoint.git.as_ref().and_then(|g| g.pending.clone());
        let (Some(pending), Some(session)) = (pending, self.r.git.clone()) else { return Ok(None) };
        self.remove_stale_locks(&session.repo);
        let step = self.complete_pending();
        if matches!(step, Step::Done) {
            self.summary.iterations += 1;
        }
        let completion = if pending.goal { Completion::Goal } else { Completion::Done };
        let next = self.after_commit(step, completion, &Outcome::empty());
        self.carry_out(next, signals).await
    }

    /// Lock files a commit killed mid-way leaves behind; git refuses to work while
    /// they exist. Only called with a commit pending, when the ralph that made it is
    /// gone; a git process it started gets a moment to finish first.
    fn remove_stale_locks(&mut self, repo: &Repo) {
        let Ok(index) = repo.index_lock() else { return };
        let mut locks = vec![index.clone()];
        if let Some(dir) = index.parent() {
            locks.push(dir.join("HEAD.lock"));
            if let Some(branch) = self.r.checkpoint.git.as_ref().and_then(|g| g.branch.clone()) {
                locks.push(dir.join("refs/heads").join(format!("{branch}.lock")));
            }
        }
        for lock in locks {
            for _ in (0..20).take_while(|_| lock.exists()) {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            match lock.exists().then(|| std::fs::remove_file(&lock)) {
                Some(Ok(())) => self.emit(RunEvent::GitStaleLockRemoved { path: lock.display().to_string() }),
                Some(Err(e)) => tracing::warn!("cannot remove {}: {e}", lock.display()),
                None => {}
            }
        }
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

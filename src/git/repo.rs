//! The shell over the `git` binary: argument arrays only, machine-readable output,
//! no decisions. Every call runs `git -C <top>` with prompts and editors disabled
//! and without automatic gc (`-c gc.auto=0`: many ralphs share one object store in a
//! fleet, and a gc in the middle of a run's commit would stall it; the person's own
//! git still collects garbage). A call that finds another git's lock file
//! (`index.lock`, `packed-refs.lock`, a ref's lock) is retried with growing waits for
//! about 6 s, the lock removed when the one rule calls it stale ([`super::locks`]);
//! a lock that stays is [`GitError::Locked`], naming its holder.
//! Calls block: they are short, except a commit whose hooks run (a lint), which the
//! run waits for anyway, bounded by the commit timeout (`[timeouts] tool`): a hook
//! that hangs is ended with its whole process group.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use super::locks::Look;
use super::plan::{self, Changed};
use crate::config::Identity;

#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("git {args} failed: {output}")]
    Failed { args: String, output: String },
    /// Another process holds a git lock, and kept it while ralph waited (exit 3).
    #[error(
        "git's lock {} is held by {holder}; let that finish or end it, then run ralph again (ralph removes a lock no process holds)",
        .path.display()
    )]
    Locked { path: PathBuf, holder: String },
}

/// Why a commit did not happen.
#[derive(Debug)]
pub(crate) enum CommitFailure {
    /// A hook (pre-commit, commit-msg) said no; its output, for the agent.
    HookRejected(String),
    Other(GitError),
}

/// Where the directory stands.
#[derive(Debug)]
pub(crate) enum Discovery {
    Repo(Repo),
    NotARepo,
    /// No `git` on PATH.
    NoGit,
}

/// A repository, by its top directory.
#[derive(Debug, Clone)]
pub(crate) struct Repo {
    top: PathBuf,
    /// The longest a commit (with its hooks) may take.
    commit_timeout: Duration,
}

/// The default bound of a commit with its hooks.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The author and committer of ralph's commits, when configured.
#[derive(Debug, Clone, Default)]
pub(crate) struct Identities {
    pub author: Option<Identity>,
    pub committer: Option<Identity>,
}

impl Repo {
    /// The repository `dir` is in, if any.
    pub(crate) fn discover(dir: &Path) -> Discovery {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["rev-parse", "--show-toplevel"])
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .output();
        match out {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Discovery::NoGit,
            Err(_) => Discovery::NotARepo,
            Ok(o) if !o.status.success() => Discovery::NotARepo,
            Ok(o) => {
                let top = String::from_utf8_lossy(&o.stdout).trim().to_string();
                if top.is_empty() { Discovery::NotARepo } else { Discovery::Repo(Repo::at(Path::new(&top))) }
            }
        }
    }

    pub(crate) fn at(top: &Path) -> Repo {
        Repo { top: top.to_path_buf(), commit_timeout: COMMIT_TIMEOUT }
    }

    /// Bounds a commit with its hooks.
    pub(crate) fn with_commit_timeout(mut self, timeout: Duration) -> Repo {
        self.commit_timeout = timeout;
        self
    }

    pub(crate) fn top(&self) -> &Path {
        &self.top
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("-C")
            .arg(&self.top)
            .args(["-c", "gc.auto=0", "-c", "maintenance.auto=false"])
            .arg("--literal-pathspecs")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .stdin(Stdio::null());
        cmd
    }

    /// `args` with extra environment variables, retried while another git holds a lock.
    fn output_with(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output, GitError> {
        let mut waits = super::locks::waits();
        loop {
            let out = self.command().args(args).envs(env.iter().copied()).output()?;
            if out.status.success() || !again(&out.stderr, &mut waits)? {
                return Ok(out);
            }
        }
    }

    /// Runs any git command here and returns its stdout; a failure (with its output)
    /// is an error. For the fleet's plumbing (worktrees, refs, merge-tree).
    pub(crate) fn git(&self, args: &[&str]) -> Result<String, GitError> {
        self.git_env(args, &[])
    }

    /// [`Self::git`] with extra environment variables (`commit-tree`'s author, a
    /// temporary index).
    pub(crate) fn git_env(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
        let out = self.output_with(args, env)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(failed(args, &out))
        }
    }

    /// Runs a git command whose exit status is an answer (`merge-base --is-ancestor`,
    /// `merge-tree`, a compare-and-swap `update-ref`): the whole output, whatever the
    /// status. Lock errors are retried as everywhere.
    pub(crate) fn git_output(&self, args: &[&str]) -> Result<Output, GitError> {
        self.output_with(args, &[])
    }

    /// The one value git printed; `None` when it failed or printed nothing.
    fn value(&self, args: &[&str]) -> Result<Option<String>, GitError> {
        let out = self.git_output(args)?;
        let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((out.status.success() && !v.is_empty()).then_some(v))
    }

    /// The commit HEAD points at; `None` before the first commit.
    pub(crate) fn head(&self) -> Result<Option<String>, GitError> {
        self.value(&["rev-parse", "-q", "--verify", "HEAD^{commit}"])
    }

    /// The current branch; `None` for a detached HEAD.
    pub(crate) fn branch(&self) -> Result<Option<String>, GitError> {
        self.value(&["symbolic-ref", "-q", "--short", "HEAD"])
    }

    pub(crate) fn branch_exists(&self, name: &str) -> Result<bool, GitError> {
        let reference = format!("refs/heads/{name}");
        Ok(self.git_output(&["show-ref", "--verify", "--quiet", &reference])?.status.success())
    }

    pub(crate) fn create_branch(&self, name: &str) -> Result<(), GitError> {
        self.git(&["checkout", "-q", "-b", name]).map(|_| ())
    }

    /// A path inside the git directory (`index.lock`, `MERGE_HEAD`, `hooks`).
    fn git_path(&self, name: &str) -> Result<PathBuf, GitError> {
        // An absolute path replaces the top in `join`.
        Ok(self.top.join(self.git(&["rev-parse", "--git-path", name])?.trim()))
    }

    /// Operations in progress that a commit would interfere with.
    pub(crate) fn in_progress(&self) -> Result<Vec<&'static str>, GitError> {
        let markers = [
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase"),
            ("MERGE_HEAD", "merge"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
        ];
        let mut found = Vec::new();
        for (file, op) in markers {
            if self.git_path(file)?.exists() && !found.contains(&op) {
                found.push(op);
            }
        }
        Ok(found)
    }

    /// `git gc --auto` as the repository's own config has it (ralph's other calls
    /// turn automatic gc off): for a fleet's supervisor once nothing else runs.
    pub(crate) fn gc_auto(&self) -> Result<(), GitError> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.top)
            .args(["gc", "--auto", "--quiet"])
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .output()?;
        if out.status.success() { Ok(()) } else { Err(failed(&["gc", "--auto"], &out)) }
    }

    /// Waits out the index lock ([`super::locks::wait_out`]: a stale one removed).
    pub(crate) fn wait_out_index_lock(&self) -> Result<(), GitError> {
        let path = self.git_path("index.lock")?;
        super::locks::wait_out(&path).map_err(|holder| GitError::Locked { path, holder })
    }

    /// Removes every stale lock of the repository ([`super::locks::sweep`]).
    pub(crate) fn sweep_locks(&self) -> Vec<super::locks::Removed> {
        self.common_dir().map(|common| super::locks::sweep(&common)).unwrap_or_default()
    }

    /// The git directory every worktree of the repository shares.
    pub(crate) fn common_dir(&self) -> Result<PathBuf, GitError> {
        Ok(self.top.join(self.git(&["rev-parse", "--git-common-dir"])?.trim()))
    }

    /// A config value, if set.
    pub(crate) fn config(&self, key: &str) -> Result<Option<String>, GitError> {
        self.value(&["config", "--get", key])
    }

    /// Every changed path: tracked changes, and new files that are not ignored.
    pub(crate) fn status(&self) -> Result<Vec<Changed>, GitError> {
        let args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"];
        // No opportunistic index refresh: status must never take the index lock
        // while an agent's own git may want it. A worktree record another git is
        // writing is waited out, as for every command.
        let out = self.output_with(&args, &[("GIT_OPTIONAL_LOCKS", "0")])?;
        if !out.status.success() {
            return Err(failed(&args, &out));
        }
        Ok(plan::parse_status(&out.stdout))
    }

    /// The files git would commit under `under` (relative to the top; `""` for all):
    /// tracked, and new ones that are not ignored; paths relative to the top.
    pub(crate) fn committable(&self, under: &str) -> Result<Vec<String>, GitError> {
        let mut args = vec!["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--full-name"];
        if !under.is_empty() {
            args.extend(["--", under]);
        }
        let mut files: Vec<_> = self.git(&args)?.split('\0').filter(|p| !p.is_empty()).map(str::to_owned).collect();
        files.sort();
        files.dedup();
        Ok(files)
    }

    /// `git log -z --format=%H%n%B` of the commits after `since` (all of HEAD's
    /// history when `None`), newest first.
    pub(crate) fn log_since(&self, since: Option<&str>) -> Result<String, GitError> {
        if self.head()?.is_none() {
            return Ok(String::new());
        }
        let range = since.map_or_else(|| "HEAD".to_string(), |s| format!("{s}..HEAD"));
        self.git(&["log", "-z", "--max-count=10000", "--format=%H%n%B", &range])
    }

    /// The commits in `from..to`, oldest first.
    pub(crate) fn commits_between(&self, from: Option<&str>, to: &str) -> Result<Vec<String>, GitError> {
        let range = from.map_or_else(|| to.to_string(), |f| format!("{f}..{to}"));
        Ok(self.git(&["rev-list", "--reverse", "--max-count=1000", &range])?.lines().map(String::from).collect())
    }

    /// Files changed, insertions and deletions of one commit.
    pub(crate) fn diff_stats(&self, hash: &str) -> Result<(u32, u32, u32), GitError> {
        let out = self.git(&["diff-tree", "--numstat", "-r", "--root", "--no-commit-id", hash])?;
        let mut stats = (0, 0, 0);
        for line in out.lines() {
            let mut parts = line.split('\t');
            let add = parts.next().and_then(|n| n.parse::<u32>().ok()).unwrap_or(0);
            let del = parts.next().and_then(|n| n.parse::<u32>().ok()).unwrap_or(0);
            stats = (stats.0 + 1, stats.1 + add, stats.2 + del);
        }
        Ok(stats)
    }

    /// Commits exactly `paths` (as they are in the working tree) with `message`;
    /// anything else staged stays staged and out of the commit. Hooks run.
    pub(crate) fn commit(&self, paths: &[String], message: &str, who: &Identities) -> Result<String, CommitFailure> {
        let list: Vec<u8> = paths.iter().flat_map(|p| p.bytes().chain(std::iter::once(0))).collect();
        let add = ["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"];
        self.with_stdin(&add, &list, who).map_err(CommitFailure::Other)?;
        let commit = [
            "commit",
            "-q",
            "--cleanup=whitespace",
            "-m",
            message,
            "--only",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
        ];
        if let Err(error) = self.with_stdin(&commit, &list, who) {
            // Leave the index as it was: the agent's files unstaged again.
            let reset = ["reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul"];
            if let Err(e) = self.with_stdin(&reset, &list, who) {
                tracing::warn!("cannot unstage after a failed commit: {e}");
            }
            return Err(match (error, self.has_commit_hooks()) {
                (GitError::Failed { output, .. }, true) => CommitFailure::HookRejected(output),
                (error, _) => CommitFailure::Other(error),
            });
        }
        match self.head() {
            Ok(Some(hash)) => Ok(hash),
            Ok(None) => Err(CommitFailure::Other(GitError::Failed {
                args: "commit".into(),
                output: "HEAD has no commit after committing".into(),
            })),
            Err(e) => Err(CommitFailure::Other(e)),
        }
    }

    fn with_stdin(&self, args: &[&str], input: &[u8], who: &Identities) -> Result<String, GitError> {
        let mut waits = super::locks::waits();
        loop {
            match self.with_stdin_once(args, input, who) {
                Err(GitError::Failed { output, .. }) if again(output.as_bytes(), &mut waits)? => {}
                other => return other,
            }
        }
    }

    fn with_stdin_once(&self, args: &[&str], input: &[u8], who: &Identities) -> Result<String, GitError> {
        let mut cmd = self.command();
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (prefix, id) in [("AUTHOR", &who.author), ("COMMITTER", &who.committer)] {
            if let Some(id) = id {
                cmd.env(format!("GIT_{prefix}_NAME"), &id.name).env(format!("GIT_{prefix}_EMAIL"), &id.email);
            }
        }
        // Its own group, so a hook that hangs can be ended with everything it started.
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            // git reads the whole list before it runs any hook.
            stdin.write_all(input)?;
        }
        // Ends the group when git and its hooks outlast the commit timeout.
        let (pgid, timeout) = (i32::try_from(child.id()).unwrap_or(i32::MAX), self.commit_timeout);
        let (finished, wait) = std::sync::mpsc::channel::<()>();
        let timer = std::thread::spawn(move || {
            let expired = wait.recv_timeout(timeout) == Err(RecvTimeoutError::Timeout);
            if expired {
                let _ = crate::os::signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
            }
            expired
        });
        // Both pipes are read to their end as the child runs: a chatty hook never blocks.
        let out = child.wait_with_output();
        drop(finished);
        let expired = timer.join().unwrap_or(false);
        let out = out?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let mut e = failed(args, &out);
        if expired && let GitError::Failed { output, .. } = &mut e {
            output.push_str(&format!(
                "\n(ended after {}: git or its hook did not finish)",
                humantime::format_duration(self.commit_timeout)
            ));
        }
        Err(e)
    }

    /// Whether a pre-commit or commit-msg hook would run.
    fn has_commit_hooks(&self) -> bool {
        let dir = match self.config("core.hooksPath") {
            Ok(Some(p)) => self.top.join(p),
            _ => match self.git_path("hooks") {
                Ok(p) => p,
                Err(_) => return false,
            },
        };
        ["pre-commit", "commit-msg"].iter().any(|h| is_executable(&dir.join(h)))
    }
}

/// Whether a failed call is tried again: after the lock it names is removed (stale)
/// or gone, at once; while it is held, after the next wait, and once the waits are
/// spent it is [`GitError::Locked`]. A worktree record another git is writing is
/// waited out alike.
fn again(stderr: &[u8], waits: &mut impl Iterator<Item = Duration>) -> Result<bool, GitError> {
    let wait = waits.next();
    if let Some(path) = super::locks::named_in(stderr) {
        return match (super::locks::look(&path), wait) {
            (Look::Gone | Look::Removed(_), wait) => Ok(wait.is_some()),
            (_, Some(d)) => {
                std::thread::sleep(d);
                Ok(true)
            }
            (look, None) => Err(GitError::Locked { path, holder: look.holder() }),
        };
    }
    let busy = half_made_worktree(stderr);
    if let Some(d) = wait.filter(|_| busy) {
        std::thread::sleep(d);
    }
    Ok(busy && wait.is_some())
}

/// Whether git failed reading a linked worktree's record: `failed to read
/// .git/worktrees/NAME/commondir` (still empty) or `…/locked` (removed between git's
/// look and its read). Another git is adding or unlocking that worktree right now
/// (it writes the record's files one by one), and every `git worktree` command
/// refuses until it is done; so it is waited out like a lock.
/// A record a kill left so for good is the fleet's to clear
/// (`fleet::git::clear_half_made_records`).
pub(crate) fn half_made_worktree(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr);
    text.contains("failed to read ") && text.contains("/worktrees/")
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn failed(args: &[&str], out: &Output) -> GitError {
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    let args = args.iter().take(2).copied().collect::<Vec<_>>().join(" ");
    GitError::Failed { args, output: output.trim().to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_record_being_written_is_waited_out() {
        assert!(half_made_worktree(b"fatal: failed to read '/r/.git/worktrees/c/commondir': Success"));
        // Seen while another process was creating a worktree.
        assert!(half_made_worktree(b"fatal: failed to read '/r/.git/worktrees/c/locked': No such file or directory"));
        assert!(!half_made_worktree(b"fatal: failed to read object 1234"));
    }

    #[test]
    fn status_waits_out_a_worktree_record_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let git = |args: &[&str]| {
            let ok = Command::new("git").current_dir(dir.path()).args(args).env("GIT_CONFIG_NOSYSTEM", "1").status();
            assert!(ok.is_ok_and(|s| s.success()), "git {args:?}");
        };
        git(&["init", "-q", "main"]);
        git(&["-C", "main", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "a"]);
        git(&["-C", "main", "worktree", "add", "-q", "../w"]);
        // Another git writes the record file by file: its commondir is still empty.
        let commondir = main.join(".git/worktrees/w/commondir");
        let whole = std::fs::read(&commondir).unwrap();
        std::fs::write(&commondir, "").unwrap();
        let written = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            std::fs::write(commondir, whole).unwrap();
        });
        let changes = Repo::at(&dir.path().join("w")).status().expect("waited until the record was whole");
        written.join().unwrap();
        assert!(changes.is_empty(), "{changes:?}");
    }

    #[test]
    fn a_held_index_lock_is_waited_out() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git").arg("-C").arg(dir.path()).args(args).env("GIT_CONFIG_NOSYSTEM", "1").status();
            assert!(ok.is_ok_and(|s| s.success()), "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("a"), "a").unwrap();
        let lock = dir.path().join(".git/index.lock");
        std::fs::write(&lock, "").unwrap();
        let released = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                std::fs::remove_file(lock).unwrap();
            })
        };
        let repo = Repo::at(dir.path());
        repo.git(&["add", "a"]).expect("retried until the lock went");
        released.join().unwrap();
        // A lock its holder keeps is a failure that names it; one nobody holds goes.
        let held = std::fs::File::create(&lock).unwrap();
        let err = repo.git(&["add", "a"]).unwrap_err();
        assert!(matches!(&err, GitError::Locked { path, .. } if path.ends_with("index.lock")), "{err}");
        assert!(err.to_string().contains(&format!("pid {}", std::process::id())), "{err}");
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        held.set_modified(old).unwrap();
        drop(held);
        repo.git(&["add", "a"]).expect("the stale lock removed");
        assert!(!lock.exists());
    }
}

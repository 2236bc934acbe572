//! The shell over the `git` binary: argument arrays only, machine-readable output,
//! no decisions. Every call runs `git -C <top>` with prompts and editors disabled.
//! Calls block: they are short, except a commit whose hooks run (a lint), which the
//! run waits for anyway, bounded by the commit timeout (`[timeouts] tool`): a hook
//! that hangs is ended with its whole process group.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use super::plan::{self, Changed};
use crate::config::Identity;

#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("git {args} failed: {output}")]
    Failed { args: String, output: String },
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
            .arg("--literal-pathspecs")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .stdin(Stdio::null());
        cmd
    }

    fn output(&self, args: &[&str]) -> Result<Output, GitError> {
        Ok(self.command().args(args).output()?)
    }

    /// Runs git and returns stdout, or the failure with its output.
    fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let out = self.output(args)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(failed(args, &out))
        }
    }

    /// The one value git printed; `None` when it failed or printed nothing.
    fn value(&self, args: &[&str]) -> Result<Option<String>, GitError> {
        let out = self.output(args)?;
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
        Ok(self.output(&["show-ref", "--verify", "--quiet", &reference])?.status.success())
    }

    pub(crate) fn create_branch(&self, name: &str) -> Result<(), GitError> {
        self.run(&["checkout", "-q", "-b", name]).map(|_| ())
    }

    /// A path inside the git directory (`index.lock`, `MERGE_HEAD`, `hooks`).
    fn git_path(&self, name: &str) -> Result<PathBuf, GitError> {
        // An absolute path replaces the top in `join`.
        Ok(self.top.join(self.run(&["rev-parse", "--git-path", name])?.trim()))
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

    pub(crate) fn index_lock(&self) -> Result<PathBuf, GitError> {
        self.git_path("index.lock")
    }

    /// A config value, if set.
    pub(crate) fn config(&self, key: &str) -> Result<Option<String>, GitError> {
        self.value(&["config", "--get", key])
    }

    /// Every changed path: tracked changes, and new files that are not ignored.
    pub(crate) fn status(&self) -> Result<Vec<Changed>, GitError> {
        let args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"];
        // No opportunistic index refresh: status must never take the index lock
        // while an agent's own git may want it.
        let out = self.command().env("GIT_OPTIONAL_LOCKS", "0").args(args).output()?;
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
        let out = self.output(&args)?;
        if !out.status.success() {
            return Err(failed(&args, &out));
        }
        let mut files: Vec<String> = out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
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
        self.run(&["log", "-z", "--max-count=10000", "--format=%H%n%B", &range])
    }

    /// The commits in `from..to`, oldest first.
    pub(crate) fn commits_between(&self, from: Option<&str>, to: &str) -> Result<Vec<String>, GitError> {
        let range = from.map_or_else(|| to.to_string(), |f| format!("{f}..{to}"));
        Ok(self.run(&["rev-list", "--reverse", "--max-count=1000", &range])?.lines().map(String::from).collect())
    }

    /// Files changed, insertions and deletions of one commit.
    pub(crate) fn diff_stats(&self, hash: &str) -> Result<(u32, u32, u32), GitError> {
        let out = self.run(&["diff-tree", "--numstat", "-r", "--root", "--no-commit-id", hash])?;
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
        if expired {
            // Its owner is gone: the lock would stop every later commit.
            if let Ok(lock) = self.index_lock() {
                let _ = std::fs::remove_file(lock);
            }
            if let GitError::Failed { output, .. } = &mut e {
                output.push_str(&format!(
                    "\n(ended after {}: git or its hook did not finish)",
                    humantime::format_duration(self.commit_timeout)
                ));
            }
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

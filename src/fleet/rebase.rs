//! The merge queue's rebase, in new objects only: a task's commits replayed onto
//! `into` with `git merge-tree --write-tree --merge-base` and `git commit-tree`, so
//! no rebase is ever half-done in a worktree (a kill leaves unreferenced objects, for
//! git's gc). What a conflict is, for the task's agent: the files, the commits on
//! `into` that touched them, the hunks. It needs only the repository, so the
//! supervisor runs it on a blocking thread while its loop goes on (`chores`).

use crate::git::message::{TASK_TRAILER, with_trailer};
use crate::git::repo::{GitError, Repo};

use super::git;
use super::queue::{self, Merge, Plan, Trouble};

/// What one landing rebases: the task's branch head onto `into`'s tip.
#[derive(Debug, Clone)]
pub(crate) struct Prep {
    pub task: String,
    pub repo: Repo,
    /// `into`'s tip when the landing began: the compare-and-swap's expected value.
    pub onto: String,
    /// The task branch's tip.
    pub head: String,
    /// The `[fleet] regenerate` globs.
    pub globs: Vec<String>,
    pub started_at: jiff::Timestamp,
}

/// What the rebase came to.
#[derive(Debug)]
pub(crate) enum Rebased {
    /// The branch's head is in `into` already.
    Contained,
    Trouble(Trouble),
    /// The head to land, the commits it was made of `(task's, new)`, and the globs
    /// whose generated files must be made again.
    Made {
        head: String,
        pairs: Vec<(String, String)>,
        regenerate: Vec<String>,
    },
}

/// The task's commits on top of `onto`, made without a worktree: as they are when
/// the branch contains `onto`.
pub(crate) fn rebase(p: &Prep) -> Result<Rebased, GitError> {
    let (repo, onto, head) = (&p.repo, p.onto.as_str(), p.head.as_str());
    if git::is_ancestor(repo, head, onto)? {
        return Ok(Rebased::Contained);
    }
    let base = repo.git(&["merge-base", onto, head])?.trim().to_string();
    let merge = match merge_tree(repo, &[onto, head])? {
        // The branch contains `into`: a task that merged or rebased it itself.
        _ if base == onto => Merge::Contains,
        (_, files) if files.is_empty() => Merge::Clean,
        (_, files) => Merge::Conflicts(files),
    };
    let range = format!("{base}..{head}");
    let merges = repo.git(&["rev-list", "--merges", "--count", &range])?.trim() != "0";
    let regenerate = match queue::plan(&merge, merges, &p.globs) {
        Plan::AsIs => return Ok(Rebased::Made { head: head.to_string(), pairs: Vec::new(), regenerate: Vec::new() }),
        Plan::Evict if merges => return Ok(Rebased::Trouble(Trouble::MergeCommits)),
        Plan::Evict => return conflict(repo, onto, head, &base).map(Rebased::Trouble),
        Plan::Rebase => Vec::new(),
        Plan::Regenerate(globs) => globs,
    };
    let commits = repo.git(&["rev-list", "--reverse", "--topo-order", &range])?;
    let mut tip = onto.to_string();
    let mut pairs = Vec::new();
    for commit in commits.lines() {
        let parent = format!("{commit}^");
        let (tree, files) = merge_tree(repo, &[&format!("--merge-base={parent}"), &tip, commit])?;
        let tree = match files.as_slice() {
            [] => tree,
            _ if files.iter().all(|f| regenerate.iter().any(|g| queue::matches(g, f))) => {
                take_ours(repo, &tree, &tip, &files)?
            }
            // Clean as a whole, not commit by commit: its agent rebases it.
            _ => return conflict(repo, onto, head, &base).map(Rebased::Trouble),
        };
        tip = commit_like(repo, &tree, &tip, commit, &p.task)?;
        pairs.push((commit.to_string(), tip.clone()));
    }
    Ok(Rebased::Made { head: tip, pairs, regenerate })
}

/// The files that conflict when `a` and `b` merge (none: it merges cleanly).
pub(crate) fn conflicts_between(repo: &Repo, a: &str, b: &str) -> Result<Vec<String>, GitError> {
    merge_tree(repo, &[a, b]).map(|(_, files)| files)
}

/// `git merge-tree --write-tree` of `args`: the tree (with conflict markers where
/// there are conflicts) and the conflicting files.
fn merge_tree(repo: &Repo, args: &[&str]) -> Result<(String, Vec<String>), GitError> {
    let mut all = vec!["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages"];
    all.extend(args);
    let out = repo.git_output(&all)?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(git::failure("merge-tree", &out));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split('\0').filter(|f| !f.is_empty());
    let tree = fields.next().unwrap_or_default().trim().to_string();
    let mut files: Vec<String> = fields.map(str::to_string).collect();
    files.dedup();
    Ok((tree, files))
}

/// `tree` with the landing side's (`ours`) version of `files`.
fn take_ours(repo: &Repo, tree: &str, ours: &str, files: &[String]) -> Result<String, GitError> {
    let index = tempfile::NamedTempFile::new().map_err(GitError::Spawn)?;
    let path = index.path().display().to_string();
    let env = [("GIT_INDEX_FILE", path.as_str())];
    repo.git_env(&["read-tree", tree], &env)?;
    for file in files {
        let entry = repo.git(&["ls-tree", ours, "--", file])?;
        match entry.split_once('\t').map(|(meta, _)| meta.split_whitespace().collect::<Vec<_>>()) {
            Some(meta) if meta.len() == 3 => {
                let info = format!("{},{},{file}", meta[0], meta[2]);
                repo.git_env(&["update-index", "--add", "--cacheinfo", &info], &env)?;
            }
            _ => drop(repo.git_env(&["update-index", "--force-remove", "--", file], &env)?),
        }
    }
    Ok(repo.git_env(&["write-tree"], &env)?.trim().to_string())
}

/// A commit of `tree` on `parent` with `like`'s author, date and message, and the
/// `Ralph-Task:` trailer (the agent's own commits lack it).
fn commit_like(repo: &Repo, tree: &str, parent: &str, like: &str, task: &str) -> Result<String, GitError> {
    let info = repo.git(&["log", "-1", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw", like])?;
    let parts: Vec<&str> = info.splitn(4, '\0').collect();
    let part = |i: usize| parts.get(i).copied().unwrap_or("");
    let message = with_trailer(part(3).trim_end(), TASK_TRAILER, task);
    let env = [("GIT_AUTHOR_NAME", part(0)), ("GIT_AUTHOR_EMAIL", part(1)), ("GIT_AUTHOR_DATE", part(2))];
    Ok(repo.git_env(&["commit-tree", tree, "-p", parent, "-m", &message], &env)?.trim().to_string())
}

/// What the agent is told of a conflict: the files, the commits on `into` that
/// touched them, the conflicting hunks.
fn conflict(repo: &Repo, onto: &str, head: &str, base: &str) -> Result<Trouble, GitError> {
    let (tree, files) = merge_tree(repo, &[onto, head])?;
    let mut args = vec!["log".to_string(), "--format=  %h %s".into(), format!("{base}..{onto}"), "--".into()];
    args.extend(files.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let commits = repo.git(&args)?.lines().take(20).map(str::to_string).collect();
    let mut hunks = String::new();
    for file in files.iter().take(5) {
        let text = repo.git(&["show", &format!("{tree}:{file}")]).unwrap_or_default();
        hunks.push_str(&format!("--- {file}\n{}", conflict_hunks(&text)));
    }
    Ok(Trouble::Conflict { files, commits, hunks: crate::step::record::tail_chars(&hunks, 6000) })
}

/// The conflict regions of a file with markers, with two lines around each.
pub(crate) fn conflict_hunks(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = vec![false; lines.len()];
    let mut inside = false;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("<<<<<<<") {
            inside = true;
        }
        if inside {
            (i.saturating_sub(2)..=(i + 2).min(lines.len().saturating_sub(1))).for_each(|j| keep[j] = true);
        }
        if line.starts_with(">>>>>>>") {
            inside = false;
        }
    }
    let mut out = String::new();
    let mut last = None;
    for (i, line) in lines.iter().enumerate().filter(|(i, _)| keep[*i]) {
        if last.is_some_and(|l: usize| i > l + 1) {
            out.push_str("...\n");
        }
        out.push_str(line);
        out.push('\n');
        last = Some(i);
    }
    out
}

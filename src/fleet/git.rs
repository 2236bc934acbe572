//! The fleet's git, the shell: worktrees (created locked, listed, removed only
//! through git, which refuses a worktree with changes), branches and refs
//! (compare-and-swap updates with a reason in the reflog, recorded in the ledger
//! first), ancestry, and the snapshot of the world outside a worktree. Every call
//! goes through [`crate::git::repo::Repo`]: the repository's own git, its hooks and
//! config; lock files are waited out there; every other failure is an error with
//! git's own words, never a success.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::git::repo::{GitError, Repo};

use super::isolation::{LedgerEntry, Snapshot};

/// One worktree of `git worktree list --porcelain`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Worktree {
    pub path: PathBuf,
    /// `refs/heads/…`, or `None` when detached.
    pub branch: Option<String>,
    pub prunable: bool,
}

/// Parses `git worktree list --porcelain -z`.
pub(crate) fn parse_worktrees(out: &str) -> Vec<Worktree> {
    let mut list = Vec::new();
    let mut current: Option<Worktree> = None;
    for field in out.split('\0') {
        if field.is_empty() {
            list.extend(current.take());
            continue;
        }
        let (key, value) = field.split_once(' ').unwrap_or((field, ""));
        let w = current.get_or_insert_with(Worktree::default);
        match key {
            "worktree" => w.path = PathBuf::from(value),
            "branch" => w.branch = Some(value.to_string()),
            "prunable" => w.prunable = true,
            _ => {}
        }
    }
    list.extend(current);
    list
}

pub(crate) fn worktrees(repo: &Repo) -> Result<Vec<Worktree>, GitError> {
    let list = || repo.git(&["worktree", "list", "--porcelain", "-z"]);
    let out = match list() {
        Err(GitError::Failed { output, .. }) if crate::git::repo::half_made_worktree(output.as_bytes()) => {
            clear_half_made_records(repo)?;
            list()?
        }
        other => other?,
    };
    Ok(parse_worktrees(&out))
}

/// Removes git's records of worktrees whose `git worktree add` was killed before it
/// wrote `commondir` (a supervisor SIGKILLed with its git): an empty one makes every
/// `git worktree` command of the repository fail until they go. A record another
/// git may still be writing (a second task's worktree made at the same moment) is
/// no such record: the stale-lock rule judges each (a live git in the repository,
/// the age floor), and one it does not call abandoned stays for a later look. Such
/// an add never reached its checkout: the worktree's folder holds at most git's
/// `.git` file, which goes with it (a folder holding anything else is kept).
/// The records removed, by name.
pub(crate) fn clear_half_made_records(repo: &Repo) -> Result<Vec<String>, GitError> {
    let common = repo.common_dir()?;
    let Ok(entries) = std::fs::read_dir(common.join("worktrees")) else { return Ok(Vec::new()) };
    let mut cleared = Vec::new();
    for record in entries.flatten().map(|e| e.path()) {
        // git dies on an empty `commondir` ("failed to read"), and reads a record
        // without one as no linked worktree at all: both are an add cut short.
        let written = std::fs::metadata(record.join("commondir")).is_ok_and(|m| m.len() > 0);
        let goes = |facts| crate::git::stale_lock::half_made_record_goes(written, &facts);
        // A whole record is never cleared: no `/proc` scan for its facts.
        if written || !record.is_dir() || !crate::git::locks::record_facts(&record, &common).is_some_and(goes) {
            continue;
        }
        if let Ok(dot_git) = std::fs::read_to_string(record.join("gitdir")) {
            let dot_git = PathBuf::from(dot_git.trim());
            let only_git = dot_git
                .parent()
                .and_then(|dir| std::fs::read_dir(dir).ok())
                .is_some_and(|mut d| d.all(|e| e.is_ok_and(|e| e.file_name() == ".git")));
            if only_git && dot_git.is_file() {
                let _ = std::fs::remove_file(&dot_git);
                let _ = dot_git.parent().map(std::fs::remove_dir);
            }
        }
        std::fs::remove_dir_all(&record)?;
        cleared.push(record.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    }
    Ok(cleared)
}

/// The worktree that has `branch` (short name) checked out, if any.
pub(crate) fn checked_out(list: &[Worktree], branch: &str) -> Option<PathBuf> {
    let full = format!("refs/heads/{branch}");
    list.iter().find(|w| w.branch.as_deref() == Some(full.as_str())).map(|w| w.path.clone())
}

/// The commit a branch points at; `None` when there is no such branch.
pub(crate) fn tip(repo: &Repo, branch: &str) -> Result<Option<String>, GitError> {
    let out = repo.git_output(&["rev-parse", "-q", "--verify", &format!("refs/heads/{branch}^{{commit}}")])?;
    let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((out.status.success() && !value.is_empty()).then_some(value))
}

/// The commits several branches point at, in their order (`None`: no such
/// branch), from one git process: a task's start and a landing look up two tips
/// at once, and each git process is milliseconds on a loaded machine.
pub(crate) fn tips(repo: &Repo, branches: &[&str]) -> Result<Vec<Option<String>>, GitError> {
    let refs: Vec<String> = branches.iter().map(|b| format!("refs/heads/{b}")).collect();
    let mut args = vec!["for-each-ref", "--format=%(refname)%00%(objecttype)%00%(objectname)"];
    args.extend(refs.iter().map(String::as_str));
    let out = repo.git(&args)?;
    // A pattern also matches the refs below it (`refs/heads/a/b` for `a`): only
    // the exact names count, and (as `rev-parse ^{commit}`) only commits.
    let found: BTreeMap<&str, &str> = out
        .lines()
        .filter_map(|l| {
            let mut fields = l.split('\0');
            let (name, kind, object) = (fields.next()?, fields.next()?, fields.next()?);
            (kind == "commit").then_some((name, object))
        })
        .collect();
    Ok(refs.iter().map(|r| found.get(r.as_str()).map(|o| (*o).to_string())).collect())
}

/// Whether `ancestor` is an ancestor of (or equal to) `of`.
pub(crate) fn is_ancestor(repo: &Repo, ancestor: &str, of: &str) -> Result<bool, GitError> {
    let out = repo.git_output(&["merge-base", "--is-ancestor", ancestor, of])?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(failure("merge-base --is-ancestor", &out)),
    }
}

/// A git command that failed, with its output.
pub(super) fn failure(args: &str, out: &std::process::Output) -> GitError {
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    GitError::Failed { args: args.to_string(), output: output.trim().to_string() }
}

/// How a compare-and-swap ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Swap {
    Done,
    /// The ref was not where it was expected: someone moved it meanwhile.
    Moved,
}

/// `git update-ref -m <reason> <ref> <new> <old>`: moves (or, `new` = `None`,
/// deletes; `old` = `None`, creates) a ref only when it is where it was expected.
/// The update is appended to the fleet's ledger first, so the isolation checks of
/// running tasks know it is ralph's own.
pub(crate) fn swap(
    repo: &Repo,
    ledger: &Path,
    name: &str,
    new: Option<&str>,
    old: Option<&str>,
    reason: &str,
) -> Result<Swap, GitError> {
    let entry = LedgerEntry {
        name: name.to_string(),
        old: old.map(str::to_string),
        new: new.map(str::to_string),
        reason: reason.to_string(),
    };
    append_ledger(ledger, &entry).map_err(GitError::Spawn)?;
    // An empty old value means "must not exist yet".
    let out = match new {
        Some(new) => repo.git_output(&["update-ref", "-m", reason, name, new, old.unwrap_or("")])?,
        None => repo.git_output(&["update-ref", "-m", reason, "-d", name, old.unwrap_or("")])?,
    };
    if out.status.success() {
        return Ok(Swap::Done);
    }
    let text = String::from_utf8_lossy(&out.stderr);
    // git's words for a value that is not the expected one (and for a ref that
    // exists when it must not, or is gone when it must be there).
    let stale = ["but expected", "reference already exists", "unable to resolve reference", "is at "];
    if text.contains("cannot lock ref") && stale.iter().any(|s| text.contains(s)) {
        return Ok(Swap::Moved);
    }
    Err(failure("update-ref", &out))
}

/// Appends one line to the ledger, synced: it must be on disk before the update.
pub(crate) fn append_ledger(ledger: &Path, entry: &LedgerEntry) -> std::io::Result<()> {
    use std::io::Write;
    let mut line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut file = crate::state::private::append_file(ledger)?;
    file.write_all(line.as_bytes())?;
    file.sync_data()
}

/// The ledger's entries; a torn last line (a kill mid-append) is skipped.
pub(crate) fn read_ledger(ledger: &Path) -> Vec<LedgerEntry> {
    use std::io::BufRead;
    // Line by line: the ledger grows with every landing of the fleet.
    let Ok(file) = std::fs::File::open(ledger) else { return Vec::new() };
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}

/// Creates a locked worktree at `path`: on a new branch `branch` at `from`, or (when
/// the branch exists) on it. The repository's own git does it: its hooks
/// (`post-checkout`) and config apply.
pub(crate) fn add_worktree(
    repo: &Repo,
    path: &Path,
    branch: &str,
    from: &str,
    reason: &str,
    new_branch: bool,
) -> Result<(), GitError> {
    let path = path.display().to_string();
    let mut args = vec!["worktree", "add", "--quiet", "--lock", "--reason", reason];
    if new_branch {
        args.extend(["-b", branch, &path, from]);
    } else {
        args.extend([&path, branch]);
    }
    repo.git(&args).map(drop)
}

/// Forgets git's record of a worktree at `path` whose folder is gone: unlocked
/// first, since `git worktree prune` keeps a locked record and every later add at
/// that place would refuse it ("a missing but locked worktree").
pub(crate) fn forget_missing(repo: &Repo, path: &Path) -> Result<(), GitError> {
    if !path.exists() {
        let _ = repo.git_output(&["worktree", "unlock", &path.display().to_string()])?;
    }
    repo.git(&["worktree", "prune"]).map(drop)
}

/// Removes a worktree through git: unlocked first, then `git worktree remove`
/// without `--force`, which refuses while it holds modified or untracked files.
pub(crate) fn remove_worktree(repo: &Repo, path: &Path) -> Result<(), GitError> {
    let path = path.display().to_string();
    // Not locked (any more): fine.
    let _ = repo.git_output(&["worktree", "unlock", &path])?;
    let removed = repo.git(&["worktree", "remove", &path]).map(drop);
    if removed.is_err() {
        // Locked again, so git's `prune` never drops it while it stays.
        let _ = repo.git_output(&["worktree", "lock", "--reason", "ralph fleet: kept, it holds changes", &path]);
    }
    removed
}

/// The changed paths of a worktree (`git status`), ralph's own `.agent/` left out:
/// what would be lost with it.
pub(crate) fn changes_in(worktree: &Path) -> Result<Vec<String>, GitError> {
    let changed = Repo::at(worktree).status()?;
    // A deleted tracked file loses nothing (git has it): a removal cut short by a
    // kill leaves such deletions, and the removal goes on.
    Ok(changed
        .into_iter()
        .filter(|c| !c.deleted)
        .map(|c| c.path)
        .filter(|p| p != ".agent" && !p.starts_with(".agent/"))
        .collect())
}

/// Every ref and its object.
pub(crate) fn refs(repo: &Repo) -> Result<BTreeMap<String, String>, GitError> {
    let args = ["for-each-ref", "--format=%(refname)%00%(objectname)"];
    let out = repo.git_output(&args)?;
    if !out.status.success() {
        return Err(failure("for-each-ref", &out));
    }
    // Parsed from git's own bytes: a repository's every ref is not copied once more
    // into a string first.
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let pairs = out.stdout.split(|b| *b == b'\n').filter_map(|line| {
        let nul = line.iter().position(|b| *b == 0)?;
        Some((text(&line[..nul]), text(&line[nul + 1..])))
    });
    Ok(pairs.collect())
}

/// The main checkout as a task's isolation check sees it (see `isolation`): HEAD,
/// its branch, each changed path with a fingerprint (status and file), every ref.
/// `exempt` leaves ralph's own files out.
pub(crate) fn snapshot(repo: &Repo, exempt: &crate::git::plan::Exempt) -> Result<Snapshot, GitError> {
    let head_ref = repo.git_output(&["symbolic-ref", "-q", "HEAD"])?;
    let head_ref = String::from_utf8_lossy(&head_ref.stdout).trim().to_string();
    let out = repo.git_output(&["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"])?;
    if !out.status.success() {
        return Err(failure("status", &out));
    }
    let mut files = BTreeMap::new();
    for record in out.stdout.split(|b| *b == 0).filter(|r| r.len() > 3) {
        let path = String::from_utf8_lossy(&record[3..]).into_owned();
        if exempt.covers(&path) {
            continue;
        }
        let stat = std::fs::symlink_metadata(repo.top().join(&path)).map_or_else(
            |_| "gone".to_string(),
            |m| {
                use std::os::unix::fs::MetadataExt;
                format!("{}:{}:{}.{}", m.ino(), m.size(), m.mtime(), m.mtime_nsec())
            },
        );
        files.insert(path, format!("{} {stat}", String::from_utf8_lossy(&record[..2])));
    }
    Ok(Snapshot { head_ref: (!head_ref.is_empty()).then_some(head_ref), head: repo.head()?, files, refs: refs(repo)? })
}

/// Bytes the files under `dir` take (not following links).
pub(crate) fn disk_use(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temp directory with a repository (`repo/`) of one empty commit; its hash.
    /// Task a's worktree at `path`, on a new branch from `head`.
    fn make_a(repo: &Repo, path: &Path, head: String) -> crate::fleet::worktree::Make {
        crate::fleet::worktree::Make {
            task: "a".into(),
            repo: repo.clone(),
            path: path.to_path_buf(),
            branch: "ralph/a".into(),
            from: head,
            new_branch: true,
            reason: "ralph fleet".into(),
        }
    }

    /// A git that works in the repository until it is killed (it waits on its stdin).
    fn a_git_at_work(repo: &Repo) -> std::process::Child {
        std::process::Command::new("git")
            .args(["cat-file", "--batch"])
            .current_dir(repo.top())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("git runs")
    }

    fn repo_with_a_commit() -> (tempfile::TempDir, Repo, String) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path().join("repo");
        std::fs::create_dir_all(&top).expect("mkdir");
        run(&top, &["init", "-q"]);
        run(&top, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"]);
        let repo = Repo::at(&top);
        let head = repo.head().expect("head").expect("a commit");
        (tmp, repo, head)
    }

    #[test]
    fn worktree_lists_parse() {
        let out = "worktree /r\0HEAD aaa\0branch refs/heads/main\0\0worktree /w/a\0HEAD bbb\0branch refs/heads/ralph/a\0locked ralph fleet\0\0worktree /w/land\0HEAD ccc\0detached\0locked\0prunable gitdir file points to non-existent location\0\0";
        let list = parse_worktrees(out);
        assert_eq!(list.len(), 3);
        assert_eq!(list[1].path, Path::new("/w/a"));
        assert_eq!(list[2].branch, None);
        assert!(list[2].prunable);
        assert_eq!(checked_out(&list, "ralph/a"), Some(PathBuf::from("/w/a")));
        assert_eq!(checked_out(&list, "ralph/fleet"), None);
    }

    fn run(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A `git worktree add` killed between its record's `gitdir` and `commondir`
    /// (the supervisor SIGKILLed with its git) made every later `git worktree`
    /// command fail, and `ralph fleet` with it, for good.
    #[test]
    fn a_worktree_record_cut_short_by_a_kill_is_cleared_and_the_list_works() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path().join("repo");
        std::fs::create_dir(&top).expect("mkdir");
        run(&top, &["init", "-q"]);
        run(&top, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"]);
        let (cut, kept) = (tmp.path().join("cut"), tmp.path().join("kept"));
        for wt in [&cut, &kept] {
            run(&top, &["worktree", "add", "-q", "--lock", "--detach", &wt.display().to_string()]);
        }
        // What the kill leaves: the record without commondir, the folder with only
        // git's `.git` file (the checkout never happened).
        std::fs::write(top.join(".git/worktrees/cut/commondir"), "").expect("cut short");
        for entry in std::fs::read_dir(&cut).expect("cut").flatten() {
            if entry.file_name() != ".git" {
                std::fs::remove_dir_all(entry.path()).or_else(|_| std::fs::remove_file(entry.path())).expect("rm");
            }
        }
        let repo = Repo::at(&top);
        assert!(repo.git(&["worktree", "list"]).is_err(), "git refuses while the record is half made");
        let list = worktrees(&repo).expect("listed after clearing");
        let paths: Vec<_> = list.iter().map(|w| w.path.file_name().map(|n| n.to_owned())).collect();
        assert_eq!(list.len(), 2, "{paths:?}");
        assert!(list[1].path.ends_with("kept"));
        assert!(!cut.exists(), "the folder that held only .git went with its record");
        assert!(kept.join(".git").is_file(), "a whole worktree is untouched");
    }

    /// Two worktrees made at once (the fleet makes up to `max_parallel`): a failed
    /// add's clearing took the record the other git was writing that moment (no
    /// `commondir` yet). A fresh one is kept; one a kill left a minute ago, with no
    /// git at work in the repository, goes.
    #[test]
    fn a_record_being_written_is_kept_and_an_abandoned_one_is_cleared() {
        let (tmp, repo, _) = repo_with_a_commit();
        let records = repo.top().join(".git/worktrees");
        for name in ["old", "fresh"] {
            std::fs::create_dir_all(records.join(name)).expect("record");
            let dot_git = format!("{}\n", tmp.path().join(name).join(".git").display());
            std::fs::write(records.join(name).join("gitdir"), dot_git).expect("gitdir");
        }
        let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for path in [records.join("old/gitdir"), records.join("old")] {
            std::fs::File::open(&path).and_then(|f| f.set_modified(minute_ago)).expect("aged");
        }
        // A git at work in the repository may be writing even an old one.
        let mut git = a_git_at_work(&repo);
        let while_git_works = clear_half_made_records(&repo);
        // Killed, not awaited on its own: the test never hangs on it.
        let _ = git.kill();
        let _ = git.wait();
        assert_eq!(while_git_works.expect("looked"), Vec::<String>::new());
        assert_eq!(clear_half_made_records(&repo).expect("cleared"), ["old"]);
        assert!(records.join("fresh/gitdir").is_file(), "the record being written is kept");
    }

    /// One git process answers for several branches as `tip` does for each: a
    /// missing one, one whose name is a prefix of another's, a branch below it.
    #[test]
    fn tips_answer_like_tip_for_each_branch() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = tmp.path();
        run(top, &["init", "-q"]);
        run(top, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"]);
        for branch in ["ralph/fleet", "ralph/t1", "ralph/t10", "ralph/t2/below"] {
            run(top, &["branch", branch]);
        }
        let repo = Repo::at(top);
        let names = ["ralph/t1", "ralph/fleet", "ralph/t3", "ralph/t2", "ralph/t10"];
        let one: Vec<Option<String>> = names.iter().map(|b| tip(&repo, b).expect("tip")).collect();
        assert_eq!(tips(&repo, &names).expect("tips"), one);
        assert_eq!(one.iter().filter(|t| t.is_some()).count(), 3, "{one:?}");
    }

    /// A kill during a landing leaves the landing folder without a worktree (killed
    /// inside `git worktree add`), or a folder removed by hand leaves git's locked
    /// record: the next landing remakes it instead of failing on it.
    #[test]
    fn a_landing_worktree_a_kill_left_behind_is_made_again() {
        let (tmp, repo, head) = repo_with_a_commit();
        let land = tmp.path().join("w/.land");
        std::fs::create_dir_all(&land).expect("mkdir");
        std::fs::write(land.join("half"), "").expect("a file of the cut-short add");
        crate::fleet::landing::checkout(&repo, &land, &head).expect("a folder without a worktree is remade");
        assert!(land.join(".git").is_file() && !land.join("half").exists());
        std::fs::remove_dir_all(&land).expect("rm");
        crate::fleet::landing::checkout(&repo, &land, &head).expect("a locked record without its folder is cleared");
        run(&land, &["rev-parse", "HEAD"]);
    }

    /// A task's worktree folder gone (removed by hand, or by a cleanup a kill cut
    /// short) leaves git's record locked, which `git worktree prune` keeps: the
    /// worktree is made again at its place instead of the task being blocked.
    #[test]
    fn a_worktree_whose_folder_is_gone_is_made_again() {
        let (tmp, repo, head) = repo_with_a_commit();
        let path = tmp.path().join("w/a");
        let make = make_a(&repo, &path, head);
        make.run().expect("made");
        std::fs::remove_dir_all(&path).expect("rm");
        let again = crate::fleet::worktree::Make { new_branch: false, ..make };
        again.run().expect("made again");
        run(&path, &["rev-parse", "HEAD"]);
    }

    /// A record a kill left (an empty `commondir`: every `git worktree` command fails)
    /// while some git works in the repository: doubt keeps the record, so the task
    /// waits for a later look instead of being blocked for a person; once no git
    /// works there, the record goes and the worktree is made.
    #[test]
    fn a_kept_half_made_record_makes_the_task_wait_not_block() {
        let (tmp, repo, head) = repo_with_a_commit();
        // The add got as far as the worktree's `.git` file (`git worktree prune` keeps
        // such a record) and no further.
        let (record, worktree) = (repo.top().join(".git/worktrees/x"), tmp.path().join("w/x"));
        let files = [
            (record.join("commondir"), String::new()),
            (record.join("gitdir"), format!("{}\n", worktree.join(".git").display())),
            (worktree.join(".git"), format!("gitdir: {}\n", record.display())),
        ];
        let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for (path, text) in &files {
            std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
            std::fs::write(path, text).expect("written");
        }
        for path in files.iter().map(|(path, _)| path.clone()).chain([record.clone()]) {
            std::fs::File::open(&path).and_then(|f| f.set_modified(minute_ago)).expect("aged");
        }
        let path = tmp.path().join("w/a");
        let make = make_a(&repo, &path, head);
        let mut git = a_git_at_work(&repo);
        let while_git_works = make.run();
        // Killed, not awaited on its own: the test never hangs on it.
        let _ = git.kill();
        let _ = git.wait();
        assert!(matches!(while_git_works, Err(crate::fleet::worktree::NotMade::Later(_))), "{while_git_works:?}");
        let again = crate::fleet::worktree::Make { new_branch: tip(&repo, "ralph/a").expect("tip").is_none(), ..make };
        again.run().expect("made once no git works in the repository");
        run(&path, &["rev-parse", "HEAD"]);
    }
}

//! Which changed files a commit takes, and why every other one is left out. Pure:
//! the shell lists the changes (`git status`) and measures each candidate (size, the
//! first secret inside, by `crate::secrets`); these functions decide.

use std::collections::{BTreeMap, BTreeSet};

use crate::secrets::found::Finding;

/// One changed path from `git status --porcelain=v1 -z --no-renames`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Changed {
    /// Relative to the repository's top, `/`-separated.
    pub path: String,
    /// Not tracked by git (and not ignored): a new file.
    pub untracked: bool,
    /// Gone from the working tree.
    pub deleted: bool,
}

/// Parses `git status --porcelain=v1 -z --no-renames --untracked-files=all`.
/// Ignored entries (`!!`) are skipped; unknown shapes are skipped too.
pub(crate) fn parse_status(output: &[u8]) -> Vec<Changed> {
    output
        .split(|b| *b == 0)
        .filter(|r| r.len() > 3 && r[2] == b' ')
        .filter_map(|r| {
            let (x, y) = (r[0], r[1]);
            let path = String::from_utf8_lossy(&r[3..]).into_owned();
            match (x, y) {
                (b'!', b'!') => None,
                (b'?', b'?') => Some(Changed { path, untracked: true, deleted: false }),
                _ => Some(Changed { path, untracked: false, deleted: x == b'D' || y == b'D' }),
            }
        })
        .collect()
}

/// ralph's own files: never part of the dirty check, never committed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Exempt {
    /// Exact paths relative to the top (the config file, the goal file).
    pub files: Vec<String>,
    /// Directory prefixes relative to the top, without the trailing `/` (`.agent`).
    pub dirs: Vec<String>,
    /// Globs relative to the top, `*` and `?` within one path component (a fleet's
    /// task files, `tasks/*.md`).
    pub globs: Vec<String>,
}

impl Exempt {
    pub(crate) fn covers(&self, path: &str) -> bool {
        self.files.iter().any(|f| f == path)
            || self.globs.iter().any(|g| {
                let (g, p): (Vec<&str>, Vec<&str>) = (g.split('/').collect(), path.split('/').collect());
                g.len() == p.len() && g.iter().zip(&p).all(|(g, p)| crate::agent::env::glob_match(g, p))
            })
            || self
                .dirs
                .iter()
                .any(|d| d.is_empty() || path == d || path.strip_prefix(d.as_str()).is_some_and(|r| r.starts_with('/')))
    }
}

/// The paths that make a new run's working tree dirty: every change but ralph's own.
pub(crate) fn dirty_at_start(changed: &[Changed], exempt: &Exempt) -> Vec<String> {
    let paths: BTreeSet<&String> = changed.iter().map(|c| &c.path).filter(|p| !exempt.covers(p)).collect();
    paths.into_iter().cloned().collect()
}

/// The changes that may go into a commit: not ralph's, not held back for the run.
pub(crate) fn candidates(changed: Vec<Changed>, exempt: &Exempt, held: &BTreeSet<String>) -> Vec<Changed> {
    changed.into_iter().filter(|c| !exempt.covers(&c.path) && !held.contains(&c.path)).collect()
}

/// A working tree's changed paths (ralph's own aside), each with a hash of its
/// content ("gone" for a deletion).
pub(crate) type Tree = BTreeMap<String, String>;

/// The paths a person changed while ralph was stopped in order: changed now and
/// not at the stop, or changed at the stop and different now. A path changed at the
/// stop and unchanged now (put back, or committed by the person) has nothing to
/// commit and is not counted.
pub(crate) fn changed_while_stopped(at_stop: &Tree, now: &Tree) -> Vec<String> {
    now.iter().filter(|(path, hash)| at_stop.get(*path) != Some(*hash)).map(|(path, _)| path.clone()).collect()
}

/// The held paths whose content differs from what ralph last saw of them (`seen`);
/// a path never seen is not counted (there is nothing to compare with).
pub(crate) fn changed_again(seen: &BTreeMap<String, String>, now: &Tree) -> Vec<String> {
    now.iter()
        .filter(|(path, hash)| seen.get(*path).is_some_and(|before| before != *hash))
        .map(|(path, _)| path.clone())
        .collect()
}

/// What the shell found out about one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Facts {
    pub change: Changed,
    /// Size in bytes of a file that exists.
    pub size: Option<u64>,
    /// The first secret it holds (a match of the secret rules, or the value of a
    /// credential ralph passes to an agent), unless `[git] allow_secrets` names it.
    pub secret: Option<Finding>,
}

/// Why a changed file is not in the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeftOut {
    /// The agent reported editing other files and ran no shell: someone else's edit.
    NotTheAgents,
    /// It holds a secret: where, and what it looks like (never the value).
    Credential(Finding),
    /// A new file over `[git] max_new_file`.
    TooLarge { size: u64, max: u64 },
    /// A file held for the run (a person's: changed before the run with
    /// `--allow-dirty`, or while ralph was stopped) changed again.
    Held,
}

impl LeftOut {
    /// Short key for the journal.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            LeftOut::NotTheAgents => "not_the_agents",
            LeftOut::Credential(_) => "credential",
            LeftOut::TooLarge { .. } => "too_large",
            LeftOut::Held => "held",
        }
    }

    /// Whether the file stays out for the rest of the run (someone else's edit),
    /// rather than being looked at again at the next commit.
    pub(crate) fn held_for_the_run(&self) -> bool {
        matches!(self, LeftOut::NotTheAgents | LeftOut::Held)
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            LeftOut::NotTheAgents => "the agent did not report editing it (someone else's change?)".into(),
            LeftOut::Credential(found) => {
                format!("it holds a secret ({found}); it stays out of every commit while it does")
            }
            LeftOut::TooLarge { size, max } => format!("a new file of {size} bytes, over [git] max_new_file ({max})"),
            LeftOut::Held => "it is yours (changed before the run with --allow-dirty, or while ralph was stopped) and \
                              changed again during this iteration; ralph commits none of it: commit it yourself if \
                              the change is wanted"
                .into(),
        }
    }
}

/// The decision for one commit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selection {
    pub commit: Vec<String>,
    pub left_out: Vec<(String, LeftOut)>,
}

/// The rules a commit follows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules<'a> {
    /// `Some(files the agent reported editing)` when attribution applies (it is on,
    /// and the agent ran no shell or unknown tool in the iteration).
    pub agent_files: Option<&'a BTreeSet<String>>,
    pub max_new_file: u64,
}

/// Decides, file by file. Credentials first: a key must never leave the machine in
/// a commit, whoever wrote the file.
pub(crate) fn select(facts: Vec<Facts>, rules: Rules<'_>) -> Selection {
    let mut out = Selection::default();
    for f in facts {
        let why = if let Some(found) = f.secret {
            Some(LeftOut::Credential(found))
        } else if f.change.untracked
            && let Some(size) = f.size
            && size > rules.max_new_file
        {
            Some(LeftOut::TooLarge { size, max: rules.max_new_file })
        } else if let Some(files) = rules.agent_files
            && !files.contains(&f.change.path)
        {
            Some(LeftOut::NotTheAgents)
        } else {
            None
        };
        match why {
            Some(why) => out.left_out.push((f.change.path, why)),
            None => out.commit.push(f.change.path),
        }
    }
    out.commit.sort();
    out.commit.dedup();
    out
}

/// Whether `[git] allow_secrets` lets `path` through: an exact path, or a glob
/// (`*` any characters, `/` included; `?` one).
pub(crate) fn allowed(path: &str, allow: &[String]) -> bool {
    allow.iter().any(|glob| crate::agent::env::glob_match(glob.trim_start_matches("./"), path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(path: &str) -> Changed {
        Changed { path: path.into(), untracked: false, deleted: false }
    }

    fn new_file(path: &str) -> Changed {
        Changed { path: path.into(), untracked: true, deleted: false }
    }

    fn facts(change: Changed, size: u64, secret: bool) -> Facts {
        Facts { change, size: Some(size), secret: secret.then(found) }
    }

    fn found() -> Finding {
        Finding { line: 3, family: "GitHub" }
    }

    fn exempt() -> Exempt {
        Exempt { files: vec!["ralph.toml".into(), "PROMPT.md".into()], dirs: vec![".agent".into()], globs: vec![] }
    }

    #[test]
    fn status_lines_become_changes() {
        let out = b" M src/a.rs\0?? new dir/b.txt\0 D gone.rs\0D  staged-gone\0!! target/x\0AM added.rs\0";
        assert_eq!(
            parse_status(out),
            vec![
                changed("src/a.rs"),
                new_file("new dir/b.txt"),
                Changed { path: "gone.rs".into(), untracked: false, deleted: true },
                Changed { path: "staged-gone".into(), untracked: false, deleted: true },
                changed("added.rs"),
            ]
        );
    }

    #[test]
    fn ralphs_own_files_never_make_the_tree_dirty() {
        let all = vec![
            new_file("ralph.toml"),
            new_file("PROMPT.md"),
            new_file(".agent/.gitignore"),
            new_file(".agent/ralph.toml"),
            new_file(".agentx"),
            changed("src/a.rs"),
        ];
        assert_eq!(dirty_at_start(&all, &exempt()), vec![".agentx".to_string(), "src/a.rs".to_string()]);
        assert!(dirty_at_start(&all[..4], &exempt()).is_empty());
    }

    #[test]
    fn held_and_exempt_files_are_never_candidates() {
        let held: BTreeSet<String> = ["notes.txt".to_string()].into();
        let got = candidates(vec![changed("notes.txt"), changed("PROMPT.md"), new_file("a.rs")], &exempt(), &held);
        assert_eq!(got, vec![new_file("a.rs")]);
    }

    #[test]
    fn credentials_and_large_new_files_are_left_out() {
        let rules = Rules { agent_files: None, max_new_file: 100 };
        let sel = select(
            vec![
                facts(new_file("big.bin"), 101, false),
                facts(changed("big-but-tracked.bin"), 1000, false),
                facts(new_file("ok.rs"), 100, false),
                facts(changed(".env"), 10, true),
            ],
            rules,
        );
        assert_eq!(sel.commit, vec!["big-but-tracked.bin".to_string(), "ok.rs".to_string()]);
        assert_eq!(
            sel.left_out,
            vec![
                ("big.bin".to_string(), LeftOut::TooLarge { size: 101, max: 100 }),
                (".env".to_string(), LeftOut::Credential(found()))
            ]
        );
    }

    #[test]
    fn attribution_leaves_out_files_the_agent_never_touched() {
        let agent: BTreeSet<String> = ["a.rs".to_string()].into();
        let all = vec![facts(changed("a.rs"), 1, false), facts(changed("person.txt"), 1, false)];
        let sel = select(all.clone(), Rules { agent_files: Some(&agent), max_new_file: 100 });
        assert_eq!(sel.commit, vec!["a.rs".to_string()]);
        assert_eq!(sel.left_out, vec![("person.txt".to_string(), LeftOut::NotTheAgents)]);
        assert!(sel.left_out[0].1.held_for_the_run());
        let sel = select(all, Rules { agent_files: None, max_new_file: 100 });
        assert_eq!(sel.commit.len(), 2);
    }

    fn tree(entries: &[(&str, &str)]) -> Tree {
        entries.iter().map(|(p, h)| ((*p).to_string(), (*h).to_string())).collect()
    }

    #[test]
    fn what_changed_while_ralph_was_stopped_is_the_persons() {
        let at_stop = tree(&[("src/a.rs", "1"), ("src/c.rs", "2"), ("put-back.rs", "3")]);
        let now = tree(&[("src/a.rs", "1"), ("src/c.rs", "2b"), ("NOTES.md", "4"), ("gone.rs", "gone")]);
        assert_eq!(changed_while_stopped(&at_stop, &now), ["NOTES.md", "gone.rs", "src/c.rs"]);
        assert!(changed_while_stopped(&now, &now).is_empty());
        assert!(changed_while_stopped(&at_stop, &Tree::new()).is_empty(), "nothing changed now: nothing to hold");
    }

    #[test]
    fn a_held_file_is_named_again_only_when_its_content_changed() {
        let seen: BTreeMap<String, String> = tree(&[("NOTES.md", "1"), ("scratch.txt", "2")]);
        let now = tree(&[("NOTES.md", "1b"), ("scratch.txt", "2"), ("never-seen.txt", "3")]);
        assert_eq!(changed_again(&seen, &now), ["NOTES.md"]);
        assert!(LeftOut::Held.held_for_the_run());
        assert_eq!(LeftOut::Held.key(), "held");
    }

    #[test]
    fn allow_secrets_takes_paths_and_globs() {
        let allow = vec!["tests/fixtures/*".to_string(), "./docs/example.env".to_string()];
        assert!(allowed("tests/fixtures/aws/keys.json", &allow));
        assert!(allowed("docs/example.env", &allow));
        assert!(!allowed("src/config.rs", &allow));
        assert!(!allowed("tests/other.rs", &allow));
    }

    #[test]
    fn a_secret_is_named_by_line_and_family_never_by_value() {
        let why = LeftOut::Credential(found());
        assert_eq!(why.key(), "credential");
        assert!(why.describe().contains("line 3: GitHub"), "{}", why.describe());
    }
}

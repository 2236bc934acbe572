//! Tasks from task files, pure: which files of `[fleet] tasks` are tasks, each
//! task's name (its file's stem) and branch (`ralph/<name>`), and the names that
//! cannot be: not a valid branch name component, or colliding with another task or
//! with `into`. The shell lists the files ([`expand`] matches them).

use std::collections::BTreeMap;
use std::path::Path;

/// The branch of task `name`.
pub(crate) fn branch_of(name: &str) -> String {
    format!("ralph/{name}")
}

/// A task file that is a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub name: String,
    /// Relative to the repository's top, `/`-separated.
    pub file: String,
}

/// A task file that cannot be a task, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unusable {
    pub file: String,
    pub problem: String,
}

/// The tasks among `files` (relative paths that match the glob, any order), sorted by
/// path, and the files that cannot be tasks. `README.md` is never a task.
pub(crate) fn tasks(files: &[String], into: &str) -> (Vec<Found>, Vec<Unusable>) {
    let mut sorted: Vec<&String> = files.iter().collect();
    sorted.sort();
    let mut by_name: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    let mut unusable = Vec::new();
    for file in sorted {
        let stem = Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if Path::new(file).file_name().is_some_and(|n| n.eq_ignore_ascii_case("README.md")) {
            continue;
        }
        match check_name(&stem, into) {
            Ok(()) => by_name.entry(stem).or_default().push(file),
            Err(problem) => unusable.push(Unusable { file: file.clone(), problem }),
        }
    }
    let mut found = Vec::new();
    for (name, files) in by_name {
        if let [file] = files.as_slice() {
            found.push(Found { name, file: (*file).clone() });
        } else {
            let list = files.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ");
            for file in files {
                unusable.push(Unusable {
                    file: file.clone(),
                    problem: format!(
                        "the task name {name:?} is taken by more than one file ({list}); rename all but one"
                    ),
                });
            }
        }
    }
    unusable.sort_by(|a, b| a.file.cmp(&b.file));
    (found, unusable)
}

/// Whether `name` can name a task: `ralph/<name>` is a branch git accepts, and it
/// does not collide with the fleet's own branch.
pub(crate) fn check_name(name: &str, into: &str) -> Result<(), String> {
    let branch = branch_of(name);
    let invalid = |why: &str| Err(format!("{name:?} cannot name a task: {why}; rename the file"));
    if name.is_empty() {
        return invalid("the name is empty");
    }
    if name.starts_with('.') || name.contains('/') {
        return invalid("a branch name component cannot start with . or hold /");
    }
    if let Err(problem) = crate::config::check_branch(&branch) {
        return invalid(&format!("the branch {branch} {problem}"));
    }
    if branch == into || into.starts_with(&format!("{branch}/")) || branch.starts_with(&format!("{into}/")) {
        return invalid(&format!("its branch {branch} collides with the fleet's branch {into} ([fleet] into)"));
    }
    Ok(())
}

/// The files under `top` that match `glob`, relative and `/`-separated. Directories
/// are listed one component at a time, so only the glob's own directories are read.
pub(crate) fn expand(top: &Path, glob: &str) -> Vec<String> {
    let mut found = vec![String::new()];
    let parts: Vec<&str> = glob.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut next = Vec::new();
        for prefix in &found {
            let dir = top.join(prefix);
            if !part.contains(['*', '?']) {
                let rel = join(prefix, part);
                let meta = std::fs::metadata(top.join(&rel));
                if meta.is_ok_and(|m| if last { m.is_file() } else { m.is_dir() }) {
                    next.push(rel);
                }
                continue;
            }
            let Ok(listing) = std::fs::read_dir(&dir) else { continue };
            for entry in listing.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let kind_ok = entry.file_type().is_ok_and(|t| if last { t.is_file() } else { t.is_dir() });
                if kind_ok && !name.starts_with('.') && crate::agent::env::glob_match(part, &name) {
                    next.push(join(prefix, &name));
                }
            }
        }
        found = next;
    }
    found.retain(|f| !f.is_empty());
    found.sort();
    found
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &[Found]) -> Vec<&str> {
        found.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn task_names_are_file_stems_and_readme_is_not_a_task() {
        let files = ["tasks/b.md", "tasks/README.md", "tasks/a-1.md", "tasks/readme.md"].map(String::from);
        let (found, unusable) = tasks(&files, "ralph/fleet");
        assert_eq!(names(&found), ["a-1", "b"]);
        assert!(unusable.is_empty(), "{unusable:?}");
        assert_eq!(found[0].file, "tasks/a-1.md");
    }

    #[test]
    fn bad_names_and_collisions_are_named_with_the_fix() {
        let files = [
            "tasks/x/dup.md",
            "tasks/y/dup.md",
            "tasks/has space.md",
            "tasks/fleet.md",
            "tasks/.hidden.md",
            "tasks/a..b.md",
            "tasks/x.lock.md",
            "tasks/ok.md",
        ]
        .map(String::from);
        let (found, unusable) = tasks(&files, "ralph/fleet");
        assert_eq!(names(&found), ["ok"]);
        let problems: Vec<(&str, &str)> = unusable.iter().map(|u| (u.file.as_str(), u.problem.as_str())).collect();
        assert_eq!(problems.len(), 7, "{problems:#?}");
        assert!(problems.iter().any(|(f, p)| *f == "tasks/fleet.md" && p.contains("collides with the fleet's branch")));
        assert!(problems.iter().any(|(f, p)| *f == "tasks/x/dup.md" && p.contains("more than one file")));
        assert!(problems.iter().all(|(_, p)| p.contains("rename")));
        // A prefix clash either way is a collision too.
        assert!(check_name("a", "ralph/a/b").is_err());
        assert!(check_name("b", "ralph").is_err());
        assert!(check_name("b", "main").is_ok());
    }

    #[test]
    fn expand_lists_only_matching_files() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["tasks/a.md", "tasks/b.txt", "tasks/sub/c.md", "more/x/d.md", "more/y/e.md", "tasks/.h.md"] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        assert_eq!(expand(dir.path(), "tasks/*.md"), ["tasks/a.md"]);
        assert_eq!(expand(dir.path(), "more/*/*.md"), ["more/x/d.md", "more/y/e.md"]);
        assert_eq!(expand(dir.path(), "tasks/a.md"), ["tasks/a.md"]);
        assert!(expand(dir.path(), "none/*.md").is_empty());
    }
}

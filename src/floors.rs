//! The crate's floors, held by tests: a file sits above every file it imports.
//! Three rules, held by tests here (like `os.rs`'s test that keeps the Linux calls
//! in one place), each with no exception:
//!
//! 1. **No circle of files.** A circle is a cycle of `crate::`, `super::`, `self::`
//!    or child-module paths between files outside the tests; a path reaches the file
//!    of its longest module prefix (a `mod.rs` that re-exports its children, or
//!    calls into them, stands for them), and a path through a name a `use` brought
//!    in (`use crate::commands;` then `commands::fleet::main()`) is followed.
//! 2. **No circle of top-level modules** (a module stands for all its files): no two
//!    importing each other (`a <-> b`, its own test, which names the pair), and no
//!    longer loop (`a -> b -> c -> a`), so a drawing by folders has no arrow running
//!    back up either.
//! 3. **No core file importing a shell file** (design.md §11): [`SIDES`] says which
//!    side each module is on, the pure decision core (state and an event in, a
//!    decision out) or the I/O shell (processes, signals, files, terminal): a type
//!    both sides use lives in a pure file (`state::writes`, `state::identity`,
//!    `state::registry::entry`) or a leaf, and a shell function a core-side module
//!    needs is handed in (Gemini's settings file: `Request::settings_file`).
//!
//! The floors, bottom up:
//! * leaves every floor may use, importing nothing of the crate (or only another
//!   leaf): `outcome` (the types many modules share: how a run ended, why a stop was
//!   asked for, a run's status and cost, the failure categories), `text` (ellipsis, plurals, ordinals, short hashes,
//!   and `text::clock`, times formatted in a zone passed in), `env_names` (the
//!   environment a launched agent gets from ralph), `exit_codes` (the process's exit
//!   codes), `os`, `secrets` (`special` below `matcher`);
//! * `config` below `agent`: `config::types` (the file's shape, with the CLI kinds
//!   and each one's permission modes, which validation checks) below the agent
//!   descriptors, which read an agent's table; `config::file` (finding and reading
//!   the file) is the shell's part;
//! * `exit_codes` below `process::agent_group`, which exits with one of them when
//!   the second Ctrl+C finds the event loop blocked, below `listeners` (which arm
//!   it, and hand on the control socket's messages: above `control`), while the
//!   pure machine `signal` stays low;
//! * `workflow::progress` (where a run stands, the review's verdict) below
//!   `workflow::advance` (the phase-boundary decisions); `supervise` below
//!   `workflow` (the done signals are the completion judge's) below `recovery`
//!   below `step` (whose `trouble` puts a failure in the recovery note's words);
//! * `state`'s pure files below the core files that read them and below its shell
//!   files: `checkpoint`, `writes` (how durable a save must be, what a log's disk
//!   did, the full disk's backoff), `identity` (its rule; `identity_now` is the
//!   look), `registry::entry` (an entry's shape; `registry` reads and writes it);
//! * `error` above `state` (it wraps the lock's, the lease's and a refused
//!   checkpoint's errors; `state` imports no `error` and takes its one exit code from
//!   `exit_codes`), `exit` (the table) above `error`;
//! * the shell on top: `state`, `report` (which reads the system's zone, once per
//!   run or command: `report::zone`), `run`, `fleet`, `watch`, `commands` (with
//!   `commands::in_dir`, `report` and `fleet_find` below the subcommands that use
//!   them), `app`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path from the crate root, `["config", "types"]` for `src/config/types.rs`.
type ModPath = Vec<String>;

/// The module path of a file under `src/`: `lib.rs` is the root, `a/mod.rs` and
/// `a.rs` are `a`.
fn module_of(relative: &Path) -> ModPath {
    let mut parts: ModPath = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_string());
        }
    }
    parts
}

/// The text of a file without its comments and without what only the tests compile
/// (an item after `#[cfg(test)]`: a `use` line, a `mod x;` or a block up to the
/// closing brace at its indentation). The test-only modules declared with `mod x;`
/// are returned too, so their files are left out.
fn code_outside_tests(text: &str) -> (String, Vec<String>) {
    let mut code = String::new();
    let mut test_mods = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(after) = line.trim_start().strip_prefix("#[cfg(test)]") else {
            code.push_str(line.split("//").next().unwrap_or_default());
            code.push('\n');
            continue;
        };
        let mut item = if after.trim().is_empty() { lines.next().unwrap_or_default() } else { line };
        while item.trim_start().starts_with("#[") {
            item = lines.next().unwrap_or_default();
        }
        let whole = item.split("//").next().unwrap_or_default().trim();
        if let Some(name) = whole.strip_suffix(';').and_then(|i| i.split("mod ").nth(1)) {
            test_mods.push(name.trim().to_string());
        }
        // One line (`use …;`, a field, `fn f() {}`), or a block closed at its indentation.
        let balanced = whole.matches('{').count() == whole.matches('}').count();
        if whole.ends_with([';', ',']) || (whole.ends_with('}') && balanced) {
            continue;
        }
        let close = format!("{}}}", &item[..item.len() - item.trim_start().len()]);
        lines.by_ref().find(|rest| rest.starts_with(&close));
    }
    (code, test_mods)
}

/// The child modules a file declares (`mod x;`, `pub(crate) mod x;`).
fn children(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|l| l.trim().strip_suffix(';')?.split("mod ").nth(1).map(|n| n.trim().to_string()))
        .filter(|n| n.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect()
}

/// Every path a file names, with its `use` trees expanded: `use a::{b, c::d}` gives
/// `a::b` and `a::c::d`.
fn paths(code: &str, kids: &BTreeSet<String>) -> Vec<Vec<String>> {
    let (mut used, mut inline) = (Vec::new(), Vec::new());
    let mut rest = code;
    // A `use` declaration starts its line (after a visibility); "use " in a message does not.
    let visibility = |text: &str, at: usize| text[..at].rsplit('\n').next().unwrap_or_default().trim().to_string();
    while let Some(at) = rest.match_indices("use ").map(|(i, _)| i).find(|&i| {
        let before = visibility(rest, i);
        before.is_empty() || before.starts_with("pub")
    }) {
        inline_paths(&rest[..at], &mut inline);
        let tail = &rest[at + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        let mut named = Vec::new();
        expand_named(&tail[..end], &mut Vec::new(), &mut named);
        // A module's re-export of its own child's name is a door, not an import: who
        // takes the name through it is tied to the module's file, which declares the child.
        let reexport = visibility(rest, at).starts_with("pub");
        let child = |p: &Vec<String>| p.first().is_some_and(|f| kids.contains(f) || f == "self");
        used.extend(named.into_iter().filter(|(p, _)| !(reexport && child(p))));
        rest = tail.get(end + 1..).unwrap_or_default();
    }
    inline_paths(rest, &mut inline);
    // A path through a name a `use` brought in (`use crate::commands;`, then
    // `commands::fleet::main()`) goes where the name comes from.
    let scope: BTreeMap<&str, &Vec<String>> = used
        .iter()
        .filter(|(p, n)| p.len() > 1 && !["crate", "self", "super"].contains(&n.as_str()) && !kids.contains(n))
        .map(|(p, n)| (n.as_str(), p))
        .collect();
    let through = inline.into_iter().map(|p| match scope.get(p[0].as_str()) {
        Some(from) => [from.as_slice(), &p[1..]].concat(),
        None => p,
    });
    used.iter().map(|(p, _)| p.clone()).chain(through).collect()
}

/// `a::b::{c, d::e as f}` into `prefix` + each leaf, with the name it brings into
/// scope (`c`, `f`).
fn expand_named(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim();
    let (head, group) = match tree.find('{') {
        Some(open) => {
            (&tree[..open], Some(&tree[open + 1..tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len())]))
        }
        None => (tree, None),
    };
    let depth = prefix.len();
    let mut head = head.split(" as ");
    let (path, alias) = (head.next().unwrap_or_default(), head.next().map(str::trim));
    prefix.extend(path.split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "*").map(String::from));
    match group {
        None => {
            // `use a::b::{self}` brings `b` into scope.
            let last = prefix.iter().rev().find(|s| *s != "self").cloned().unwrap_or_default();
            let name = alias.map_or(last, String::from);
            out.push((prefix.clone(), name));
        }
        Some(group) => {
            for part in split_top(group) {
                expand_named(part, prefix, out);
            }
        }
    }
    prefix.truncate(depth);
}

/// A `use` group's members, split at the commas outside nested braces.
fn split_top(group: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&group[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// The `x::y::z` runs of code outside `use`.
fn inline_paths(code: &str, out: &mut Vec<Vec<String>>) {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut path: Vec<String> = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(word) {
        let run = &rest[start..];
        let len = run.find(|c: char| !word(c)).unwrap_or(run.len());
        path.push(run[..len].to_string());
        rest = &run[len..];
        if let Some(next) = rest.strip_prefix("::") {
            rest = next;
        } else {
            if path.len() > 1 {
                out.push(std::mem::take(&mut path));
            }
            path.clear();
        }
    }
}

/// The files of `src/` outside the tests, by module path, with their code.
fn read_tree(src: &Path) -> BTreeMap<ModPath, (PathBuf, String)> {
    let files = crate::testkit::rust_files(src);
    let mut tree = BTreeMap::new();
    let mut test_only = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap_or(&file).to_path_buf();
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let (code, tests) = code_outside_tests(&text);
        let module = module_of(&relative);
        for name in tests {
            test_only.insert([module.clone(), vec![name]].concat());
        }
        tree.insert(module, (relative, code));
    }
    tree.retain(|m: &ModPath, _| !test_only.iter().any(|t| m.starts_with(t)) && m.first().is_none_or(|f| f != "main"));
    tree
}

/// The import arrows between files: for each file, the files its paths reach.
fn arrows(tree: &BTreeMap<ModPath, (PathBuf, String)>) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut arrows = BTreeMap::new();
    for (module, (_, code)) in tree {
        let kids = children(code);
        let mut to = BTreeSet::new();
        for path in paths(code, &kids) {
            let Some(absolute) = resolve(module, &kids, &path) else { continue };
            let target = (0..=absolute.len()).rev().map(|n| absolute[..n].to_vec()).find(|m| tree.contains_key(m));
            if let Some(target) = target.filter(|t| !module.starts_with(t)) {
                to.insert(target);
            }
        }
        arrows.insert(module.clone(), to);
    }
    arrows
}

/// A path named in `module` from the crate root, if it names a module of the crate.
fn resolve(module: &[String], kids: &BTreeSet<String>, path: &[String]) -> Option<ModPath> {
    let first = path.first()?;
    let (mut base, rest) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.to_vec(), &path[1..]),
        "super" => (module.to_vec(), path),
        name if kids.contains(name) => (module.to_vec(), path),
        _ => return None,
    };
    let mut rest = rest.iter().peekable();
    while rest.peek().is_some_and(|s| *s == "super") {
        base.pop()?;
        rest.next();
    }
    base.extend(rest.filter(|s| *s != "self").cloned());
    Some(base)
}

/// The circles: each strongly connected set of more than one file (Tarjan's).
fn circles(arrows: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct Walk<'a> {
        arrows: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, (usize, usize)>,
        stack: Vec<&'a ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, node: &'a ModPath) {
        let arrows = w.arrows;
        let n = w.index.len();
        w.index.insert(node, (n, n));
        w.stack.push(node);
        for next in arrows.get(node).into_iter().flatten() {
            let low = match w.index.get(next) {
                None => {
                    visit(w, next);
                    w.index[next].1
                }
                Some(&(i, _)) if w.stack.contains(&next) => i,
                Some(_) => continue,
            };
            let entry = w.index.get_mut(node).expect("visited");
            entry.1 = entry.1.min(low);
        }
        if w.index[node].0 == w.index[node].1 {
            let at = w.stack.iter().rposition(|m| *m == node).unwrap_or(0);
            let set: Vec<ModPath> = w.stack.drain(at..).cloned().collect();
            if set.len() > 1 {
                w.found.push(set);
            }
        }
    }
    let mut walk = Walk { arrows, index: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for node in arrows.keys() {
        if !walk.index.contains_key(node) {
            visit(&mut walk, node);
        }
    }
    walk.found
}

/// The circles of the tree under `src`, each as its files (sorted) and the arrows
/// inside it.
fn circles_in(src: &Path) -> Vec<(Vec<String>, String)> {
    let tree = read_tree(src);
    let arrows = arrows(&tree);
    let file = |m: &ModPath| tree.get(m).map_or_else(|| m.join("::"), |(p, _)| p.display().to_string());
    circles(&arrows)
        .iter()
        .map(|set| {
            let inside =
                set.iter().flat_map(|from| arrows[from].iter().filter(|to| set.contains(to)).map(move |to| (from, to)));
            let arrows = inside.map(|(from, to)| format!("{} -> {}", file(from), file(to))).collect::<Vec<_>>();
            let mut files: Vec<String> = set.iter().map(file).collect();
            files.sort();
            (files, arrows.join(", "))
        })
        .collect()
}

/// The top-level modules of the tree under `src` that import each other, each pair
/// with the file arrows that tie it both ways.
fn two_way_pairs(src: &Path) -> Vec<String> {
    let tree = read_tree(src);
    let arrows = arrows(&tree);
    let file = |m: &ModPath| tree.get(m).map_or_else(|| m.join("::"), |(p, _)| p.display().to_string());
    let mut between: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for (from, to) in arrows.iter().flat_map(|(from, to)| to.iter().map(move |t| (from, t))) {
        let (Some(a), Some(b)) = (from.first(), to.first()) else { continue };
        if a != b {
            between.entry((a, b)).or_default().push(format!("{} -> {}", file(from), file(to)));
        }
    }
    between
        .iter()
        .filter(|((a, b), _)| a < b && between.contains_key(&(*b, *a)))
        .map(|((a, b), there)| format!("{a} <-> {b}: {}; {}", there.join(", "), between[&(*b, *a)].join(", ")))
        .collect()
}

/// The circles of the top-level modules of the tree under `src` (a module stands
/// for all its files), each as its modules and the file arrows that tie it.
fn top_level_circles(src: &Path) -> Vec<String> {
    let tree = read_tree(src);
    let arrows = arrows(&tree);
    let file = |m: &ModPath| tree.get(m).map_or_else(|| m.join("::"), |(p, _)| p.display().to_string());
    let top = |m: &ModPath| m.first().cloned().into_iter().collect::<ModPath>();
    let mut modules: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, to) in &arrows {
        let ties = modules.entry(top(from)).or_default();
        ties.extend(to.iter().map(top).filter(|t| *t != top(from)));
    }
    circles(&modules)
        .iter()
        .map(|set| {
            let inside = arrows.iter().flat_map(|(from, to)| to.iter().map(move |t| (from, t)));
            let ties = inside
                .filter(|(f, t)| top(f) != top(t) && set.contains(&top(f)) && set.contains(&top(t)))
                .map(|(f, t)| format!("{} -> {}", file(f), file(t)));
            format!(
                "{}: {}",
                set.iter().map(|m| m.join("")).collect::<Vec<_>>().join(", "),
                ties.collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

/// Which side of design.md §11 a file is on: the pure decision core (state and an
/// event in, a decision out: no processes, signals, files, clocks or terminal of its
/// own) or the I/O shell that carries the decisions out. By the longest module
/// prefix; a module in neither list (the types and tables every side shares: `cli`,
/// `error`, `exit`, `events`, the agent descriptors) is held only by the circles
/// and the pairs.
const SIDES: &[(&str, Side)] = &[
    // The core.
    ("config", Side::Core),
    ("workflow", Side::Core),
    ("recovery", Side::Core),
    ("supervise", Side::Core),
    ("step", Side::Core),
    ("signal", Side::Core),
    ("outcome", Side::Core),
    ("text", Side::Core),
    ("env_names", Side::Core),
    ("exit_codes", Side::Core),
    ("secrets", Side::Core),
    ("agent::env", Side::Core),
    ("git::plan", Side::Core),
    ("git::message", Side::Core),
    ("git::attribution", Side::Core),
    ("git::stale_lock", Side::Core),
    ("control::protocol", Side::Core),
    ("watch::decide", Side::Core),
    ("fleet::core", Side::Core),
    ("fleet::queue", Side::Core),
    // Pure files of shell modules: the checkpoint's shape, what the core says and
    // hears about writing state, a run directory's identity and a registry entry
    // (the rules that compare them with what is found), the control socket's
    // messages, what a commit did (as facts).
    ("state::checkpoint", Side::Core),
    ("state::writes", Side::Core),
    ("state::identity", Side::Core),
    ("state::registry::entry", Side::Core),
    ("control", Side::Core),
    ("git::record", Side::Core),
    // The shell.
    ("config::file", Side::Shell),
    ("inputs", Side::Shell),
    ("listeners", Side::Shell),
    // Who sent a SIGTERM: the pure rule and the facts it gathers (through `os`).
    ("signal::origin", Side::Neither),
    // The fleet's state: its shape, and the read of `fleet.json`; the checkpoint's
    // format policy, and the read of a checkpoint file or the journal's snapshot.
    ("fleet::state", Side::Neither),
    ("state::format", Side::Neither),
    ("os", Side::Shell),
    ("process", Side::Shell),
    ("state", Side::Shell),
    ("run", Side::Shell),
    ("report", Side::Shell),
    ("commands", Side::Shell),
    ("app", Side::Shell),
    ("host_network", Side::Shell),
    ("notify", Side::Shell),
    ("control::server", Side::Shell),
    ("control::client", Side::Shell),
    ("control::path", Side::Shell),
    ("watch", Side::Shell),
    ("fleet", Side::Shell),
    ("git", Side::Shell),
    ("agent::launch", Side::Shell),
    ("agent::preflight", Side::Shell),
    ("agent::sim", Side::Shell),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Core,
    Shell,
    Neither,
}

/// The side of a module: its longest prefix in [`SIDES`].
fn side(module: &[String]) -> Option<Side> {
    SIDES
        .iter()
        .filter(|(prefix, _)| {
            let prefix: Vec<&str> = prefix.split("::").collect();
            module.len() >= prefix.len() && module.iter().zip(&prefix).all(|(m, p)| m == p)
        })
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, side)| *side)
}

/// The arrows from a core file to a shell file in the tree under `src`.
fn core_to_shell(src: &Path) -> Vec<String> {
    let tree = read_tree(src);
    let file = |m: &ModPath| tree.get(m).map_or_else(|| m.join("::"), |(p, _)| p.display().to_string());
    arrows(&tree)
        .iter()
        .filter(|(from, _)| side(from) == Some(Side::Core))
        .flat_map(|(from, to)| to.iter().filter(|t| side(t) == Some(Side::Shell)).map(move |t| (from, t)))
        .map(|(from, to)| format!("{} -> {}", file(from), file(to)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
    }

    #[test]
    fn the_files_of_src_form_no_circle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let found = circles_in(&src);
        let joined = found.iter().map(|(_, a)| a.as_str()).collect::<Vec<_>>().join("\n");
        assert!(found.is_empty(), "files of src/ import each other in a circle:\n{joined}");
        assert!(read_tree(&src).len() > 100, "the scan found too few files");
    }

    #[test]
    fn no_two_top_level_modules_import_each_other() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let pairs = two_way_pairs(&src);
        assert!(pairs.is_empty(), "top-level modules of src/ import each other:\n{}", pairs.join("\n"));
    }

    #[test]
    fn the_top_level_modules_of_src_form_no_circle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let found = top_level_circles(&src);
        assert!(found.is_empty(), "top-level modules of src/ import each other in a circle:\n{}", found.join("\n"));
    }

    #[test]
    fn no_core_file_imports_a_shell_file() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let found = core_to_shell(&src);
        assert!(found.is_empty(), "core files of src/ import shell files:\n{}", found.join("\n"));
        assert_eq!(side(&["step".into(), "trouble".into()]), Some(Side::Core));
        assert_eq!(side(&["config".into(), "file".into()]), Some(Side::Shell));
    }

    #[test]
    fn a_circle_through_a_reexporting_mod_rs_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a/mod.rs", "mod types;\nmod check;\npub use types::*;\npub fn parse() {\n    check::run()\n}\n"),
                ("a/types.rs", "pub struct T;\n"),
                ("a/check.rs", "use crate::b::{self, kinds::{K}};\npub fn run() {}\n"),
                ("b/mod.rs", "pub(crate) mod kinds;\n"),
                (
                    "b/kinds.rs",
                    "pub struct K(crate::a::T);\n#[cfg(test)]\nmod tests {\n    use super::super::super::a::check;\n}\n",
                ),
            ],
        );
        let found = circles_in(dir.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, ["a/check.rs", "a/mod.rs", "b/kinds.rs"]);
        assert!(
            found[0].1.contains("b/kinds.rs -> a/mod.rs") && found[0].1.contains("a/mod.rs -> a/check.rs"),
            "{found:?}"
        );
        // The agent's descriptors taking their types from `a::types` ends it.
        write(dir.path(), &[("b/kinds.rs", "pub struct K(crate::a::types::T);\n")]);
        assert_eq!(circles_in(dir.path()), Vec::new());
    }

    #[test]
    fn a_circle_of_top_level_modules_is_found_without_a_circle_of_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("a/mod.rs", "pub(crate) mod low;\npub(crate) mod high;\n"),
                ("a/low.rs", "pub struct L;\n"),
                ("a/high.rs", "use crate::b::B;\n"),
                ("b.rs", "pub struct B(crate::c::C);\n"),
                ("c.rs", "pub struct C(crate::a::low::L);\n"),
            ],
        );
        assert_eq!(circles_in(dir.path()), Vec::new());
        let found = top_level_circles(dir.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("a/high.rs -> b.rs") && found[0].contains("c.rs -> a/low.rs"), "{found:?}");
        assert!(two_way_pairs(dir.path()).is_empty());
    }

    #[test]
    fn a_path_through_a_used_name_goes_where_the_name_comes_from() {
        let code = "use crate::commands;\nuse super::tidy as t;\nuse std::fmt;\n\
                    fn f() {\n    commands::fleet::main();\n    t::land();\n    fmt::Write::x();\n}\n";
        let named: Vec<String> = paths(code, &BTreeSet::new()).iter().map(|p| p.join("::")).collect();
        assert!(named.contains(&"crate::commands::fleet::main".to_string()), "{named:?}");
        assert!(named.contains(&"super::tidy::land".to_string()), "{named:?}");
    }

    #[test]
    fn test_code_and_comments_are_no_arrows() {
        let (code, tests) = code_outside_tests(
            "use crate::a; // crate::b\n#[cfg(test)]\nmod helpers;\n#[cfg(test)]\nuse crate::c;\nfn f() {}\n\
             #[cfg(test)]\nmod tests {\n    fn g() {\n        crate::d::x();\n    }\n}\n",
        );
        assert_eq!(tests, ["helpers"]);
        let named: Vec<String> = paths(&code, &BTreeSet::new()).iter().map(|p| p.join("::")).collect();
        assert_eq!(named, ["crate::a"]);
    }
}

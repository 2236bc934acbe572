//! Which files the agent reported editing in an iteration, from its structured tool
//! calls, and whether that report can be trusted to be complete. Pure, over events.
//!
//! The report is complete only when every tool the agent called is known to edit
//! exactly the file it names (Write, Edit, ...) or to edit nothing (Read, Grep, ...).
//! A shell, a sub-agent or any tool ralph does not know can change any file, so one
//! of those makes the iteration's attribution unknown and everything changed is the
//! agent's (docs/git.md says what ralph cannot tell apart).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::agent::AgentEvent;

/// Tools that edit the one file named in their input (Claude Code, Gemini CLI,
/// OpenCode names), compared case-insensitively.
const EDITING: &[&str] = &["write", "edit", "multiedit", "notebookedit", "write_file", "replace"];
/// Input keys that name the edited file.
const PATH_KEYS: &[&str] = &["file_path", "filePath", "notebook_path", "path", "absolute_path"];
/// Tools that change no file.
const READ_ONLY: &[&str] = &[
    "read",
    "glob",
    "grep",
    "ls",
    "list",
    "read_file",
    "read_many_files",
    "search_file_content",
    "list_directory",
    "webfetch",
    "websearch",
    "web_fetch",
    "google_web_search",
    "todowrite",
    "todoread",
];

/// What the agent reported in the current iteration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Touched {
    /// A tool that can change any file ran, or earlier attempts are unknown.
    unknown: bool,
    /// The paths as the agent wrote them.
    files: BTreeSet<String>,
}

impl Touched {
    /// Nothing known: the iteration's earlier attempts ran in an earlier process.
    pub(crate) fn unknown() -> Self {
        Touched { unknown: true, files: BTreeSet::new() }
    }

    /// At the start of a process: a resumed iteration's earlier attempts ran in
    /// another process, so what they edited is unknown.
    pub(crate) fn at_start(resumed: bool) -> Self {
        if resumed { Touched::unknown() } else { Touched::default() }
    }

    pub(crate) fn observe(&mut self, event: &AgentEvent) {
        let AgentEvent::ToolStarted { name, input, .. } = event else { return };
        let lower = name.to_ascii_lowercase();
        if READ_ONLY.contains(&lower.as_str()) {
            return;
        }
        let path = PATH_KEYS.iter().find_map(|k| input.get(*k).and_then(|v| v.as_str()));
        match (EDITING.contains(&lower.as_str()), path) {
            (true, Some(p)) => {
                self.files.insert(p.to_string());
            }
            _ => self.unknown = true,
        }
    }

    /// Adds what a later attempt of the same iteration reported.
    pub(crate) fn absorb(&mut self, other: &Touched) {
        self.unknown |= other.unknown;
        self.files.extend(other.files.iter().cloned());
    }

    /// The reported files relative to the repository's top (`/`-separated), or
    /// `None` when the report cannot be trusted to be complete. `cwd` is where the
    /// agent ran (relative paths are relative to it); `bases` are directories with
    /// their path relative to the top (the top itself with `""`, and the project
    /// directory as the agent saw it, which may differ from git's by symlinks).
    pub(crate) fn files(&self, bases: &[(&Path, &str)], cwd: &Path) -> Option<BTreeSet<String>> {
        let relative = |p: &String| bases.iter().find_map(|(base, rel)| relative_to(base, rel, &cwd.join(p)));
        (!self.unknown).then(|| self.files.iter().filter_map(relative).collect())
    }
}

/// `path` relative to the top, via `base` (which is `base_rel` below the top),
/// lexically normalized; `None` outside `base`.
fn relative_to(base: &Path, base_rel: &str, path: &Path) -> Option<String> {
    let normal = normalize(path);
    let rel = normal.strip_prefix(normalize(base)).ok()?;
    let mut parts: Vec<String> = base_rel.split('/').filter(|s| !s.is_empty()).map(String::from).collect();
    parts.extend(rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `a/b/../c` as `a/c`, without touching the file system (the folder may not exist).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, input: serde_json::Value) -> AgentEvent {
        AgentEvent::ToolStarted { id: "t".into(), name: name.into(), input }
    }

    #[test]
    fn edits_are_collected_relative_to_the_top() {
        let mut t = Touched::default();
        t.observe(&tool("Write", json!({"file_path": "/repo/sub/a.rs", "content": "x"})));
        t.observe(&tool("Edit", json!({"file_path": "b.rs"})));
        t.observe(&tool("Read", json!({"file_path": "/repo/c.rs"})));
        t.observe(&tool("write_file", json!({"file_path": "../top.txt"})));
        t.observe(&tool("Write", json!({"file_path": "/elsewhere/x"})));
        let top: &[(&Path, &str)] = &[(Path::new("/repo"), "")];
        let files = t.files(top, Path::new("/repo/sub")).expect("complete");
        assert_eq!(files, ["sub/a.rs", "sub/b.rs", "top.txt"].into_iter().map(String::from).collect());
        // The agent saw the project through a symlink: its paths map via that base.
        let mut t = Touched::default();
        t.observe(&tool("Write", json!({"file_path": "/link/a.rs"})));
        let bases: &[(&Path, &str)] = &[(Path::new("/real/repo"), ""), (Path::new("/link"), "sub")];
        let files = t.files(bases, Path::new("/link")).expect("complete");
        assert_eq!(files, ["sub/a.rs".to_string()].into());
    }

    #[test]
    fn a_shell_or_an_unknown_tool_makes_the_report_incomplete() {
        for name in ["Bash", "run_shell_command", "Task", "mystery"] {
            let mut t = Touched::default();
            t.observe(&tool("Write", json!({"file_path": "a"})));
            t.observe(&tool(name, json!({"command": "cargo build"})));
            assert_eq!(t.files(&[(Path::new("/r"), "")], Path::new("/r")), None, "{name}");
        }
        let mut t = Touched::default();
        t.observe(&tool("Edit", json!({})));
        assert_eq!(t.files(&[(Path::new("/r"), "")], Path::new("/r")), None);
        assert_eq!(Touched::unknown().files(&[(Path::new("/r"), "")], Path::new("/r")), None);
    }
}

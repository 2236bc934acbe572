//! What a file holds, by line and family, never the value: for the git guard (a file
//! holding a match stays out of the commit), the goal and config check at start,
//! and `ralph doctor`.

use std::fmt;
use std::path::Path;

use super::matcher::What;
use super::{stream, values};

/// One secret found: where, and what it looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// 1-based.
    pub line: usize,
    pub family: &'static str,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.family)
    }
}

/// The secrets in `bytes` (each line once, with its first family), and the found
/// values themselves for [`super::hide_values`] (never shown).
fn scan(bytes: &[u8]) -> (Vec<Finding>, Vec<(usize, usize)>) {
    let (values, _) = values::snapshot();
    let mut hits = Vec::new();
    stream::text_hits(bytes, &values, &mut hits);
    hits.sort_unstable_by_key(|h| h.start);
    let mut out: Vec<Finding> = Vec::new();
    let mut line = 1;
    let mut counted = 0;
    for h in &hits {
        line += bytes[counted..h.start.max(counted)].iter().filter(|&&c| c == b'\n').count();
        counted = h.start.max(counted);
        let family = h.what.family();
        if out.last().is_none_or(|f| f.line != line) {
            out.push(Finding { line, family });
        }
    }
    let ranges = hits.iter().filter(|h| h.what != What::Cut).map(|h| (h.start, h.end)).collect();
    (out, ranges)
}

/// The secrets in `bytes`.
pub(crate) fn in_bytes(bytes: &[u8]) -> Vec<Finding> {
    scan(bytes).0
}

/// A secret found in a goal or config file at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GoalFinding {
    pub file: String,
    pub finding: Finding,
}

impl fmt::Display for GoalFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&goal_warning(&self.file, self.finding.line, self.finding.family))
    }
}

/// What a person is told of a secret in a goal or config file: where, never the value.
pub(crate) fn goal_warning(file: &str, line: usize, family: &str) -> String {
    format!(
        "warning: {file} line {line} holds what looks like a credential ({family}): the agent gets the file as \
         written, and ralph hides it in everything it writes\n  next: keep credentials in the environment and name \
         the variable instead"
    )
}

/// Looks at a goal file (PROMPT.md, a task file) or the config for credentials, and
/// hides the values found from then on, wherever ralph writes. `shown` is how the
/// file is named in the warning.
pub(crate) fn check_goal(shown: &str, text: &[u8]) -> Vec<GoalFinding> {
    let (found, ranges) = scan(text);
    let found_values: Vec<&str> = ranges.iter().filter_map(|&(s, e)| std::str::from_utf8(&text[s..e]).ok()).collect();
    values::hide(found_values);
    found.into_iter().map(|finding| GoalFinding { file: shown.to_string(), finding }).collect()
}

/// [`check_goal`] of a file on disk; nothing when it cannot be read (the run's own
/// checks report that).
pub(crate) fn check_goal_file(path: &Path, shown: &str) -> Vec<GoalFinding> {
    std::fs::read(path).map(|text| check_goal(shown, &text)).unwrap_or_default()
}

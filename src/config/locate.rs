//! Finds the line and column of a key path in TOML source, for error messages.
//!
//! The source is parsed a second time with `toml::de::DeTable`, which keeps the byte
//! span of every key and value, so a semantic error found on the typed `Config` can
//! still point at the line that caused it. Dotted keys, `[a.b]` headers and arrays of
//! tables all come out of the parser as the same nested tables.

use std::fmt;
use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

impl From<&str> for Seg {
    fn from(key: &str) -> Self {
        Seg::Key(key.to_owned())
    }
}

impl From<&String> for Seg {
    fn from(key: &String) -> Self {
        Seg::Key(key.clone())
    }
}

impl From<usize> for Seg {
    fn from(index: usize) -> Self {
        Seg::Index(index)
    }
}

/// Builds a `[Seg; N]` from keys and indices: `keys!["agents", name, "command", 0]`.
macro_rules! keys {
    ($($seg:expr),* $(,)?) => { [$($crate::config::locate::Seg::from($seg)),*] };
}
pub(super) use keys;

/// A key path written the way a user finds it in the file: `[agents.mine] command`,
/// `[chains] main[1]`, or a bare `bogus` at the top level.
pub(super) struct KeyPath<'a>(pub &'a [Seg]);

impl fmt::Display for KeyPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is the last `Key` segment with any indices after it; everything
        // before it is the table, shown as its header.
        let split = self.0.iter().rposition(|s| matches!(s, Seg::Key(_))).unwrap_or(0);
        let (table, key) = self.0.split_at(split);
        if !table.is_empty() {
            write!(f, "[{}]", Dotted(table))?;
            if !key.is_empty() {
                f.write_str(" ")?;
            }
        }
        write!(f, "{}", Dotted(key))
    }
}

/// `a.b[0].c`, quoting keys that are not bare TOML keys.
pub(super) struct Dotted<'a>(pub &'a [Seg]);

impl fmt::Display for Dotted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            let dot = if i > 0 { "." } else { "" };
            match seg {
                Seg::Key(k) if is_bare(k) => write!(f, "{dot}{k}")?,
                Seg::Key(k) => write!(f, "{dot}{k:?}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

fn is_bare(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The spans of a parsed document; empty when the source does not parse (then the
/// caller only has the span from the parse error itself).
pub(super) struct Spans<'i> {
    source: &'i str,
    root: Option<DeTable<'i>>,
}

impl<'i> Spans<'i> {
    pub(super) fn new(source: &'i str) -> Self {
        let root = DeTable::parse(source).ok().map(|t| t.into_inner());
        Self { source, root }
    }

    /// Whether the source is valid TOML (whatever its shape).
    pub(super) fn parsed(&self) -> bool {
        self.root.is_some()
    }

    /// The text of the source at `span`, clamped to the source.
    pub(super) fn text(&self, span: &Range<usize>) -> &'i str {
        self.source.get(span.clone()).unwrap_or("")
    }

    /// The 1-based line and column of a byte offset.
    pub(super) fn line_col_of(&self, offset: usize) -> (usize, usize) {
        line_col(self.source, offset)
    }

    /// The 1-based line and column of `path`: its key, or for an array element the
    /// element. A path that is not in the file (a missing key) falls back to its
    /// longest prefix that is, e.g. the `[agents.NAME]` header; a path with no part in
    /// the file points at the start.
    pub(super) fn line_col(&self, path: &[Seg]) -> (usize, usize) {
        let offset = self.span(path).map_or(0, |s| s.start);
        line_col(self.source, offset)
    }

    /// The span of `path`, or of its longest prefix in the file.
    pub(super) fn span(&self, path: &[Seg]) -> Option<Range<usize>> {
        let mut table = self.root.as_ref()?;
        let mut array: Option<&[toml::Spanned<DeValue<'i>>]> = None;
        let mut found = None;
        for seg in path {
            let value = match (seg, array) {
                (Seg::Key(k), None) => {
                    let Some((key, value)) = table.get_key_value(k.as_str()) else { break };
                    found = Some(key.span());
                    value
                }
                (Seg::Index(i), Some(items)) => {
                    let Some(item) = items.get(*i) else { break };
                    found = Some(item.span());
                    item
                }
                _ => break,
            };
            array = None;
            match value.get_ref() {
                DeValue::Table(t) => table = t,
                DeValue::Array(a) => array = Some(a),
                _ => {}
            }
        }
        found
    }

    /// The key path whose key or value has exactly `span` (the deepest one), or else
    /// the deepest one whose key or value contains it. Serde errors carry only a span;
    /// this recovers which key they are about.
    pub(super) fn path_at(&self, span: &Range<usize>) -> Vec<Seg> {
        let Some(root) = self.root.as_ref() else { return Vec::new() };
        let mut best = Best::default();
        walk_table(root, span, &mut Vec::new(), &mut best);
        best.exact.or(best.containing.map(|(_, p)| p)).unwrap_or_default()
    }

    /// The keys of the table at `path` in the order they first appear in the file.
    pub(super) fn keys_in_file_order(&self, path: &[Seg]) -> Vec<String> {
        let mut table = self.root.as_ref();
        for seg in path {
            table = match seg {
                Seg::Key(k) => table.and_then(|t| t.get(k.as_str())).and_then(|v| v.get_ref().as_table()),
                Seg::Index(_) => None,
            };
        }
        let mut keys: Vec<(usize, String)> =
            table.into_iter().flatten().map(|(k, _)| (k.span().start, k.get_ref().to_string())).collect();
        keys.sort();
        keys.into_iter().map(|(_, k)| k).collect()
    }
}

#[derive(Default)]
struct Best {
    exact: Option<Vec<Seg>>,
    containing: Option<(usize, Vec<Seg>)>,
}

impl Best {
    fn consider(&mut self, node: &Range<usize>, target: &Range<usize>, path: &[Seg]) {
        if node == target {
            self.exact = Some(path.to_vec());
        } else if node.start <= target.start && target.end <= node.end {
            let len = node.end - node.start;
            if self.containing.as_ref().is_none_or(|(l, _)| len <= *l) {
                self.containing = Some((len, path.to_vec()));
            }
        }
    }
}

// Walks in map order, children after parents, so the deepest match wins.
fn walk_table(table: &DeTable<'_>, target: &Range<usize>, path: &mut Vec<Seg>, best: &mut Best) {
    for (key, value) in table.iter() {
        path.push(Seg::Key(key.get_ref().to_string()));
        best.consider(&key.span(), target, path);
        best.consider(&value.span(), target, path);
        walk_value(value.get_ref(), target, path, best);
        path.pop();
    }
}

fn walk_value(value: &DeValue<'_>, target: &Range<usize>, path: &mut Vec<Seg>, best: &mut Best) {
    match value {
        DeValue::Table(t) => walk_table(t, target, path, best),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                best.consider(&item.span(), target, path);
                walk_value(item.get_ref(), target, path, best);
                path.pop();
            }
        }
        _ => {}
    }
}

/// 1-based line and column (in characters) of a byte offset; an offset past the end
/// or inside a character is clamped.
pub(super) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "top = 1\n[general]\nworkflow.phases = [\"a\", \"b\"]\n\n[agents.\"é\"]\nkind = \"sim\"\n[[agents.\"é\".script]]\nsteps = [{ say = \"x\" }]\n[phases]\nz.chain = \"m\"\n[phases.b]\nchain = \"m\"\n";

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é = 1", 3), (1, 3));
        assert_eq!(line_col("ab", 99), (1, 3));
    }

    #[test]
    fn finds_dotted_keys_headers_and_elements() {
        let s = Spans::new(SRC);
        assert_eq!(s.line_col(&keys!["top"]), (1, 1));
        assert_eq!(s.line_col(&keys!["general", "workflow", "phases"]), (3, 10));
        assert_eq!(s.line_col(&keys!["general", "workflow", "phases", 1]), (3, 25));
        assert_eq!(s.line_col(&keys!["agents", "é", "kind"]), (6, 1));
        assert_eq!(s.line_col(&keys!["agents", "é", "script", 0, "steps", 0]), (8, 10));
        assert_eq!(s.line_col(&keys!["phases", "z", "chain"]), (10, 3));
        assert_eq!(s.line_col(&keys!["phases", "b", "chain"]), (12, 1));
        // Missing key: its table's header.
        assert_eq!(s.line_col(&keys!["phases", "b", "done"]), (11, 9));
    }

    #[test]
    fn recovers_paths_from_spans() {
        let s = Spans::new(SRC);
        let at = |p: &[Seg]| s.path_at(&s.span(p).unwrap_or_default());
        assert_eq!(at(&keys!["agents", "é", "kind"]), keys!["agents", "é", "kind"]);
        assert_eq!(at(&keys!["phases", "b"]), keys!["phases", "b"]);
        let step = keys!["agents", "é", "script", 0, "steps", 0];
        assert_eq!(at(&step), step);
    }

    #[test]
    fn orders_keys_as_in_the_file() {
        let s = Spans::new(SRC);
        assert_eq!(s.keys_in_file_order(&keys!["phases"]), ["z", "b"]);
    }

    #[test]
    fn shows_paths_like_headers() {
        assert_eq!(KeyPath(&keys!["agents", "mine", "command"]).to_string(), "[agents.mine] command");
        assert_eq!(KeyPath(&keys!["chains", "main", 1]).to_string(), "[chains] main[1]");
        assert_eq!(KeyPath(&keys!["bogus"]).to_string(), "bogus");
        assert_eq!(KeyPath(&keys!["agents", "a b"]).to_string(), "[agents] \"a b\"");
    }
}

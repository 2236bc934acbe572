//! The shape of `ralph.toml` with every mistake in it, not only the first. serde
//! stops at the first key it cannot take; so the document is parsed once (spans
//! kept), and deserialized again and again, each time without the entry the last
//! error was about, until it deserializes. A required key dropped that way comes
//! back as "missing key": that follow-up is not reported, and the table that needed
//! it is dropped instead. What was dropped is kept in [`Dropped`], so that the
//! checks after the shape take a dropped agent, chain or phase as defined and do not
//! report the same mistake again through everything that names it.

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use super::locate::{Seg, Spans};
use super::{Config, ConfigError};

/// Errors in one file, at most: past them the rest would only be noise.
pub(super) const MAX_ERRORS: usize = 20;

/// The names whose tables the shape pass dropped, by top-level table.
#[derive(Debug, Default)]
pub(super) struct Dropped {
    /// `agents`, `chains`, `phases`: a name dropped, or the whole table (`*`).
    names: BTreeSet<(String, String)>,
}

impl Dropped {
    /// Whether `[table.name]` was dropped (or all of `[table]`): what names it is no
    /// news.
    pub(super) fn has(&self, table: &str, name: &str) -> bool {
        [name, "*"].iter().any(|n| self.names.contains(&(table.to_string(), n.to_string())))
    }

    /// Whether anything of `[table]` was dropped.
    pub(super) fn any(&self, table: &str) -> bool {
        self.names.iter().any(|(t, _)| t == table)
    }

    fn drop_path(&mut self, path: &[Seg]) {
        let key = |i: usize| match path.get(i) {
            Some(Seg::Key(k)) => Some(k.clone()),
            _ => None,
        };
        if let Some(table) = key(0).filter(|t| ["agents", "chains", "phases"].contains(&t.as_str())) {
            self.names.insert((table, key(1).unwrap_or_else(|| "*".to_string())));
        }
    }
}

/// The config as far as it deserializes, with every shape error on the way (in the
/// order found); `None` when the document is not TOML at all (its one error is in
/// `errors`).
pub(super) fn deserialize(
    path: &Path,
    source: &str,
    spans: &Spans<'_>,
    errors: &mut Vec<ConfigError>,
) -> Option<(Config, Dropped)> {
    let root = match DeTable::parse(source) {
        Ok(root) => root,
        Err(e) => {
            errors.push(super::deser::error(path, spans, &e));
            return None;
        }
    };
    let span = root.span();
    let mut table = root.into_inner();
    let mut dropped = Dropped::default();
    // Keys this pass removed, by their path: their "missing key" is a follow-up.
    let mut removed: Vec<Vec<Seg>> = Vec::new();
    loop {
        let de = toml::de::Deserializer::from(Spanned::new(span.clone(), table.clone()));
        let e = match Config::deserialize(de) {
            Ok(config) => return Some((config, dropped)),
            Err(e) => e,
        };
        let Some(at) = e.span() else {
            errors.push(super::deser::error(path, spans, &e));
            return None;
        };
        let place = spans.path_at(&at);
        let missing = missing_field(e.message()).map(|field| [place.clone(), vec![Seg::Key(field.into())]].concat());
        let follow_up = missing.as_ref().is_some_and(|m| removed.contains(m));
        if !follow_up {
            errors.push(super::deser::error(path, spans, &e));
        }
        // A missing key: the table that lacks it goes; anything else: the entry.
        // Each round removes one: the loop ends with the entries.
        if !remove(&mut table, &at) {
            return None;
        }
        if missing.is_some() {
            dropped.drop_path(&place);
        } else {
            removed.push(place);
        }
    }
}

/// serde's "missing field `x`": the field.
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

/// Removes the deepest entry (a table's key and value, or an array's element) whose
/// key or value holds `at`; false when none does. Every branch is searched: the span
/// of a table made by `[a.b]` headers does not hold its keys.
fn remove(table: &mut DeTable<'_>, at: &Range<usize>) -> bool {
    let holds = |span: Range<usize>| span.start <= at.start && at.end <= span.end;
    let keys: Vec<(String, bool)> =
        table.iter().map(|(k, v)| (Borrow::<str>::borrow(k).to_string(), holds(k.span()) || holds(v.span()))).collect();
    for (key, here) in keys {
        let deeper = match table.get_mut(key.as_str()).map(Spanned::get_mut) {
            Some(DeValue::Table(inner)) => remove(inner, at),
            Some(DeValue::Array(items)) => remove_in_array(items, at),
            _ => false,
        };
        if deeper || (here && table.remove(key.as_str()).is_some()) {
            return true;
        }
    }
    false
}

fn remove_in_array(items: &mut DeArray<'_>, at: &Range<usize>) -> bool {
    let holds = |span: Range<usize>| span.start <= at.start && at.end <= span.end;
    for i in 0..items.len() {
        let here = holds(items[i].span());
        let deeper = match items.as_mut()[i].get_mut() {
            DeValue::Table(inner) => remove(inner, at),
            DeValue::Array(inner) => remove_in_array(inner, at),
            _ => false,
        };
        if deeper {
            return true;
        }
        if here {
            let mut kept: Vec<_> = std::mem::replace(items, DeArray::new()).into_iter().collect();
            kept.remove(i);
            *items = kept.into_iter().collect();
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(source: &str) -> (Vec<String>, Option<Dropped>) {
        let spans = Spans::new(source);
        let mut errors = Vec::new();
        let found = deserialize(Path::new("ralph.toml"), source, &spans, &mut errors);
        (errors.iter().map(ToString::to_string).collect(), found.map(|(_, d)| d))
    }

    #[test]
    fn every_shape_error_is_found_once() {
        let (errors, dropped) = shape(
            "[general]\nmax_cycle = 3\nmax_runtime = \"soon\"\n[agents.a]\nkind = \"cursor\"\n[agents.b]\nkind = \"sim\"\nbogus = 1\n[chains]\nmain = [\"a\", 5]\n",
        );
        assert_eq!(errors.len(), 5, "{errors:#?}");
        assert!(errors.iter().all(|e| !e.contains("missing key")), "{errors:#?}");
        let dropped = dropped.expect("the rest deserializes");
        assert!(dropped.has("agents", "a") && !dropped.has("agents", "b"), "{dropped:?}");
    }

    #[test]
    fn a_required_key_left_out_is_reported_and_its_table_dropped() {
        let (errors, dropped) = shape("[agents.a]\nmodel = \"x\"\n[phases.p]\nchain = \"main\"\n");
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(errors[0].contains("missing key `kind`"), "{errors:#?}");
        assert!(dropped.is_some_and(|d| d.has("agents", "a")));
    }

    #[test]
    fn not_toml_is_one_error() {
        let (errors, dropped) = shape("[general\nx = 1\n");
        assert_eq!(errors.len(), 1);
        assert!(dropped.is_none());
    }
}

//! The exact values of the credentials ralph hands to agents (and of those found in
//! the goal or the config at start): no rule catches `ANTHROPIC_API_KEY`'s value
//! echoed bare, or a password without a name beside it, so every place that redacts
//! hides these too. Process-wide, because every writer needs them; searched with an
//! automaton of their own, rebuilt only when one is added.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};

use super::matcher::{Hit, What};

/// Shorter values are not hidden by value: they would hide ordinary words.
pub(crate) const MIN_VALUE: usize = 6;

#[derive(Default)]
pub(crate) struct Values {
    list: Vec<Vec<u8>>,
    finder: Option<AhoCorasick>,
}

static VALUES: LazyLock<RwLock<Arc<Values>>> = LazyLock::new(|| RwLock::new(Arc::new(Values::default())));
/// Bumped at every change, so a stream can keep its snapshot until then.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Adds credential values to hide wherever ralph redacts (too-short ones are skipped);
/// `secrets::hide_values` to the rest of ralph.
pub(crate) fn hide<'a>(values: impl IntoIterator<Item = &'a str>) {
    let Ok(mut current) = VALUES.write() else { return };
    let mut list = current.list.clone();
    let before = list.len();
    for v in values {
        let v = v.trim().as_bytes();
        if v.len() >= MIN_VALUE && !list.iter().any(|k| k == v) {
            list.push(v.to_vec());
        }
    }
    if list.len() == before {
        return;
    }
    // Longest first, so a value that contains another is hidden whole.
    list.sort_by_key(|k| std::cmp::Reverse(k.len()));
    let finder = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&list).ok();
    *current = Arc::new(Values { list, finder });
    GENERATION.fetch_add(1, Ordering::Release);
}

/// The values now, and the generation they belong to.
pub(crate) fn snapshot() -> (Arc<Values>, u64) {
    let generation = GENERATION.load(Ordering::Acquire);
    let values = VALUES.read().map_or_else(|e| e.into_inner().clone(), |v| v.clone());
    (values, generation)
}

/// Whether a snapshot taken at `generation` is still current.
pub(crate) fn current(generation: u64) -> bool {
    GENERATION.load(Ordering::Relaxed) == generation
}

impl Values {
    pub(crate) fn hits(&self, line: &[u8], out: &mut Vec<Hit>) {
        let Some(finder) = &self.finder else { return };
        out.extend(finder.find_iter(line).map(|m| Hit { start: m.start(), end: m.end(), what: What::Value }));
    }
}

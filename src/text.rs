//! Text helpers every floor may use, pure and importing nothing of the crate: a text
//! cut with an ellipsis, counts with their nouns, places in a list, short commit
//! hashes, labelled lines; and the [`clock`] formatters (times in a zone passed in:
//! the shell reads the system's zone once, `report::zone`). A leaf: `config`, `git`,
//! `recovery` and `supervise` take their words from here, never from `report`.

use std::fmt::Write;

pub(crate) mod clock;

/// `text` cut to `width` characters, marked "…" where it was cut.
pub(crate) fn ellipsis(text: &str, width: usize) -> String {
    if text.chars().count() > width {
        format!("{}…", text.chars().take(width).collect::<String>())
    } else {
        text.to_string()
    }
}

/// Appends the line `label: value` when there is a value.
pub(crate) fn labelled(s: &mut String, label: &str, value: Option<impl std::fmt::Display>) {
    if let Some(value) = value {
        let _ = writeln!(s, "{label}: {value}");
    }
}

/// "1 attempt", "2 attempts": a count with its noun.
pub(crate) fn plural(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A place in a list: "first", "second", … "tenth", then "11th".
pub(crate) fn ordinal(n: usize) -> String {
    const WORDS: [&str; 10] =
        ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"];
    match n.checked_sub(1).and_then(|i| WORDS.get(i)) {
        Some(word) => (*word).to_string(),
        None => format!("{n}th"),
    }
}

/// A commit hash as people quote it: its first 12 characters.
pub(crate) fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_words() {
        assert_eq!((ordinal(1).as_str(), ordinal(2).as_str(), ordinal(12).as_str()), ("first", "second", "12th"));
    }
}

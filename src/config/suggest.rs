//! "Did you mean" suggestions and lists of allowed names for error messages.

/// The candidate closest to `word`, when it is close enough to be a likely typo.
pub(super) fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word_lower = word.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&word_lower, &c.to_lowercase()), c))
        // One edit per three characters catches typos and transpositions without
        // suggesting unrelated short names.
        .filter(|(d, c)| *d <= (c.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `; did you mean `x`?` or nothing.
pub(crate) fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match closest(word, candidates) {
        Some(c) if c != word => format!("; did you mean `{c}`?"),
        _ => String::new(),
    }
}

/// `; did you mean `x`?` when a candidate is close, else `; LABEL: `a` or `b``.
pub(crate) fn did_you_mean_or_list(word: &str, candidates: &[&str], label: &str) -> String {
    match did_you_mean(word, candidates.iter().copied()) {
        s if s.is_empty() => format!("; {label}: {}", one_of(candidates)),
        s => s,
    }
}

/// "`a`, `b` or `c`"; "(none)" for an empty list.
pub(crate) fn one_of<S: AsRef<str>>(names: &[S]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{}`", n.as_ref())).collect();
    match quoted.split_last() {
        None => "(none)".to_owned(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(closest("mian", ["main", "backup"]), Some("main"));
        assert_eq!(closest("claud", ["claude", "codex"]), Some("claude"));
        assert_eq!(closest("max_cyclse", ["max_cycles", "prompt"]), Some("max_cycles"));
        assert_eq!(closest("zzz", ["main", "backup"]), None);
        assert_eq!(did_you_mean("main", ["main"]), "");
    }

    #[test]
    fn lists_names() {
        assert_eq!(one_of::<&str>(&[]), "(none)");
        assert_eq!(one_of(&["a"]), "`a`");
        assert_eq!(one_of(&["a", "b", "c"]), "`a`, `b` or `c`");
    }
}

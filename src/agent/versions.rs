//! Reading a version number out of a CLI's `--version` text, to compare it with the
//! version ralph was tested with (each kind's descriptor). An installed CLI of
//! another version may have renamed a flag ralph passes: `doctor` says so, and a
//! launch refused for an unknown option names both versions.

/// The first word of `text` that looks like a version number ("2.1.197" in
/// "2.1.197 (Claude Code)", "0.171.0" in "codex-cli 0.171.0").
pub(crate) fn number(text: &str) -> Option<&str> {
    text.split_whitespace().map(|w| w.trim_start_matches('v')).find(|w| {
        let parts: Vec<&str> = w.split('.').collect();
        parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_numbers_are_read_from_each_clis_wording() {
        assert_eq!(number("2.1.197 (Claude Code)"), Some("2.1.197"));
        assert_eq!(number("codex-cli 0.171.0"), Some("0.171.0"));
        assert_eq!(number("v1.18.33\n"), Some("1.18.33"));
        assert_eq!(number("no version here 1."), None);
    }
}

//! The versions of the real agent CLIs ralph was tested with (the pins of
//! `tests/agents/versions.txt`, which the integration tests install and drive), and
//! reading a version number out of a CLI's `--version` text. An installed CLI of
//! another version may have renamed a flag ralph passes: `doctor` says so, and a
//! launch refused for an unknown option names both versions.

use crate::config::AgentKind;

const PINS: &str = include_str!("../../tests/agents/versions.txt");

/// The version of this kind's CLI that ralph was tested with.
pub fn tested(kind: AgentKind) -> Option<&'static str> {
    PINS.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let mut fields = line.split_whitespace();
        let (name, _package, version) = (fields.next()?, fields.next()?, fields.next()?);
        (name == kind.as_str()).then_some(version)
    })
}

/// The first word of `text` that looks like a version number ("2.1.197" in
/// "2.1.197 (Claude Code)", "0.171.0" in "codex-cli 0.171.0").
pub fn number(text: &str) -> Option<&str> {
    text.split_whitespace().map(|w| w.trim_start_matches('v')).find(|w| {
        let parts: Vec<&str> = w.split('.').collect();
        parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cli_kind_has_a_tested_version() {
        for kind in [AgentKind::Claude, AgentKind::Codex, AgentKind::Opencode, AgentKind::Gemini] {
            assert!(tested(kind).and_then(number).is_some(), "{kind:?}");
        }
        assert_eq!(tested(AgentKind::Command), None);
    }

    #[test]
    fn version_numbers_are_read_from_each_clis_wording() {
        assert_eq!(number("2.1.197 (Claude Code)"), Some("2.1.197"));
        assert_eq!(number("codex-cli 0.171.0"), Some("0.171.0"));
        assert_eq!(number("v1.18.33\n"), Some("1.18.33"));
        assert_eq!(number("no version here 1."), None);
    }
}

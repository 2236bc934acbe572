//! The agent CLIs ralph drives, one descriptor each (in the kind's own file); what
//! `init`, `doctor`, the launcher, the probe, the classifier and the environment
//! allowlist know about a CLI, they read here. Config validation sits below the
//! descriptors and reads what it checks (the CLI kinds, their permission modes) from
//! `config::types`; a test keeps [`ALL`] and `AgentKind::CLI` equal.

use super::descriptor::Descriptor;
use super::{claude, codex, gemini, opencode};
use crate::config::types::AgentKind;

/// Every CLI kind, in the order `init` prefers them.
pub(crate) const ALL: [&Descriptor; 4] =
    [&claude::DESCRIPTOR, &codex::DESCRIPTOR, &opencode::DESCRIPTOR, &gemini::DESCRIPTOR];

/// The descriptor of a CLI kind; `None` for `command` and `sim`, which ralph does
/// not know beyond their configuration.
pub(crate) fn descriptor(kind: AgentKind) -> Option<&'static Descriptor> {
    ALL.into_iter().find(|d| d.kind == kind)
}

/// The names of the CLI kinds (as in `kind = "…"`).
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    ALL.into_iter().map(|d| d.kind.into_str())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::agent::versions;

    #[test]
    fn every_cli_kind_has_one_complete_descriptor() {
        let pins = include_str!("../../tests/agents/versions.txt");
        let names: BTreeSet<&str> = names().collect();
        assert_eq!(names.len(), ALL.len(), "kinds are unique");
        for d in ALL {
            let name = d.kind.into_str();
            assert_eq!(descriptor(d.kind).map(|found| found.binary), Some(d.binary), "{name}");
            assert!(!d.binary.is_empty() && !d.credentials.is_empty() && !d.passes.is_empty(), "{name}");
            assert!(!d.kind.permission_modes().is_empty(), "{name}: a default permission mode");
            assert_eq!(versions::number(d.tested_version), Some(d.tested_version), "{name}");
            // The integration tests install the version ralph says it was tested with.
            let pin = pins.lines().find_map(|l| l.strip_prefix(&format!("{name} "))?.split_whitespace().nth(1));
            assert_eq!(pin, Some(d.tested_version), "{name}: tests/agents/versions.txt");
            assert!(d.credentials.iter().all(|c| d.passes.iter().any(|p| crate::agent::env::glob_match(p, c))));
            let mut parser = (d.parser)((0, 0));
            assert!(parser.parse_line("").is_empty(), "{name}: a blank line is no event");
            let serde_name = serde_json::to_value(d.kind).ok();
            assert_eq!(serde_name.as_ref().and_then(|v| v.as_str()), Some(name), "{name}: as in ralph.toml");
        }
        assert_eq!(ALL.map(|d| d.kind), AgentKind::CLI, "config validation's list of CLI kinds");
        for kind in [AgentKind::Command, AgentKind::Sim] {
            assert!(descriptor(kind).is_none());
        }
    }
}

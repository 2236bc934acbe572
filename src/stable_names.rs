//! Stable names. An enum whose variants are names in a format (`ralph.toml`, the
//! checkpoint, the journal, `--json`) takes each name from its variant, in
//! snake_case, once for serde (`#[serde(rename_all = "snake_case")]`) and once for
//! the text (strum's `IntoStaticStr` with `const_into_str` gives `into_str()`, its
//! `Display` the same name, with `serialize_all = "snake_case"`); a variant whose
//! name is not its own snake_case says so to both (`rename` and `serialize`). This
//! file holds the test that pins every one of those names, so that renaming a
//! variant cannot rename a format's word unnoticed.

use std::fmt::Display;

use serde::Serialize;
use strum::VariantArray;

use crate::config::AgentKind;
use crate::fleet::state::{FleetStatus, LandingStep, TaskState};
use crate::outcome::{Category, Status};
use crate::supervise::Detector;

/// `enum: name name …` for every variant, after checking that serde, `Display`
/// and `into_str` agree on each name.
fn names<T>(name: &str) -> String
where
    T: Serialize + Display + Copy + VariantArray + Into<&'static str>,
{
    let names: Vec<&str> = T::VARIANTS.iter().map(|v| (*v).into()).collect();
    for (v, n) in T::VARIANTS.iter().zip(&names) {
        assert_eq!(serde_json::to_value(v).unwrap(), *n, "{name}");
        assert_eq!(v.to_string(), *n, "{name}");
    }
    format!("{name}: {}", names.join(" "))
}

/// Every stable name of every named enum, pinned: they are formats
/// (`ralph.toml`, the checkpoint, the journal), so none may change.
#[test]
fn the_stable_names_are_as_before() {
    use crate::recovery::Rule as R;
    use crate::supervise::completion::Rule as C;
    let lines = [
        names::<AgentKind>("AgentKind"),
        names::<Detector>("Detector"),
        names::<C>("completion::Rule"),
        names::<Category>("Category"),
        names::<Status>("Status"),
        names::<FleetStatus>("FleetStatus"),
        names::<TaskState>("TaskState"),
        names::<LandingStep>("LandingStep"),
        names::<R>("recovery::Rule"),
    ];
    insta::assert_snapshot!(lines.join("\n"));
}

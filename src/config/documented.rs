//! A check, run by the tests, that every key of the configuration types is written
//! down for people: in the key tables of `docs/configuration.md` and in the complete
//! example `ralph.example.toml`. A key added to the types without both fails here.

use serde_json::Value;

use super::types::{AgentConfig, Config, PhaseConfig};

/// Every key of `ralph.toml`, as `(section, key)`, read off the types themselves:
/// the default config for the fixed tables, a minimal entry for `[agents.*]` (with
/// one `[[agents.NAME.errors]]` entry) and `[phases.*]` (their serialised form names
/// every field).
fn keys() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let config = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
    for (section, table) in config.as_object().into_iter().flatten() {
        // The named tables are read off the minimal entries below.
        if !["agents", "chains", "phases"].contains(&section.as_str()) {
            collect(section, table, &mut out);
        }
    }
    let agent: AgentConfig = toml::from_str("kind = \"command\"\n[[errors]]\npattern = \"x\"\ncategory = \"agent\"\n")
        .unwrap_or_else(|e| panic!("minimal agent: {e}"));
    collect("agents.NAME", &serde_json::to_value(agent).unwrap_or(Value::Null), &mut out);
    let phase: PhaseConfig = toml::from_str("chain = \"main\"").unwrap_or_else(|e| panic!("minimal phase: {e}"));
    collect("phases.NAME", &serde_json::to_value(phase).unwrap_or(Value::Null), &mut out);
    out
}

/// The keys of one table; a nested table (`[general.workflow]`) is a section of its
/// own, and so is an array of tables (`[[agents.NAME.errors]]`), read off its first entry.
fn collect(section: &str, value: &Value, out: &mut Vec<(String, String)>) {
    let Some(map) = value.as_object() else { return };
    for (key, v) in map {
        if v.is_object() && section != "agents.NAME" && section != "phases.NAME" {
            collect(&format!("{section}.{key}"), v, out);
            continue;
        }
        out.push((section.to_string(), key.clone()));
        if let Some(entry) = v.as_array().and_then(|a| a.first()).filter(|e| e.is_object()) {
            collect(&format!("{section}.{key}"), entry, out);
        }
    }
}

/// The defaults the key tables of `docs/configuration.md` state, as `(section, key,
/// TOML value)`: the rows of the fixed tables whose default cell is nothing but
/// TOML values in backticks (`3`, `"5s", "10m"` for a row of two keys). A row whose
/// default is words ("none", "the user's git identity") states no value to check.
fn documented_defaults(docs: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut section = None;
    for line in docs.lines() {
        if let Some(heading) = line.strip_prefix("## `[").and_then(|h| h.strip_suffix("]`")) {
            section = (!heading.contains("NAME")).then(|| heading.to_string());
            continue;
        }
        let Some(section) = &section else { continue };
        let cells: Vec<&str> = line.split('|').collect();
        let [_, keys, default, ..] = cells.as_slice() else { continue };
        let (keys, values) = (code_spans(keys), code_spans(default));
        let only_values = values.iter().fold(default.to_string(), |rest, v| rest.replacen(&format!("`{v}`"), "", 1));
        if keys.is_empty() || keys.len() != values.len() || only_values.trim().trim_matches(',').trim() != "" {
            continue;
        }
        for (key, value) in keys.into_iter().zip(values) {
            out.push((section.clone(), key, value));
        }
    }
    out
}

/// The text between backticks, in order.
fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rel: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn every_key_is_in_the_reference_and_the_example() {
        let docs = read("docs/configuration.md");
        let example = read("ralph.example.toml");
        let keys = keys();
        assert!(keys.len() > 20, "{keys:?}");
        let mut missing = Vec::new();
        for (section, key) in &keys {
            if !docs.contains(&format!("`{key}`")) {
                missing.push(format!("[{section}] {key}: not in docs/configuration.md"));
            }
            let in_example = example.lines().any(|line| {
                let line = line.trim_start().trim_start_matches('#').trim_start();
                line.strip_prefix(key.as_str()).is_some_and(|rest| rest.trim_start().starts_with('='))
                    || line.contains(&format!(".{key}]"))
            });
            if !in_example {
                missing
                    .push(format!("[{section}] {key}: not in ralph.example.toml (as `{key} = …`, or commented out)"));
            }
        }
        assert!(missing.is_empty(), "keys without documentation:\n{}", missing.join("\n"));
    }

    /// The defaults the reference states are the `Default` impls': each is read as
    /// `ralph.toml` would read it and compared with the default config.
    #[test]
    fn the_defaults_in_the_reference_are_the_default_impls() {
        let docs = read("docs/configuration.md");
        let stated = documented_defaults(&docs);
        assert!(stated.len() > 25, "{stated:?}");
        let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
        let mut wrong = Vec::new();
        for (section, key, value) in &stated {
            let text = format!("[{section}]\n{key} = {value}\n");
            let parsed: Config = toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let parsed = serde_json::to_value(parsed).unwrap_or(Value::Null);
            let path: Vec<&str> = section.split('.').chain([key.as_str()]).collect();
            let at = |v: &Value| path.iter().fold(v.clone(), |v, seg| v[seg].clone());
            if at(&parsed) != at(&defaults) {
                wrong.push(format!("[{section}] {key}: the docs say {value}, the default is {}", at(&defaults)));
            }
        }
        assert!(wrong.is_empty(), "docs/configuration.md states other defaults:\n{}", wrong.join("\n"));
    }
}

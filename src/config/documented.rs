//! A check, run by the tests, that every key of the configuration types is written
//! down for people: in the key tables of `docs/configuration.md` and in the complete
//! example `ralph.example.toml`. A key added to the types without both fails here.

use serde_json::Value;

use super::types::{AgentConfig, Config, PhaseConfig};

/// Every key of `ralph.toml`, as `(section, key)`, read off the types themselves:
/// the default config for the fixed tables, a minimal entry for `[agents.*]` and
/// `[phases.*]` (their serialised form names every field).
fn keys() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let config = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
    for section in ["general", "retry", "timeouts", "offline"] {
        collect(section, &config[section], &mut out);
    }
    let agent: AgentConfig = toml::from_str("kind = \"sim\"").unwrap_or_else(|e| panic!("minimal agent: {e}"));
    collect("agents.NAME", &serde_json::to_value(agent).unwrap_or(Value::Null), &mut out);
    let phase: PhaseConfig = toml::from_str("chain = \"main\"").unwrap_or_else(|e| panic!("minimal phase: {e}"));
    collect("phases.NAME", &serde_json::to_value(phase).unwrap_or(Value::Null), &mut out);
    out
}

/// The keys of one table; a nested table (`[general.workflow]`) is a section of its own.
fn collect(section: &str, value: &Value, out: &mut Vec<(String, String)>) {
    let Some(map) = value.as_object() else { return };
    for (key, v) in map {
        if v.is_object() && section != "agents.NAME" && section != "phases.NAME" {
            collect(&format!("{section}.{key}"), v, out);
        } else {
            out.push((section.to_string(), key.clone()));
        }
    }
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
}

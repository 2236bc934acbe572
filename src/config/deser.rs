//! Turns a toml/serde error into a message that names the key and what is allowed.
//!
//! Serde's messages ("unknown field `x`, expected one of `a`, `b`", "invalid value:
//! integer `-1`, expected u32", ...) are stable wording; they carry a span but not the
//! key, so the key path is recovered from the span with [`Spans::path_at`].

use std::path::Path;

use serde_json::Value;

use super::locate::{Dotted, KeyPath, Seg, Spans, keys};
use super::suggest::{did_you_mean, one_of};
use super::{Config, ConfigError};

/// Keys that are counts with a minimum of 1.
const CAPS: [&str; 9] = [
    "max_cycles",
    "max_resumes_per_boot",
    "agent_attempts",
    "ambiguous_attempts",
    "tool_registry_resets",
    "mcp_restarts",
    "iterations",
    "passes",
    "max_parallel",
];

pub(super) fn error(path: &Path, spans: &Spans<'_>, err: &toml::de::Error) -> ConfigError {
    let message = err.message().trim();
    let Some(span) = err.span() else {
        return ConfigError::File { path: path.to_path_buf(), message: lowercase_first(message) };
    };
    let (line, column) = spans.line_col_of(span.start);
    let message = if spans.parsed() {
        let key = spans.path_at(&span);
        explain(spans, &key, spans.text(&span), message)
    } else {
        format!("invalid toml: {}", lowercase_first(message))
    };
    ConfigError::At { path: path.to_path_buf(), line, column, message }
}

fn explain(spans: &Spans<'_>, key: &[Seg], text: &str, message: &str) -> String {
    let last_key = key.iter().rev().find_map(|s| match s {
        Seg::Key(k) => Some(k.as_str()),
        Seg::Index(_) => None,
    });
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (name, allowed) = split_name(rest);
        let table = key.split_last().map_or(&[][..], |(_, t)| t);
        let place = if table.is_empty() { "at the top level".to_owned() } else { format!("in [{}]", Dotted(table)) };
        let mut hint = did_you_mean(name, allowed.iter().copied());
        let homes = homes(name);
        if hint.is_empty() && !homes.is_empty() {
            hint = format!("; `{name}` belongs in [{}]", homes.join("] or ["));
        }
        return format!("unknown key `{name}` {place} (allowed keys: {}){hint}", one_of(&allowed));
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let (name, allowed) = split_name(rest);
        let what = match last_key {
            Some("kind") => "agent kind",
            Some(k) if k == name && key.contains(&Seg::Key("steps".into())) => "script step",
            _ => "value",
        };
        // An unknown step written as a table key: the path of the step itself.
        let shown = if what == "script step" { key.split_last().map_or(&[][..], |(_, t)| t) } else { key };
        return format!(
            "{}: unknown {what} `{name}` (allowed: {}){}",
            KeyPath(shown),
            one_of(&allowed),
            did_you_mean(name, allowed.iter().copied())
        );
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        let (name, _) = split_name(rest);
        let table = if key.is_empty() { "the top level".to_owned() } else { format!("[{}]", Dotted(key)) };
        return format!("{table}: missing key `{name}`; {}", missing_hint(spans, name));
    }
    if message.starts_with("wanted exactly 1 element") || message.contains("expected newtype variant") {
        return format!("{}: {STEP_HINT}", KeyPath(key));
    }
    if let Some(expected) = expected_of(message) {
        let value = crate::text::ellipsis(text.trim(), 40);
        return format!("{}: `{value}` is not {}", KeyPath(key), allowed_hint(last_key, expected));
    }
    format!("{}: {}", KeyPath(key), lowercase_first(message))
}

/// The tables a key lives in, for a key written in the wrong table: read from the
/// default configuration, so every key of the fixed tables is known without a list.
fn homes(key: &str) -> Vec<String> {
    match key {
        "chain" => vec!["phases.NAME".to_owned()],
        "kind" => vec!["agents.NAME".to_owned()],
        _ => {
            let mut found = Vec::new();
            tables_with(&serde_json::to_value(Config::default()).unwrap_or_default(), "", key, &mut found);
            found
        }
    }
}

fn tables_with(value: &Value, table: &str, key: &str, found: &mut Vec<String>) {
    let Value::Object(members) = value else { return };
    if !table.is_empty() && members.contains_key(key) {
        found.push(table.to_owned());
    }
    for (name, inner) in members {
        let path = if table.is_empty() { name.clone() } else { format!("{table}.{name}") };
        tables_with(inner, &path, key, found);
    }
}

const STEP_HINT: &str = "a script step is an inline table with exactly one key, like \
     { say = \"hello\" }, { sleep = \"1s\" } or { done = \"finished\" }";

/// Splits "x`, expected one of `a`, `b`" into the name and the backquoted names
/// after "expected".
fn split_name(rest: &str) -> (&str, Vec<&str>) {
    let (name, tail) = rest.split_once('`').unwrap_or((rest, ""));
    let allowed =
        tail.split_once("expected").map_or_else(Vec::new, |(_, list)| list.split('`').skip(1).step_by(2).collect());
    (name, allowed)
}

fn expected_of(message: &str) -> Option<&str> {
    let invalid = message.starts_with("invalid type") || message.starts_with("invalid value");
    message.rsplit_once(", expected ").filter(|_| invalid).map(|(_, e)| e)
}

/// What a key allows, as a noun phrase after "is not".
fn allowed_hint(key: Option<&str>, expected: &str) -> String {
    match key {
        Some(k) if CAPS.contains(&k) => return "a whole number ≥ 1".to_owned(),
        Some("max_cost_usd") => return "a number of dollars above 0, like 40.0".to_owned(),
        Some("exit") => return "an exit code, a whole number like 3".to_owned(),
        _ => {}
    }
    let phrase = match expected {
        "a duration" => "a duration like \"5m\", \"30s\" or \"1h 30m\"",
        "u32" | "u64" => "a whole number ≥ 0",
        "i32" | "i64" => "a whole number",
        "f64" | "f32" => "a number",
        "a boolean" => "a boolean, true or false",
        "a string" => "a string in quotes",
        "a sequence" => "an array like [\"a\", \"b\"]",
        e if e.starts_with("struct") || e.contains("map") => "a table",
        e => return format!("allowed here: expected {e}"),
    };
    phrase.to_owned()
}

fn missing_hint(spans: &Spans<'_>, name: &str) -> String {
    match name {
        "chain" => {
            let chains = spans.keys_in_file_order(&keys!["chains"]);
            if chains.is_empty() {
                "every phase needs chain = \"NAME\", and NAME must be a table of agent \
                 names under [chains], e.g. main = [\"claude\"]"
                    .to_owned()
            } else {
                format!("every phase needs chain = \"NAME\" naming one of [chains]: {}", one_of(&chains))
            }
        }
        "kind" => "every agent needs kind = \"claude\", \"command\" or \"sim\"".to_owned(),
        "steps" => "each [[agents.NAME.script]] needs steps = [ ... ]".to_owned(),
        "passes" | "phases" => "repeat needs both keys, like \
            repeat = { phases = [\"review\", \"fix\"], passes = 3 }"
            .to_owned(),
        other => format!("add `{other} = ...`"),
    }
}

fn lowercase_first(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

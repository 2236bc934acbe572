//! Secrets never leave ralph. Everything ralph writes or sends (the checkpoint, the
//! journal, `ralph.log`, the attempt logs, artifacts and the next phase's prompt, the
//! run registry, notifications, the terminal, the control socket and MCP answers,
//! commit messages) goes through this module's one matcher, and so does every file
//! the git guard looks at before a commit: a file holding a match is left out of it.
//!
//! * [`rules`]: the rule set as data, each rule naming its family;
//! * `matcher`: the rules' anchors in one automaton, their patterns run only where
//!   an anchor is;
//! * `special`: the rules worked out in code (a secret after a name that says so, a
//!   password in a URL, a private key block);
//! * `escapes`: JSON-escaped text read as decoded too;
//! * `stream`: line by line with what a line owes the next (a key's body over many
//!   lines, a secret cut by a line break);
//! * `values`: the exact values of the credentials ralph hands to agents;
//! * [`found`]: what a file holds, by line and family, never the value (the git
//!   guard, the goal check at start, `ralph doctor`).
//!
//! It errs towards hiding: a false alarm costs a log line's readability or keeps a
//! file out of a commit (named loudly, and `[git] allow_secrets` lets it through); a
//! miss sends a key to a provider or a remote. No `unsafe` and no hand-written SIMD:
//! the automaton and the patterns are `aho-corasick`'s and `regex`'s.

use std::borrow::Cow;

mod escapes;
pub(crate) mod found;
mod matcher;
pub(crate) mod rules;
mod special;
mod stream;
mod values;

pub(crate) use matcher::anchor_starts;
pub(crate) use rules::families;
pub(crate) use stream::Stream;
pub(crate) use values::hide as hide_values;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Returns `text` with every secret the rules or the hidden values find replaced by
/// `[REDACTED]`.
pub fn redact(text: &str) -> String {
    redacted(text).into_owned()
}

/// [`redact`] without a copy when nothing is hidden.
pub fn redacted(text: &str) -> Cow<'_, str> {
    match redact_bytes(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(bytes) => {
            Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
        }
    }
}

/// [`redact`] for bytes that may not be UTF-8; borrowed when nothing is hidden.
pub(crate) fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    let (values, _) = values::snapshot();
    let mut hits = Vec::new();
    stream::text_hits(bytes, &values, &mut hits);
    stream::apply(bytes, &mut hits)
}

/// [`redact`] applied to every string of a JSON tree; a string under a key that names
/// a secret for sure (`"password"`, `"api_key"`) is hidden whole.
pub(crate) fn redact_json(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            if let Cow::Owned(r) = redacted(s) {
                *s = r;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_json),
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                match v {
                    Value::String(s)
                        if special::strength(k.as_bytes()) == special::Strength::Strong
                            && s.len() >= 3
                            && !special::placeholder(s.as_bytes())
                            && !s.starts_with(REDACTED) =>
                    {
                        *s = REDACTED.to_string();
                    }
                    _ => redact_json(v),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;

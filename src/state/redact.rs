//! Redaction of credentials from text that ralph writes to disk (journal, logs,
//! checkpoint error tails): agents echo environment variables, HTTP headers and
//! config files, and `.agent/` must not become a place where keys leak from.
//!
//! Hand-written single pass instead of regexes: the patterns are few and anchored
//! on fixed prefixes, so one scan over the bytes at word boundaries is simple,
//! linear and adds no dependency. It errs on the side of hiding: a false positive
//! costs a log line's readability, a false negative leaks a key.

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use memchr::memmem::Finder;

/// What a secret is replaced with.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Shorter values are not hidden by value: they would hide ordinary words.
const MIN_VALUE: usize = 6;

/// The exact values of credentials ralph hands to agents: no pattern catches
/// `ANTHROPIC_API_KEY=sk-ant-secret123` echoed as the bare value, so every place that
/// redacts hides these too. Process-wide because every writer needs it.
static VALUES: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Adds credential values to hide wherever ralph redacts (too-short ones are skipped).
pub(crate) fn hide_values<'a>(values: impl IntoIterator<Item = &'a str>) {
    let Ok(mut known) = VALUES.write() else { return };
    for v in values {
        let v = v.trim();
        if v.len() >= MIN_VALUE && !known.iter().any(|k| k == v) {
            known.push(v.to_owned());
        }
    }
    // Longest first, so a value that contains another is hidden whole.
    known.sort_by_key(|k| std::cmp::Reverse(k.len()));
}

/// [`redact`] applied to every string value of a JSON tree (keys stay).
pub(crate) fn redact_json(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => *s = redact(s),
        Value::Array(a) => a.iter_mut().for_each(redact_json),
        Value::Object(m) => m.values_mut().for_each(redact_json),
        _ => {}
    }
}

/// [`redact`] for bytes that may not be UTF-8: valid runs are redacted, other bytes
/// pass through as received. Borrowed when nothing is hidden (the common line).
pub(crate) fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return match redacted(text) {
            Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
            Cow::Owned(text) => Cow::Owned(text.into_bytes()),
        };
    }
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(redact(chunk.valid()).as_bytes());
        out.extend_from_slice(chunk.invalid());
    }
    Cow::Owned(out)
}

/// Returns `text` with secrets replaced by `REDACTED`:
///
/// * API keys `sk-…` (OpenAI, `sk-ant-…` Anthropic), GitHub `ghp_…`/`gho_…`/
///   `ghu_…`/`ghs_…`/`ghr_…`/`github_pat_…`, Slack `xoxb-`/`xoxa-`/`xoxp-`,
///   AWS access key ids `AKIA…`/`ASIA…`;
/// * the token after `Bearer ` (the word `Bearer` stays);
/// * the value in `NAME=value`, `NAME: value` (quoted or snake/kebab-case names
///   only, so prose like "Key: …" survives) and `"name": "value"` when the name
///   contains `key`, `token`, `secret` or `password` (any case). Numbers stay
///   unless the name says secret or password (`max_tokens=4096` is not a
///   secret), and so do `null`/`true`/`false`, `$VARIABLE` references and
///   nested objects.
pub fn redact(text: &str) -> String {
    redacted(text).into_owned()
}

/// [`redact`] without a copy when nothing is hidden.
pub fn redacted(text: &str) -> Cow<'_, str> {
    let mut out = redact_patterns(text);
    let Ok(known) = VALUES.read() else { return out };
    for v in known.iter() {
        if out.contains(v.as_str()) {
            out = Cow::Owned(out.replace(v.as_str(), REDACTED));
        }
    }
    out
}

fn redact_patterns(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut names = Names::new(b);
    let mut out = None::<String>;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if (i == 0 || !is_word(b[i - 1]))
            && let Some((start, end)) = (names.as_mut().is_some_and(|n| n.near(i)))
                .then(|| assignment(text, i))
                .flatten()
                .or_else(|| TOKEN_START[usize::from(b[i])].then(|| token(b, i)).flatten())
        {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + REDACTED.len()));
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
            i = end;
            continue;
        }
        i += 1;
    }
    out.map_or(Cow::Borrowed(text), |out| Cow::Owned(out + &text[copied..]))
}

/// Where the names of secrets (`key`, `token`, `secret`, `passw`, any case) are in
/// a line: an [`assignment`]'s key holds one, so the key scan is tried only at words
/// that start at most a key's length before one. A JSON line has a key before every
/// `:`, and few of them name a secret.
struct Names {
    lower: Vec<u8>,
    /// The first name at or after the last position asked about.
    next: usize,
}

impl Names {
    /// `None` when the line has no `=` or `:`, which every assignment has.
    fn new(b: &[u8]) -> Option<Self> {
        memchr::memchr2(b'=', b':', b)?;
        let mut names = Self { lower: b.to_ascii_lowercase(), next: 0 };
        names.next = names.find(0);
        Some(names)
    }

    fn find(&self, from: usize) -> usize {
        let rest = &self.lower[from..];
        SECRET_NAMES[..4].iter().filter_map(|name| name.find(rest)).min().map_or(usize::MAX, |at| from + at)
    }

    /// Whether a key starting at `i` (after a quote, perhaps) may hold a name.
    fn near(&mut self, i: usize) -> bool {
        if self.next < i {
            self.next = self.find(i);
        }
        self.next <= i + 1 + MAX_KEY
    }
}

/// The bytes a [`token`] starts with.
static TOKEN_START: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = matches!(i as u8, b's' | b'g' | b'x' | b'A' | b'b' | b'B');
        i += 1;
    }
    t
};

/// Non-ASCII bytes count as word bytes so that no match starts inside a
/// multi-byte character.
fn is_word(c: u8) -> bool {
    WORD[usize::from(c)]
}

static WORD: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        i += 1;
    }
    t
};

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

fn ends_value(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b',' | b';' | b'&' | b'"' | b'\'' | b'}' | b')' | b']')
}

const MAX_KEY: usize = 64;

/// The names of secrets, lowercased: an [`assignment`]'s key holds one of the first
/// four; `bearer` names the token after it.
static SECRET_NAMES: LazyLock<[Finder<'static>; 5]> =
    LazyLock::new(|| [&b"key"[..], b"token", b"secret", b"passw", b"bearer"].map(Finder::new));

/// Where the names of secrets start in `bytes` (any case), in order: a value to
/// hide may follow each.
pub(crate) fn secret_names(bytes: &[u8]) -> Vec<usize> {
    let lower = bytes.to_ascii_lowercase();
    let mut at: Vec<usize> = SECRET_NAMES.iter().flat_map(|name| name.find_iter(&lower)).collect();
    at.sort_unstable();
    at
}

/// `NAME=value` and friends starting at `i`; returns the value's byte range.
fn assignment(text: &str, i: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let quote = matches!(b[i], b'"' | b'\'').then_some(b[i]);
    let ks = i + usize::from(quote.is_some());
    let mut j = ks;
    while j < b.len() && j - ks < MAX_KEY && is_key_char(b[j]) {
        j += 1;
    }
    if j == ks || (j < b.len() && is_key_char(b[j])) {
        return None;
    }
    let ke = j;
    if quote.is_some() && b.get(j) != quote.as_ref() {
        return None;
    }
    j = skip_blanks(b, j + usize::from(quote.is_some()));
    let sep = *b.get(j).filter(|c| matches!(c, b'=' | b':'))?;
    j += 1;
    // `==`, `=>`, `::` are code, not assignments.
    if matches!(b.get(j), Some(b'=' | b'>' | b':')) {
        return None;
    }
    // Lowercased on the stack and searched by hand: JSON has a key before every
    // `:`, and most of them name no secret.
    let mut lower = [0; MAX_KEY];
    let key = &mut lower[..ke - ks];
    key.copy_from_slice(&b[ks..ke]);
    key.make_ascii_lowercase();
    let has = |name: &[u8]| key.windows(name.len()).any(|w| w == name);
    let strong = has(b"secret") || has(b"password") || has(b"passwd");
    if !(strong || has(b"key") || has(b"token")) {
        return None;
    }
    let spaced_name = has(b"_") || has(b"-") || matches!(&*key, b"password" | b"passwd");
    if sep == b':' && quote.is_none() && !spaced_name {
        return None;
    }
    j = skip_blanks(b, j);
    let (vs, ve) = match *b.get(j)? {
        q @ (b'"' | b'\'') => {
            let vs = j + 1;
            let mut k = vs;
            while k < b.len() && b[k] != q && b[k] != b'\n' {
                k += if b[k] == b'\\' && k + 1 < b.len() && b[k + 1] != b'\n' { 2 } else { 1 };
            }
            (vs, k.min(b.len()))
        }
        _ => {
            let mut ve = run(b, j, |c| !ends_value(c));
            // `token: Bearer abc…`: the credential is the word after the scheme.
            if matches!(text[j..ve].to_ascii_lowercase().as_str(), "bearer" | "basic" | "token") {
                ve = run(b, skip_blanks(b, ve), |c| !ends_value(c));
            }
            (j, ve)
        }
    };
    let value = &text[vs..ve];
    let lower = value.to_ascii_lowercase();
    if value.is_empty()
        || value.starts_with(REDACTED)
        || value.starts_with(['$', '{', '[', '(', '<'])
        || matches!(lower.as_str(), "null" | "none" | "true" | "false")
        || (!strong && value.bytes().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    Some((vs, ve))
}

/// Token formats by their prefixes (no two share a start): the bytes besides letters
/// and digits that may follow one, and how many at least.
const PREFIXED: [(Prefixes, &[u8], usize); 4] = [
    (&[b"sk-"], b"_-", 20),
    (&[b"github_pat_"], b"_", 20),
    (&[b"xoxb-", b"xoxa-", b"xoxp-"], b"-", 10),
    (&[b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"], b"", 20),
];

type Prefixes = &'static [&'static [u8]];

/// A known token format starting at `i`; returns the range to hide.
fn token(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let rest = &b[i..];
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    for (prefixes, also, min) in PREFIXED {
        if let Some(p) = prefixes.iter().find(|p| rest.starts_with(p)) {
            let end = run(b, i + p.len(), |c| alnum(c) || also.contains(&c));
            if end - (i + p.len()) >= min {
                return Some((i, end));
            }
        }
    }
    if (rest.starts_with(b"AKIA") || rest.starts_with(b"ASIA")) && rest.len() >= 20 {
        let id_ok = rest[4..20].iter().all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit());
        if id_ok && rest.get(20).is_none_or(|&c| !is_word(c)) {
            return Some((i, i + 20));
        }
    }
    if rest.len() > 7 && rest[..6].eq_ignore_ascii_case(b"bearer") && rest[6] == b' ' {
        let ts = skip_blanks(b, i + 6);
        let te = run(b, ts, |c| alnum(c) || matches!(c, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-'));
        if te - ts >= 16 {
            return Some((ts, te));
        }
    }
    None
}

fn run(b: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    let mut k = from;
    while k < b.len() && ok(b[k]) {
        k += 1;
    }
    k
}

fn skip_blanks(b: &[u8], from: usize) -> usize {
    run(b, from, |c| c == b' ' || c == b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn hides(input: &str, expected: &str) {
        assert_eq!(redact(input), expected, "input: {input}");
    }

    #[track_caller]
    fn keeps(input: &str) {
        assert_eq!(redact(input), input);
    }

    #[test]
    fn provider_keys() {
        hides("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-_yz012 failed", "key [REDACTED] failed");
        hides("sk-proj-abcdefghijklmnopqrstuvwx", "[REDACTED]");
        hides("(sk-abcdefghijklmnopqrstuvwxyz1234)", "([REDACTED])");
        hides("id AKIAIOSFODNN7EXAMPLE here", "id [REDACTED] here");
        hides(
            "ghp_1234567890abcdefghijABCDEFGHIJ0123 and github_pat_11ABCDEFG0123456789_abcdefghijk",
            "[REDACTED] and [REDACTED]",
        );
        hides("slack xoxb-1234567890-abcdefghij", "slack [REDACTED]");
    }

    #[test]
    fn bearer_tokens() {
        hides(
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc_DEF-123",
            "Authorization: Bearer [REDACTED]",
        );
        hides("curl -H 'authorization: bearer abcdefghijklmnop1234'", "curl -H 'authorization: bearer [REDACTED]'");
        hides("token: Bearer abcdefghijklmnopqrst", "token: Bearer [REDACTED]");
        hides("api_token: Bearer abc123", "api_token: [REDACTED]");
    }

    #[test]
    fn assignments() {
        hides("ANTHROPIC_API_KEY=abc123xyz", "ANTHROPIC_API_KEY=[REDACTED]");
        hides("export GITHUB_TOKEN=\"s3cr3t value\" done", "export GITHUB_TOKEN=\"[REDACTED]\" done");
        hides(r#"{"api_key": "abc\"def", "n": 1}"#, r#"{"api_key": "[REDACTED]", "n": 1}"#);
        hides("db_password = 'hunter2'", "db_password = '[REDACTED]'");
        hides("PASSWORD=1234", "PASSWORD=[REDACTED]");
        hides("x-api-key: abcdef", "x-api-key: [REDACTED]");
        hides("client_secret: shh", "client_secret: [REDACTED]");
        hides("https://h/cb?access_token=abc&state=1", "https://h/cb?access_token=[REDACTED]&state=1");
        hides("Password: hunter2", "Password: [REDACTED]");
    }

    /// The scan without its shortcuts: both matchers tried at every word start.
    fn unfiltered(text: &str) -> String {
        let b = text.as_bytes();
        let (mut out, mut copied, mut i) = (String::new(), 0, 0);
        while i < b.len() {
            if (i == 0 || !is_word(b[i - 1]))
                && let Some((start, end)) = assignment(text, i).or_else(|| token(b, i))
            {
                out.push_str(&text[copied..start]);
                out.push_str(REDACTED);
                (copied, i) = (end, end);
                continue;
            }
            i += 1;
        }
        out + &text[copied..]
    }

    #[test]
    fn the_shortcuts_change_no_answer() {
        let long_key = format!("{}_key", "a".repeat(60));
        let pieces = [
            "api_key",
            "X-Api-Key",
            "\"Secret\"",
            "TOKEN",
            "pass-word",
            "passwd",
            "my.key.name",
            &long_key,
            "=",
            ":",
            " : ",
            "\"",
            "'",
            "sk-abcdefghijklmnopqrstuvwxyz",
            "Bearer abcdefghijklmnopqrstuv",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "xoxb-1234567890-abc",
            "-",
            ".",
            " ",
            "value123",
            "4096",
            "null",
            "$VAR",
            "{",
            "}",
            ",",
            "é",
            "0b5c6a1e-1f7e-4a43",
            "input_tokens",
            "keys",
            "Token",
        ];
        let mut seed = 12345_u32;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as usize % n
        };
        for _ in 0..20_000 {
            let line: String = (0..1 + next(12)).map(|_| pieces[next(pieces.len())]).collect();
            assert_eq!(redact_patterns(&line), unfiltered(&line), "{line}");
        }
    }

    #[test]
    fn a_name_far_into_a_line_is_seen() {
        for pad in [0, 1, 63, 64, 65, 255, 256, 4096] {
            let pad = "a".repeat(pad);
            hides(&format!("{pad} db_secret=hunter22 end"), &format!("{pad} db_secret=[REDACTED] end"));
            hides(&format!("{pad} Bearer abcdefghijklmnop1234"), &format!("{pad} Bearer [REDACTED]"));
        }
    }

    #[test]
    fn ordinary_text_survives() {
        keeps("The key to success is patience; keep the token count low.");
        keeps("commit 3f2a9c1e8b7d6a5f4e3c2b1a0f9e8d7c6b5a4f3e fixes it");
        keeps("run 123e4567-e89b-12d3-a456-426614174000 started");
        keeps("Key: press the space bar");
        keeps("task-abcdefghijklmnopqrstuvwxyz is a slug, risk-averse too");
        keeps("the bearer of bad news");
        keeps("\"max_tokens\": 4096, input_tokens=1234");
        keeps("\"api_key\": null, \"token_usage\": {\"input\": 5}");
        keeps("API_KEY=$ANTHROPIC_API_KEY and if token == other {}");
        keeps("use crate::secret::Vault;");
        keeps("AKIAIOSFODNN7EXAMPLEXX is too long to be an id");
        keeps("");
        keeps("ünïcödé key: 🔑 sk-short");
        keeps("already [REDACTED] and api_key=[REDACTED]");
    }

    #[test]
    fn exact_credential_values_are_hidden() {
        hide_values(["sk-ant-secret123", "abc"]);
        hides("the key is sk-ant-secret123.", "the key is [REDACTED].");
        // Too short to hide by value: ordinary words would go.
        keeps("abc is fine");
        assert_eq!(&*redact_bytes(b"\xffsk-ant-secret123\xfe"), b"\xff[REDACTED]\xfe");
    }

    #[test]
    fn idempotent() {
        let once = redact("API_KEY=abc Bearer abcdefghijklmnopqrstu sk-abcdefghijklmnopqrstuvwx");
        assert_eq!(redact(&once), once);
    }
}

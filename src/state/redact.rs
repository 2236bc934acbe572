//! Redaction of credentials from text that ralph writes to disk (journal, logs,
//! checkpoint error tails): agents echo environment variables, HTTP headers and
//! config files, and `.agent/` must not become a place where keys leak from.
//!
//! Hand-written instead of regexes: the patterns are few and anchored on fixed
//! prefixes and names, so a scan in order at word boundaries is simple, linear and
//! adds no dependency. Every output line goes through it, and most hold nothing to
//! hide: the scan visits only the places where a token's prefix or a secret's name
//! occurs, found by a pair of bytes each holds ([`anchor`]) tested 16 pairs at a
//! time, and a line without one is returned as it came, its UTF-8 not even checked.
//! It errs on the side of hiding: a false positive costs a log line's readability,
//! a false negative leaks a key.

use std::borrow::Cow;
use std::sync::RwLock;

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
    let first = first_anchor(bytes);
    if first.is_none() && !holds_value(bytes) {
        return Cow::Borrowed(bytes);
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return match with_values(redact_patterns(text, first)) {
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

/// Whether `bytes` hold a value given to [`hide_values`].
fn holds_value(bytes: &[u8]) -> bool {
    VALUES.read().map_or(true, |known| known.iter().any(|v| memchr::memmem::find(bytes, v.as_bytes()).is_some()))
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
    with_values(redact_patterns(text, first_anchor(text.as_bytes())))
}

fn with_values(mut out: Cow<'_, str>) -> Cow<'_, str> {
    let Ok(known) = VALUES.read() else { return out };
    for v in known.iter() {
        if out.contains(v.as_str()) {
            out = Cow::Owned(out.replace(v.as_str(), REDACTED));
        }
    }
    out
}

/// The patterns hidden in `text`, whose [`first_anchor`] is `first`. In order, at
/// word starts, as a walk over every byte would: but an assignment is tried only where
/// the key of the next secret's name may start, and a token only where a prefix
/// starts, the only places either can match.
fn redact_patterns(text: &str, first: Option<usize>) -> Cow<'_, str> {
    let b = text.as_bytes();
    let Some(first) = first else { return Cow::Borrowed(text) };
    // Nothing starts before the first anchor that a start belongs to.
    let from = first.saturating_sub(REACH);
    let mut name = next(b, from, Kind::Name).map(|n| (key_reach(b, n), n));
    let mut tok = next(b, from, Kind::Token);
    let mut out = None::<String>;
    let (mut copied, mut i) = (0, 0);
    loop {
        if name.is_some_and(|(_, n)| n < i) {
            name = next(b, i, Kind::Name).map(|n| (key_reach(b, n), n));
        }
        if tok.is_some_and(|t| t < i) {
            tok = next(b, i, Kind::Token);
        }
        // The next place where an assignment or a token may start.
        let key = name.map_or(usize::MAX, |(reach, _)| reach.max(i));
        let at = key.min(tok.unwrap_or(usize::MAX));
        if at == usize::MAX {
            break;
        }
        let found = if at > 0 && is_word(b[at - 1]) {
            None
        } else {
            (at == key)
                .then(|| assignment(text, at))
                .flatten()
                .or_else(|| (Some(at) == tok).then(|| token(b, at)).flatten())
        };
        let Some((start, end)) = found else {
            i = at + 1;
            continue;
        };
        let out = out.get_or_insert_with(|| String::with_capacity(text.len() + REDACTED.len()));
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = end;
        i = end;
    }
    out.map_or(Cow::Borrowed(text), |out| Cow::Owned(out + &text[copied..]))
}

/// Where the key of an assignment holding the name at `n` may start: in the run of
/// key bytes the name is in, at most a key's length before it, or at the quote just
/// before the run.
fn key_reach(b: &[u8], n: usize) -> usize {
    let floor = n.saturating_sub(MAX_KEY + 1);
    let mut r = n;
    while r > floor && is_key_char(b[r - 1]) {
        r -= 1;
    }
    if r > floor { r - 1 } else { floor }
}

/// What is looked for: the names of secrets (an [`assignment`]'s key holds one), or
/// the prefixes of [`token`]s.
#[derive(Clone, Copy)]
enum Kind {
    Name,
    Token,
}

/// Names and prefixes are found by a pair of bytes each holds (its anchor), tested
/// 16 pairs at a time instead of byte by byte: `key` and `token` by `ke`, `secret` by
/// `cr`, `passw` by `sw` (any case); `sk-` by `k-`, `xox` by `xo`, `gh…_` and
/// `github_pat_` by `gh`/`gi`, `AKIA`/`ASIA` by `IA`, `bearer` by `be`. Rare pairs,
/// in prose as in JSON; written with `min` so that it stays a few vector operations.
fn anchor(c: u8, d: u8) -> bool {
    let (f, g) = (c | 0x20, d | 0x20);
    ((f ^ b'k') | (g ^ b'e'))
        .min((f ^ b'c') | (g ^ b'r'))
        .min((f ^ b's') | (g ^ b'w'))
        .min((f ^ b'k') | (d ^ b'-'))
        .min((f ^ b'x') | (g ^ b'o'))
        .min((f ^ b'g') | (g ^ b'h').min(g ^ b'i'))
        .min((c ^ b'I') | (d ^ b'A'))
        .min((f ^ b'b') | (g ^ b'e'))
        == 0
}

/// How far before its anchor a name or a prefix may start.
const REACH: usize = 3;

/// Where the names or prefixes whose anchor is at `a` start (names exactly, prefixes
/// roughly: [`token`] decides).
fn starts(b: &[u8], a: usize, kind: Kind) -> [Option<usize>; 2] {
    match (kind, b[a] | 0x20, b[a + 1] | 0x20) {
        (Kind::Name, b'k', b'e') => [at(b, a, 0, b"key"), at(b, a, 2, b"token")],
        (Kind::Name, b'c', _) => [at(b, a, 2, b"secret"), None],
        (Kind::Name, b's', _) => [at(b, a, 3, b"passw"), None],
        (Kind::Token, b'k', b'-') => [at(b, a, 1, b"sk-"), None],
        (Kind::Token, b'x', _) => [at(b, a, 0, b"xox"), None],
        // `gh`/`gi` are common in prose (right, through, git): only a GitHub prefix.
        (Kind::Token, b'g', _) => [at(b, a, 0, b"github_pat_").or((b.get(a + 3) == Some(&b'_')).then_some(a)), None],
        (Kind::Token, b'i', _) => [a.checked_sub(2), None],
        (Kind::Token, b'b', _) => [at(b, a, 0, b"bearer"), None],
        _ => [None, None],
    }
}

/// `off` bytes before `a` if `word` (any case) starts there.
fn at(b: &[u8], a: usize, off: usize, word: &[u8]) -> Option<usize> {
    let s = a.checked_sub(off)?;
    b.get(s..s + word.len()).is_some_and(|w| w.eq_ignore_ascii_case(word)).then_some(s)
}

/// The first anchor that a name or a prefix belongs to: most lines hold not even an
/// anchor, and nothing to hide without one.
fn first_anchor(b: &[u8]) -> Option<usize> {
    let mut a = 0;
    while let Some(hit) = find(b, a) {
        if [Kind::Name, Kind::Token].into_iter().any(|kind| starts(b, hit, kind).iter().any(Option::is_some)) {
            return Some(hit);
        }
        a = hit + 1;
    }
    None
}

/// The first start at or after `from` of a name or a prefix.
fn next(b: &[u8], from: usize, kind: Kind) -> Option<usize> {
    let mut best = None::<usize>;
    let (mut a, mut end) = (from, b.len());
    while let Some(hit) = find(&b[..end], a) {
        for s in starts(b, hit, kind).into_iter().flatten().filter(|&s| s >= from) {
            best = Some(best.map_or(s, |best| best.min(s)));
            // A later anchor may still belong to an earlier start.
            end = end.min(s + REACH + 2);
        }
        a = hit + 1;
    }
    best
}

const STEP: usize = 16;

/// The first `k` at or after `from` where `b[k]` and `b[k + 1]` are an [`anchor`].
fn find(b: &[u8], from: usize) -> Option<usize> {
    let (x, y) = (b.get(from..b.len().checked_sub(1)?)?, &b[from + 1..]);
    let skip = clear(x, y);
    // Within the block that holds one, the first bytes of the anchors tell where to
    // look closer.
    let first = |c: u8| matches!(c | 0x20, b'k' | b'c' | b's' | b'x' | b'g' | b'i' | b'b');
    x[skip..].iter().zip(&y[skip..]).position(|(&c, &d)| first(c) && anchor(c, d)).map(|k| from + skip + k)
}

/// How many pairs `(x[k], y[k])` from the start are known to hold no [`anchor`],
/// tested a block at a time: 32 pairs where the CPU has AVX2 (checked once, then
/// cached by `std`), a third of the instructions of 16 with SSE2. Not inlined, so that
/// the compiler does not see that `y` is `x` shifted by one: it then tests a block with
/// a few vector compares instead of shuffling bytes.
#[inline(never)]
fn clear(x: &[u8], y: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { clear_avx2(x, y) };
    }
    clear_by::<STEP>(x, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn clear_avx2(x: &[u8], y: &[u8]) -> usize {
    let n = clear_by::<{ 2 * STEP }>(x, y);
    if n == x.len() { n } else { n + clear_by::<STEP>(&x[n..], &y[n..]) }
}

#[inline(always)]
fn clear_by<const N: usize>(x: &[u8], y: &[u8]) -> usize {
    let blocks = |from: usize| x[from..].chunks_exact(N).zip(y[from..].chunks_exact(N));
    let clear = |(x, y): (&[u8], &[u8])| !x.iter().zip(y).fold(false, |a, (&c, &d)| a | anchor(c, d));
    let n = N * blocks(0).take_while(|&p| clear(p)).count();
    // Past the whole blocks, the last block's worth of pairs again.
    let last = x.len().saturating_sub(N);
    if n > last && blocks(last).all(clear) { x.len() } else { n }
}

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

/// Where the names of secrets (any case) start in `bytes`, in order: a value to hide
/// may follow each. For the cut of a long line, so a copy and five searches will do.
pub(crate) fn secret_names(bytes: &[u8]) -> Vec<usize> {
    let lower = bytes.to_ascii_lowercase();
    let names = [&b"key"[..], b"token", b"secret", b"passw", b"bearer"];
    let mut at: Vec<usize> = names.iter().flat_map(|name| memchr::memmem::find_iter(&lower, name)).collect();
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
    let (strong, secret, spaced) = names(key);
    if !secret {
        return None;
    }
    let spaced_name = spaced || matches!(&*key, b"password" | b"passwd");
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
            if [&b"bearer"[..], b"basic", b"token"].iter().any(|w| b[j..ve].eq_ignore_ascii_case(w)) {
                ve = run(b, skip_blanks(b, ve), |c| !ends_value(c));
            }
            (j, ve)
        }
    };
    let value = &b[vs..ve];
    if value.is_empty()
        || value.starts_with(REDACTED.as_bytes())
        || matches!(value[0], b'$' | b'{' | b'[' | b'(' | b'<')
        || [&b"null"[..], b"none", b"true", b"false"].iter().any(|w| value.eq_ignore_ascii_case(w))
        || (!strong && value.iter().all(u8::is_ascii_digit))
    {
        return None;
    }
    Some((vs, ve))
}

/// Whether a lowercased key holds `secret`, `password` or `passwd` (even a number
/// after it is hidden), one of those or `key` or `token`, and `_` or `-`. One pass,
/// each name tried where its first letter is: a JSON line has many keys, as long as
/// `cache_read_input_tokens`.
fn names(key: &[u8]) -> (bool, bool, bool) {
    let (mut strong, mut weak, mut spaced) = (false, false, false);
    for (k, &c) in key.iter().enumerate() {
        let rest = &key[k..];
        match c {
            b's' => strong |= rest.starts_with(b"secret"),
            b'p' => strong |= rest.starts_with(b"password") || rest.starts_with(b"passwd"),
            b'k' => weak |= rest.starts_with(b"key"),
            b't' => weak |= rest.starts_with(b"token"),
            b'_' | b'-' => spaced = true,
            _ => {}
        }
    }
    (strong, strong || weak, spaced)
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

    /// A reference scan: every byte visited; at a word start, `found` says what to hide.
    fn walk(text: &str, mut found: impl FnMut(usize) -> Option<(usize, usize)>) -> String {
        let b = text.as_bytes();
        let (mut out, mut copied, mut i) = (String::new(), 0, 0);
        while i < b.len() {
            if (i == 0 || !is_word(b[i - 1]))
                && let Some((start, end)) = found(i)
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

    /// The scan without its shortcuts: both matchers tried at every word start.
    fn unfiltered(text: &str) -> String {
        walk(text, |i| assignment(text, i).or_else(|| token(text.as_bytes(), i)))
    }

    /// The scan as it was before the anchors: every byte visited, the key tried near a
    /// name found in a lowercased copy, a token at the bytes tokens start with.
    fn per_byte(text: &str) -> String {
        use memchr::memmem::Finder;
        let b = text.as_bytes();
        let lower = b.to_ascii_lowercase();
        let finders = [&b"key"[..], b"token", b"secret", b"passw"].map(Finder::new);
        let find = |from: usize| {
            finders.iter().filter_map(|f| f.find(&lower[from..])).min().map_or(usize::MAX, |at| from + at)
        };
        let has_sep = memchr::memchr2(b'=', b':', b).is_some();
        let mut next = find(0);
        walk(text, |i| {
            if next < i {
                next = find(i);
            }
            let near = has_sep && next <= i + 1 + MAX_KEY;
            let starts_token = matches!(b[i], b's' | b'g' | b'x' | b'A' | b'b' | b'B');
            near.then(|| assignment(text, i)).flatten().or_else(|| starts_token.then(|| token(b, i)).flatten())
        })
    }

    /// What [`generated_lines`] are made of, split at `|`.
    const PIECES: &str = "api_key|X-Api-Key|\"Secret\"|TOKEN|pass-word|passwd|PassWord|pAsSwOrD=|my.key.name|secret=|\
         token: |password: |=|:| : |==|=>|::|\"|'|\\|\t| |-|_|.|,|{|}|[|]|(|)|<|&|/|?|sk-|\
         sk-abcdefghijklmnopqrstuvwxyz|Bearer |bearer|BEARER abcdefghijklmnopqrstuv|basic|Basic|\
         AKIA|ASIA|AKIAIOSFODNN7EXAMPLE|ASIAIOSFODNN7EXAMPLE|ghp_|gho_|ghx_|\
         ghp_abcdefghijklmnopqrstuvwxyz0123456789|github_pat_|\
         github_pat_11ABCDEFG0123456789_abcdefghijk|xoxb-|xoxp-|xoxq-|xox|xoxa-1234567890-abc|\
         value123|4096|null|None|$VAR|[REDACTED]|é|ü|🔑|0b5c6a1e-1f7e-4a43|input_tokens|keys|Token|\
         kEy|tok|en|key|secret|SECRET|passw|git|hub|gh|I|A|K|S|k|c|w|b|B|x|g|s|\
         abcdefghijklmnopqrstuvwxyz|0123456789|xxxxxxxxxxxxxxxx|{\"type\":\"text\",\"text\":\"|\"}|\
         make sure|be careful|because|logic|crossword";

    /// Lines built from pieces that exercise every anchor, name, prefix and
    /// boundary: secrets and near misses in several cases, separators, quotes,
    /// escapes, multi-byte characters, long keys, and single bytes between them.
    fn generated_lines(count: usize) -> impl Iterator<Item = String> {
        let long_key = format!("{}_key", "a".repeat(60));
        let pieces: Vec<&str> = PIECES.split('|').chain([long_key.as_str()]).collect();
        let pieces: Vec<String> = pieces.into_iter().map(str::to_owned).collect();
        let bytes = "abksxgcwyeotnrpiBKSXGCWAIY-_.:= \"'\t09$\\{}é";
        let mut seed = 12345_u64;
        let mut next = move |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n
        };
        (0..count).map(move |round| {
            let len = 1 + next(if round % 3 == 0 { 40 } else { 12 });
            (0..len)
                .map(|_| match next(4) {
                    0 => bytes.chars().nth(next(bytes.chars().count())).map(String::from).unwrap_or_default(),
                    _ => pieces[next(pieces.len())].clone(),
                })
                .collect()
        })
    }

    #[test]
    fn the_anchors_change_no_answer() {
        let mut hidden = 0;
        for line in generated_lines(30_000) {
            let got = redact_patterns(&line, first_anchor(line.as_bytes()));
            assert_eq!(got, per_byte(&line), "{line:?}");
            assert_eq!(got, unfiltered(&line), "{line:?}");
            hidden += usize::from(got != line);
        }
        // The lines exercise both answers.
        assert!(hidden > 5_000, "{hidden}");
    }

    #[test]
    fn a_key_is_read_in_one_pass_as_by_a_search_for_each_name() {
        let by_search = |key: &[u8]| {
            let has = |name: &[u8]| key.windows(name.len()).any(|w| w == name);
            let strong = has(b"secret") || has(b"password") || has(b"passwd");
            (strong, strong || has(b"key") || has(b"token"), has(b"_") || has(b"-"))
        };
        for line in generated_lines(3_000) {
            let lower = line.to_ascii_lowercase();
            for key in lower.as_bytes().split(|&c| !is_key_char(c)) {
                for cut in 0..key.len().min(MAX_KEY) {
                    assert_eq!(names(&key[cut..]), by_search(&key[cut..]), "{line:?}");
                }
            }
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_change_no_answer() {
        for (k, line) in generated_lines(5_000).enumerate() {
            let mut raw = line.into_bytes();
            raw.insert(k % (raw.len() + 1), 0xff);
            let mut expected = Vec::new();
            for chunk in raw.utf8_chunks() {
                expected.extend_from_slice(redact(chunk.valid()).as_bytes());
                expected.extend_from_slice(chunk.invalid());
            }
            assert_eq!(redact_bytes(&raw), expected, "{raw:?}");
        }
    }

    #[test]
    fn every_block_width_stops_at_or_before_the_first_anchor() {
        for line in generated_lines(3_000).chain(["x".repeat(200), format!("{}ke", "x".repeat(70))]) {
            let b = line.as_bytes();
            let Some((x, y)) = b.len().checked_sub(1).map(|n| (&b[..n], &b[1..])) else { continue };
            let first = x.iter().zip(y).position(|(&c, &d)| anchor(c, d)).unwrap_or(x.len());
            for skip in [clear(x, y), clear_by::<STEP>(x, y), clear_by::<{ 2 * STEP }>(x, y)] {
                assert!(skip <= first && first - skip < 2 * STEP, "{line:?}");
            }
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

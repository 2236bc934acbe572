//! The rules a pattern alone cannot decide: a secret after a name that says so
//! (strong names hide any real value, weak ones only a random-looking one), a
//! password inside a URL, Basic credentials, a private key block, `curl -u` and
//! `.netrc` passwords. Each reports the ranges to hide through `hide`.
//!
//! A floor below `matcher` (which runs these rules and shares [`entropy`]): it
//! imports only the rule set.

use std::sync::LazyLock;

use regex::bytes::{Captures, Regex, RegexBuilder};

use super::rules::Special;

/// Each regex's lazy DFA cache grows on varied text up to this (regex's default is
/// 2 MiB; heaptrack on real Rust source: 1.5 MiB of peak heap, 1.25 MiB with this
/// cap). A smaller cache only means states built again, never a different match.
const DFA_CACHE: usize = 256 * 1024;

fn re(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .unicode(false)
        .dfa_size_limit(DFA_CACHE)
        .build()
        .unwrap_or_else(|e| panic!("{pattern}: {e}"))
}

static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)(?P<n>[a-z0-9_.\-]{0,60}(?:pass|pwd|secret|token|key|auth|cred|private)[a-z0-9_.\-]{0,40})(?P<q>["'`]?)[ \t]{0,4}(?P<sep>:=|=>|=|:)[ \t]{0,4}(?P<v>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|`[^`\n]*`|[^\s"'`,;&}\])<>\[({|]{1,400})"#,
    )
});
static FLAG: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?i)(?:^|[ \t])--(?P<n>[a-z0-9\-]{0,30}(?:password|passwd|token|secret|api-key|apikey)[a-z0-9\-]{0,20})(?:=|[ \t]+)(?P<v>"[^"\n]{1,400}"|'[^'\n]{1,400}'|[^\s"'\-][^\s"']{0,400})"#,
    )
});
static URL: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"(?i)\b[a-z][a-z0-9+.\-]{1,30}://[^\s:/@"'<>\[\]]{0,100}:(?P<s>[^\s/@"'<>]{1,200})@[^\s/@"'<>]{1,255}"#)
});
static BASIC: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\bbasic[ \t]+(?P<s>[A-Za-z0-9+/]{8,}={0,2})"));
static CURL_USER: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?:^|[ \t])(?:-u|--user)(?:=|[ \t]+)["']?[^\s:"']{1,100}:(?P<s>[^\s"']{1,200})"#));
static NETRC: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+(?P<s>\S+)"));
static PEM_BEGIN: LazyLock<Regex> = LazyLock::new(|| re(r"-----BEGIN[ A-Z0-9_]{0,40}PRIVATE KEY(?: BLOCK)?-----"));
static PEM_END: LazyLock<Regex> = LazyLock::new(|| re(r"-----END[ A-Z0-9_]{0,40}PRIVATE KEY(?: BLOCK)?-----"));

pub(crate) fn hits(kind: Special, line: &[u8], hide: &mut dyn FnMut(usize, usize)) {
    match kind {
        Special::Assignment => assignments(line, hide),
        Special::UrlPassword => each(&URL, line, hide, |_, s| !placeholder(s)),
        Special::BasicAuth => each(&BASIC, line, hide, |_, s| basic_credentials(s)),
        Special::CurlUser => each(&CURL_USER, line, hide, |_, s| !placeholder(s)),
        Special::Netrc => each(&NETRC, line, hide, |_, s| !placeholder(s)),
        Special::PrivateKey => {
            for begin in PEM_BEGIN.find_iter(line) {
                let end = PEM_END.find_at(line, begin.end()).map_or(line.len(), |m| m.start());
                let (start, end) = trim(line, begin.end(), end);
                if start < end {
                    hide(start, end);
                }
            }
        }
    }
}

/// Whether `line` opens a private key block it does not close: the lines after it
/// are the key's body up to the `END` line.
pub(crate) fn opens_private_key(line: &[u8]) -> bool {
    PEM_BEGIN.find_iter(line).last().is_some_and(|begin| PEM_END.find_at(line, begin.end()).is_none())
}

/// Where a private key block's `END` line starts in `line`, if it is one.
pub(crate) fn private_key_end(line: &[u8]) -> Option<usize> {
    PEM_END.find(line).map(|m| m.start())
}

fn each(re: &Regex, line: &[u8], hide: &mut dyn FnMut(usize, usize), keep: impl Fn(&Captures<'_>, &[u8]) -> bool) {
    for caps in re.captures_iter(line) {
        if let Some(s) = caps.name("s")
            && keep(&caps, s.as_bytes())
        {
            hide(s.start(), s.end());
        }
    }
}

/// `start..end` of `line` without the ASCII white space at its ends.
pub(crate) fn trim(line: &[u8], start: usize, end: usize) -> (usize, usize) {
    let inner = &line[start..end];
    let from = start + (inner.len() - inner.trim_ascii_start().len());
    (from, from + inner.trim_ascii().len())
}

/// How sure a key's name makes a secret of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Strength {
    /// Not a secret's name (`max_tokens`, `key_file`, `author`).
    None,
    /// `key`, `token`, `auth`: a secret when the value looks random.
    Weak,
    /// `password`, `secret`, `api_key`, `access_token`: any real value is one.
    Strong,
}

/// Parts that make a name a secret's on their own.
const STRONG: &[&str] = &["password", "passwd", "pwd", "passphrase", "secret", "credential", "credentials", "creds"];
/// Parts that name a secret when a qualifier comes before them (`api_key`).
const WEAK: &[&str] = &["key", "token", "auth", "pass", "pat"];
/// What before `key` or `token` makes it a credential's name.
const QUALIFIERS: &[&str] = &[
    "api",
    "access",
    "auth",
    "private",
    "secret",
    "bot",
    "session",
    "signing",
    "encryption",
    "master",
    "client",
    "refresh",
    "bearer",
    "personal",
    "deploy",
    "service",
    "app",
    "admin",
    "oauth",
    "license",
    "webhook",
    "id",
];
/// A last part that makes the name describe something other than the secret.
const NOT_THE_SECRET: &[&str] = &[
    "id",
    "ids",
    "name",
    "names",
    "type",
    "types",
    "count",
    "counts",
    "length",
    "len",
    "size",
    "file",
    "files",
    "path",
    "paths",
    "dir",
    "url",
    "uri",
    "endpoint",
    "env",
    "var",
    "vars",
    "hash",
    "prefix",
    "suffix",
    "field",
    "header",
    "label",
    "format",
    "policy",
    "mode",
    "kind",
    "ttl",
    "expiry",
    "expires",
    "expiration",
    "at",
    "timeout",
    "limit",
    "max",
    "min",
    "usage",
    "index",
    "param",
    "params",
    "ref",
    "required",
    "enabled",
    "set",
    "provided",
    "source",
    "sources",
    "store",
    "manager",
    "helper",
    "command",
    "cmd",
    "fn",
    "func",
    "rotation",
    "version",
    "algorithm",
    "alg",
    "location",
    "filename",
    "arn",
    "region",
    "scope",
    "scopes",
    "status",
    "state",
];

/// Splits a key into lowercase words at `_`, `-`, `.`, spaces and camelCase humps.
fn words(name: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for &c in name {
        if !c.is_ascii_alphanumeric() {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(char::from(c.to_ascii_lowercase()));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// How sure `name` makes a secret of what is assigned to it.
pub(crate) fn strength(name: &[u8]) -> Strength {
    let words = words(name);
    let Some(last) = words.last() else { return Strength::None };
    if NOT_THE_SECRET.contains(&last.as_str()) && words.len() > 1 {
        return Strength::None;
    }
    // An environment variable (`GITHUB_TOKEN`, `STRIPE_KEY`): named for what it holds.
    let env_style = words.len() > 1 && name.iter().all(|c| !c.is_ascii_lowercase());
    let mut best = Strength::None;
    for (k, w) in words.iter().enumerate() {
        let compound = |end: &str| w.len() > end.len() && w.ends_with(end);
        if STRONG.contains(&w.as_str())
            || ["password", "passwd", "secret", "passphrase", "apikey", "authtoken", "accesstoken", "privatekey"]
                .iter()
                .any(|e| compound(e) || w == e)
        {
            return Strength::Strong;
        }
        if WEAK.contains(&w.as_str()) || compound("token") {
            // `GITHUB_TOKEN` names a token; `METADATA_KEY` as often names a key of a map.
            let env_names_it = env_style && w != "key";
            let qualified = k > 0 && (env_names_it || QUALIFIERS.contains(&words[k - 1].as_str()));
            best = best.max(if qualified || compound("token") { Strength::Strong } else { Strength::Weak });
        }
    }
    best
}

/// `NAME = value` and `--name value`: the value, when the name makes a secret of it.
fn assignments(line: &[u8], hide: &mut dyn FnMut(usize, usize)) {
    for caps in ASSIGNMENT.captures_iter(line) {
        let (Some(n), Some(sep), Some(v)) = (caps.name("n"), caps.name("sep"), caps.name("v")) else { continue };
        // `==`, `=>`-less `::`, `:=` handled; `a == b` and `a::b` are code.
        let code = (sep.as_bytes() == b"=" && line.get(sep.end()).is_some_and(|c| matches!(c, b'=' | b'>' | b'~')))
            || (sep.as_bytes() == b":" && line.get(sep.end()) == Some(&b':'))
            || (sep.start() > 0 && matches!(line[sep.start() - 1], b'!' | b'<' | b'>' | b'='));
        if code {
            continue;
        }
        // `${NAME:-default}`: a shell default, not an assignment.
        if n.start() >= 2 && &line[n.start() - 2..n.start()] == b"${" {
            continue;
        }
        let quoted_name = caps.name("q").is_some_and(|q| !q.is_empty());
        let strength = strength(n.as_bytes());
        if strength == Strength::None {
            continue;
        }
        // `Key: press the space bar` is prose: an unquoted one-word name before a
        // colon counts when it is clearly a secret's or its value clearly one.
        let prose_like =
            sep.as_bytes() == b":" && !quoted_name && !n.as_bytes().iter().any(|c| matches!(c, b'_' | b'-' | b'.'));
        if let Some((start, end)) = value_of(line, v.start(), v.end()) {
            let value = &line[start..end];
            let quoted = v.start() < start;
            // Code: a call or an index (`key = derive(…)`, `password = parts['pw']`).
            if !quoted && matches!(line.get(end), Some(b'(' | b'[')) {
                continue;
            }
            let ok = match strength {
                Strength::Strong if prose_like => {
                    matches!(words(n.as_bytes()).last().map(String::as_str), Some("password" | "passwd" | "passphrase"))
                        && real_value(n.as_bytes(), value, quoted, line.get(end).copied())
                        || looks_random(value)
                }
                Strength::Strong => {
                    let code = sep.as_bytes() == b"="
                        && !quoted
                        && !in_query(line, n.start())
                        && code_variable(n.as_bytes(), value);
                    !code && real_value(n.as_bytes(), value, quoted, line.get(end).copied())
                }
                _ => looks_random(value) && !prose_like_value(value),
            };
            if ok {
                hide(start, end);
            }
        }
    }
    for caps in FLAG.captures_iter(line) {
        let (Some(n), Some(v)) = (caps.name("n"), caps.name("v")) else { continue };
        if let Some((start, end)) = value_of(line, v.start(), v.end())
            && strength(n.as_bytes()) != Strength::None
            && real_value(n.as_bytes(), &line[start..end], v.start() < start, line.get(end).copied())
        {
            hide(start, end);
        }
    }
}

/// The value's range without its quotes; for `Bearer x`/`Basic x`/`token x`, the
/// credential after the scheme word.
fn value_of(line: &[u8], start: usize, end: usize) -> Option<(usize, usize)> {
    let v = &line[start..end];
    if let (Some(&q), Some(&last)) = (v.first(), v.last())
        && matches!(q, b'"' | b'\'' | b'`')
    {
        let inner_end = if v.len() >= 2 && last == q { end - 1 } else { end };
        return (start + 1 < inner_end).then_some((start + 1, inner_end));
    }
    if [&b"bearer"[..], b"basic", b"token"].iter().any(|w| v.eq_ignore_ascii_case(w)) {
        let s = end + line[end..].iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
        let e = s + line[s..]
            .iter()
            .take_while(|c| !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b',' | b';'))
            .count();
        return (e > s).then_some((s, e));
    }
    Some((start, end))
}

/// A value that is no placeholder, reference or piece of code: what a strong name
/// holds when it holds a secret.
fn real_value(name: &[u8], value: &[u8], quoted: bool, after: Option<u8>) -> bool {
    if value.len() < 3 || placeholder(value) || value.starts_with(super::REDACTED.as_bytes()) || is_path(value) {
        return false;
    }
    if quoted {
        // A sentence is a label or a hint; a secret of a few words is a passphrase.
        let words = value.split(|c| *c == b' ').filter(|w| !w.is_empty()).count();
        return words < 3 || value.iter().any(|c| c.is_ascii_digit() || c.is_ascii_punctuation() && *c != b'.');
    }
    // Unquoted: code (a call, a member, a type, a reference) is not a value.
    if after == Some(b'(') || after == Some(b'[') || value.contains(&b'(') {
        return false;
    }
    let ident = |s: &[u8]| s.first().is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
    let is_ident = |s: &[u8]| ident(s) && s.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if value.split(|&c| c == b'.').all(is_ident) && value.contains(&b'.') {
        return false;
    }
    if value.windows(2).any(|w| w == b"::") {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    const TYPES: &[&str] = &[
        "str",
        "string",
        "bool",
        "boolean",
        "int",
        "integer",
        "bytes",
        "number",
        "any",
        "object",
        "char",
        "secretstr",
        "vec",
        "option",
        "optional",
        "none",
        "sensitive",
        "required",
        "self",
    ];
    if TYPES.iter().any(|t| lower == t.as_bytes()) {
        return false;
    }
    // A CamelCase type name (`String`, `SecretString`), pure letters.
    if value[0].is_ascii_uppercase()
        && value.iter().all(u8::is_ascii_alphabetic)
        && value.iter().any(u8::is_ascii_lowercase)
    {
        return false;
    }
    // A variable named after what it holds (`password = password_hash`).
    if is_ident(value) && words(name).iter().any(|w| w.len() >= 3 && lower.windows(w.len()).any(|x| x == w.as_bytes()))
    {
        return false;
    }
    true
}

/// Whether the name at `start` is a URL query's (`?access_token=…&`).
fn in_query(line: &[u8], start: usize) -> bool {
    start > 0 && matches!(line[start - 1], b'?' | b'&')
}

/// `password = user_input` in code: a lowercase name given a variable (letters and
/// underscores), where a config file would give a value.
fn code_variable(name: &[u8], value: &[u8]) -> bool {
    name.iter().any(u8::is_ascii_lowercase)
        && value.len() <= 24
        && value.first().is_some_and(|c| c.is_ascii_lowercase() || *c == b'_')
        && value.iter().all(|c| c.is_ascii_lowercase() || *c == b'_')
}

/// A file's path (`/path/to/credentials.json`, `~/.aws/credentials`, `C:\keys\a.pem`):
/// where a secret is, not the secret.
fn is_path(value: &[u8]) -> bool {
    let rooted = [&b"/"[..], b"./", b"~/", b"../"].iter().any(|p| value.starts_with(p));
    let windows = value.len() > 3 && value[0].is_ascii_alphabetic() && &value[1..3] == b":\\";
    const FILES: &[&str] =
        &[".json", ".pem", ".key", ".txt", ".env", ".yaml", ".yml", ".p12", ".pfx", ".crt", ".toml", ".ini"];
    let lower = value.to_ascii_lowercase();
    rooted || windows || (value.contains(&b'/') && FILES.iter().any(|f| lower.ends_with(f.as_bytes())))
}

/// Placeholders, templates and references: never a secret.
pub(crate) fn placeholder(value: &[u8]) -> bool {
    let lower = value.to_ascii_lowercase();
    let first = value.first().copied().unwrap_or(b' ');
    if matches!(first, b'$' | b'{' | b'[' | b'(' | b'<' | b'%' | b'&' | b'*' | b'#' | b'@') {
        return true;
    }
    if value.iter().all(|&c| c == first) {
        return true;
    }
    const WORDS: &[&str] = &[
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "yes",
        "no",
        "on",
        "off",
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
        "changeme",
        "change_me",
        "redacted",
        "hidden",
        "masked",
        "example",
        "sample",
        "placeholder",
        "foo",
        "bar",
        "baz",
        "qux",
        "dummy",
        "test",
        "user",
        "username",
        "pw",
        "string",
        "env",
        "required",
        "optional",
    ];
    if WORDS.iter().any(|w| lower == w.as_bytes()) {
        return true;
    }
    const PARTS: &[&str] = &["${", "{{", "}}", "your_", "your-", "<your", "xxx", "***", "...", "…"];
    PARTS.iter().any(|p| lower.windows(p.len()).any(|w| w == p.as_bytes()))
}

/// A value that looks generated, not written: long enough, mixed, no words.
pub(crate) fn looks_random(value: &[u8]) -> bool {
    value.len() >= 12 && !wordy(value) && looks_generated(value)
}

/// [`looks_random`] without the length and the words: for the rest of a secret that
/// a line break cut (`…EXAMPLEKEY` may read as words, and be short).
pub(crate) fn looks_generated(value: &[u8]) -> bool {
    if value.len() > 400 || placeholder(value) || value.iter().any(u8::is_ascii_whitespace) {
        return false;
    }
    let has = |f: fn(&u8) -> bool| value.iter().any(f);
    let (lower, upper, digit) = (has(u8::is_ascii_lowercase), has(u8::is_ascii_uppercase), has(u8::is_ascii_digit));
    let symbol = value.iter().any(|c| matches!(c, b'+' | b'/' | b'=' | b'_' | b'-' | b'.' | b'~' | b'!' | b'@' | b'#'));
    let classes = [lower, upper, digit, symbol].iter().filter(|&&b| b).count();
    if classes < 2 || !(digit || (lower && upper)) {
        return false;
    }
    // Identifiers and hashes that are no credentials.
    if is_uuid(value) || is_hash(value) || is_version(value) || value.windows(3).any(|w| w == b"://") {
        return false;
    }
    // A path or a dotted name: words between separators.
    if value.iter().filter(|&&c| c == b'/' || c == b'.').count() >= 2
        && value
            .split(|c| *c == b'/' || *c == b'.')
            .all(|w| w.iter().all(|c| c.is_ascii_lowercase() || *c == b'_' || *c == b'-'))
    {
        return false;
    }
    entropy(value) >= 3.2
}

/// Shannon entropy in bits per byte.
pub(crate) fn entropy(bytes: &[u8]) -> f32 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f32;
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f32 / n).map(|p| -p * p.log2()).sum()
}

/// Words run together (`GenericTypesCacheKey`, `Ed25519PrivateKey`,
/// `starlette.max_body_size`): a name, where a generated value's letters change case
/// and give way to digits every couple of characters.
fn wordy(value: &[u8]) -> bool {
    let (mut runs, mut letters, mut run) = (0usize, 0usize, 0usize);
    let mut prev: Option<u8> = None;
    for &c in value {
        let starts = prev.is_none_or(|p| {
            !c.is_ascii_alphabetic() || !p.is_ascii_alphabetic() || (p.is_ascii_lowercase() && c.is_ascii_uppercase())
        });
        if starts && run > 0 {
            runs += 1;
            letters += run;
            run = 0;
        }
        if c.is_ascii_alphabetic() {
            run += 1;
        }
        prev = Some(c);
    }
    if run > 0 {
        runs += 1;
        letters += run;
    }
    runs > 0 && letters * 10 >= runs * 40
}

/// Text like `snake_case_words` or `kebab-words`: a name, not a key.
fn prose_like_value(value: &[u8]) -> bool {
    value
        .split(|c| matches!(c, b'_' | b'-' | b'.' | b'/'))
        .all(|w| w.iter().all(u8::is_ascii_lowercase) || w.iter().all(u8::is_ascii_digit))
}

fn is_uuid(v: &[u8]) -> bool {
    v.len() == 36
        && v.iter()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

/// A git object id or a SHA-256 in hex (with or without an `sha256:` style prefix).
fn is_hash(v: &[u8]) -> bool {
    let hex = v.rsplit(|c| *c == b':' || *c == b'-').next().unwrap_or(v);
    matches!(hex.len(), 40 | 64 | 128) && hex.iter().all(u8::is_ascii_hexdigit)
        || v.starts_with(b"sha512-")
        || v.starts_with(b"sha256-")
        || v.starts_with(b"sha1-")
}

fn is_version(v: &[u8]) -> bool {
    let v = v.strip_prefix(b"v").unwrap_or(v);
    v.first().is_some_and(u8::is_ascii_digit) && v.iter().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+'))
}

/// Basic credentials are `user:password` in base64: whole quads that decode to a
/// colon, not a word (`Basic understanding`).
fn basic_credentials(b64: &[u8]) -> bool {
    b64.len().is_multiple_of(4)
        && decode_base64(b64).is_some_and(|d| d.contains(&b':') && d.iter().all(|c| !c.is_ascii_control()))
}

fn decode_base64(s: &[u8]) -> Option<Vec<u8>> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for quad in s.chunks(4) {
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = n << 6 | u32::from(val(c)?);
        }
        n <<= 6 * pad as u32;
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_how_sure_they_are() {
        for strong in [
            "password",
            "DB_PASSWORD",
            "api_key",
            "apiKey",
            "SecretAccessKey",
            "client_secret",
            "GITHUB_TOKEN",
            "_authToken",
            "x-api-key",
            "accessToken",
            "PGPASSWORD",
        ] {
            assert_eq!(strength(strong.as_bytes()), Strength::Strong, "{strong}");
        }
        for weak in ["key", "token", "Key", "auth", "sort_key"] {
            assert_eq!(strength(weak.as_bytes()), Strength::Weak, "{weak}");
        }
        for none in [
            "max_tokens",
            "input_tokens",
            "key_file",
            "author",
            "keyboard",
            "token_type",
            "password_file",
            "api_key_env",
            "secret_name",
            "keys",
        ] {
            assert_eq!(strength(none.as_bytes()), Strength::None, "{none}");
        }
    }

    #[test]
    fn basic_needs_user_and_password() {
        assert!(basic_credentials(b"dXNlcjpwYXNz"));
        assert!(!basic_credentials(b"understanding"));
        assert!(!basic_credentials(b"SGVsbG8gV29ybGQh"));
    }
}

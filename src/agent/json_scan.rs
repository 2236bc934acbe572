//! A strict reader of one JSON text, field by field, for a parser's fast path on the
//! lines that make up nearly all of a stream: strings are borrowed from the line
//! (unescaped by `serde_json` when they have escapes), values that are not read are
//! skipped, and nothing is allocated but what the caller asks for (an unescaped
//! string, a `Value`).
//!
//! It owns one promise: it accepts no more than `serde_json` does. Every method
//! answers `None` on anything it is unsure of, and the caller then falls back to
//! `serde_json`: a key with an escape, a `\u` escape in a string read (unless
//! `serde_json` unescapes it), control characters, a number off the JSON grammar,
//! nesting past `DEPTH`, trailing text. Skipped strings are checked as `serde_json`
//! checks ignored ones: escapes well formed, `\u` with four hex digits, surrogates
//! unpaired or not.

use std::borrow::Cow;

/// How deep a skipped value may nest before the reader gives up on the line.
const DEPTH: u32 = 32;

pub(crate) struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(self.at) {
            self.at += 1;
        }
        bytes.get(self.at).copied()
    }

    /// Consumes `byte` if it comes next (after whitespace).
    #[inline]
    fn eat(&mut self, byte: u8) -> bool {
        // Agents write compact JSON: look before skipping whitespace.
        let next = self.text.as_bytes().get(self.at) == Some(&byte) || self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    #[inline]
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.text.as_bytes()[self.at..].starts_with(word.as_bytes()).then(|| self.at += word.len())
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        (self.peek().is_none()).then_some(())
    }

    /// Consumes a `null` if one comes next.
    #[inline]
    pub(crate) fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.word("null").is_some()
    }

    /// An object; `member` gets each key and must consume its value. The keys in
    /// `names`, the ones the caller reads, are looked for first (no scan for the
    /// closing quote); which are listed changes only the speed.
    #[inline(always)]
    pub(crate) fn object<const N: usize>(
        &mut self,
        names: &[&'a str; N],
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.expect(b'{')?;
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.expect(b'"')?;
            let key = self.key(names)?;
            self.expect(b':')?;
            member(self, key)?;
            if !self.eat(b',') {
                return self.expect(b'}');
            }
        }
    }

    /// The rest of a key after its opening quote: one of `names` when its bytes and
    /// the closing quote come next (such a key has no escape to read), else as the
    /// scan finds it; `None` for a key with an escape.
    #[inline(always)]
    fn key<const N: usize>(&mut self, names: &[&'a str; N]) -> Option<&'a str> {
        let rest = self.text.as_bytes().get(self.at..)?;
        for &name in names {
            if rest.get(name.len()) == Some(&b'"') && rest.get(..name.len()) == Some(name.as_bytes()) {
                self.at += name.len() + 1;
                return Some(name);
            }
        }
        let (key, escaped) = self.string_body()?;
        (!escaped).then_some(key)
    }

    /// An array; `item` must consume each element.
    pub(crate) fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.expect(b'[')?;
        if self.eat(b']') {
            return Some(());
        }
        loop {
            item(self)?;
            if !self.eat(b',') {
                return self.expect(b']');
            }
        }
    }

    /// A string, unescaped.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.at - 1;
        match self.string_body()? {
            (s, false) => Some(Cow::Borrowed(s)),
            (_, true) => unescape(&self.text[start..self.at]),
        }
    }

    /// A string or `null`, as `Option<&str>` reads it.
    #[inline(always)]
    pub(crate) fn string_or_null(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.null() { Some(None) } else { self.string().map(Some) }
    }

    /// The rest of a string after its opening quote, escapes checked as an ignored
    /// string's, and whether it had any.
    #[inline(always)]
    fn string_body(&mut self) -> Option<(&'a str, bool)> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut at = start;
        let mut escaped = false;
        loop {
            at += plain_run(bytes.get(at..)?);
            match *bytes.get(at)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    at += match *bytes.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' if bytes.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                        _ => return None,
                    };
                }
                _ => return None, // a control character
            }
        }
        self.at = at + 1;
        Some((&self.text[start..at], escaped))
    }

    /// Any value as a `serde_json::Value`, which reads it once the skipper took it
    /// (so that it nests no deeper than [`DEPTH`] here either).
    pub(crate) fn value(&mut self) -> Option<serde_json::Value> {
        self.peek()?;
        let start = self.at;
        self.skip()?;
        serde_json::from_str(&self.text[start..self.at]).ok()
    }

    /// Any value, unread.
    pub(crate) fn skip(&mut self) -> Option<()> {
        self.skip_nested(DEPTH)
    }

    fn skip_nested(&mut self, depth: u32) -> Option<()> {
        let depth = depth.checked_sub(1)?;
        match self.peek()? {
            b'{' => self.object(&[], |s, _| s.skip_nested(depth)),
            b'[' => self.array(|s| s.skip_nested(depth)),
            b'"' => {
                self.at += 1;
                self.string_body().map(drop)
            }
            b'n' => self.word("null"),
            b't' => self.word("true"),
            b'f' => self.word("false"),
            _ => self.number(),
        }
    }

    /// A number on the JSON grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let bytes = self.text.as_bytes();
        let digits = |at: &mut usize| {
            let start = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            (*at > start).then_some(())
        };
        let mut at = self.at + usize::from(bytes.get(self.at) == Some(&b'-'));
        if bytes.get(at) == Some(&b'0') {
            at += 1;
        } else {
            digits(&mut at)?;
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            digits(&mut at)?;
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            at += usize::from(matches!(bytes.get(at), Some(b'+' | b'-')));
            digits(&mut at)?;
        }
        self.at = at;
        Some(())
    }
}

/// A quoted string with escapes: `serde_json` decides what they mean (and refuses
/// lone surrogates).
#[cold]
fn unescape(quoted: &str) -> Option<Cow<'_, str>> {
    serde_json::from_str(quoted).ok().map(Cow::Owned)
}

/// How many bytes from the start need no attention in a string: no quote, backslash
/// or control character. Eight at a time, as `serde_json` does: a byte's high bit
/// is set in `(x - 0x01…) & !x & 0x80…` where `x` has a zero byte, and the lowest
/// one marks the first such byte exactly.
#[inline(always)]
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut at = 0;
    while let Some(chunk) = bytes[at..].first_chunk::<8>() {
        let x = u64::from_le_bytes(*chunk);
        let hits = zero(x ^ (ONES * u64::from(b'"')))
            | zero(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH);
        if hits != 0 {
            return at + hits.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    at + bytes[at..].iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(bytes.len() - at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader's verdict on a whole text as one skipped value.
    fn skips(text: &str) -> bool {
        let mut s = Scan::new(text);
        s.skip().and_then(|()| s.end()).is_some()
    }

    #[test]
    fn skips_no_more_than_serde_json_ignores() {
        let texts = [
            "null",
            "true",
            "false",
            "nul",
            "tru",
            "0",
            "-0",
            "01",
            "-",
            "1.",
            "1.5",
            ".5",
            "1e5",
            "1E+5",
            "1e-5",
            "1e",
            "1e+",
            "-1.5e300",
            "1e400",
            "+1",
            "\"\"",
            "\"a\\\"b\"",
            "\"\\ud83d\"",
            "\"\\uZZZZ\"",
            "\"\\u12\"",
            "\"\\x\"",
            "\"tab\there\"",
            "\"\u{7f}\"",
            "\"é\"",
            "[]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:1}",
            "{\"a\":1}x",
            " [ 1 , { \"b\" : [ ] } ] ",
            "[[[[[[[[[[]]]]]]]]]]",
            "\"a",
            "[",
        ];
        for text in texts {
            let serde = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
            assert!(!skips(text) || serde, "skipped what serde_json refuses: {text}");
            assert_eq!(skips(text), serde, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
        assert!(!skips(&deep), "nesting past DEPTH is refused");
    }

    #[test]
    fn the_plain_run_stops_at_the_first_byte_that_needs_attention() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).unwrap_or(b.len());
        for stop in [b'"', b'\\', 0, 0x1f, b'\n'] {
            for len in 0..20 {
                for at in 0..=len {
                    // Bytes on both sides of the stop that a borrow could misread.
                    let mut bytes: Vec<u8> = (0..len).map(|i| [0x20, 0x21, 0x7f, 0x80, 0xff, b'a'][i % 6]).collect();
                    bytes.insert(at, stop);
                    bytes.extend([stop, 0x20]);
                    assert_eq!(plain_run(&bytes), naive(&bytes), "{bytes:?}");
                    assert_eq!(plain_run(&bytes[..at]), at);
                }
            }
        }
    }

    #[test]
    fn the_keys_looked_for_first_change_no_answer() {
        // Each object's keys as `member` gets them, and the reader's verdict.
        fn keys<const N: usize>(text: &str, names: &[&str; N]) -> (Vec<String>, bool) {
            let (mut s, mut seen) = (Scan::new(text), Vec::new());
            let ok = s.object(names, |s, key| {
                seen.push(key.to_owned());
                s.skip()
            });
            (seen, ok.and_then(|()| s.end()).is_some())
        }
        let texts = [
            r#"{"type":1,"text":2,"types":3,"typ":4,"t":5,"":6}"#,
            r#"{"typ\u0065":1}"#,
            r#"{"type\"":1}"#,
            r#"{"type"#,
            r#"{"type""#,
            "{\"type\" :1, \"text\"\t:2}",
            "{\"te\u{1}xt\":1}",
            r#"{"text"}"#,
            r#"{"tex"#,
            "{\"t\u{e9}xt\":1,\"text\u{e9}\":2}",
        ];
        for text in texts {
            let plain = keys(text, &[]);
            assert_eq!(keys(text, &["type", "text"]), plain, "{text}");
            assert_eq!(keys(text, &["text", "t", "", "types"]), plain, "{text}");
        }
        assert_eq!(keys(texts[0], &["type"]).0, ["type", "text", "types", "typ", "t", ""]);
    }

    #[test]
    fn strings_are_borrowed_unless_escaped() {
        let mut s = Scan::new(r#""plain" "a\nb\u00e9" "\ud83d" null 5"#);
        assert!(matches!(s.string(), Some(Cow::Borrowed("plain"))));
        assert_eq!(s.string().as_deref(), Some("a\nbé"));
        assert_eq!(s.string(), None, "a lone surrogate is refused as serde_json refuses it");
        let mut s = Scan::new("null 5");
        assert_eq!(s.string_or_null(), Some(None));
        assert_eq!(s.string_or_null(), None);
    }
}

//! Text line by line, with the little a line must know of the lines before it: a
//! private key's body runs over many lines after its `BEGIN` line, and a secret cut
//! by a line break (a terminal's wrap, `fold`, a log line limit) goes on at the start
//! of the next line. [`LineState`] carries exactly that from line to line, so an
//! agent's output can be redacted as it streams (the attempt log, [`Stream`]) and a
//! whole text ([`text_hits`]) the same way.
//!
//! What carries over:
//!
//! * a `BEGIN … PRIVATE KEY` line without its `END`: the lines after it are hidden
//!   while they look like a key's body (base64, its headers), up to the `END` line;
//! * a secret that reaches the end of its line: the next line's first word is hidden
//!   too when it looks random (a wrapped key's second half);
//! * a line that ends in a token's prefix cut short (`ghp_0123`), or in a secret's
//!   name and its `=`: the first part is hidden, and so is the next line's first word.
//!
//! A line's cost when it holds nothing: the matcher's one pass over its anchors'
//! heads, a search for a backslash, and the checks of the state (two fields).

use std::borrow::Cow;
use std::sync::Arc;

use super::matcher::{self, Hit};
use super::special::{self, Strength};
use super::values::{self, Values};
use super::{REDACTED, escapes};

/// How many lines a private key's body may take before ralph stops treating what
/// follows as one (an RSA 8192 key is about 100).
const MAX_KEY_LINES: u32 = 400;

/// What the next line's start owes to the end of this one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Carry {
    #[default]
    None,
    /// A secret reached the end of the line: the next line's first word is its rest
    /// when it looks random.
    Maybe,
    /// The line ended in a token's prefix or a secret's name: the next line's first
    /// word is the secret.
    Surely,
}

/// What one line leaves for the next.
#[derive(Debug, Clone, Default)]
pub(crate) struct LineState {
    carry: Carry,
    /// Inside a private key's body: how many of its lines came so far.
    key_lines: Option<u32>,
}

/// Bytes a token (and so a cut one's rest) is made of.
fn token_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'/' | b'=' | b'.' | b'~')
}

/// A line of a private key's body or headers (`Proc-Type: 4,ENCRYPTED`).
fn key_body(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    !t.is_empty()
        && t.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b':' | b',' | b' ' | b'-'))
}

impl LineState {
    /// The ranges to hide in `line` (one line, without its newline), given what
    /// came before; `decode`: read JSON escapes too (off inside a decoded view).
    pub(crate) fn hits(&mut self, line: &[u8], values: &Values, decode: bool, out: &mut Vec<Hit>) {
        let body = line.strip_suffix(b"\r").unwrap_or(line);
        let first = out.len();
        if let Some(n) = self.key_lines {
            let key = matcher::rule_index(super::rules::Special::PrivateKey)
                .map_or(matcher::What::Value, matcher::What::Rule);
            if let Some(end) = special::private_key_end(body) {
                push_trimmed(out, body, 0, end, key);
                self.key_lines = None;
            } else if key_body(body) && n < MAX_KEY_LINES {
                push_trimmed(out, body, 0, body.len(), key);
                self.key_lines = Some(n + 1);
                self.carry = Carry::None;
                return;
            } else {
                self.key_lines = None;
            }
        }
        let carried = self.continuation(body, out);
        let anchored = matcher::hits(body, out);
        values.hits(body, out);
        if decode && let Some(d) = escapes::decode(body) {
            let mut inner = LineState::default();
            let mut found = Vec::new();
            let mut start = 0;
            for piece in d.text.split(|&c| c == b'\n') {
                let before = found.len();
                inner.hits(piece, values, false, &mut found);
                for h in &mut found[before..] {
                    (h.start, h.end) = d.raw(start + h.start, start + h.end);
                }
                start += piece.len() + 1;
            }
            out.extend(found);
        }
        if anchored && self.key_lines.is_none() && special::opens_private_key(body) {
            self.key_lines = Some(0);
        }
        self.carry = self.next_carry(body, carried, anchored, first, out);
    }

    /// The start of `body` that ends what the last line began, if it owes one.
    fn continuation(&mut self, body: &[u8], out: &mut Vec<Hit>) -> Option<usize> {
        let carry = std::mem::take(&mut self.carry);
        if carry == Carry::None {
            return None;
        }
        let head = body.iter().position(|&c| !token_byte(c)).unwrap_or(body.len());
        let rest = &body[..head];
        let owed = match carry {
            Carry::Surely => head > 0,
            _ => head >= 8 && special::looks_generated(rest),
        };
        owed.then(|| {
            out.push(Hit { start: 0, end: head, what: matcher::What::Cut });
            head
        })
    }

    fn next_carry(
        &self,
        body: &[u8],
        carried: Option<usize>,
        anchored: bool,
        first: usize,
        out: &mut Vec<Hit>,
    ) -> Carry {
        if self.key_lines.is_some() {
            return Carry::None;
        }
        let end = body.len();
        if carried == Some(end) && end > 0 {
            // The whole line went on what the last one began: so may the next.
            return Carry::Maybe;
        }
        if out[first..].iter().any(|h| h.end == end && end > 0) {
            return Carry::Maybe;
        }
        // Both carries below need an anchor in the line (a token's prefix, a
        // secret's name): a line without one costs no look at its last word.
        if !anchored {
            return Carry::None;
        }
        // A token's prefix cut short at the end of the line (a sentence's full stop
        // is no part of it).
        let word_end = body.iter().rposition(|&c| c != b'.' && c != b',').map_or(0, |i| i + 1);
        let start = body[..word_end].iter().rposition(|&c| !token_byte(c)).map_or(0, |i| i + 1);
        if word_end == end
            && start < end
            && !out[first..].iter().any(|h| h.end > start)
            && matcher::is_token_prefix(&body[start..])
        {
            out.push(Hit { start, end, what: matcher::What::Cut });
            return Carry::Surely;
        }
        // A secret's name and its `=` or `:` at the end: the value is on the next line.
        let trimmed = body.trim_ascii_end();
        if let Some(&sep) = trimmed.last()
            && matches!(sep, b'=' | b':')
        {
            let name = &trimmed[..trimmed.len() - 1];
            let name = name.trim_ascii_end();
            let name = name.strip_suffix(b"\"").or_else(|| name.strip_suffix(b"'")).unwrap_or(name);
            let from = name
                .iter()
                .rposition(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')))
                .map_or(0, |i| i + 1);
            if special::strength(&name[from..]) == Strength::Strong {
                return Carry::Surely;
            }
        }
        Carry::None
    }
}

fn push_trimmed(out: &mut Vec<Hit>, line: &[u8], start: usize, end: usize, what: matcher::What) {
    let (start, end) = special::trim(line, start, end);
    if start < end {
        out.push(Hit { start, end, what });
    }
}

/// The ranges to hide in a whole text, line by line; a private key's body whose
/// `BEGIN` line is not in the text (the end of a longer output) is found backwards
/// from its `END` line.
pub(crate) fn text_hits(text: &[u8], values: &Values, out: &mut Vec<Hit>) {
    let mut state = LineState::default();
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    let mut scratch = Vec::new();
    for line in text.split(|&c| c == b'\n') {
        let in_key = state.key_lines.is_some();
        scratch.clear();
        state.hits(line, values, true, &mut scratch);
        out.extend(scratch.iter().map(|h| Hit { start: h.start + start, end: h.end + start, what: h.what }));
        if !in_key
            && let Some(end) = special::private_key_end(line)
            && !line[..end].windows(10).any(|w| w == b"-----BEGIN")
        {
            headless_key(text, &lines, out);
        }
        lines.push((start, start + line.len()));
        start += line.len() + 1;
    }
}

/// The body lines before an `END` line whose `BEGIN` is not in the text.
fn headless_key(text: &[u8], lines: &[(usize, usize)], out: &mut Vec<Hit>) {
    let what = matcher::rule_index(super::rules::Special::PrivateKey).map_or(matcher::What::Value, matcher::What::Rule);
    for &(s, e) in lines.iter().rev().take(MAX_KEY_LINES as usize) {
        let line = text[s..e].strip_suffix(b"\r").unwrap_or(&text[s..e]);
        if !key_body(line) {
            break;
        }
        push_trimmed(out, text, s, s + line.len(), what);
    }
}

/// `text` with `hits` replaced by [`REDACTED`] (overlapping or touching hits by
/// one), borrowed when there are none.
pub(crate) fn apply<'a>(text: &'a [u8], hits: &mut [Hit]) -> Cow<'a, [u8]> {
    if hits.is_empty() {
        return Cow::Borrowed(text);
    }
    hits.sort_unstable_by_key(|h| h.start);
    let mut out = Vec::with_capacity(text.len() + REDACTED.len());
    // Copied up to here; `Some(end)` while the last thing written is a redaction.
    let mut copied = 0;
    let mut open = false;
    for h in hits.iter() {
        let end = h.end.min(text.len());
        if end <= h.start || end <= copied {
            continue;
        }
        if h.start > copied || !open {
            out.extend_from_slice(&text[copied..h.start.max(copied)]);
            out.extend_from_slice(REDACTED.as_bytes());
        }
        copied = end;
        open = true;
    }
    out.extend_from_slice(&text[copied..]);
    Cow::Owned(out)
}

/// An agent's stdout or stderr, redacted line by line as it arrives (the attempt
/// log): one per stream, since each has its own line breaks.
pub(crate) struct Stream {
    state: LineState,
    values: (Arc<Values>, u64),
    hits: Vec<Hit>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("state", &self.state).finish_non_exhaustive()
    }
}

impl Default for Stream {
    fn default() -> Self {
        Self { state: LineState::default(), values: values::snapshot(), hits: Vec::new() }
    }
}

impl Stream {
    /// One whole line (without its newline).
    pub(crate) fn line<'a>(&mut self, line: &'a [u8]) -> Cow<'a, [u8]> {
        self.refresh();
        self.hits.clear();
        self.state.hits(line, &self.values.0, true, &mut self.hits);
        apply(line, &mut self.hits)
    }

    /// A piece of a line too long to hold: redacted alone (pieces are cut between
    /// words, see `process::lines`), the state left as it is.
    pub(crate) fn piece<'a>(&mut self, piece: &'a [u8]) -> Cow<'a, [u8]> {
        self.refresh();
        self.hits.clear();
        LineState::default().hits(piece, &self.values.0, true, &mut self.hits);
        apply(piece, &mut self.hits)
    }

    fn refresh(&mut self) {
        if !values::current(self.values.1) {
            self.values = values::snapshot();
        }
    }
}

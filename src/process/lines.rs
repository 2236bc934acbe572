//! Reading an agent's stdout or stderr as lines of bytes, whatever the bytes: an
//! invalid UTF-8 byte never ends the reading (the done signal after it must still
//! be seen, and an unread pipe would block the agent), and a line of any length
//! costs bounded memory: past [`LONG_LINE`] its bytes are handed on in pieces for
//! the log and the parser gets a [`Compactor`]'s summary.
//!
//! Reading and handing on are split so that a flood costs one wakeup per read, not
//! one per line: [`LineReader::fill`] is cancel-safe (its only await is one `read`
//! into the buffer's free end), so it can sit in a `select!` with the child's exit
//! and the clocks, and [`LineReader::pop`] then hands out every item already read,
//! as slices of the one buffer (no allocation per line).

use std::borrow::Cow;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::long_line::{Compactor, LONG_LINE};

/// Bytes read per call, at least.
const READ_CHUNK: usize = 64 * 1024;
/// A long line's raw bytes are handed on in pieces of about this size.
const PIECE: usize = 64 * 1024;
/// How far back from a piece's end a cut between words is looked for, so that a
/// credential is not split between two pieces (each piece is redacted alone).
const CUT_LOOKBACK: usize = 4 * 1024;

/// What the reader produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// A whole line (without its newline), as received.
    Line(&'a [u8]),
    /// Raw bytes of a line too long to hold, for the log only.
    LongPart(&'a [u8]),
    /// The end of a long line: what the parser should see of it.
    LongEnd(String),
}

/// Splits a byte stream into [`Item`]s.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    /// Bytes read; `buf[pos..end]` are not handed on yet. Its length only grows
    /// (to at most a long line's threshold plus two reads) and `end` marks the data.
    buf: Vec<u8>,
    pos: usize,
    /// Searched for a newline (and, for a long line, given to the compactor) up
    /// to here.
    scanned: usize,
    end: usize,
    long: Option<Compactor>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self { inner, buf: vec![0; READ_CHUNK], pos: 0, scanned: 0, end: 0, long: None, eof: false }
    }

    /// Reads once, unless an item is waiting already. A read error ends the stream
    /// like its end does, after whatever was read before it.
    pub(crate) async fn fill(&mut self) {
        if self.eof || self.ready() {
            return;
        }
        self.make_room();
        match self.inner.read(&mut self.buf[self.end..]).await {
            Ok(0) | Err(_) => self.eof = true,
            Ok(n) => self.end += n,
        }
    }

    /// The stream ended and every item of it was handed on.
    pub(crate) fn done(&self) -> bool {
        self.eof && self.long.is_none() && self.pos == self.end
    }

    /// Whether [`pop`](Self::pop) has something without a read.
    fn ready(&self) -> bool {
        let unsent = self.end - self.pos;
        self.long.is_some() && unsent >= PIECE + NAME_REACH || self.buf[self.scanned..self.end].contains(&b'\n')
    }

    /// Moves the unsent bytes to the front when the free end is short of a read,
    /// and grows the buffer when they fill it (a line up to [`LONG_LINE`]).
    /// Twice a read's room when it grows, so that a line arriving a byte at a time
    /// is moved once per [`READ_CHUNK`] bytes, not once per read.
    fn make_room(&mut self) {
        if self.buf.len() - self.end >= READ_CHUNK {
            return;
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            (self.scanned, self.end, self.pos) = (self.scanned - self.pos, self.end - self.pos, 0);
        }
        if self.buf.len() - self.end < READ_CHUNK {
            self.buf.resize(self.end + 2 * READ_CHUNK, 0);
        }
    }

    /// The next item read, if any.
    pub(crate) fn pop(&mut self) -> Option<Item<'_>> {
        let newline = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]).map(|i| self.scanned + i);
        let line_end = newline.unwrap_or(self.end);
        let Some(long) = self.long.as_mut() else {
            if let Some(i) = newline {
                let start = std::mem::replace(&mut self.pos, i + 1);
                self.scanned = self.pos;
                return Some(Item::Line(&self.buf[start..i]));
            }
            self.scanned = self.end;
            if self.end - self.pos > LONG_LINE {
                self.long = Some(Compactor::new());
                self.scanned = self.pos;
                return self.pop();
            }
            if self.eof && self.pos < self.end {
                let start = std::mem::replace(&mut self.pos, self.end);
                return Some(Item::Line(&self.buf[start..self.end]));
            }
            return None;
        };
        // A long line: the compactor sees each byte once, the log gets it in pieces.
        long.push(&self.buf[self.scanned..line_end]);
        self.scanned = line_end;
        let (unsent, ended) = (line_end - self.pos, newline.is_some() || self.eof);
        // A piece is cut with what follows it in view (a secret's name across the cut).
        if unsent >= PIECE + NAME_REACH || (ended && unsent > 0) {
            let size = unsent.min(PIECE);
            let in_view = &self.buf[self.pos..self.pos + unsent.min(PIECE + NAME_REACH)];
            let cut = if ended && size == unsent { size } else { word_cut(in_view, size) };
            let start = self.pos;
            self.pos += cut;
            return Some(Item::LongPart(&self.buf[start..self.pos]));
        }
        if !ended {
            return None;
        }
        if newline.is_some() {
            self.pos = line_end + 1;
            self.scanned = self.pos;
        }
        self.long.take().map(|long| Item::LongEnd(long.finish()))
    }
}

/// How far from a cut a secret's name still counts as the name of what follows it:
/// a key of up to 64 bytes, its quotes, blanks and separator.
const NAME_REACH: usize = 128;

/// Where to cut `bytes` so that no word, nor a credential and its name, is split
/// (each piece is redacted alone: a cut in `"password": "` | `hunter2"` would leave
/// the value in the log). After the last separator in the final [`CUT_LOOKBACK`]
/// bytes with no secret's name near it; else just before the first such name
/// there, so that the name and its value go on together; else at `size`.
/// `bytes` go on past `size` as far as they were read, for names across the cut.
fn word_cut(bytes: &[u8], size: usize) -> usize {
    let size = size.min(bytes.len());
    let from = size.saturating_sub(CUT_LOOKBACK);
    let seen = from.saturating_sub(NAME_REACH);
    let names: Vec<usize> = crate::secrets::anchor_starts(&bytes[seen..(size + NAME_REACH).min(bytes.len())])
        .into_iter()
        .map(|at| seen + at)
        .collect();
    let is_separator = |b: u8| b.is_ascii_whitespace() || matches!(b, b'"' | b',' | b'}' | b']' | b'\'');
    let near = |cut: usize| names.iter().any(|&name| name + NAME_REACH > cut && name < cut + NAME_REACH);
    let mut separators = (from..size).rev().filter(|&i| is_separator(bytes[i])).map(|i| i + 1);
    if let Some(cut) = separators.find(|&cut| !near(cut)) {
        return cut;
    }
    // Before the whole key the name is part of, and its opening quote.
    let Some(mut start) = names.iter().copied().find(|&name| name >= from) else { return size };
    while start > from && (bytes[start - 1].is_ascii_alphanumeric() || matches!(bytes[start - 1], b'_' | b'-' | b'.')) {
        start -= 1;
    }
    if start > from && matches!(bytes[start - 1], b'"' | b'\'') {
        start -= 1;
    }
    if start > 0 && start < size { start } else { size }
}

/// A line as text, without a copy when it is valid UTF-8; an invalid byte becomes U+FFFD.
/// `str::from_utf8` first: it checks ASCII a word at a time, where the lossy
/// decoder's chunks go byte by byte (a flood's every line comes through here).
pub(crate) fn text(bytes: &[u8]) -> Cow<'_, str> {
    std::str::from_utf8(bytes).map_or_else(|_| String::from_utf8_lossy(bytes), Cow::Borrowed)
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;

    /// An [`Item`] kept past the reader's next call.
    #[derive(Debug, PartialEq, Eq)]
    enum Got {
        Line(Vec<u8>),
        Part(Vec<u8>),
        End(String),
    }

    /// Input handed out at most `step` bytes per read, like a pipe under a slow writer.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            out: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = self.step.min(out.remaining()).min(self.data.len() - self.at);
            out.put_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    async fn items_in_steps(data: Vec<u8>, step: usize) -> Vec<Got> {
        let mut r = LineReader::new(Trickle { data, at: 0, step });
        let mut out = Vec::new();
        while !r.done() {
            r.fill().await;
            while let Some(item) = r.pop() {
                out.push(match item {
                    Item::Line(b) => Got::Line(b.to_vec()),
                    Item::LongPart(b) => Got::Part(b.to_vec()),
                    Item::LongEnd(s) => Got::End(s),
                });
            }
        }
        out
    }

    async fn items(input: Vec<u8>) -> Vec<Got> {
        items_in_steps(input, usize::MAX).await
    }

    #[tokio::test]
    async fn invalid_utf8_is_a_line_like_any_other() {
        let out = items(b"a\xff\xfeb\n{\"done\":1}\nlast".to_vec()).await;
        assert_eq!(
            out,
            vec![Got::Line(b"a\xff\xfeb".to_vec()), Got::Line(b"{\"done\":1}".to_vec()), Got::Line(b"last".to_vec())]
        );
    }

    #[tokio::test]
    async fn a_long_line_comes_in_pieces_then_its_summary() {
        let long = format!("{{\"text\":\"{}<promise>DONE</promise>\"}}", "w ".repeat(LONG_LINE));
        let input = format!("before\n{long}\nafter\n").into_bytes();
        let out = items(input).await;
        assert_eq!(out.first(), Some(&Got::Line(b"before".to_vec())));
        assert_eq!(out.last(), Some(&Got::Line(b"after".to_vec())));
        let raw: Vec<u8> = out
            .iter()
            .filter_map(|i| match i {
                Got::Part(p) => Some(p.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(raw, long.as_bytes());
        assert!(out.iter().all(|i| !matches!(i, Got::Part(p) if p.len() > PIECE)));
        let Some(Got::End(summary)) = out.get(out.len() - 2) else { panic!("no summary") };
        assert!(summary.ends_with("<promise>DONE</promise>\"}"), "{summary}");
    }

    #[tokio::test]
    async fn the_items_do_not_depend_on_how_the_bytes_arrive() {
        let long = format!("{}<promise>DONE</promise>", "word ".repeat(LONG_LINE / 4));
        let mut input = Vec::new();
        for i in 0..3000 {
            input.extend_from_slice(format!("line {i} {}\n", "x".repeat(i % 300)).as_bytes());
        }
        input.extend_from_slice(format!("{long}\nafter\n\nno newline at the end").as_bytes());
        let whole = items(input.clone()).await;
        assert_eq!(whole.iter().filter(|i| matches!(i, Got::End(_))).count(), 1);
        assert_eq!(whole.last(), Some(&Got::Line(b"no newline at the end".to_vec())));
        for step in [1, 7, 4096, READ_CHUNK - 1, READ_CHUNK + 3] {
            assert_eq!(items_in_steps(input.clone(), step).await, whole, "{step} bytes a read");
        }
    }

    #[test]
    fn a_credential_and_its_name_stay_in_one_piece() {
        // Each piece is redacted alone: a cut between a secret's name and its value
        // would leave the value in the log.
        let secrets = [
            r#" "password": "hunter2hunter2" "#,
            r#"{"api_key":"hunter2hunter2"}"#,
            " Authorization: Bearer hunter2hunter2hunter2 ",
            " API_KEY= hunter2hunter2 ",
        ];
        for secret in secrets {
            for filler in ["x", "y "] {
                // Every offset near the piece's end, a sample of the rest.
                for pad in (PIECE - CUT_LOOKBACK - 64..PIECE + 4).filter(|p| p % 13 == 0 || p + 200 > PIECE) {
                    let line = format!("{}{secret}{}", filler.repeat(pad), "z ".repeat(200));
                    let bytes = line.as_bytes();
                    let cut = word_cut(&bytes[..(PIECE + NAME_REACH).min(bytes.len())], PIECE);
                    let first = crate::secrets::redact_bytes(&bytes[..cut]).into_owned();
                    let second = crate::secrets::redact_bytes(&bytes[cut..]).into_owned();
                    for piece in [first, second] {
                        assert!(
                            memchr::memmem::find(&piece, b"hunter2").is_none(),
                            "{secret:?} after {pad} bytes of {filler:?}: cut at {cut}, the value reached the log"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn pieces_are_cut_between_words() {
        assert_eq!(word_cut(b"abc def ghi", 11), 8);
        assert_eq!(word_cut(b"abcdef", 6), 6);
    }

    #[test]
    fn a_line_reads_as_utf8_with_invalid_bytes_replaced() {
        for len in 0..40 {
            let line = vec![b'x'; len];
            assert!(matches!(text(&line), Cow::Borrowed(_)));
            for at in 0..len {
                for high in [0x80, 0xc3, 0xff] {
                    let mut line = line.clone();
                    line[at] = high;
                    assert_eq!(text(&line), String::from_utf8_lossy(&line));
                }
            }
        }
        assert_eq!(text("é\x7f".as_bytes()), "é\x7f");
    }
}

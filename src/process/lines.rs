//! Reading an agent's stdout or stderr as lines of bytes, whatever the bytes: an
//! invalid UTF-8 byte never ends the reading (the done signal after it must still
//! be seen, and an unread pipe would block the agent), and a line of any length
//! costs bounded memory: past [`LONG_LINE`] its bytes are handed on in pieces for
//! the log and the parser gets a [`Compactor`]'s summary.
//!
//! `next` is cancel-safe (its only await is one `read` into a scratch buffer), so
//! it can sit in a `select!` with the child's exit and the clocks.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::long_line::{Compactor, LONG_LINE};

/// Bytes read per call.
const READ_CHUNK: usize = 64 * 1024;
/// A long line's raw bytes are handed on in pieces of about this size.
const PIECE: usize = 64 * 1024;
/// How far back from a piece's end a cut between words is looked for, so that a
/// credential is not split between two pieces (each piece is redacted alone).
const CUT_LOOKBACK: usize = 4 * 1024;

/// What the reader produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// A whole line (without its newline), as received.
    Line(Vec<u8>),
    /// Raw bytes of a line too long to hold, for the log only.
    LongPart(Vec<u8>),
    /// The end of a long line: what the parser should see of it.
    LongEnd(String),
}

/// Splits a byte stream into [`Item`]s.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    scratch: Box<[u8]>,
    /// The incomplete line (normal mode) or the unsent raw bytes (long mode).
    buf: Vec<u8>,
    long: Option<Compactor>,
    pending: VecDeque<Item>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            buf: Vec::new(),
            long: None,
            pending: VecDeque::new(),
            eof: false,
        }
    }

    /// The next item; `None` at the end of the stream. A read error ends the
    /// stream too, after whatever was read before it.
    pub(crate) async fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            if self.eof {
                return self.flush();
            }
            match self.inner.read(&mut self.scratch).await {
                Ok(0) | Err(_) => self.eof = true,
                Ok(n) => {
                    let data = self.scratch[..n].to_vec();
                    self.feed(&data);
                }
            }
        }
    }

    fn flush(&mut self) -> Option<Item> {
        if self.long.is_some() {
            self.end_long();
            return self.pending.pop_front();
        }
        if self.buf.is_empty() {
            return None;
        }
        Some(Item::Line(std::mem::take(&mut self.buf)))
    }

    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let newline = data.iter().position(|b| *b == b'\n');
            let (part, rest) = match newline {
                Some(i) => (&data[..i], &data[i + 1..]),
                None => (data, &[][..]),
            };
            if let Some(long) = self.long.as_mut() {
                long.push(part);
                self.buf.extend_from_slice(part);
                self.send_pieces(false);
                if newline.is_some() {
                    self.end_long();
                }
            } else {
                self.buf.extend_from_slice(part);
                if newline.is_some() {
                    self.pending.push_back(Item::Line(std::mem::take(&mut self.buf)));
                } else if self.buf.len() > LONG_LINE {
                    let mut long = Compactor::new();
                    long.push(&self.buf);
                    self.long = Some(long);
                    self.send_pieces(false);
                }
            }
            data = rest;
        }
    }

    fn end_long(&mut self) {
        self.send_pieces(true);
        if let Some(long) = self.long.take() {
            self.pending.push_back(Item::LongEnd(long.finish()));
        }
    }

    /// Hands on the raw bytes of a long line in pieces cut between words.
    fn send_pieces(&mut self, all: bool) {
        while self.buf.len() >= PIECE || (all && !self.buf.is_empty()) {
            let end = self.buf.len().min(PIECE);
            let cut = if all && end == self.buf.len() { end } else { word_cut(&self.buf[..end]) };
            let rest = self.buf.split_off(cut);
            let piece = std::mem::replace(&mut self.buf, rest);
            self.pending.push_back(Item::LongPart(piece));
        }
    }
}

/// Where to cut `bytes` so that no word (nor credential) is split: after the last
/// separator in the final [`CUT_LOOKBACK`] bytes, or at the end when there is none.
fn word_cut(bytes: &[u8]) -> usize {
    let from = bytes.len().saturating_sub(CUT_LOOKBACK);
    bytes[from..]
        .iter()
        .rposition(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b',' | b'}' | b']' | b'\''))
        .map_or(bytes.len(), |i| from + i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn items(input: Vec<u8>) -> Vec<Item> {
        let mut r = LineReader::new(std::io::Cursor::new(input));
        let mut out = Vec::new();
        while let Some(item) = r.next().await {
            out.push(item);
        }
        out
    }

    #[tokio::test]
    async fn invalid_utf8_is_a_line_like_any_other() {
        let out = items(b"a\xff\xfeb\n{\"done\":1}\nlast".to_vec()).await;
        assert_eq!(
            out,
            vec![
                Item::Line(b"a\xff\xfeb".to_vec()),
                Item::Line(b"{\"done\":1}".to_vec()),
                Item::Line(b"last".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn a_long_line_comes_in_pieces_then_its_summary() {
        let long = format!("{{\"text\":\"{}<promise>DONE</promise>\"}}", "w ".repeat(LONG_LINE));
        let input = format!("before\n{long}\nafter\n").into_bytes();
        let out = items(input).await;
        assert_eq!(out.first(), Some(&Item::Line(b"before".to_vec())));
        assert_eq!(out.last(), Some(&Item::Line(b"after".to_vec())));
        let raw: Vec<u8> = out
            .iter()
            .filter_map(|i| match i {
                Item::LongPart(p) => Some(p.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(raw, long.as_bytes());
        assert!(out.iter().all(|i| !matches!(i, Item::LongPart(p) if p.len() > PIECE)));
        let Some(Item::LongEnd(summary)) = out.get(out.len() - 2) else { panic!("no summary") };
        assert!(summary.ends_with("<promise>DONE</promise>\"}"), "{summary}");
    }

    #[test]
    fn pieces_are_cut_between_words() {
        assert_eq!(word_cut(b"abc def ghi"), 8);
        assert_eq!(word_cut(b"abcdef"), 6);
    }
}

//! An attempt's log: the agent's output as received, byte for byte (invalid UTF-8
//! included), with credentials redacted and stderr lines marked, and bounded so that
//! a flood never fills the disk.
//!
//! The first half of `[logs] max_attempt_log` goes to `<stem>.log` (the head: how
//! the attempt started). Past it, output goes to tail segments `<stem>.log.1`,
//! `.2`, … of an eighth each; when four exist the oldest is deleted, and each new
//! segment starts with a marker saying how many bytes were cut before it. Writes
//! are buffered and flushed at least every [`FLUSH_EVERY`], so a kill -9 loses at
//! most that much of what the agent printed, and `tail -F` can follow the newest
//! segment. A log that cannot be written is given up on with a warning, never a
//! failed attempt.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use crate::state::redact::redact_bytes;

/// The longest a written byte waits in the buffer.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// Tail segments kept.
const SEGMENTS: usize = 4;

/// Where the agent's output is written.
#[derive(Debug)]
pub struct AttemptLog {
    path: PathBuf,
    head: u64,
    segment: u64,
    w: Option<BufWriter<File>>,
    /// Bytes in the file being written.
    written: u64,
    /// The current tail segment's number (0: the head file).
    number: u32,
    /// Tail segments on disk, oldest first, with their sizes.
    kept: VecDeque<(PathBuf, u64)>,
    cut: u64,
    /// When unflushed bytes were first written.
    dirty_since: Option<Instant>,
}

impl AttemptLog {
    /// Creates the log (owner-only, never through a symlink), at most `max` bytes.
    pub fn create(path: &Path, max: u64) -> Self {
        let w = match crate::state::private::create_file(path) {
            Ok(f) => Some(BufWriter::new(f)),
            Err(e) => {
                tracing::warn!("cannot write the attempt log {}: {e}", path.display());
                None
            }
        };
        Self {
            path: path.to_path_buf(),
            head: max / 2,
            segment: (max / 2 / SEGMENTS as u64).max(1),
            w,
            written: 0,
            number: 0,
            kept: VecDeque::new(),
            cut: 0,
            dirty_since: None,
        }
    }

    /// One whole line.
    pub fn line(&mut self, bytes: &[u8], stderr: bool) {
        self.part(bytes, stderr, true);
        self.end_line();
    }

    /// Part of a line too long to hold; `first` for its first piece.
    pub fn part(&mut self, bytes: &[u8], stderr: bool, first: bool) {
        if stderr && first {
            self.write(b"[stderr] ");
        }
        self.write(&redact_bytes(bytes));
    }

    pub fn end_line(&mut self) {
        self.write(b"\n");
    }

    /// When the buffer must be flushed next, if it holds anything.
    pub fn flush_at(&self) -> Option<Instant> {
        self.dirty_since.map(|t| t + FLUSH_EVERY)
    }

    pub fn flush(&mut self) {
        self.dirty_since = None;
        if let Some(w) = self.w.as_mut()
            && let Err(e) = w.flush()
        {
            tracing::warn!("stopped writing the attempt log: {e}");
            self.w = None;
        }
    }

    fn limit(&self) -> u64 {
        if self.number == 0 { self.head } else { self.segment }
    }

    fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && self.w.is_some() {
            if self.written >= self.limit() {
                self.rotate();
                continue;
            }
            let room = usize::try_from(self.limit() - self.written).unwrap_or(usize::MAX);
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.raw(now);
            bytes = rest;
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        let Some(w) = self.w.as_mut() else { return };
        if let Err(e) = w.write_all(bytes) {
            tracing::warn!("stopped writing the attempt log: {e}");
            self.w = None;
            return;
        }
        self.written += bytes.len() as u64;
        if let Some(segment) = self.kept.back_mut() {
            segment.1 += bytes.len() as u64;
        }
        self.dirty_since.get_or_insert_with(Instant::now);
    }

    /// Closes the current file and starts the next tail segment.
    fn rotate(&mut self) {
        if self.number == 0 {
            let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let note = format!("\n[ralph: the output goes on in {name}.1, {name}.2, …]\n");
            let _ = self.w.as_mut().map(|w| w.write_all(note.as_bytes()));
        }
        self.flush();
        if self.kept.len() == SEGMENTS
            && let Some((oldest, size)) = self.kept.pop_front()
        {
            let _ = std::fs::remove_file(&oldest);
            self.cut += size;
        }
        self.number += 1;
        let mut name = self.path.clone().into_os_string();
        name.push(format!(".{}", self.number));
        let path = PathBuf::from(name);
        self.written = 0;
        self.w = match crate::state::private::create_file(&path) {
            Ok(f) => Some(BufWriter::new(f)),
            Err(e) => {
                tracing::warn!("cannot write the attempt log {}: {e}", path.display());
                None
            }
        };
        self.kept.push_back((path, 0));
        if self.cut > 0 {
            let marker = format!("[ralph: {} bytes of output cut before this point]\n", self.cut);
            let _ = self.w.as_mut().map(|w| w.write_all(marker.as_bytes()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(dir: &Path) -> (u64, usize) {
        let mut size = 0;
        let mut count = 0;
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            size += e.metadata().unwrap().len();
            count += 1;
        }
        (size, count)
    }

    #[tokio::test]
    async fn a_flood_is_bounded_and_says_what_was_cut() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("attempt.log");
        let max = 64 * 1024;
        let mut log = AttemptLog::create(&path, max);
        let line = [b'x'; 99];
        for i in 0..20_000 {
            if i == 10 {
                log.line(b"early line", false);
            }
            log.line(&line, false);
        }
        log.line(b"the very last line", true);
        log.flush();
        let (size, count) = total(d.path());
        assert!(size <= max + 1024, "{size} bytes on disk");
        assert_eq!(count, 1 + SEGMENTS);
        let head = std::fs::read_to_string(&path).unwrap();
        assert!(head.contains("early line") && head.contains("goes on in attempt.log.1"));
        let last = std::fs::read_to_string(d.path().join(format!("attempt.log.{}", log.number))).unwrap();
        assert!(last.starts_with("[ralph: ") && last.contains("bytes of output cut"), "{}", &last[..60]);
        assert!(last.ends_with("[stderr] the very last line\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn written_bytes_are_flushed_within_the_flush_interval() {
        let d = tempfile::tempdir().unwrap();
        let mut log = AttemptLog::create(&d.path().join("a.log"), 1 << 20);
        assert_eq!(log.flush_at(), None);
        log.line(b"hello", false);
        assert_eq!(log.flush_at(), Some(Instant::now() + FLUSH_EVERY));
        log.flush();
        assert_eq!(log.flush_at(), None);
        assert_eq!(std::fs::read(d.path().join("a.log")).unwrap(), b"hello\n");
    }
}

//! An attempt's log: the agent's output as received, byte for byte (invalid UTF-8
//! included), with credentials redacted and stderr lines marked, and bounded so that
//! a flood never fills the disk.
//!
//! The first half of `[logs] max_attempt_log` (the head: how the attempt started)
//! is appended to the run's one `attempts.log`, after a line `==> <stem> <==`, and
//! `attempts.index` gets a line `<offset> <stem>` saying where that line starts: an
//! agent call creates no file. Past the head, output goes to tail segments
//! `<stem>.log.1`, `.2`, … of an eighth each; when four exist the oldest is deleted,
//! and each new segment starts with a marker saying how many bytes were cut before
//! it. A line ends in the file it started in unless it is longer than a segment.
//! Writes are buffered and flushed at least every [`FLUSH_EVERY`], so a kill -9
//! loses at most that much of what the agent printed, and `ralph logs -f` can
//! follow. Nothing is synced: a log is for a person, recovery never reads it. Runs
//! of older versions wrote each head to `<stem>.log`; [`heads`] reads both layouts.
//!
//! A full disk (ENOSPC, EDQUOT) is an outage here too, never a failed attempt and
//! never a stalled agent: the output keeps being read, what the disk refused stays
//! in memory (at most [`HELD_MAX`] more; beyond it a marker says how many bytes
//! were lost), the write is tried again with the disk backoff, and the log goes on
//! once space is back. The log reports it as [`DiskNews`], which the run journals as
//! `disk_full` and `disk_space_back`, and keeps trying after the attempt ends (the
//! run's full-disk wait). Any other write error gives the log up with a warning.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use super::disk;
use super::writes::{self, DiskNews};
use crate::secrets::Stream;

/// The longest a written byte waits in the buffer.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// Tail segments kept.
const SEGMENTS: usize = 4;
/// Bytes buffered before they are written, whatever the flush interval.
const BUFFER: usize = 64 * 1024;
/// Output held in memory while the disk is full, at most.
pub(crate) const HELD_MAX: usize = 1024 * 1024;
/// The run's heads, one after another, in its log directory.
const LOG: &str = "attempts.log";
/// Where each head starts in [`LOG`].
const INDEX: &str = "attempts.index";

/// Where the agent's output is written.
#[derive(Debug, Default)]
pub(crate) struct AttemptLog {
    path: PathBuf,
    /// `<stem>.log`, whose tail segments are `<stem>.log.N`.
    segments: PathBuf,
    /// The stem whose line of [`INDEX`] is still owed: a full disk refused it.
    index: Option<String>,
    head: u64,
    segment: u64,
    file: Option<File>,
    /// Bytes of the current file not written yet.
    buf: Vec<u8>,
    /// Bytes in the file being written (the buffer included).
    written: u64,
    /// The current tail segment's number (0: the head file).
    number: u32,
    /// Tail segments on disk, oldest first, with their sizes.
    kept: VecDeque<(PathBuf, u64)>,
    cut: u64,
    /// Whether the head ends with the note naming the tail segments.
    noted: bool,
    /// Whether the last byte written ended a line.
    at_line_start: bool,
    /// When unflushed bytes were first written.
    dirty_since: Option<Instant>,
    /// Set while the disk is full.
    full: Option<Full>,
    /// What the disk did, for the run's journal, oldest first.
    news: Vec<DiskNews>,
    /// The redaction of stdout and of stderr, each with what its last line left
    /// (a private key's body, a secret cut by a line break).
    redact: [Stream; 2],
    /// Unit tests: writes fail with ENOSPC while this file exists.
    #[cfg(test)]
    full_while: Option<PathBuf>,
}

/// The waiting out of a full disk.
#[derive(Debug)]
struct Full {
    tries: u32,
    retry_at: Instant,
    /// Output that came meanwhile, in order, bounded by [`HELD_MAX`].
    held: Vec<u8>,
    /// Bytes past the bound, dropped.
    lost: u64,
}

impl Full {
    fn hold(&mut self, bytes: &[u8]) {
        let room = HELD_MAX.saturating_sub(self.held.len()).min(bytes.len());
        self.held.extend_from_slice(&bytes[..room]);
        self.lost += (bytes.len() - room) as u64;
    }
}

impl AttemptLog {
    /// Starts the log of the attempt `stem` in the run's log directory `dir` (files
    /// owner-only, never through a symlink), at most `max` bytes: its head goes on
    /// at the end of [`LOG`], indexed.
    pub(crate) fn create(dir: &Path, stem: &str, max: u64) -> Self {
        let path = dir.join(LOG);
        let mut log = Self {
            segments: dir.join(format!("{stem}.log")),
            file: open(&path, crate::state::private::append_file),
            path,
            head: max / 2,
            segment: (max / 2 / SEGMENTS as u64).max(1),
            buf: separator(stem).into_bytes(),
            index: Some(stem.to_string()),
            at_line_start: true,
            ..Self::default()
        };
        log.write_index();
        log
    }

    /// Appends the line of [`INDEX`] still owed, `<offset> <stem>`, the offset being
    /// the end of [`LOG`], where the attempt's separator goes (the line is written
    /// before the head's first bytes); on a line of its own even when a crash tore
    /// the last one. False while the disk refuses it.
    fn write_index(&mut self) -> bool {
        let (Some(log), Some(stem)) = (&self.file, self.index.take()) else { return true };
        let append = || {
            let offset = log.metadata()?.len();
            let mut file = crate::state::private::append_file(&self.path.with_file_name(INDEX))?;
            super::journal::fresh_line(&mut file)?;
            file.write_all(format!("{offset} {stem}\n").as_bytes())
        };
        match append() {
            Err(e) if disk::is_full(&e) => {
                self.index = Some(stem);
                self.disk_full();
                false
            }
            written => written.map_err(|e| tracing::warn!("cannot index the attempt log {stem}: {e}")).is_ok(),
        }
    }

    /// One whole line; returns it as written (redacted), for the attempt's tails.
    pub(crate) fn line<'a>(&mut self, bytes: &'a [u8], stderr: bool) -> Cow<'a, [u8]> {
        let bytes = self.redact[usize::from(stderr)].line(bytes);
        // The common line, which fits the file and meets no full disk, in one step
        // (a flood is millions of them).
        let fits = self.written + (bytes.len() as u64) < self.limit();
        if !stderr && fits && self.full.is_none() && self.file.is_some() {
            self.raw(&bytes, true);
            return bytes;
        }
        if stderr {
            self.write(b"[stderr] ");
        }
        self.write(&bytes);
        self.end_line();
        bytes
    }

    /// Part of a line too long to hold; `first` for its first piece.
    pub(crate) fn part(&mut self, bytes: &[u8], stderr: bool, first: bool) {
        if stderr && first {
            self.write(b"[stderr] ");
        }
        let bytes = self.redact[usize::from(stderr)].piece(bytes);
        self.write(&bytes);
    }

    pub(crate) fn end_line(&mut self) {
        self.write(b"\n");
    }

    /// When [`flush`](Self::flush) must be called next, if anything waits: the
    /// flush interval, or the next try on a full disk.
    pub(crate) fn flush_at(&self) -> Option<Instant> {
        if let Some(full) = &self.full {
            return Some(full.retry_at);
        }
        self.dirty_since.map(|t| t + FLUSH_EVERY)
    }

    /// Writes what is buffered; on a full disk, tries again and, once space is
    /// back, writes what was held meanwhile.
    pub(crate) fn flush(&mut self) {
        self.drain();
        if !self.buf.is_empty() {
            return;
        }
        let Some(full) = self.full.take() else { return };
        self.news.push(DiskNews::SpaceBack { path: self.current().to_path_buf() });
        self.write(&full.held);
        if full.lost > 0 {
            let newline = if full.held.last().is_some_and(|b| *b != b'\n') { "\n" } else { "" };
            let marker = format!("{newline}[ralph: {} bytes of output lost while the disk was full]\n", full.lost);
            self.write(marker.as_bytes());
        }
        self.drain();
    }

    /// What happened to the disk since the last call.
    pub(crate) fn take_news(&mut self) -> Vec<DiskNews> {
        std::mem::take(&mut self.news)
    }

    /// Whether everything received is on disk (or the log was given up).
    pub(crate) fn on_disk(&self) -> bool {
        self.file.is_none() || (self.full.is_none() && self.buf.is_empty())
    }

    /// The file written now.
    pub(crate) fn current(&self) -> &Path {
        self.kept.back().map_or(&self.path, |(p, _)| p)
    }

    fn limit(&self) -> u64 {
        if self.number == 0 { self.head } else { self.segment }
    }

    fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && self.file.is_some() {
            if let Some(full) = self.full.as_mut() {
                full.hold(bytes);
                return;
            }
            let limit = self.limit();
            if self.written >= limit && (self.at_line_start || self.written >= limit + self.segment) {
                self.rotate();
                continue;
            }
            let take = if self.written < limit {
                usize::try_from(limit - self.written).unwrap_or(usize::MAX)
            } else {
                // Past the limit in the middle of a line: the line ends in this file
                // (a reader sees it whole), unless it is longer than a segment.
                let room = usize::try_from(limit + self.segment - self.written).unwrap_or(usize::MAX);
                bytes.iter().position(|b| *b == b'\n').map_or(bytes.len(), |i| i + 1).min(room)
            };
            let (now, rest) = bytes.split_at(take.min(bytes.len()));
            self.raw(now, false);
            bytes = rest;
        }
    }

    /// Buffers `bytes`, and a newline after them if `newline`.
    fn raw(&mut self, bytes: &[u8], newline: bool) {
        if let Some(last) = bytes.last() {
            self.at_line_start = *last == b'\n';
        }
        self.buf.extend_from_slice(bytes);
        if newline {
            self.buf.push(b'\n');
            self.at_line_start = true;
        }
        let len = (bytes.len() + usize::from(newline)) as u64;
        self.written += len;
        if let Some(segment) = self.kept.back_mut() {
            segment.1 += len;
        }
        self.dirty_since.get_or_insert_with(Instant::now);
        if self.buf.len() >= BUFFER {
            self.drain();
        }
    }

    /// Writes the buffer to the file, keeping what the disk refused.
    fn drain(&mut self) {
        if !self.write_index() {
            return;
        }
        let Some(file) = self.file.as_mut() else {
            (self.buf, self.dirty_since) = (Vec::new(), None);
            return;
        };
        let mut done = 0;
        let result = loop {
            if done == self.buf.len() {
                break Ok(());
            }
            #[cfg(test)]
            if self.full_while.as_ref().is_some_and(|p| p.exists()) {
                break Err(io::Error::from_raw_os_error(nix::libc::ENOSPC));
            }
            if let Some(e) = disk::injected() {
                break Err(e);
            }
            match file.write(&self.buf[done..]) {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..done);
        match result {
            Ok(()) => self.dirty_since = None,
            Err(e) if disk::is_full(&e) => self.disk_full(),
            Err(e) => {
                tracing::warn!("stopped writing the attempt log {}: {e}", self.current().display());
                (self.file, self.buf, self.dirty_since) = (None, Vec::new(), None);
            }
        }
    }

    /// A write found the disk full: hold the output and try again later.
    fn disk_full(&mut self) {
        let now = Instant::now();
        match self.full.as_mut() {
            Some(full) => {
                full.tries = full.tries.saturating_add(1);
                full.retry_at = now + writes::backoff(full.tries);
            }
            None => {
                let path = self.current().to_path_buf();
                let free = disk::free_bytes(&path).map_or_else(|| "unknown".to_string(), disk::human);
                tracing::warn!("disk full writing the attempt log {}", path.display());
                self.news.push(DiskNews::Full { path, free });
                self.full = Some(Full { tries: 0, retry_at: now + writes::backoff(0), held: Vec::new(), lost: 0 });
            }
        }
    }

    /// Closes the current file and starts the next tail segment.
    fn rotate(&mut self) {
        if self.number == 0 && !self.noted {
            let name = self.segments.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let newline = if self.at_line_start { "" } else { "\n" };
            let note = format!("{newline}[ralph: the output goes on in {name}.1, {name}.2, …]\n");
            self.buf.extend_from_slice(note.as_bytes());
            self.noted = true;
        }
        self.drain();
        // The rest waits for space, and the next segment with it.
        if self.full.is_some() || self.file.is_none() {
            return;
        }
        if self.kept.len() == SEGMENTS
            && let Some((oldest, size)) = self.kept.pop_front()
        {
            let _ = std::fs::remove_file(&oldest);
            self.cut += size;
        }
        self.number += 1;
        let mut name = self.segments.clone().into_os_string();
        name.push(format!(".{}", self.number));
        let path = PathBuf::from(name);
        self.written = 0;
        self.file = open(&path, crate::state::private::create_file);
        self.kept.push_back((path, 0));
        if self.cut > 0 {
            let marker = format!("[ralph: {} bytes of output cut before this point]\n", self.cut);
            self.buf.extend_from_slice(marker.as_bytes());
        }
    }
}

/// Opens one file of the log with `how`; `None`, with a warning, when it cannot be.
fn open(path: &Path, how: fn(&Path) -> io::Result<File>) -> Option<File> {
    how(path).map_err(|e| tracing::warn!("cannot write the attempt log {}: {e}", path.display())).ok()
}

/// The line before an attempt's head in [`LOG`], for a person reading the file.
fn separator(stem: &str) -> String {
    format!("==> {stem} <==\n")
}

/// `attempt-0007-develop-a` → (7, `develop-a`): the number and what follows it (the
/// phase, then the agent).
pub(crate) fn parts(stem: &str) -> Option<(u32, &str)> {
    let (number, rest) = stem.strip_prefix("attempt-")?.split_once('-')?;
    Some((number.parse().ok()?, rest))
}

/// Where an attempt's head is: in `path` from `start` up to `end` (`None`: as far
/// as the file is written, the head of the run's last attempt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub number: u32,
    pub stem: String,
    pub path: PathBuf,
    pub start: u64,
    pub end: Option<u64>,
}

/// The attempts whose logs the run's log directory `dir` holds, oldest first: the
/// whole files `<stem>.log` an older ralph wrote (a run it began may have been
/// resumed by this one), then the parts of [`LOG`] its index names. An index line
/// a crash tore is passed over.
pub(crate) fn heads(dir: &Path) -> Vec<Head> {
    let whole = std::fs::read_dir(dir).into_iter().flatten().flatten().filter_map(|e| {
        let stem = e.file_name().to_string_lossy().strip_suffix(".log")?.to_string();
        Some(Head { number: parts(&stem)?.0, stem, path: e.path(), start: 0, end: None })
    });
    let mut heads: Vec<Head> = whole.collect();
    heads.sort_by_key(|h| h.number);
    let index = String::from_utf8_lossy(&std::fs::read(dir.join(INDEX)).unwrap_or_default()).into_owned();
    let entries: Vec<(u64, &str, u32)> = (index.lines())
        .filter_map(|line| line.split_once(' ').and_then(|(at, stem)| Some((at.parse().ok()?, stem, parts(stem)?.0))))
        .collect();
    for (i, &(offset, stem, number)) in entries.iter().enumerate() {
        let start = offset + separator(stem).len() as u64;
        // A head the disk lost (a power cut) ends where the next one was appended.
        let end = entries.get(i + 1).map(|(next, ..)| (*next).max(start));
        heads.push(Head { number, stem: stem.to_string(), path: dir.join(LOG), start, end });
    }
    heads
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEM: &str = "attempt-0001-develop-a";

    /// The head of the attempt `stem` in `dir`, as [`heads`] finds it.
    fn head(dir: &Path, stem: &str) -> String {
        let head = heads(dir).into_iter().rfind(|h| h.stem == stem).unwrap();
        let bytes = std::fs::read(&head.path).unwrap();
        let end = head.end.map_or(bytes.len(), |e| e as usize);
        String::from_utf8_lossy(&bytes[head.start as usize..end]).into_owned()
    }

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
        let max = 64 * 1024;
        let mut log = AttemptLog::create(d.path(), STEM, max);
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
        assert_eq!(count, 2 + SEGMENTS);
        let head = head(d.path(), STEM);
        assert!(head.contains("early line") && head.contains(&format!("goes on in {STEM}.log.1")));
        let last = std::fs::read_to_string(d.path().join(format!("{STEM}.log.{}", log.number))).unwrap();
        assert!(last.starts_with("[ralph: ") && last.contains("bytes of output cut"), "{}", &last[..60]);
        assert!(last.ends_with("[stderr] the very last line\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn written_bytes_are_flushed_within_the_flush_interval() {
        let d = tempfile::tempdir().unwrap();
        let mut log = AttemptLog::create(d.path(), STEM, 1 << 20);
        assert_eq!(log.flush_at(), None);
        log.line(b"hello", false);
        assert_eq!(log.flush_at(), Some(Instant::now() + FLUSH_EVERY));
        log.flush();
        assert_eq!(log.flush_at(), None);
        assert_eq!(head(d.path(), STEM), "hello\n");
    }

    fn kinds(log: &mut AttemptLog) -> Vec<&'static str> {
        let kind = |news: &DiskNews| match news {
            DiskNews::Full { .. } => "disk_full",
            DiskNews::SpaceBack { .. } => "disk_space_back",
        };
        log.take_news().iter().map(kind).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_disk_holds_the_output_and_writes_it_in_order_when_space_is_back() {
        let d = tempfile::tempdir().unwrap();
        let marker = d.path().join("full");
        let mut log = AttemptLog::create(d.path(), STEM, 1 << 20);
        log.full_while = Some(marker.clone());
        log.line(b"before", false);
        log.flush();
        std::fs::write(&marker, "").unwrap();
        log.line(b"while full 1", false);
        log.flush();
        assert_eq!(kinds(&mut log), ["disk_full"]);
        assert!(!log.on_disk());
        // Tried again with backoff, not at every flush interval.
        assert_eq!(log.flush_at(), Some(Instant::now() + writes::backoff(0)));
        log.line(b"while full 2", true);
        log.flush();
        assert_eq!(log.flush_at(), Some(Instant::now() + writes::backoff(1)));
        assert_eq!(head(d.path(), STEM), "before\n");
        std::fs::remove_file(&marker).unwrap();
        log.line(b"after", false);
        log.flush();
        assert_eq!(kinds(&mut log), ["disk_space_back"]);
        assert!(log.on_disk());
        assert_eq!(head(d.path(), STEM), "before\nwhile full 1\n[stderr] while full 2\nafter\n");
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_full_disk_keeps_memory_bounded_and_marks_the_gap() {
        let d = tempfile::tempdir().unwrap();
        let marker = d.path().join("full");
        std::fs::write(&marker, "").unwrap();
        let mut log = AttemptLog::create(d.path(), STEM, 64 << 20);
        log.full_while = Some(marker.clone());
        let line = [b'x'; 1023];
        for _ in 0..3 * 1024 {
            log.line(&line, false);
        }
        let held = log.full.as_ref().map(|f| f.held.len()).unwrap_or_default();
        let bound = BUFFER + HELD_MAX + separator(STEM).len();
        assert!(log.buf.len() + held <= bound, "{} bytes in memory", log.buf.len() + held);
        std::fs::remove_file(&marker).unwrap();
        log.flush();
        log.line(b"the end", false);
        log.flush();
        let text = head(d.path(), STEM);
        let lost = 3 * 1024 * 1024 - (BUFFER + HELD_MAX);
        assert!(
            text.contains(&format!("[ralph: {lost} bytes of output lost while the disk was full]\n")),
            "{}",
            text.len()
        );
        assert!(text.ends_with("the end\n"));
    }

    #[tokio::test]
    async fn a_line_ends_in_the_file_it_started_in() {
        let d = tempfile::tempdir().unwrap();
        let mut log = AttemptLog::create(d.path(), STEM, 1024);
        for i in 0..100 {
            log.line(format!("{i:03}-{}", "y".repeat(46)).as_bytes(), false);
        }
        log.flush();
        for e in std::fs::read_dir(d.path()).unwrap().flatten().filter(|e| e.file_name() != INDEX) {
            let text = std::fs::read_to_string(e.path()).unwrap();
            assert!(text.ends_with('\n'), "{text}");
            for line in text.lines().filter(|l| !l.starts_with("[ralph: ") && !l.starts_with("==> ")) {
                assert_eq!(line.len(), 50, "{line:?} in {}", e.path().display());
            }
        }
    }

    #[tokio::test]
    async fn the_heads_of_a_run_are_found_in_both_layouts_and_a_torn_index_line_is_passed_over() {
        let d = tempfile::tempdir().unwrap();
        // A run an older ralph began: one file per head.
        std::fs::write(d.path().join("attempt-0001-develop-a.log"), "first\n").unwrap();
        std::fs::write(d.path().join("attempt-0001-develop-a.prompt.md"), "its prompt").unwrap();
        for (stem, text) in [("attempt-0002-develop-a", "second"), ("attempt-0003-review-b", "third")] {
            let mut log = AttemptLog::create(d.path(), stem, 1 << 20);
            log.line(text.as_bytes(), false);
            log.flush();
        }
        // A crash tore the index's last line; the next attempt's line is whole.
        let mut index = crate::state::private::append_file(&d.path().join(INDEX)).unwrap();
        index.write_all(b"12 attempt-00").unwrap();
        let mut log = AttemptLog::create(d.path(), "attempt-0004-review-b", 1 << 20);
        log.line(b"fourth", false);
        log.flush();
        let found: Vec<(u32, String)> = heads(d.path()).into_iter().map(|h| (h.number, h.stem)).collect();
        let stems =
            ["attempt-0001-develop-a", "attempt-0002-develop-a", "attempt-0003-review-b", "attempt-0004-review-b"];
        assert_eq!(found, (1..=4).zip(stems.map(String::from)).collect::<Vec<_>>());
        for (stem, text) in stems.iter().zip(["first\n", "second\n", "third\n", "fourth\n"]) {
            assert_eq!(head(d.path(), stem), text);
        }
        assert_eq!(heads(d.path()).last().map(|h| h.end), Some(None), "the last head is open");
        let file = std::fs::read_to_string(d.path().join(LOG)).unwrap();
        assert!(file.starts_with("==> attempt-0002-develop-a <==\nsecond\n==> attempt-0003-review-b <==\n"), "{file}");
    }
}

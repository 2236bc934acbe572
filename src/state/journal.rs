//! The append-only journal `.agent/events.jsonl`: one JSON object per line for
//! every transition, attempt and classification. History lives here so the
//! checkpoint stays small.
//!
//! Each line is `{"at":"<RFC 3339>","kind":"<kind>", ...fields}`. String values
//! pass through [`redact`](crate::secrets::redact) first: agent output ends up here and must not carry
//! credentials to disk.
//!
//! No fsync per event: a line is handed to the kernel with a single write as soon
//! as it is appended, so it survives ralph being killed; only a power cut can lose
//! the last few lines, and a crash mid-write leaves at most one torn line, which
//! readers skip. The exception is the `checkpoint` line ([`Journal::snapshot`]): a
//! durable transition is the whole checkpoint appended here and `fdatasync`ed, one
//! sync instead of the temp file, fsync, rename and directory fsync a durable
//! `checkpoint.json` costs; a light save (attempt started, session known) is the
//! same line unsynced. `checkpoint.json` follows the journal, unsynced, at a status
//! change or a moment later (`run::checkpoint_file`), and every reader takes the
//! newer of the two ([`crate::state::format::read_newest`]).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::secrets::redact_json;

/// The journal's name, beside `checkpoint.json` in `.agent/`.
pub(crate) const FILE: &str = "events.jsonl";

/// Lines kept in memory while the disk is full, at most.
const PENDING_MAX: usize = 10_000;

/// Appends events to the journal, or nothing when disabled.
#[derive(Debug)]
pub(crate) struct Journal {
    file: Option<File>,
    path: Option<PathBuf>,
    /// Lines a full disk refused, written first once there is space again.
    pending: Vec<String>,
    /// A write failed and may have left part of a line.
    torn: bool,
}

impl Journal {
    /// Opens (creating, mode 0600) the journal for appending.
    pub(crate) fn open(path: &Path) -> io::Result<Journal> {
        let created = std::fs::symlink_metadata(path).is_err();
        // Never through a planted link (it would append to the link's target).
        let mut file = super::private::append_file(path)?;
        // A torn last line from a crash would swallow our first event into an
        // unparseable line; start on a fresh line instead.
        fresh_line(&mut file)?;
        if created {
            // Its snapshots are synced, so its name must survive a power cut too (and
            // the previous run's journal, moved away just before, must not return).
            super::atomic::sync_dir(super::atomic::parent_dir(path))?;
        }
        Ok(Journal { file: Some(file), path: Some(path.to_path_buf()), pending: Vec::new(), torn: false })
    }

    /// A journal that writes nothing (`checkpoint_enabled = false`, tests).
    pub(crate) fn disabled() -> Journal {
        Journal { file: None, path: None, pending: Vec::new(), torn: false }
    }

    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Writes the lines a full disk refused; an error leaves them pending.
    pub(crate) fn flush_pending(&mut self) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else { return Ok(()) };
        if self.torn {
            // The refused write may have left part of a line.
            fresh_line(file)?;
            self.torn = false;
        }
        while let Some(line) = self.pending.first() {
            super::disk::injected().map_or(Ok(()), Err)?;
            file.write_all(line.as_bytes())?;
            self.pending.remove(0);
        }
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn is_enabled(&self) -> bool {
        self.file.is_some()
    }

    /// Appends one event. `fields` should serialize to a JSON object, whose keys
    /// are merged into the line; anything else (or an object that uses the
    /// reserved keys `at` or `kind`) goes under `"data"` so nothing is lost.
    pub(crate) fn append<T: Serialize>(&mut self, kind: &str, fields: &T) -> io::Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        let line = render(&jiff::Timestamp::now().to_string(), kind, fields)?;
        self.write(&line, false).inspect_err(|e| {
            if super::disk::is_full(e) && self.pending.len() < PENDING_MAX {
                self.pending.push(line);
            }
        })
    }

    /// Appends one run event: its serialisation, with `"kind"` its variant's name.
    pub(crate) fn record(&mut self, event: &crate::events::RunEvent) -> io::Result<()> {
        let mut value = serde_json::to_value(event).map_err(io::Error::other)?;
        if let Value::Object(map) = &mut value {
            map.remove("kind");
        }
        self.append(event.kind(), &value)
    }

    /// Appends `{"at":…,"kind":"checkpoint","checkpoint":<checkpoint>}`, and with
    /// `sync` syncs the journal: from its return the checkpoint survives a power cut.
    /// Unsynced, it survives a kill (the page cache keeps it), which is all a light
    /// save ("attempt started", "session known") needs. `checkpoint` is written as
    /// given (the caller redacted it). On an error nothing is kept pending: the
    /// caller saves the checkpoint another way.
    pub(crate) fn snapshot(&mut self, checkpoint: &Value, sync: bool) -> io::Result<()> {
        let at = json_str(&jiff::Timestamp::now().to_string())?;
        let line = format!("{{\"at\":{at},\"kind\":\"checkpoint\",\"checkpoint\":{checkpoint}}}\n");
        self.write(&line, sync)?;
        if sync && let (Some(path), Some(file)) = (&self.path, &self.file) {
            super::disk::note_synced(path, || file.metadata().map(|m| m.len()));
        }
        Ok(())
    }

    /// Writes `line` after what a full disk refused (order is kept), then with `sync`
    /// syncs it. A failure may have left part of a line: the next write starts afresh.
    fn write(&mut self, line: &str, sync: bool) -> io::Result<()> {
        let written = self.flush_pending().and_then(|()| {
            super::disk::injected().map_or(Ok(()), Err)?;
            let Some(file) = self.file.as_mut() else { return Err(io::Error::other("the journal is disabled")) };
            // One write of the whole line: with O_APPEND the kernel places it at the
            // end in one piece, so a crash tears at most this line.
            file.write_all(line.as_bytes())?;
            if sync { file.sync_data() } else { Ok(()) }
        });
        self.torn |= written.is_err();
        written
    }
}

/// Ends a torn last line, so the next line starts fresh.
pub(super) fn fresh_line(file: &mut File) -> io::Result<()> {
    let len = file.metadata()?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        file.read_exact_at(&mut last, len - 1)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// The newest `checkpoint` snapshot in the journal at `path` (the checkpoint as
/// written, unparsed), or `None`. Reads backwards from the end in growing windows:
/// the journal keeps a whole run's history, the snapshot is near its end. Torn
/// lines are skipped.
pub(crate) fn last_snapshot(path: &Path) -> io::Result<Option<Value>> {
    let Some(file) = super::private::open_existing(path)? else { return Ok(None) };
    let len = file.metadata()?.len();
    let mut window: u64 = 64 * 1024;
    loop {
        let start = len.saturating_sub(window);
        let mut buf = vec![0; usize::try_from(len - start).map_err(io::Error::other)?];
        file.read_exact_at(&mut buf, start)?;
        // The first line of a window that starts mid-file may be cut: skipped.
        let whole = if start == 0 { &buf[..] } else { buf.splitn(2, |b| *b == b'\n').nth(1).unwrap_or_default() };
        let snapshot = whole
            .rsplit(|b| *b == b'\n')
            .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
            .find(|v| v["kind"] == "checkpoint");
        if snapshot.is_some() || start == 0 {
            return Ok(snapshot.and_then(|mut v| v.get_mut("checkpoint").map(Value::take)));
        }
        window = window.saturating_mul(4);
    }
}

fn render<T: Serialize>(at: &str, kind: &str, fields: &T) -> io::Result<String> {
    let mut value = serde_json::to_value(fields).map_err(io::Error::other)?;
    redact_json(&mut value);
    let mut line = format!("{{\"at\":{},\"kind\":{}", json_str(at)?, json_str(kind)?);
    match value {
        Value::Object(map) if !map.contains_key("at") && !map.contains_key("kind") => {
            for (k, v) in map {
                let _ = write!(line, ",{}:{v}", json_str(&k)?);
            }
        }
        Value::Null => {}
        other => {
            let _ = write!(line, ",\"data\":{other}");
        }
    }
    line.push_str("}\n");
    Ok(line)
}

fn json_str(s: &str) -> io::Result<String> {
    serde_json::to_string(s).map_err(io::Error::other)
}

/// Every event in the journal, oldest first. A missing journal is empty. Lines
/// that do not parse are skipped: the torn last line of a crash, which after a
/// resume may sit in the middle of the file.
#[cfg(test)]
pub(crate) fn read_all(path: &Path) -> io::Result<Vec<Value>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for line in io::BufRead::split(io::BufReader::new(file), b'\n') {
        let line = line?;
        if let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(&line) {
            out.push(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn appends_lines_with_at_and_kind_first() {
        let (_dir, p) = crate::testkit::temp_file("events.jsonl");
        let mut j = Journal::open(&p).unwrap();
        j.append("attempt_started", &json!({"zeta": 1, "agent": "claude"})).unwrap();
        j.append("note", &"just a string").unwrap();
        j.append("bare", &()).unwrap();
        drop(j);
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("{\"at\":\""), "{}", lines[0]);
        assert!(lines[0].contains(",\"kind\":\"attempt_started\","));
        let all = read_all(&p).unwrap();
        assert_eq!(all[0]["agent"], "claude");
        assert_eq!(all[0]["zeta"], 1);
        assert!(all[0]["at"].as_str().unwrap().parse::<jiff::Timestamp>().is_ok());
        assert_eq!(all[1]["data"], "just a string");
        assert_eq!(all[2]["kind"], "bare");
        assert_eq!(all[2].as_object().unwrap().len(), 2);
    }

    #[test]
    fn reserved_keys_go_under_data() {
        let (_dir, p) = crate::testkit::temp_file("events.jsonl");
        let mut j = Journal::open(&p).unwrap();
        j.append("x", &json!({"kind": "other", "n": 2})).unwrap();
        let all = read_all(&p).unwrap();
        assert_eq!(all[0]["kind"], "x");
        assert_eq!(all[0]["data"]["kind"], "other");
    }

    #[test]
    fn reopen_appends_and_repairs_torn_line() {
        let (_dir, p) = crate::testkit::temp_file("events.jsonl");
        let mut j = Journal::open(&p).unwrap();
        j.append("one", &json!({})).unwrap();
        drop(j);
        // A crash mid-write.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"at\":\"2026-").unwrap();
        drop(f);
        assert_eq!(read_all(&p).unwrap().len(), 1);
        let mut j = Journal::open(&p).unwrap();
        j.append("two", &json!({})).unwrap();
        let kinds: Vec<_> = read_all(&p).unwrap().iter().map(|v| v["kind"].as_str().unwrap().to_owned()).collect();
        assert_eq!(kinds, ["one", "two"]);
    }

    #[test]
    fn the_last_snapshot_is_found_behind_other_lines_and_torn_ones() {
        let (_dir, p) = crate::testkit::temp_file("events.jsonl");
        assert_eq!(last_snapshot(&p).unwrap(), None);
        let mut j = Journal::open(&p).unwrap();
        j.append("run_started", &json!({})).unwrap();
        assert_eq!(last_snapshot(&p).unwrap(), None);
        // Far apart, so the search needs more than its first window.
        j.snapshot(&json!({"seq": 1}), true).unwrap();
        j.append("filler", &json!({"text": "x".repeat(200 * 1024)})).unwrap();
        j.snapshot(&json!({"seq": 2}), false).unwrap();
        // A line that mentions the kind is not a snapshot unless it is one.
        j.append("note", &json!({"text": "\"kind\":\"checkpoint\""})).unwrap();
        for _ in 0..2000 {
            j.append("attempt_started", &json!({"n": 1})).unwrap();
        }
        drop(j);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"at\":\"x\",\"kind\":\"checkpoint\",\"checkpoint\":{\"seq\":3").unwrap();
        assert_eq!(last_snapshot(&p).unwrap(), Some(json!({"seq": 2})));
    }

    #[test]
    fn disabled_writes_nothing() {
        let mut j = Journal::disabled();
        assert!(!j.is_enabled());
        j.append("x", &json!({"a": 1})).unwrap();
    }

    #[test]
    fn missing_journal_reads_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_all(&dir.path().join("none")).unwrap().is_empty());
    }

    #[test]
    fn secrets_are_redacted() {
        let (_dir, p) = crate::testkit::temp_file("events.jsonl");
        let mut j = Journal::open(&p).unwrap();
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
        j.append("error", &json!({"tail": format!("auth failed for {key}"), "tokens": 1234, "list": [key]})).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains(key), "{text}");
        let all = read_all(&p).unwrap();
        assert_eq!(all[0]["tail"], "auth failed for [REDACTED]");
        assert_eq!(all[0]["tokens"], 1234);
        assert_eq!(all[0]["list"][0], "[REDACTED]");
    }
}

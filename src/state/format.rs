//! The state-format policy for `.agent/checkpoint.json`, in code (the rules are in
//! `docs/operations.md`): how a file on disk becomes a [`Checkpoint`], for every
//! reader alike (`--resume`, `--inspect-checkpoint`, `status`), so they can never
//! disagree about what is resumable.
//!
//! * a file that does not parse, or has no version, is [`FormatError::Corrupt`]:
//!   the caller sets it aside (never overwrites it);
//! * a version newer than [`VERSION`] is [`FormatError::TooNew`]: refused and left in
//!   place, since a newer ralph can still resume it;
//! * an older version (or an older shape of the same version) is migrated here;
//! * a file that parses but describes an impossible position is
//!   [`FormatError::Invalid`] with the field named: refused and left in place, never
//!   silently repaired;
//! * [`read_newest`] also reads the journal's newest snapshot, made durable where
//!   `checkpoint.json` is not, and says when it is the newer one.

use std::io;
use std::path::Path;

use serde_json::Value;

use super::checkpoint::{Checkpoint, VERSION};

#[derive(Debug, thiserror::Error)]
pub(crate) enum FormatError {
    #[error("{0}")]
    Corrupt(String),
    #[error("format version {version} is newer than the version {VERSION} this ralph reads")]
    TooNew { version: u64 },
    #[error("{field} {problem}")]
    Invalid { field: &'static str, problem: String },
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("cannot read {}: {source}", path.display())]
    Io { path: std::path::PathBuf, source: io::Error },
}

/// Reads the checkpoint at `path`: `Ok(None)` when there is none. Changes nothing.
pub(crate) fn read(path: &Path) -> Result<Option<Checkpoint>, ReadError> {
    // Never through a link a repository may have planted (see `private`).
    let bytes = super::private::read_existing(path).map_err(|source| ReadError::Io { path: path.into(), source })?;
    Ok(bytes.map(|b| parse(&b)).transpose()?)
}

/// Why the journal's snapshot is newer than `checkpoint.json`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stale {
    /// There is no `checkpoint.json`.
    Missing,
    /// It does not parse (a power cut before it reached the disk, or damage): set it
    /// aside before replacing it.
    Corrupt(String),
    /// It holds an older save of the same run (its `seq`).
    Older(u64),
}

/// The newest checkpoint of a run directory.
#[derive(Debug)]
pub(crate) struct Newest {
    pub checkpoint: Checkpoint,
    /// Set when it comes from the journal: what is wrong with `checkpoint.json`.
    pub stale: Option<Stale>,
}

/// Reads `checkpoint.json` at `path` and the newest snapshot in the journal beside
/// it; changes nothing. The snapshot wins when it belongs to the same run
/// and has a higher `seq`, or when the file is missing or does not parse. A file
/// that is too new or impossible is refused as by [`read`]; so is a too-new
/// snapshot where it would win. A snapshot that does not parse counts as none.
pub(crate) fn read_newest(path: &Path) -> Result<Option<Newest>, ReadError> {
    let journal = &path.with_file_name(super::journal::FILE);
    let (file, corrupt) = match read(path) {
        Ok(found) => (found, None),
        Err(ReadError::Format(FormatError::Corrupt(message))) => (None, Some(message)),
        Err(e) => return Err(e),
    };
    let snapshot =
        super::journal::last_snapshot(journal).map_err(|source| ReadError::Io { path: journal.into(), source });
    let snapshot = match snapshot?.map(parse_value) {
        Some(Err(e @ FormatError::TooNew { .. })) if file.is_none() => return Err(e.into()),
        parsed => parsed.and_then(Result::ok),
    };
    let (checkpoint, stale) = match (file, snapshot) {
        (Some(cp), Some(snap)) if snap.run_id == cp.run_id && snap.seq > cp.seq => (snap, Some(Stale::Older(cp.seq))),
        (Some(checkpoint), _) => (checkpoint, None),
        (None, Some(checkpoint)) => (checkpoint, Some(corrupt.map_or(Stale::Missing, Stale::Corrupt))),
        (None, None) => return corrupt.map_or(Ok(None), |message| Err(FormatError::Corrupt(message).into())),
    };
    Ok(Some(Newest { checkpoint, stale }))
}

/// Parses, migrates and checks a checkpoint file's bytes.
pub(crate) fn parse(bytes: &[u8]) -> Result<Checkpoint, FormatError> {
    parse_value(serde_json::from_slice(bytes).map_err(|e| FormatError::Corrupt(e.to_string()))?)
}

fn parse_value(value: Value) -> Result<Checkpoint, FormatError> {
    let version = value
        .get("version")
        .and_then(Value::as_u64)
        .ok_or_else(|| FormatError::Corrupt("it has no format version".to_string()))?;
    if version > u64::from(VERSION) {
        return Err(FormatError::TooNew { version });
    }
    let value = migrate(version, value)?;
    let checkpoint: Checkpoint = serde_json::from_value(value).map_err(|e| FormatError::Corrupt(e.to_string()))?;
    check(&checkpoint)?;
    Ok(checkpoint)
}

/// Brings an older file to the current shape. Each arm is a format this ralph or an
/// earlier one wrote; a test keeps a sample of each (`tests/fixtures/checkpoints/`).
fn migrate(version: u64, mut value: Value) -> Result<Value, FormatError> {
    match version {
        1 => {
            // The first version-1 files kept the rate-limit reset at the top level;
            // it now lives in `progress`, where the dispatcher reads it. Moving it
            // keeps a wait that was under way when that ralph stopped.
            if let Some(obj) = value.as_object_mut()
                && let Some(until) = obj.remove("rate_limit_until")
                && let Some(progress) = obj.get_mut("progress").and_then(Value::as_object_mut)
            {
                progress.entry("rate_limit_until").or_insert(until);
            }
            Ok(value)
        }
        other => Err(FormatError::Corrupt(format!("format version {other} was never written by ralph"))),
    }
}

/// Positions that no run can reach. Only what the checkpoint says about itself is
/// checked here; whether it fits the current config is the resume's business.
fn check(cp: &Checkpoint) -> Result<(), FormatError> {
    let pos = &cp.progress.position;
    let rules = [
        (pos.phase_name.trim().is_empty(), "progress.position.phase_name", "is empty"),
        (pos.iteration == 0, "progress.position.iteration", "is 0; iterations count from 1"),
        (pos.cycle == 0, "progress.position.cycle", "is 0; cycles count from 1"),
        (pos.pass == 0, "progress.position.pass", "is 0; passes count from 1"),
        (cp.run_id.trim().is_empty(), "run_id", "is empty"),
    ];
    match rules.into_iter().find(|rule| rule.0) {
        Some((_, field, problem)) => Err(FormatError::Invalid { field, problem: problem.to_string() }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/checkpoints").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn edit(name: &str, f: impl FnOnce(&mut Value)) -> Vec<u8> {
        let mut v: Value = serde_json::from_slice(&sample(name)).unwrap();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn every_version_ever_written_reads() {
        // The oldest shape of version 1: no later optional fields, the rate-limit
        // reset at the top level.
        let old = parse(&sample("v1-first.json")).unwrap();
        assert_eq!(old.progress.position.phase_name, "develop");
        assert_eq!(old.progress.rate_limit_until, Some(1_796_000_000));
        assert!(old.phase_usage.is_empty());
        let current = parse(&sample("v1-current.json")).unwrap();
        assert_eq!(current.progress.position.iteration, 2);
    }

    #[test]
    fn the_current_writer_round_trips_through_the_reader() {
        let cp = parse(&sample("v1-current.json")).unwrap();
        let bytes = serde_json::to_vec_pretty(&cp).unwrap();
        assert_eq!(parse(&bytes).unwrap(), cp);
    }

    #[test]
    fn timestamps_are_typed_and_written_as_before() {
        // `jiff::Timestamp` in memory, the same RFC 3339 string on disk.
        for name in ["v1-first.json", "v1-current.json"] {
            let on_disk: Value = serde_json::from_slice(&sample(name)).unwrap();
            let written = serde_json::to_value(parse(&sample(name)).unwrap()).unwrap();
            for key in ["/started_at", "/updated_at", "/last_error/at", "/in_flight/started_at"] {
                assert_eq!(written.pointer(key), on_disk.pointer(key), "{name}: {key}");
            }
        }
        // The untyped reader took any string; so does this one.
        let odd = edit("v1-current.json", |v| v["updated_at"] = "yesterday".into());
        assert_eq!(parse(&odd).unwrap().updated_at, jiff::Timestamp::UNIX_EPOCH);
    }

    #[test]
    fn a_newer_version_is_too_new_not_corrupt() {
        let bytes = edit("v1-current.json", |v| v["version"] = 2.into());
        assert!(matches!(parse(&bytes), Err(FormatError::TooNew { version: 2 })));
        // Even when the newer shape would not parse as ours.
        assert!(matches!(parse(br#"{"version": 7, "all": "different"}"#), Err(FormatError::TooNew { version: 7 })));
    }

    #[test]
    fn unparseable_or_versionless_is_corrupt() {
        for bytes in [&b"{"[..], b"[]", br#"{"version": "1"}"#, br#"{"version": 1}"#, br#"{"version": 0}"#, b"\xff"] {
            assert!(matches!(parse(bytes), Err(FormatError::Corrupt(_))), "{}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn impossible_positions_name_the_field() {
        for (field, value) in [("iteration", 0), ("cycle", 0), ("pass", 0)] {
            let bytes = edit("v1-current.json", |v| v["progress"]["position"][field] = value.into());
            match parse(&bytes) {
                Err(FormatError::Invalid { field: named, .. }) => assert!(named.ends_with(field), "{named}"),
                other => panic!("{field}: {other:?}"),
            }
        }
        let bytes = edit("v1-current.json", |v| v["progress"]["position"]["phase_name"] = "".into());
        assert!(matches!(parse(&bytes), Err(FormatError::Invalid { field: "progress.position.phase_name", .. })));
    }

    /// `checkpoint.json` (`None`: absent) and a journal with the given snapshots.
    fn newest(file: Option<&[u8]>, snapshots: &[Value]) -> Result<Option<Newest>, ReadError> {
        let dir = tempfile::tempdir().unwrap();
        let (path, journal) = (dir.path().join("checkpoint.json"), dir.path().join("events.jsonl"));
        if let Some(bytes) = file {
            std::fs::write(&path, bytes).unwrap();
        }
        let mut j = super::super::journal::Journal::open(&journal).unwrap();
        for s in snapshots {
            j.snapshot(s, true).unwrap();
            j.append("attempt_started", &serde_json::json!({})).unwrap();
        }
        read_newest(&path)
    }

    fn with_seq(seq: u64) -> Value {
        let mut v: Value = serde_json::from_slice(&sample("v1-current.json")).unwrap();
        v["seq"] = seq.into();
        v
    }

    #[test]
    fn the_newer_of_file_and_journal_snapshot_wins() {
        let bytes = |seq| serde_json::to_vec(&with_seq(seq)).unwrap();
        let pick =
            |file: Option<&[u8]>, snaps: &[Value]| newest(file, snaps).unwrap().map(|n| (n.checkpoint.seq, n.stale));
        // No snapshot (an older ralph's journal): the file as before.
        assert_eq!(pick(Some(&bytes(0)), &[]), Some((0, None)));
        assert_eq!(pick(None, &[]), None);
        // The journal's newest snapshot, not its first, against the file.
        assert_eq!(pick(Some(&bytes(3)), &[with_seq(2), with_seq(4)]), Some((4, Some(Stale::Older(3)))));
        assert_eq!(pick(Some(&bytes(5)), &[with_seq(4)]), Some((5, None)));
        // A tie is the file: a watcher may have marked it blocked without a new seq.
        assert_eq!(pick(Some(&bytes(4)), &[with_seq(4)]), Some((4, None)));
        // Another run's snapshot never replaces this run's file.
        let mut other = with_seq(9);
        other["run_id"] = "another-run".into();
        assert_eq!(pick(Some(&bytes(1)), &[other]), Some((1, None)));
    }

    #[test]
    fn a_missing_or_unparseable_file_is_rebuilt_from_the_journal() {
        let found = newest(None, &[with_seq(7)]).unwrap().unwrap();
        assert_eq!((found.checkpoint.seq, found.stale), (7, Some(Stale::Missing)));
        for torn in [&b""[..], b"{\n  \"version\": 1,\n  \"se", b"\0\0\0\0"] {
            let found = newest(Some(torn), &[with_seq(7)]).unwrap().unwrap();
            assert_eq!(found.checkpoint.seq, 7);
            assert!(matches!(found.stale, Some(Stale::Corrupt(_))), "{:?}", found.stale);
        }
        // Without a snapshot a corrupt file is corrupt, as before.
        assert!(matches!(newest(Some(b"{"), &[]), Err(ReadError::Format(FormatError::Corrupt(_)))));
        // A snapshot that does not parse is none.
        assert!(matches!(
            newest(Some(b"{"), &[serde_json::json!({"x": 1})]),
            Err(ReadError::Format(FormatError::Corrupt(_)))
        ));
    }

    #[test]
    fn a_newer_format_is_refused_from_the_file_or_the_journal() {
        let mut too_new = with_seq(7);
        too_new["version"] = 2.into();
        let text = serde_json::to_vec(&too_new).unwrap();
        assert!(matches!(newest(Some(&text), &[with_seq(8)]), Err(ReadError::Format(FormatError::TooNew { .. }))));
        assert!(matches!(newest(None, &[too_new.clone()]), Err(ReadError::Format(FormatError::TooNew { .. }))));
        assert!(matches!(newest(Some(b"{"), &[too_new]), Err(ReadError::Format(FormatError::TooNew { .. }))));
    }

    #[test]
    fn unknown_fields_of_a_newer_minor_change_are_ignored() {
        // A later ralph may add optional fields without a version bump; an older one
        // still reads the file.
        let bytes = edit("v1-current.json", |v| v["something_new"] = serde_json::json!({"x": 1}));
        assert!(parse(&bytes).is_ok());
    }
}

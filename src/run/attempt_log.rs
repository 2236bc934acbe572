//! An attempt's log file: the agent's output as received, byte for byte (invalid
//! UTF-8 included), with credentials redacted and stderr lines marked. A log that
//! cannot be written is given up on with a warning, never a failed attempt.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::state::redact::redact_bytes;

/// Where the agent's output is written.
#[derive(Debug)]
pub struct AttemptLog {
    w: Option<BufWriter<File>>,
}

impl AttemptLog {
    /// Creates the log (owner-only, never through a symlink).
    pub fn create(path: &Path) -> Self {
        match crate::state::private::create_file(path) {
            Ok(f) => Self { w: Some(BufWriter::new(f)) },
            Err(e) => {
                tracing::warn!("cannot write the attempt log {}: {e}", path.display());
                Self { w: None }
            }
        }
    }

    /// One whole line.
    pub fn line(&mut self, bytes: &[u8], stderr: bool) {
        self.part(bytes, stderr, true);
        self.end_line();
    }

    /// Part of a line too long to hold; `first` for its first piece.
    pub fn part(&mut self, bytes: &[u8], stderr: bool, first: bool) {
        let prefix: &[u8] = if stderr && first { b"[stderr] " } else { b"" };
        self.write(prefix);
        self.write(&redact_bytes(bytes));
    }

    pub fn end_line(&mut self) {
        self.write(b"\n");
    }

    fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let Some(w) = self.w.as_mut() else { return };
        if let Err(e) = w.write_all(bytes) {
            tracing::warn!("stopped writing the attempt log: {e}");
            self.w = None;
        }
    }

    pub fn flush(&mut self) {
        if let Some(w) = self.w.as_mut() {
            let _ = w.flush();
        }
    }
}

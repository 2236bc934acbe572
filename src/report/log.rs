//! ralph's own log: `tracing` to `.agent/logs/<run-id>/ralph.log`, redacted like
//! every other file ralph writes (it quotes agents' errors), owner-only, and never
//! through a symbolic link.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

use crate::state::redact::redact_bytes;

/// Starts logging to `path`: info by default, debug with `-v`, trace with `-vv`;
/// `RALPH_LOG` overrides. A log that cannot be opened is not worth failing a run.
pub fn init(path: &Path, verbose: u8) {
    let file = match crate::state::private::append_file(path) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("ralph: cannot write its log: {e}");
            return;
        }
    };
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("RALPH_LOG").unwrap_or_else(|_| EnvFilter::new(format!("ralph={level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(Redacting(file)))
        .try_init();
}

/// Redacts each write: the formatter hands over one whole event per write.
struct Redacting(File);

impl Write for Redacting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_all(&redact_bytes(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

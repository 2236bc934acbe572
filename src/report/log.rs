//! ralph's own log: `tracing` to `.agent/logs/<run-id>/ralph.log`.

use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// Starts logging to `path`: info by default, debug with `-v`, trace with `-vv`;
/// `RALPH_LOG` overrides. A log that cannot be opened is not worth failing a run.
pub fn init(path: &Path, verbose: u8) {
    let Ok(file) = std::fs::OpenOptions::new().create(true).append(true).open(path) else {
        return;
    };
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("RALPH_LOG").unwrap_or_else(|_| EnvFilter::new(format!("ralph={level}")));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_writer(Mutex::new(file)).try_init();
}

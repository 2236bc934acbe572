//! ralph's own log: `tracing` to `.agent/logs/<run-id>/ralph.log`, redacted like
//! every other file ralph writes (it quotes agents' errors), owner-only, and never
//! through a symbolic link.
//!
//! Levels: info by default (every journal event, every signal sent), debug with
//! `-v` (each decision with its inputs: classification, policy, escalation steps,
//! probes, parser anomalies), trace with `-vv` (every agent event). `RALPH_LOG`
//! takes the `RUST_LOG` syntax (`RALPH_LOG=ralph::recovery=trace,info`) and wins
//! over `-v`. `--log-format json` writes one JSON object per line, for machines.

use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// How the log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The filter: `RALPH_LOG` when set (and valid), else ralph's events at the level
/// `-v`/`-vv` chose. Returns a warning when `RALPH_LOG` did not parse.
pub(crate) fn filter(ralph_log: Option<&str>, verbose: u8) -> (EnvFilter, Option<String>) {
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let default = || EnvFilter::new(format!("ralph={level}"));
    match ralph_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => (default(), None),
        Some(directives) => match EnvFilter::try_new(directives) {
            Ok(f) => (f, None),
            Err(e) => {
                (default(), Some(format!("RALPH_LOG={directives:?} is not a valid filter ({e}); using ralph={level}")))
            }
        },
    }
}

/// Starts logging to `path`. A log that cannot be opened is not worth failing a run;
/// returns a warning for the user when something was off.
pub(crate) fn init(path: &Path, verbose: u8, format: LogFormat) -> Option<String> {
    let file = match crate::state::private::append_file(path) {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot open the log {}: {e}", path.display())),
    };
    let (filter, warning) = filter(std::env::var("RALPH_LOG").ok().as_deref(), verbose);
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).with_writer(Mutex::new(Redacting(file)));
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    warning
}

/// Redacts each write: the formatter hands over one whole event per write.
struct Redacting(std::fs::File);

impl std::io::Write for Redacting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(&crate::secrets::redact_bytes(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ralph_log_takes_the_rust_log_syntax_and_a_bad_one_is_reported() {
        let (f, warning) = filter(Some("ralph::recovery=trace,info"), 0);
        assert!(warning.is_none());
        assert_eq!(f.to_string(), "ralph::recovery=trace,info");
        let (f, warning) = filter(None, 1);
        assert_eq!(f.to_string(), "ralph=debug");
        assert!(warning.is_none());
        let (f, _) = filter(None, 2);
        assert_eq!(f.to_string(), "ralph=trace");
        let (f, warning) = filter(Some("ralph=loud"), 0);
        assert_eq!(f.to_string(), "ralph=info");
        assert!(warning.is_some_and(|w| w.contains("RALPH_LOG")));
    }
}

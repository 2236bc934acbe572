//! Hooks that let the integration tests put ralph into states that are hard to
//! reach on purpose (an event loop blocked in a hung fsync). Debug builds only: a
//! release binary carries none of this.

use std::time::Duration;

/// Blocks the calling thread (the event loop) for a minute when the environment
/// variable `var` is set.
pub(super) fn hang_if_asked(var: &str) {
    if std::env::var_os(var).is_some() {
        tracing::info!("test hook {var}: blocking the event loop");
        std::thread::sleep(Duration::from_secs(60));
    }
}

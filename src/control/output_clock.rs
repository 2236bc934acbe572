//! When the running attempt's agent last printed, for `ralph status`: the attempt
//! marks it with the time its loop read the output at (one relaxed store per line,
//! no clock reading of its own), and the control socket reads it when asked, so the
//! run's loop hears nothing per line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::time::Instant;

/// The clock of the agent's last output; clones share it.
#[derive(Debug, Clone)]
pub(crate) struct OutputClock {
    /// Milliseconds after `epoch` of the last output, plus one; 0: nothing yet.
    last: Arc<AtomicU64>,
    /// An instant and the same moment in unix milliseconds.
    epoch: (Instant, i64),
}

impl Default for OutputClock {
    fn default() -> Self {
        Self { last: Arc::default(), epoch: (Instant::now(), jiff::Timestamp::now().as_millisecond()) }
    }
}

impl OutputClock {
    /// The agent printed something at `now`.
    pub(crate) fn beat(&self, now: Instant) {
        let ms = u64::try_from(now.saturating_duration_since(self.epoch.0).as_millis()).unwrap_or(u64::MAX - 1);
        self.last.store(ms + 1, Ordering::Relaxed);
    }

    /// A new attempt: its agent printed nothing yet.
    pub(crate) fn clear(&self) {
        self.last.store(0, Ordering::Relaxed);
    }

    /// When the agent last printed (unix seconds), if it did.
    pub(crate) fn read(&self) -> Option<i64> {
        let ms = self.last.load(Ordering::Relaxed).checked_sub(1)?;
        Some(self.epoch.1.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)).div_euclid(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_output_reads_back_as_wall_time() {
        let clock = OutputClock::default();
        assert_eq!(clock.read(), None);
        clock.beat(clock.epoch.0 + std::time::Duration::from_secs(90));
        assert_eq!(clock.read(), Some((clock.epoch.1 + 90_000).div_euclid(1000)));
        clock.clear();
        assert_eq!(clock.read(), None);
    }
}

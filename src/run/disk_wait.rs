//! Waiting out a full disk: ENOSPC or EDQUOT on the checkpoint, the journal or an
//! attempt log's end (`state::attempt_log`) is an outage like a lost network. The
//! last good checkpoint stays on disk (writes are atomic), the attempt that was
//! running has finished, and nothing new starts:
//! ralph shows `disk full on <path> (<free> free)`, tries again with backoff, and
//! continues once the state is written, so no iteration recorded done is repeated.
//! Like every environmental wait it gives way to a signal at once and is bounded
//! by `[general] max_runtime`.

use crate::error::RalphError;
use crate::events::RunEvent;
use crate::signal::Signals;
use crate::state::atomic::Durability;
use crate::state::disk;

use super::dispatch::{Dispatcher, Flow};

impl Dispatcher {
    /// Waits until the state that a full disk refused is written; `Some` when the run
    /// ends meanwhile (a signal).
    pub(super) async fn disk_wait(&mut self, signals: &mut Signals) -> Flow {
        let mut tries = 0u32;
        while let Some(path) = self.disk_full.clone() {
            let free = disk::free_bytes(&path).map_or_else(|| "unknown".to_string(), disk::human);
            let why = format!("disk full on {} ({free} free)", path.display());
            let mut delay = disk::backoff(tries);
            if let Some(left) = self.runtime_left() {
                if left.is_zero() {
                    return Err(RalphError::io(
                        format!("{why}; [general] max_runtime ran out while waiting for space"),
                        std::io::Error::from_raw_os_error(nix::libc::ENOSPC),
                    ));
                }
                delay = delay.min(left);
            }
            if tries == 0 {
                self.emit(RunEvent::DiskFull { path: path.display().to_string(), free: free.clone() });
            }
            self.r.reporter.waiting(&why, delay);
            let waited = self.race(tokio::time::sleep(delay), signals).await;
            self.r.reporter.clear();
            if let Err(end) = waited? {
                return Ok(Some(end));
            }
            // Try again: the checkpoint first (it is what a restart resumes from),
            // then the journal lines that were refused.
            self.disk_full = None;
            self.save_with(Durability::Durable)?;
            if self.disk_full.is_none()
                && let Err(e) = self.r.journal.flush_pending()
            {
                if !disk::is_full(&e) {
                    tracing::warn!("cannot append to the journal: {e}");
                }
                self.disk_full = disk::is_full(&e).then(|| self.r.journal.path().map(|p| p.to_path_buf())).flatten();
            }
            if self.disk_full.is_none()
                && let Some(log) = self.unsaved_log.as_mut()
            {
                log.flush();
                let _ = log.take_news();
                if log.on_disk() {
                    self.unsaved_log = None;
                } else {
                    self.disk_full = Some(log.current().to_path_buf());
                }
            }
            if self.disk_full.is_none() {
                self.emit(RunEvent::DiskSpaceBack { path: path.display().to_string() });
            }
            tries = tries.saturating_add(1);
        }
        Ok(None)
    }
}

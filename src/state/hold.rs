//! What a run holds of its directory: this host's lock ([`super::lock`]) and the
//! lease ([`super::ownership`]). Taking them says what a person should hear (who
//! holds them while ralph waits, a previous holder that did not stop cleanly) as
//! run events. A run that stops in order releases both, the lease first (an empty
//! lock is the mark of a clean stop, so it goes last); a run that never started
//! gives both back as they were; a drop keeps the lock's record, as a crash would.

use std::path::Path;

use crate::events::RunEvent;

use super::lock::{self, Acquired, LockError, RunLock};
use super::ownership::{self, AcquireError, Lease, Takeover, WhenHeld};

/// The lock and the lease of a run directory, either of which may be missing (a
/// simulated host takes no lock; a run that failed early took no lease).
#[derive(Debug, Default)]
pub(crate) struct Hold {
    pub lock: Option<RunLock>,
    pub lease: Option<Lease>,
}

impl Hold {
    /// Takes this host's lock at `path`; while another ralph holds it, waits when
    /// `when_held` says so (saying once who holds it) or refuses.
    pub(crate) fn take_lock(
        &mut self,
        path: &Path,
        when_held: WhenHeld,
        say: &mut dyn FnMut(RunEvent),
    ) -> Result<(), LockError> {
        let waiting = &mut |path: &Path, holder: Option<lock::LockInfo>| {
            let (pid, host) = (holder.as_ref().map(|h| h.pid), holder.map(|h| h.host));
            say(RunEvent::LockWait { path: path.display().to_string(), pid, host });
        };
        let taken = lock::take(path, when_held == WhenHeld::Wait, waiting)?;
        if let Some(stale) = stale(&taken) {
            say(stale);
        }
        self.lock = Some(taken.lock);
        Ok(())
    }

    /// Takes the lease at `path` (see [`ownership::acquire`]), saying what it waits
    /// for; the takeover of an owner that went away, if any, is returned.
    pub(crate) fn take_lease(
        &mut self,
        path: &Path,
        config: &crate::config::Watch,
        when_held: WhenHeld,
        say: &mut dyn FnMut(RunEvent),
    ) -> Result<Option<Takeover>, AcquireError> {
        let (lease, takeover) = ownership::acquire(path, &super::lease_file::identity(), config, when_held, say)?;
        self.lease = Some(lease);
        Ok(takeover)
    }

    /// Fencing before a write of the run's state: a ralph whose lease another host
    /// took stops at once (see `Lease::ensure_held`).
    pub(crate) fn ensure_held(&self) {
        if let Some(lease) = &self.lease {
            lease.ensure_held();
        }
    }

    /// This ralph stops in order: the lease released, then the lock emptied and
    /// unlocked when `clean` (the final state is on disk); otherwise the lock stays
    /// held with its record until ralph exits, and the next run sees an interrupted one.
    pub(crate) fn release(&mut self, clean: bool) {
        if let Some(mut lease) = self.lease.take() {
            lease.release().unwrap_or_else(|e| tracing::warn!("cannot release the lease: {e}"));
        }
        if clean && let Some(lock) = self.lock.take() {
            lock.release().unwrap_or_else(|e| tracing::warn!("cannot release the lock: {e}"));
        }
    }

    /// The run does not start: both files get back what they held before it (a
    /// crashed run's record stays the mark of that crash).
    pub(crate) fn give_back(&mut self) {
        if let Some(lease) = self.lease.take() {
            lease.give_back().unwrap_or_else(|e| tracing::warn!("cannot give the lease back: {e}"));
        }
        if let Some(lock) = self.lock.take() {
            lock.give_back().unwrap_or_else(|e| tracing::warn!("cannot give the lock back: {e}"));
        }
    }
}

/// What the new holder of the lock says of a previous one that did not stop
/// cleanly (who it was, when its record is readable); nothing after a clean stop.
#[must_use]
fn stale(taken: &Acquired) -> Option<RunEvent> {
    let stale = taken.stale.as_ref();
    (stale.is_some() || taken.stale_unreadable).then(|| RunEvent::LockStale {
        pid: stale.map(|s| s.pid),
        host: stale.map(|s| s.host.clone()),
        started_at: stale.map(|s| s.started_at.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::super::lock::{LockInfo, read_info};
    use super::*;

    fn taken(dir: &Path) -> Hold {
        let mut hold = Hold::default();
        hold.take_lock(&dir.join("ralph.lock"), WhenHeld::Refuse, &mut |_| {}).unwrap();
        let config = crate::config::Watch::default();
        hold.take_lease(&dir.join("ralph.lease"), &config, WhenHeld::Refuse, &mut |_| {}).unwrap();
        hold
    }

    #[test]
    fn a_clean_release_empties_both_and_an_unclean_one_keeps_the_lock_held() {
        let dir = tempfile::tempdir().unwrap();
        let (lock, lease) = (dir.path().join("ralph.lock"), dir.path().join("ralph.lease"));
        let mut hold = taken(dir.path());
        hold.release(false);
        assert!(hold.lease.is_none() && hold.lock.is_some(), "the lock stays held until ralph exits");
        assert_eq!(super::super::lease_file::read(&lease).unwrap(), super::super::lease::Found::Free);
        drop(hold);
        assert!(read_info(&lock).is_some(), "an unclean stop keeps the record");
        let mut hold = taken(dir.path());
        hold.release(true);
        assert!(hold.lock.is_none() && read_info(&lock).is_none(), "emptied");
    }

    #[test]
    fn a_hold_given_back_leaves_no_trace_of_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut hold = taken(dir.path());
        hold.give_back();
        assert!(!dir.path().join("ralph.lease").exists(), "there was no lease");
        assert_eq!(std::fs::metadata(dir.path().join("ralph.lock")).unwrap().len(), 0, "nor a lock record");
    }

    /// What the lock's previous holder left, as the new holder says it.
    fn said_of(content: &[u8]) -> Vec<RunEvent> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ralph.lock");
        std::fs::write(&path, content).unwrap();
        let mut said = Vec::new();
        Hold::default().take_lock(&path, WhenHeld::Refuse, &mut |event| said.push(event)).unwrap();
        said
    }

    #[test]
    fn a_previous_holder_that_did_not_stop_cleanly_is_named_when_its_record_reads() {
        assert_eq!(said_of(b""), [], "a clean stop says nothing");
        let old = LockInfo { pid: 999_999, host: "elsewhere".into(), boot_id: "old".into(), started_at: "t0".into() };
        let (pid, host, started_at) = (Some(old.pid), Some(old.host.clone()), Some(old.started_at.clone()));
        assert_eq!(
            said_of(serde_json::to_string(&old).unwrap().as_bytes()),
            [RunEvent::LockStale { pid, host, started_at }]
        );
        let unknown = RunEvent::LockStale { pid: None, host: None, started_at: None };
        assert_eq!(said_of(b"{\"pid\": 12"), [unknown]);
    }

    #[test]
    fn a_wait_for_the_lock_says_once_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ralph.lock");
        let held = lock::acquire(&path).unwrap();
        // Released once the wait is said (a holder that slept a while instead could
        // let go before the waiter first looked, on a loaded machine).
        let (waiting, wait_said) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            wait_said.recv_timeout(std::time::Duration::from_secs(60)).expect("the wait is said");
            held.lock.release().unwrap();
        });
        let mut said = Vec::new();
        let say = &mut |event| {
            said.push(event);
            let _ = waiting.send(());
        };
        Hold::default().take_lock(&path, WhenHeld::Wait, say).unwrap();
        holder.join().unwrap();
        let (pid, host) = (Some(std::process::id()), Some(LockInfo::current().host));
        assert_eq!(
            said,
            [RunEvent::LockWait { path: path.display().to_string(), pid, host }],
            "the clean release says no more"
        );
    }
}

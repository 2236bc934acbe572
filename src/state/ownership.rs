//! Taking and keeping the lease of the run directory (the rules are in
//! [`super::lease`], the file in [`super::lease_file`]): wait for another host's
//! lease to expire, take it over, renew it from a heartbeat thread while the run
//! lives where another host can read it, release it at the end. A heartbeat that
//! finds the lease taken over stops ralph at once.
//!
//! The lease is renewed only where it protects something: `.agent/` on a file
//! system other hosts mount (`os::is_shared_fs`: NFS, SMB, CephFS, a cluster or
//! FUSE file system), or anywhere with `[watch] lease_renewal = "always"`. On a
//! local disk only this kernel sees the directory and its flock says who owns the
//! run: the lease is written once, unsynced, and nothing wakes ralph for it.
//!
//! The heartbeat is a plain thread, not a task of the run's event loop: it keeps
//! renewing while the loop is busy, and it can stop the process even when the loop
//! is blocked. It forks nothing, so the agents' parent-death signal stays tied to
//! the main thread.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::config::{LeaseRenewal, Watch as WatchConfig};
use crate::events::RunEvent;

use super::lease::{self, FirstLook, Found, Identity, LeaseRecord, Renewal, Seen, Watch};
use super::lease_file;
use super::writes::Durability;

/// Whether to wait while another host's lease is live (`--resume-or-start`), or
/// refuse as soon as it is seen renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhenHeld {
    Wait,
    Refuse,
}

/// A lease this ralph took over from an owner that went away.
#[derive(Debug, Clone)]
pub(crate) struct Takeover {
    pub from: Option<LeaseRecord>,
    /// How long the lease was watched without a renewal (zero when the owner was
    /// known to be gone at once).
    pub waited: Duration,
    pub why: String,
}

impl Takeover {
    /// The takeover, as the journal records it.
    #[must_use]
    pub(crate) fn event(&self) -> RunEvent {
        let from = self.from.as_ref();
        RunEvent::LeaseTakenOver {
            from_host: from.map(|f| f.host.clone()),
            from_pid: from.map(|f| f.pid),
            from_boot_id: from.map(|f| f.boot_id.clone()),
            from_renewals: from.map(|f| f.renewals),
            waited_ms: self.waited.as_millis() as u64,
            why: self.why.clone(),
        }
    }
}

/// The held lease; renewed (where it is) until released or dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    path: PathBuf,
    token: String,
    /// `Ordered` where another host reads the lease (see `lease_file::write`).
    durability: Durability,
    /// The heartbeat's stop, where it renews.
    heartbeat: Option<mpsc::Sender<()>>,
    /// Set once released; the heartbeat renews only under this lock, and only while
    /// it is unset, so a release need not wait for the thread to end (a thread
    /// handoff is most of a one-call run's tear-down on a busy machine).
    released: Arc<Mutex<bool>>,
    /// The file's bytes before this ralph took the lease (`None`: there was no
    /// file), put back by [`Lease::give_back`] when the run refuses to start.
    previous: Option<Vec<u8>>,
}

/// Why the lease cannot be taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AcquireError {
    #[error("cannot use the lease {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// Another ralph holds it (the message says who and what to do).
    #[error("{0}")]
    Held(String),
}

/// Takes the lease at `path`, waiting as long as `when_held` says; `say` tells the
/// user what is going on: another host's ralph holds it and it is watched for
/// renewals (`lease_watch`), or another host took it at the same moment and
/// continues the run (`lease_lost`).
pub(crate) fn acquire(
    path: &Path,
    me: &Identity,
    config: &WatchConfig,
    when_held: WhenHeld,
    say: &mut dyn FnMut(RunEvent),
) -> Result<(Lease, Option<Takeover>), AcquireError> {
    let io = |source: std::io::Error| AcquireError::Io { path: path.to_path_buf(), source };
    let timeout = config.lease_timeout;
    let renews =
        config.lease_renewal == LeaseRenewal::Always || crate::os::is_shared_fs(super::atomic::parent_dir(path));
    let durability = if renews { Durability::Ordered } else { Durability::Unsynced };
    let poll = (timeout / 8).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut told = false;
    let previous = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    loop {
        let found = lease_file::read(path).map_err(io)?;
        let takeover = match lease::first_look(me, &found) {
            FirstLook::Take => None,
            FirstLook::TakeOver(why) => Some(Takeover {
                from: if let Found::Held(r) = found { Some(r) } else { None },
                waited: Duration::ZERO,
                why: why.to_string(),
            }),
            FirstLook::Watch(record) => {
                if !told {
                    let (pid, host, renewals) = (record.pid, record.host.clone(), record.renewals);
                    say(RunEvent::LeaseWatch { pid, host, renewals, timeout_ms: timeout.as_millis() as u64 });
                    told = true;
                }
                match watch(path, me, &record, timeout, poll, when_held).map_err(io)? {
                    Watched::Free => continue,
                    Watched::Expired(takeover) => Some(takeover),
                    Watched::Live(record) => {
                        return Err(AcquireError::Held(format!(
                            "another ralph (pid {} on host {}) holds the lease of this directory and renewed it \
                             while this one watched; wait for it to finish, or use --resume-or-start to wait",
                            record.pid, record.host
                        )));
                    }
                }
            }
        };
        let record = LeaseRecord {
            host: me.host.clone(),
            boot_id: me.boot_id.clone(),
            pid: std::process::id(),
            token: new_token(),
            renewals: 0,
            acquired_at: jiff::Timestamp::now().to_string(),
        };
        lease_file::write(path, &record, durability).map_err(io)?;
        if takeover.as_ref().is_some_and(|t| !t.waited.is_zero()) {
            // Two hosts that saw the same lease expire both write; the last write
            // wins. Look again after a renewal period: a loser backs off before it
            // has done anything.
            thread::sleep(lease::renew_every(timeout).min(Duration::from_secs(2)));
            if let Renewal::Lost(winner) = lease::renewal(&record.token, &lease_file::read(path).map_err(io)?) {
                say(RunEvent::LeaseLost { host: winner.host.clone() });
                if when_held == WhenHeld::Refuse {
                    return Err(AcquireError::Held(format!(
                        "another ralph (pid {} on host {}) took the lease of this directory",
                        winner.pid, winner.host
                    )));
                }
                continue;
            }
        }
        let mut lease =
            Lease::start(path, record, durability, renews.then(|| lease::renew_every(timeout))).map_err(io)?;
        lease.previous = previous;
        return Ok((lease, takeover));
    }
}

enum Watched {
    Free,
    Live(LeaseRecord),
    Expired(Takeover),
}

fn watch(
    path: &Path,
    me: &Identity,
    record: &LeaseRecord,
    timeout: Duration,
    poll: Duration,
    when_held: WhenHeld,
) -> std::io::Result<Watched> {
    let mut w = Watch::start(record, Instant::now(), timeout);
    loop {
        thread::sleep(poll);
        match w.observe(me, &lease_file::read(path)?, Instant::now()) {
            Seen::Free => return Ok(Watched::Free),
            Seen::Renewed(r) if when_held == WhenHeld::Refuse => return Ok(Watched::Live(r)),
            Seen::Renewed(_) | Seen::Unchanged { .. } => {}
            Seen::Expired { record, waited } => {
                return Ok(Watched::Expired(Takeover {
                    why: format!(
                        "not renewed for {}",
                        humantime::format_duration(Duration::from_millis(waited.as_millis() as u64))
                    ),
                    from: Some(record),
                    waited,
                }));
            }
        }
    }
}

fn new_token() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{}-{nanos:x}", std::process::id())
}

impl Lease {
    /// Holds the lease just written, renewing it `every` so often if given.
    fn start(
        path: &Path,
        mut record: LeaseRecord,
        durability: Durability,
        every: Option<Duration>,
    ) -> std::io::Result<Lease> {
        let (token, released) = (record.token.clone(), Arc::new(Mutex::new(false)));
        let mut lease =
            Lease { path: path.to_path_buf(), token, durability, heartbeat: None, released, previous: None };
        let Some(every) = every else { return Ok(lease) };
        let (tx, rx) = mpsc::channel::<()>();
        let (file, gate) = (path.to_path_buf(), Arc::clone(&lease.released));
        thread::Builder::new().name("lease".into()).spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                let Ok(done) = gate.lock() else { return };
                if *done {
                    return;
                }
                record.renewals += 1;
                match lease_file::write_if_held(&file, &record.token, Some(&record), durability) {
                    Ok(Renewal::Renew) => {}
                    Ok(Renewal::Lost(winner)) => lost(&winner),
                    Err(e) => tracing::warn!("cannot renew the lease {}: {e}", file.display()),
                }
            }
        })?;
        lease.heartbeat = Some(tx);
        Ok(lease)
    }

    /// Stops ralph at once (see `lost`) when another ralph holds the lease now.
    /// Called before every write of the run's state: after a freeze the main
    /// thread may get to a write before the heartbeat gets to its next look. An
    /// unreadable lease is not a loss (the next look decides).
    pub(crate) fn ensure_held(&self) {
        if let Ok(found) = lease_file::read(&self.path)
            && let Renewal::Lost(winner) = lease::renewal(&self.token, &found)
        {
            lost(&winner);
        }
    }

    /// A command that refuses changes nothing: the lease file gets back what it
    /// held before (a crashed owner's record stays for the next ralph to take
    /// over and say so), if it is still ours.
    pub(crate) fn give_back(mut self) -> std::io::Result<()> {
        if !self.stop_heartbeat() {
            return Ok(());
        }
        let ours = || Ok(lease::renewal(&self.token, &lease_file::read(&self.path)?) == Renewal::Renew);
        match self.previous.take() {
            Some(bytes) => super::atomic::replace_if(&self.path, &bytes, self.durability, ours).map(drop),
            None if ours()? => std::fs::remove_file(&self.path),
            None => Ok(()),
        }
    }

    /// Stops the heartbeat; whether the lease was held until now.
    fn stop_heartbeat(&mut self) -> bool {
        let mut released = self.released.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = self.heartbeat.take() {
            let _ = tx.send(());
        }
        !std::mem::replace(&mut *released, true)
    }

    /// Stops renewing and empties the lease if it is still ours (a drop does too).
    pub(crate) fn release(&mut self) -> std::io::Result<()> {
        if !self.stop_heartbeat() {
            return Ok(());
        }
        lease_file::write_if_held(&self.path, &self.token, None, self.durability).map(drop)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Not a clean stop: the record stays, and the next ralph takes it over.
            self.stop_heartbeat();
            return;
        }
        let _ = self.release();
    }
}

/// Another ralph owns the run now: whatever this one would still write could
/// overwrite its state. Leave at once; the agents die with ralph (parent-death
/// signal), the checkpoint stays as the new owner writes it.
fn lost(winner: &LeaseRecord) -> ! {
    eprintln!(
        "ralph: ralph pid {} on host {} took this run over while this ralph was not renewing its lease \
         (frozen or cut off for longer than [watch] lease_timeout); stopping at once without touching the run's state",
        winner.pid, winner.host
    );
    std::process::exit(crate::exit_codes::INTERNAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease_path() -> (tempfile::TempDir, PathBuf) {
        crate::testkit::temp_file("ralph.lease")
    }

    /// Releases `lease`: the lease file at `p` is free again.
    #[track_caller]
    fn released(mut lease: Lease, p: &Path) {
        lease.release().unwrap();
        assert_eq!(lease_file::read(p).unwrap(), Found::Free);
    }

    /// The record of an earlier owner on `host` (boot `boot-HOST`), token `old`.
    fn old_record(host: &str, pid: u32, renewals: u64) -> LeaseRecord {
        LeaseRecord {
            host: host.into(),
            boot_id: format!("boot-{host}"),
            pid,
            token: "old".into(),
            renewals,
            acquired_at: String::new(),
        }
    }

    fn me(host: &str) -> Identity {
        Identity { host: host.into(), boot_id: format!("boot-{host}") }
    }

    /// `[watch]` with this timeout, the lease renewed on the test's local disk.
    fn renewed(timeout: Duration) -> WatchConfig {
        WatchConfig { lease_timeout: timeout, lease_renewal: LeaseRenewal::Always, ..WatchConfig::default() }
    }

    #[test]
    fn a_lease_on_a_local_disk_is_written_once_and_never_renewed() {
        let (_dir, p) = lease_path();
        let config = WatchConfig { lease_timeout: Duration::from_millis(40), ..WatchConfig::default() };
        let (lease, _) = acquire(&p, &me("a"), &config, WhenHeld::Refuse, &mut |_| {}).unwrap();
        assert!(lease.heartbeat.is_none(), "no heartbeat thread");
        thread::sleep(Duration::from_millis(100));
        assert!(matches!(lease_file::read(&p).unwrap(), Found::Held(r) if r.renewals == 0));
        released(lease, &p);
    }

    #[test]
    fn a_lease_given_back_is_as_it_was() {
        let (_dir, p) = lease_path();
        let config = WatchConfig::default();
        let (lease, _) = acquire(&p, &me("a"), &config, WhenHeld::Refuse, &mut |_| {}).unwrap();
        lease.give_back().unwrap();
        assert!(!p.exists(), "there was no lease file");
        // A dead owner of this host: taken over at once, and its record put back.
        let dead = old_record("a", 999_999_999, 3);
        lease_file::write(&p, &dead, Durability::Unsynced).unwrap();
        let before = std::fs::read(&p).unwrap();
        let (lease, takeover) = acquire(&p, &me("a"), &config, WhenHeld::Refuse, &mut |_| {}).unwrap();
        assert!(takeover.is_some());
        lease.give_back().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), before);
    }

    #[test]
    fn free_lease_is_taken_renewed_and_released() {
        let (_dir, p) = lease_path();
        let (lease, takeover) =
            acquire(&p, &me("a"), &renewed(Duration::from_millis(200)), WhenHeld::Refuse, &mut |_| {}).unwrap();
        assert!(takeover.is_none());
        let renewals = |p: &Path| match lease_file::read(p).unwrap() {
            Found::Held(r) => r.renewals,
            other => panic!("{other:?}"),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while renewals(&p) < 2 {
            assert!(Instant::now() < deadline, "no renewal");
            thread::sleep(Duration::from_millis(10));
        }
        released(lease, &p);
    }

    #[test]
    fn another_hosts_dead_lease_is_taken_over_after_the_timeout() {
        let (_dir, p) = lease_path();
        let theirs = old_record("b", 9, 5);
        lease_file::write(&p, &theirs, Durability::Ordered).unwrap();
        let timeout = Duration::from_millis(300);
        let mut said = Vec::new();
        let (lease, takeover) =
            acquire(&p, &me("a"), &renewed(timeout), WhenHeld::Refuse, &mut |event| said.push(event)).unwrap();
        let (host, renewals) = ("b".to_string(), 5);
        assert_eq!(said, [RunEvent::LeaseWatch { pid: 9, host, renewals, timeout_ms: 300 }], "said once");
        let takeover = takeover.unwrap();
        assert_eq!(takeover.from, Some(theirs));
        assert!(takeover.waited >= timeout);
        drop(lease);
    }

    /// Host b renews its lease while a watches (b's renewal is written when a says
    /// it watches, not by a heartbeat thread that a loaded machine may hold back past
    /// the timeout): a refuses at the renewal and leaves b's lease as it is. The
    /// timeout only bounds a hang.
    #[test]
    fn a_live_lease_is_refused_when_not_waiting() {
        let (_dir, p) = lease_path();
        let theirs = old_record("b", 9, 0);
        lease_file::write(&p, &theirs, Durability::Ordered).unwrap();
        let renewal = LeaseRecord { renewals: 1, ..theirs };
        let mut watched = false;
        let renew = &mut |event| {
            assert!(matches!(event, RunEvent::LeaseWatch { .. }), "{event:?}");
            lease_file::write(&p, &renewal, Durability::Ordered).unwrap();
            watched = true;
        };
        let err = acquire(&p, &me("a"), &renewed(Duration::from_secs(60)), WhenHeld::Refuse, renew).unwrap_err();
        assert!(watched, "a watched the lease before refusing it");
        assert!(err.to_string().contains("on host b"), "{err}");
        assert_eq!(lease_file::read(&p).unwrap(), Found::Held(renewal.clone()), "b's lease is untouched");
    }
}

//! The lease on a run directory that another host can mount (a Kubernetes
//! PersistentVolumeClaim, NFS): who owns the run when a pid cannot be checked.
//! Pure decisions only; the file is read and written by [`super::lease_file`] and
//! renewed by `state::ownership`.
//!
//! The owner writes `{host, boot_id, pid, token, renewals}` and bumps `renewals`
//! four times per `[watch] lease_timeout`. Another ralph decides from it:
//!
//! * no lease, or an unreadable one: the directory is free;
//! * a lease written under this kernel (the same boot id, whatever the container's
//!   host name): the flock on `ralph.lock`, which this ralph already holds, says
//!   its owner is gone; or a lease of this host name from an earlier boot: take it
//!   at once;
//! * a lease of another host: live until the pair (token, renewals) has not
//!   changed for `lease_timeout`, timed on the taker's own monotonic clock. The
//!   other host's clock is never read: clocks of two machines disagree, a counter
//!   that stopped moving does not.
//!
//! The owner looks at the lease at each renewal, after its new record is written
//! and synced and right before the rename that puts it in (`atomic::replace_if`): a
//! token that is not its own means it was taken over while this ralph was frozen
//! (SIGSTOP, a suspended VM, a partition) and it must stop at once without touching
//! the run's state. An owner frozen in the middle of a renewal thus looks again when
//! it wakes; one that looked first would write its renewal over the new owner's
//! lease, and the new owner would be the one to stop.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// `.agent/ralph.lease`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LeaseRecord {
    pub host: String,
    /// The owner's `/proc/sys/kernel/random/boot_id`; empty when unreadable.
    pub boot_id: String,
    pub pid: u32,
    /// New for every acquisition: tells this holding from an earlier one of the
    /// same host and pid.
    pub token: String,
    /// Bumped at every renewal; the only thing another host watches.
    pub renewals: u64,
    /// RFC 3339, for people.
    pub acquired_at: String,
}

/// The machine a ralph runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub host: String,
    pub boot_id: String,
}

impl Identity {
    /// Whether `record` was written under this kernel, where the flock on
    /// `ralph.lock` reaches: the same boot id (containers of one machine share it
    /// while their host names differ), or the same host name when a boot id is
    /// unknown.
    fn same_kernel(&self, record: &LeaseRecord) -> bool {
        let boot_unknown = record.boot_id.is_empty() || self.boot_id.is_empty();
        if boot_unknown { record.host == self.host } else { record.boot_id == self.boot_id }
    }
}

/// What the lease file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// Missing or empty: released cleanly, or never taken.
    Free,
    /// Content that does not parse (edited by hand, copied in part).
    Unreadable,
    Held(LeaseRecord),
}

/// The first decision on a lease, before any watching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FirstLook {
    /// Free: take it.
    Take,
    /// Left behind by an owner known to be gone: take it over at once.
    TakeOver(&'static str),
    /// Held by another host: watch its counter for `lease_timeout`.
    Watch(LeaseRecord),
}

pub(crate) fn first_look(me: &Identity, found: &Found) -> FirstLook {
    match found {
        Found::Free => FirstLook::Take,
        Found::Unreadable => FirstLook::TakeOver("the lease file does not parse"),
        Found::Held(r) if me.same_kernel(r) => {
            FirstLook::TakeOver("its owner ran on this machine, whose lock says it is gone")
        }
        Found::Held(r) if r.host == me.host => FirstLook::TakeOver("this host rebooted since its owner ran"),
        Found::Held(r) => FirstLook::Watch(r.clone()),
    }
}

/// Watching another host's lease on this host's monotonic clock.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    seen: (String, u64),
    since: Instant,
    timeout: Duration,
}

/// One look at a watched lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The lease was released, or is now one that can be taken at once.
    Free,
    /// The counter (or the holder) changed: the owner is alive; the clock restarts.
    Renewed(LeaseRecord),
    /// Unchanged, for less than the timeout so far.
    Unchanged { left: Duration },
    /// Unchanged for the whole timeout: the owner is gone.
    Expired { record: LeaseRecord, waited: Duration },
}

impl Watch {
    pub(crate) fn start(record: &LeaseRecord, now: Instant, timeout: Duration) -> Self {
        Self { seen: (record.token.clone(), record.renewals), since: now, timeout }
    }

    pub(crate) fn observe(&mut self, me: &Identity, found: &Found, now: Instant) -> Seen {
        let FirstLook::Watch(record) = first_look(me, found) else { return Seen::Free };
        let key = (record.token.clone(), record.renewals);
        if key != self.seen {
            (self.seen, self.since) = (key, now);
            return Seen::Renewed(record);
        }
        let waited = now.saturating_duration_since(self.since);
        if waited >= self.timeout {
            Seen::Expired { record, waited }
        } else {
            Seen::Unchanged { left: self.timeout - waited }
        }
    }
}

/// The owner's look before a renewal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Still ours (or emptied by someone: nobody else claims it): write the next count.
    Renew,
    /// Another ralph holds it now: stop at once, touch nothing.
    Lost(LeaseRecord),
}

pub(crate) fn renewal(token: &str, found: &Found) -> Renewal {
    match found {
        Found::Held(r) if r.token != token => Renewal::Lost(r.clone()),
        _ => Renewal::Renew,
    }
}

/// Time between renewals: four per timeout, so a taker watching for a whole
/// timeout sees several renewals of a live owner even when one write is slow.
pub(crate) fn renew_every(timeout: Duration) -> Duration {
    timeout / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Identity {
        Identity { host: "node-a".into(), boot_id: "boot-1".into() }
    }

    fn record(host: &str, boot: &str, token: &str, renewals: u64) -> LeaseRecord {
        LeaseRecord {
            host: host.into(),
            boot_id: boot.into(),
            pid: 7,
            token: token.into(),
            renewals,
            acquired_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn free_and_unreadable_are_taken_at_once() {
        assert_eq!(first_look(&me(), &Found::Free), FirstLook::Take);
        assert!(matches!(first_look(&me(), &Found::Unreadable), FirstLook::TakeOver(_)));
    }

    #[test]
    fn this_hosts_lease_is_taken_over_at_once_whatever_the_boot() {
        let same = Found::Held(record("node-a", "boot-1", "t", 3));
        assert!(matches!(first_look(&me(), &same), FirstLook::TakeOver(w) if w.contains("lock")));
        let rebooted = Found::Held(record("node-a", "boot-0", "t", 3));
        assert!(matches!(first_look(&me(), &rebooted), FirstLook::TakeOver(w) if w.contains("rebooted")));
        let unknown_boot = Found::Held(record("node-a", "", "t", 3));
        assert!(matches!(first_look(&me(), &unknown_boot), FirstLook::TakeOver(_)));
    }

    #[test]
    fn another_container_of_this_machine_is_this_kernel() {
        // A new pod on the same node: another host name, the node's boot id.
        let r = Found::Held(record("pod-2", "boot-1", "t", 3));
        assert!(matches!(first_look(&me(), &r), FirstLook::TakeOver(w) if w.contains("machine")));
    }

    #[test]
    fn another_hosts_lease_is_watched() {
        let r = record("node-b", "boot-9", "t", 3);
        assert_eq!(first_look(&me(), &Found::Held(r.clone())), FirstLook::Watch(r));
    }

    #[test]
    fn expires_only_after_a_whole_timeout_without_a_change() {
        let t0 = Instant::now();
        let timeout = Duration::from_secs(60);
        let r = record("node-b", "boot-9", "t", 3);
        let mut w = Watch::start(&r, t0, timeout);
        let held = Found::Held(r.clone());
        assert_eq!(
            w.observe(&me(), &held, t0 + Duration::from_secs(59)),
            Seen::Unchanged { left: Duration::from_secs(1) }
        );
        assert_eq!(w.observe(&me(), &held, t0 + Duration::from_secs(60)), Seen::Expired { record: r, waited: timeout });
    }

    #[test]
    fn a_renewal_restarts_the_clock() {
        let t0 = Instant::now();
        let timeout = Duration::from_secs(60);
        let mut w = Watch::start(&record("node-b", "b", "t", 3), t0, timeout);
        let renewed = record("node-b", "b", "t", 4);
        let at = t0 + Duration::from_secs(50);
        assert_eq!(w.observe(&me(), &Found::Held(renewed.clone()), at), Seen::Renewed(renewed.clone()));
        // 100 s after the start, but only 50 s after the renewal.
        assert_eq!(
            w.observe(&me(), &Found::Held(renewed.clone()), t0 + Duration::from_secs(100)),
            Seen::Unchanged { left: Duration::from_secs(10) }
        );
        assert!(matches!(w.observe(&me(), &Found::Held(renewed), t0 + Duration::from_secs(110)), Seen::Expired { .. }));
    }

    #[test]
    fn a_new_holder_with_the_same_count_is_a_change() {
        let t0 = Instant::now();
        let mut w = Watch::start(&record("node-b", "b", "t1", 0), t0, Duration::from_secs(60));
        let other = record("node-c", "c", "t2", 0);
        assert_eq!(w.observe(&me(), &Found::Held(other.clone()), t0 + Duration::from_secs(61)), Seen::Renewed(other));
    }

    #[test]
    fn released_while_watching_is_free() {
        let t0 = Instant::now();
        let mut w = Watch::start(&record("node-b", "b", "t", 0), t0, Duration::from_secs(60));
        assert_eq!(w.observe(&me(), &Found::Free, t0), Seen::Free);
    }

    #[test]
    fn the_owner_renews_its_own_lease_and_stops_on_anothers() {
        assert_eq!(renewal("mine", &Found::Held(record("node-a", "boot-1", "mine", 9))), Renewal::Renew);
        assert_eq!(renewal("mine", &Found::Free), Renewal::Renew);
        let theirs = record("node-b", "b", "theirs", 0);
        assert_eq!(renewal("mine", &Found::Held(theirs.clone())), Renewal::Lost(theirs));
    }

    #[test]
    fn four_renewals_per_timeout() {
        assert_eq!(renew_every(Duration::from_secs(60)), Duration::from_secs(15));
    }
}

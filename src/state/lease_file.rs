//! Reading and writing `.agent/ralph.lease` (see [`super::lease`] for what it
//! means). Every write replaces the whole file atomically, so a reader on any
//! host sees one complete record or none.

use std::io;
use std::path::Path;

use super::atomic;
use super::lease::{self, Found, Identity, LeaseRecord, Renewal};
use super::writes::Durability;

/// Test-only: pretend to be the host named here (two "hosts" on one machine share
/// a kernel, so a simulated host also skips the kernel's flock, which another
/// machine could not see). Never set it in production.
pub(crate) const TEST_HOST_VAR: &str = "RALPH_TEST_HOST";

/// This machine, or the simulated one of [`TEST_HOST_VAR`].
pub(crate) fn identity() -> Identity {
    match simulated_host() {
        Some(host) => Identity { boot_id: format!("test-boot-of-{host}"), host },
        None => Identity {
            host: nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default(),
            boot_id: super::lock::boot_id(),
        },
    }
}

/// The simulated host name, when a test set one.
pub(crate) fn simulated_host() -> Option<String> {
    std::env::var(TEST_HOST_VAR).ok().filter(|h| !h.is_empty())
}

pub(crate) fn read(path: &Path) -> io::Result<Found> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Found::Free),
        Ok(text) => Ok(serde_json::from_str(text.trim()).map_or(Found::Unreadable, Found::Held)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Found::Free),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(Found::Unreadable),
        Err(e) => Err(e),
    }
}

/// `durability` is the owner's (`state::ownership`): `Ordered` where another host
/// reads the lease, so that it never reads the new name without its content (a
/// shared file system may send the rename first); `Unsynced` where none can. The
/// directory is never synced: a power cut that brings the previous lease back also
/// ended its holder, and the lease of a dead holder is taken over either way.
pub(crate) fn write(path: &Path, record: &LeaseRecord, durability: Durability) -> io::Result<()> {
    let line = format!("{}\n", serde_json::to_string(record).map_err(io::Error::other)?);
    atomic::replace(path, line.as_bytes(), durability)
}

/// Writes `record` (`None`: empties the lease, a clean release; the file stays,
/// like the lock's) if the lease is still the holder's of `token`, looked at last
/// (`atomic::replace_if`): an owner frozen in the middle of this write while
/// another host took the lease over finds it lost when it wakes, instead of
/// writing over the new owner's lease. What the look found: `Renew` when written.
pub(crate) fn write_if_held(
    path: &Path,
    token: &str,
    record: Option<&LeaseRecord>,
    durability: Durability,
) -> io::Result<Renewal> {
    let line = match record {
        Some(record) => format!("{}\n", serde_json::to_string(record).map_err(io::Error::other)?),
        None => String::new(),
    };
    let mut found = Renewal::Renew;
    atomic::replace_if(path, line.as_bytes(), durability, || {
        found = lease::renewal(token, &read(path)?);
        Ok(found == Renewal::Renew)
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_free_states() {
        let (_dir, p) = crate::testkit::temp_file("ralph.lease");
        assert_eq!(read(&p).unwrap(), Found::Free);
        let r = LeaseRecord {
            host: "h".into(),
            boot_id: "b".into(),
            pid: 1,
            token: "t".into(),
            renewals: 2,
            acquired_at: "now".into(),
        };
        write(&p, &r, Durability::Ordered).unwrap();
        assert_eq!(read(&p).unwrap(), Found::Held(r));
        assert_eq!(write_if_held(&p, "t", None, Durability::Unsynced).unwrap(), Renewal::Renew);
        assert_eq!(read(&p).unwrap(), Found::Free);
        std::fs::write(&p, "{\"host\": ").unwrap();
        assert_eq!(read(&p).unwrap(), Found::Unreadable);
        std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(read(&p).unwrap(), Found::Unreadable);
    }

    /// An owner that wakes up (frozen in its renewal's fsync) after another host
    /// took the lease over writes nothing over the new owner's lease, neither a
    /// renewal nor a release, and learns who holds it.
    #[test]
    fn a_holder_that_lost_the_lease_writes_nothing() {
        let (_dir, p) = crate::testkit::temp_file("ralph.lease");
        let record = |host: &str, token: &str| LeaseRecord {
            host: host.into(),
            boot_id: host.into(),
            pid: 1,
            token: token.into(),
            renewals: 0,
            acquired_at: String::new(),
        };
        let theirs = record("b", "new");
        write(&p, &theirs, Durability::Ordered).unwrap();
        let lost = Renewal::Lost(theirs.clone());
        assert_eq!(write_if_held(&p, "old", Some(&record("a", "old")), Durability::Ordered).unwrap(), lost);
        assert_eq!(write_if_held(&p, "old", None, Durability::Ordered).unwrap(), lost);
        assert_eq!(read(&p).unwrap(), Found::Held(theirs));
    }
}

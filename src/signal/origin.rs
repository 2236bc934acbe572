//! Who asked for a stop by SIGTERM, and what that means (docs/operations.md, "Who
//! sent the SIGTERM"). A SIGTERM sent by a process of the user's own (`kill PID`, a
//! script, `pkill`, `timeout`) is a deliberate stop: the run is saved `paused` and
//! no watchdog resumes it. A SIGTERM from the machine stays a resumable
//! interruption:
//!
//! * an unknown sender (pid 0: the kernel, or a process outside ralph's pid
//!   namespace, as a container runtime evicting a pod);
//! * PID 1 (a shutdown, a container's init);
//! * a process of another user (root: the system's scripts and managers);
//! * a service manager, known by its program name (`systemd`, the user's manager
//!   included, `supervisord`, `runsv`, `s6-supervise`, `tini`, `dumb-init`,
//!   `docker-init`, `containerd-shim…`, `conmon`, `launchd`, `init`), or one named in
//!   `[watch] service_managers`.
//!
//! A sender of the user's own that is gone by the time ralph looks (a `kill` or
//! `pkill` exits right after it sends) is deliberate too: a service manager
//! outlives its signal. SIGHUP (a closed terminal) is always an interruption.
//! [`classify`] is the pure rule; [`Sender::find`] gathers its facts.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// Service managers, by the program name `/proc` shows.
const MANAGERS: [&str; 11] = [
    "systemd",
    "init",
    "supervisord",
    "runsv",
    "s6-supervise",
    "tini",
    "dumb-init",
    "docker-init",
    "containerd-shim",
    "conmon",
    "launchd",
];

/// Who sent a SIGTERM, as far as the kernel and `/proc` could tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sender {
    /// 0: unknown (the kernel, or a process outside ralph's pid namespace).
    pub pid: i32,
    pub uid: u32,
    /// Its program names (`comm`, the executable's file name) when it was still
    /// there to ask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program: Vec<String>,
    /// What that makes it.
    pub origin: Origin,
}

/// What a SIGTERM's sender is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Origin {
    /// pid 0: the kernel, or a process ralph cannot see (a container runtime).
    Unknown,
    /// PID 1: a shutdown, a container's init.
    Init,
    /// A process of another user: the system.
    OtherUser,
    /// A service manager, by its program name.
    ServiceManager,
    /// A process of the user's own, or one gone before ralph could look: a
    /// deliberate stop.
    User,
}

impl Origin {
    /// Whether the stop was the user's decision (not resumed by a watchdog).
    pub(crate) fn deliberate(self) -> bool {
        self == Origin::User
    }
}

/// The rule: what a SIGTERM from `pid` (uid `uid`) is, given the sender's program
/// names (empty when it was gone), ralph's own uid and the extra managers of
/// `[watch] service_managers`.
#[must_use]
pub(crate) fn classify(pid: i32, uid: u32, program: &[String], own_uid: u32, extra: &[String]) -> Origin {
    let manager = |name: &String| {
        MANAGERS.iter().any(|m| name == m || (*m == "containerd-shim" && name.starts_with(m)))
            || extra.iter().any(|e| e == name)
    };
    match pid {
        0 => Origin::Unknown,
        1 => Origin::Init,
        _ if uid != own_uid => Origin::OtherUser,
        _ if program.iter().any(manager) => Origin::ServiceManager,
        _ => Origin::User,
    }
}

/// The sender of the SIGTERM that stopped this process's run, once it came.
static STOPPED_BY: OnceLock<Sender> = OnceLock::new();

/// Classifies the sender of the SIGTERM that just came (the first one: later ones
/// change nothing) and keeps it for [`stopped_by`]; whether it was a deliberate stop.
pub(crate) fn found(extra: &[String]) -> bool {
    if let Some(sender) = Sender::find(extra) {
        let _ = STOPPED_BY.set(sender);
    }
    STOPPED_BY.get().is_some_and(|s| s.origin.deliberate())
}

/// Who sent the SIGTERM that stopped this run, for its checkpoint.
pub(crate) fn stopped_by() -> Option<Sender> {
    STOPPED_BY.get().cloned()
}

impl Sender {
    /// The sender of the first SIGTERM to this process, classified; `None` when no
    /// SIGTERM came (or its sender was not recorded).
    pub(crate) fn find(extra: &[String]) -> Option<Sender> {
        let sent = crate::os::origin::first(false)?;
        let program = if sent.pid > 1 { crate::os::origin::program(sent.pid) } else { None };
        // A pid reused by a process of another user since is not the sender.
        let program = program.filter(|(_, uid)| *uid == sent.uid).map(|(names, _)| names).unwrap_or_default();
        let origin = classify(sent.pid, sent.uid, &program, crate::os::origin::own_uid(), extra);
        Some(Sender { pid: sent.pid, uid: sent.uid, program, origin })
    }

    /// The sender in words: `pid 4242 (bash), a process of yours`.
    pub(crate) fn describe(&self) -> String {
        let name = self.program.first().map(|p| format!(" ({p})")).unwrap_or_default();
        match self.origin {
            Origin::Unknown => "an unknown sender (the kernel, or a process outside ralph's pid namespace)".into(),
            Origin::Init => format!("PID 1{name}, a shutdown or a container's init"),
            Origin::OtherUser => format!("pid {}{name} of another user (uid {}), the system", self.pid, self.uid),
            Origin::ServiceManager => format!("pid {}{name}, a service manager", self.pid),
            Origin::User if self.program.is_empty() => {
                format!("pid {}, a process of yours that ended right after (kill, pkill)", self.pid)
            }
            Origin::User => format!("pid {}{name}, a process of yours", self.pid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_machine_interrupts_and_the_user_decides() {
        let me = 1000;
        let none: Vec<String> = Vec::new();
        assert_eq!(classify(0, 0, &none, me, &none), Origin::Unknown);
        assert_eq!(classify(1, 0, &names(&["systemd"]), me, &none), Origin::Init);
        assert_eq!(classify(1, me, &none, me, &none), Origin::Init);
        assert_eq!(classify(700, 0, &names(&["killall5"]), me, &none), Origin::OtherUser);
        assert_eq!(classify(812, me, &names(&["systemd"]), me, &none), Origin::ServiceManager);
        assert_eq!(classify(812, me, &names(&["containerd-shim-runc-v2"]), me, &none), Origin::ServiceManager);
        assert_eq!(classify(812, me, &names(&["nomad"]), me, &names(&["nomad"])), Origin::ServiceManager);
        for user in [&["bash"][..], &["kill"], &["pkill"], &["timeout"], &["python3", "python3.12"], &[]] {
            assert_eq!(classify(4242, me, &names(user), me, &none), Origin::User, "{user:?}");
        }
        // Root's own ralph: root's kill is the user's.
        assert_eq!(classify(4242, 0, &names(&["bash"]), 0, &none), Origin::User);
        assert!(Origin::User.deliberate());
        for origin in [Origin::Unknown, Origin::Init, Origin::OtherUser, Origin::ServiceManager] {
            assert!(!origin.deliberate(), "{origin:?}");
        }
    }
}

//! Who sent ralph its SIGTERM or SIGHUP: the sender's pid and uid, as the kernel
//! hands them to a signal handler installed with `SA_SIGINFO` (`si_pid`, `si_uid`),
//! and what `/proc` says of that process while it is still there. tokio's signal
//! streams say only that a signal came; this handler runs beside them (the
//! registry of signal-hook calls every action registered for a signal).

use std::sync::atomic::{AtomicU64, Ordering};

use nix::libc;

/// The first sender of each signal, packed: bit 63 set, the pid in bits 32..63, the
/// uid below; 0 while none came.
static FIRST_TERM: AtomicU64 = AtomicU64::new(0);
static FIRST_HUP: AtomicU64 = AtomicU64::new(0);

/// The sender of a signal as the kernel told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent {
    /// 0 when the kernel sent it, or a process the receiver cannot see (another pid
    /// namespace: a container runtime).
    pub pid: i32,
    pub uid: u32,
}

/// Starts recording the first sender of SIGTERM and of SIGHUP. Call once, before
/// the signals matter; later calls add nothing.
pub(crate) fn record() -> std::io::Result<()> {
    static ONCE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let done = ONCE.get_or_init(|| {
        for (signal, slot) in [(libc::SIGTERM, &FIRST_TERM), (libc::SIGHUP, &FIRST_HUP)] {
            // SAFETY: the action only reads the siginfo the kernel passed and does one
            // compare-and-swap on an atomic: async-signal-safe, no allocation, no lock.
            let registered = unsafe {
                signal_hook_registry::register_sigaction(signal, move |info: &libc::siginfo_t| {
                    let _ = slot.compare_exchange(0, pack(info), Ordering::SeqCst, Ordering::SeqCst);
                })
            };
            registered.map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    done.clone().map_err(std::io::Error::other)
}

/// Who sent the first SIGTERM (`hangup`: SIGHUP) since [`record`]; `None` before one came.
pub(crate) fn first(hangup: bool) -> Option<Sent> {
    let packed = if hangup { &FIRST_HUP } else { &FIRST_TERM }.load(Ordering::SeqCst);
    (packed != 0).then_some(Sent { pid: ((packed >> 32) & 0x7fff_ffff) as i32, uid: packed as u32 })
}

fn pack(info: &libc::siginfo_t) -> u64 {
    // SI_USER and SI_QUEUE, SI_TKILL (0 and below) come from a process; anything
    // above 0 is the kernel's, whose pid field means nothing.
    // SAFETY: si_pid/si_uid read the union fields of a signal sent by kill(2),
    // which is what si_code <= 0 says it is.
    let (pid, uid) = if info.si_code <= 0 { unsafe { (info.si_pid(), info.si_uid()) } } else { (0, 0) };
    (1 << 63) | ((u64::from(pid.max(0) as u32) & 0x7fff_ffff) << 32) | u64::from(uid)
}

/// The program name of a live process (`/proc/PID/comm`, at most 15 bytes, and the
/// file name of its executable when that can be read), and its uid; `None` when it
/// is gone.
pub(crate) fn program(pid: i32) -> Option<(Vec<String>, u32)> {
    use std::os::unix::fs::MetadataExt;
    let dir = super::proc_root().join(pid.to_string());
    let uid = std::fs::metadata(&dir).ok()?.uid();
    let comm = std::fs::read_to_string(dir.join("comm")).ok()?.trim_end().to_string();
    let exe = std::fs::read_link(dir.join("exe")).ok();
    let exe = exe.and_then(|p| p.file_name().map(|n| n.to_string_lossy().trim_end_matches(" (deleted)").to_string()));
    Some((std::iter::once(comm).chain(exe).collect(), uid))
}

/// This process's effective uid.
pub(crate) fn own_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_is_named_and_a_gone_one_is_not() {
        let me = i32::try_from(std::process::id()).expect("pid");
        let (names, uid) = program(me).expect("this process");
        assert!(!names.is_empty() && !names[0].is_empty(), "{names:?}");
        assert_eq!(uid, own_uid());
        assert_eq!(program(i32::MAX), None);
    }

    #[test]
    fn the_sender_is_packed_and_unpacked_whole() {
        let packed = (1u64 << 63) | (4_194_304u64 << 32) | 1000;
        FIRST_HUP.store(packed, Ordering::SeqCst);
        assert_eq!(first(true), Some(Sent { pid: 4_194_304, uid: 1000 }));
        FIRST_HUP.store(0, Ordering::SeqCst);
        assert_eq!(first(true), None);
    }
}

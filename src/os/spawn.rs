//! Starting a program as `posix_spawn` does, with the one step `posix_spawn` cannot
//! take: the parent-death signal, which only the child can set on itself.
//!
//! std's `Command` forks whenever a `pre_exec` step is given, and a fork copies
//! ralph's page tables and faults on every page either side writes until the child
//! execs. Here the child is made with `clone(CLONE_VM | CLONE_VFORK)`: it runs in
//! ralph's memory on a small stack of its own while the calling thread waits, makes
//! a few system calls from data prepared before the clone, and execs (or exits).
//! Nothing in the child allocates, takes a lock or returns into ralph's code, and no
//! signal handler of ralph's can run in it: every signal (glibc's internal two
//! included) stays blocked until the child has set each handled one back to its
//! default. A failed step is reported through a close-on-exec pipe, as std does: an
//! emulator that runs such a clone as a plain fork (valgrind, qemu-user) reports it
//! the same way.

use std::collections::HashSet;
use std::ffi::{CString, c_int, c_void};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::libc;

/// The child's stack. Its calls are a few system call wrappers deep. One page more is
/// mapped below it and left inaccessible, so that an overflow faults instead of
/// writing over ralph.
const STACK: usize = 64 * 1024;

/// The kernel's signal set, in bytes: 64 signals on every architecture ralph builds
/// for. The raw system call is used because glibc's wrappers leave its two internal
/// signals out of every set.
const KERNEL_SIGSET: usize = 8;

/// What the child of [`spawn`] gets.
pub struct Program<'a> {
    /// The file to execute (already found on `PATH`); also `argv[0]`.
    pub path: &'a Path,
    pub args: &'a [String],
    /// The child's whole environment.
    pub env: &'a [(String, String)],
    pub cwd: &'a Path,
    /// Its stdin, stdout and stderr. Any may be one of ralph's own 0, 1 and 2.
    pub stdio: [BorrowedFd<'a>; 3],
}

/// Starts `program` in a process group of its own, with `SIGKILL` as its parent-death
/// signal, an empty signal mask, `SIGPIPE` at its default action and, of the
/// descriptors ralph opened, only the three given (everything ralph opens closes on
/// exec; what it inherited open passes on, as with any program). Returns its pid;
/// the caller reaps it (`try_wait`). The error is the errno of the step that failed (`ENOENT` from
/// `execve` for a missing program), which says whether a later launch can succeed.
pub fn spawn(program: &Program<'_>) -> io::Result<i32> {
    let (mut report, report_write) = error_pipe()?;
    let plan = Plan::new(program, report_write)?;
    let stack = Stack::new()?;
    // Every signal blocked (glibc's internal ones too) until the child has reset
    // the handlers; its mask is inherited.
    let mut old = [0u64; 1];
    set_signal_mask(&[u64::MAX], Some(&mut old));
    // SAFETY: the child runs `child` on its own stack, reads `plan` (alive and
    // unchanged: CLONE_VFORK suspends this thread until the child execs or exits),
    // and never returns into this function's frame.
    let pid = unsafe {
        libc::clone(
            child,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(&plan).cast_mut().cast::<c_void>(),
        )
    };
    let clone_error = io::Error::last_os_error();
    set_signal_mask(&old, None);
    // The child's copy of the write end closes at its exec or exit; ralph's now.
    drop(plan);
    drop(stack);
    if pid < 0 {
        return Err(clone_error);
    }
    // Where the clone ran as a plain fork, ralph may get here first: the group is
    // made from this side too (it fails harmlessly once the child has exec'd).
    // SAFETY: a plain system call on ralph's own child.
    unsafe { libc::setpgid(pid, pid) };
    // Nothing once it has exec'd; the errno of the failed step otherwise.
    let mut errno = Vec::with_capacity(4);
    let _ = report.read_to_end(&mut errno);
    match <[u8; 4]>::try_from(errno.as_slice()) {
        Err(_) => Ok(pid),
        Ok(errno) => {
            // It has exited (or is about to): collect it.
            while let Ok(None) = try_wait_blocking(pid) {}
            Err(io::Error::from_raw_os_error(i32::from_ne_bytes(errno)))
        }
    }
}

/// A close-on-exec pipe: the child writes the errno of a failed step to it; an
/// exec closes it unwritten.
fn error_pipe() -> io::Result<(std::fs::File, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid out array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just created and nothing else owns them.
    Ok(unsafe { (std::fs::File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The raw `rt_sigprocmask(SIG_SETMASK)`: async-signal-safe, and unfiltered.
fn set_signal_mask(mask: &[u64; 1], old: Option<&mut [u64; 1]>) {
    let old = old.map_or(std::ptr::null_mut(), |o| o.as_mut_ptr());
    // SAFETY: `mask` and `old` (when given) point to sets of KERNEL_SIGSET bytes.
    unsafe { libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, mask.as_ptr(), old, KERNEL_SIGSET) };
}

/// The raw wait status of child `pid` if it has ended, without waiting.
pub(crate) fn try_wait(pid: i32) -> io::Result<Option<c_int>> {
    let mut status = 0;
    // SAFETY: waits for one child of ours; `status` is a valid out pointer.
    match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
        0 => Ok(None),
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(Some(status)),
    }
}

/// Waits for child `pid`; `Ok(None)` when a signal interrupted the wait.
fn try_wait_blocking(pid: i32) -> io::Result<Option<c_int>> {
    let mut status = 0;
    // SAFETY: waits for one child of ours; `status` is a valid out pointer.
    match unsafe { libc::waitpid(pid, &mut status, 0) } {
        -1 => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EINTR) => Ok(None),
            e => Err(e),
        },
        _ => Ok(Some(status)),
    }
}

/// Everything the child reads, built before the clone.
struct Plan {
    path: CString,
    /// Null-terminated arrays of pointers into `_strings`.
    argv: Vec<*const libc::c_char>,
    /// `/bin/sh PATH ARGS…`, for a file without a `#!` line (as `execvp` does, and
    /// std's `Command` did before).
    sh_argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    _strings: Vec<CString>,
    cwd: CString,
    /// The descriptors to become 0, 1 and 2, each 3 or above, so that no `dup2`
    /// overwrites one still to be copied.
    stdio: [RawFd; 3],
    /// Copies made to get there, closed after the clone.
    _moved: Vec<OwnedFd>,
    parent: libc::pid_t,
    /// Where the child writes the errno of a step that failed.
    report: OwnedFd,
}

impl Plan {
    fn new(program: &Program<'_>, report: OwnedFd) -> io::Result<Self> {
        let path = c_string(program.path.as_os_str().as_bytes())?;
        let mut strings = Vec::with_capacity(2 + program.args.len() + program.env.len());
        strings.push(path.clone());
        for arg in program.args {
            strings.push(c_string(arg.as_bytes())?);
        }
        let argc = strings.len();
        // A name given twice counts once, its last value (as with std's `Command`).
        let mut seen = HashSet::new();
        let mut env: Vec<_> = program.env.iter().rev().filter(|(key, _)| seen.insert(key.as_str())).collect();
        env.reverse();
        for (key, value) in env {
            strings.push(c_string(format!("{key}={value}").as_bytes())?);
        }
        strings.push(c_string(b"/bin/sh")?);
        let pointers = |s: &[CString]| s.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect::<Vec<_>>();
        let (argv, envp) = (pointers(&strings[..argc]), pointers(&strings[argc..strings.len() - 1]));
        let sh_argv = [strings[strings.len() - 1].as_ptr()].into_iter().chain(argv.iter().copied()).collect();
        let mut moved = Vec::new();
        let mut stdio = [0; 3];
        for (slot, fd) in stdio.iter_mut().zip(program.stdio) {
            *slot = if fd.as_raw_fd() > 2 {
                fd.as_raw_fd()
            } else {
                let copy = above_stdio(fd)?;
                let raw = copy.as_raw_fd();
                moved.push(copy);
                raw
            };
        }
        Ok(Self {
            path,
            argv,
            sh_argv,
            envp,
            _strings: strings,
            cwd: c_string(program.cwd.as_os_str().as_bytes())?,
            stdio,
            _moved: moved,
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            report,
        })
    }
}

/// A copy of `fd` numbered 3 or above, closed on exec.
fn above_stdio(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    // SAFETY: duplicates an open descriptor; the new one is owned by the result.
    match unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) } {
        -1 => Err(io::Error::last_os_error()),
        // SAFETY: `copy` was just created and nothing else owns it.
        copy => Ok(unsafe { OwnedFd::from_raw_fd(copy) }),
    }
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, "an argument, variable or path of the agent holds a NUL byte")
    })
}

/// An anonymous mapping for the child's stack, with an inaccessible lowest page.
struct Stack {
    base: *mut c_void,
}

impl Stack {
    fn new() -> io::Result<Self> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::len(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Self { base };
        // SAFETY: the first page of the mapping just made (the guard).
        if unsafe { libc::mprotect(base, page_size(), libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The guard page and the stack above it.
    fn len() -> usize {
        page_size() + STACK
    }

    /// The stack grows down from the end of the mapping (page-aligned, so 16-byte
    /// aligned as the ABI wants).
    fn top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(Self::len())
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, after the child is done with it.
        unsafe { libc::munmap(self.base, Self::len()) };
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf reads a constant.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// The child, between the clone and the exec. Every call is async-signal-safe.
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the parent's `Plan`, alive and unchanged while the parent is
    // suspended.
    let plan = unsafe { &*arg.cast::<Plan>() };
    // SAFETY: see `prepare_and_exec`.
    let errno = unsafe { prepare_and_exec(plan) }.to_ne_bytes();
    // SAFETY: writes 4 bytes from a local to the report pipe.
    unsafe { libc::write(plan.report.as_raw_fd(), errno.as_ptr().cast::<c_void>(), errno.len()) };
    // SAFETY: ends the child without running anything of ralph's (no atexit, no flush).
    unsafe { libc::_exit(127) }
}

/// Returns only on failure, with the errno of the step that failed.
///
/// # Safety
/// Runs only in the child of `spawn`'s clone, with every signal blocked.
unsafe fn prepare_and_exec(plan: &Plan) -> c_int {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    // SAFETY (for the block): plain system calls on the child's own state, with
    // pointers into `plan` or to locals.
    unsafe {
        // Its own group first: a terminal's Ctrl+C or Ctrl+Z reaches ralph only from
        // here on, and ralph can end the agent with everything it starts.
        if libc::setpgid(0, 0) != 0 {
            return errno();
        }
        for signal in 1..=libc::SIGRTMAX() {
            reset(signal);
        }
        // If ralph is killed outright (kill -9, OOM), its agent dies with it instead
        // of editing files unsupervised. ralph may have died just before this call.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return errno();
        }
        if libc::getppid() != plan.parent {
            return libc::ESRCH;
        }
        for (target, fd) in plan.stdio.iter().enumerate() {
            // `dup2` leaves the copy without close-on-exec; everything else of
            // ralph's has it and closes at the exec.
            if libc::dup2(*fd, target as c_int) < 0 {
                return errno();
            }
        }
        if libc::chdir(plan.cwd.as_ptr()) != 0 {
            return errno();
        }
        set_signal_mask(&[0], None);
        libc::execve(plan.path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        let failed = errno();
        if failed == libc::ENOEXEC {
            libc::execve(plan.sh_argv[0], plan.sh_argv.as_ptr(), plan.envp.as_ptr());
        }
        failed
    }
}

/// Sets `signal` to its default action in the child where ralph handles it: a
/// handler is ralph's code, written for ralph's state, and must not run here on
/// ralph's memory once the signals are unblocked. It is ignored for a moment first,
/// which discards one already pending: a Ctrl+Z or Ctrl+C meant for ralph that
/// reached the child while it was still in ralph's group would otherwise stop or
/// end it before its exec (a stopped child would hold ralph in the clone). The
/// terminal's stop signals get the same treatment at their default. SIGPIPE goes
/// back to its default (ralph ignores it; an agent expects the default); other
/// ignored signals stay ignored, as with any exec.
///
/// # Safety
/// Only in the child of `spawn`'s clone, with every signal blocked.
unsafe fn reset(signal: c_int) {
    // SAFETY (for the block): `sigaction` on the child's own table, with pointers to
    // locals; glibc refuses its internal signals, which stay blocked.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut action) != 0 {
            return;
        }
        let handler = action.sa_sigaction;
        let stops = matches!(signal, libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU);
        let handled = handler != libc::SIG_DFL && handler != libc::SIG_IGN;
        let pipe = signal == libc::SIGPIPE && handler == libc::SIG_IGN;
        if !(handled || pipe || (stops && handler == libc::SIG_DFL)) {
            return;
        }
        let mut set: libc::sigaction = std::mem::zeroed();
        set.sa_sigaction = libc::SIG_IGN;
        libc::sigaction(signal, &set, std::ptr::null_mut());
        set.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &set, std::ptr::null_mut());
    }
}

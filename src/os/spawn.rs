//! Starting a program as `posix_spawn` does, with the one step `posix_spawn` cannot
//! take: the parent-death signal, which only the child can set on itself.
//!
//! std's `Command` forks whenever a `pre_exec` step is given, and a fork copies
//! ralph's page tables and faults on every page either side writes until the child
//! execs. Here the child is made with `clone(CLONE_VM | CLONE_VFORK)`: it runs in
//! ralph's memory on a small stack of its own while the calling thread waits, makes
//! a few system calls from data prepared before the clone, and execs (or exits).
//! Nothing in the child allocates, takes a lock or returns into ralph's code, and no
//! signal handler of ralph's can run in it: every signal stays blocked until the
//! child has set each handled one back to its default.

use std::ffi::{CString, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::libc;

/// The child's stack. Its calls are a few system call wrappers deep; the lowest page
/// is left inaccessible so that an overflow faults instead of writing over ralph.
const STACK: usize = 64 * 1024;

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
/// signal, an empty signal mask, `SIGPIPE` at its default action and no file
/// descriptor of ralph's but the three given. Returns its pid; the caller reaps it
/// ([`try_wait`]). The error is the errno of the step that failed (`ENOENT` from
/// `execve` for a missing program), which says whether a later launch can succeed.
pub fn spawn(program: &Program<'_>) -> io::Result<i32> {
    let plan = Plan::new(program)?;
    let stack = Stack::new()?;
    // SAFETY: `sigset_t` is plain data, filled by `sigfillset` before use.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `old` receives the calling thread's mask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to the two sets; blocking signals on this thread only.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // SAFETY: the child runs `child` on its own stack, reads `plan` (alive and
    // unchanged: CLONE_VFORK suspends this thread until the child execs or exits),
    // writes only `plan.error`, and never returns into this function's frame.
    let pid = unsafe {
        libc::clone(
            child,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(&plan).cast_mut().cast::<c_void>(),
        )
    };
    let clone_error = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if pid < 0 {
        return Err(clone_error);
    }
    match plan.error.load(Ordering::Acquire) {
        0 => Ok(pid),
        errno => {
            // It has exited (CLONE_VFORK returned): collect it.
            while let Ok(None) = try_wait_blocking(pid) {}
            Err(io::Error::from_raw_os_error(errno))
        }
    }
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
    /// The errno of the step that failed, written by the child.
    error: AtomicI32,
}

impl Plan {
    fn new(program: &Program<'_>) -> io::Result<Self> {
        let path = c_string(program.path.as_os_str().as_bytes())?;
        let mut strings = Vec::with_capacity(2 + program.args.len() + program.env.len());
        strings.push(path.clone());
        for arg in program.args {
            strings.push(c_string(arg.as_bytes())?);
        }
        let argc = strings.len();
        for (key, value) in program.env {
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
            error: AtomicI32::new(0),
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
                STACK,
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
        // SAFETY: the first page of the mapping just made.
        if unsafe { libc::mprotect(base, page_size(), libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The stack grows down from the end of the mapping (page-aligned, so 16-byte
    /// aligned as the ABI wants).
    fn top(&self) -> *mut c_void {
        self.base.wrapping_byte_add(STACK)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, after the child is done with it.
        unsafe { libc::munmap(self.base, STACK) };
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
    let errno = unsafe { prepare_and_exec(plan) };
    plan.error.store(errno.max(1), Ordering::Release);
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
        // A handler is ralph's code, written for ralph's state: once the signals are
        // unblocked, one must not run here, on ralph's memory. SIGPIPE goes back to
        // its default as well (ralph ignores it; an agent expects the default).
        for signal in 1..=libc::SIGRTMAX() {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut action) != 0 {
                continue;
            }
            let handler = action.sa_sigaction;
            if handler == libc::SIG_DFL || (handler == libc::SIG_IGN && signal != libc::SIGPIPE) {
                continue;
            }
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &default, std::ptr::null_mut());
        }
        // Its own group: a terminal's Ctrl+C reaches ralph only, and ralph can end
        // the agent with everything it starts.
        if libc::setpgid(0, 0) != 0 {
            return errno();
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
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(plan.path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        let failed = errno();
        if failed == libc::ENOEXEC {
            libc::execve(plan.sh_argv[0], plan.sh_argv.as_ptr(), plan.envp.as_ptr());
        }
        failed
    }
}

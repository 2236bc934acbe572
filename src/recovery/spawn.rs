//! A launch that failed before the agent ran: can it ever succeed? A prompt too long
//! for an argument (E2BIG), a program that is not executable (EACCES, ENOEXEC, a bad
//! shebang), one that is not there: the same launch fails the same way all night, so
//! a person must act (exit 3, the path and the reason named). No memory, too many
//! processes or a binary being replaced (ETXTBSY) pass: those are retried like an
//! outage.

use nix::errno::Errno;

use super::{Category, Classification, Rule};

/// Classifies a failed launch of `agent`'s `program` from the OS error number.
pub(crate) fn classify(agent: &str, program: &str, errno: Option<i32>, message: &str) -> Classification {
    let hint = match errno.map(Errno::from_raw) {
        Some(Errno::E2BIG) => Some(
            "the prompt (or the environment) is longer than the system allows on a command line; \
             the prompt is passed on stdin or in a file where the agent supports it: for a `command` agent, \
             use {prompt_file} instead of {prompt}, or shorten PROMPT.md and what earlier phases left",
        ),
        Some(Errno::ENOEXEC) => Some("the file is not a program this system can run (no or a bad #! line?)"),
        Some(Errno::EACCES | Errno::EPERM) => {
            Some("the file is not executable (chmod +x?) or a directory on its path is not searchable")
        }
        Some(Errno::ENOENT) => Some("the program, or the interpreter named on its #! line, does not exist"),
        Some(Errno::ENOTDIR | Errno::ELOOP | Errno::ENAMETOOLONG | Errno::EISDIR) => {
            Some("the path cannot name a program")
        }
        _ => None,
    };
    let failed = format!("agent {agent}: cannot start {program}: {message}");
    match hint {
        Some(hint) => Classification::new(Category::UserConfig, Rule::LaunchImpossible, format!("{failed}: {hint}")),
        None => Classification::new(Category::Environmental, Rule::SpawnFailed, failed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_that_can_never_succeed_need_a_person() {
        for errno in [Errno::E2BIG, Errno::ENOEXEC, Errno::EACCES, Errno::ENOENT, Errno::ELOOP] {
            let c = classify("a", "/bin/agent", Some(errno as i32), "boom");
            assert_eq!((c.category, c.rule), (Category::UserConfig, Rule::LaunchImpossible), "{errno}");
            assert!(c.reason.contains("/bin/agent"), "{}", c.reason);
        }
        let c = classify("a", "/bin/agent", Some(Errno::E2BIG as i32), "Argument list too long");
        assert!(c.reason.contains("{prompt_file}"), "{}", c.reason);
    }

    #[test]
    fn passing_launch_failures_are_retried() {
        for errno in [Some(Errno::ENOMEM as i32), Some(Errno::EAGAIN as i32), Some(Errno::ETXTBSY as i32), None] {
            let c = classify("a", "x", errno, "boom");
            assert_eq!((c.category, c.rule), (Category::Environmental, Rule::SpawnFailed), "{errno:?}");
        }
    }
}

//! The pre-flight of a program ralph will start: it is found, it is a file ralph may
//! execute, and when it is a script, its `#!` interpreter can run too. Done for every
//! agent of every chain the run uses before the first attempt (a problem there is
//! exit 2, not a 3 a.m. stop when the chain reaches the agent), and by `ralph doctor`.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use nix::unistd::{AccessFlags, access};

/// Why a program cannot be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProgramError {
    #[error("{program} not found on PATH")]
    NotOnPath { program: String },
    #[error("{} does not exist", .path.display())]
    Missing { path: PathBuf },
    #[error("{} is a directory, not a program", .path.display())]
    Directory { path: PathBuf },
    #[error("{} is not executable (chmod +x it)", .path.display())]
    NotExecutable { path: PathBuf },
    #[error("{}: its #! interpreter {} does not exist or is not executable", .path.display(), .interpreter.display())]
    BadInterpreter { path: PathBuf, interpreter: PathBuf },
    #[error("{}: its #! line runs {program} through env, and {program} is not on PATH", .path.display())]
    EnvTargetMissing { path: PathBuf, program: String },
}

/// Resolves `program` the way the agent's spawn does (a name with a `/` relative
/// to `cwd`, a bare name on `path_var`) and checks that it can be executed.
pub(crate) fn check_program(program: &Path, path_var: Option<&OsStr>, cwd: &Path) -> Result<PathBuf, ProgramError> {
    let path = if program.components().count() > 1 || program.is_absolute() {
        cwd.join(program)
    } else {
        which::which_in(program, path_var, cwd)
            .map_err(|_| ProgramError::NotOnPath { program: program.display().to_string() })?
    };
    check_file(&path)?;
    if let Some(line) = shebang(&path) {
        check_interpreter(&path, &line, path_var, cwd)?;
    }
    Ok(path)
}

fn check_file(path: &Path) -> Result<(), ProgramError> {
    let meta = std::fs::metadata(path).map_err(|_| ProgramError::Missing { path: path.to_path_buf() })?;
    if meta.is_dir() {
        return Err(ProgramError::Directory { path: path.to_path_buf() });
    }
    access(path, AccessFlags::X_OK).map_err(|_| ProgramError::NotExecutable { path: path.to_path_buf() })
}

/// The `#!` line of a script, without the `#!`.
fn shebang(path: &Path) -> Option<String> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).ok()?;
    let text = head[..n].strip_prefix(b"#!")?;
    let line = text.split(|&b| b == b'\n').next()?;
    Some(String::from_utf8_lossy(line).trim().to_string())
}

fn check_interpreter(path: &Path, line: &str, path_var: Option<&OsStr>, cwd: &Path) -> Result<(), ProgramError> {
    let mut words = line.split_whitespace();
    // No interpreter named: an empty path, which is not absolute either.
    let interpreter = words.next().map(PathBuf::from).unwrap_or_default();
    let bad = || ProgramError::BadInterpreter { path: path.to_path_buf(), interpreter: interpreter.clone() };
    if !interpreter.is_absolute() {
        return Err(bad());
    }
    check_file(&interpreter).map_err(|_| bad())?;
    // `#!/usr/bin/env node`: env itself is fine, what it runs must be on PATH.
    if interpreter.file_name() == Some(OsStr::new("env"))
        && let Some(target) = words.find(|w| !w.starts_with('-') && !w.contains('='))
        && which::which_in(target, path_var, cwd).is_err()
    {
        return Err(ProgramError::EnvTargetMissing { path: path.to_path_buf(), program: target.to_string() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    #[test]
    fn a_runnable_script_passes_and_each_defect_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let path_var = std::env::var_os("PATH");
        let check = |p: &str| check_program(Path::new(p), path_var.as_deref(), d);
        script(d, "ok.sh", "#!/bin/sh\nexit 0\n", 0o755);
        assert_eq!(check("./ok.sh"), Ok(d.join("./ok.sh")));
        script(d, "plain", "exit 0\n", 0o755);
        assert!(check("./plain").is_ok(), "a script without #! runs under sh");
        assert!(matches!(check("./nope"), Err(ProgramError::Missing { .. })));
        assert!(matches!(check("no-such-program-anywhere"), Err(ProgramError::NotOnPath { .. })));
        script(d, "noexec.sh", "#!/bin/sh\n", 0o644);
        // root may execute anything with an x bit; no x bit at all fails for root too.
        assert!(matches!(check("./noexec.sh"), Err(ProgramError::NotExecutable { .. })));
        script(d, "badbang", "#!/no/such/interpreter -x\n", 0o755);
        let err = check("./badbang").expect_err("bad interpreter");
        assert!(err.to_string().contains("/no/such/interpreter"), "{err}");
        script(d, "envbang", "#!/usr/bin/env no-such-runtime-xyz\n", 0o755);
        assert!(matches!(check("./envbang"), Err(ProgramError::EnvTargetMissing { .. })));
        std::fs::create_dir(d.join("adir")).expect("mkdir");
        assert!(matches!(check("./adir"), Err(ProgramError::Directory { .. })));
        assert!(check("sh").is_ok());
    }
}

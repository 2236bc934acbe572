//! Hostile input (issue 10): odd bytes, floods, planted links, secrets in every
//! place, leftovers of kills. Each test failed on the code before its fix.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::harness::{Project, fast};

/// A one-agent workflow running `script` with `sh -c`.
fn sh_agent(script: &str, timeouts: &str, extra: &str) -> String {
    fast(
        "",
        timeouts,
        &format!(
            r#"
[agents.sh]
kind = "command"
command = ["sh", "-c", {script:?}, "{{prompt}}"]
{extra}

[chains]
main = ["sh"]

[phases.develop]
chain = "main"
"#
        ),
    )
}

/// Every attempt log of the run, as bytes.
fn attempt_logs(p: &Project) -> Vec<u8> {
    let mut out = Vec::new();
    for file in files_under(&p.join(".agent/logs")) {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with("attempt-") && name.ends_with(".log") {
            out.extend(fs::read(&file).unwrap_or_default());
        }
    }
    out
}

fn has(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(path.clone());
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn an_invalid_utf8_byte_does_not_blind_ralph() {
    // The byte comes first on both streams, then enough output to fill a pipe that
    // nobody reads, then the done signal.
    let script = r"printf 'bad \377\376 byte\n'; printf 'err \377\n' >&2; \
        i=0; while [ $i -lt 3000 ]; do echo 'filler line of some length to fill the pipe buffer'; i=$((i+1)); done; \
        echo '<promise>DONE</promise>'";
    let p = Project::new().config(&sh_agent(script, "stall = \"3s\"", ""));
    p.ralph().run().expect_code(0);
    let log = attempt_logs(&p);
    assert!(has(&log, b"bad \xff\xfe byte\n"), "the bytes are logged as received");
    assert!(has(&log, b"[stderr] err \xff\n"), "stderr too");
    assert!(has(&log, b"<promise>DONE</promise>"));
}

//! Secrets never leave ralph (issue 29): every sample of the corpus of fake secrets
//! (`tests/secrets/corpus.rs`, over 300 of them in over 40 families) goes through one
//! real run in a git repository: printed on the agent's stdout and stderr, in its
//! final message, and in a file it writes; the next phase's agent keeps the prompt
//! it was sent. Then no part of any secret may be found under `.agent/`, in the run
//! registry, on the terminal, in `ralph status --json`, in the prompt the next
//! agent got, or in `git log -p`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Project, fast};

#[allow(dead_code, unreachable_pub)]
#[path = "../secrets/corpus.rs"]
mod corpus;

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn git(dir: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Which needles `text` holds, with where it was found.
fn leaks(samples: &[corpus::Sample], place: &str, text: &[u8], out: &mut Vec<String>) {
    for s in samples {
        for needle in &s.needles {
            if text.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                out.push(format!("{place}: {} ({needle})", s.family));
            }
        }
    }
}

#[test]
fn no_secret_of_the_corpus_leaves_ralph() {
    let samples = corpus::corpus();
    let data = tempfile::Builder::new().prefix("ralph-secrets-data-").tempdir().expect("temp dir");
    let home = tempfile::Builder::new().prefix("ralph-secrets-home-").tempdir().expect("temp dir");
    // Where the samples go: stdout, stderr, a file the agent writes, and the final
    // message (the last lines on stdout, which become the phase's artifact).
    let mut parts: [String; 4] = Default::default();
    for (i, s) in samples.iter().enumerate() {
        parts[i % 4].push_str(&s.text);
        parts[i % 4].push('\n');
    }
    for (name, text) in ["stdout.txt", "stderr.txt", "file.env", "final.txt"].iter().zip(&parts) {
        fs::write(data.path().join(name), text).expect("write data");
    }
    let d = data.path().display();
    // Phase `leak` prints and writes; phase `next` keeps the prompt it was sent. The
    // whole final message is its result (a phase's result is bounded by default).
    let script = format!(
        "if [ -f {d}/done-leak ]; then printf '%s' \"$1\" > {d}/next-prompt.txt; echo next done; exit 0; fi; \
         cat {d}/stdout.txt; cat {d}/stderr.txt >&2; cp {d}/file.env leak.env; echo 'fn main() {{}}' > ok.rs; \
         touch {d}/done-leak; cat {d}/final.txt"
    );
    let config = fast(
        "",
        "",
        &format!(
            "[general.workflow]\nartifact_lines = 100000\nartifact_chars = 10000000\n\n\
             [agents.a]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", {script:?}, \"sh\", \"{{prompt}}\"]\noutput = \"text\"\n\n\
             [chains]\nmain = [\"a\"]\n\n[phases.leak]\nchain = \"main\"\ndone = \"exit0\"\n\n\
             [phases.next]\nchain = \"main\"\ndone = \"exit0\"\n"
        ),
    );
    let p = Project::new().config(&config);
    let dir = p.path().to_path_buf();
    git(&dir, home.path(), &["init", "-q", "-b", "main"]);
    git(&dir, home.path(), &["config", "user.name", "Tester"]);
    git(&dir, home.path(), &["config", "user.email", "tester@example.com"]);
    p.write("README.md", "# project\n");
    git(&dir, home.path(), &["add", "README.md"]);
    git(&dir, home.path(), &["commit", "-q", "-m", "initial"]);
    let state = home.path().join(".state");
    let run = |args: &[&str]| {
        p.ralph()
            .args(args.iter().copied())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", home.path().display().to_string())
            .env("XDG_STATE_HOME", state.display().to_string())
            .run()
    };
    let out = run(&[]);
    out.expect_code(0);
    let status = run(&["status", "--json"]);

    let mut found = Vec::new();
    for file in files_under(&dir.join(".agent")) {
        leaks(&samples, &file.display().to_string(), &fs::read(&file).unwrap_or_default(), &mut found);
    }
    for file in files_under(&state) {
        leaks(&samples, &file.display().to_string(), &fs::read(&file).unwrap_or_default(), &mut found);
    }
    leaks(&samples, "the terminal", format!("{}{}", out.stdout, out.stderr).as_bytes(), &mut found);
    leaks(&samples, "status --json", status.stdout.as_bytes(), &mut found);
    let prompt = fs::read_to_string(data.path().join("next-prompt.txt")).expect("the next agent kept its prompt");
    leaks(&samples, "the next prompt", prompt.as_bytes(), &mut found);
    let history = git(&dir, home.path(), &["log", "-p", "--all"]);
    leaks(&samples, "git log -p", history.as_bytes(), &mut found);
    assert!(found.is_empty(), "{} leak(s):\n{}", found.len(), found.join("\n"));

    // And the run did carry what was not secret: the agent's file, the next prompt.
    assert!(history.contains("ok.rs") && !history.contains("leak.env"), "{history}");
    assert!(prompt.contains("[REDACTED]") && prompt.contains("Error: request failed"), "{prompt}");
    let left = p.events("git_left_out");
    assert!(left.iter().any(|e| e["path"] == "leak.env" && e["reason"] == "credential"), "{left:?}");
    assert!(out.stderr.contains("not committing leak.env") && out.stderr.contains("allow_secrets"), "{out}");
}

#[test]
fn a_credential_in_the_goal_is_named_at_start_and_sent_as_written() {
    let key = "sk_live_4eC39HqLyjWDarjtT1zdp7dcTx9QmZ";
    let data = tempfile::Builder::new().prefix("ralph-secrets-goal-").tempdir().expect("temp dir");
    let d = data.path().display();
    let config = fast(
        "",
        "",
        &format!(
            "[agents.a]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"printf '%s' \\\"$1\\\" > {d}/prompt.txt; echo got it\", \"sh\", \"{{prompt}}\"]\n\n\
             [chains]\nmain = [\"a\"]\n\n[phases.work]\nchain = \"main\"\ndone = \"exit0\"\n"
        ),
    );
    let p = Project::new()
        .config(&config)
        .file("PROMPT.md", &format!("# Goal\n\nCharge the test card with\nSTRIPE_KEY={key}\nand report.\n"));
    let out = p.ralph().run();
    out.expect_code(0);
    out.stderr_has("PROMPT.md line 4 holds what looks like a credential (Stripe)");
    assert!(!out.stderr.contains(key) && !out.stdout.contains(key), "{out}");
    let sent = fs::read_to_string(data.path().join("prompt.txt")).expect("prompt");
    assert!(sent.contains(key), "the agent gets the goal as written");
    for file in files_under(&p.join(".agent")) {
        let bytes = fs::read(&file).unwrap_or_default();
        assert!(!bytes.windows(key.len()).any(|w| w == key.as_bytes()), "{} holds the key", file.display());
    }
}

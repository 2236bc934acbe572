//! Captures what the real Codex CLI, OpenCode and Gemini CLI (pinned, from npm, see
//! `tests/agents/versions.txt`) print for each provider failure into
//! `tests/corpus/errors/<cli>/captured_*.txt`, the classifier's corpus, as
//! `capture_claude_corpus` does for Claude Code. Each CLI runs directly (not through
//! ralph) against the fake provider on 127.0.0.1, with its own HOME, XDG, TMPDIR and
//! config in a temp dir, a clean environment, stdin from /dev/null, its own retries
//! turned down, and a wall-clock limit. Run by hand after changing a pinned version:
//! `cargo test --test integration capture_<cli>_corpus -- --ignored`.
//!
//! The committed captures were made with no route off the machine, in a network
//! namespace holding only loopback:
//! `unshare -n sh -c 'ip link set lo up; cargo test --offline --test integration capture_ -- --ignored --test-threads=1'`.
//! With a network, OpenCode and Gemini CLI spend seconds on side traffic (OpenCode's
//! plugin install) but print the same.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::fake_provider::{FakeProvider, Reply};
use crate::real_cli;

/// Each run is killed (with its process group) after this long.
const LIMIT: Duration = Duration::from_secs(60);

/// OpenCode's retries are fixed (5, exponential from 2 s: 62 s of waiting when no
/// `retry-after` comes, as for a refused connection), so its runs get longer.
const OPENCODE_LIMIT: Duration = Duration::from_secs(150);

/// One failure to capture: file name, what the provider answers (`None`: a closed
/// port, connection refused), and the verdict docs/recovery.md gives it.
struct Case {
    name: &'static str,
    reply: Option<Reply>,
    expect: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "overloaded_529",
            reply: Some(Reply::overloaded().retry_after(0)),
            expect: "environmental provider_overloaded",
        },
        Case {
            name: "server_500",
            reply: Some(Reply::server_error().retry_after(0)),
            expect: "environmental provider_error",
        },
        Case { name: "rate_limit_429", reply: Some(Reply::rate_limited(0)), expect: "environmental rate_limited" },
        Case { name: "auth_401", reply: Some(Reply::unauthorized()), expect: "user_config auth_failed" },
        Case { name: "connection_refused", reply: None, expect: "environmental connection_refused" },
    ]
}

/// The isolated places one run uses, all inside `root`.
struct Sandbox {
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    fn new(root: &Path) -> Self {
        let sandbox = Sandbox { root: root.to_path_buf(), home: root.join("home"), project: root.join("project") };
        for dir in ["home", "project", "tmp", "xdg/config", "xdg/data", "xdg/cache", "xdg/state"] {
            std::fs::create_dir_all(root.join(dir)).expect("sandbox dir");
        }
        sandbox
    }

    /// `binary` with a clean environment pointing at the sandbox.
    fn command(&self, binary: &Path) -> Command {
        let mut cmd = Command::new(binary);
        cmd.current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("TMPDIR", self.root.join("tmp"))
            .env("XDG_CONFIG_HOME", self.root.join("xdg/config"))
            .env("XDG_DATA_HOME", self.root.join("xdg/data"))
            .env("XDG_CACHE_HOME", self.root.join("xdg/cache"))
            .env("XDG_STATE_HOME", self.root.join("xdg/state"))
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        cmd
    }
}

struct Outcome {
    stdout: String,
    stderr: String,
    /// `N`, or `signal N`, as the corpus header writes it.
    exit: String,
    timed_out: bool,
    elapsed: Duration,
}

/// Runs `cmd` to its end or `limit`, then kills whatever is left of its process
/// group (background installs, relaunched children) so the pipes close.
fn run(mut cmd: Command, limit: Duration) -> Outcome {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn the CLI");
    let group = Pid::from_raw(child.id() as i32);
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            timed_out = true;
            let _ = killpg(group, Signal::SIGKILL);
            break child.wait().expect("wait after kill");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = start.elapsed();
    let _ = killpg(group, Signal::SIGKILL);
    let exit = match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => format!("signal {s}"),
        (None, None) => "-1".into(),
    };
    Outcome {
        stdout: String::from_utf8_lossy(&out.join().expect("stdout reader")).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().expect("stderr reader")).into_owned(),
        exit,
        timed_out,
        elapsed,
    }
}

/// The pinned CLI's version, the last word of its `--version` output.
fn version(binary: &Path) -> String {
    let tmp = tempfile::tempdir().expect("tmp");
    let sandbox = Sandbox::new(tmp.path());
    let mut cmd = sandbox.command(binary);
    cmd.arg("--version");
    let out = run(cmd, LIMIT);
    out.stdout.split_whitespace().last().unwrap_or("unknown").to_string()
}

/// Runs every case (and `extra`) through `launch(sandbox, base_url)`, each for at
/// most `limit`, and writes the corpus files of `cli`.
fn capture(cli: &str, limit: Duration, extra: Vec<Case>, launch: impl Fn(&Sandbox, &str) -> Command) {
    let Some(binary) = real_cli::find(cli) else { return };
    let version = version(&binary);
    // Stack traces name the install: `<agents dir>/NAME-VERSION/node_modules/...`.
    let agents_dir = binary.ancestors().nth(4).map(|d| d.display().to_string()).unwrap_or_default();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_port = closed.local_addr().expect("addr").port();
    drop(closed);
    for case in cases().into_iter().chain(extra) {
        let (port, provider) = match case.reply {
            Some(reply) => {
                let provider = FakeProvider::start(Vec::new()).fallback(reply);
                (provider.port, Some(provider))
            }
            None => (closed_port, None),
        };
        let tmp = tempfile::tempdir().expect("tmp");
        let sandbox = Sandbox::new(tmp.path());
        let out = run(launch(&sandbox, &format!("http://127.0.0.1:{port}")), limit);
        let requests = provider.as_ref().map_or(0, |p| p.model_requests().len());
        eprintln!(
            "{cli} {}: exit {} after {:.1}s, {requests} model requests{}",
            case.name,
            out.exit,
            out.elapsed.as_secs_f64(),
            if out.timed_out { " (KILLED at the time limit)" } else { "" }
        );
        let scrub = |s: &str| {
            let mut s = s.replace(&tmp.path().display().to_string(), "/tmp/ws");
            if !agents_dir.is_empty() {
                s = s.replace(&agents_dir, "/AGENTS");
            }
            if let Some(name) = tmp.path().file_name() {
                s = s.replace(&*name.to_string_lossy(), "ws");
            }
            s.replace(&format!(":{port}"), ":PORT")
        };
        let mut header = format!("# expect: {}\n# exit: {}\n", case.expect, out.exit);
        if out.timed_out {
            header.push_str(&format!(
                "# ended_by: attempt_timeout\n# note: still running after {}s; killed by the capture\n",
                limit.as_secs()
            ));
        }
        if provider.is_some() {
            header.push_str(&format!("# requests: {requests} model requests reached the fake provider\n"));
        }
        let text = format!(
            "{header}# origin: captured from {cli} {version} against tests/integration/fake_provider.rs (cargo test --test integration capture_{cli}_corpus -- --ignored)\n--- stdout\n{}--- stderr\n{}",
            scrub(&out.stdout),
            scrub(&out.stderr),
        );
        let path = format!("{}/tests/corpus/errors/{cli}/captured_{}.txt", env!("CARGO_MANIFEST_DIR"), case.name);
        std::fs::write(&path, text).expect("write the corpus file");
    }
}

#[test]
#[ignore = "writes the corpus; run by hand"]
fn capture_codex_corpus() {
    // Codex words some statuses itself; 503 is OpenAI's overload status.
    let extra = vec![Case {
        name: "overloaded_503",
        reply: Some(Reply::unavailable().retry_after(0)),
        expect: "environmental provider_overloaded",
    }];
    capture("codex", LIMIT, extra, |sandbox, url| {
        let codex_home = sandbox.root.join("codex");
        std::fs::create_dir_all(&codex_home).expect("CODEX_HOME");
        let config = format!(
            r#"model = "gpt-5-codex"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 30000

[analytics]
enabled = false

[features]
plugins = false
unbounded_connection_retries = false
"#
        );
        std::fs::write(codex_home.join("config.toml"), config).expect("codex config");
        let mut cmd = sandbox.command(&real_cli::find("codex").expect("codex"));
        cmd.args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "say hello",
        ])
        .env("CODEX_HOME", &codex_home)
        .env("FAKE_API_KEY", "dummy-key");
        cmd
    });
}

#[test]
#[ignore = "writes the corpus; run by hand"]
fn capture_opencode_corpus() {
    capture("opencode", OPENCODE_LIMIT, Vec::new(), |sandbox, url| {
        let config = json!({
            "$schema": "https://opencode.ai/config.json",
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": false,
            "share": "disabled",
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny", "external_directory": "allow"},
            "provider": {"fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": format!("{url}/v1"), "apiKey": "dummy-key",
                            "timeout": 30000, "chunkTimeout": 30000, "headerTimeout": 30000},
                "models": {"fake-model": {"name": "Fake model", "tool_call": true,
                                          "limit": {"context": 128000, "output": 4096}}}
            }}
        });
        let path = sandbox.root.join("opencode.json");
        std::fs::write(&path, config.to_string()).expect("opencode config");
        let mut cmd = sandbox.command(&real_cli::find("opencode").expect("opencode"));
        cmd.args(["run", "--format", "json", "say hello"])
            .env("OPENCODE_CONFIG", &path)
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
            .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
            .env("OPENCODE_DISABLE_SHARE", "1");
        cmd
    });
}

#[test]
#[ignore = "writes the corpus; run by hand"]
fn capture_gemini_corpus() {
    // Google's overload status is 503 (Gemini CLI's exit code is the status mod 256).
    let extra = vec![Case {
        name: "overloaded_503",
        reply: Some(Reply::unavailable().retry_after(0)),
        expect: "environmental provider_overloaded",
    }];
    capture("gemini", LIMIT, extra, |sandbox, url| {
        let settings = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"enableAutoUpdate": false, "maxAttempts": 1}
        });
        let dir = sandbox.home.join(".gemini");
        std::fs::create_dir_all(&dir).expect(".gemini");
        std::fs::write(dir.join("settings.json"), settings.to_string()).expect("gemini settings");
        let mut cmd = sandbox.command(&real_cli::find("gemini").expect("gemini"));
        cmd.args([
            "-p",
            "say hello",
            "--output-format",
            "stream-json",
            "--yolo",
            "--skip-trust",
            "-m",
            "gemini-2.5-pro",
        ])
        .env("GOOGLE_GEMINI_BASE_URL", url)
        .env("GEMINI_API_KEY", "dummy-key");
        cmd
    });
}

/// POSTs `{}` to `path` and returns the status code and the JSON body.
fn post(provider: &FakeProvider, path: &str) -> (u16, serde_json::Value) {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", provider.port)).expect("connect");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}"
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or_default())
}

#[test]
fn the_fake_provider_shapes_error_replies_for_each_api() {
    let provider = FakeProvider::start(Vec::new()).fallback(Reply::rate_limited(0));
    let (status, body) = post(&provider, "/v1/messages?beta=true");
    assert_eq!((status, &body["error"]["type"]), (429, &json!("rate_limit_error")));
    for path in ["/v1/responses", "/v1/chat/completions"] {
        let (status, body) = post(&provider, path);
        assert_eq!((status, &body["error"]["code"]), (429, &json!("rate_limit_exceeded")), "{path}");
    }
    for path in ["/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "/v1beta/models/m:generateContent"] {
        let (status, body) = post(&provider, path);
        assert_eq!(
            body,
            json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}),
            "{path}"
        );
        assert_eq!(status, 429);
    }
    // Side requests are not model requests and get an empty 200.
    let (status, _) = post(&provider, "/v1/messages/count_tokens");
    assert_eq!(status, 200);
    assert_eq!(provider.model_requests().len(), 5);
}

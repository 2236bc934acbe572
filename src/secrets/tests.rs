//! The rules against the corpus of fake secrets (every family, printed the ways
//! agents print them) and against ordinary text that must stay as it is.

use super::*;

#[allow(unreachable_pub)]
pub(super) mod corpus {
    include!("../../tests/secrets/corpus.rs");
}

#[track_caller]
fn hides(input: &str, expected: &str) {
    assert_eq!(redact(input), expected, "input: {input}");
}

#[track_caller]
fn keeps(input: &str) {
    assert_eq!(redact(input), input);
}

#[test]
fn every_pattern_compiles() {
    for (id, ok) in matcher::compile_all() {
        assert!(ok, "{id}");
    }
    let ids: std::collections::BTreeSet<&str> = rules::RULES.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), rules::RULES.len(), "rule ids are unique");
    for rule in rules::RULES {
        assert!(!rule.anchors.is_empty(), "{} has anchors", rule.id);
        assert!(
            rule.anchors.iter().all(|a| a.is_ascii() && *a == a.to_ascii_lowercase()),
            "{}: anchors are lowercase ASCII",
            rule.id
        );
    }
}

#[test]
fn every_sample_of_the_corpus_is_hidden_whole() {
    let corpus = corpus::corpus();
    let families: std::collections::BTreeSet<&str> = corpus.iter().map(|s| s.family).collect();
    assert!(corpus.len() >= 300 && families.len() >= 40, "{} samples, {} families", corpus.len(), families.len());
    for sample in &corpus {
        let out = redact(&sample.text);
        for needle in &sample.needles {
            assert!(!out.contains(needle.as_str()), "{}: {:?}\n -> {out:?}", sample.family, sample.text);
        }
        // What a file holding it would be named for.
        assert!(!found::in_bytes(sample.text.as_bytes()).is_empty(), "{}: {:?}", sample.family, sample.text);
    }
}

#[test]
fn the_stream_hides_what_the_whole_text_hides() {
    for sample in corpus::corpus() {
        let mut stream = Stream::default();
        let out: Vec<u8> = sample
            .text
            .split('\n')
            .flat_map(|line| {
                let mut l = stream.line(line.as_bytes()).into_owned();
                l.push(b'\n');
                l
            })
            .collect();
        let out = String::from_utf8_lossy(&out);
        for needle in &sample.needles {
            assert!(!out.contains(needle.as_str()), "{}: {:?}\n -> {out:?}", sample.family, sample.text);
        }
    }
}

#[test]
fn provider_keys() {
    hides("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-_yz012 failed", "key [REDACTED] failed");
    hides("sk-proj-abcdefghijklmnopqrstuvwx1", "[REDACTED]");
    hides("(sk-abcdefghijklmnopqrstuvwxyz1234)", "([REDACTED])");
    hides("id AKIAIOSFODNN7EXAMPLE here", "id [REDACTED] here");
    hides(
        "ghp_1234567890abcdefghijABCDEFGHIJ0123 and github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
        "[REDACTED] and [REDACTED]",
    );
    hides("slack xoxb-1234567890-abcdefghij", "slack [REDACTED]");
}

#[test]
fn bearer_tokens() {
    hides("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc_DEF-123", "Authorization: Bearer [REDACTED]");
    hides("curl -H 'authorization: bearer abcdefghijklmnop1234'", "curl -H 'authorization: bearer [REDACTED]'");
    hides("token: Bearer abcdefghijklmnopqrst", "token: Bearer [REDACTED]");
    hides("api_token: Bearer abc123", "api_token: Bearer [REDACTED]");
}

#[test]
fn assignments() {
    hides("ANTHROPIC_API_KEY=abc123xyz", "ANTHROPIC_API_KEY=[REDACTED]");
    hides("export GITHUB_TOKEN=\"s3cr3t value\" done", "export GITHUB_TOKEN=\"[REDACTED]\" done");
    hides(r#"{"api_key": "abc\"def", "n": 1}"#, r#"{"api_key": "[REDACTED]", "n": 1}"#);
    hides("db_password = 'hunter2'", "db_password = '[REDACTED]'");
    hides("PASSWORD=1234", "PASSWORD=[REDACTED]");
    hides("x-api-key: abcdef", "x-api-key: [REDACTED]");
    hides("client_secret: shh", "client_secret: [REDACTED]");
    hides("https://h/cb?access_token=abc&state=1", "https://h/cb?access_token=[REDACTED]&state=1");
    hides("Password: hunter2", "Password: [REDACTED]");
    hides("mysql --password=hunter22 -h db", "mysql --password=[REDACTED] -h db");
    hides("postgres://app:hunter22@db:5432/x", "postgres://app:[REDACTED]@db:5432/x");
}

#[test]
fn ordinary_text_survives() {
    keeps("The key to success is patience; keep the token count low.");
    keeps("commit 3f2a9c1e8b7d6a5f4e3c2b1a0f9e8d7c6b5a4f3e fixes it");
    keeps("run 123e4567-e89b-12d3-a456-426614174000 started");
    keeps("Key: press the space bar");
    keeps("task-abcdefghijklmnopqrstuvwxyz is a slug, risk-averse too");
    keeps("the bearer of bad news");
    keeps("\"max_tokens\": 4096, input_tokens=1234");
    keeps("\"api_key\": null, \"token_usage\": {\"input\": 5}");
    keeps("API_KEY=$ANTHROPIC_API_KEY and if token == other {}");
    keeps("use crate::secret::Vault;");
    keeps("");
    keeps("ünïcödé key: 🔑 sk-short");
    keeps("already [REDACTED] and api_key=[REDACTED]");
    // A name at the end of a line is no token cut short.
    keeps("withheld: DATABASE_URL, SENTRY_DSN");
    keeps("SENTRY_DSN");
    keeps("fn check(password: &str, token: Token) -> Result<String, Error> {");
    keeps("    let password = read_password()?;");
    keeps("    password: String,");
    keeps("self.api_key = config.api_key");
    keeps("checksum = \"c982642fa9e8606056828ee9a8505737230110bb1099153c79efe865c59d12ba\"");
    keeps(
        "\"integrity\": \"sha512-Pz4jJ6x0l2QpN6gyBK7Ox5Qk3S3tTWxCNfSKCt4nR9aTYn3d1cAvwNrNM1bYJbQQAU9YxV2kHlaXAOZSPOoqoA==\"",
    );
    keeps("index 3f2a9c1..8b7d6a5 100644");
    keeps("data = \"SGVsbG8gV29ybGQhIFRoaXMgaXMgdGVzdCBkYXRh\"");
    keeps("a basic understanding of the basic idea");
    keeps("see https://docs.example.com/path?page=2 and postgres://user:password@localhost/db");
    keeps("\"cache_key\": \"a3f5e6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5\"");
}

#[test]
fn a_secret_cut_by_a_line_break_is_hidden_on_both_sides() {
    hides(
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/\nbPxRfiCYEXAMPLEKEY\nDone.",
        "aws_secret_access_key = [REDACTED]\n[REDACTED]\nDone.",
    );
    hides("token ghp_12345678\n90abcdefghijABCDEFGHIJ0123abcd next", "token [REDACTED]\n[REDACTED] next");
    hides("API_KEY=\nabc123def456\nrest", "API_KEY=\n[REDACTED]\nrest");
    // A secret at the end of a line does not swallow the next line's prose.
    hides(
        "key: sk-abcdefghijklmnopqrstuvwxyz1234\nNext step: run the tests",
        "key: [REDACTED]\nNext step: run the tests",
    );
}

#[test]
fn a_private_key_is_hidden_from_begin_to_end() {
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naNqf1vFZ3h7xJ9kLmN0pQ2rStUvWxYz0123456789abcdefABCDEF+/=\n-----END RSA PRIVATE KEY-----\nafter";
    hides(key, "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n[REDACTED]\n-----END RSA PRIVATE KEY-----\nafter");
    // The end of a longer output: the BEGIN line is gone, the body is still hidden.
    hides(
        "aNqf1vFZ3h7xJ9kLmN0pQ2rStUvWxYz0123456789abcdefABCDEF+/=\n-----END OPENSSH PRIVATE KEY-----",
        "[REDACTED]\n-----END OPENSSH PRIVATE KEY-----",
    );
}

#[test]
fn json_escapes_do_not_hide_a_secret() {
    let out = redact(r#"{"SecretAccessKey":"wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY","x":1}"#);
    assert_eq!(out, r#"{"SecretAccessKey":"[REDACTED]","x":1}"#);
    let out = redact(r#"{"text":"use \u0067hp_1234567890abcdefghijABCDEFGHIJ0123 now"}"#);
    assert_eq!(out, r#"{"text":"use [REDACTED] now"}"#);
}

#[test]
fn a_name_far_into_a_line_is_seen() {
    for pad in [0, 1, 63, 64, 65, 255, 256, 4096] {
        let pad = "a".repeat(pad);
        hides(&format!("{pad} db_secret=hunter22 end"), &format!("{pad} db_secret=[REDACTED] end"));
        hides(&format!("{pad} Bearer abcdefghijklmnop1234"), &format!("{pad} Bearer [REDACTED]"));
    }
}

#[test]
fn bytes_that_are_not_utf8_are_kept_around_a_secret() {
    assert_eq!(&*redact_bytes(b"\xff ghp_1234567890abcdefghijABCDEFGHIJ0123 \xfe"), b"\xff [REDACTED] \xfe");
    assert_eq!(&*redact_bytes(b"\xff\xfe plain"), b"\xff\xfe plain");
}

#[test]
fn exact_credential_values_are_hidden() {
    hide_values(["sk-ant-secret123", "abc"]);
    hides("the key is sk-ant-secret123.", "the key is [REDACTED].");
    // Too short to hide by value: ordinary words would go.
    keeps("abc is fine");
    assert_eq!(&*redact_bytes(b"\xffsk-ant-secret123\xfe"), b"\xff[REDACTED]\xfe");
}

#[test]
fn json_trees_hide_strings_under_secret_names_whole() {
    let mut v = serde_json::json!({"password": "correct horse", "note": "ghp_1234567890abcdefghijABCDEFGHIJ0123", "max_tokens": "4096", "api_key": null});
    redact_json(&mut v);
    assert_eq!(v, serde_json::json!({"password": REDACTED, "note": REDACTED, "max_tokens": "4096", "api_key": null}));
}

#[test]
fn idempotent() {
    for sample in corpus::corpus() {
        let once = redact(&sample.text);
        assert_eq!(redact(&once), once, "{}", sample.family);
    }
}

#[test]
fn a_goal_file_is_named_by_line_never_by_value() {
    let goal = "# Goal\nDeploy with\nSTRIPE_KEY=sk_live_0123456789abcdefghijklmnop\nthen stop.\n";
    let found = found::check_goal("PROMPT.md", goal.as_bytes());
    assert_eq!(found.len(), 1);
    let text = found[0].to_string();
    assert!(text.contains("PROMPT.md line 3") && text.contains("Stripe"), "{text}");
    assert!(!text.contains("sk_live_"), "{text}");
    // From now on the value is hidden even without its name beside it.
    hides("echo sk_live_0123456789abcdefghijklmnop", "echo [REDACTED]");
}

/// The corpus of ordinary output (`tests/secrets/ordinary/`: lockfiles, this
/// repository's `git log -p` and sources, real CLIs' transcripts): at most one false
/// redaction per 10,000 lines.
#[test]
fn ordinary_output_is_left_alone() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/secrets/ordinary");
    let (mut lines, mut changed) = (0, Vec::new());
    for name in ["cargo-lock.txt", "package-lock.txt", "git-log-p.txt", "sources.txt", "transcripts.txt"] {
        let text = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The rules alone: the values other tests hide are process-wide.
        let mut hits = Vec::new();
        stream::text_hits(&text, &values::Values::default(), &mut hits);
        let out = stream::apply(&text, &mut hits);
        let before: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
        let after: Vec<&[u8]> = out.split(|&c| c == b'\n').collect();
        assert_eq!(before.len(), after.len(), "{name}: redaction keeps the lines");
        lines += before.len();
        for (k, (b, a)) in before.iter().zip(&after).enumerate() {
            if b != a {
                changed.push(format!("{name}:{}: {}", k + 1, String::from_utf8_lossy(b)));
            }
        }
    }
    eprintln!("{} of {lines} lines changed", changed.len());
    assert!(lines >= 20_000, "{lines} lines");
    assert!(
        changed.len() * 10_000 <= lines,
        "{} false redaction(s) in {lines} lines:\n{}",
        changed.len(),
        changed.join("\n")
    );
}

#[test]
fn vendors_beyond_the_corpus() {
    let samples = [
        "ADOBE_CLIENT_SECRET=p8e-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "url: https://api.example.invalid?token=sha256~Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9",
        "SCALINGO_API_TOKEN tk-us-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm2n",
        "apify: apify_api_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d",
        "neon napi_ab3def6hij9klm2nop5qrs8tuv1wxy4zab3def6hij9klm2nop5qrs8tuv1w",
        "pinterest pina_AB3DEF6HIJ9KLM2NOP5QRS8TUV1WXY4Z",
        "rootly rootly_0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9",
        r#"<add key="ClearTextPassword" value="Hunter2Hunter2" />"#,
        "export ADAFRUIT_IO_KEY=aio_ab3def6hij9klm2nop5qrs8tuv1w",
        "meraki_api_key: 0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d",
        "TWITCH_CLIENT_SECRET=ab3def6hij9klm2nop5qrs8tuv1wxy",
        "kucoin_secret = \"123e4567-e89b-12d3-a456-426614174000\"",
    ];
    for line in samples {
        let out = redact(line);
        assert!(out.contains(REDACTED), "{line} -> {out}");
    }
}

// The corpus of fake secrets (issue 29), shared by the unit tests of
// `src/secrets` (through `include!`) and the integration test that pushes every
// sample through a real run. Never real credentials: each body is drawn from a
// fixed seed in the shape the vendor documents (prefix, alphabet, length), printed
// the ways agents print them (an `export`, a JSON field, a YAML key, a sentence, a
// header), and some cut across lines, over many lines, or JSON-escaped.

/// One secret as an agent might print it.
pub struct Sample {
    pub family: &'static str,
    /// What is printed; it may span lines.
    pub text: String,
    /// What must appear nowhere once ralph has written or sent it: the secret, and
    /// each part of it that a line break or an escape separates.
    pub needles: Vec<String>,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn draw(&mut self, set: &str, n: usize) -> String {
        let set = set.as_bytes();
        (0..n).map(|_| char::from(set[(self.next() % set.len() as u64) as usize])).collect()
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const HEX: &str = "0123456789abcdef";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// How a format's secret says what it is.
#[derive(Clone, Copy, PartialEq)]
enum Says {
    /// Its text alone (`ghp_…`): printed anywhere.
    Itself,
    /// Only the name it is assigned to (`DATADOG_API_KEY`).
    Name,
}

struct Format {
    family: &'static str,
    /// The variable people keep it in.
    name: &'static str,
    says: Says,
    make: fn(&mut Rng) -> String,
}

macro_rules! f {
    ($family:expr, $name:expr, $says:ident, |$r:ident| $make:expr) => {
        Format { family: $family, name: $name, says: Says::$says, make: |$r: &mut Rng| $make }
    };
}

fn uuid(r: &mut Rng) -> String {
    format!("{}-{}-{}-{}-{}", r.draw(HEX, 8), r.draw(HEX, 4), r.draw(HEX, 4), r.draw(HEX, 4), r.draw(HEX, 12))
}

// A table, one format a line: longer than a function should be, and clearer whole.
#[allow(clippy::too_many_lines)]
fn formats() -> Vec<Format> {
    vec![
        f!("AWS", "AWS_ACCESS_KEY_ID", Itself, |r| format!("AKIA{}", r.draw("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))),
        f!("AWS", "AWS_SECRET_ACCESS_KEY", Name, |r| r.draw(B64, 40)),
        f!("AWS", "AWS_BEARER_TOKEN_BEDROCK", Itself, |r| format!("ABSK{}", r.draw(B64, 120))),
        f!("Google Cloud", "GOOGLE_API_KEY", Itself, |r| format!("AIza{}", r.draw(URLSAFE, 35))),
        f!("Google Cloud", "GOOGLE_CLIENT_SECRET", Itself, |r| format!("GOCSPX-{}", r.draw(URLSAFE, 28))),
        f!("Google Cloud", "GOOGLE_OAUTH_TOKEN", Itself, |r| format!("ya29.{}", r.draw(URLSAFE, 80))),
        f!("Azure", "AZURE_STORAGE_KEY", Name, |r| format!("{}==", r.draw(B64, 86))),
        f!("Azure", "AZURE_CLIENT_SECRET", Itself, |r| format!(
            "{}{}Q~{}",
            r.draw(ALNUM, 3),
            r.next() % 10,
            r.draw(ALNUM, 34)
        )),
        f!("Alibaba Cloud", "ALIBABA_ACCESS_KEY_ID", Itself, |r| format!("LTAI{}", r.draw(ALNUM, 20))),
        f!("Tencent Cloud", "TENCENT_SECRET_ID", Itself, |r| format!("AKID{}", r.draw(ALNUM, 32))),
        f!("DigitalOcean", "DIGITALOCEAN_TOKEN", Itself, |r| format!("dop_v1_{}", r.draw(HEX, 64))),
        f!("Heroku", "HEROKU_API_KEY", Itself, |r| format!("HRKU-AA{}", r.draw(URLSAFE, 58))),
        f!("Cloudflare", "CLOUDFLARE_API_TOKEN", Name, |r| r.draw(URLSAFE, 40)),
        f!("Fly.io", "FLY_API_TOKEN", Itself, |r| format!("fo1_{}", r.draw(URLSAFE, 43))),
        f!("Supabase", "SUPABASE_ACCESS_TOKEN", Itself, |r| format!("sbp_{}", r.draw(HEX, 40))),
        f!("PlanetScale", "PLANETSCALE_TOKEN", Itself, |r| format!("pscale_tkn_{}", r.draw(ALNUM, 43))),
        f!("Databricks", "DATABRICKS_TOKEN", Itself, |r| format!("dapi{}", r.draw(HEX, 32))),
        f!("HashiCorp", "TF_TOKEN", Itself, |r| format!("{}.atlasv1.{}", r.draw(ALNUM, 14), r.draw(URLSAFE, 67))),
        f!("HashiCorp", "VAULT_TOKEN", Itself, |r| format!("hvs.{}", r.draw(URLSAFE, 95))),
        f!("Pulumi", "PULUMI_ACCESS_TOKEN", Itself, |r| format!("pul-{}", r.draw(HEX, 40))),
        f!("Doppler", "DOPPLER_TOKEN", Itself, |r| format!("dp.st.{}", r.draw(ALNUM, 43))),
        f!("1Password", "OP_SERVICE_ACCOUNT_TOKEN", Itself, |r| format!("ops_eyJ{}", r.draw(B64, 260))),
        f!("age", "AGE_KEY", Itself, |r| format!("AGE-SECRET-KEY-1{}", r.draw("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58))),
        f!("Tailscale", "TS_AUTHKEY", Itself, |r| format!("tskey-auth-{}-{}", r.draw(ALNUM, 11), r.draw(ALNUM, 32))),
        f!("Docker", "DOCKER_PAT", Itself, |r| format!("dckr_pat_{}", r.draw(URLSAFE, 27))),
        f!("GitHub", "GITHUB_TOKEN", Itself, |r| format!("ghp_{}", r.draw(ALNUM, 36))),
        f!("GitHub", "GH_TOKEN", Itself, |r| format!("gho_{}", r.draw(ALNUM, 36))),
        f!("GitHub", "GITHUB_PAT", Itself, |r| format!("github_pat_11{}_{}", r.draw(UPPER, 20), r.draw(ALNUM, 59))),
        f!("GitLab", "GITLAB_TOKEN", Itself, |r| format!("glpat-{}", r.draw(URLSAFE, 20))),
        f!("GitLab", "CI_RUNNER_TOKEN", Itself, |r| format!("glrt-{}", r.draw(URLSAFE, 24))),
        f!("Bitbucket", "BITBUCKET_APP_PASSWORD", Itself, |r| format!("ATBB{}", r.draw(ALNUM, 32))),
        f!("Atlassian", "JIRA_API_TOKEN", Itself, |r| format!("ATATT3xFfGF0{}", r.draw(URLSAFE, 180))),
        f!("npm", "NPM_TOKEN", Itself, |r| format!("npm_{}", r.draw(ALNUM, 36))),
        f!("PyPI", "PYPI_TOKEN", Itself, |r| format!("pypi-AgEIcHlwaS5vcmc{}", r.draw(URLSAFE, 70))),
        f!("RubyGems", "GEM_HOST_API_KEY", Itself, |r| format!("rubygems_{}", r.draw(HEX, 48))),
        f!("crates.io", "CARGO_REGISTRY_TOKEN", Itself, |r| format!("cio{}", r.draw(ALNUM, 32))),
        f!("NuGet", "NUGET_API_KEY", Itself, |r| format!("oy2{}", r.draw(LOWER, 43))),
        f!("JFrog", "ARTIFACTORY_API_KEY", Itself, |r| format!("AKCp{}", r.draw(ALNUM, 69))),
        f!("Stripe", "STRIPE_SECRET_KEY", Itself, |r| format!("sk_live_{}", r.draw(ALNUM, 99))),
        f!("Stripe", "STRIPE_WEBHOOK_SECRET", Itself, |r| format!("whsec_{}", r.draw(ALNUM, 32))),
        f!("Square", "SQUARE_ACCESS_TOKEN", Itself, |r| format!("EAAA{}", r.draw(URLSAFE, 60))),
        f!("Shopify", "SHOPIFY_ACCESS_TOKEN", Itself, |r| format!("shpat_{}", r.draw(HEX, 32))),
        f!("Razorpay", "RAZORPAY_KEY", Itself, |r| format!("rzp_live_{}", r.draw(ALNUM, 14))),
        f!("Flutterwave", "FLW_SECRET_KEY", Itself, |r| format!("FLWSECK_TEST-{}-X", r.draw(HEX, 32))),
        f!("EasyPost", "EASYPOST_API_KEY", Itself, |r| format!("EZAK{}", r.draw(ALNUM, 54))),
        f!("Slack", "SLACK_BOT_TOKEN", Itself, |r| format!(
            "xoxb-{}-{}-{}",
            r.draw("0123456789", 12),
            r.draw("0123456789", 13),
            r.draw(ALNUM, 24)
        )),
        f!("Slack", "SLACK_WEBHOOK_URL", Itself, |r| format!(
            "https://hooks.slack.com/services/T{}/B{}/{}",
            r.draw(UPPER, 10),
            r.draw(UPPER, 10),
            r.draw(ALNUM, 24)
        )),
        f!("Discord", "DISCORD_WEBHOOK", Itself, |r| format!(
            "https://discord.com/api/webhooks/{}/{}",
            r.draw("0123456789", 18),
            r.draw(URLSAFE, 68)
        )),
        f!("Telegram", "TELEGRAM_BOT_TOKEN", Itself, |r| format!(
            "{}:AA{}",
            r.draw("0123456789", 10),
            r.draw(URLSAFE, 33)
        )),
        f!("Twilio", "TWILIO_API_SECRET", Name, |r| r.draw(HEX, 32)),
        f!("SendGrid", "SENDGRID_API_KEY", Itself, |r| format!("SG.{}.{}", r.draw(URLSAFE, 22), r.draw(URLSAFE, 43))),
        f!("Mailgun", "MAILGUN_API_KEY", Name, |r| format!("key-{}", r.draw(HEX, 32))),
        f!("Mailchimp", "MAILCHIMP_API_KEY", Itself, |r| format!("{}-us{}", r.draw(HEX, 32), 1 + r.next() % 20)),
        f!("Brevo (Sendinblue)", "BREVO_API_KEY", Itself, |r| format!(
            "xkeysib-{}-{}",
            r.draw(HEX, 64),
            r.draw(ALNUM, 16)
        )),
        f!("Anthropic", "ANTHROPIC_API_KEY", Itself, |r| format!("sk-ant-api03-{}AA", r.draw(URLSAFE, 93))),
        f!("OpenAI (and sk- keys)", "OPENAI_API_KEY", Itself, |r| format!(
            "sk-proj-{}T3BlbkFJ{}",
            r.draw(URLSAFE, 74),
            r.draw(URLSAFE, 74)
        )),
        f!("OpenRouter", "OPENROUTER_API_KEY", Itself, |r| format!("sk-or-v1-{}", r.draw(HEX, 64))),
        f!("Groq", "GROQ_API_KEY", Itself, |r| format!("gsk_{}", r.draw(ALNUM, 52))),
        f!("xAI", "XAI_API_KEY", Itself, |r| format!("xai-{}", r.draw(ALNUM, 80))),
        f!("Perplexity", "PPLX_API_KEY", Itself, |r| format!("pplx-{}", r.draw(ALNUM, 48))),
        f!("Hugging Face", "HF_TOKEN", Itself, |r| format!("hf_{}", r.draw(LETTERS, 34))),
        f!("Replicate", "REPLICATE_API_TOKEN", Itself, |r| format!("r8_{}", r.draw(ALNUM, 37))),
        f!("LangChain (LangSmith)", "LANGSMITH_API_KEY", Itself, |r| format!(
            "lsv2_pt_{}_{}",
            r.draw(HEX, 32),
            r.draw(HEX, 10)
        )),
        f!("Mistral AI", "MISTRAL_API_KEY", Name, |r| r.draw(ALNUM, 32)),
        f!("Datadog", "DD_API_KEY", Name, |r| r.draw(HEX, 32)),
        f!("New Relic", "NEW_RELIC_API_KEY", Itself, |r| format!("NRAK-{}", r.draw(UPPER, 27))),
        f!("Sentry", "SENTRY_AUTH_TOKEN", Itself, |r| format!("sntryu_{}", r.draw(HEX, 64))),
        f!("Grafana", "GRAFANA_SA_TOKEN", Itself, |r| format!("glsa_{}_{}", r.draw(ALNUM, 32), r.draw(HEX, 8))),
        f!("Dynatrace", "DT_API_TOKEN", Itself, |r| format!("dt0c01.{}.{}", r.draw(UPPER, 24), r.draw(UPPER, 64))),
        f!("Buildkite", "BUILDKITE_API_TOKEN", Itself, |r| format!("bkua_{}", r.draw(HEX, 40))),
        f!("CircleCI", "CIRCLE_TOKEN", Itself, |r| format!("CCIPAT_{}_{}", r.draw(ALNUM, 22), r.draw(HEX, 40))),
        f!("SonarQube", "SONAR_TOKEN", Itself, |r| format!("squ_{}", r.draw(HEX, 40))),
        f!("Linear", "LINEAR_API_KEY", Itself, |r| format!("lin_api_{}", r.draw(ALNUM, 40))),
        f!("Notion", "NOTION_TOKEN", Itself, |r| format!("ntn_{}{}", r.draw("0123456789", 11), r.draw(ALNUM, 35))),
        f!("Figma", "FIGMA_TOKEN", Itself, |r| format!("figd_{}", r.draw(URLSAFE, 40))),
        f!("Postman", "POSTMAN_API_KEY", Itself, |r| format!("PMAK-{}-{}", r.draw(HEX, 24), r.draw(HEX, 34))),
        f!("Mapbox", "MAPBOX_TOKEN", Itself, |r| format!("sk.eyJ1{}.{}", r.draw(URLSAFE, 60), r.draw(URLSAFE, 22))),
        f!("Snyk", "SNYK_TOKEN", Name, |r| uuid(r)),
        f!("JSON Web Token", "ID_TOKEN", Itself, |r| format!(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{}.{}",
            r.draw(URLSAFE, 60),
            r.draw(URLSAFE, 43)
        )),
        f!("HTTP Bearer token", "AUTH_HEADER", Name, |r| r.draw(URLSAFE, 40)),
        f!("Password or secret assignment", "DB_PASSWORD", Name, |r| format!(
            "{}!{}",
            r.draw(ALNUM, 10),
            r.draw(ALNUM, 6)
        )),
        f!("Password or secret assignment", "SESSION_SECRET", Name, |r| r.draw(B64, 48)),
    ]
}

/// How `secret` is printed in sample `i` of a format: the contexts cycle, those
/// that need a name only for formats that say what they are by their name.
fn print(i: usize, format: &Format, secret: &str) -> String {
    let name = format.name;
    let lower = name.to_ascii_lowercase();
    let by_name = [
        format!("export {name}={secret}"),
        format!(r#"{{"{lower}": "{secret}", "region": "eu-west-1"}}"#),
        format!("  {lower}: {secret}"),
        format!("{name}=\"{secret}\""),
        format!("config.{lower} = '{secret}'"),
        format!("--> set {name}={secret} in the environment"),
    ];
    let itself = [
        format!("Error: request failed (401) with credential {secret}"),
        format!("curl -H \"Authorization: Bearer {secret}\" https://api.example.invalid/v1"),
        format!("found {secret} in .env"),
        format!("token={secret}"),
    ];
    if format.family == "HTTP Bearer token" {
        return format!("> Authorization: Bearer {secret}");
    }
    match format.says {
        Says::Name => by_name[i % by_name.len()].clone(),
        Says::Itself if i.is_multiple_of(2) => itself[(i / 2) % itself.len()].clone(),
        Says::Itself => by_name[(i / 2) % by_name.len()].clone(),
    }
}

/// Samples whose secret spans lines or hides behind escapes.
fn shaped(r: &mut Rng) -> Vec<Sample> {
    let mut out = Vec::new();
    for kind in ["RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY"] {
        let body: Vec<String> = (0..8).map(|_| r.draw(B64, 64)).collect();
        out.push(Sample {
            family: "Private key (PEM, OpenSSH, PGP)",
            text: format!("-----BEGIN {kind}-----\n{}\n{}==\n-----END {kind}-----", body.join("\n"), r.draw(B64, 20)),
            needles: body,
        });
    }
    // A key inside a JSON string, its line breaks escaped (a service account file).
    let body: Vec<String> = (0..6).map(|_| r.draw(B64, 64)).collect();
    out.push(Sample {
        family: "Private key (PEM, OpenSSH, PGP)",
        text: format!(
            r#"{{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n"}}"#,
            body.join(r"\n")
        ),
        needles: body,
    });
    for scheme in ["postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqps", "mssql", "https"] {
        let password = r.draw(ALNUM, 18);
        out.push(Sample {
            family: "Password in a URL (database, broker, git remote)",
            text: format!("DATABASE_URL={scheme}://app_user:{password}@db.internal.example:5432/app"),
            needles: vec![password],
        });
    }
    // Cut across two lines: a terminal's wrap, `fold -w`.
    for cut in [12, 20, 28] {
        let secret = r.draw(B64, 40);
        out.push(Sample {
            family: "AWS",
            text: format!("aws_secret_access_key = {}\n{}", &secret[..cut], &secret[cut..]),
            needles: vec![secret[..cut].to_string(), secret[cut..].to_string()],
        });
        let token = format!("ghp_{}", r.draw(ALNUM, 36));
        out.push(Sample {
            family: "GitHub",
            text: format!("the token is {}\n{}", &token[..cut], &token[cut..]),
            needles: vec![token[..cut].to_string(), token[cut..].to_string()],
        });
    }
    // JSON-escaped: `\/` and `\u002f` inside the value.
    for escape in [r"\/", r"\u002f", r"\u002F"] {
        let parts: Vec<String> = (0..3).map(|_| r.draw(ALNUM, 12)).collect();
        let secret = format!("{}{}", parts.join("/"), r.draw(ALNUM, 4));
        out.push(Sample {
            family: "AWS",
            text: format!(
                r#"{{"SecretAccessKey":"{}","Expiration":"2030-01-01T00:00:00Z"}}"#,
                secret.replace('/', escape)
            ),
            needles: parts,
        });
    }
    out
}

/// The whole corpus, the same on every call.
pub fn corpus() -> Vec<Sample> {
    let mut r = Rng(0x5EC2_E75E_C2E7_0029);
    let mut out = Vec::new();
    for format in formats() {
        for i in 0..4 {
            let secret = (format.make)(&mut r);
            out.push(Sample { family: format.family, text: print(i, &format, &secret), needles: vec![secret] });
        }
    }
    out.extend(shaped(&mut r));
    out
}

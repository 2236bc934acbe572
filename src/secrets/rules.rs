//! The rule set, as data: every credential format ralph recognises, each named by its
//! family. Written for ralph from the formats the vendors document and from the
//! families gitleaks' default rules and GitHub secret scanning cover (see
//! docs/reliability.md, "Secrets"), not copied from either.
//!
//! A rule has anchors (words, any case, one of which every match holds: the
//! [`matcher`](super::matcher) looks for them all in one pass and runs a rule's
//! pattern only on a line that holds one of its anchors) and a shape:
//!
//! * [`Shape::Token`]: a token whose text says what it is (`ghp_…`, `AKIA…`), the
//!   whole match hidden unless the pattern names a group `s`;
//! * [`Shape::Named`]: a value that has no marker of its own, recognised by the name
//!   it is assigned to (`DATADOG_API_KEY=…`, `"twilio_secret": "…"`): the pattern is
//!   built from `names` and `value` ([`named_pattern`]);
//! * [`Shape::Special`]: what a pattern alone cannot decide (a private key block over
//!   many lines, a password after any secret-like name, a password in a URL).
//!
//! Patterns are `regex` syntax on bytes, ASCII only. A token pattern is as lenient
//! upwards as the format allows (`{36,}` where the vendor says 36): ralph hides, it
//! does not validate, and a longer token of the same prefix is still a token.

/// One credential format.
#[derive(Debug)]
pub(crate) struct Rule {
    /// Stable, kebab-case: what `ralph doctor` and the git guard name.
    pub id: &'static str,
    /// Who issues it, or what kind of secret it is, as people call it.
    pub family: &'static str,
    /// Lowercase words one of which every match contains.
    pub anchors: &'static [&'static str],
    pub shape: Shape,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    Token { pattern: &'static str, check: Check },
    Named { names: &'static str, value: &'static str, check: Check },
    Special(Special),
}

/// What a match must also be, beyond its pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Check {
    None,
    /// At least this many bits of Shannon entropy per byte: not `aaaa…`, not `0000…`.
    Entropy(f32),
    /// A digit, or both cases: a key, not a slug of words (`sk-learn-rate-table`).
    Mixed,
}

/// The rules worked out in code ([`super::special`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// `password = …`, `"api_key": "…"`, `--token …`: a value after a name that says
    /// secret, hidden when the name is unambiguous or the value looks random.
    Assignment,
    /// `scheme://user:password@host`.
    UrlPassword,
    /// `Authorization: Basic <base64 of user:password>`.
    BasicAuth,
    /// `-----BEGIN … PRIVATE KEY-----` and its body, to the `END` line.
    PrivateKey,
    /// `curl -u user:password`.
    CurlUser,
    /// `.netrc`: `machine HOST login USER password PASSWORD`.
    Netrc,
}

const fn token(
    id: &'static str,
    family: &'static str,
    anchors: &'static [&'static str],
    pattern: &'static str,
) -> Rule {
    Rule { id, family, anchors, shape: Shape::Token { pattern, check: Check::None } }
}

const fn token_checked(
    id: &'static str,
    family: &'static str,
    anchors: &'static [&'static str],
    pattern: &'static str,
    check: Check,
) -> Rule {
    Rule { id, family, anchors, shape: Shape::Token { pattern, check } }
}

const fn named(
    id: &'static str,
    family: &'static str,
    anchors: &'static [&'static str],
    names: &'static str,
    value: &'static str,
) -> Rule {
    Rule { id, family, anchors, shape: Shape::Named { names, value, check: Check::Entropy(2.5) } }
}

const fn special(id: &'static str, family: &'static str, anchors: &'static [&'static str], s: Special) -> Rule {
    Rule { id, family, anchors, shape: Shape::Special(s) }
}

/// The pattern of a [`Shape::Named`] rule: a key holding one of `names` (any case;
/// in a JSON string, a YAML or TOML key, a shell variable), an assignment (`=`, `:`,
/// `:=`, `=>`), an optional quote, then the value as group `s`, ending where a token
/// cannot go on.
pub(crate) fn named_pattern(names: &str, value: &str) -> String {
    format!(
        r#"(?i:[a-z0-9_.\-]{{0,40}}(?:{names})[a-z0-9_.\-]{{0,30}})["'`]?[ \t]{{0,4}}(?::=|=>|=|:)[ \t]{{0,4}}["'`]?(?P<s>{value})(?:[^A-Za-z0-9_\-+/=.~]|$)"#
    )
}

/// A UUID, the shape of many vendors' keys.
macro_rules! uuid {
    () => {
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    };
}

/// Every rule, in the order overlaps are settled in (an earlier rule's match wins
/// over a later one's that starts at the same place).
pub(crate) static RULES: &[Rule] = &[
    // --- private keys, tokens that say what they are, URLs with passwords -----------
    special("private-key", "Private key (PEM, OpenSSH, PGP)", &["-----begin"], Special::PrivateKey),
    token("jwt", "JSON Web Token", &["eyj"], r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    special("url-password", "Password in a URL (database, broker, git remote)", &["://"], Special::UrlPassword),
    special("basic-auth", "HTTP Basic credentials", &["basic"], Special::BasicAuth),
    token("bearer", "HTTP Bearer token", &["bearer"], r"(?i:\bbearer)[ \t]+(?P<s>[A-Za-z0-9_\-.~+/]{16,}=*)"),
    special("curl-user", "curl user and password", &["curl"], Special::CurlUser),
    special("netrc", ".netrc password", &["machine"], Special::Netrc),
    // --- cloud providers ------------------------------------------------------------
    token(
        "aws-access-key-id",
        "AWS",
        &["akia", "asia", "abia", "acca", "a3t"],
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
    ),
    named(
        "aws-secret-access-key",
        "AWS",
        &["secret"],
        r"aws_?secret|secret_?access_?key|aws_?secret_?key",
        r"[A-Za-z0-9/+]{40}",
    ),
    token(
        "aws-session-token",
        "AWS",
        &["iqojb3jpz2lux2vj", "fwogzxivyxdz"],
        r"\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz)[A-Za-z0-9/+=]{100,}",
    ),
    named(
        "aws-session-token-named",
        "AWS",
        &["session", "security"],
        r"session_?token|security_?token",
        r"[A-Za-z0-9/+=]{100,}",
    ),
    token("aws-bedrock-api-key", "AWS", &["absk"], r"\bABSK[A-Za-z0-9+/]{100,}={0,2}"),
    token("google-api-key", "Google Cloud", &["aiza"], r"\bAIza[0-9A-Za-z_\-]{35}"),
    token("google-oauth-client-secret", "Google Cloud", &["gocspx-"], r"\bGOCSPX-[0-9A-Za-z_\-]{28,}"),
    token("google-oauth-access-token", "Google Cloud", &["ya29."], r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    token("google-oauth-refresh-token", "Google Cloud", &["1//0"], r"\b1//0[0-9A-Za-z_\-]{40,}"),
    named("google-service-account-key-id", "Google Cloud", &["private_key_id"], r"private_key_id", r"[a-f0-9]{40}"),
    token_checked(
        "azure-ad-client-secret",
        "Azure",
        &["q~"],
        r"\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}",
        Check::Entropy(3.0),
    ),
    token(
        "azure-storage-account-key",
        "Azure",
        &["accountkey"],
        r"(?i:accountkey)[ \t]*=[ \t]*(?P<s>[A-Za-z0-9+/]{86}==)",
    ),
    token(
        "azure-shared-access-key",
        "Azure",
        &["sharedaccesskey", "sharedaccesssignature"],
        r"(?i:sharedaccess(?:key|signature))[ \t]*=[ \t]*(?P<s>[A-Za-z0-9+/%=&:.\-]{20,})",
    ),
    token("azure-sas-signature", "Azure", &["sig="], r"[?&]sig=(?P<s>[A-Za-z0-9%+/_\-]{30,}(?:%3[Dd]|=)*)"),
    token(
        "azure-identifiable-key",
        "Azure",
        &["+ast", "azse", "azfu", "+asb", "+aeh", "+arm", "apim", "acdb", "azca", "+acr", "aiot", "jqqj9"],
        r"[A-Za-z0-9+/]{20,}(?:\+ASt|AzSe|AzFu|\+ASb|\+AEh|\+ARm|APIM|ACDb|AzCa|\+ACR|AIoT|JQQJ9)[A-Za-z0-9+/]{5,}={0,2}",
    ),
    token("azure-devops-pat", "Azure", &["azdo"], r"\b[A-Za-z0-9]{52,76}AZDO[A-Za-z0-9]{4,}"),
    named(
        "azure-devops-pat-named",
        "Azure",
        &["devops", "ado_pat", "azdo", "system_accesstoken"],
        r"azure_?devops[a-z_]*(?:pat|token)|ado_?pat|azdo_?(?:pat|token)|system_accesstoken",
        r"[a-z2-7]{52}|[A-Za-z0-9]{84}",
    ),
    named(
        "azure-openai-key",
        "Azure",
        &["azure"],
        r"azure_?(?:openai|cognitive|ai)[a-z_]*key",
        r"[a-fA-F0-9]{32}|[A-Za-z0-9]{84}",
    ),
    token("alibaba-access-key-id", "Alibaba Cloud", &["ltai"], r"\bLTAI[A-Za-z0-9]{12,20}\b"),
    named("alibaba-secret", "Alibaba Cloud", &["alibaba", "aliyun"], r"alibaba|aliyun", r"[A-Za-z0-9]{30}"),
    token("tencent-secret-id", "Tencent Cloud", &["akid"], r"\bAKID[A-Za-z0-9]{32}\b"),
    named(
        "ibm-cloud-api-key",
        "IBM Cloud",
        &["ibm", "ic_api_key"],
        r"ibm[a-z_]*api_?key|ic_api_key",
        r"[A-Za-z0-9_\-]{44}",
    ),
    token(
        "digitalocean-token",
        "DigitalOcean",
        &["dop_v1_", "doo_v1_", "dor_v1_", "dos_v1_"],
        r"\bdo[oprs]_v1_[a-f0-9]{64}",
    ),
    token("heroku-api-key-v2", "Heroku", &["hrku-"], r"\bHRKU-AA[0-9A-Za-z_\-]{58,}"),
    named("heroku-api-key", "Heroku", &["heroku"], r"heroku", uuid!()),
    named(
        "cloudflare-api-token",
        "Cloudflare",
        &["cloudflare", "cf_api"],
        r"cloudflare|cf_api",
        r"[A-Za-z0-9_\-]{37,40}",
    ),
    token("cloudflare-origin-ca-key", "Cloudflare", &["v1.0-"], r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    token(
        "flyio-token",
        "Fly.io",
        &["fo1_", "fm1a_", "fm1r_", "fm2_"],
        r"\b(?:fo1_[A-Za-z0-9_\-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})",
    ),
    token("vercel-token", "Vercel", &["vcp_", "vci_", "vca_", "vcr_", "vck_"], r"\bvc[pikar]_[A-Za-z0-9]{24,}"),
    named("vercel-token-named", "Vercel", &["vercel"], r"vercel", r"[A-Za-z0-9]{24}"),
    token("netlify-token", "Netlify", &["nfp_"], r"\bnfp_[A-Za-z0-9]{36,}"),
    named("netlify-token-named", "Netlify", &["netlify"], r"netlify", r"[A-Za-z0-9_\-]{40,46}"),
    token("render-api-key", "Render", &["rnd_"], r"\brnd_[A-Za-z0-9]{32,}"),
    token(
        "supabase-token",
        "Supabase",
        &["sbp_", "sb_secret_"],
        r"\b(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})",
    ),
    token("planetscale-token", "PlanetScale", &["pscale_"], r"\bpscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.\-]{32,64}"),
    token("databricks-token", "Databricks", &["dapi", "dose"], r"\bd(?:api|ose)[a-f0-9]{32}(?:-\d)?\b"),
    token("terraform-cloud-token", "HashiCorp", &[".atlasv1."], r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}"),
    token("vault-token", "HashiCorp", &["hvs.", "hvb.", "hvr."], r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    token("pulumi-token", "Pulumi", &["pul-"], r"\bpul-[a-f0-9]{40}\b"),
    token(
        "doppler-token",
        "Doppler",
        &["dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."],
        r"\bdp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}",
    ),
    token("1password-service-account", "1Password", &["ops_eyj"], r"\bops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    token(
        "1password-secret-key",
        "1Password",
        &["a3-"],
        r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
    ),
    token("age-secret-key", "age", &["age-secret-key-1"], r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    token("tailscale-key", "Tailscale", &["tskey-"], r"\btskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}"),
    token("docker-token", "Docker", &["dckr_pat_", "dckr_oat_"], r"\bdckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}"),
    token("yandex-api-key", "Yandex Cloud", &["aqvn"], r"\bAQVN[A-Za-z0-9_\-]{35,38}"),
    named(
        "yandex-secret",
        "Yandex Cloud",
        &["yandex"],
        r"yandex",
        r"YC[A-Za-z0-9_\-]{38}|t1\.[A-Za-z0-9_\-]+=*\.[A-Za-z0-9_\-]{86}=*",
    ),
    named("kubernetes-client-key", "Kubernetes", &["client-key-data"], r"client-key-data", r"[A-Za-z0-9+/]{40,}={0,2}"),
    // --- source hosts ---------------------------------------------------------------
    token("github-token", "GitHub", &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    token("github-fine-grained-pat", "GitHub", &["github_pat_"], r"\bgithub_pat_[A-Za-z0-9_]{40,}"),
    token(
        "gitlab-token",
        "GitLab",
        &[
            "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-",
            "glft-",
        ],
        r"\bgl(?:pat|dt|rt|ptt|cbt|imt|agent|oas|soat|ffct|ft)-[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{9})?",
    ),
    token("gitlab-runner-registration", "GitLab", &["gr1348941"], r"\bGR1348941[A-Za-z0-9_\-]{20,}"),
    token("gitlab-session", "GitLab", &["_gitlab_session="], r"_gitlab_session=(?P<s>[0-9a-z]{32})"),
    token("bitbucket-app-password", "Bitbucket", &["atbb"], r"\bATBB[A-Za-z0-9_=.\-]{28,}"),
    named("bitbucket-secret", "Bitbucket", &["bitbucket"], r"bitbucket", r"[A-Za-z0-9_=\-]{32,64}"),
    token("atlassian-api-token", "Atlassian", &["atatt3", "atctt3"], r"\bAT[AC]TT3[A-Za-z0-9_\-=]{150,}"),
    named(
        "atlassian-token-named",
        "Atlassian",
        &["atlassian", "confluence", "jira"],
        r"atlassian|confluence|jira",
        r"[A-Za-z0-9]{24}",
    ),
    token("sourcegraph-token", "Sourcegraph", &["sgp_"], r"\bsgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}\b"),
    // --- package registries ---------------------------------------------------------
    token("npm-token", "npm", &["npm_"], r"\bnpm_[A-Za-z0-9]{36,}"),
    token(
        "pypi-token",
        "PyPI",
        &["pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw"],
        r"\bpypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,}",
    ),
    token("rubygems-token", "RubyGems", &["rubygems_"], r"\brubygems_[a-f0-9]{48}"),
    token_checked("crates-io-token", "crates.io", &["cio"], r"\bcio[A-Za-z0-9]{32}\b", Check::Mixed),
    token_checked("nuget-api-key", "NuGet", &["oy2"], r"\boy2[a-z0-9]{43}\b", Check::Entropy(3.5)),
    token("clojars-token", "Clojars", &["clojars_"], r"\bCLOJARS_[A-Za-z0-9]{60}"),
    token("jfrog-token", "JFrog", &["akcp", "cmvmdgtu"], r"\b(?:AKCp[A-Za-z0-9]{60,}|cmVmdGtu[A-Za-z0-9]{50,})"),
    named("jfrog-token-named", "JFrog", &["jfrog", "artifactory"], r"jfrog|artifactory", r"[A-Za-z0-9]{64,73}"),
    // --- payment --------------------------------------------------------------------
    token(
        "stripe-key",
        "Stripe",
        &["sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"],
        r"\b[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}",
    ),
    token("stripe-webhook-secret", "Stripe", &["whsec_"], r"\bwhsec_[A-Za-z0-9+/=]{32,}"),
    token("square-token", "Square", &["sq0atp-", "sq0csp-", "sq0idp-"], r"\bsq0(?:atp|csp|idp)-[A-Za-z0-9_\-]{22,}"),
    token("square-access-token", "Square", &["eaaa"], r"\bEAAA[A-Za-z0-9_\-]{60,}"),
    token(
        "paypal-braintree-token",
        "PayPal / Braintree",
        &["access_token$"],
        r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}",
    ),
    token(
        "shopify-token",
        "Shopify",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    ),
    token("razorpay-key", "Razorpay", &["rzp_live_", "rzp_test_"], r"\brzp_(?:live|test)_[A-Za-z0-9]{14,}"),
    token(
        "flutterwave-key",
        "Flutterwave",
        &["flwseck", "flwpubk"],
        r"\bFLW(?:SECK|PUBK)(?:_TEST)?-[a-fA-F0-9]{12,32}(?:-X)?",
    ),
    token("paddle-api-key", "Paddle", &["pdl_live_", "pdl_sdbx_"], r"\bpdl_(?:live|sdbx)_apikey_[A-Za-z0-9_]{20,}"),
    token("checkout-secret-key", "Checkout.com", &["sk_sbox_"], r"\bsk_sbox_[a-z0-9]{26,}"),
    token(
        "plaid-access-token",
        "Plaid",
        &["access-sandbox-", "access-development-", "access-production-"],
        concat!(r"\baccess-(?:sandbox|development|production)-", uuid!()),
    ),
    named("plaid-secret", "Plaid", &["plaid"], r"plaid", r"[a-f0-9]{30}"),
    token(
        "mercury-token",
        "Mercury",
        &["secret-token:mercury_"],
        r"secret-token:mercury_(?:production|sandbox)_[a-z]{3}_[A-Za-z0-9]{30,}",
    ),
    token("easypost-key", "EasyPost", &["ezak", "eztk"], r"\bEZ[AT]K[A-Za-z0-9]{54}"),
    token("polar-token", "Polar", &["polar_"], r"\bpolar_(?:pat|oat|at_u|at_o|rt|cs|ci|ac)_[A-Za-z0-9]{30,}"),
    named("coinbase-secret", "Coinbase", &["coinbase"], r"coinbase", r"[A-Za-z0-9_\-]{64}"),
    named("gocardless-token", "GoCardless", &["gocardless"], r"gocardless", r"(?:live|sandbox)_[A-Za-z0-9_=\-]{40}"),
    token("shippo-token", "Shippo", &["shippo_"], r"\bshippo_(?:live|test)_[a-f0-9]{40}"),
    token("duffel-token", "Duffel", &["duffel_"], r"\bduffel_(?:test|live)_[A-Za-z0-9_=\-]{43}"),
    // --- messaging and chat ---------------------------------------------------------
    token(
        "slack-token",
        "Slack",
        &["xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xoxe."],
        r"\bxox(?:[abposr]|e\.xox[bp]|e)-[A-Za-z0-9\-]{10,}",
    ),
    token("slack-app-token", "Slack", &["xapp-"], r"\bxapp-\d-[A-Za-z0-9\-]{20,}"),
    token(
        "slack-webhook",
        "Slack",
        &["hooks.slack.com"],
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/+\-]{20,})",
    ),
    token("discord-webhook", "Discord", &["/api/webhooks/"], r"/api/webhooks/\d+/(?P<s>[A-Za-z0-9_\-]{60,})"),
    named(
        "discord-bot-token",
        "Discord",
        &["discord"],
        r"discord",
        r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}|[a-f0-9]{64}|[A-Za-z0-9_\-]{32}",
    ),
    token("telegram-bot-token", "Telegram", &[":aa"], r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}"),
    named("twilio-key", "Twilio", &["twilio"], r"twilio", r"SK[0-9a-fA-F]{32}|AC[0-9a-fA-F]{32}|[0-9a-fA-F]{32}"),
    token("sendgrid-key", "SendGrid", &["sg."], r"\bSG\.[A-Za-z0-9_\-]{20,24}\.[A-Za-z0-9_\-]{40,45}"),
    named(
        "mailgun-key",
        "Mailgun",
        &["mailgun"],
        r"mailgun",
        r"(?:pub)?key-[a-f0-9]{32}|[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8}",
    ),
    token("mailchimp-key", "Mailchimp", &["-us"], r"\b[a-f0-9]{32}-us\d{1,2}\b"),
    token(
        "brevo-key",
        "Brevo (Sendinblue)",
        &["xkeysib-", "xsmtpsib-"],
        r"\bx(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}",
    ),
    named("postmark-token", "Postmark", &["postmark"], r"postmark", uuid!()),
    token(
        "teams-webhook",
        "Microsoft Teams",
        &[".webhook.office.com"],
        r"\.webhook\.office\.com/webhookb2/(?P<s>[A-Za-z0-9@/\-]{40,})",
    ),
    named("mattermost-token", "Mattermost", &["mattermost"], r"mattermost", r"[a-z0-9]{26}"),
    named("messagebird-key", "MessageBird", &["messagebird", "message_bird"], r"message_?bird", r"[A-Za-z0-9]{25}"),
    named("intercom-token", "Intercom", &["intercom"], r"intercom", r"[A-Za-z0-9_=\-]{59,60}"),
    token("telnyx-key", "Telnyx", &["key"], r"\bKEY[0-9A-F]{32}_[A-Za-z0-9]{22}\b"),
    named(
        "twitter-secret",
        "Twitter / X",
        &["twitter"],
        r"twitter",
        r"A{22}[A-Za-z0-9%]{80,}|[A-Za-z0-9]{45,50}|[0-9]{15,25}-[A-Za-z0-9]{20,40}",
    ),
    token("facebook-access-token", "Meta (Facebook)", &["eaa"], r"\bEAA[BCDGI][A-Za-z0-9]{90,}"),
    named("facebook-secret", "Meta (Facebook)", &["facebook"], r"facebook", r"[a-f0-9]{32}"),
    token("firebase-messaging-key", "Firebase", &["apa91b"], r"\bAAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}"),
    named("zendesk-token", "Zendesk", &["zendesk"], r"zendesk", r"[A-Za-z0-9]{40}"),
    named("hubspot-key", "HubSpot", &["hubspot"], r"hubspot", uuid!()),
    token("hubspot-private-app-token", "HubSpot", &["pat-na1-", "pat-eu1-"], concat!(r"\bpat-(?:na|eu)1-", uuid!())),
    // --- LLM providers --------------------------------------------------------------
    token("anthropic-key", "Anthropic", &["sk-ant-"], r"\bsk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_\-]{20,}"),
    token("openrouter-key", "OpenRouter", &["sk-or-"], r"\bsk-or-v\d-[a-f0-9]{40,}"),
    token_checked("openai-key", "OpenAI (and sk- keys)", &["sk-"], r"\bsk-[A-Za-z0-9_\-]{20,}", Check::Mixed),
    token("groq-key", "Groq", &["gsk_"], r"\bgsk_[A-Za-z0-9]{48,}"),
    token("xai-key", "xAI", &["xai-"], r"\bxai-[A-Za-z0-9]{70,}"),
    token("perplexity-key", "Perplexity", &["pplx-"], r"\bpplx-[A-Za-z0-9]{40,}"),
    token("huggingface-token", "Hugging Face", &["hf_", "api_org_"], r"\b(?:hf|api_org)_[A-Za-z]{34,}"),
    token("replicate-token", "Replicate", &["r8_"], r"\br8_[A-Za-z0-9]{37,}"),
    token("langsmith-key", "LangChain (LangSmith)", &["lsv2_"], r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    token("pinecone-key", "Pinecone", &["pcsk_"], r"\bpcsk_[A-Za-z0-9_]{50,}"),
    token("tavily-key", "Tavily", &["tvly-"], r"\btvly-(?:dev-|prod-)?[A-Za-z0-9]{32,}"),
    token("cerebras-key", "Cerebras", &["csk-"], r"\bcsk-[a-z0-9]{40,}"),
    token("e2b-key", "E2B", &["e2b_"], r"\be2b_[a-f0-9]{40}"),
    named("cohere-key", "Cohere", &["cohere", "co_api_key"], r"cohere|co_api_key", r"[A-Za-z0-9]{40}"),
    named("mistral-key", "Mistral AI", &["mistral"], r"mistral", r"[A-Za-z0-9]{32}"),
    named("together-key", "Together AI", &["together"], r"together", r"[a-f0-9]{64}"),
    named(
        "elevenlabs-key",
        "ElevenLabs",
        &["elevenlabs", "xi_api_key"],
        r"elevenlabs|xi_api_key",
        r"(?:sk_)?[a-f0-9]{32,48}",
    ),
    named("wandb-key", "Weights & Biases", &["wandb"], r"wandb", r"[a-f0-9]{40}"),
    // --- observability and CI -------------------------------------------------------
    named(
        "datadog-key",
        "Datadog",
        &["datadog", "dd_api", "dd_app"],
        r"datadog|dd_?(?:api|app(?:lication)?)_?key",
        r"[a-f0-9]{32}|[a-f0-9]{40}",
    ),
    token(
        "new-relic-key",
        "New Relic",
        &["nrak-", "nrii-", "nrjs-"],
        r"\bNR(?:AK-[A-Z0-9]{27}|II-[A-Za-z0-9_\-]{32}|JS-[a-f0-9]{19})",
    ),
    token("new-relic-license-key", "New Relic", &["nral"], r"\b[a-f0-9]{36}NRAL\b"),
    token(
        "sentry-token",
        "Sentry",
        &["sntrys_", "sntryu_"],
        r"\b(?:sntrys_eyJ[A-Za-z0-9+/=_]{50,}|sntryu_[a-f0-9]{64})",
    ),
    token(
        "sentry-dsn",
        "Sentry",
        &["sentry", "ingest."],
        r"https?://(?P<s>[a-f0-9]{32})(?::[a-f0-9]{32})?@[a-z0-9.\-]*(?:sentry|ingest)",
    ),
    token(
        "grafana-token",
        "Grafana",
        &["glc_", "glsa_", "eyjrijoi"],
        r"\b(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{50,}={0,3})",
    ),
    token("dynatrace-token", "Dynatrace", &["dt0"], r"\bdt0[a-z]\d{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    token("honeycomb-key", "Honeycomb", &["hcaik_", "hcxik_", "hcxlk_"], r"\bhc[ax][il]k_[A-Za-z0-9]{50,}"),
    named("honeycomb-key-named", "Honeycomb", &["honeycomb"], r"honeycomb", r"[A-Za-z0-9]{22,32}"),
    named("splunk-token", "Splunk", &["splunk", "hec_token"], r"splunk|hec_token", uuid!()),
    named("pagerduty-token", "PagerDuty", &["pagerduty", "pd_token"], r"pagerduty|pd_token", r"[A-Za-z0-9_+\-]{20}"),
    token("axiom-token", "Axiom", &["xaat-", "xapt-"], concat!(r"\bxa[ap]t-", uuid!())),
    token("posthog-key", "PostHog", &["phx_"], r"\bphx_[A-Za-z0-9]{40,}"),
    token("buildkite-token", "Buildkite", &["bkua_"], r"\bbkua_[a-f0-9]{40}"),
    named("buildkite-agent-token", "Buildkite", &["buildkite"], r"buildkite", r"[a-f0-9]{40,50}"),
    token("circleci-token", "CircleCI", &["ccipat_", "ccipr"], r"\bCCIP(?:AT|RJ)_[A-Za-z0-9]{20,}_[a-f0-9]{40}"),
    named("circleci-token-named", "CircleCI", &["circle"], r"circle_?ci|circle_token", r"[a-f0-9]{40}"),
    named("travis-token", "Travis CI", &["travis"], r"travis", r"[A-Za-z0-9_\-]{22}"),
    named("codecov-token", "Codecov", &["codecov"], r"codecov", uuid!()),
    named("snyk-token", "Snyk", &["snyk"], r"snyk", uuid!()),
    token("sonar-token", "SonarQube", &["squ_", "sqp_", "sqa_"], r"\bsq[upa]_[a-f0-9]{40}"),
    named("jenkins-token", "Jenkins", &["jenkins"], r"jenkins", r"[a-f0-9]{32,34}"),
    named("launchdarkly-key", "LaunchDarkly", &["launchdarkly"], r"launchdarkly", r"(?:api|sdk|mob)-[a-f0-9\-]{36}"),
    token("prefect-key", "Prefect", &["pnu_"], r"\bpnu_[A-Za-z0-9]{36}"),
    token("postman-key", "Postman", &["pmak-"], r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    token("octopus-deploy-key", "Octopus Deploy", &["api-"], r"\bAPI-[A-Z0-9]{26}\b"),
    token(
        "harness-token",
        "Harness",
        &["pat.", "sat."],
        r"\b[ps]at\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
    ),
    token("infracost-key", "Infracost", &["ico-"], r"\bico-[A-Za-z0-9]{32}\b"),
    token("linear-key", "Linear", &["lin_api_", "lin_oauth_"], r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    token(
        "notion-token",
        "Notion",
        &["ntn_", "secret_"],
        r"\b(?:ntn_[0-9]{11}[A-Za-z0-9]{32,}|secret_[A-Za-z0-9]{43})\b",
    ),
    token("airtable-token", "Airtable", &["pat"], r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    named("asana-token", "Asana", &["asana"], r"asana", r"\d/\d{10,}(?:/\d+)?:[A-Za-z0-9]{32}|[0-9]{16}"),
    token("figma-token", "Figma", &["figd_"], r"\bfigd_[A-Za-z0-9_\-]{40,}"),
    token("frameio-token", "Frame.io", &["fio-u-"], r"\bfio-u-[A-Za-z0-9_=\-]{64}"),
    token("typeform-token", "Typeform", &["tfp_"], r"\btfp_[A-Za-z0-9_.=\-]{59}"),
    token("contentful-token", "Contentful", &["cfpat-"], r"\bCFPAT-[A-Za-z0-9_\-]{43}"),
    token("readme-key", "ReadMe", &["rdme_"], r"\brdme_[a-z0-9]{70}"),
    token("dropbox-token", "Dropbox", &["sl."], r"\bsl\.[A-Za-z0-9_=\-]{130,}"),
    named(
        "dropbox-token-named",
        "Dropbox",
        &["dropbox"],
        r"dropbox",
        r"[A-Za-z0-9]{11}AAAAAAAAAA[A-Za-z0-9_=\-]{43}|[A-Za-z0-9]{15}",
    ),
    token("mapbox-token", "Mapbox", &["sk.eyj"], r"\bsk\.eyJ[A-Za-z0-9_\-]{50,}\.[A-Za-z0-9_\-]{20,}"),
    token("maxmind-key", "MaxMind", &["_mmk"], r"\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b"),
    token("clickhouse-key", "ClickHouse", &["4b1d"], r"\b4b1d[A-Za-z0-9]{38}\b"),
    named("okta-token", "Okta", &["okta"], r"okta", r"00[A-Za-z0-9_=\-]{40}"),
    named("auth0-secret", "Auth0", &["auth0"], r"auth0", r"[A-Za-z0-9_\-]{64}"),
    named("algolia-key", "Algolia", &["algolia"], r"algolia", r"[a-f0-9]{32}"),
    named("contentful-token-named", "Contentful", &["contentful"], r"contentful", r"[A-Za-z0-9_=\-]{43}"),
    named("fastly-token", "Fastly", &["fastly"], r"fastly", r"[A-Za-z0-9_=\-]{32}"),
    named("confluent-secret", "Confluent", &["confluent"], r"confluent", r"[A-Za-z0-9+/]{64}|[A-Za-z0-9]{16}"),
    named("sumologic-key", "Sumo Logic", &["sumo"], r"sumo", r"[A-Za-z0-9]{64}|su[A-Za-z0-9]{12}"),
    // --- more vendors: tokens with a prefix --------------------------------------------
    token("adobe-client-secret", "Adobe", &["p8e-"], r"\bp8e-[A-Za-z0-9]{32}"),
    token(
        "defined-networking-key",
        "Defined Networking",
        &["dnkey-"],
        r"\bdnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}",
    ),
    token("intra42-secret", "42 (intra)", &["s-s4t2"], r"\bs-s4t2(?:ud|af)-[a-f0-9]{64}"),
    token("openshift-token", "OpenShift", &["sha256~"], r"\bsha256~[A-Za-z0-9_\-]{43}"),
    token("scalingo-token", "Scalingo", &["tk-us-"], r"\btk-us-[A-Za-z0-9_\-]{48}"),
    token(
        "settlemint-token",
        "SettleMint",
        &["sm_aat_", "sm_pat_", "sm_sat_"],
        r"\bsm_(?:aat|pat|sat)_[A-Za-z0-9]{16,}",
    ),
    token_checked("jwt-base64", "JSON Web Token", &["zxlk"], r"\bZXlK[A-Za-z0-9+/]{60,}={0,2}", Check::Entropy(4.0)),
    token(
        "authress-key",
        "Authress",
        &[".acc_", ".acc-"],
        r"\b(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9\-]{10,32}\.[A-Za-z0-9+/_=\-]{30,120}",
    ),
    token(
        "nuget-config-password",
        "NuGet",
        &["<add"],
        r#"(?i)<add[ \t]+key="(?:cleartext)?password"[ \t]+value="(?P<s>[^"]{1,200})""#,
    ),
    token("apify-token", "Apify", &["apify_api_"], r"\bapify_api_[A-Za-z0-9]{36}"),
    token(
        "devcycle-key",
        "DevCycle",
        &["dvc_client_", "dvc_server_", "dvc_mobile_"],
        r"\bdvc_(?:client|server|mobile)_[A-Za-z0-9_\-]{30,}",
    ),
    token("lichess-token", "Lichess", &["lip_", "lio_"], r"\bli[po]_[A-Za-z0-9]{16,}"),
    token("neon-api-key", "Neon", &["napi_"], r"\bnapi_[a-z0-9]{64}"),
    token(
        "onfido-token",
        "Onfido",
        &["api_live.", "api_sandbox.", "api_live_", "api_sandbox_"],
        r"\bapi_(?:live|sandbox)(?:_[a-z]{2})?\.[A-Za-z0-9_\-]{11}\.[A-Za-z0-9_\-]{32}",
    ),
    token("pangea-token", "Pangea", &["pts_"], r"\bpts_[a-z0-9]{32}\b"),
    token(
        "persona-key",
        "Persona",
        &["persona_production_", "persona_sandbox_"],
        r"\bpersona_(?:production|sandbox)_[A-Za-z0-9\-]{30,}",
    ),
    token("pinterest-token", "Pinterest", &["pina_"], r"\bpina_[A-Z0-9]{32,}"),
    token("rootly-key", "Rootly", &["rootly_"], r"\brootly_[a-f0-9]{64}"),
    token("samsara-token", "Samsara", &["samsara_api_"], r"\bsamsara_api_[A-Za-z0-9]{30}"),
    token("unkey-key", "Unkey", &["unkey_"], r"\bunkey_[A-Za-z0-9]{16,}"),
    token("wakatime-key", "WakaTime", &["waka_"], r"\bwaka_(?:sec_)?[a-f0-9\-]{36,}"),
    token("asaas-token", "Asaas", &["$aact_"], r"\$aact_[A-Za-z0-9_\-$]{40,}"),
    // --- more vendors: a value by the name it is assigned to ----------------------------
    named("adafruit-key", "Adafruit", &["adafruit"], r"adafruit", r"(?i:[a-z0-9_\-]{32})"),
    named("adobe-client-id", "Adobe", &["adobe"], r"adobe", r"[a-f0-9]{32}"),
    named("beamer-key", "Beamer", &["beamer"], r"beamer", r"b_[A-Za-z0-9=_\-]{44}"),
    named("bittrex-key", "Bittrex", &["bittrex"], r"bittrex", r"[A-Za-z0-9]{32}"),
    named("cisco-meraki-key", "Cisco Meraki", &["meraki"], r"meraki", r"[0-9a-f]{40}"),
    named("droneci-token", "Drone CI", &["drone"], r"drone_?ci|drone_token", r"[A-Za-z0-9]{32}"),
    named("etsy-token", "Etsy", &["etsy"], r"etsy", r"[A-Za-z0-9]{24}"),
    named("finicity-secret", "Finicity", &["finicity"], r"finicity", r"[a-f0-9]{32}|[A-Za-z0-9]{20}"),
    named("finnhub-token", "Finnhub", &["finnhub"], r"finnhub", r"[A-Za-z0-9]{20}"),
    named("flickr-key", "Flickr", &["flickr"], r"flickr", r"[A-Za-z0-9]{32}"),
    named("freshbooks-token", "FreshBooks", &["freshbooks"], r"freshbooks", r"[A-Za-z0-9]{64}"),
    named("gitter-token", "Gitter", &["gitter"], r"gitter", r"[A-Za-z0-9_\-]{40}"),
    named("kraken-key", "Kraken", &["kraken"], r"kraken", r"[A-Za-z0-9/=_+\-]{80,90}"),
    named("kucoin-key", "KuCoin", &["kucoin"], r"kucoin", concat!(r"[a-f0-9]{24}|", uuid!())),
    named("linkedin-secret", "LinkedIn", &["linkedin", "linked_in"], r"linked_?in", r"[A-Za-z0-9]{14,16}"),
    named("lob-key", "Lob", &["lob_", "lob-"], r"lob", r"(?:live|test)_(?:pub_)?[a-f0-9]{31,35}"),
    named("looker-secret", "Looker", &["looker"], r"looker", r"[A-Za-z0-9]{20,24}"),
    named(
        "nytimes-key",
        "New York Times",
        &["nytimes", "newyorktimes", "new-york-times"],
        r"nytimes|new_?york_?times|new-york-times",
        r"[A-Za-z0-9=_\-]{32}",
    ),
    named(
        "privateai-key",
        "Private AI",
        &["privateai", "private_ai", "private-ai"],
        r"private[_\-]?ai",
        r"[A-Za-z0-9]{32}",
    ),
    named("rapidapi-key", "RapidAPI", &["rapidapi"], r"rapidapi", r"[A-Za-z0-9_\-]{50}"),
    named("sendbird-token", "Sendbird", &["sendbird"], r"sendbird", concat!(r"[a-f0-9]{40}|", uuid!())),
    named("squarespace-token", "Squarespace", &["squarespace"], r"squarespace", uuid!()),
    named("twitch-token", "Twitch", &["twitch"], r"twitch", r"[A-Za-z0-9]{30}"),
    named(
        "sidekiq-secret",
        "Sidekiq",
        &["contribsys"],
        r"bundle_(?:enterprise|gems)__contribsys__com",
        r"[a-f0-9]{8}:[a-f0-9]{8}",
    ),
    named("bitrise-token", "Bitrise", &["bitrise"], r"bitrise", r"[A-Za-z0-9_\-]{40,90}"),
    named("canva-secret", "Canva", &["canva"], r"canva", r"[A-Za-z0-9_\-]{32,}"),
    named("temporal-key", "Temporal", &["temporal"], r"temporal", r"[A-Za-z0-9._\-]{40,}"),
    named("airtable-key", "Airtable", &["airtable"], r"airtable", r"[A-Za-z0-9]{17}"),
    named("linear-secret", "Linear", &["linear"], r"linear", r"[a-f0-9]{32}"),
    token(
        "aws-bedrock-short-lived",
        "AWS",
        &["bedrock-api-key-"],
        r"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&.\-]*",
    ),
    // --- anything assigned to a name that says secret -------------------------------
    special(
        "secret-assignment",
        "Password or secret assignment",
        &["pass", "pwd", "secret", "token", "key", "auth", "cred", "private"],
        Special::Assignment,
    ),
];

/// The families, in the order rules name them first, each once.
pub(crate) fn families() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for rule in RULES {
        if !out.contains(&rule.family) {
            out.push(rule.family);
        }
    }
    out
}

//! The environment an agent runs with: an allowlist, not a guess. An agent gets a
//! documented base set that lets it build and test ordinary projects, its kind's own
//! credentials and settings, what `pass_env` names (globs allowed), and the agent's
//! `env` table; everything else stays out. A name-based guess let `DATABASE_URL`
//! (with its password), `SLACK_WEBHOOK_URL`, `SENTRY_DSN` or `GH_PAT` through
//! because their names lack a marker word. Pure: names and values in, the child's
//! environment and the withheld names out.

use std::sync::LazyLock;

use super::kinds;
use crate::config::AgentKind;

/// What every agent gets (patterns, separated by blanks: `*` matches any run of
/// characters): the user, the shell and terminal, the locale, proxies, the temp dir,
/// certificates, toolchains, and git identity.
pub(crate) const BASE: &[&str] = &[
    // who and where
    "PATH HOME USER LOGNAME SHELL PWD OLDPWD SHLVL HOSTNAME XDG_*",
    // locale and terminal
    "LANG LANGUAGE LC_* TZ TERM COLORTERM TERMINFO TERMINFO_DIRS NO_COLOR",
    "CI DEBIAN_FRONTEND DISPLAY RUST_BACKTRACE RUST_LOG EDITOR VISUAL PAGER",
    // network set-up
    "HTTP_PROXY HTTPS_PROXY NO_PROXY ALL_PROXY http_proxy https_proxy no_proxy all_proxy",
    // temp dir
    "TMPDIR TMP TEMP",
    // certificates
    "SSL_CERT_FILE SSL_CERT_DIR NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO *_CA_BUNDLE",
    "*_CERT_FILE *_CERT_DIR *_CA_CERTS*",
    // toolchains
    "CARGO_HOME CARGO_TARGET_DIR RUSTUP_* RUSTFLAGS RUSTC_WRAPPER JAVA_HOME JAVA_TOOL_OPTIONS GRADLE_USER_HOME",
    "MAVEN_OPTS GOPATH GOROOT GOCACHE GOMODCACHE GOFLAGS GOPROXY VIRTUAL_ENV CONDA_* PYENV_* PYTHON* PIP_* UV_*",
    "NVM_* NODE_PATH NODE_OPTIONS PNPM_HOME BUN_INSTALL DENO_DIR GEM_HOME GEM_PATH RBENV_* PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH CC CXX MAKEFLAGS",
    // git and ssh
    "SSH_AUTH_SOCK GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL",
    // ralph's: the fleet task the agent works for, so a ralph it starts refuses
    // (docs/fleet.md)
    "RALPH_FLEET_TASK",
];

/// [`BASE`]'s patterns one by one, split once: every agent call asks about every name.
static BASE_NAMES: LazyLock<Vec<&str>> = LazyLock::new(|| BASE.iter().flat_map(|g| g.split_whitespace()).collect());

/// The credentials each kind looks for (what `ralph doctor` checks for).
pub(crate) fn allowlist(kind: AgentKind) -> &'static [&'static str] {
    kinds::descriptor(kind).map_or(&[], |d| d.credentials)
}

/// Parts of a variable name (split at `_` and `-`) that mark it as a credential:
/// their values are redacted by value wherever ralph writes (see
/// `secrets::hide_values`). Contained anywhere in a part:
const SECRET_MARKERS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "WEBHOOK", "OAUTH"];
/// Short markers that count only as a whole part (`PATH` is not a `PAT`, nor
/// `GIT_AUTHOR_NAME` an `AUTH`).
const SECRET_PARTS: &[&str] = &["PAT", "DSN", "AUTH"];

/// Whether a variable's value should be treated as a credential.
pub(crate) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // A socket path, not a secret.
    if upper == "SSH_AUTH_SOCK" {
        return false;
    }
    upper.split(['_', '-']).any(|part| SECRET_MARKERS.iter().any(|m| part.contains(m)) || SECRET_PARTS.contains(&part))
        || (upper.contains("DATABASE") && upper.contains("URL"))
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters and
/// `?` any one character.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some((b'?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// Whether the agent gets `name` from ralph's environment.
pub(crate) fn passes(name: &str, kind: AgentKind, pass_env: &[String]) -> bool {
    // The base set, then the kind's own credentials and settings.
    let own = kinds::descriptor(kind).map_or(&[][..], |d| d.passes);
    let allowed = BASE_NAMES.iter().chain(own).copied();
    // "Running inside another agent" changes a CLI's behaviour: never passed, not
    // even through `pass_env`.
    !kinds::ALL.iter().any(|d| d.nesting_markers.contains(&name))
        && allowed.chain(pass_env.iter().map(String::as_str)).any(|p| glob_match(p, name))
}

/// The child's environment and what was kept from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentEnv {
    pub vars: Vec<(String, String)>,
    /// Names in ralph's environment the agent does not get, sorted.
    pub withheld: Vec<String>,
}

/// Builds the child's environment from `base` (normally `std::env::vars()`); the
/// `extra` pairs (the kind's settings, the agent's `env` table, the run id) win.
pub(crate) fn build(
    base: impl IntoIterator<Item = (String, String)>,
    kind: AgentKind,
    pass_env: &[String],
    extra: impl IntoIterator<Item = (String, String)>,
) -> AgentEnv {
    let (mut vars, withheld): (Vec<_>, Vec<_>) = base.into_iter().partition(|(k, _)| passes(k, kind, pass_env));
    let mut withheld: Vec<String> = withheld.into_iter().map(|(k, _)| k).collect();
    for (k, v) in extra {
        vars.retain(|(existing, _)| existing != &k);
        withheld.retain(|existing| existing != &k);
        vars.push((k, v));
    }
    withheld.sort();
    AgentEnv { vars, withheld }
}

/// The values among `vars` that are credentials: the kind's own, and any whose name
/// looks like one.
pub(crate) fn secret_values(vars: &[(String, String)], kind: AgentKind) -> Vec<&str> {
    vars.iter()
        .filter(|(k, _)| looks_secret(k) || allowlist(kind).contains(&k.as_str()))
        .map(|(_, v)| v.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn names(env: &AgentEnv) -> Vec<&str> {
        env.vars.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn only_the_base_set_and_the_kinds_own_pass() {
        let base = vars(&[
            ("HOME", "/h"),
            ("CLAUDECODE", "1"),
            ("ANTHROPIC_API_KEY", "a"),
            ("OPENAI_API_KEY", "o"),
            ("GITHUB_TOKEN", "g"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
            ("XDG_CONFIG_HOME", "/x"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("DATABASE_URL", "postgres://u:pw@db/x"),
            ("SLACK_WEBHOOK_URL", "https://hooks"),
            ("SENTRY_DSN", "https://k@sentry"),
            ("GH_PAT", "p"),
            ("PGPASS", "pw"),
            ("NODE_EXTRA_CA_CERTS", "/ca.pem"),
            ("RUSTUP_HOME", "/r"),
        ]);
        let env = build(base, AgentKind::Claude, &[], Vec::new());
        assert_eq!(
            names(&env),
            [
                "HOME",
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                "XDG_CONFIG_HOME",
                "HTTPS_PROXY",
                "SSH_AUTH_SOCK",
                "NODE_EXTRA_CA_CERTS",
                "RUSTUP_HOME"
            ]
        );
        assert_eq!(
            env.withheld,
            [
                "CLAUDECODE",
                "DATABASE_URL",
                "GH_PAT",
                "GITHUB_TOKEN",
                "OPENAI_API_KEY",
                "PGPASS",
                "SENTRY_DSN",
                "SLACK_WEBHOOK_URL"
            ]
        );
    }

    #[test]
    fn pass_env_takes_globs_and_extra_wins() {
        let base = vars(&[("MY_TOKEN", "t"), ("LANG", "C"), ("PG_HOST", "h"), ("PGX", "x"), ("CLAUDECODE", "1")]);
        let pass = ["MY_TOKEN".to_string(), "PG_*".to_string(), "CLAUDE*".to_string()];
        let env = build(base, AgentKind::Command, &pass, vars(&[("LANG", "C.UTF-8")]));
        assert_eq!(env.vars, vars(&[("MY_TOKEN", "t"), ("PG_HOST", "h"), ("LANG", "C.UTF-8")]));
        assert_eq!(env.withheld, ["CLAUDECODE", "PGX"]);
    }

    #[test]
    fn globs() {
        assert!(glob_match("LC_*", "LC_ALL"));
        assert!(glob_match("*_URL", "DATABASE_URL"));
        assert!(glob_match("A?C", "ABC"));
        assert!(!glob_match("LC_*", "XLC_ALL"));
        assert!(!glob_match("PATH", "PATHX"));
    }

    #[test]
    fn credential_names() {
        for name in ["GH_PAT", "PGPASS", "SENTRY_DSN", "SLACK_WEBHOOK_URL", "DATABASE_URL", "X_API_KEY", "DB_PASSWORD"]
        {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["PATH", "GIT_AUTHOR_NAME", "SSH_AUTH_SOCK", "HOME", "PWD_HISTORY"] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn credential_values_are_found_by_name() {
        let v = vars(&[("ANTHROPIC_API_KEY", "sk-ant-secret123"), ("DATABASE_URL", "pg://u:pw@h"), ("HOME", "/h")]);
        assert_eq!(secret_values(&v, AgentKind::Claude), ["sk-ant-secret123", "pg://u:pw@h"]);
    }
}

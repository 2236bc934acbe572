//! The environment an agent runs with: the user's own, minus nesting markers and
//! credential-like variables the agent's kind does not need.
//!
//! A user's set-up of the CLI (`HOME`, `XDG_*`, `CODEX_HOME`, `ANTHROPIC_BASE_URL`,
//! proxies) passes through untouched; only values that look like secrets are held
//! back unless the kind's allowlist or `pass_env` names them.

use crate::config::AgentKind;

/// Variables that mark "running inside another agent" and change CLI behaviour.
const NESTING_MARKERS: &[&str] = &["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "OPENCODE"];

/// Parts of a variable name that mark it as a credential.
const SECRET_MARKERS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"];

/// Credentials each kind needs to reach its provider.
pub fn allowlist(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::Claude => &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
        ],
        AgentKind::Codex => &["OPENAI_API_KEY", "CODEX_API_KEY"],
        AgentKind::Opencode => &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"],
        AgentKind::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"],
        AgentKind::Command | AgentKind::Sim => &[],
    }
}

/// Whether a variable name looks like it carries a credential.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // Settings that merely mention a credential (ANTHROPIC_BASE_URL is fine anyway)
    // such as `SSH_AUTH_SOCK` point at an agent socket, not a secret.
    if upper == "SSH_AUTH_SOCK" {
        return false;
    }
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// Builds the child's environment from `base` (normally `std::env::vars()`).
pub fn scrubbed(
    base: impl IntoIterator<Item = (String, String)>,
    kind: AgentKind,
    pass_env: &[String],
    extra: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let allowed = allowlist(kind);
    let mut out: Vec<(String, String)> = base
        .into_iter()
        .filter(|(k, _)| !NESTING_MARKERS.contains(&k.as_str()))
        .filter(|(k, _)| !looks_secret(k) || allowed.contains(&k.as_str()) || pass_env.iter().any(|p| p == k))
        .collect();
    for (k, v) in extra {
        out.retain(|(existing, _)| existing != &k);
        out.push((k, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn removes_nesting_markers_and_foreign_credentials() {
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
        ]);
        let env = scrubbed(base, AgentKind::Claude, &[], Vec::new());
        assert_eq!(
            names(&env),
            ["HOME", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "XDG_CONFIG_HOME", "HTTPS_PROXY", "SSH_AUTH_SOCK"]
        );
    }

    #[test]
    fn pass_env_extends_the_allowlist_and_extra_wins() {
        let base = vars(&[("MY_TOKEN", "t"), ("LANG", "C")]);
        let env = scrubbed(base, AgentKind::Command, &["MY_TOKEN".into()], vars(&[("LANG", "C.UTF-8")]));
        assert_eq!(env, vars(&[("MY_TOKEN", "t"), ("LANG", "C.UTF-8")]));
    }
}

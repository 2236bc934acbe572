//! Which endpoints tell whether the network (the agents' providers) is reachable,
//! and what a failed attempt means when they do not answer (design.md §5). Pure: the
//! TCP connect itself is the shell's (`run::connect`).
//!
//! An endpoint from `[offline] probe` always counts. A default one (a provider's
//! host, or the proxy in front of it) counts only once it has answered during this
//! run: a sandbox or a proxy that blocks TCP to the provider must never pin a run in
//! "offline" because of a default it could never reach.

use std::collections::{BTreeMap, BTreeSet};

use crate::agent::descriptor::ReadFile;
use crate::agent::kinds;
use crate::config::AgentConfig;

use super::{Category, Classification, Rule};

/// The host itself as a probe target: online when it has a default route and a
/// resolver that answers (`recovery::host`). Probed like a default endpoint, and
/// judged by only where no endpoint is: with `[offline] probe` unset, no default
/// endpoint that answered, and only once the host was seen online during the run.
pub(crate) const HOST: &str = "this host's network";

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProbeResult {
    Online,
    Offline { last_error: String },
}

/// The providers the configured agents talk to, as `host:port`, sorted and without
/// duplicates (the table in docs/recovery.md). A base URL set for the agent (its
/// `env`, then ralph's environment) or in the CLI's own config wins over the vendor's
/// public host; a provider ralph cannot tell has no default (a wrong guess would
/// only be ignored, see [`judged`], but it would cost a probe), and `command`/`sim`
/// agents have none.
pub(crate) fn default_endpoints(
    agents: &BTreeMap<String, AgentConfig>,
    env: &dyn Fn(&str) -> Option<String>,
    read: ReadFile<'_>,
) -> Vec<String> {
    let mut out: Vec<String> = agents
        .values()
        .filter_map(|agent| {
            let lookup = |var: &str| agent.env.get(var).cloned().or_else(|| env(var)).filter(|v| !v.trim().is_empty());
            (kinds::descriptor(agent.kind)?.endpoint)(agent, &lookup, read)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The endpoints whose silence means "offline": `[offline] probe` when set, else the
/// default `candidates` that answered at least once during this run, else the host
/// itself ([`HOST`]) once it was seen online during this run.
pub(crate) fn judged(explicit: Option<&[String]>, candidates: &[String], answered: &BTreeSet<String>) -> Vec<String> {
    if let Some(explicit) = explicit {
        return explicit.to_vec();
    }
    let defaults: Vec<String> = candidates.iter().filter(|e| answered.contains(*e)).cloned().collect();
    if defaults.is_empty() && answered.contains(HOST) {
        return vec![HOST.to_string()];
    }
    defaults
}

/// The summary's plain words for a run that never saw the network: nothing it
/// probed (`unanswered`, with the last error of each) ever answered.
pub(crate) fn never_online(answered: &BTreeSet<String>, unanswered: &BTreeMap<String, String>) -> Option<String> {
    if !answered.is_empty() || unanswered.is_empty() {
        return None;
    }
    // Each error names its endpoint already (the host's says "this host …").
    let heard: Vec<&str> = unanswered.values().map(String::as_str).collect();
    Some(format!("no provider answered since the start ({}); the failures may be the network's", heard.join("; ")))
}

/// Whether a failed attempt is worth a probe of its own: any failure that is not a
/// person's to fix. (Environmental ones are probed by the retry decision itself.)
pub(crate) fn probe_after(failure: &Classification) -> bool {
    matches!(failure.category, Category::Agent | Category::Ambiguous)
}

/// An agent that hangs or dies because the network is gone looks like a stall, a
/// timeout or a crash; when the providers do not answer right after it, the failure
/// is the outage's, not the agent's: environmental, no budget, the offline pause.
pub(crate) fn offline_failure(failure: &Classification, probe_error: &str) -> Classification {
    Classification::new(
        Category::Environmental,
        Rule::Offline,
        format!(
            "the providers do not answer ({probe_error}); the attempt's failure ({}: {}) is taken for the outage's",
            failure.rule, failure.reason
        ),
    )
}

/// The endpoints worth probing for these agents: their default providers, or the
/// proxy their traffic goes through (`HTTPS_PROXY`, `ALL_PROXY`) when one is set and
/// a provider is not on loopback.
pub(crate) fn candidates(
    agents: &BTreeMap<String, AgentConfig>,
    env: &dyn Fn(&str) -> Option<String>,
    read: ReadFile<'_>,
) -> Vec<String> {
    let endpoints = default_endpoints(agents, env, read);
    let proxy = ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .find_map(|var| env(var).filter(|v| !v.is_empty()))
        .and_then(|url| proxy_endpoint(&url));
    match proxy {
        Some(proxy) if endpoints.iter().any(|e| !is_loopback(e)) => vec![proxy],
        _ => endpoints,
    }
}

/// The default endpoints of each phase's agents, and of all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Candidates {
    pub per_phase: Vec<Vec<String>>,
    pub all: Vec<String>,
}

/// [`candidates`] for each phase of a workflow and for the whole of it.
pub(crate) fn by_phase(
    loaded: &crate::config::Loaded,
    env: &dyn Fn(&str) -> Option<String>,
    read: ReadFile<'_>,
) -> Candidates {
    let agents = &loaded.config.agents;
    let of = |names: &mut dyn Iterator<Item = &String>| {
        let chosen: BTreeMap<String, AgentConfig> =
            names.filter_map(|name| agents.get(name).map(|a| (name.clone(), a.clone()))).collect();
        candidates(&chosen, env, read)
    };
    Candidates {
        per_phase: loaded.phases.iter().map(|p| of(&mut p.chain.iter())).collect(),
        all: of(&mut loaded.phases.iter().flat_map(|p| p.chain.iter())),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::AgentKind;

    fn agent(kind: AgentKind, env: &[(&str, &str)]) -> AgentConfig {
        let mut a: AgentConfig = toml::from_str(&format!("kind = \"{}\"", kind.into_str())).unwrap();
        a.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        a
    }

    #[test]
    fn each_phase_probes_its_own_agents_providers() {
        let toml = "[agents.c]\nkind = \"claude\"\n[agents.g]\nkind = \"gemini\"\n[chains]\none = [\"c\"]\ntwo = [\"g\"]\n\
                    [phases.plan]\nchain = \"one\"\n[phases.develop]\nchain = \"two\"\n";
        let loaded = crate::config::parse(Path::new("ralph.toml"), toml).unwrap();
        let c = by_phase(&loaded, &|_| None, &|_| None);
        assert_eq!(
            c.per_phase,
            [vec!["api.anthropic.com:443".to_string()], vec!["generativelanguage.googleapis.com:443".to_string()]]
        );
        assert_eq!(c.all, ["api.anthropic.com:443", "generativelanguage.googleapis.com:443"]);
    }

    #[test]
    fn defaults_follow_the_configured_provider() {
        let mut agents = BTreeMap::new();
        agents.insert("c1".to_string(), agent(AgentKind::Claude, &[]));
        agents.insert("c2".to_string(), agent(AgentKind::Claude, &[]));
        agents.insert("cmd".to_string(), agent(AgentKind::Command, &[]));
        agents.insert("sim".to_string(), agent(AgentKind::Sim, &[]));
        let none = |_: &str| None;
        let no_files = |_: &Path| None;
        assert_eq!(default_endpoints(&agents, &none, &no_files), ["api.anthropic.com:443"]);

        let fake = |k: &str| (k == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:8089/anthropic".to_string());
        assert_eq!(default_endpoints(&agents, &fake, &no_files), ["127.0.0.1:8089"]);

        agents.insert("c3".to_string(), agent(AgentKind::Claude, &[("ANTHROPIC_BASE_URL", "https://proxy.example")]));
        agents.insert("g".to_string(), agent(AgentKind::Gemini, &[]));
        assert_eq!(
            default_endpoints(&agents, &fake, &no_files),
            ["127.0.0.1:8089", "generativelanguage.googleapis.com:443", "proxy.example:443"]
        );

        let only_commands: BTreeMap<_, _> = [("cmd".to_string(), agent(AgentKind::Command, &[]))].into();
        assert!(default_endpoints(&only_commands, &none, &no_files).is_empty());
    }

    #[test]
    fn a_default_counts_only_once_it_answered() {
        let candidates = vec!["api.anthropic.com:443".to_string(), "127.0.0.1:9".to_string()];
        let mut answered = BTreeSet::new();
        assert!(judged(None, &candidates, &answered).is_empty(), "never reached: no evidence of being offline");
        answered.insert("127.0.0.1:9".to_string());
        assert_eq!(judged(None, &candidates, &answered), ["127.0.0.1:9"]);
        let explicit = vec!["10.0.0.1:443".to_string()];
        assert_eq!(judged(Some(&explicit), &candidates, &BTreeSet::new()), explicit, "[offline] probe always counts");
    }

    #[test]
    fn only_agent_and_ambiguous_failures_get_a_probe_of_their_own() {
        let f = |c| Classification::new(c, Rule::Crashed, "y");
        assert!(probe_after(&f(Category::Agent)));
        assert!(probe_after(&f(Category::Ambiguous)));
        assert!(!probe_after(&f(Category::UserConfig)));
        assert!(!probe_after(&f(Category::Environmental)));
        let offline = offline_failure(&f(Category::Agent), "127.0.0.1:9: refused");
        assert_eq!((offline.category, offline.rule), (Category::Environmental, Rule::Offline));
        assert!(offline.reason.contains("crashed: y") && offline.reason.contains("refused"), "{}", offline.reason);
    }

    #[test]
    fn codex_follows_its_base_url_then_its_config_then_openai() {
        let codex = |env: &[(&str, &str)]| -> BTreeMap<String, AgentConfig> {
            [("cx".to_string(), agent(AgentKind::Codex, env))].into()
        };
        let none = |_: &str| None;
        let no_files = |_: &Path| None;
        assert_eq!(default_endpoints(&codex(&[]), &none, &no_files), ["api.openai.com:443"]);
        let set = codex(&[("OPENAI_BASE_URL", "http://127.0.0.1:9000/v1")]);
        assert_eq!(default_endpoints(&set, &none, &no_files), ["127.0.0.1:9000"]);
        let config = |p: &Path| {
            (p == Path::new("/cx/config.toml")).then(|| {
                "model_provider = \"fake\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:8123/v1\"\n"
                    .to_string()
            })
        };
        let home = codex(&[("CODEX_HOME", "/cx")]);
        assert_eq!(default_endpoints(&home, &none, &config), ["127.0.0.1:8123"]);
        let other = |p: &Path| (p == Path::new("/cx/config.toml")).then(|| "model_provider = \"mine\"\n".to_string());
        assert!(default_endpoints(&home, &none, &other).is_empty(), "an unknown provider has no default");
    }

    #[test]
    fn opencode_follows_its_models_provider() {
        let oc = |model: Option<&str>, env: &[(&str, &str)]| -> BTreeMap<String, AgentConfig> {
            let mut a = agent(AgentKind::Opencode, env);
            a.model = model.map(str::to_string);
            [("oc".to_string(), a)].into()
        };
        let none = |_: &str| None;
        let no_files = |_: &Path| None;
        assert_eq!(
            default_endpoints(&oc(Some("anthropic/claude-sonnet-4-5"), &[]), &none, &no_files),
            ["api.anthropic.com:443"]
        );
        assert_eq!(default_endpoints(&oc(Some("openai/gpt-5"), &[]), &none, &no_files), ["api.openai.com:443"]);
        assert!(default_endpoints(&oc(Some("mystery/m"), &[]), &none, &no_files).is_empty());
        assert!(default_endpoints(&oc(None, &[]), &none, &no_files).is_empty(), "no model, no provider");
        let config = |p: &Path| {
            (p == Path::new("/oc.json")).then(|| {
                r#"{"model":"fake/fake-model","provider":{"fake":{"options":{"baseURL":"http://127.0.0.1:7777/v1"}}}}"#
                    .to_string()
            })
        };
        let with_config = oc(None, &[("OPENCODE_CONFIG", "/oc.json")]);
        assert_eq!(default_endpoints(&with_config, &none, &config), ["127.0.0.1:7777"]);
    }
}

/// The `host:port` of a proxy URL (`http://user:pass@proxy:3128/`), where a CLI's
/// traffic really goes when `HTTPS_PROXY` is set: probing the vendor's host directly
/// would find a proxied machine "offline" forever.
pub(crate) fn proxy_endpoint(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    if host_port.is_empty() {
        return None;
    }
    let has_port =
        host_port.rsplit_once(':').is_some_and(|(_, p)| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if has_port {
        return Some(host_port.to_string());
    }
    let port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    Some(format!("{host_port}:{port}"))
}

/// Whether an endpoint is on this machine (a fake or local provider, never proxied).
pub(crate) fn is_loopback(endpoint: &str) -> bool {
    let host = endpoint.rsplit_once(':').map_or(endpoint, |(h, _)| h).trim_matches(['[', ']']);
    host == "localhost" || host.starts_with("127.") || host == "::1"
}

#[cfg(test)]
mod proxy_tests {
    use super::*;

    #[test]
    fn proxy_urls_become_endpoints() {
        assert_eq!(proxy_endpoint("http://proxy.corp:3128").as_deref(), Some("proxy.corp:3128"));
        assert_eq!(proxy_endpoint("http://u:p@proxy.corp:3128/").as_deref(), Some("proxy.corp:3128"));
        assert_eq!(proxy_endpoint("https://proxy.corp").as_deref(), Some("proxy.corp:443"));
        assert_eq!(proxy_endpoint("proxy.corp:8080").as_deref(), Some("proxy.corp:8080"));
        assert_eq!(proxy_endpoint("http://"), None);
    }

    #[test]
    fn loopback_endpoints() {
        assert!(is_loopback("127.0.0.1:8080"));
        assert!(is_loopback("localhost:1"));
        assert!(!is_loopback("api.anthropic.com:443"));
    }
}

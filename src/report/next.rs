//! The exact next step after a run that did not finish: which key to raise after a
//! cap, which credential after a 401, or just `ralph --resume` when that is all it
//! takes. Pure: a function of how the run ended, the last error and the config.

use std::path::Path;

use crate::config::Config;
use crate::outcome::RunEnd;
use crate::recovery::Rule;
use crate::recovery::policy::Cap;
use crate::state::checkpoint::LastError;

/// What the person reading the summary should do next; `None` for a finished run.
pub(crate) fn next_step(
    end: &RunEnd,
    cap: Option<Cap>,
    last_error: Option<&LastError>,
    config: &Config,
    config_path: &Path,
    phase: &str,
) -> Option<String> {
    let file = config_path.display();
    let resume = "`ralph --resume`";
    Some(match end {
        RunEnd::Completed | RunEnd::Declined => return None,
        RunEnd::Stopped(_) | RunEnd::ForceExit => format!("{resume} continues where it stopped"),
        RunEnd::Failed(_) => match cap {
            Some(Cap::Runtime) => format!(
                "raise [general] max_runtime in {file} (now {}), then {resume}",
                config
                    .general
                    .max_runtime
                    .map_or_else(|| "unset".into(), |d| humantime::format_duration(d).to_string())
            ),
            Some(Cap::Cost) => format!(
                "raise [general] max_cost_usd in {file} (now ${:.2}), then {resume}",
                config.general.max_cost_usd.unwrap_or_default()
            ),
            Some(Cap::Iterations) => {
                format!("raise [phases.{phase}] iterations in {file}, or make the goal reachable, then {resume}")
            }
            Some(Cap::EnvironmentalWait) => format!(
                "the outage outlasted [retry] max_environmental_wait in {file} (now {}): check the provider \
                 and the network (the last error says which), then {resume}",
                humantime::format_duration(config.retry.max_environmental_wait)
            ),
            Some(Cap::RateLimitWait) => format!(
                "the reported reset is later than [retry] max_rate_limit_wait in {file} (now {}): raise it, or \
                 add an agent that is not limited to the chain, then {resume}",
                humantime::format_duration(config.retry.max_rate_limit_wait)
            ),
            Some(cap) => {
                let (key, now) = match cap {
                    Cap::ToolRegistryResets => ("[retry] tool_registry_resets", config.retry.tool_registry_resets),
                    Cap::McpRestarts => ("[retry] mcp_restarts", config.retry.mcp_restarts),
                    Cap::AmbiguousAttempts => ("[retry] ambiguous_attempts", config.retry.ambiguous_attempts),
                    _ => ("[general] max_cycles", config.general.max_cycles),
                };
                // Only an error that ended the run is shown to read.
                let read = if last_error.is_some() { "read the last error and its log; " } else { "" };
                format!(
                    "{read}{resume} retries this iteration with a fresh budget \
                     (to allow more before giving up, raise {key} in {file}, now {now})"
                )
            }
            None => format!("read the last error and its log, fix the cause, then {resume}"),
        },
        RunEnd::Blocked(_) => blocked(last_error, config, &file.to_string()),
    })
}

fn blocked(last_error: Option<&LastError>, config: &Config, file: &str) -> String {
    let resume = "`ralph --resume`";
    let Some(e) = last_error else {
        return format!("fix the cause above, then {resume}");
    };
    let agent = &e.agent;
    let kind = config.agents.get(agent).map(|a| a.kind);
    match e.classification.rule {
        Rule::AuthFailed => {
            let vars = kind.map(crate::agent::env::allowlist).unwrap_or_default();
            let which = match vars.first() {
                Some(first) => format!("set {first} (or another credential it reads, or log in with its CLI)"),
                None => "check the agent's credentials".to_string(),
            };
            format!("the provider refused agent {agent}'s credentials: {which}, then {resume}")
        }
        Rule::BillingDisabled => {
            format!("add credit or quota to the provider account of agent {agent}, then {resume}")
        }
        Rule::LaunchImpossible | Rule::BinaryMissing => format!(
            "install the program of agent {agent}, or set its path ([agents.{agent}] binary or command) in {file}, then {resume}"
        ),
        _ => format!("fix the cause ({}), then {resume}", e.classification.reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::{Category, Classification};
    use crate::signal::StopCause;

    fn config() -> Config {
        toml::from_str("[general]\nmax_runtime = \"8h\"\nmax_cycles = 3\n[agents.claude]\nkind = \"claude\"\n")
            .expect("config")
    }

    fn error(rule: &str) -> LastError {
        let rule: Rule = serde_json::from_value(serde_json::Value::String(rule.into())).unwrap_or(Rule::Other);
        LastError {
            classification: Classification::new(Category::UserConfig, rule, "the provider said no"),
            agent: "claude".into(),
            text_tail: String::new(),
            at: jiff::Timestamp::UNIX_EPOCH,
            log: None,
        }
    }

    fn step(end: RunEnd, cap: Option<Cap>, e: Option<&LastError>) -> String {
        next_step(&end, cap, e, &config(), Path::new("ralph.toml"), "develop").unwrap_or_default()
    }

    #[test]
    fn each_ending_names_its_next_step() {
        let failed = || RunEnd::Failed("x".into());
        let blocked = || RunEnd::Blocked("x".into());
        let lines = [
            step(RunEnd::Stopped(StopCause::User), None, None),
            step(failed(), Some(Cap::Runtime), None),
            step(failed(), Some(Cap::Iterations), None),
            step(failed(), Some(Cap::MaxCycles), Some(&error("crashed"))),
            step(blocked(), None, Some(&error("auth_failed"))),
            step(blocked(), None, Some(&error("billing_disabled"))),
            step(blocked(), None, Some(&error("launch_impossible"))),
            step(blocked(), None, None),
        ];
        insta::assert_snapshot!(lines.join("\n"));
        assert_eq!(next_step(&RunEnd::Completed, None, None, &config(), Path::new("x"), "p"), None);
    }

    #[test]
    fn a_cap_no_error_reached_sends_nobody_to_read_one() {
        let line = step(RunEnd::Failed("x".into()), Some(Cap::McpRestarts), None);
        assert!(line.starts_with("`ralph --resume` retries this iteration"), "{line}");
        assert!(line.contains("[retry] mcp_restarts"), "{line}");
    }
}

//! What a resume continues under the current config: which phase, which agent of
//! the chain, whether the stored session may be resumed, and what changed since
//! the checkpoint was written. Pure; `ralph --resume` acts on the [`Plan`] and
//! `ralph --inspect-checkpoint` shows it.
//!
//! A session belongs to the agent (name and kind) that reported it: it is resumed
//! only by that agent. The checkpoint records the chain it was written under, so a
//! chain that changed since is detected rather than an index silently reused.

use crate::config::{AgentKind, Phase};
use crate::workflow::progress::{ChainAgent, Progress};

/// The run as the checkpoint recorded it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recorded<'a> {
    pub progress: &'a Progress,
    pub config_checksum: &'a str,
    pub goal_checksum: &'a str,
}

/// The config and goal found now.
#[derive(Clone, Copy)]
pub(crate) struct Current<'a> {
    /// How the config file is named in messages.
    pub config_name: &'a str,
    pub config_checksum: &'a str,
    pub goal_checksum: &'a str,
    pub phases: &'a [Phase],
    /// The kind of a configured agent, `None` when it is not configured.
    pub kind: &'a dyn Fn(&str) -> Option<AgentKind>,
}

/// What a resume will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The phase's index in the current order; `None` when the config no longer has
    /// the checkpoint's phase (the resume is refused).
    pub phase: Option<usize>,
    /// The agent of the chain to continue with.
    pub agent_index: usize,
    /// Whether the stored session may be resumed (it belongs to that agent).
    pub keep_session: bool,
    /// Whether the agent differs from the one the checkpoint stood at (its failure
    /// count does not carry over).
    pub agent_changed: bool,
    /// What changed since the checkpoint, each with what the resume does about it.
    pub changes: Vec<String>,
}

/// The chain of `phase` as it stands now, for the checkpoint.
pub(crate) fn chain_of(phase: &Phase, kind: &dyn Fn(&str) -> Option<AgentKind>) -> Vec<ChainAgent> {
    phase
        .chain
        .iter()
        .map(|name| ChainAgent { name: name.clone(), kind: kind(name).unwrap_or(AgentKind::Command) })
        .collect()
}

pub(crate) fn plan(recorded: Recorded<'_>, current: Current<'_>) -> Plan {
    let progress = recorded.progress;
    let pos = &progress.position;
    let has_session = progress.resume_session.is_some();
    let mut changes = Vec::new();
    if recorded.config_checksum != current.config_checksum {
        changes.push(format!("{} changed since this run started; resuming with the new version", current.config_name));
    }
    if recorded.goal_checksum != current.goal_checksum {
        changes.push("the goal file changed since this run started; the next attempt gets the new text".into());
    }
    let Some(index) = current.phases.iter().position(|p| p.name == pos.phase_name) else {
        changes.push(format!(
            "phase {} is no longer in {}: resume is refused; restore that phase or run `ralph --no-resume`",
            pos.phase_name, current.config_name
        ));
        return Plan { phase: None, agent_index: 0, keep_session: false, agent_changed: true, changes };
    };
    if index != pos.phase {
        changes.push(format!(
            "phase {} is now the {} phase (was the {})",
            pos.phase_name,
            crate::text::ordinal(index + 1),
            crate::text::ordinal(pos.phase + 1)
        ));
    }
    let phase = &current.phases[index];
    let now = chain_of(phase, current.kind);
    let names = |chain: &[ChainAgent]| chain.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ");
    let first = now.first().map_or("", |a| a.name.as_str());
    let fresh = if has_session { " with a fresh session and the full prompt" } else { "" };

    // Older checkpoints do not record the chain: the index is all there is.
    let Some(owner) = pos.chain.get(pos.agent_index) else {
        if pos.chain.is_empty() && pos.agent_index < now.len() {
            let agent_index = pos.agent_index;
            return Plan { phase: Some(index), agent_index, keep_session: has_session, agent_changed: false, changes };
        }
        changes.push(format!(
            "the checkpoint's {} agent of the chain does not exist in the chain of phase {} [{}]: resuming at its first agent, {first}{fresh}",
            crate::text::ordinal(pos.agent_index + 1),
            phase.name,
            names(&now)
        ));
        return Plan { phase: Some(index), agent_index: 0, keep_session: false, agent_changed: true, changes };
    };
    let chain_changed = pos.chain.iter().map(|a| &a.name).ne(now.iter().map(|a| &a.name));
    match now.iter().position(|a| a.name == owner.name) {
        None => {
            changes.push(format!(
                "agent {} is no longer in the chain of phase {} ([{}] → [{}]): resuming at its first agent, {first}{fresh}",
                owner.name,
                phase.name,
                names(&pos.chain),
                names(&now)
            ));
            Plan { phase: Some(index), agent_index: 0, keep_session: false, agent_changed: true, changes }
        }
        Some(at) => {
            if chain_changed {
                changes.push(format!(
                    "the chain of phase {} changed ([{}] → [{}]): resuming at agent {}, now {} in the chain",
                    phase.name,
                    names(&pos.chain),
                    names(&now),
                    owner.name,
                    crate::text::ordinal(at + 1)
                ));
            }
            let kind_now = now[at].kind;
            let keep_session = has_session && kind_now == owner.kind;
            if has_session && !keep_session {
                changes.push(format!(
                    "agent {} is now a {} agent (it was {}): its session is not resumed; a fresh session starts with the full prompt",
                    owner.name,
                    kind_now.into_str(),
                    owner.kind.into_str()
                ));
            }
            Plan { phase: Some(index), agent_index: at, keep_session, agent_changed: false, changes }
        }
    }
}

#[cfg(test)]
mod tests;

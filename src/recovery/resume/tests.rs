use super::*;

fn phase(name: &str, chain: &[&str]) -> Phase {
    Phase { iterations: 5, ..crate::testkit::phase(name, chain) }
}

fn agent(name: &str, kind: AgentKind) -> ChainAgent {
    ChainAgent { name: name.into(), kind }
}

/// A checkpoint standing in `develop` at `index` of `chain`, with a session.
fn progress(chain: Vec<ChainAgent>, index: usize) -> Progress {
    let mut p = Progress::new("develop");
    p.position.chain = chain;
    p.position.agent_index = index;
    p.resume_session = Some("s-1".into());
    p
}

fn claude_kinds(name: &str) -> Option<AgentKind> {
    match name {
        "c" | "a" => Some(AgentKind::Claude),
        "x" => Some(AgentKind::Codex),
        _ => None,
    }
}

fn plan_for(p: &Progress, phases: &[Phase], kind: &dyn Fn(&str) -> Option<AgentKind>) -> Plan {
    plan(
        Recorded { progress: p, config_checksum: "c1", goal_checksum: "g1" },
        Current { config_name: "ralph.toml", config_checksum: "c1", goal_checksum: "g1", phases, kind },
    )
}

#[test]
fn an_unchanged_chain_resumes_the_same_agent_and_session() {
    let p = progress(vec![agent("c", AgentKind::Claude), agent("x", AgentKind::Codex)], 1);
    let plan = plan_for(&p, &[phase("develop", &["c", "x"])], &claude_kinds);
    assert_eq!((plan.phase, plan.agent_index, plan.keep_session, plan.agent_changed), (Some(0), 1, true, false));
    assert!(plan.changes.is_empty(), "{:?}", plan.changes);
}

#[test]
fn a_reordered_chain_resumes_the_same_agent_by_name() {
    let p = progress(vec![agent("c", AgentKind::Claude), agent("x", AgentKind::Codex)], 1);
    let plan = plan_for(&p, &[phase("develop", &["x", "c"])], &claude_kinds);
    assert_eq!((plan.agent_index, plan.keep_session), (0, true));
    assert!(plan.changes[0].contains("resuming at agent x, now first in the chain"), "{:?}", plan.changes);
}

#[test]
fn a_removed_agent_resumes_at_the_first_with_a_fresh_session() {
    let p = progress(vec![agent("c", AgentKind::Claude), agent("a", AgentKind::Claude)], 1);
    // `a` renamed to `b`: the same index now names another agent.
    let plan = plan_for(&p, &[phase("develop", &["c", "b"])], &|_| Some(AgentKind::Claude));
    assert_eq!((plan.agent_index, plan.keep_session, plan.agent_changed), (0, false, true));
    assert!(plan.changes[0].contains("agent a is no longer in the chain"), "{:?}", plan.changes);
    assert!(plan.changes[0].contains("with a fresh session"), "{:?}", plan.changes);
}

#[test]
fn an_agent_of_another_kind_does_not_get_the_session() {
    let p = progress(vec![agent("c", AgentKind::Claude)], 0);
    let plan = plan_for(&p, &[phase("develop", &["c"])], &|_| Some(AgentKind::Codex));
    assert_eq!((plan.agent_index, plan.keep_session), (0, false));
    assert!(plan.changes[0].contains("now a codex agent (it was claude)"), "{:?}", plan.changes);
}

#[test]
fn an_old_checkpoint_without_a_chain_keeps_an_index_that_fits_and_resets_one_that_does_not() {
    let p = progress(Vec::new(), 1);
    let plan = plan_for(&p, &[phase("develop", &["c", "x"])], &claude_kinds);
    assert_eq!((plan.agent_index, plan.keep_session), (1, true));
    let plan = plan_for(&p, &[phase("develop", &["c"])], &claude_kinds);
    assert_eq!((plan.agent_index, plan.keep_session, plan.agent_changed), (0, false, true));
    assert!(plan.changes[0].contains("second agent of the chain does not exist"), "{:?}", plan.changes);
}

#[test]
fn changed_files_and_phases_are_reported() {
    let p = progress(vec![agent("c", AgentKind::Claude)], 0);
    let phases = [phase("plan", &["c"]), phase("develop", &["c"])];
    let plan = plan(
        Recorded { progress: &p, config_checksum: "c1", goal_checksum: "g1" },
        Current {
            config_name: "ralph.toml",
            config_checksum: "c2",
            goal_checksum: "g2",
            phases: &phases,
            kind: &claude_kinds,
        },
    );
    assert_eq!(plan.phase, Some(1));
    let all = plan.changes.join("\n");
    assert!(all.contains("ralph.toml changed"), "{all}");
    assert!(all.contains("the next attempt gets the new text"), "{all}");
    assert!(all.contains("phase develop is now the second phase"), "{all}");
    let gone = plan_for(&p, &[phase("review", &["c"])], &claude_kinds);
    assert_eq!(gone.phase, None);
    assert!(gone.changes[0].contains("resume is refused"), "{:?}", gone.changes);
}

//! Where the run goes at a phase boundary, and where it starts: the phase order, the
//! repeating review/fix group (`[general.workflow] repeat`) and `--from`. Pure: the
//! run's step and its start (`step::carry`, `step::start`) act on these decisions.
//!
//! The group's first phase is the review. It ends its pass "clean" with the goal
//! signal (`<promise>COMPLETE</promise>`): nothing is left to fix, so the rest of the
//! group is skipped and the run goes on after the group. Otherwise the group's other
//! phases follow, and after its last phase the next pass starts at the review again,
//! until `passes` passes have run; then the run goes on with issues left, which the
//! verdict in the checkpoint records.

use crate::config::{Phase, RepeatGroup};

use super::progress::{FromStart, Position, Progress, Verdict};

/// What the repeat group did when a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupMove {
    /// Back to the review for this pass.
    NextPass { pass: u32, passes: u32 },
    /// The group is left: the review was clean, or every pass was used.
    Ended(Verdict),
}

/// What a phase's end did besides moving on, for the journal and the display.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PhaseEnd {
    /// The finished phase was the group's review.
    pub verdict: Option<Verdict>,
    pub group: Option<GroupMove>,
}

/// The phase (index) and pass that follow a finished phase; `None` when the
/// workflow is finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Boundary {
    pub next: Option<(usize, u32)>,
    pub end: PhaseEnd,
}

/// Whether the phase at `index` is the group's review.
pub(crate) fn is_review(index: usize, repeat: Option<RepeatGroup>) -> bool {
    repeat.is_some_and(|g| g.first == index)
}

/// Where the run goes when phase `phase` has finished in pass `pass`; `goal` is
/// whether its last iteration ended with the goal signal.
pub(crate) fn after_phase(
    phase: usize,
    pass: u32,
    goal: bool,
    phase_count: usize,
    repeat: Option<RepeatGroup>,
) -> Boundary {
    let after = |index: usize| (index + 1 < phase_count).then_some((index + 1, 1));
    let Some(group) = repeat.filter(|g| g.contains(phase)) else {
        return Boundary { next: after(phase), end: PhaseEnd::default() };
    };
    let pass = pass.clamp(1, group.passes);
    let verdict = (phase == group.first).then_some(Verdict { pass, passes: group.passes, clean: goal });
    if verdict.is_some_and(|v| v.clean) {
        return Boundary { next: after(group.last), end: PhaseEnd { verdict, group: verdict.map(GroupMove::Ended) } };
    }
    if phase < group.last {
        return Boundary { next: Some((phase + 1, pass)), end: PhaseEnd { verdict, group: None } };
    }
    if pass < group.passes {
        let next = GroupMove::NextPass { pass: pass + 1, passes: group.passes };
        return Boundary { next: Some((group.first, pass + 1)), end: PhaseEnd { verdict, group: Some(next) } };
    }
    // Every pass used: on with the issues the last review found.
    let last = Verdict { pass, passes: group.passes, clean: false };
    Boundary { next: after(group.last), end: PhaseEnd { verdict, group: Some(GroupMove::Ended(last)) } }
}

/// The phase whose result the prompt of the current position gets as `{previous}`:
/// the one before it, except that the review of a later pass gets the fix of the
/// pass before.
pub(crate) fn previous_phase(pos: &Position, repeat: Option<RepeatGroup>) -> Option<usize> {
    match repeat {
        Some(g) if pos.phase == g.first && pos.pass > 1 => Some(g.last),
        _ => pos.phase.checked_sub(1),
    }
}

/// Puts the position at the start of phase `index` in pass `pass`: its first
/// iteration, the chain's primary agent, a fresh cycle count.
pub(crate) fn enter(pos: &mut Position, phases: &[Phase], index: usize, pass: u32, repeat: Option<RepeatGroup>) {
    pos.phase = index;
    pos.phase_name = phases.get(index).map(|p| p.name.clone()).unwrap_or_default();
    pos.iteration = 1;
    pos.agent_index = 0;
    pos.cycle = 1;
    fit_pass(pos, pass, repeat);
}

/// Makes the pass agree with the (possibly changed) config: inside the group it is
/// 1..=passes, outside it is 1 and has no total.
pub(crate) fn fit_pass(pos: &mut Position, pass: u32, repeat: Option<RepeatGroup>) {
    let group = repeat.filter(|g| g.contains(pos.phase));
    pos.pass = group.map_or(1, |g| pass.clamp(1, g.passes));
    pos.passes = group.map(|g| g.passes);
}

/// `--from PHASE` names no phase of the workflow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--from {name}: the workflow has no phase `{name}`{hint}")]
pub(crate) struct UnknownPhase {
    pub name: String,
    /// "; did you mean ..." or the list of phases.
    pub hint: String,
}

fn index_of(phases: &[Phase], name: &str) -> Result<usize, UnknownPhase> {
    phases.iter().position(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
        UnknownPhase {
            name: name.to_string(),
            hint: crate::config::suggest::did_you_mean_or_list(name, &names, "the phases are"),
        }
    })
}

/// The start of a new run at phase `name` (`ralph --from`). `has_artifact` says
/// whether an earlier phase's result from the last run is on disk: those are reused,
/// and the prompt says so.
pub(crate) fn start_at(
    phases: &[Phase],
    repeat: Option<RepeatGroup>,
    name: &str,
    has_artifact: impl Fn(&str) -> bool,
) -> Result<Progress, UnknownPhase> {
    let index = index_of(phases, name)?;
    let mut progress = Progress::new(name);
    enter(&mut progress.position, phases, index, 1, repeat);
    if index > 0 {
        let (reused, missing): (Vec<String>, Vec<String>) =
            phases[..index].iter().map(|p| p.name.clone()).partition(|p| has_artifact(p));
        progress.from = Some(FromStart { phase: name.to_string(), reused, missing });
    }
    Ok(progress)
}

/// Moves an unfinished run to the start of phase `name` (`ralph --resume --from`).
/// The run's totals stay; the iteration's budget, session and notes start afresh. A
/// move within the group keeps the pass; a move into it starts at pass 1.
pub(crate) fn move_to(
    progress: &mut Progress,
    phases: &[Phase],
    repeat: Option<RepeatGroup>,
    name: &str,
) -> Result<(), UnknownPhase> {
    let index = index_of(phases, name)?;
    let in_group = |i: usize| repeat.is_some_and(|g| g.contains(i));
    let pass = if in_group(progress.position.phase) && in_group(index) { progress.position.pass } else { 1 };
    enter(&mut progress.position, phases, index, pass, repeat);
    progress.start_iteration();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phases(names: &[&str]) -> Vec<Phase> {
        names.iter().map(|n| crate::testkit::phase(n, &["a", "b"])).collect()
    }

    /// plan, review, fix, commit with review+fix repeating `passes` times.
    fn group(passes: u32) -> Option<RepeatGroup> {
        Some(RepeatGroup { first: 1, last: 2, passes })
    }

    #[test]
    fn without_a_group_phases_follow_in_order() {
        assert_eq!(after_phase(0, 1, false, 2, None).next, Some((1, 1)));
        assert_eq!(after_phase(1, 1, true, 2, None), Boundary { next: None, end: PhaseEnd::default() });
        // A phase outside the group is not affected by it.
        assert_eq!(after_phase(0, 1, true, 4, group(3)), Boundary { next: Some((1, 1)), end: PhaseEnd::default() });
    }

    #[test]
    fn issues_go_to_the_fix_then_back_to_the_review_in_the_next_pass() {
        let b = after_phase(1, 1, false, 4, group(3));
        assert_eq!(b.next, Some((2, 1)));
        assert_eq!(b.end.verdict, Some(Verdict { pass: 1, passes: 3, clean: false }));
        assert_eq!(b.end.group, None);
        let b = after_phase(2, 1, false, 4, group(3));
        assert_eq!(b.next, Some((1, 2)));
        assert_eq!(b.end, PhaseEnd { verdict: None, group: Some(GroupMove::NextPass { pass: 2, passes: 3 }) });
    }

    #[test]
    fn a_clean_review_skips_the_fix_and_leaves_the_group() {
        let clean = Verdict { pass: 3, passes: 3, clean: true };
        let b = after_phase(1, 3, true, 4, group(3));
        assert_eq!(b.next, Some((3, 1)));
        assert_eq!(b.end, PhaseEnd { verdict: Some(clean), group: Some(GroupMove::Ended(clean)) });
        // The group at the end of the workflow: a clean review finishes the run.
        assert_eq!(after_phase(1, 1, true, 3, group(3)).next, None);
        // The goal from the fix is no verdict.
        assert_eq!(after_phase(2, 1, true, 4, group(3)).next, Some((1, 2)));
    }

    #[test]
    fn the_last_pass_goes_on_with_issues_left() {
        let b = after_phase(2, 3, false, 4, group(3));
        assert_eq!(b.next, Some((3, 1)));
        assert_eq!(b.end.group, Some(GroupMove::Ended(Verdict { pass: 3, passes: 3, clean: false })));
        assert_eq!(after_phase(2, 3, false, 3, group(3)).next, None);
        // One pass: review, fix, on.
        assert_eq!(after_phase(2, 1, false, 4, group(1)).next, Some((3, 1)));
    }

    #[test]
    fn a_one_phase_group_repeats_itself() {
        let g = Some(RepeatGroup { first: 0, last: 0, passes: 2 });
        let b = after_phase(0, 1, false, 1, g);
        assert_eq!(b.next, Some((0, 2)));
        assert_eq!(b.end.verdict, Some(Verdict { pass: 1, passes: 2, clean: false }));
        assert_eq!(after_phase(0, 2, false, 1, g).next, None);
    }

    #[test]
    fn a_later_review_gets_the_fix_of_the_pass_before() {
        let ps = phases(&["plan", "review", "fix", "commit"]);
        let mut pos = Progress::new("plan").position;
        enter(&mut pos, &ps, 1, 1, group(3));
        assert_eq!(previous_phase(&pos, group(3)), Some(0));
        enter(&mut pos, &ps, 2, 1, group(3));
        assert_eq!(previous_phase(&pos, group(3)), Some(1));
        enter(&mut pos, &ps, 1, 2, group(3));
        assert_eq!(previous_phase(&pos, group(3)), Some(2));
        enter(&mut pos, &ps, 0, 1, group(3));
        assert_eq!(previous_phase(&pos, group(3)), None);
    }

    #[test]
    fn entering_a_phase_sets_the_pass_only_inside_the_group() {
        let ps = phases(&["plan", "review", "fix", "commit"]);
        let mut pos = Progress::new("plan").position;
        pos.agent_index = 1;
        pos.cycle = 2;
        pos.iteration = 4;
        enter(&mut pos, &ps, 1, 2, group(3));
        assert_eq!((pos.phase_name.as_str(), pos.iteration, pos.agent_index, pos.cycle), ("review", 1, 0, 1));
        assert_eq!((pos.pass, pos.passes), (2, Some(3)));
        enter(&mut pos, &ps, 3, 2, group(3));
        assert_eq!((pos.pass, pos.passes), (1, None));
        // A config that lowered passes clamps a resumed pass.
        pos.phase = 2;
        fit_pass(&mut pos, 5, group(2));
        assert_eq!((pos.pass, pos.passes), (2, Some(2)));
    }

    #[test]
    fn from_starts_a_new_run_at_a_phase_and_names_the_reused_results() {
        let ps = phases(&["plan", "review", "fix"]);
        let p = start_at(&ps, group(3), "fix", |name| name == "review").unwrap();
        assert_eq!((p.position.phase, p.position.phase_name.as_str(), p.position.pass), (2, "fix", 1));
        let from = p.from.unwrap();
        assert_eq!((from.reused, from.missing), (vec!["review".to_string()], vec!["plan".to_string()]));
        assert!(start_at(&ps, None, "plan", |_| true).unwrap().from.is_none());
        let e = start_at(&ps, None, "fx", |_| true).unwrap_err();
        assert_eq!(e.to_string(), "--from fx: the workflow has no phase `fx`; did you mean `fix`?");
        let e = start_at(&ps, None, "zzz", |_| true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--from zzz: the workflow has no phase `zzz`; the phases are: `plan`, `review` or `fix`"
        );
    }

    #[test]
    fn moving_a_run_keeps_its_totals_and_its_pass_within_the_group() {
        let ps = phases(&["plan", "review", "fix"]);
        let mut p = Progress::new("plan");
        enter(&mut p.position, &ps, 2, 2, group(3));
        p.counters.attempts = 7;
        p.counters.agent_failures = 2;
        p.counters.tool_registry_resets = 1;
        p.resume_session = Some("s".into());
        p.recovery_note = Some("crashed".into());
        move_to(&mut p, &ps, group(3), "review").unwrap();
        assert_eq!((p.position.phase, p.position.pass, p.position.iteration), (1, 2, 1));
        // The iteration's budgets (the tool-registry resets among them) start afresh.
        assert_eq!((p.counters.attempts, p.counters.agent_failures, p.counters.tool_registry_resets), (7, 0, 0));
        assert_eq!((&p.resume_session, &p.recovery_note), (&None, &None));
        move_to(&mut p, &ps, group(3), "plan").unwrap();
        assert_eq!((p.position.phase, p.position.pass, p.position.passes), (0, 1, None));
        move_to(&mut p, &ps, group(3), "fix").unwrap();
        assert_eq!((p.position.pass, p.position.passes), (1, Some(3)));
        assert!(move_to(&mut p, &ps, group(3), "nope").is_err());
    }

    #[test]
    fn verdicts_read_plainly() {
        assert_eq!(Verdict { pass: 2, passes: 3, clean: true }.describe(), "clean in pass 2 of 3");
        assert_eq!(
            Verdict { pass: 3, passes: 3, clean: false }.describe(),
            "all 3 passes used; the last review still had issues"
        );
        assert_eq!(
            Verdict { pass: 1, passes: 3, clean: false }.describe(),
            "pass 1 of 3 found issues; the fix follows"
        );
    }
}

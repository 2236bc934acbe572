//! Prompts: embedded templates per phase (overridable per phase with a file), filled
//! with the goal, the phase, the iteration, the previous phase's artifact and, on
//! recovery, a note saying what went wrong.
//!
//! Placeholders are `{{name}}`; an unknown placeholder is left as written, so a
//! template can contain other double-brace text.

use crate::config::DoneSignal;

use super::done::{DONE_TAG, GOAL_TAG};
use super::progress::FromStart;

const DEFAULT: &str = include_str!("templates/default.md");
const CONTINUE: &str = include_str!("templates/continue.md");

/// The built-in template for a phase name: the four phases ralph knows by name have
/// their own; any other phase (`build`, `test`, ...) gets a neutral one, titled by its
/// name rather than passed off as one of those four.
pub(crate) fn builtin(phase: &str) -> &'static str {
    match phase {
        "plan" => include_str!("templates/plan.md"),
        "develop" => include_str!("templates/develop.md"),
        "review" => include_str!("templates/review.md"),
        "fix" => include_str!("templates/fix.md"),
        _ => DEFAULT,
    }
}

/// The goal as the templates embed it: under their own `# Goal` heading, so a goal
/// file that starts with one (as `ralph init`'s does) is not given a second.
pub(crate) fn goal_body(goal: &str) -> &str {
    let goal = goal.trim();
    let (first, rest) = goal.split_once('\n').unwrap_or((goal, ""));
    let heading = first.trim().trim_start_matches('#');
    if first.trim_start().starts_with('#') && heading.trim().eq_ignore_ascii_case("goal") { rest.trim() } else { goal }
}

/// What a prompt is filled with.
#[derive(Debug, Clone)]
pub(crate) struct Context<'a> {
    pub goal: &'a str,
    pub phase: &'a str,
    /// 1-based position of the phase, and the number of phases.
    pub phase_number: usize,
    pub phase_count: usize,
    pub iteration: u32,
    pub iterations: u32,
    pub until_complete: bool,
    /// The pass through the repeating group and the passes at most, inside it.
    pub pass: Option<(u32, u32)>,
    /// The phase is the group's review: the goal tag means "nothing left to fix".
    pub review: bool,
    pub done: &'a DoneSignal,
    /// The previous phase's name and artifact, if any.
    pub previous: Option<(&'a str, &'a str)>,
    /// For a run started at a later phase: which earlier results were reused.
    pub from_note: Option<&'a str>,
    /// Why the previous attempt failed, if this is a retry.
    pub recovery: Option<&'a str>,
}

/// The full prompt of a fresh session.
pub(crate) fn render(template: &str, ctx: &Context<'_>) -> String {
    let mut previous = ctx
        .previous
        .filter(|(_, text)| !text.trim().is_empty())
        .map(|(phase, text)| format!("\n# Result of the previous phase ({phase})\n\n{}\n", text.trim()))
        .unwrap_or_default();
    if let Some(note) = ctx.from_note {
        previous = format!("\n# Where this run started\n\n{}\n{previous}", note.trim());
    }
    let recovery = ctx.recovery.map(|note| format!("\n# Note from ralph\n\n{}\n", note.trim())).unwrap_or_default();
    fill(template, ctx, &[("previous", &previous), ("recovery", &recovery)])
}

/// The short prompt sent into a resumed session: the recovery note, and how to
/// signal done.
pub(crate) fn render_continue(ctx: &Context<'_>, note: &str) -> String {
    fill(CONTINUE, ctx, &[("note", note.trim())])
}

fn fill(template: &str, ctx: &Context<'_>, extra: &[(&str, &str)]) -> String {
    let iterations =
        if ctx.until_complete { format!("at most {}", ctx.iterations) } else { ctx.iterations.to_string() };
    let mut position = format!("phase {} of {}", ctx.phase_number, ctx.phase_count);
    if let Some((pass, passes)) = ctx.pass {
        position.push_str(&format!(", review/fix pass {pass} of at most {passes}"));
    }
    let values: Vec<(&str, String)> = vec![
        ("goal", goal_body(ctx.goal).to_string()),
        ("phase", ctx.phase.to_string()),
        ("phase_position", position),
        ("iteration", ctx.iteration.to_string()),
        ("iterations", iterations),
        ("done", done_instruction(ctx.done, ctx.until_complete, ctx.review)),
    ];
    let mut out = String::with_capacity(template.len() + ctx.goal.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{")
        && let Some(end) = rest[start + 2..].find("}}").map(|e| start + 2 + e)
    {
        out.push_str(&rest[..start]);
        let name = rest[start + 2..end].trim();
        let mut values = values.iter().map(|(k, v)| (*k, v.as_str())).chain(extra.iter().copied());
        let value = values.find(|(k, _)| *k == name).map(|(_, v)| v);
        // An unknown placeholder stays as written.
        out.push_str(value.unwrap_or(&rest[start..end + 2]));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Says which earlier phases' results a run started with `ralph --from` reused from
/// the last run (and which it has none of), when the prompt's previous phase is one
/// of them.
pub(crate) fn from_note(from: &FromStart, previous: Option<&str>) -> Option<String> {
    let previous = previous?;
    if !from.reused.iter().chain(&from.missing).any(|p| p == previous) {
        return None;
    }
    let mut note = format!(
        "This run was started at phase {} (`ralph --from {}`); the phases before it did not run in this run.",
        from.phase, from.phase
    );
    if !from.reused.is_empty() {
        note.push_str(&format!(" Reused from the last run: the result of {}.", from.reused.join(", ")));
    }
    if !from.missing.is_empty() {
        note.push_str(&format!(" No earlier result was found for: {}.", from.missing.join(", ")));
    }
    Some(note)
}

/// Tells the agent how to signal that the iteration (or the goal) is done.
fn done_instruction(done: &DoneSignal, until_complete: bool, review: bool) -> String {
    let goal = if review {
        format!(
            "\nIf you found nothing left to fix, end your final message with {GOAL_TAG} instead: that ends the review/fix passes."
        )
    } else if until_complete {
        format!(
            "\nIf, after this iteration, the whole goal is reached and verified, end your final message with {GOAL_TAG} instead."
        )
    } else {
        String::new()
    };
    match done {
        DoneSignal::Tag => format!(
            "When this iteration's work is finished and verified, end your final message with {DONE_TAG} on its own line. Do not print it otherwise.{goal}"
        ),
        DoneSignal::Exit0 => format!("When this iteration's work is finished, exit.{goal}"),
        DoneSignal::Mcp => format!(
            "When this iteration's work is finished and verified, call the tool declare_complete of the ralph MCP server with a summary and the evidence of how you verified it (the commands you ran and what they showed), then end your turn.{}",
            if until_complete { " If the whole goal is reached and verified, pass goal_complete: true." } else { "" }
        ),
        DoneSignal::File(path) => format!(
            "This iteration is done when you have written {}. Write it only when its content is complete.{goal}",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(done: &'a DoneSignal) -> Context<'a> {
        Context {
            goal: "Build a calculator.",
            phase: "develop",
            phase_number: 2,
            phase_count: 3,
            iteration: 2,
            iterations: 5,
            until_complete: true,
            pass: None,
            review: false,
            done,
            previous: Some(("plan", "1. parse\n2. eval")),
            from_note: None,
            recovery: None,
        }
    }

    #[test]
    fn a_review_in_a_pass_says_the_pass_and_how_to_say_clean() {
        let done = DoneSignal::Tag;
        let mut c = ctx(&done);
        c.phase = "review";
        c.until_complete = false;
        c.pass = Some((2, 3));
        c.review = true;
        c.previous = Some(("fix", "fixed the parser"));
        let out = render(builtin("review"), &c);
        assert!(out.contains("phase 2 of 3, review/fix pass 2 of at most 3"), "{out}");
        assert!(out.contains(&format!("If you found nothing left to fix, end your final message with {GOAL_TAG}")));
        assert!(out.contains("# Result of the previous phase (fix)\n\nfixed the parser"));
    }

    #[test]
    fn a_run_started_later_names_the_reused_results() {
        let from = FromStart { phase: "fix".into(), reused: vec!["review".into()], missing: vec!["plan".into()] };
        let note = from_note(&from, Some("review")).unwrap();
        assert!(
            note.contains("`ralph --from fix`") && note.contains("Reused from the last run: the result of review.")
        );
        assert!(note.contains("No earlier result was found for: plan."));
        assert_eq!(from_note(&from, Some("develop")), None);
        assert_eq!(from_note(&from, None), None);
        let done = DoneSignal::Tag;
        let mut c = ctx(&done);
        c.from_note = Some(&note);
        let out = render(builtin("fix"), &c);
        assert!(out.contains("# Where this run started") && out.contains("1. parse"), "{out}");
    }

    #[test]
    fn fills_every_placeholder_of_every_builtin() {
        let done = DoneSignal::Tag;
        for name in ["plan", "develop", "review", "fix", "other"] {
            let out = render(builtin(name), &ctx(&done));
            assert!(!out.contains("{{"), "{name}: {out}");
            assert!(out.contains("Build a calculator."));
            assert!(out.contains("iteration 2 of at most 5"));
            assert!(out.contains(GOAL_TAG));
            assert!(out.contains("1. parse"));
        }
    }

    #[test]
    fn a_goal_with_its_own_goal_heading_gets_only_one() {
        let done = DoneSignal::Tag;
        let mut c = ctx(&done);
        c.goal = "# Goal\n\nBuild a calculator.\n";
        let out = render(builtin("develop"), &c);
        assert_eq!(out.matches("# Goal").count(), 1, "{out}");
        assert!(out.contains("Build a calculator."));
        assert_eq!(goal_body("## goal\nx"), "x");
        assert_eq!(goal_body("# Goals and non-goals\nx"), "# Goals and non-goals\nx");
    }

    #[test]
    fn a_phase_is_titled_by_its_own_name() {
        let done = DoneSignal::Tag;
        for name in ["build", "test", "develop", "plan"] {
            let mut c = ctx(&done);
            c.phase = name;
            let out = render(builtin(name), &c);
            assert!(out.contains(&format!("# Your task now: {name}\n")), "{out}");
        }
        assert_eq!(builtin("build"), DEFAULT);
        let mut c = ctx(&done);
        c.phase = "build";
        assert!(!render(builtin("build"), &c).contains("develop"));
    }

    #[test]
    fn unknown_placeholders_and_unclosed_braces_survive() {
        let done = DoneSignal::Exit0;
        assert_eq!(render("a {{nope}} b {{", &ctx(&done)), "a {{nope}} b {{");
    }

    #[test]
    fn recovery_note_and_continue_prompt() {
        let done = DoneSignal::File("PLAN.md".into());
        let mut c = ctx(&done);
        c.recovery = Some("the agent crashed (SIGSEGV)");
        assert!(render(DEFAULT, &c).contains("the agent crashed (SIGSEGV)"));
        let cont = render_continue(&c, "it stalled");
        assert!(cont.contains("it stalled") && cont.contains("PLAN.md"));
    }
}

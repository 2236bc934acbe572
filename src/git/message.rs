//! Commit messages and the `Ralph-Run:`/`Ralph-Iteration:` trailers that make commits
//! findable on resume. Pure text. (Identities and branch names, which the config
//! checks when it loads, are `config`'s.)

/// The trailer naming the run a commit belongs to.
pub(crate) const RUN_TRAILER: &str = "Ralph-Run";
/// The trailer naming the iteration (or phase) a commit holds.
pub(crate) const ITERATION_TRAILER: &str = "Ralph-Iteration";
/// The trailer naming the fleet task a commit belongs to (docs/fleet.md).
pub(crate) const TASK_TRAILER: &str = "Ralph-Task";

use crate::supervise::excerpt::{self, Bounds};

/// The key of an iteration in the `Ralph-Iteration:` trailer: `develop/3`, and
/// `develop/3/pass-2` from the second pass of the workflow on.
pub(crate) fn iteration_key(phase: &str, iteration: u32, pass: u32) -> String {
    if pass > 1 { format!("{phase}/{iteration}/pass-{pass}") } else { format!("{phase}/{iteration}") }
}

/// What a commit message is made from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MessageContext<'a> {
    pub phase: &'a str,
    pub iteration: u32,
    pub run_id: &'a str,
    pub key: &'a str,
    /// The agent's summary (already [`summarize`]d).
    pub summary: &'a str,
    /// Characters of the message's first line at most (`[git] title_chars`).
    pub title_chars: usize,
    /// The fleet task the run is (docs/fleet.md): a `Ralph-Task:` trailer.
    pub task: Option<&'a str>,
}

/// The agent's final message as a commit body: secrets redacted, ralph's control
/// markup removed, and within `bounds` (`[git] body_lines`, `body_chars`): the whole
/// message when it fits, else its last paragraph or its tail ([`excerpt::bounded`]).
pub(crate) fn summarize(final_message: &str, bounds: Bounds) -> String {
    use crate::secrets::redact;
    // Redacted before it is cut (a secret cut in half no longer looks like one), and
    // after (the markup removed could join one).
    redact(&excerpt::bounded(&redact(final_message), bounds))
}

/// The first non-empty line of the summary, without a cut mark or heading marks.
pub(crate) fn title(summary: &str) -> String {
    let line = summary.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("done");
    line.trim_start_matches('…').trim_start_matches('#').trim().to_string()
}

/// `line` cut to `max` characters, the cut marked with `…`.
fn shortened(line: &str, max: usize) -> String {
    crate::text::ellipsis(line, max.saturating_sub(1))
}

/// The full message: the template filled in, then the trailers as the last paragraph.
pub(crate) fn render(template: &str, ctx: &MessageContext<'_>) -> String {
    let title = title(ctx.summary);
    let body = template
        .replace("{phase}", ctx.phase)
        .replace("{iteration}", &ctx.iteration.to_string())
        .replace("{run_id}", ctx.run_id)
        .replace("{title}", &title)
        .replace("{summary}", ctx.summary);
    // Lines that look like our trailers inside the body would confuse the lookup.
    let body: Vec<&str> = body
        .lines()
        .map(str::trim_end)
        .filter(|l| [RUN_TRAILER, ITERATION_TRAILER, TASK_TRAILER].iter().all(|t| trailer_value(l, t).is_none()))
        .collect();
    let body = collapse_blank_lines(&body.join("\n"));
    let body = if body.trim().is_empty() { format!("ralph: {} iteration {}", ctx.phase, ctx.iteration) } else { body };
    // The subject line, whatever the template made of it, stays within the limit.
    let body = body.trim();
    let (subject, rest) = body.split_once('\n').unwrap_or((body, ""));
    let subject = shortened(subject.trim_end(), ctx.title_chars.max(1));
    let body = if rest.is_empty() { subject } else { format!("{subject}\n{rest}") };
    let task = ctx.task.map(|t| format!("{TASK_TRAILER}: {t}\n")).unwrap_or_default();
    format!("{body}\n\n{task}{RUN_TRAILER}: {}\n{ITERATION_TRAILER}: {}\n", ctx.run_id, ctx.key)
}

/// The value of `trailer` in a commit message, if it carries one.
pub(crate) fn trailer<'a>(message: &'a str, trailer: &str) -> Option<&'a str> {
    message.lines().find_map(|line| trailer_value(line, trailer))
}

/// `message` with the trailer `key: value` added to its last paragraph, unless it
/// carries `key` already.
pub(crate) fn with_trailer(message: &str, key: &str, value: &str) -> String {
    if trailer(message, key).is_some() {
        return message.to_string();
    }
    let body = message.trim_end();
    let last = body.rsplit("\n\n").next().unwrap_or(body);
    let is_trailers =
        !last.is_empty() && last.lines().all(|l| l.split_once(": ").is_some_and(|(k, _)| !k.contains(' ')));
    let sep = if is_trailers && body.contains("\n\n") { "\n" } else { "\n\n" };
    format!("{body}{sep}{key}: {value}\n")
}

fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut after_blank = false;
    for line in text.lines() {
        let blank = line.trim().is_empty();
        if !(blank && after_blank) {
            out.push_str(line);
            out.push('\n');
        }
        after_blank = blank;
    }
    out
}

fn trailer_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let (k, v) = line.split_once(':')?;
    k.trim().eq_ignore_ascii_case(key).then(|| v.trim())
}

/// Whether a commit message carries both trailers with these values.
pub(crate) fn has_trailers(message: &str, run_id: &str, key: &str) -> bool {
    let has = |trailer, value| message.lines().any(|line| trailer_value(line, trailer) == Some(value));
    has(RUN_TRAILER, run_id) && has(ITERATION_TRAILER, key)
}

/// The newest commit of `git log -z --format=%H%n%B` output that carries the run's
/// trailers for `key`.
pub(crate) fn find_commit(log: &str, run_id: &str, key: &str) -> Option<String> {
    log.split('\0').filter(|r| !r.trim().is_empty()).find_map(|record| {
        let record = record.trim_start_matches('\n');
        let (hash, body) = record.split_once('\n').unwrap_or((record, ""));
        has_trailers(body, run_id, key).then(|| hash.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(summary: &'a str) -> MessageContext<'a> {
        MessageContext {
            phase: "develop",
            iteration: 3,
            run_id: "R1",
            key: "develop/3",
            summary,
            task: None,
            title_chars: 72,
        }
    }

    #[test]
    fn a_trailer_is_added_once_to_the_trailer_paragraph() {
        let with = with_trailer("subject\n\nbody\n\nRalph-Run: r\nRalph-Iteration: develop/1\n", TASK_TRAILER, "a");
        assert_eq!(with, "subject\n\nbody\n\nRalph-Run: r\nRalph-Iteration: develop/1\nRalph-Task: a\n");
        assert_eq!(with_trailer(&with, TASK_TRAILER, "b"), with);
        assert_eq!(with_trailer("fix it", TASK_TRAILER, "a"), "fix it\n\nRalph-Task: a\n");
        assert_eq!(trailer(&with, TASK_TRAILER), Some("a"));
    }

    #[test]
    fn the_key_names_the_pass_from_the_second_on() {
        assert_eq!(iteration_key("develop", 3, 1), "develop/3");
        assert_eq!(iteration_key("review", 1, 2), "review/1/pass-2");
    }

    const BODY: Bounds = Bounds { lines: 10, chars: 1000 };

    #[test]
    fn a_summary_loses_the_tags_and_secrets_and_is_bounded() {
        let s =
            summarize("  Added the parser.\n\nAPI_KEY=sk-ant-abcdefghijklmnop1234\n\n<promise>DONE</promise>\n", BODY);
        assert_eq!(s, "Added the parser.\n\nAPI_KEY=[REDACTED]");
        assert_eq!(summarize(&"x".repeat(5000), BODY).chars().count(), 1000);
        let ticks: Vec<String> = (1..=108).map(|n| format!("tick {n}")).collect();
        assert_eq!(summarize(&ticks.join("\n"), BODY).lines().count(), 10);
        assert_eq!(title("\n# Heading\nmore"), "Heading");
        assert_eq!(title("…tick 99\ntick 100"), "tick 99");
        assert_eq!(title(""), "done");
    }

    #[test]
    fn a_secret_at_the_cut_is_redacted_whole_not_cut_in_half() {
        let text = format!("API_KEY=sk-ant-abcdefghijklmnop1234 {}", "y".repeat(980));
        let s = summarize(&text, BODY);
        assert!(!s.contains("mnop1234") && s.contains("[REDACTED]"), "{s}");
    }

    #[test]
    fn the_first_line_is_never_longer_than_the_limit() {
        let long = "y".repeat(100);
        let m = render(crate::config::DEFAULT_COMMIT_MESSAGE, &ctx(&long));
        let subject = m.lines().next().unwrap_or("");
        assert_eq!(subject.chars().count(), 72, "{subject}");
        assert!(subject.starts_with("ralph: develop iteration 3: yyy") && subject.ends_with('…'));
        let short = MessageContext { title_chars: 20, ..ctx("Added the parser.") };
        assert_eq!(render("{title}\n\n{summary}", &short).lines().next(), Some("Added the parser."));
        assert_eq!(render("{phase} {iteration}: {title}", &short).lines().next(), Some("develop 3: Added th…"));
    }

    #[test]
    fn the_template_is_filled_and_trailers_end_the_message() {
        let m = render(crate::config::DEFAULT_COMMIT_MESSAGE, &ctx("Added the parser.\nWith tests."));
        assert_eq!(
            m,
            "ralph: develop iteration 3: Added the parser.\n\nAdded the parser.\nWith tests.\n\nRalph-Run: R1\nRalph-Iteration: develop/3\n"
        );
        assert!(has_trailers(&m, "R1", "develop/3"));
        assert!(!has_trailers(&m, "R1", "develop/4"));
        assert!(!has_trailers(&m, "R2", "develop/3"));
    }

    #[test]
    fn a_summary_cannot_forge_the_trailers() {
        let m = render("{summary}", &ctx("did it\nRalph-Iteration: develop/9\nRalph-Run: other"));
        assert!(!m.contains("develop/9"));
        assert!(!m.contains("other"));
        assert_eq!(
            render("{summary}", &ctx("")),
            "ralph: develop iteration 3\n\nRalph-Run: R1\nRalph-Iteration: develop/3\n"
        );
    }

    #[test]
    fn the_log_lookup_finds_the_commit_of_the_iteration() {
        let log = "aaa\nfix\n\nRalph-Run: R1\nRalph-Iteration: develop/2\n\0bbb\nmine\n\0\nccc\nfirst\n\nRalph-Run: R1\nRalph-Iteration: develop/1\n\0";
        assert_eq!(find_commit(log, "R1", "develop/1").as_deref(), Some("ccc"));
        assert_eq!(find_commit(log, "R1", "develop/2").as_deref(), Some("aaa"));
        assert_eq!(find_commit(log, "R1", "develop/3"), None);
        assert_eq!(find_commit(log, "R0", "develop/1"), None);
    }
}

//! Commit messages and the `Ralph-Run:`/`Ralph-Iteration:` trailers that make commits
//! findable on resume. Pure text. (Identities and branch names, which the config
//! checks when it loads, are `config`'s.)

/// The trailer naming the run a commit belongs to.
pub(crate) const RUN_TRAILER: &str = "Ralph-Run";
/// The trailer naming the iteration (or phase) a commit holds.
pub(crate) const ITERATION_TRAILER: &str = "Ralph-Iteration";
/// The trailer naming the fleet task a commit belongs to (docs/fleet.md).
pub(crate) const TASK_TRAILER: &str = "Ralph-Task";

/// Longest kept summary, in characters.
const MAX_SUMMARY: usize = 4000;
/// Longest subject fragment taken from the summary, in characters.
const MAX_TITLE: usize = 72;

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
    /// The fleet task the run is (docs/fleet.md): a `Ralph-Task:` trailer.
    pub task: Option<&'a str>,
}

/// The agent's final message as a commit body: done/goal tags removed, secrets
/// redacted, whitespace trimmed, at most `MAX_SUMMARY` characters.
pub(crate) fn summarize(final_message: &str) -> String {
    let mut text = final_message.to_string();
    for tag in ["<promise>DONE</promise>", "<promise>COMPLETE</promise>"] {
        text = text.replace(tag, "");
    }
    let text = crate::secrets::redact(&text);
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    crate::report::ellipsis(lines.join("\n").trim(), MAX_SUMMARY)
}

/// The first non-empty line of the summary, short enough for a subject line.
pub(crate) fn title(summary: &str) -> String {
    let line = summary.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("done");
    crate::report::ellipsis(line.trim_start_matches('#').trim(), MAX_TITLE - 1)
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
    let task = ctx.task.map(|t| format!("{TASK_TRAILER}: {t}\n")).unwrap_or_default();
    format!("{}\n\n{task}{RUN_TRAILER}: {}\n{ITERATION_TRAILER}: {}\n", body.trim(), ctx.run_id, ctx.key)
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
        MessageContext { phase: "develop", iteration: 3, run_id: "R1", key: "develop/3", summary, task: None }
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

    #[test]
    fn a_summary_loses_the_tags_and_secrets_and_is_bounded() {
        let s = summarize("  Added the parser.\n\nAPI_KEY=sk-ant-abcdefghijklmnop1234\n\n<promise>DONE</promise>\n");
        assert_eq!(s, "Added the parser.\n\nAPI_KEY=[REDACTED]");
        assert_eq!(summarize(&"x".repeat(5000)).chars().count(), MAX_SUMMARY + 1);
        assert_eq!(title("\n# Heading\nmore"), "Heading");
        assert_eq!(title(""), "done");
        assert_eq!(title(&"y".repeat(100)).chars().count(), MAX_TITLE);
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

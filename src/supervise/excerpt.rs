//! What of an agent's final message is about the work, for the commit message and
//! the next phase's prompt: ralph's control markup removed (the done and goal tags,
//! any `<promise>…</promise>`, the evidence line ralph adds for `report_interruption`),
//! then bounded to a few lines: the whole text when it fits, else its last paragraph
//! (where agents put their summary), else its tail. A text agent's final message is
//! its whole stdout (108 lines of `tick N`); a review's `<promise>COMPLETE</promise>`
//! in the fix phase's prompt would be the review's own "nothing left" signal. Pure.

/// The line ralph adds to a failed attempt's evidence for the agent's
/// `report_interruption` (MCP), followed by its reason.
pub(crate) const INTERRUPTION_MARKER: &str = "the agent reported an interruption:";

/// How much of a text is kept: at most `lines` lines and `chars` characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub lines: usize,
    pub chars: usize,
}

/// Marks where a text was cut (it counts against the bounds).
const CUT: &str = "…";

/// `text` without ralph's control markup: every `<promise>…</promise>` (the done and
/// goal tags and any other promise), a stray opening or closing `promise` tag, and
/// the lines of ralph's evidence markers. Line ends are normalised to `\n` and
/// trailing spaces removed, so what is left reads as the agent wrote it.
pub(crate) fn without_markup(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let out = remove_ci(&text, "<promise>", Some("</promise>"));
    let mut text = String::new();
    for line in out.lines() {
        let trimmed = line.trim_start();
        if trimmed.to_ascii_lowercase().starts_with(INTERRUPTION_MARKER) {
            continue;
        }
        let line = remove_ci(line, "</promise>", None);
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text.trim().to_string()
}

/// The agent's words about its work, within `bounds`: the whole (markup-free) text
/// when it fits, else its last paragraph when that fits, else the last lines that
/// fit, the first of them cut from its start when one line alone is too long. A cut
/// is marked with `…` at the start.
pub(crate) fn bounded(text: &str, bounds: Bounds) -> String {
    let text = without_markup(text);
    if fits(&text, bounds) {
        return text;
    }
    let last_paragraph = text.rsplit("\n\n").map(str::trim).find(|p| !p.is_empty()).unwrap_or("");
    let marked = format!("{CUT}{last_paragraph}");
    if fits(&marked, bounds) {
        return marked;
    }
    tail(&text, bounds)
}

/// The last lines of `text` that fit in `bounds` with the cut mark.
fn tail(text: &str, bounds: Bounds) -> String {
    let room = bounds.chars.saturating_sub(CUT.chars().count());
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0;
    for line in text.lines().rev() {
        let cost = line.chars().count() + usize::from(!kept.is_empty());
        if kept.len() >= bounds.lines || used + cost > room {
            if kept.is_empty() {
                // One line longer than the room: its end.
                let skip = line.chars().count().saturating_sub(room);
                return format!("{CUT}{}", line.chars().skip(skip).collect::<String>().trim_start());
            }
            break;
        }
        used += cost;
        kept.push(line);
    }
    kept.reverse();
    while kept.first().is_some_and(|l| l.trim().is_empty()) {
        kept.remove(0);
    }
    format!("{CUT}{}", kept.join("\n"))
}

fn fits(text: &str, bounds: Bounds) -> bool {
    text.lines().count() <= bounds.lines && text.chars().count() <= bounds.chars
}

/// The byte offset of `needle` (ASCII) in `hay`, ignoring ASCII case.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    hay.windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle))
}

/// `text` without any `open` (ASCII, ignoring ASCII case) and, when `close` is
/// given and follows it, without what comes up to the end of that `close`.
fn remove_ci(text: &str, open: &str, close: Option<&str>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_ci(rest, open) {
        out.push_str(&rest[..at]);
        let after = &rest[at + open.len()..];
        rest = close.and_then(|close| Some(&after[find_ci(after, close)? + close.len()..])).unwrap_or(after);
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEN: Bounds = Bounds { lines: 10, chars: 1000 };

    #[test]
    fn the_markup_goes_and_the_words_stay() {
        assert_eq!(without_markup("Added the parser.\r\n\r\n<promise>DONE</promise>\r\n"), "Added the parser.");
        assert_eq!(without_markup("Nothing left to fix. <promise>COMPLETE</promise>"), "Nothing left to fix.");
        assert_eq!(without_markup("a <Promise>whatever</PROMISE> b"), "a  b");
        assert_eq!(without_markup("half <promise>open\nnext"), "half open\nnext");
        assert_eq!(without_markup("stray </promise> close"), "stray  close");
        let evidence = format!("tried\n{INTERRUPTION_MARKER} the disk is full\nthen stopped");
        assert_eq!(without_markup(&evidence), "tried\nthen stopped");
        assert_eq!(without_markup("<promise>DONE</promise>"), "");
    }

    #[test]
    fn a_text_that_fits_is_kept_whole() {
        let text = "Added the parser.\n\nWith tests for the edge cases.\n<promise>DONE</promise>";
        assert_eq!(bounded(text, TEN), "Added the parser.\n\nWith tests for the edge cases.");
    }

    #[test]
    fn a_long_text_gives_its_last_paragraph() {
        let ticks: Vec<String> = (1..=30).map(|n| format!("tick {n}")).collect();
        let text = format!("{}\n\nAll done: wrote out.txt.\nTests pass.\n<promise>DONE</promise>\n", ticks.join("\n"));
        assert_eq!(bounded(&text, TEN), "…All done: wrote out.txt.\nTests pass.");
    }

    #[test]
    fn a_long_paragraph_gives_its_tail_within_both_bounds() {
        let ticks: Vec<String> = (1..=108).map(|n| format!("tick {n}")).collect();
        let out = bounded(&ticks.join("\n"), TEN);
        assert_eq!(out.lines().count(), 10, "{out}");
        assert!(out.starts_with("…tick 99\n") && out.ends_with("tick 108"), "{out}");
        let wide: Vec<String> = (1..=20).map(|n| format!("{n:>3} {}", "x".repeat(150))).collect();
        let out = bounded(&wide.join("\n"), TEN);
        assert!(out.chars().count() <= 1000 && out.ends_with(&"x".repeat(150)), "{out}");
        assert!(out.lines().count() <= 10);
        let one = "y".repeat(5000);
        let out = bounded(&one, TEN);
        assert_eq!(out.chars().count(), 1000);
        assert!(out.starts_with('…'));
    }

    #[test]
    fn any_bounds_hold_for_any_text() {
        let texts = [
            "a\n\n\n\nb".to_string(),
            "\n\n".to_string(),
            "é".repeat(3000),
            (0..50).map(|n| format!("line {n}\n\n")).collect(),
        ];
        for bounds in [Bounds { lines: 1, chars: 5 }, Bounds { lines: 3, chars: 40 }, TEN] {
            for text in &texts {
                let out = bounded(text, bounds);
                assert!(out.lines().count() <= bounds.lines, "{bounds:?} {out:?}");
                assert!(out.chars().count() <= bounds.chars, "{bounds:?} {out:?}");
            }
        }
    }
}

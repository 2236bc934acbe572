//! Whether the goal file says anything: an empty file, or the starter text `ralph
//! init` wrote and nobody edited, is refused before an agent is paid to guess.

/// The sentence of the starter goal that no real goal contains.
const PLACEHOLDER: &str = "Describe what you want built, how to verify it";

/// The goal file `ralph init` writes.
pub(crate) const STARTER: &str = "# Goal\n\nDescribe what you want built, how to verify it (the commands that must pass),\nand what \"done\" means.\n";

/// What a goal file must say, for the messages that refuse one.
pub(crate) const WHAT_TO_WRITE: &str =
    "write what you want built, how to verify it (the commands that must pass), and what \"done\" means";

/// Why a goal cannot be run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// Nothing but whitespace, headings and comments.
    Empty,
    /// The starter text of `ralph init` is still there, on these lines (1-based,
    /// first and last); `alone`: nothing else is written.
    Unedited { first: usize, last: usize, alone: bool },
}

impl Unusable {
    pub(crate) fn describe(self) -> String {
        match self {
            Unusable::Empty => format!("the goal file is empty; {WHAT_TO_WRITE}"),
            Unusable::Unedited { first, last, alone } => {
                let lines = if first == last { format!("line {first}") } else { format!("lines {first}-{last}") };
                if alone {
                    format!(
                        "the goal file still holds only the placeholder text `ralph init` wrote ({lines}); replace \
                         it: {WHAT_TO_WRITE}"
                    )
                } else {
                    format!(
                        "the goal file still holds the placeholder text `ralph init` wrote beside your goal: delete \
                         {lines}, which an agent would read as part of it"
                    )
                }
            }
        }
    }
}

/// `None` when the goal says something an agent can work on.
pub(crate) fn check(goal: &str) -> Option<Unusable> {
    // The lines of the starter's own sentences, wherever they are in the file.
    let starter: Vec<&str> = STARTER.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let placeholder: Vec<usize> = goal
        .lines()
        .enumerate()
        .filter(|(_, line)| starter.contains(&line.trim()) || line.contains(PLACEHOLDER))
        .map(|(i, _)| i + 1)
        .collect();
    let said = strip_comments(goal);
    // A bare Markdown heading ("# Goal") says nothing by itself.
    let saying = |l: &&str| !l.is_empty() && !l.starts_with('#') && !starter.contains(l) && !l.contains(PLACEHOLDER);
    let words = said.lines().map(str::trim).filter(saying).count();
    if let (Some(&first), Some(&last)) = (placeholder.first(), placeholder.last()) {
        return Some(Unusable::Unedited { first, last, alone: words == 0 });
    }
    (words == 0).then_some(Unusable::Empty)
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        rest = rest[start..].find("-->").map_or("", |end| &rest[start + end + 3..]);
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_starter_text_is_refused_even_with_small_edits_around_it() {
        assert_eq!(check(STARTER), Some(Unusable::Unedited { first: 3, last: 4, alone: true }));
        // A goal written below the placeholder: the placeholder's lines are named.
        let below = format!("{STARTER}\nBuild a calculator; `cargo test` passes.\n");
        assert_eq!(check(&below), Some(Unusable::Unedited { first: 3, last: 4, alone: false }));
        let described = Unusable::Unedited { first: 3, last: 4, alone: false }.describe();
        assert!(described.contains("delete lines 3-4"), "{described}");
        // Only its first sentence left.
        let one = "# Goal\n\nDescribe what you want built, how to verify it (the commands that must pass),\nMy goal.\n";
        assert_eq!(check(one), Some(Unusable::Unedited { first: 3, last: 3, alone: false }));
    }

    #[test]
    fn empty_whitespace_headings_and_comments_say_nothing() {
        for text in ["", "  \n\n\t", "# Goal\n\n", "# Goal\n<!-- write here -->\n", "<!-- unclosed"] {
            assert_eq!(check(text), Some(Unusable::Empty), "{text:?}");
        }
    }

    #[test]
    fn a_real_goal_passes() {
        assert_eq!(check("Build the thing.\n"), None);
        assert_eq!(check("# Goal\n\nA calculator in Rust; `cargo test` passes.\n"), None);
    }
}

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
    /// Still the starter text of `ralph init`.
    Unedited,
}

impl Unusable {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Unusable::Empty => "the goal file is empty",
            Unusable::Unedited => "the goal file still holds the placeholder text `ralph init` wrote",
        }
    }
}

/// `None` when the goal says something an agent can work on.
pub(crate) fn check(goal: &str) -> Option<Unusable> {
    if goal.contains(PLACEHOLDER) {
        return Some(Unusable::Unedited);
    }
    let said = strip_comments(goal);
    // A bare Markdown heading ("# Goal") says nothing by itself.
    let words = said.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).count();
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
        assert_eq!(check(STARTER), Some(Unusable::Unedited));
        assert_eq!(check(&format!("{STARTER}\nsome more")), Some(Unusable::Unedited));
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

//! Which of an attempt's texts is its final message: the one the done signal is
//! judged on and the next phase reads. Pure: the texts in, the choice out.

/// The final message, and whether the agent marked it an error.
///
/// `result` is the agent's result event (its text and error flag), `last_text` its
/// last text event, `stdout_tail` the end of its stdout when its output is plain
/// text. The result wins, unless it came empty after some text was shown; a text
/// agent without a result ends with what it printed.
pub(crate) fn choose(
    result: Option<(String, bool)>,
    last_text: Option<String>,
    stdout_tail: Option<String>,
) -> (Option<String>, bool) {
    match result {
        Some((text, is_error)) if !text.is_empty() || last_text.is_none() => (Some(text), is_error),
        Some((_, is_error)) => (last_text, is_error),
        None => (stdout_tail.or(last_text), false),
    }
}

#[cfg(test)]
mod tests {
    use super::choose;

    fn s(text: &str) -> Option<String> {
        Some(text.to_string())
    }

    #[test]
    fn the_result_wins_over_the_text_shown() {
        assert_eq!(choose(Some(("done".into(), false)), s("working"), None), (s("done"), false));
        assert_eq!(choose(Some(("quota".into(), true)), None, None), (s("quota"), true));
    }

    #[test]
    fn an_empty_result_gives_way_to_the_last_text_keeping_its_error_flag() {
        assert_eq!(choose(Some((String::new(), true)), s("the answer"), None), (s("the answer"), true));
        assert_eq!(choose(Some((String::new(), false)), None, None), (s(""), false));
    }

    #[test]
    fn without_a_result_a_text_agent_ends_with_its_stdout() {
        assert_eq!(choose(None, None, s("all printed\n")), (s("all printed\n"), false));
        assert_eq!(choose(None, s("last words"), None), (s("last words"), false));
        assert_eq!(choose(None, None, None), (None, false));
    }
}

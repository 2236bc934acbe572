//! The terminal the live line is drawn on: indicatif's own (console's `Term` on
//! stderr) with one change. indicatif pads every line with spaces to the terminal's
//! full width and leaves the cursor at the right edge, so the next write wraps; but
//! the terminal's echo of Ctrl+C (`^C`) is such a write, and it pushed the spinner up
//! a line where clearing no longer reached it: a remnant stayed on screen after ralph
//! exited. Here the padding is dropped and replaced by an explicit line break, written
//! only when more text actually follows; the cursor stays right after the text, on
//! the line that the next redraw (or the final clear) erases.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use console::Term;
use indicatif::TermLike;

#[derive(Debug)]
pub(super) struct NoPadTerm<T: TermLike = Term> {
    term: T,
    /// A line ended (by its padding) and nothing has been written after it yet.
    line_ended: AtomicBool,
}

impl NoPadTerm<Term> {
    pub(super) fn stderr() -> Self {
        Self::new(Term::stderr())
    }
}

impl<T: TermLike> NoPadTerm<T> {
    pub(super) fn new(term: T) -> Self {
        Self { term, line_ended: AtomicBool::new(false) }
    }

    /// Before text that follows an ended line: go to the next line. `\r` first, so a
    /// line that filled the width exactly (the terminal waiting to wrap) is not broken twice.
    fn begin_text(&self) -> io::Result<()> {
        if self.line_ended.swap(false, Ordering::Relaxed) {
            self.term.write_str("\r\n")?;
        }
        Ok(())
    }

    /// Cursor movements and clears start a redraw from where the cursor is.
    fn begin_control(&self) {
        self.line_ended.store(false, Ordering::Relaxed);
    }
}

/// indicatif writes a line's padding as one write of spaces only (empty when the
/// line filled the width).
pub(super) fn is_padding(s: &str) -> bool {
    s.bytes().all(|b| b == b' ')
}

/// The cursor movements: each starts a redraw, then moves.
macro_rules! cursor_moves {
    ($($name:ident),*) => {$(
        fn $name(&self, n: usize) -> io::Result<()> {
            self.begin_control();
            self.term.$name(n)
        }
    )*};
}

impl<T: TermLike> TermLike for NoPadTerm<T> {
    fn width(&self) -> u16 {
        self.term.width()
    }

    fn height(&self) -> u16 {
        self.term.height()
    }

    cursor_moves!(move_cursor_up, move_cursor_down, move_cursor_right, move_cursor_left);

    fn write_line(&self, s: &str) -> io::Result<()> {
        self.begin_text()?;
        self.term.write_line(s)
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        if s == "\r" {
            self.begin_control();
            return self.term.write_str(s);
        }
        if is_padding(s) {
            self.line_ended.store(true, Ordering::Relaxed);
            return Ok(());
        }
        self.begin_text()?;
        self.term.write_str(s)
    }

    fn clear_line(&self) -> io::Result<()> {
        self.begin_control();
        self.term.clear_line()
    }

    fn flush(&self) -> io::Result<()> {
        self.term.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::{InMemoryTerm, ProgressBar, ProgressDrawTarget};

    /// A spinner drawn on `target`, then the terminal's echo of Ctrl+C, a redraw, and
    /// the final clear: what is left on the screen.
    fn after_ctrl_c(echo_into: &InMemoryTerm, target: ProgressDrawTarget) -> String {
        let style = indicatif::ProgressStyle::with_template("{spinner} {msg}").expect("template");
        let bar = ProgressBar::with_draw_target(None, target).with_style(style).with_message("phase 1/1 develop");
        bar.tick();
        assert!(echo_into.contents().contains("phase 1/1 develop"), "not drawn: {}", echo_into.contents());
        echo_into.write_str("^C").unwrap();
        bar.set_message("stopping: waiting for a to exit");
        bar.tick();
        echo_into.write_str("^C").unwrap();
        bar.finish_and_clear();
        echo_into.contents()
    }

    #[test]
    fn nothing_of_the_live_line_stays_after_a_ctrl_c_echo() {
        let screen = InMemoryTerm::new(10, 60);
        let left = after_ctrl_c(&screen, ProgressDrawTarget::term_like(Box::new(NoPadTerm::new(screen.clone()))));
        assert!(!left.contains("phase") && !left.contains("stopping"), "left on screen:\n{left}");
    }

    #[test]
    fn indicatifs_own_padding_leaves_a_remnant_which_is_why_this_exists() {
        let screen = InMemoryTerm::new(10, 60);
        let left = after_ctrl_c(&screen, ProgressDrawTarget::term_like(Box::new(screen.clone())));
        assert!(left.contains("phase") || left.contains("stopping"), "indicatif fixed it: {left}");
    }

    #[test]
    fn padding_is_only_spaces_or_nothing() {
        assert!(is_padding(""));
        assert!(is_padding("     "));
        assert!(!is_padding("  x "));
        assert!(!is_padding("\r"));
    }
}

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
pub struct NoPadTerm {
    term: Term,
    /// A line ended (by its padding) and nothing has been written after it yet.
    line_ended: AtomicBool,
}

impl NoPadTerm {
    pub fn stderr() -> Self {
        Self { term: Term::stderr(), line_ended: AtomicBool::new(false) }
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
pub fn is_padding(s: &str) -> bool {
    s.bytes().all(|b| b == b' ')
}

impl TermLike for NoPadTerm {
    fn width(&self) -> u16 {
        self.term.size().1
    }

    fn height(&self) -> u16 {
        self.term.size().0
    }

    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        self.begin_control();
        self.term.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        self.begin_control();
        self.term.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        self.begin_control();
        self.term.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        self.begin_control();
        self.term.move_cursor_left(n)
    }

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

    #[test]
    fn padding_is_only_spaces_or_nothing() {
        assert!(is_padding(""));
        assert!(is_padding("     "));
        assert!(!is_padding("  x "));
        assert!(!is_padding("\r"));
    }
}

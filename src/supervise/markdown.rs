//! Where the code is in an agent's markdown: fenced blocks and inline code spans.
//! Detectors that judge what an agent *did* by its prose ignore code, because code
//! is what the agent shows, not what it does.

use std::ops::Range;

/// `text` with every fenced block and inline code span (delimiters included)
/// replaced by spaces, newlines kept, so byte offsets and lines stay the same.
///
/// A fence that is never closed runs to the end of the text. A message cut off in
/// the middle of a code block is far more common than a model that opens a fence,
/// gives up on it and then means the rest literally; reading on after an unclosed
/// fence is what makes other tools flag truncated code answers.
pub(crate) fn mask_code(text: &str) -> String {
    let mut ranges = fenced_blocks(text);
    let inline = inline_spans(text.as_bytes(), &ranges);
    ranges.extend(inline);
    let mut masked = vec![false; text.len()];
    for r in ranges {
        masked[r].fill(true);
    }
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if masked[i] && c != '\n' {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    out
}

/// Fences are recognised at any indentation, since agents nest them in lists.
fn fenced_blocks(text: &str) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, u8, usize)> = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        let body = line.trim_start();
        let run = |c: u8| body.bytes().take_while(|&b| b == c).count();
        match open {
            Some((from, c, len)) => {
                let r = run(c);
                if r >= len && body[r..].trim().is_empty() {
                    blocks.push(from..pos);
                    open = None;
                }
            }
            None => {
                if let Some(c @ (b'`' | b'~')) = body.bytes().next() {
                    let r = run(c);
                    // A backtick in the info string makes it inline code, not a fence.
                    if r >= 3 && !(c == b'`' && body[r..].contains('`')) {
                        open = Some((start, c, r));
                    }
                }
            }
        }
    }
    if let Some((from, ..)) = open {
        blocks.push(from..text.len());
    }
    blocks
}

/// A run of n backticks opens a span closed by the next run of exactly n in the same
/// paragraph; without one, the backticks are literal. Keeping spans inside one
/// paragraph stops a stray backtick from hiding the rest of a message.
fn inline_spans(bytes: &[u8], fences: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if let Some(f) = fences.iter().find(|f| f.contains(&i)) {
            i = f.end;
            continue;
        }
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_len(bytes, i);
        let end = paragraph_end(bytes, i + n, fences);
        // The closing run: the next one of exactly n backticks.
        let mut j = i + n;
        while j < end && !(bytes[j] == b'`' && run_len(bytes, j) == n) {
            j += if bytes[j] == b'`' { run_len(bytes, j) } else { 1 };
        }
        if j < end {
            spans.push(i..j + n);
            i = j + n;
        } else {
            i += n;
        }
    }
    spans
}

fn run_len(bytes: &[u8], from: usize) -> usize {
    bytes[from..].iter().take_while(|&&b| b == b'`').count()
}

/// The end of the paragraph holding `from`: a blank line, a fence or the text's end.
fn paragraph_end(bytes: &[u8], from: usize, fences: &[Range<usize>]) -> usize {
    let fence = fences.iter().map(|f| f.start).filter(|&s| s >= from).min().unwrap_or(bytes.len());
    let mut i = from;
    while i < fence {
        if bytes[i] == b'\n' {
            let rest = bytes[i + 1..].iter().take_while(|&&b| b == b' ' || b == b'\t').count();
            if bytes.get(i + 1 + rest).is_none_or(|&b| b == b'\n' || b == b'\r') {
                return i;
            }
        }
        i += 1;
    }
    fence
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_inline_code_become_spaces_of_the_same_length() {
        let text = "a `b` c\n```rust\nlet x = 1;\n```\nd ~~~ e\n";
        let masked = mask_code(text);
        assert_eq!(masked.len(), text.len());
        assert_eq!(masked, "a     c\n       \n          \n   \nd ~~~ e\n");
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end() {
        let masked = mask_code("text\n```json\n{\"a\": 1}\nmore");
        assert_eq!(masked.trim(), "text");
    }

    #[test]
    fn tilde_fences_and_longer_closers() {
        let masked = mask_code("~~~~\nx\n~~~\ny\n~~~~~\nz");
        assert_eq!(masked.split_whitespace().collect::<Vec<_>>(), ["z"]);
    }

    #[test]
    fn a_backtick_fence_with_backticks_in_its_info_is_inline() {
        let masked = mask_code("```a``` b\nc");
        assert_eq!(masked, "        b\nc");
    }

    #[test]
    fn double_backtick_spans_hold_single_backticks() {
        assert_eq!(mask_code("x ``a`b`` y"), "x         y");
    }

    #[test]
    fn a_stray_backtick_does_not_hide_the_next_paragraph() {
        assert_eq!(mask_code("it`s\n\nkeep `this"), "it`s\n\nkeep `this");
    }

    #[test]
    fn multibyte_text_inside_code_keeps_offsets() {
        let text = "é `ü→` ñ";
        let masked = mask_code(text);
        assert_eq!(masked.len(), text.len());
        assert!(masked.starts_with("é ") && masked.ends_with(" ñ"));
    }
}

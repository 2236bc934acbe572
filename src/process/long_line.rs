//! What ralph keeps of an output line too long to hold (over [`LONG_LINE`]): a
//! streaming scan that keeps every key and all of the JSON structure, and of each
//! long string its first and last [`KEEP`] bytes, so memory stays flat whatever the
//! line length. A 100 MB tool result may come before its `is_error`, and a done tag
//! sits at the end of a long final message: both survive. A line that is not JSON
//! (or whose structure alone outgrows `STRUCTURE_CAP`) keeps its own first and
//! last [`KEEP`] bytes. Pure: bytes in, a compacted line out.

use std::collections::VecDeque;

/// Lines up to this many bytes are handled whole.
pub(crate) const LONG_LINE: usize = 1024 * 1024;
/// Bytes kept at each end of a long string (or of a long non-JSON line).
pub(crate) const KEEP: usize = 4 * 1024;
/// The most compacted JSON kept; past it the line is handled as text.
const STRUCTURE_CAP: usize = 2 * 1024 * 1024;

/// Streams one long line into its compacted form.
#[derive(Debug)]
pub(crate) struct Compactor {
    mode: Mode,
    /// The compacted line so far (JSON mode) or the head (text mode).
    out: Vec<u8>,
    /// Text mode: the last bytes seen.
    tail: VecDeque<u8>,
    /// Bytes dropped in text mode.
    cut: u64,
    started: bool,
}

#[derive(Debug)]
enum Mode {
    Json(Json),
    Text,
}

#[derive(Debug, Default)]
struct Json {
    in_string: bool,
    /// An escape sequence being read (starts with `\`).
    escape: Vec<u8>,
    /// The string's content so far, up to `KEEP` bytes.
    head_len: usize,
    /// Once the head is full: the last whole escape units of the string.
    tail: VecDeque<u8>,
    cut: u64,
}

impl Compactor {
    pub(crate) fn new() -> Self {
        Self { mode: Mode::Json(Json::default()), out: Vec::new(), tail: VecDeque::new(), cut: 0, started: false }
    }

    /// Takes in the next bytes of the line (no newline).
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if !self.started {
                if b.is_ascii_whitespace() {
                    continue;
                }
                self.started = true;
                if b != b'{' && b != b'[' {
                    self.mode = Mode::Text;
                }
            }
            match &mut self.mode {
                Mode::Text => self.push_text(b),
                Mode::Json(json) => {
                    json.push(b, &mut self.out);
                    if self.out.len() > STRUCTURE_CAP {
                        self.fall_back_to_text();
                    }
                }
            }
        }
    }

    fn push_text(&mut self, b: u8) {
        if self.out.len() < KEEP {
            self.out.push(b);
            return;
        }
        self.tail.push_back(b);
        if self.tail.len() > KEEP {
            self.tail.pop_front();
            self.cut += 1;
        }
    }

    /// The structure alone is too big to keep: fall back to head and tail.
    fn fall_back_to_text(&mut self) {
        let rest = self.out.split_off(KEEP);
        self.mode = Mode::Text;
        self.cut = 0;
        for b in rest {
            self.push_text(b);
        }
    }

    /// The compacted line (lossily decoded).
    pub(crate) fn finish(mut self) -> String {
        match &mut self.mode {
            // The line ended inside a string: close what was kept.
            Mode::Json(json) if json.in_string => json.close(&mut self.out),
            Mode::Json(_) => {}
            Mode::Text => {
                if self.cut > 0 {
                    self.out.extend_from_slice(marker(self.cut).as_bytes());
                }
                self.out.extend(self.tail.iter());
            }
        }
        String::from_utf8_lossy(&self.out).into_owned()
    }
}

fn marker(cut: u64) -> String {
    format!("…[{cut} bytes cut]…")
}

impl Json {
    fn push(&mut self, b: u8, out: &mut Vec<u8>) {
        if !self.in_string {
            out.push(b);
            if b == b'"' {
                self.in_string = true;
                self.head_len = 0;
                self.cut = 0;
                self.tail.clear();
            }
            return;
        }
        if !self.escape.is_empty() {
            self.escape.push(b);
            // `\uXXXX` is six bytes, any other escape two.
            if self.escape[1] != b'u' || self.escape.len() == 6 {
                let unit = std::mem::take(&mut self.escape);
                self.unit(&unit, out);
            }
            return;
        }
        match b {
            b'\\' => self.escape.push(b),
            b'"' => {
                self.close(out);
                out.push(b'"');
            }
            _ => self.unit(&[b], out),
        }
    }

    /// One character or whole escape sequence of a string: never split, so the
    /// kept ends stay valid JSON.
    fn unit(&mut self, unit: &[u8], out: &mut Vec<u8>) {
        if self.head_len < KEEP {
            out.extend_from_slice(unit);
            self.head_len += unit.len();
            return;
        }
        self.tail.extend(unit);
        while self.tail.len() > KEEP {
            let n = match (self.tail.front(), self.tail.get(1)) {
                (Some(b'\\'), Some(b'u')) => 6,
                (Some(b'\\'), _) => 2,
                _ => 1,
            };
            self.tail.drain(..n.min(self.tail.len()));
            self.cut += n as u64;
        }
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.cut > 0 {
            out.extend_from_slice(marker(self.cut).as_bytes());
        }
        out.extend(self.tail.drain(..));
        self.escape.clear();
        self.in_string = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(line: &[u8]) -> String {
        let mut c = Compactor::new();
        // Odd chunk sizes: escapes and UTF-8 split across pushes.
        for chunk in line.chunks(7) {
            c.push(chunk);
        }
        c.finish()
    }

    #[test]
    fn keeps_keys_structure_and_both_ends_of_long_strings() {
        let big = "x".repeat(3 * LONG_LINE);
        let line = format!(
            r#"{{"type":"user","content":[{{"type":"tool_result","content":"{big}END","is_error":true}}],"text":"done <promise>DONE</promise>"}}"#
        );
        let out = compact(line.as_bytes());
        assert!(out.len() < 4 * KEEP, "{}", out.len());
        let v: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        assert_eq!(v["content"][0]["is_error"], true);
        assert_eq!(v["text"], "done <promise>DONE</promise>");
        let s = v["content"][0]["content"].as_str().unwrap_or_default();
        assert!(s.starts_with("xxxx") && s.ends_with("xEND") && s.contains("bytes cut"), "{}", &s[..40]);
    }

    #[test]
    fn escapes_are_never_split() {
        // Every cut point lands somewhere in a run of escapes of each length.
        for pad in 0..6 {
            let body = format!("{}{}", "a".repeat(pad), r#"\\\"\u00e9\n"#.repeat(2 * KEEP));
            let line = format!(r#"{{"k":"{body}","after":1}}"#);
            let out = compact(line.as_bytes());
            let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("pad {pad}: {e}"));
            assert_eq!(v["after"], 1);
        }
    }

    #[test]
    fn text_lines_keep_head_and_tail() {
        let line = format!("start {} the end <promise>DONE</promise>", "y".repeat(2 * LONG_LINE));
        let out = compact(line.as_bytes());
        assert!(out.starts_with("start yyy"));
        assert!(out.ends_with("the end <promise>DONE</promise>"));
        assert!(out.len() < 3 * KEEP);
    }

    #[test]
    fn huge_structure_falls_back_to_text() {
        let line = format!("[{}0]", "1,".repeat(2 * STRUCTURE_CAP));
        let out = compact(line.as_bytes());
        assert!(out.starts_with("[1,1,") && out.ends_with("1,0]") && out.contains("bytes cut"));
        assert!(out.len() < 3 * KEEP);
    }

    #[test]
    fn a_line_cut_inside_a_string_is_closed() {
        let out = compact(format!(r#"{{"a":"{}"#, "z".repeat(3 * KEEP)).as_bytes());
        assert!(out.starts_with(r#"{"a":"zzz"#) && out.contains("bytes cut"));
    }
}

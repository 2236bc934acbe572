//! A line as a JSON string's reader sees it: `\/` is `/`, `\u002f` is `/`, `\n` a
//! line break. An agent's stream carries its text JSON-encoded, so a key with a `/`
//! (an AWS secret key) arrives as `wJalr…\/K7MD…`, and a private key as one line
//! holding `\n`s: the rules read the decoded text too, and what they find there is
//! mapped back to the bytes of the line.

/// The decoded text and, for each of its bytes, where the escape or byte it came
/// from starts in the line.
pub(crate) struct Decoded {
    pub text: Vec<u8>,
    from: Vec<u32>,
    raw_len: usize,
}

impl Decoded {
    /// The line's range that decoded to `start..end`.
    pub(crate) fn raw(&self, start: usize, end: usize) -> (usize, usize) {
        let at = |i: usize| self.from.get(i).map_or(self.raw_len, |&k| k as usize);
        (at(start), at(end))
    }
}

/// The line decoded, when it holds an escape that changes something (`None` for the
/// common line, which has no backslash).
pub(crate) fn decode(line: &[u8]) -> Option<Decoded> {
    let first = memchr::memchr(b'\\', line)?;
    if u32::try_from(line.len()).is_err() {
        return None;
    }
    let mut text = Vec::with_capacity(line.len());
    let mut from = Vec::with_capacity(line.len());
    let push = |text: &mut Vec<u8>, from: &mut Vec<u32>, bytes: &[u8], at: usize| {
        text.extend_from_slice(bytes);
        from.extend(std::iter::repeat_n(at as u32, bytes.len()));
    };
    // The bytes before the first escape map to themselves.
    text.extend_from_slice(&line[..first]);
    from.extend(0..first as u32);
    let mut i = first;
    let mut changed = false;
    while i < line.len() {
        let c = line[i];
        if c != b'\\' || i + 1 == line.len() {
            push(&mut text, &mut from, &[c], i);
            i += 1;
            continue;
        }
        let (bytes, len): (Vec<u8>, usize) = match line[i + 1] {
            b'/' => (vec![b'/'], 2),
            b'\\' => (vec![b'\\'], 2),
            b'"' => (vec![b'"'], 2),
            b'n' => (vec![b'\n'], 2),
            b'r' => (vec![b'\r'], 2),
            b't' => (vec![b'\t'], 2),
            b'b' | b'f' => (vec![b' '], 2),
            b'u' => match unicode(&line[i..]) {
                Some((ch, len)) => (ch.encode_utf8(&mut [0; 4]).as_bytes().to_vec(), len),
                None => (vec![b'\\'], 1),
            },
            _ => (vec![b'\\'], 1),
        };
        changed |= len > 1;
        push(&mut text, &mut from, &bytes, i);
        i += len;
    }
    changed.then_some(Decoded { text, from, raw_len: line.len() })
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`, at the start of `s`: the character
/// and how many bytes it took.
fn unicode(s: &[u8]) -> Option<(char, usize)> {
    let hex = |s: &[u8]| -> Option<u32> {
        let digits = s.get(2..6)?;
        (s.get(..2)? == b"\\u").then_some(())?;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let hi = hex(s)?;
    if (0xD800..0xDC00).contains(&hi)
        && let Some(lo) = hex(&s[6..]).filter(|lo| (0xDC00..0xE000).contains(lo))
    {
        return char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).map(|c| (c, 12));
    }
    Some((char::from_u32(hi).unwrap_or('\u{fffd}'), 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_and_map_back() {
        let line = br#"{"k":"ab\/cd\u002fef\nG"}"#;
        let d = decode(line).unwrap();
        assert_eq!(d.text, b"{\"k\":\"ab/cd/ef\nG\"}");
        let at = d.text.iter().position(|&c| c == b'c').unwrap();
        let (s, e) = d.raw(at, at + 5);
        assert_eq!(&line[s..e], br"cd\u002fef");
        assert!(decode(b"no escapes").is_none());
        assert!(decode(br"a\qb").is_none());
        let pair = decode(br"x\ud83d\ude00y").unwrap();
        assert_eq!(String::from_utf8(pair.text).unwrap(), "x😀y");
    }
}

//! The one matcher: every rule's anchors in one Aho-Corasick automaton (ASCII, any
//! case), searched once per line; a rule's pattern runs only on a line that holds one
//! of its anchors, so a line without any (most output) costs one pass of the
//! anchors' heads (below) and nothing else. Patterns are compiled the first time a line needs
//! them: a run that never sees a Slack anchor never builds the Slack pattern.
//!
//! Why an automaton and not a `RegexSet` of every pattern: the set would run ~170
//! patterns' states over every byte of every line, and its lazy DFA thrashes at
//! that size; the anchors are few short literals, the automaton a table walk.
//!
//! The automaton does not walk every byte either: an anchor can start only where
//! three bytes are the first three of some anchor (any case), which a table says
//! in a few reads a byte; the automaton is asked, anchored, only there. A line of
//! words that start no anchor (most output) never enters it.

use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, Anchored, Input, Match, MatchKind, StartKind};
use regex::bytes::{Regex, RegexBuilder};

use super::rules::{Check, RULES, Rule, Shape, Special, named_pattern};
use super::special;

/// What a hidden range is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    /// A match of `RULES[i]`.
    Rule(u16),
    /// The exact value of a credential ralph handed to an agent.
    Value,
    /// A secret's part on the other side of a line break.
    Cut,
}

impl What {
    /// The family people know it by.
    pub(crate) fn family(self) -> &'static str {
        match self {
            What::Rule(i) => RULES[usize::from(i)].family,
            What::Value => "Credential ralph passes to an agent",
            What::Cut => "Secret cut across lines",
        }
    }
}

/// A range of a line to hide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub start: usize,
    pub end: usize,
    pub what: What,
}

/// Bits over the rules (one per rule).
type RuleSet = [u64; RULE_WORDS];
const RULE_WORDS: usize = 5;

struct Matcher {
    /// Searched anchored only, at the places `heads` allows.
    anchors: AhoCorasick,
    heads: Heads,
    /// For each anchor: the rules it triggers (its own, and those of every anchor it
    /// contains, which a search that reports one anchor per position would miss).
    triggers: Vec<RuleSet>,
    /// Each rule's pattern, built on first use (`None`: it has none, or it failed).
    compiled: Vec<OnceLock<Option<Regex>>>,
}

static MATCHER: LazyLock<Matcher> = LazyLock::new(Matcher::build);

impl Matcher {
    fn build() -> Self {
        assert!(RULES.len() <= RULE_WORDS * 64, "more rules than RuleSet holds");
        let mut words: Vec<&'static str> = Vec::new();
        let mut own: Vec<RuleSet> = Vec::new();
        for (i, rule) in RULES.iter().enumerate() {
            // Whole anchors: cut short, a provider's name becomes a word of every
            // line (`contentful` to `conte`, in each stream-json line's `content`).
            for &a in rule.anchors {
                let k = words.iter().position(|&w| w == a).unwrap_or_else(|| {
                    words.push(a);
                    own.push([0; RULE_WORDS]);
                    words.len() - 1
                });
                own[k][i / 64] |= 1 << (i % 64);
            }
        }
        let triggers = words
            .iter()
            .map(|w| {
                let mut set = [0; RULE_WORDS];
                for (k, inner) in words.iter().enumerate() {
                    if w.contains(inner) {
                        (0..RULE_WORDS).for_each(|j| set[j] |= own[k][j]);
                    }
                }
                set
            })
            .collect();
        // The contiguous NFA, not the DFA: the DFA's table for these anchors (any
        // case) is ~900 KB, 0.8 MiB of ralph's 12 MiB peak-memory budget, and it is
        // asked only where the heads allow (benches/run.sh ONLY=floods).
        let anchors = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .start_kind(StartKind::Anchored)
            .build(&words)
            .unwrap_or_else(|e| panic!("the secret anchors do not build: {e}"));
        let heads = Heads::new(&words);
        Self { anchors, heads, triggers, compiled: RULES.iter().map(|_| OnceLock::new()).collect() }
    }

    /// Every place an anchor starts in `line`, left to right, with the longest anchor
    /// that starts there (whose triggers hold those of the shorter ones).
    fn starts<'a>(&'a self, line: &'a [u8]) -> impl Iterator<Item = Match> + 'a {
        let mut at = 0;
        std::iter::from_fn(move || {
            loop {
                let p = self.heads.next(line, at)?;
                at = p + 1;
                let found = self.anchors.find(Input::new(line).range(p..).anchored(Anchored::Yes));
                if found.is_some() {
                    return found;
                }
            }
        })
    }

    fn pattern(&self, i: usize) -> Option<&Regex> {
        self.compiled[i].get_or_init(|| compile(&RULES[i])).as_ref()
    }

    /// The rules whose anchors occur in `line`.
    fn triggered(&self, line: &[u8]) -> Option<RuleSet> {
        let mut set = [0; RULE_WORDS];
        let mut any = false;
        for m in self.starts(line) {
            let t = &self.triggers[m.pattern().as_usize()];
            (0..RULE_WORDS).for_each(|j| set[j] |= t[j]);
            any = true;
        }
        any.then_some(set)
    }
}

/// Which three bytes start an anchor. Bytes are put in classes first (a letter's two
/// cases in one, every byte no anchor holds in class 0), so that for each pair of
/// classes one word of 64 bits says which third bytes go on an anchor's start.
struct Heads {
    class: [u8; 256],
    /// Bit `c` of `third[64 * a + b]`: some anchor starts with bytes of classes `a`,
    /// `b`, `c`; all bits (class 0 too, which stands for the line's end) for a
    /// two-byte anchor `a b`. No anchor starts in class 0: its row stays empty.
    third: Box<[u64; 64 * 64]>,
}

impl Heads {
    fn new(words: &[&str]) -> Self {
        let mut class = [0u8; 256];
        let mut classes = 1;
        for c in words.iter().flat_map(|w| w.bytes()) {
            if class[usize::from(c)] == 0 {
                assert!(classes < 64, "the secret anchors hold more than 63 different bytes");
                class[usize::from(c.to_ascii_lowercase())] = classes;
                class[usize::from(c.to_ascii_uppercase())] = classes;
                classes += 1;
            }
        }
        let mut third = Box::new([0u64; 64 * 64]);
        let of = |c: u8| usize::from(class[usize::from(c)]);
        for w in words {
            match *w.as_bytes() {
                [a, b] => third[64 * of(a) + of(b)] = u64::MAX,
                [a, b, c, ..] => third[64 * of(a) + of(b)] |= 1 << of(c),
                _ => panic!("the secret anchor {w:?} is shorter than two bytes"),
            }
        }
        Self { class, third }
    }

    /// The first place at or after `from` where an anchor may start: each byte is
    /// read once, with the classes of the two before it in `pair`.
    fn next(&self, line: &[u8], from: usize) -> Option<usize> {
        let rest = line.get(from..)?;
        // Starts as two bytes of class 0, which begin no anchor.
        let mut pair = 0;
        for (i, &c) in rest.iter().enumerate() {
            let k = usize::from(self.class[usize::from(c)]) % 64;
            if self.third[pair] >> k & 1 != 0 {
                return Some(from + i - 2);
            }
            pair = (pair % 64) * 64 + k;
        }
        // The line's end after its last two bytes: only a two-byte anchor fits.
        (self.third[pair] & 1 != 0).then(|| line.len() - 2)
    }
}

fn compile(rule: &Rule) -> Option<Regex> {
    let pattern = match rule.shape {
        Shape::Token { pattern, .. } => pattern.to_string(),
        Shape::Named { names, value, .. } => named_pattern(names, value),
        Shape::Special(_) => return None,
    };
    RegexBuilder::new(&pattern)
        .unicode(false)
        .build()
        .map_err(|e| tracing::warn!("secret rule {} does not compile: {e}", rule.id))
        .ok()
}

/// Appends the rules' hits in `line` (one line of text, or a few: patterns do not
/// cross a newline); true when it holds any anchor. Overlapping hits are left to the
/// caller to merge.
pub(crate) fn hits(line: &[u8], out: &mut Vec<Hit>) -> bool {
    let m = &*MATCHER;
    let Some(set) = m.triggered(line) else { return false };
    for (i, rule) in RULES.iter().enumerate() {
        if set[i / 64] & (1 << (i % 64)) == 0 {
            continue;
        }
        let what = What::Rule(i as u16);
        match rule.shape {
            Shape::Token { check, .. } | Shape::Named { check, .. } => {
                let Some(re) = m.pattern(i) else { continue };
                for caps in re.captures_iter(line) {
                    let Some(s) = caps.name("s").or_else(|| caps.get(0)) else { continue };
                    if s.start() < s.end() && passes(check, s.as_bytes()) {
                        out.push(Hit { start: s.start(), end: s.end(), what });
                    }
                }
            }
            Shape::Special(kind) => special::hits(kind, line, &mut |start, end| out.push(Hit { start, end, what })),
        }
    }
    true
}

/// Where a secret or its name may start in `bytes` (every anchor of every rule): a
/// long line is cut away from these, so a secret and its name stay in one piece.
pub(crate) fn anchor_starts(bytes: &[u8]) -> Vec<usize> {
    MATCHER.starts(bytes).map(|m| m.start()).collect()
}

/// The literal prefixes of token rules (`ghp_`, `xoxb-`, `AKIA`): a line that ends
/// in one, cut short, ends in the first part of a token.
pub(crate) fn is_token_prefix(word: &[u8]) -> bool {
    static PREFIXES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
        RULES
            .iter()
            .filter(|r| matches!(r.shape, Shape::Token { .. }))
            .flat_map(|r| r.anchors.iter().copied())
            // Long enough, or ending in a separator, to be a prefix and not a word.
            .filter(|a| a.len() >= 4 || a.ends_with(['_', '-', '.']))
            .filter(|a| a.bytes().next().is_some_and(|c| c.is_ascii_alphanumeric()))
            .collect()
    });
    PREFIXES.iter().any(|p| {
        let Some(rest) = word.get(p.len()..).filter(|_| word[..p.len()].eq_ignore_ascii_case(p.as_bytes())) else {
            return false;
        };
        // A prefix of letters alone (`AKIA`, but also a rule's context word such as
        // `sentry`) goes on in letters and digits only: `SENTRY_DSN` is a name.
        if p.bytes().all(|c| c.is_ascii_alphabetic()) && !rest.iter().all(u8::is_ascii_alphanumeric) {
            return false;
        }
        // Cut right after the prefix, or in a body that is random (not `sk-short`).
        (rest.is_empty() && p.ends_with(['_', '-', '.']))
            || (!rest.is_empty() && rest.iter().any(|c| c.is_ascii_digit() || c.is_ascii_uppercase()))
    })
}

fn passes(check: Check, secret: &[u8]) -> bool {
    match check {
        Check::None => true,
        Check::Entropy(min) => special::entropy(secret) >= min,
        Check::Mixed => {
            let has = |f: fn(&u8) -> bool| secret.iter().any(f);
            has(u8::is_ascii_digit) || (has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase))
        }
    }
}

/// Whether a special rule is `kind` (the private-key rule's index, for the stream).
pub(crate) fn rule_index(kind: Special) -> Option<u16> {
    RULES.iter().position(|r| matches!(r.shape, Shape::Special(k) if k == kind)).map(|i| i as u16)
}

#[cfg(test)]
pub(crate) fn compile_all() -> Vec<(&'static str, bool)> {
    RULES
        .iter()
        .enumerate()
        .filter(|(_, r)| !matches!(r.shape, Shape::Special(_)))
        .map(|(i, r)| (r.id, MATCHER.pattern(i).is_some()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every anchor start an unanchored walk of the whole line finds (the automaton
    /// as it was before the heads), for comparison.
    fn walked(all: &AhoCorasick, line: &[u8]) -> Vec<usize> {
        let mut at = 0;
        let mut out = Vec::new();
        while let Some(m) = all.find(Input::new(line).range(at..)) {
            out.push(m.start());
            at = m.start() + 1;
        }
        out
    }

    #[test]
    fn the_heads_miss_no_anchor_in_any_case_at_any_place() {
        let words: Vec<&str> = RULES.iter().flat_map(|r| r.anchors.iter().copied()).collect();
        let all = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&words)
            .expect("anchors build");
        let mut lines: Vec<String> = Vec::new();
        for a in &words {
            let mixed: String =
                a.chars().enumerate().map(|(i, c)| if i % 2 == 0 { c.to_ascii_uppercase() } else { c }).collect();
            for w in [a.to_string(), a.to_ascii_uppercase(), mixed] {
                lines.extend([w.clone(), format!("x{w}"), format!("{w}{w}"), format!("é {w}:{w}\t{w}ë")]);
            }
        }
        lines.extend(["", "a", "xx", "plain words and nothing else", "\u{fffd}\u{fffd}"].map(String::from));
        lines.extend(super::super::tests::corpus::corpus().into_iter().map(|s| s.text));
        for line in &lines {
            let starts: Vec<usize> = MATCHER.starts(line.as_bytes()).map(|m| m.start()).collect();
            assert_eq!(starts, walked(&all, line.as_bytes()), "{line:?}");
        }
    }
}

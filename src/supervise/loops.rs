//! The tool-call loop: an agent calling the same tool with the same arguments over
//! and over, or cycling through the same short sequence of calls, without progress.
//!
//! Calls are compared by name and canonical arguments, so a cycle whose calls differ
//! in their arguments (edit, test, a different edit, test, ...) is progress, not a
//! loop, even though some of its calls repeat exactly.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use serde_json::Value;

/// Identical calls in a row that make a loop.
const REPEATS: usize = 3;
/// The lengths of repeating sequences looked for.
const PATTERN_LENGTHS: RangeInclusive<usize> = 2..=5;
/// Back-to-back occurrences of a sequence that make a loop.
const PATTERN_TIMES: usize = 3;
/// The calls kept: enough for the longest pattern's occurrences.
const HISTORY: usize = *PATTERN_LENGTHS.end() * PATTERN_TIMES;

/// What kind of loop was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoopKind {
    /// One call, identical, `times` in a row.
    Repeat { times: usize },
    /// A sequence of `length` calls, identical, `times` in a row.
    Pattern { length: usize, times: usize },
}

/// A loop, with a description for the journal and the recovery note.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loop {
    pub kind: LoopKind,
    pub description: String,
}

/// One call as compared: the tool name and its canonical arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Call {
    name: String,
    args: String,
}

/// Watches the tool calls of one attempt.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoopDetector {
    history: VecDeque<Call>,
}

impl LoopDetector {
    /// Records a call and says whether it completes a loop. After a loop is
    /// reported the history starts over, so one loop is reported once.
    pub(crate) fn on_tool_call(&mut self, name: &str, input: &Value) -> Option<Loop> {
        self.history.push_back(Call { name: name.to_owned(), args: canonical(input) });
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        let found = self.repeat().or_else(|| self.pattern());
        if found.is_some() {
            self.history.clear();
        }
        found
    }

    fn repeat(&self) -> Option<Loop> {
        let last = self.history.back()?;
        let times = self.history.iter().rev().take_while(|c| *c == last).count();
        (times >= REPEATS).then(|| Loop {
            kind: LoopKind::Repeat { times },
            description: format!("{} called {times} times in a row with the same arguments", show(last)),
        })
    }

    /// The shortest repeating sequence wins: A B A B A B A B A B A B is reported as
    /// A B six times, never as A B A B.
    fn pattern(&self) -> Option<Loop> {
        let n = self.history.len();
        PATTERN_LENGTHS.clone().find_map(|length| {
            let start = n.checked_sub(length * PATTERN_TIMES)?;
            let periodic = (start..n - length).all(|i| self.history[i] == self.history[i + length]);
            // A sequence of one repeated call is a repeat, not a pattern.
            let varied = (start + 1..start + length).any(|i| self.history[i] != self.history[start]);
            if !(periodic && varied) {
                return None;
            }
            let mut seen = PATTERN_TIMES;
            while seen < n / length
                && (0..length).all(|k| {
                    let i = n - (seen + 1) * length + k;
                    self.history[i] == self.history[i + length]
                })
            {
                seen += 1;
            }
            let steps: Vec<String> = self.history.range(n - length..).map(show).collect();
            Some(Loop {
                kind: LoopKind::Pattern { length, times: seen },
                description: format!("the sequence {} repeated {seen} times in a row", steps.join(" → ")),
            })
        })
    }
}

/// Keys sorted at every level (serde_json's map is ordered by key: its
/// `preserve_order` feature is off, which `nested_keys_are_sorted_too` guards) and
/// no whitespace between tokens. Arguments sent as a JSON string are parsed first,
/// so `"{\"a\": 1}"` and `{"a":1}` compare equal. Whitespace inside string values
/// is kept: an edit that only changes indentation is a different edit.
fn canonical(input: &Value) -> String {
    let parsed = input.as_str().and_then(|s| serde_json::from_str::<Value>(s).ok());
    parsed.as_ref().filter(|v| v.is_object() || v.is_array()).unwrap_or(input).to_string()
}

/// `Name(args)`, short enough for a note.
fn show(call: &Call) -> String {
    format!("{}({})", call.name, crate::text::ellipsis(&call.args, 80))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(d: &mut LoopDetector, calls: &[(&str, Value)]) -> Vec<Option<Loop>> {
        calls.iter().map(|(n, v)| d.on_tool_call(n, v)).collect()
    }

    fn read(path: &str) -> (&'static str, Value) {
        ("Read", json!({ "file_path": path }))
    }

    #[test]
    fn the_same_call_three_times_is_a_repeat() {
        let mut d = LoopDetector::default();
        let out = feed(&mut d, &[read("a.rs"), read("a.rs"), read("a.rs")]);
        assert_eq!(out[0], None);
        assert_eq!(out[1], None);
        let found = out[2].clone().expect("a loop");
        assert_eq!(found.kind, LoopKind::Repeat { times: 3 });
        assert!(found.description.contains("Read"), "{}", found.description);
        assert!(found.description.contains("a.rs"), "{}", found.description);
    }

    #[test]
    fn arguments_compare_canonically() {
        let mut d = LoopDetector::default();
        assert!(d.on_tool_call("Bash", &json!({"command": "ls", "timeout": 5})).is_none());
        assert!(d.on_tool_call("Bash", &json!({"timeout": 5, "command": "ls"})).is_none());
        let as_string = Value::String("{ \"timeout\" : 5,\n \"command\": \"ls\" }".into());
        assert!(d.on_tool_call("Bash", &as_string).is_some());
    }

    #[test]
    fn nested_keys_are_sorted_too() {
        assert_eq!(
            canonical(&json!({"b": {"y": 1, "x": [ {"q": 1, "p": 2} ]}, "a": 0})),
            canonical(&json!({"a": 0, "b": {"x": [{"p": 2, "q": 1}], "y": 1}}))
        );
    }

    #[test]
    fn whitespace_inside_values_is_a_real_difference() {
        let mut d = LoopDetector::default();
        let edit = |s: &str| ("Edit", json!({"file_path": "a.rs", "old_string": "fn a()", "new_string": s}));
        let out = feed(&mut d, &[edit("fn a() {}"), edit("fn a()  {}"), edit("fn a()   {}")]);
        assert!(out.iter().all(Option::is_none));
    }

    #[test]
    fn reading_six_different_files_is_not_a_loop() {
        let mut d = LoopDetector::default();
        let calls: Vec<_> = ["a", "b", "c", "d", "e", "f"].iter().map(|p| read(p)).collect();
        assert!(feed(&mut d, &calls).iter().all(Option::is_none));
    }

    #[test]
    fn the_same_tool_with_other_arguments_is_not_a_repeat() {
        let mut d = LoopDetector::default();
        let out = feed(&mut d, &[read("a"), read("a"), read("b"), read("b"), read("a"), read("a")]);
        assert!(out.iter().all(Option::is_none));
    }

    #[test]
    fn an_edit_test_cycle_with_changing_edits_is_not_a_loop() {
        let mut d = LoopDetector::default();
        let test = || ("Bash", json!({"command": "cargo test"}));
        let mut calls = Vec::new();
        for i in 0..8 {
            calls.push((
                "Edit",
                json!({"file_path": "src/lib.rs", "old_string": format!("v{i}"), "new_string": format!("v{}", i + 1)}),
            ));
            calls.push(test());
        }
        assert!(feed(&mut d, &calls).iter().all(Option::is_none));
    }

    #[test]
    fn a_pair_repeated_three_times_is_a_pattern() {
        let mut d = LoopDetector::default();
        let a = read("a.rs");
        let b = ("Bash", json!({"command": "cargo check"}));
        let out = feed(&mut d, &[a.clone(), b.clone(), a.clone(), b.clone(), a, b]);
        assert!(out[..5].iter().all(Option::is_none));
        let found = out[5].clone().expect("a loop");
        assert_eq!(found.kind, LoopKind::Pattern { length: 2, times: 3 });
        assert!(found.description.contains("Read") && found.description.contains("→"), "{}", found.description);
    }

    #[test]
    fn a_triple_repeated_three_times_is_a_pattern() {
        let mut d = LoopDetector::default();
        let (a, b, c) = (read("a"), read("b"), ("Grep", json!({"pattern": "fn main"})));
        let mut calls = Vec::new();
        for _ in 0..3 {
            calls.extend([a.clone(), b.clone(), c.clone()]);
        }
        let out = feed(&mut d, &calls);
        assert!(out[..8].iter().all(Option::is_none));
        assert_eq!(out[8].as_ref().map(|l| l.kind.clone()), Some(LoopKind::Pattern { length: 3, times: 3 }));
    }

    #[test]
    fn a_five_call_sequence_is_found_and_six_is_not() {
        let calls: Vec<_> = (0..6).map(|i| read(&format!("f{i}"))).collect();
        let mut d = LoopDetector::default();
        let five: Vec<_> = calls[..5].iter().cloned().cycle().take(15).collect();
        assert_eq!(
            feed(&mut d, &five)[14].as_ref().map(|l| l.kind.clone()),
            Some(LoopKind::Pattern { length: 5, times: 3 })
        );
        let mut d = LoopDetector::default();
        let six: Vec<_> = calls.iter().cloned().cycle().take(18).collect();
        assert!(feed(&mut d, &six).iter().all(Option::is_none));
    }

    #[test]
    fn a_pattern_seen_twice_is_not_yet_a_loop() {
        let mut d = LoopDetector::default();
        let (a, b, c) = (read("a"), read("b"), read("c"));
        assert!(feed(&mut d, &[a.clone(), b.clone(), c.clone(), a, b, c]).iter().all(Option::is_none));
    }

    #[test]
    fn a_loop_is_reported_once_then_counting_restarts() {
        let mut d = LoopDetector::default();
        let out = feed(&mut d, &[read("a"), read("a"), read("a"), read("a"), read("a"), read("a")]);
        let reported: Vec<bool> = out.iter().map(Option::is_some).collect();
        assert_eq!(reported, [false, false, true, false, false, true]);
    }

    #[test]
    fn long_arguments_are_cut_in_the_description() {
        let mut d = LoopDetector::default();
        let big = json!({"content": "x".repeat(5000)});
        let found = feed(&mut d, &[("Write", big.clone()), ("Write", big.clone()), ("Write", big)]);
        let description = found[2].as_ref().map(|l| l.description.clone()).unwrap_or_default();
        assert!(description.chars().count() < 200, "{description}");
    }
}

//! The crash-consistency harness: start `ralph --resume-or-start` on a scripted
//! multi-phase run, SIGKILL it at a random moment, look at what it left on disk,
//! start it again, until a ralph ends by itself; then audit the whole history.
//!
//! After every kill: the checkpoint parses, its counters and its position never go
//! backwards, and no agent process of the run is left. At the end: the run is
//! completed (exit 0), no iteration the checkpoint had recorded done ran again,
//! each iteration succeeded once in the journal, and every attempt in the journal
//! is accounted for: by an outcome line, by `attempt_interrupted` when the next
//! ralph found it in flight, or by the checkpoint when the kill fell between the
//! checkpoint that recorded its outcome and the journal line.
//!
//! Other tests reuse it with their own [`Scenario`]: anything that writes state
//! must survive a kill at every instant.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::harness::{Output, Project, Running, alive, fast};

/// A small deterministic generator (splitmix64): the kill moments of a seed are
/// the same on every machine, so a failure can be replayed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A duration in `[0, max]`.
    pub(crate) fn below(&mut self, max: Duration) -> Duration {
        let ms = max.as_millis().max(1) as u64;
        Duration::from_millis(self.next() % (ms + 1))
    }
}

/// The seed from `var` when set (to replay a failure), else from the clock;
/// printed either way.
pub(crate) fn seed(var: &str) -> u64 {
    let seed = std::env::var(var).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("crash harness seed: {seed} (replay with {var}={seed})");
    seed
}

/// A `usize` from the environment, or `default`.
pub(crate) fn env_count(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// A run to crash: its config and what it takes to complete.
pub(crate) struct Scenario {
    pub config: String,
    /// Phase names in order.
    pub phases: Vec<&'static str>,
    /// Iterations of the whole run.
    pub iterations: u64,
    /// Kill moments are drawn from `[0, max_delay]` after each start.
    pub max_delay: Duration,
}

/// plan (1 iteration), develop (3), review (1); the agent's launches take turns
/// between success, a crash (an `agent` failure) and a 529 (`environmental`), each
/// attempt with a tool call, a file write and a cost.
pub(crate) fn multi_phase() -> Scenario {
    multi_phase_with("30ms")
}

/// [`multi_phase`] with each successful attempt's tool call taking `tool`.
pub(crate) fn multi_phase_with(tool: &str) -> Scenario {
    let ok = &r#"steps = [
  { say = "working" },
  { tool = { name = "Bash", input = { command = "make" }, result = "ok", duration = "TOOL" } },
  { write = { path = "work.txt", content = "w" } },
  { usage = { input_tokens = 10, output_tokens = 5, cost_usd = 0.01 } },
  { done = "finished" },
]"#
    .replace("TOOL", tool);
    let crash = r#"steps = [{ sleep = "20ms" }, { crash = "SIGSEGV" }]"#;
    let overloaded =
        r#"steps = [{ error = "API Error: 529 Overloaded. This is a server-side issue, usually temporary" }]"#;
    let scripts = [ok, crash, ok, ok, overloaded, ok, ok, crash, ok];
    let mut body = String::from("[agents.a]\nkind = \"sim\"\n");
    for s in scripts {
        body.push_str(&format!("\n[[agents.a.script]]\n{s}\n"));
    }
    body.push_str(
        r#"
[chains]
main = ["a"]

[general.workflow]
phases = ["plan", "develop", "review"]

[phases.plan]
chain = "main"

[phases.develop]
chain = "main"
iterations = 3

[phases.review]
chain = "main"
"#,
    );
    Scenario {
        config: fast("agent_attempts = 10\nambiguous_attempts = 10", "", &body),
        phases: vec!["plan", "develop", "review"],
        iterations: 5,
        max_delay: Duration::from_millis(700),
    }
}

/// What one look at the checkpoint found.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub run_id: String,
    /// (pass, phase index, iteration): where the next attempt belongs.
    pub position: (u64, u64, u64),
    pub attempts: u64,
    pub iterations_done: u64,
    pub launches: u64,
    pub failures: u64,
    pub fallovers: u64,
    pub elapsed: f64,
    pub cost: f64,
    pub in_flight: Option<u64>,
    pub status: String,
}

impl Observed {
    /// Panics unless nothing went backwards since `before`.
    #[track_caller]
    pub(crate) fn not_behind(&self, before: &Observed, context: &str) {
        if self.run_id != before.run_id {
            return;
        }
        let pairs = [
            ("attempts", self.attempts, before.attempts),
            ("iterations_done", self.iterations_done, before.iterations_done),
            ("launches", self.launches, before.launches),
            ("failures", self.failures, before.failures),
            ("fallovers", self.fallovers, before.fallovers),
        ];
        for (name, now, then) in pairs {
            assert!(now >= then, "{context}: counter {name} went back from {then} to {now}\n{self:#?}\n{before:#?}");
        }
        assert!(self.position >= before.position, "{context}: position went back\n{self:#?}\n{before:#?}");
        assert!(self.elapsed >= before.elapsed, "{context}: elapsed time went back");
        assert!(self.cost >= before.cost - 1e-9, "{context}: cost went back");
    }
}

/// Reads the checkpoint, which must parse whenever it exists (or the journal's newer
/// snapshot of it).
#[track_caller]
pub(crate) fn observe(p: &Project, phases: &[&str]) -> Option<Observed> {
    let text = fs::read_to_string(p.checkpoint_path()).ok()?;
    let file: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("the checkpoint does not parse: {e}\n{text}"));
    // A kill between the journal's snapshot and the rename leaves the newer save in
    // the journal; the next ralph resumes from it (`state::format::read_newest`).
    let snapshot = journal_lines(p).into_iter().flatten().rfind(|e| e["kind"] == "checkpoint");
    let snapshot = snapshot.map(|e| e["checkpoint"].clone());
    let cp = match snapshot {
        Some(s) if s["run_id"] == file["run_id"] && s["seq"].as_u64() > file["seq"].as_u64() => s,
        _ => file,
    };
    assert_eq!(cp["version"], 1, "{cp:#}");
    let u = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v} in {cp:#}"));
    let pos = &cp["progress"]["position"];
    let phase =
        phases.iter().position(|n| pos["phase_name"] == *n).unwrap_or_else(|| panic!("unknown phase in {cp:#}")) as u64;
    let c = &cp["progress"]["counters"];
    let sum = |v: &Value| v.as_object().map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
    Some(Observed {
        run_id: cp["run_id"].as_str().unwrap_or_default().to_string(),
        position: (u(&pos["pass"]), phase, u(&pos["iteration"])),
        attempts: u(&c["attempts"]),
        iterations_done: u(&c["iterations_done"]),
        launches: sum(&cp["progress"]["launches"]),
        failures: sum(&c["failures"]),
        fallovers: u(&c["fallovers"]),
        elapsed: cp["elapsed_secs"].as_f64().unwrap_or(0.0),
        cost: cp["usage"]["cost_usd"].as_f64().unwrap_or(0.0),
        in_flight: cp["in_flight"]["attempt"].as_u64(),
        status: cp["status"].as_str().unwrap_or_default().to_string(),
    })
}

/// Live processes that carry the run's id (agents and what they started).
pub(crate) fn processes_of_run(run_id: &str) -> Vec<i32> {
    let needle = format!("RALPH_RUN_ID={run_id}");
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// Panics if a process of the run is still alive after a short grace (the
/// parent-death signal is delivered asynchronously).
#[track_caller]
pub(crate) fn assert_no_agent_left(run_id: &str, context: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_of_run(run_id);
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            for pid in &left {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
            }
            panic!("{context}: processes of run {run_id} outlived ralph: {left:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// One start of ralph in the history of a crashed run.
#[derive(Debug)]
pub(crate) struct Life {
    /// Whether the harness killed it (else it ended by itself).
    pub killed: bool,
    /// The signal it was stopped with, when stopped: SIGKILL, or SIGTERM as a job
    /// engine's eviction sends (an orderly stop, exit 143).
    pub signal: Option<Signal>,
    /// The checkpoint right after it ended.
    pub after: Option<Observed>,
    /// Lines in the journal right after it ended: what later ralphs wrote follows.
    pub journal_len: usize,
}

/// The history of one run driven to completion through kills.
#[derive(Debug)]
pub(crate) struct History {
    pub lives: Vec<Life>,
    pub last: Output,
}

impl History {
    pub(crate) fn kills(&self) -> usize {
        self.lives.iter().filter(|l| l.killed).count()
    }
}

/// Starts `ralph --resume-or-start` (plus `extra` arguments), kills it with SIGKILL
/// after a random delay, checks what is on disk, and starts it again, until one
/// ralph ends by itself; at most `max_kills` kills, after which the run goes on
/// undisturbed. Panics (with the seed printed earlier) on any broken invariant.
pub(crate) fn crash_until_done(p: &Project, s: &Scenario, rng: &mut Rng, max_kills: usize) -> History {
    restart_until_done(p, s, rng, max_kills, 0)
}

/// [`crash_until_done`] as a job engine does it: a share (`sigterm_percent`) of
/// the stops are SIGTERM (an eviction: ralph stops in order and exits 143), the
/// rest SIGKILL (a node's death); every stop is followed by a new start.
pub(crate) fn restart_until_done(
    p: &Project,
    s: &Scenario,
    rng: &mut Rng,
    max_kills: usize,
    sigterm_percent: u64,
) -> History {
    let mut lives: Vec<Life> = Vec::new();
    let mut last_seen: Option<Observed> = None;
    loop {
        let killing = lives.iter().filter(|l| l.killed).count() < max_kills;
        let run = p.ralph().args(["--resume-or-start"]).timeout(Duration::from_secs(60)).spawn();
        let signal = if rng.next() % 100 < sigterm_percent { Signal::SIGTERM } else { Signal::SIGKILL };
        let (killed, out) =
            if killing { stop_later(run, rng.below(s.max_delay), signal) } else { (false, Some(run.finish())) };
        let context = format!("life {} ({})", lives.len() + 1, if killed { signal.as_str() } else { "ended" });
        let after = observe(p, &s.phases);
        if let Some(now) = &after {
            if let Some(before) = &last_seen {
                now.not_behind(before, &context);
            }
            assert_no_agent_left(&now.run_id, &context);
            last_seen = Some(now.clone());
        }
        lives.push(Life { killed, signal: killed.then_some(signal), after, journal_len: journal_lines(p).len() });
        if let Some(out) = out {
            return History { lives, last: out };
        }
    }
}

/// Sends `signal` to ralph alone (as the OOM killer, a node's death or a kubelet
/// would) after `delay`, unless it ended first.
fn stop_later(mut run: Running, delay: Duration, signal: Signal) -> (bool, Option<Output>) {
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if run.exited() {
            return (false, Some(run.finish()));
        }
        thread::sleep(Duration::from_millis(2));
    }
    if run.exited() {
        return (false, Some(run.finish()));
    }
    run.signal(signal);
    let out = run.wait(Duration::from_secs(30));
    // It may have ended by itself in the last instant.
    let stopped = match signal {
        Signal::SIGKILL => out.signal == Some(9),
        // 143 after an orderly stop; killed by the signal itself when it came
        // before ralph installed its handlers (nothing had started yet).
        _ => out.code == Some(143) || out.signal == Some(signal as i32),
    };
    if stopped { (true, None) } else { (false, Some(out)) }
}

/// Every line of the journal with its line number; lines torn by a kill are `None`.
pub(crate) fn journal_lines(p: &Project) -> Vec<Option<Value>> {
    let text = fs::read_to_string(p.join(".agent/events.jsonl")).unwrap_or_default();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str::<Value>(l).ok()).collect()
}

/// Audits a finished history: completion, exactly-once work, accounting.
#[track_caller]
pub(crate) fn audit(p: &Project, s: &Scenario, h: &History) {
    h.last.expect_code(0);
    let last = observe(p, &s.phases).expect("a checkpoint");
    assert_eq!(last.status, "completed");
    assert_eq!(last.iterations_done, s.iterations, "{last:#?}");
    assert_no_agent_left(&last.run_id, "the end");

    let lines = journal_lines(p);
    let torn = lines.iter().filter(|l| l.is_none()).count();
    assert!(torn <= h.kills(), "{torn} torn journal lines for {} kills", h.kills());
    // Only the last run id counts: a ralph killed before its first checkpoint left
    // a `run_started` of a run that never got further.
    let from = lines.iter().rposition(|l| l.as_ref().is_some_and(|e| e["kind"] == "run_started")).unwrap_or(0);
    let journal: Vec<(usize, &Value)> =
        lines.iter().enumerate().skip(from).filter_map(|(i, l)| l.as_ref().map(|e| (i, e))).collect();
    let phase_of = |e: &Value| -> u64 {
        s.phases.iter().position(|n| e["phase"] == *n).unwrap_or_else(|| panic!("unknown phase in {e}")) as u64
    };
    let mine: Vec<&Life> =
        h.lives.iter().filter(|l| l.after.as_ref().is_some_and(|o| o.run_id == last.run_id)).collect();

    // attempt -> ((phase, iteration), journal line)
    let mut started: BTreeMap<u64, ((u64, u64), usize)> = BTreeMap::new();
    let mut outcomes: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut succeeded: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut last_attempt = 0;
    for (line, e) in &journal {
        let kind = e["kind"].as_str().unwrap_or_default();
        let Some(n) = e["attempt"].as_u64() else { continue };
        match kind {
            "attempt_started" => {
                assert!(n > last_attempt, "attempt numbers go back: {n} after {last_attempt}");
                last_attempt = n;
                let at = (phase_of(e), e["iteration"].as_u64().unwrap_or(0));
                assert!(!succeeded.contains_key(&at), "attempt {n} runs {at:?} again after it succeeded");
                // No iteration a checkpoint had recorded done runs again: an attempt
                // journaled after a kill belongs to that checkpoint's position or later.
                for life in mine.iter().filter(|l| l.journal_len <= *line) {
                    let o = life.after.as_ref().map(|o| (o.position.1, o.position.2)).unwrap_or_default();
                    assert!(at >= o, "attempt {n} runs {at:?}, behind the checkpoint's {o:?} seen before it");
                }
                started.insert(n, (at, *line));
            }
            "attempt_succeeded" | "attempt_failed" | "attempt_interrupted" => {
                outcomes.entry(n).or_default().push(kind.to_string());
                if kind == "attempt_succeeded" {
                    let (at, _) = *started.get(&n).unwrap_or_else(|| panic!("attempt {n} succeeded without starting"));
                    *succeeded.entry(at).or_insert(0) += 1;
                }
            }
            _ => {}
        }
    }
    for (at, count) in &succeeded {
        assert_eq!(*count, 1, "iteration {at:?} succeeded {count} times");
    }
    assert!(last.attempts >= last_attempt, "the checkpoint counts fewer attempts than the journal");
    // Every attempt: one outcome line, or the kill fell between the checkpoint that
    // recorded its outcome and the line (that checkpoint has nothing in flight).
    let killed: Vec<&Observed> = mine.iter().filter(|l| l.killed).filter_map(|l| l.after.as_ref()).collect();
    for (n, (_, line)) in &started {
        match outcomes.get(n).map_or(0, Vec::len) {
            1 => {}
            0 => {
                // From the ralph that ran it (the first life whose journal ends past
                // the attempt's start) on, the first checkpoint that no longer holds
                // it in flight recorded its end, and that ralph was killed before the
                // line that follows the save: nothing in flight, no later attempt.
                let ran = mine.iter().position(|l| l.journal_len > *line).unwrap_or(mine.len());
                let life = mine[ran..].iter().find(|l| l.after.as_ref().is_none_or(|o| o.in_flight != Some(*n)));
                let explained = life.is_some_and(|l| {
                    l.killed && l.after.as_ref().is_some_and(|o| o.in_flight.is_none() && o.attempts == *n)
                });
                assert!(explained, "attempt {n} has no outcome and no kill explains it: {life:#?}");
            }
            k => panic!("attempt {n} has {k} outcome lines: {:?}", outcomes[n]),
        }
    }
    let stopped_in_order: BTreeSet<u64> = journal
        .iter()
        .filter(|(_, e)| e["kind"] == "attempt_interrupted" && e["signal"].is_string())
        .filter_map(|(_, e)| e["attempt"].as_u64())
        .collect();
    for (n, kinds) in &outcomes {
        if kinds.iter().any(|k| k == "attempt_interrupted") && !stopped_in_order.contains(n) {
            assert!(
                killed.iter().any(|o| o.in_flight == Some(*n)),
                "attempt {n} journaled as interrupted, but no kill left it in flight"
            );
        }
    }
}

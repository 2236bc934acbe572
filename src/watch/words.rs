//! Every decision of the watchdog in words: one [`Decision`] per run and pass, the
//! line `ralph watch` prints (`ralph watch: DIR: WORD: REASON`) and what `ralph
//! status --all` shows as the run's last decision. Pure: a function of the verdict
//! and what the pass found; the times are shown in the zone given.
//!
//! A reason holds no age and no countdown, only fixed times: an unchanged decision
//! reads the same at every pass, so a long-running watcher prints it once
//! (docs/operations.md lists every decision and its words).

use std::path::Path;
use std::time::Duration;

use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use super::decide::{Left, Seen, Verdict};
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::state::registry::Entry;

/// What the watchdog did or will do about a run, in one word (stable: `status
/// --all --json` carries it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Word {
    /// A `ralph --resume` was started for it.
    Resumed,
    /// It will be resumed once a backoff ends (or a slot is free).
    Waiting,
    /// Not in this boot: after the next one, or by hand.
    NextBoot,
    /// Marked `blocked`: a person must act.
    Blocked,
    /// Not the watchdog's to resume (running, paused, finished, gone, another run).
    LeftAlone,
    /// Interrupted too long ago (`[watch] max_age`): left for a person.
    Stale,
    /// `ralph watch --hold` is in force.
    Held,
}

impl Word {
    fn phrase(self) -> &'static str {
        match self {
            Word::Resumed => "resumed",
            Word::Waiting => "waiting",
            Word::NextBoot => "waiting until the next boot",
            Word::Blocked => "blocked",
            Word::LeftAlone => "left alone",
            Word::Stale => "stale",
            Word::Held => "held",
        }
    }
}

/// When the watchdog will look at resuming the run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Again {
    /// At this unix second (a backoff's end).
    At(i64),
    /// After the next boot.
    #[serde(rename = "next_boot")]
    Boot,
    /// Once `ralph watch --release` lifts the hold.
    Release,
    /// At its next pass (a slot among `--max-concurrent`).
    #[serde(rename = "next_pass")]
    Pass,
}

/// One decision about one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Decision {
    pub word: Word,
    /// Why, in a sentence (no ages: the same decision reads the same).
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Again>,
}

impl Decision {
    pub(crate) fn new(word: Word, reason: impl Into<String>, next: Option<Again>) -> Self {
        Self { word, reason: reason.into(), next }
    }

    /// `WORD: REASON`, the word with its time when it waits for one.
    pub(crate) fn render(&self, tz: &TimeZone) -> String {
        let word = match (self.word, self.next) {
            (Word::Waiting, Some(Again::At(at))) => format!("waiting until {}", at_local(at, tz)),
            (word, _) => word.phrase().to_string(),
        };
        format!("{word}: {}", self.reason)
    }

    /// When the next attempt will be, for `status --all`.
    pub(crate) fn next_attempt(&self, tz: &TimeZone) -> Option<String> {
        Some(match self.next? {
            Again::At(at) => at_local(at, tz),
            Again::Boot => "after the next boot".to_string(),
            Again::Release => "after `ralph watch --release`".to_string(),
            Again::Pass => "at the watchdog's next pass".to_string(),
        })
    }
}

/// What the words need beyond the verdict.
pub(crate) struct About<'a> {
    pub entry: &'a Entry,
    pub checkpoint: Option<Seen<'a>>,
    /// Since when `ralph watch --hold` is in force, as stored (RFC 3339).
    pub held_since: Option<&'a str>,
    pub tz: &'a TimeZone,
}

/// The decision a verdict is, before the pass carries it out (a resume and a block
/// have their own words once done: [`resumed`], [`blocked`]).
pub(crate) fn decision(verdict: &Verdict, a: &About<'_>) -> Decision {
    let mut d = decision_of(verdict, a);
    if a.entry.fleet_supervisor() {
        // A fleet is continued with `ralph fleet`, and its state is the fleet's.
        d.reason = d
            .reason
            .replace("`ralph --resume` in it", "`ralph fleet` in it")
            .replace(".agent/checkpoint.json", ".agent/fleet/fleet.json");
    }
    d
}

fn decision_of(verdict: &Verdict, a: &About<'_>) -> Decision {
    let resume_by_hand = "`ralph --resume` in it continues it";
    match verdict {
        Verdict::Live => Decision::new(Word::LeftAlone, "a ralph is running it", None),
        Verdict::Leave { why, .. } => Decision::new(Word::LeftAlone, left(*why), None),
        Verdict::Gone => {
            Decision::new(Word::LeftAlone, "the directory is gone; `ralph status --prune` removes the entry", None)
        }
        Verdict::Stale { last_active } => Decision::new(
            Word::Stale,
            format!(
                "{}, last active {}, longer ago than [watch] max_age ({}); {resume_by_hand}",
                interrupted(a.checkpoint),
                at_local(*last_active, a.tz),
                human(a.entry.max_age_secs)
            ),
            None,
        ),
        Verdict::Held => {
            let since = a.held_since.map(|at| format!(" since {}", crate::text::clock::stamp(at, a.tz)));
            Decision::new(
                Word::Held,
                format!(
                    "{}; `ralph watch --hold` is in force{}: `ralph watch --release` lets the watchdog resume it",
                    interrupted(a.checkpoint),
                    since.unwrap_or_default()
                ),
                Some(Again::Release),
            )
        }
        Verdict::Wait { until } => Decision::new(
            Word::Waiting,
            format!(
                "{}; the watchdog resumed it before and it stopped again without a clean stop: it waits [watch] \
                 restart_backoff ({}), doubling per such resume",
                interrupted(a.checkpoint),
                human(a.entry.restart_backoff_secs)
            ),
            Some(Again::At(*until)),
        ),
        Verdict::OncePerBoot => Decision::new(
            Word::NextBoot,
            format!(
                "{}; the watchdog resumed it in this boot already and it stopped again without finishing an \
                 iteration; {resume_by_hand} now",
                interrupted(a.checkpoint)
            ),
            Some(Again::Boot),
        ),
        Verdict::BootCap { resumes, cap } => Decision::new(
            Word::NextBoot,
            format!(
                "{}; the watchdog resumed {resumes} run(s) in this boot, as many as [watch] max_resumes_per_boot \
                 ({cap}) allows; {resume_by_hand} now",
                interrupted(a.checkpoint)
            ),
            Some(Again::Boot),
        ),
        Verdict::Block(why) => Decision::new(Word::Blocked, why.clone(), None),
        Verdict::Resume { .. } => Decision::new(Word::Resumed, interrupted(a.checkpoint), None),
        Verdict::OtherRun(why) => Decision::new(
            Word::LeftAlone,
            format!(
                "the run {} registered here is not there any more: {why}; `ralph status --prune` removes the entry",
                a.entry.run_id
            ),
            None,
        ),
        Verdict::Duplicate { first } => {
            Decision::new(Word::LeftAlone, format!("the same run as {}, decided there", first.display()), None)
        }
    }
}

/// A resume that was started.
pub(crate) fn resumed(cp: Seen<'_>, restarts: u32, max_restarts: u32, log: &Path) -> Decision {
    Decision::new(
        Word::Resumed,
        format!(
            "{}; run {}, resume {restarts} of at most {max_restarts} in a row without a clean stop ([watch] \
             max_restarts); its output is in {}",
            interrupted(Some(cp)),
            cp.run_id,
            log.display()
        ),
        None,
    )
}

/// A resume the watcher could not start.
pub(crate) fn not_started(cp: Seen<'_>, error: &str) -> Decision {
    Decision::new(
        Word::LeftAlone,
        format!("{}; the watchdog could not start `ralph --resume`: {error}", interrupted(Some(cp))),
        Some(Again::Pass),
    )
}

/// A resume that waits for a slot among `--max-concurrent`.
pub(crate) fn no_slot(cp: Seen<'_>, max: usize) -> Decision {
    Decision::new(
        Word::Waiting,
        format!("{}; {max} resumed run(s) are still starting (--max-concurrent)", interrupted(Some(cp))),
        Some(Again::Pass),
    )
}

/// A run marked `blocked`, with the processes of it that were ended.
pub(crate) fn blocked(why: &str, ended: usize) -> Decision {
    let ended = match ended {
        0 => String::new(),
        n => format!(" (ended {n} process(es) the run had left running)"),
    };
    Decision::new(Word::Blocked, format!("{why}{ended}"), None)
}

fn left(why: Left) -> &'static str {
    match why {
        Left::OutsideRoots => "outside the --root directories the watchdog was given",
        Left::NoCheckpoint => "its .agent/checkpoint.json is missing or does not parse",
        Left::ShutdownNotResumed => {
            "interrupted by a shutdown or a closed terminal, and its [watch] resume_after_shutdown is off; \
             `ralph --resume` in it continues it"
        }
        Left::Paused => {
            "paused (Ctrl+C, `ralph stop`, or a SIGTERM sent by a process of yours); `ralph --resume` in it \
             continues it"
        }
        Left::Completed => "completed",
        Left::Failed => "failed (a cap or budget ran out); `ralph --resume` in it retries with a fresh budget",
        Left::Blocked => "blocked: a person must act (`ralph status` in it says why)",
        Left::FleetTask => "a fleet's task: its fleet's supervisor resumes it (`ralph fleet status` in its repository)",
    }
}

/// How the run was interrupted, from its checkpoint.
fn interrupted(cp: Option<Seen<'_>>) -> String {
    let Some(cp) = cp else { return "interrupted".to_string() };
    match (cp.status, cp.stop_cause) {
        (Status::Interrupted, Some(StopCause::Hangup)) => "interrupted when its terminal closed (SIGHUP)".to_string(),
        (Status::Interrupted, _) => "interrupted by a shutdown or a service manager (SIGTERM)".to_string(),
        _ => "interrupted without a clean stop (a crash, a kill or a reboot)".to_string(),
    }
}

fn at_local(unix: i64, tz: &TimeZone) -> String {
    jiff::Timestamp::from_second(unix)
        .map_or_else(|_| format!("unix second {unix}"), |at| crate::text::clock::stamp_at(at, tz))
}

/// A duration as a config file spells it: `24h`, `30s`, `1h 30m`.
fn human(secs: u64) -> String {
    crate::text::clock::spelled(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::checkpoint::Checkpoint;
    use crate::state::identity::Mismatch;

    fn entry() -> Entry {
        serde_json::from_value(serde_json::json!({
            "dir": "/home/me/project", "run_id": "20261201T054329Z-12180", "pid": 1, "host": "h",
            "boot_id": "b", "status": "running", "updated_at": ""
        }))
        .expect("entry")
    }

    /// Every decision the watchdog can print, as a person reads it.
    #[test]
    fn every_decision_in_words() {
        let e = entry();
        let sample = include_str!("../../tests/fixtures/checkpoints/v1-current.json");
        let mut cp: Checkpoint = serde_json::from_str(sample).expect("checkpoint");
        cp.status = Status::Running;
        let mut hup = cp.clone();
        (hup.status, hup.stop_cause) = (Status::Interrupted, Some(StopCause::Hangup));
        let tz = TimeZone::UTC;
        let about =
            |cp| About { entry: &e, checkpoint: Some(Seen::of(cp)), held_since: Some("2026-12-01T08:00:00Z"), tz: &tz };
        let t = 1_796_247_432;
        let verdicts = [
            Verdict::Live,
            Verdict::Leave { why: Left::Paused, reset: true },
            Verdict::Leave { why: Left::ShutdownNotResumed, reset: true },
            Verdict::Leave { why: Left::Completed, reset: true },
            Verdict::Leave { why: Left::Failed, reset: true },
            Verdict::Leave { why: Left::Blocked, reset: true },
            Verdict::Leave { why: Left::NoCheckpoint, reset: false },
            Verdict::Leave { why: Left::OutsideRoots, reset: false },
            Verdict::Leave { why: Left::FleetTask, reset: false },
            Verdict::Gone,
            Verdict::Stale { last_active: t - 90 * 86_400 },
            Verdict::Held,
            Verdict::Wait { until: t },
            Verdict::OncePerBoot,
            Verdict::BootCap { resumes: 20, cap: 20 },
            Verdict::OtherRun(Mismatch::OtherRun { recorded: e.run_id.clone(), found: "20270101T000000Z-1".into() }),
            Verdict::Duplicate { first: "/home/me/real-project".into() },
        ];
        let mut lines: Vec<String> = verdicts.iter().map(|v| decision(v, &about(&cp)).render(&tz)).collect();
        lines.push(decision(&Verdict::OncePerBoot, &about(&hup)).render(&tz));
        lines.push(
            resumed(Seen::of(&cp), 1, 3, Path::new("/home/me/project/.agent/logs/R/watch-resume-X.log")).render(&tz),
        );
        lines.push(not_started(Seen::of(&cp), "permission denied").render(&tz));
        lines.push(no_slot(Seen::of(&cp), 4).render(&tz));
        lines.push(blocked("ralph watch cannot resume this run: ANTHROPIC_API_KEY missing", 2).render(&tz));
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn a_waiting_run_names_its_next_attempt() {
        let tz = TimeZone::UTC;
        let d = Decision::new(Word::Waiting, "x", Some(Again::At(1_796_247_432)));
        assert_eq!(d.next_attempt(&tz).as_deref(), Some("2026-12-02 21:37:12 UTC"));
        assert!(d.render(&tz).starts_with("waiting until 2026-12-02 21:37:12 UTC: "));
        assert_eq!(Decision::new(Word::LeftAlone, "x", None).next_attempt(&tz), None);
    }
}

//! Waiting without spending: a backoff, the offline pause, a full disk, and a stop
//! that ends a wait.

use std::time::Duration;

use crate::control::Inbound;
use crate::recovery::probe::ProbeResult;
use crate::signal::StopCause;
use crate::state::checkpoint::Status;
use crate::step::input::Input;
use crate::step::waits::seen;

use super::{Run, T0, TWO_AGENTS, exited, quiet, timer_secs};

fn overloaded() -> crate::step::input::AttemptReport {
    let mut report = exited(1, None);
    report.output.text_tail = "API Error: 529 {\"type\":\"overloaded_error\"}\n".into();
    report
}

fn probing() -> String {
    format!("{TWO_AGENTS}\n[offline]\nprobe = [\"127.0.0.1:9\"]\ninterval = \"10s\"\n")
}

#[test]
fn a_backoff_is_saved_as_waiting_and_its_end_runs_on() {
    let mut r = Run::started(TWO_AGENTS);
    let effects = r.effects(Input::AttemptEnded(Box::new(exited(0, None))));
    assert_eq!(r.status(), Status::Waiting);
    assert_eq!(timer_secs(&r, &effects), Some(2.0), "the agent backoff");
    // `ralph status` says what the run waits for, and until when.
    let mut live = crate::control::Live::default();
    crate::step::control::live(&r.run, &mut live);
    assert_eq!(live.waiting_for.as_deref(), Some("a backoff before the next attempt"));
    assert_eq!(live.waiting_until, Some(T0 + 2));
    assert_eq!(r.after(2.0).step(Input::Timer), ["show:clear"]);
    assert_eq!(r.status(), Status::Running);
    crate::step::control::live(&r.run, &mut live);
    assert_eq!((live.waiting_for, live.waiting_until), (None, None));
    assert!(r.run.ready());
}

#[test]
fn a_wait_shorter_than_a_reader_could_see_is_shown_not_saved() {
    assert!(!seen(Duration::from_millis(249)));
    assert!(seen(Duration::from_millis(250)));
    let toml = TWO_AGENTS.replace("[chains]", "[retry]\nagent_backoff_base = \"100ms\"\n\n[chains]");
    let mut r = Run::started(&toml);
    let trace = r.ends(exited(0, None));
    assert_eq!(quiet(trace), ["save", "attempt_failed", "retry", "timer"]);
    assert_eq!(r.status(), Status::Running);
}

#[test]
fn no_wait_outlasts_the_run() {
    let toml = TWO_AGENTS.replace("[chains]", "[general]\nmax_runtime = \"1m\"\n\n[chains]");
    let mut r = Run::started(&toml);
    let effects = r.after(59.0).effects(Input::AttemptEnded(Box::new(exited(0, None))));
    assert_eq!(timer_secs(&r, &effects), Some(60.0));
}

#[test]
fn a_stop_or_ralph_stop_ends_a_wait_at_once() {
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.ends(exited(0, None));
    assert_eq!(quiet(r.step(Input::Stop(StopCause::Hangup, None))), ["save", "run_ended", "finish:Stopped(Hangup)"]);
    assert_eq!(r.status(), Status::Interrupted);
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.ends(exited(0, None));
    let trace = quiet(r.step(Input::Control(vec![Inbound::Stop { now: false }])));
    assert_eq!(trace, ["stop_after_iteration", "save", "run_ended", "finish:Stopped(User)"]);
    assert_eq!(r.status(), Status::Paused);
}

#[test]
fn while_offline_the_run_pauses_then_retries_at_once() {
    let mut r = Run::started(&probing());
    assert_eq!(quiet(r.ends(overloaded())), ["save", "attempt_failed", "retry", "probe"]);
    let offline = || Input::Probed(ProbeResult::Offline { last_error: "refused".into() });
    let effects = r.after(1.0).effects(offline());
    assert_eq!(quiet(super::trace(&effects)), ["offline", "save", "timer"]);
    assert_eq!(timer_secs(&r, &effects), Some(11.0), "every [offline] interval");
    assert_eq!((r.status(), r.progress().offline_since), (Status::Waiting, Some(T0 + 1)));
    assert_eq!(r.after(10.0).step(Input::Timer), ["probe"]);
    assert_eq!(quiet(r.step(offline())), ["timer"]);
    let _ = r.after(10.0).step(Input::Timer);
    let trace = quiet(r.after(1.0).step(Input::Probed(ProbeResult::Online)));
    assert_eq!(trace, ["online", "save"]);
    let p = r.progress();
    assert_eq!((p.offline_since, p.counters.retry_streak), (None, 0));
    assert_eq!(r.status(), Status::Running);
    // The interrupted attempt is retried at once, without the backoff.
    assert_eq!(r.step(Input::Next).last().map(String::as_str), Some("launch"));
}

#[test]
fn a_network_that_never_returns_is_bounded_by_the_runs_time() {
    let toml = probing().replace("[offline]", "[general]\nmax_runtime = \"30s\"\n\n[offline]");
    let mut r = Run::started(&toml);
    let _ = r.ends(overloaded());
    let _ = r.after(1.0).step(Input::Probed(ProbeResult::Offline { last_error: "refused".into() }));
    let _ = r.after(10.0).step(Input::Timer);
    let _ = r.step(Input::Probed(ProbeResult::Offline { last_error: "refused".into() }));
    let _ = r.after(10.0).step(Input::Timer);
    let _ = r.step(Input::Probed(ProbeResult::Offline { last_error: "refused".into() }));
    let _ = r.after(10.0).step(Input::Timer);
    let trace = quiet(r.step(Input::Probed(ProbeResult::Offline { last_error: "refused".into() })));
    assert_eq!(trace[0], "cap_reached");
    assert!(r.run.cp.stop_reason.as_deref().is_some_and(|m| m.starts_with("max_runtime exhausted")));
    // The pause does not count against the environmental streak.
    let streak = r.progress().environmental_streak.expect("open");
    assert_eq!(streak.excluded_secs, 30);
}

#[test]
fn a_full_disk_at_the_end_is_waited_out_before_the_final_save() {
    let mut r = Run::started(TWO_AGENTS);
    let _ = r.step(Input::DiskFull { path: "/p/.agent/events.jsonl".into(), free: "0 B".into() });
    let _ = r.step(Input::Stop(StopCause::User, None));
    let trace =
        quiet(r.ends(crate::step::tests::ended(crate::step::input::AttemptEnd::Stopped(StopCause::User), None)));
    // Its events wait for the save that records the stop, as they would anyway.
    assert_eq!(trace, ["timer"]);
    assert_eq!(quiet(r.after(1.0).step(Input::Timer)), ["retry-writes", "attempt_interrupted", "disk_full"]);
    // Still full: a longer backoff; then space is back, and the run ends.
    let effects = r.effects(Input::DiskRetried(Some(("/p/.agent/events.jsonl".into(), "0 B".into()))));
    assert_eq!(timer_secs(&r, &effects), Some(3.0));
    let _ = r.after(2.0).step(Input::Timer);
    let trace = quiet(r.step(Input::DiskRetried(None)));
    assert_eq!(trace, ["disk_space_back", "save", "run_ended", "finish:Stopped(User)"]);
}

#[test]
fn a_full_disk_past_the_runs_time_is_ralphs_own_failure() {
    let toml = TWO_AGENTS.replace("[chains]", "[general]\nmax_runtime = \"1m\"\n\n[chains]");
    let mut r = Run::new(&toml);
    let _ = r.step(Input::Start);
    let _ = r.step(Input::DiskFull { path: "/p/c.json".into(), free: "0 B".into() });
    assert_eq!(r.after(61.0).step(Input::Next), ["fail"]);
}

#[test]
fn the_host_counts_as_evidence_of_an_outage_only_once_it_was_seen_online() {
    use crate::recovery::probe::HOST;
    use crate::recovery::{Category, Rule};
    let started = |heard: Option<ProbeResult>| {
        let mut r = Run::started(TWO_AGENTS);
        if let Some(result) = heard {
            let _ = r.step(Input::Heard(HOST.to_string(), result));
        }
        r
    };
    // Never seen online (a sandbox, CI): a failure is the agent's, with its backoff.
    let mut r = started(Some(ProbeResult::Offline { last_error: "this host has no default route".into() }));
    assert_eq!(quiet(r.ends(exited(1, None))), ["save", "attempt_failed", "retry", "save", "timer"]);
    assert!(r.run.unanswered.contains_key(HOST));
    // Seen online: the failure is checked against the host, and its silence makes it
    // the outage's: no budget, the pause.
    let mut r = started(Some(ProbeResult::Online));
    assert_eq!(quiet(r.ends(exited(1, None))), ["probe"]);
    let trace = quiet(r.after(1.0).step(Input::Probed(ProbeResult::Offline { last_error: "no route".into() })));
    assert_eq!(trace, ["save", "attempt_failed", "retry", "probe"]);
    let last = r.run.cp.last_error.as_ref().map(|e| (e.classification.category, e.classification.rule));
    assert_eq!(last, Some((Category::Environmental, Rule::Offline)));
    assert_eq!(r.progress().counters.agent_failures, 0);
    let trace = quiet(r.step(Input::Probed(ProbeResult::Offline { last_error: "no route".into() })));
    assert_eq!(trace, ["offline", "save", "timer"]);
}

#[test]
fn the_summary_names_a_network_that_never_answered() {
    use crate::recovery::probe::never_online;
    let mut r = Run::started(TWO_AGENTS);
    assert_eq!(never_online(&r.run.answered, &r.run.unanswered), None, "nothing heard yet: nothing said");
    let _ = r.step(Input::Heard(
        "api.example:443".into(),
        ProbeResult::Offline { last_error: "api.example:443: refused".into() },
    ));
    let words = never_online(&r.run.answered, &r.run.unanswered).unwrap_or_default();
    assert!(words.starts_with("no provider answered since the start (api.example:443: refused)"), "{words}");
    let _ = r.step(Input::Heard("api.example:443".into(), ProbeResult::Online));
    assert_eq!(never_online(&r.run.answered, &r.run.unanswered), None);
}

//! When a rate or usage limit resets, as the agent reported it: the structured
//! rate-limit event first, then the known text forms of each CLI. Pure: the caller
//! passes `now`, so every form is testable with a fixed clock.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use crate::agent::AgentEvent;

/// A reset time and where it was read from (for the journal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reset {
    pub at: Timestamp,
    pub source: &'static str,
}

/// How far ahead a reset may lie; anything later is a misreading (or a limit no run
/// should wait for).
const MAX_AHEAD: SignedDuration = SignedDuration::from_hours(7 * 24);

/// How far in the past a reset may lie and still count as "now" (clock skew between
/// the provider and this machine).
const SKEW: SignedDuration = SignedDuration::from_mins(5);

/// The reset time of the limit the attempt ran into, if the agent reported one.
/// `text` is the attempt's text tail; error results and error events are read too.
/// Values in the past (beyond a little skew) or more than 7 days ahead are ignored,
/// and the next source is tried.
pub(crate) fn reset_time(events: &[AgentEvent], text: &str, now: Timestamp) -> Option<Reset> {
    let structured = events.iter().rev().find_map(|e| match e {
        AgentEvent::RateLimit { resets_at: Some(at), .. } => Some(*at),
        _ => None,
    });
    if let Some(r) = structured.and_then(|s| from_epoch(s, now)) {
        return Some(Reset { at: r, source: "rate_limit_event" });
    }
    // Claude reports its limit in the error result, not on stderr.
    let all = std::iter::once(text).chain(super::classify::error_reports(events)).collect::<Vec<_>>().join("\n");
    let text = all.as_str();
    let lower = text.to_ascii_lowercase();
    let forms: [(&'static str, &dyn Fn() -> Option<Timestamp>); 7] = [
        ("usage_limit_epoch", &|| last_number_after(&lower, "usage limit reached|").and_then(|n| from_epoch(n, now))),
        ("reset_clock", &|| clock_reset(text, &lower, now)),
        ("resets_at", &|| last_number_after(&lower, "resets_at").and_then(|n| from_epoch(n, now))),
        ("resets_in_seconds", &|| last_number_after(&lower, "resets_in_seconds").and_then(|n| after_secs(n, now))),
        ("try_again_in", &|| last_duration_after(&lower, "try again in ").and_then(|d| after(d, now))),
        ("retry_in", &|| last_duration_after(&lower, "retry in ").and_then(|d| after(d, now))),
        ("retry_after", &|| last_number_after(&lower, "retry-after").and_then(|n| after_secs(n, now))),
    ];
    forms.iter().find_map(|(source, read)| read().map(|at| Reset { at, source }))
}

/// Accepts `at` when it lies within [now − skew, now + 7 days]; a slightly past
/// reset means "now".
fn sane(at: Timestamp, now: Timestamp) -> Option<Timestamp> {
    let ahead = at.duration_since(now);
    if ahead > MAX_AHEAD || ahead < -SKEW { None } else { Some(at.max(now)) }
}

/// Epoch seconds; milliseconds are recognised by their size (a seconds value that
/// large lies thousands of years ahead).
fn from_epoch(n: i64, now: Timestamp) -> Option<Timestamp> {
    let secs = if n.unsigned_abs() >= 100_000_000_000 { n / 1000 } else { n };
    sane(Timestamp::from_second(secs).ok()?, now)
}

fn after_secs(n: i64, now: Timestamp) -> Option<Timestamp> {
    after(SignedDuration::from_secs(n), now)
}

fn after(d: SignedDuration, now: Timestamp) -> Option<Timestamp> {
    if d.is_negative() {
        return None;
    }
    sane(now.checked_add(d).ok()?, now)
}

/// The integer after the last `key`, skipping the JSON or header punctuation between
/// them (`"resets_at": 1700000000`, `\"resets_at\":1700000000`, `retry-after: 30`,
/// `"retry-after":"30"`).
fn last_number_after(lower: &str, key: &str) -> Option<i64> {
    lower.rmatch_indices(key).find_map(|(i, _)| {
        let rest = lower[i + key.len()..].trim_start_matches(['"', '\\', ':', '=', ' ', '\t']);
        let digits: &str = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
        // A decimal part ("30.5") is not a whole number of seconds: round up.
        let frac = rest[digits.len()..].strip_prefix('.').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        digits.parse::<i64>().ok().map(|n| if frac { n.saturating_add(1) } else { n })
    })
}

/// The duration after the last `key`: `2s`, `1.5s`, `250ms`, `1m30s`, `6h12m`, or
/// words (`2 hours 5 minutes`, `1 day`).
fn last_duration_after(lower: &str, key: &str) -> Option<SignedDuration> {
    lower.rmatch_indices(key).find_map(|(i, _)| parse_duration(&lower[i + key.len()..]))
}

fn parse_duration(s: &str) -> Option<SignedDuration> {
    let mut rest = s;
    let mut total = 0f64;
    let mut parts = 0;
    loop {
        let trimmed = rest.trim_start_matches([' ', ',']);
        let trimmed = if parts > 0 { trimmed.strip_prefix("and ").unwrap_or(trimmed) } else { trimmed };
        let num_len = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
        let Ok(n) = trimmed[..num_len].parse::<f64>() else { break };
        let after_num = trimmed[num_len..].trim_start();
        let unit_len = after_num.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(after_num.len());
        let unit = &after_num[..unit_len];
        let secs = match unit {
            "ms" | "millisecond" | "milliseconds" => 0.001,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            _ => break,
        };
        total += n * secs;
        parts += 1;
        rest = &after_num[unit_len..];
    }
    (parts > 0 && total.is_finite()).then(|| SignedDuration::from_secs(total.ceil() as i64))
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// Claude's wall-clock forms: "resets 8pm (America/New_York)", "resets 8:30am
/// (Europe/Berlin)", "resets Nov 30, 8pm (UTC)", "will reset at 5pm (Europe/London)".
/// The next occurrence of that time in that zone after `now`. Without a zone the
/// text is not trusted (it would be the zone of whoever printed it).
fn clock_reset(text: &str, lower: &str, now: Timestamp) -> Option<Timestamp> {
    ["resets at ", "reset at ", "resets "].iter().find_map(|key| {
        lower.rmatch_indices(key).find_map(|(i, _)| {
            let start = i + key.len();
            parse_clock(&text[start..], &lower[start..], now)
        })
    })
}

fn parse_clock(orig: &str, lower: &str, now: Timestamp) -> Option<Timestamp> {
    let mut rest = lower;
    let mut date: Option<(i8, i8)> = None;
    if let Some(month) = MONTHS.iter().position(|m| rest.starts_with(m)) {
        let after_name = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic()).trim_start_matches('.');
        let after_name = after_name.trim_start();
        let day_len = after_name.find(|c: char| !c.is_ascii_digit()).unwrap_or(after_name.len());
        let day: i8 = after_name[..day_len].parse().ok()?;
        date = Some((i8::try_from(month + 1).ok()?, day));
        rest = after_name[day_len..].trim_start_matches([',', ' ']);
        rest = rest.strip_prefix("at ").unwrap_or(rest);
    }
    let h_len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let mut hour: i8 = rest[..h_len].parse().ok()?;
    rest = &rest[h_len..];
    let mut minute: i8 = 0;
    let has_minutes = rest.starts_with(':');
    if let Some(r) = rest.strip_prefix(':') {
        let m_len = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if m_len != 2 {
            return None;
        }
        minute = r[..m_len].parse().ok()?;
        rest = &r[m_len..];
    }
    let rest_t = rest.trim_start();
    // Some(true) for "pm".
    let meridiem = ["am", "pm"].iter().position(|m| rest_t.starts_with(m)).map(|i| i == 1);
    let rest_after = if meridiem.is_some() { &rest_t[2..] } else { rest_t };
    match meridiem {
        Some(pm) => {
            if !(1..=12).contains(&hour) {
                return None;
            }
            hour = hour % 12 + if pm { 12 } else { 0 };
        }
        // A bare number without minutes ("resets 5 times") is not a clock time.
        None if !has_minutes => return None,
        None => {}
    }
    let zone_open = rest_after.trim_start().strip_prefix('(')?;
    let zone_len = zone_open.find(')')?;
    // The zone name keeps its case: take it from the original text at the same offset.
    let zone_start = orig.len() - zone_open.len();
    let zone = orig.get(zone_start..zone_start + zone_len)?.trim();
    let tz = TimeZone::get(zone).ok()?;
    let time = Time::new(hour, minute, 0, 0).ok()?;
    let today = now.to_zoned_datetime(tz.clone()).date();
    let candidates: Vec<DateTime> = match date {
        Some((month, day)) => [today.year(), today.year().saturating_add(1)]
            .iter()
            .filter_map(|&y| Date::new(y, month, day).ok())
            .map(|d| d.to_datetime(time))
            .collect(),
        None => [Some(today), today.tomorrow().ok()].into_iter().flatten().map(|d| d.to_datetime(time)).collect(),
    };
    let next = candidates.into_iter().filter_map(|dt| tz.to_timestamp(dt).ok()).find(|&at| at > now)?;
    sane(next, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-01-15T12:00:00Z, a Thursday (07:00 in New York, 13:00 in Berlin).
    fn now() -> Timestamp {
        "2026-01-15T12:00:00Z".parse().unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn text(t: &str) -> Option<Reset> {
        reset_time(&[], t, now())
    }

    fn limit(resets_at: Option<i64>) -> AgentEvent {
        AgentEvent::RateLimit { status: "rejected".into(), resets_at, limit_type: Some("five_hour".into()) }
    }

    #[test]
    fn structured_event_wins_over_text() {
        let at = now().as_second() + 3600;
        let r = reset_time(&[limit(Some(at))], "Please try again in 2s.", now()).unwrap();
        assert_eq!(r, Reset { at: Timestamp::from_second(at).unwrap(), source: "rate_limit_event" });
        // Milliseconds are recognised.
        let r = reset_time(&[limit(Some(at * 1000))], "", now()).unwrap();
        assert_eq!(r.at.as_second(), at);
    }

    #[test]
    fn absurd_structured_values_fall_through_to_text() {
        let past = now().as_second() - 86_400;
        let far = now().as_second() + 8 * 86_400;
        for bad in [past, far, 0, i64::MAX] {
            assert_eq!(reset_time(&[limit(Some(bad))], "", now()), None, "{bad}");
            let r = reset_time(&[limit(Some(bad))], "retry-after: 30", now()).unwrap();
            assert_eq!(r.source, "retry_after");
        }
        assert_eq!(reset_time(&[limit(None)], "", now()), None);
        // A little in the past: skew, reset now.
        let r = reset_time(&[limit(Some(now().as_second() - 60))], "", now()).unwrap();
        assert_eq!(r.at, now());
    }

    #[test]
    fn claude_epoch_suffix() {
        let at = now().as_second() + 5 * 3600;
        let r = text(&format!("Claude AI usage limit reached|{at}")).unwrap();
        assert_eq!((r.at.as_second(), r.source), (at, "usage_limit_epoch"));
        assert_eq!(text("Claude AI usage limit reached|1"), None);
    }

    #[test]
    fn claude_clock_forms() {
        let r = text("You've hit your limit · resets 8pm (America/New_York)").unwrap();
        assert_eq!((r.at, r.source), (ts("2026-01-16T01:00:00Z"), "reset_clock"));
        let r = text("You’ve hit your limit · resets 8:30am (Europe/Berlin)").unwrap();
        // 08:30 in Berlin has passed (it is 13:00 there): tomorrow.
        assert_eq!(r.at, ts("2026-01-16T07:30:00Z"));
        let r = text("5-hour limit reached ∙ resets 3pm (Europe/Berlin)").unwrap();
        assert_eq!(r.at, ts("2026-01-15T14:00:00Z"));
        let r = text("Claude usage limit reached. Your limit will reset at 5pm (Europe/London).").unwrap();
        assert_eq!(r.at, ts("2026-01-15T17:00:00Z"));
        let r = text("resets 12am (UTC)").unwrap();
        assert_eq!(r.at, ts("2026-01-16T00:00:00Z"));
        let r = text("resets 12pm (UTC)").unwrap();
        assert_eq!(r.at, ts("2026-01-16T12:00:00Z"), "12pm today is now, not after it");
        let r = text("resets 18:45 (UTC)").unwrap();
        assert_eq!(r.at, ts("2026-01-15T18:45:00Z"));
    }

    #[test]
    fn claude_clock_with_date() {
        let r = text("You've hit your weekly limit · resets Jan 18, 8pm (UTC)").unwrap();
        assert_eq!(r.at, ts("2026-01-18T20:00:00Z"));
        let r = text("resets Jan 15 at 1pm (UTC)").unwrap();
        assert_eq!(r.at, ts("2026-01-15T13:00:00Z"));
        // Nov 30 lies ten months ahead: rejected.
        assert_eq!(text("resets Nov 30, 8pm (UTC)"), None);
        // Yesterday's date means next year: rejected.
        assert_eq!(text("resets Jan 14, 8pm (UTC)"), None);
    }

    #[test]
    fn claude_clock_needs_a_known_zone_and_a_real_time() {
        assert_eq!(text("resets 8pm"), None);
        assert_eq!(text("resets 8pm (Mars/Olympus_Mons)"), None);
        assert_eq!(text("resets 13pm (UTC)"), None);
        assert_eq!(text("resets 25:00 (UTC)"), None);
        assert_eq!(text("the counter resets 5 times (UTC)"), None);
        assert_eq!(text("resets 8:3pm (UTC)"), None);
    }

    #[test]
    fn dst_gap_is_resolved_forward() {
        // 2026-03-08 02:30 does not exist in New York; "compatible" moves it to 03:30 EDT.
        let now: Timestamp = "2026-03-08T05:00:00Z".parse().unwrap();
        let r = reset_time(&[], "resets 2:30am (America/New_York)", now).unwrap();
        assert_eq!(r.at, ts("2026-03-08T07:30:00Z"));
    }

    #[test]
    fn codex_body_fields() {
        let at = now().as_second() + 7200;
        let body = format!(
            r#"unexpected status 429 Too Many Requests: {{"error":{{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at": {at},"resets_in_seconds":7200}}}}"#
        );
        assert_eq!(text(&body), Some(Reset { at: Timestamp::from_second(at).unwrap(), source: "resets_at" }));
        // As it appears inside a JSON event line (escaped quotes).
        let escaped = body.replace('"', "\\\"");
        assert_eq!(text(&escaped).unwrap().source, "resets_at");
        let r = text(r#"{"error":{"type":"usage_limit_reached","resets_in_seconds":90}}"#).unwrap();
        assert_eq!((r.at, r.source), (ts("2026-01-15T12:01:30Z"), "resets_in_seconds"));
    }

    #[test]
    fn try_again_in_durations() {
        let cases = [
            ("Rate limit reached for requests. Please try again in 2s.", "2026-01-15T12:00:02Z"),
            ("Please try again in 1.054s.", "2026-01-15T12:00:02Z"),
            ("Please try again in 250ms.", "2026-01-15T12:00:01Z"),
            ("Please try again in 6m12s.", "2026-01-15T12:06:12Z"),
            ("Please try again in 1h2m3s.", "2026-01-15T13:02:03Z"),
            ("or try again in 2 hours 5 minutes.", "2026-01-15T14:05:00Z"),
            ("try again in 1 day, 3 hours and 2 minutes", "2026-01-16T15:02:00Z"),
        ];
        for (t, at) in cases {
            let r = text(t).unwrap();
            assert_eq!((r.at, r.source), (ts(at), "try_again_in"), "{t}");
        }
        assert_eq!(text("Please try again later."), None);
        assert_eq!(text("try again in 30 days"), None);
        let r = text("You exceeded your current quota. Please retry in 34.5s.").unwrap();
        assert_eq!((r.at, r.source), (ts("2026-01-15T12:00:35Z"), "retry_in"));
    }

    #[test]
    fn retry_after_header() {
        for t in ["retry-after: 30", "Retry-After: 30\r\n", r#""retry-after":"30""#, r#"\"retry-after\":\"30\""#] {
            let r = text(t).unwrap();
            assert_eq!((r.at, r.source), (ts("2026-01-15T12:00:30Z"), "retry_after"), "{t}");
        }
        assert_eq!(text("retry-after: soon"), None);
        assert_eq!(text("retry-after: 999999999"), None);
    }

    #[test]
    fn error_results_are_read() {
        let result = AgentEvent::Result {
            text: "You've hit your limit · resets 8pm (America/New_York)".into(),
            is_error: true,
            subtype: "success".into(),
            api_error_status: None,
        };
        let r = reset_time(&[result], "", now()).unwrap();
        assert_eq!(r.at, ts("2026-01-16T01:00:00Z"));
        let ok = AgentEvent::Result {
            text: "Please try again in 2s.".into(),
            is_error: false,
            subtype: "success".into(),
            api_error_status: None,
        };
        assert_eq!(reset_time(&[ok], "", now()), None, "a successful result's text is the model's, not an error");
    }

    #[test]
    fn the_last_occurrence_counts() {
        let r = text("Please try again in 2s.\nPlease try again in 20s.").unwrap();
        assert_eq!(r.at, ts("2026-01-15T12:00:20Z"));
    }

    #[test]
    fn nothing_to_read() {
        assert_eq!(text(""), None);
        assert_eq!(text("API Error: 500 Internal server error"), None);
        assert_eq!(text("resets_at: null"), None);
    }
}

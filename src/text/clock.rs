//! Times as a person reads them: local wall-clock time in one zone everywhere (the
//! zone named once, on the first line of a run), countdowns that tick. The journal
//! and the checkpoint keep UTC; only what is shown is converted. Pure: the zone is
//! passed in (the shell reads it once, `report::zone`).

use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// `HH:MM:SS` of `at` in `tz`.
pub(crate) fn hms(at: Timestamp, tz: &TimeZone) -> String {
    at.to_zoned_datetime(tz.clone()).strftime("%H:%M:%S").to_string()
}

/// The zone's name at `at`, as people know it ("CET", "UTC"), or its offset.
pub(crate) fn zone_name(at: Timestamp, tz: &TimeZone) -> String {
    let zoned = at.to_zoned_datetime(tz.clone());
    let abbreviation = zoned.strftime("%Z").to_string();
    if abbreviation.is_empty() { zoned.strftime("%:z").to_string() } else { abbreviation }
}

/// A stored RFC 3339 time as `YYYY-MM-DD HH:MM:SS ZONE` in `tz`; unparsable text as is.
pub(crate) fn stamp(rfc3339: &str, tz: &TimeZone) -> String {
    rfc3339.parse::<Timestamp>().map_or_else(|_| rfc3339.to_string(), |at| stamp_at(at, tz))
}

/// `at` as `YYYY-MM-DD HH:MM:SS ZONE` in `tz`.
pub(crate) fn stamp_at(at: Timestamp, tz: &TimeZone) -> String {
    format!("{} {}", at.to_zoned_datetime(tz.clone()).strftime("%Y-%m-%d %H:%M:%S"), zone_name(at, tz))
}

/// What is left of a wait, to the second: `2h 05m 09s`, `4m 05s`, `9s`.
pub(crate) fn countdown(left: Duration) -> String {
    // Rounded up: a wait with 0.4 s left has not ended, and must not read "0s".
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m {s:02}s"),
        _ => format!("{h}h {m:02}m {s:02}s"),
    }
}

/// A duration as a config file spells it, in whole hours, minutes and seconds:
/// `24h`, `30s`, `1h 30m` (humantime would say `1day`).
pub(crate) fn spelled(d: Duration) -> String {
    let secs = d.as_secs();
    let parts = [(secs / 3600, "h"), (secs / 60 % 60, "m"), (secs % 60, "s")];
    let shown: Vec<String> = parts.iter().filter(|(n, _)| *n > 0).map(|(n, unit)| format!("{n}{unit}")).collect();
    if shown.is_empty() { format!("{}ms", d.as_millis()) } else { shown.join(" ") }
}

/// How long ago, as a person says it: `12s ago`, `5m ago`, `3h 05m ago`, `2 days ago`.
pub(crate) fn ago(secs: i64) -> String {
    let secs = secs.max(0);
    let (d, h, m) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{secs}s ago"),
        (0, 0, _) => format!("{m}m ago"),
        (0, _, _) => format!("{h}h {m:02}m ago"),
        (1, _, _) => "1 day ago".to_string(),
        _ => format!("{d} days ago"),
    }
}

/// A unix second as `YYYY-MM-DD HH:MM:SS ZONE (AGE ago)` in `tz`, seen at `now`.
pub(crate) fn stamp_and_age(at: Timestamp, now: Timestamp, tz: &TimeZone) -> String {
    format!("{} ({})", stamp_at(at, tz), ago(now.as_second() - at.as_second()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn countdowns_count_to_the_second_and_never_show_zero_early() {
        let cases = [
            (Duration::from_millis(400), "1s"),
            (Duration::from_secs(9), "9s"),
            (Duration::from_secs(245), "4m 05s"),
            (Duration::from_secs(7509), "2h 05m 09s"),
            (Duration::ZERO, "0s"),
        ];
        for (d, want) in cases {
            assert_eq!(countdown(d), want, "{d:?}");
        }
    }

    #[test]
    fn durations_are_spelled_as_in_the_config() {
        assert_eq!(spelled(Duration::from_secs(86_400)), "24h");
        assert_eq!(spelled(Duration::from_secs(5400)), "1h 30m");
        assert_eq!(spelled(Duration::from_secs(30)), "30s");
        assert_eq!(spelled(Duration::from_millis(50)), "50ms");
    }

    #[test]
    fn ages_read_as_people_say_them() {
        let cases =
            [(0, "0s ago"), (59, "59s ago"), (300, "5m ago"), (3 * 3600 + 300, "3h 05m ago"), (86_400, "1 day ago")];
        for (secs, want) in cases {
            assert_eq!(ago(secs), want);
        }
        assert_eq!(ago(90 * 86_400), "90 days ago");
        assert_eq!(ago(-5), "0s ago");
    }

    #[test]
    fn stored_times_are_shown_in_the_given_zone() {
        let tz = TimeZone::fixed(jiff::tz::offset(2));
        assert_eq!(stamp("2026-01-01T00:01:00Z", &tz), "2026-01-01 02:01:00 +02");
        assert_eq!(stamp("2026-01-01T00:01:00Z", &TimeZone::UTC), "2026-01-01 00:01:00 UTC");
        assert_eq!(stamp("garbage", &tz), "garbage");
        let at: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        assert_eq!(hms(at, &tz), "02:01:00");
    }
}

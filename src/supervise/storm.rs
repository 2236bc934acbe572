//! The continue storm: too many recoveries of one iteration in a short window.
//!
//! Resuming a session keeps its context, which is usually what we want; but when
//! resumes keep failing in quick succession the context itself is the likely cause
//! (a broken generation the agent keeps picking up). Past the threshold, the next
//! attempt starts a fresh session instead of resuming.

/// Whether `recoveries` (unix seconds of the current iteration's recoveries) hold at
/// least `threshold` entries within `window_secs` before `now`.
///
/// Entries later than `now` count as recent: the wall clock may have stepped back,
/// and a recovery we just made is certainly within the window. A threshold of 0
/// disables the rule rather than making every attempt fresh.
#[must_use]
pub(crate) fn is_storm(recoveries: &[i64], now: i64, window_secs: i64, threshold: usize) -> bool {
    threshold > 0 && recoveries.iter().filter(|&&at| in_window(at, now, window_secs)).count() >= threshold
}

/// Drops the entries that can no longer count, so the list stays small when it is
/// kept in the checkpoint.
pub(crate) fn prune(recoveries: &mut Vec<i64>, now: i64, window_secs: i64) {
    recoveries.retain(|&at| in_window(at, now, window_secs));
}

fn in_window(at: i64, now: i64, window_secs: i64) -> bool {
    now.saturating_sub(at) < window_secs
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT_THRESHOLD: usize = 3;
    const DEFAULT_WINDOW_SECS: i64 = 600;

    const NOW: i64 = 1_700_000_000;

    #[test]
    fn three_recoveries_within_ten_minutes_are_a_storm() {
        let r = [NOW - 500, NOW - 200, NOW - 1];
        assert!(is_storm(&r, NOW, DEFAULT_WINDOW_SECS, DEFAULT_THRESHOLD));
    }

    #[test]
    fn fewer_than_the_threshold_is_not() {
        let r = [NOW - 200, NOW - 1];
        assert!(!is_storm(&r, NOW, DEFAULT_WINDOW_SECS, DEFAULT_THRESHOLD));
        assert!(!is_storm(&[], NOW, DEFAULT_WINDOW_SECS, DEFAULT_THRESHOLD));
    }

    #[test]
    fn old_recoveries_do_not_count() {
        let r = [NOW - 3600, NOW - 600, NOW - 100, NOW - 1];
        assert!(!is_storm(&r, NOW, DEFAULT_WINDOW_SECS, DEFAULT_THRESHOLD));
        assert!(is_storm(&r, NOW, 601, DEFAULT_THRESHOLD));
    }

    #[test]
    fn a_clock_step_back_still_counts_as_recent() {
        let r = [NOW + 30, NOW + 10, NOW - 5];
        assert!(is_storm(&r, NOW, DEFAULT_WINDOW_SECS, DEFAULT_THRESHOLD));
    }

    #[test]
    fn threshold_zero_disables_the_rule() {
        assert!(!is_storm(&[NOW, NOW, NOW], NOW, DEFAULT_WINDOW_SECS, 0));
    }

    #[test]
    fn prune_keeps_only_the_window() {
        let mut r = vec![NOW - 3600, NOW - 600, NOW - 599, NOW];
        prune(&mut r, NOW, DEFAULT_WINDOW_SECS);
        assert_eq!(r, vec![NOW - 599, NOW]);
        prune(&mut r, NOW + 10_000, DEFAULT_WINDOW_SECS);
        assert!(r.is_empty());
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        assert!(is_storm(&[i64::MIN, i64::MIN], i64::MIN, i64::MAX, 2));
        let mut r = vec![i64::MAX];
        prune(&mut r, i64::MAX, i64::MAX);
        assert_eq!(r, vec![i64::MAX]);
    }
}

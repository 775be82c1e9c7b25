//! Numbers, durations and times as the report's labels write them.

/// `v` with three significant digits and an SI prefix for large values (`1.5G`, `0.42`).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    let (scaled, suffix) = match a {
        a if a >= 1e12 => (v / 1e12, "T"),
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let s = scaled.abs();
    let digits = if s == 0.0 || s >= 100.0 {
        0
    } else if s >= 10.0 {
        1
    } else if !(1e-3..1.0).contains(&s) {
        2
    } else {
        3
    };
    let text = format!("{scaled:.digits$}");
    // 1.50 → 1.5, 2.00 → 2
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    // -0.001 shown with three decimals is "-0": zero has no sign
    let text = if text == "-0" { "0".to_string() } else { text };
    format!("{text}{suffix}")
}

/// A duration in seconds as `45s`, `5m`, `1h30m` or `2d`.
pub fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "n/a".into();
    }
    let s = seconds.round() as u64;
    match s {
        0..=119 => format!("{s}s"),
        120..=3599 if s % 60 == 0 => format!("{}m", s / 60),
        120..=3599 => format!("{}m{}s", s / 60, s % 60),
        3600..=172_799 if s % 3600 == 0 => format!("{}h", s / 3600),
        3600..=172_799 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d", number(seconds / 86_400.0)),
    }
}

/// A name cut to at most 24 characters for a plot's label column; plots give the full
/// name in a tooltip.
pub fn short(name: &str) -> String {
    const MAX: usize = 24;
    if name.chars().count() <= MAX {
        name.to_string()
    } else {
        let cut: String = name.chars().take(MAX - 1).collect();
        format!("{cut}…")
    }
}

/// Unix seconds as `2026-01-01 00:00 UTC` ("n/a" outside years 1970–9999).
pub fn utc(unix: f64) -> String {
    /// 10000-01-01T00:00:00Z, where RFC 3339 years end.
    const YEAR_10000: f64 = 253_402_300_800.0;
    if !(0.0..YEAR_10000).contains(&unix) {
        return "n/a".into();
    }
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix as u64);
    let t = humantime::format_rfc3339_seconds(at).to_string();
    format!("{} {} UTC", &t[..10], &t[11..16])
}

/// Unix seconds as the time of day, `HH:MM`, UTC.
pub fn clock(unix: f64) -> String {
    let rest = (unix as i64).rem_euclid(86_400);
    format!("{:02}:{:02}", rest / 3600, rest % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_three_digits_and_take_si_prefixes() {
        assert_eq!(number(0.4213), "0.421");
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(42.0), "42");
        assert_eq!(number(64.4e9), "64.4G");
        assert_eq!(number(-2500.0), "-2500");
        assert_eq!(number(f64::NAN), "n/a");
        assert_eq!(number(-0.0001), "0");
    }

    #[test]
    fn durations_read_as_a_person_writes_them() {
        assert_eq!(duration(45.0), "45s");
        assert_eq!(duration(300.0), "5m");
        assert_eq!(duration(5400.0), "1h30m");
        assert_eq!(duration(3600.0), "1h");
        assert_eq!(duration(86_400.0), "24h");
        assert_eq!(duration(9000.0), "2h30m");
    }

    #[test]
    fn unix_times_are_calendar_dates_in_utc() {
        assert_eq!(utc(1_767_225_600.0), "2026-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400.0 + 3600.0 * 13.5), "2000-02-29 13:30 UTC");
        assert_eq!(clock(1_767_225_600.0 - 90.0), "23:58");
    }
}

//! The clock of a time-bucketed series: step `i` starts at `start + i * step` seconds, and
//! its start is written as `YYYY-MM-DDTHH:MM:SS` (the times `series` reads).

/// The public clock of a time-bucketed series: step `i` starts at `start + i * step`
/// seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// The first step's start, in seconds since 1970-01-01.
    pub start: i64,
    /// The step width in seconds.
    pub step: i64,
}

/// `secs` since 1970-01-01 as `YYYY-MM-DDTHH:MM:SS` (the inverse of the ISO times read;
/// civil from days, Howard Hinnant's algorithm).
pub fn format_time(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

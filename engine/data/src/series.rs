//! Time-series input and output for `kinsey decay`: one value per step from a CSV or Parquet
//! column, clamped to the declared per-step bound (clamping counted); estimates written as
//! (step, estimate) CSV or Parquet.

use crate::columns::is_parquet;
pub use crate::time::{Clock, format_time};
use kinsey_core::{Error, Result};
use std::path::Path;

/// A loaded series.
#[derive(Debug, Clone)]
pub struct Series {
    /// One value per step, clamped to `[0, bound]`.
    pub values: Vec<f64>,
    /// Steps whose value exceeded the bound and was clamped to it.
    pub clamped: usize,
}

/// One value per step from column `column` of a CSV (with a header) or Parquet file.
/// Values must be finite and >= 0; values above `bound` are clamped to it.
pub fn load(path: &Path, column: &str, bound: f64) -> Result<Series> {
    // The chunked reader's checks and clamping, one chunk after another.
    let mut r = crate::stream::SeriesReader::open(path, column, bound, 1 << 20)?;
    let (mut values, mut chunk) = (Vec::new(), Vec::new());
    while r.next_chunk(&mut chunk)? {
        values.extend_from_slice(&chunk);
    }
    Ok(Series {
        values,
        clamped: r.clamped,
    })
}

/// The (step, estimate) table as CSV or Parquet bytes, by the output's extension.
pub fn encode(path: &Path, estimates: &[f64]) -> Result<Vec<u8>> {
    encode_columns(path, &["estimate".to_string()], &[estimates.to_vec()], None)
}

/// A (step, column...) table as CSV or Parquet bytes (the bytes
/// [`SeriesWriter`](crate::stream::SeriesWriter) writes to a file); with a `clock`, each
/// step's start time follows its number.
pub fn encode_columns(
    path: &Path,
    names: &[String],
    cols: &[Vec<f64>],
    clock: Option<Clock>,
) -> Result<Vec<u8>> {
    let mut w = crate::stream::SeriesWriter::new_timed(Vec::new(), path, path, names, clock)?;
    w.write(cols)?;
    Ok(w.into_inner()?.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decay input parser: what loads is finite, in `[0, bound]`, with clamping
    /// counted; nothing panics.
    fn fuzz_series_file(name: &str, seeds: &[&str]) {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join(name);
        kinsey_fuzz::fuzz_text(&format!("decay input {name}"), seeds, |t| {
            std::fs::write(&p, t).map_err(|e| e.to_string())?;
            if let Ok(s) = load(&p, "value", 2.0)
                && (s.values.iter().any(|v| !(0.0..=2.0).contains(v)) || s.clamped > s.values.len())
            {
                return Err(format!("loaded values outside [0, 2]: {:?}", s.values));
            }
            Ok(())
        });
    }

    #[test]
    fn fuzz_series_csv() {
        fuzz_series_file("s.csv", &["value\n1\n0\n2.5\n", "t,value\na,1\nb,7\n"]);
    }

    #[test]
    fn fuzz_series_bits() {
        fuzz_series_file("s.txt", &["0110\n1\n", "1"]);
    }

    /// Time bounds, step widths and predicates: a parsed ISO time has fields in range, a
    /// step is positive, and a time-bucketed series built from them stays within its limit.
    #[test]
    fn fuzz_event_parameters() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("e.csv");
        std::fs::write(&p, "date,delay\n2020-01-01T00:00,3\n2020-01-01T00:05,20\n").expect("w");
        kinsey_fuzz::fuzz_text(
            "decay event parameters",
            &[
                "2020-01-01T00:00 2020-01-01T01:00 1m delay>=15",
                "0 3600 30s delay!=2",
            ],
            |t| {
                let f: Vec<&str> = t.split(' ').collect();
                if f.len() != 4 {
                    return Ok(());
                }
                let (Ok(start), Ok(end), Ok(step), Ok(pred)) = (
                    parse_time("start", f[0]),
                    parse_time("end", f[1]),
                    parse_step(f[2]),
                    Predicate::parse(f[3]),
                ) else {
                    return Ok(());
                };
                if step < 1 {
                    return Err(format!("step {step}"));
                }
                let spec = EventSpec {
                    time_column: Some("date".into()),
                    step_seconds: step,
                    predicate: Some(Predicate {
                        column: "delay".into(),
                        ..pred
                    }),
                    range: Some((start, end)),
                };
                if let Ok(s) = load_events(&p, &spec, 1.0)
                    && s.values.len() as i64 > MAX_EVENT_STEPS
                {
                    return Err(format!("{} steps", s.values.len()));
                }
                Ok(())
            },
        );
    }

    #[test]
    fn csv_column_clamps_and_rejects_bad_values() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("s.csv");
        std::fs::write(&p, "t,count\na,1\nb,7\nc,2.5\n").expect("write");
        let s = load(&p, "count", 5.0).expect("ok");
        assert_eq!(s.values, vec![1.0, 5.0, 2.5]);
        assert_eq!(s.clamped, 1);
        let e = load(&p, "cnt", 5.0).expect_err("missing column");
        assert!(e.to_string().contains("the columns are: t, count"), "{e}");
        std::fs::write(&p, "count\n1\n-2\n").expect("write");
        let e = load(&p, "count", 5.0).expect_err("negative");
        assert!(e.to_string().contains("row 1"), "{e}");
        std::fs::write(&p, "count\n1\nx\n").expect("write");
        assert!(load(&p, "count", 5.0).is_err());
        let bits = dir.path().join("b.txt");
        std::fs::write(&bits, "0110\n1\n").expect("write");
        assert_eq!(
            load(&bits, "", 1.0).expect("bits").values,
            vec![0.0, 1.0, 1.0, 0.0, 1.0]
        );
        std::fs::write(&bits, "012").expect("write");
        assert!(load(&bits, "", 1.0).is_err());
        let out = dir.path().join("o.parquet");
        let bytes = encode(&out, &[1.0, 2.0]).expect("parquet");
        std::fs::write(&out, bytes).expect("write");
        let back = crate::parquet_io::read_column(&out, "estimate").expect("read");
        assert_eq!(back, vec![1.0, 2.0]);
    }
}

/// How to turn an event table into a series: bucket a timestamp column into steps of
/// `step_seconds`, and/or keep only events satisfying a predicate on another column.
#[derive(Debug, Clone, Default)]
pub struct EventSpec {
    /// The timestamp column (`None`: one bit per row that passes the predicate).
    pub time_column: Option<String>,
    /// Step width in seconds.
    pub step_seconds: i64,
    /// Keep only the events that pass it.
    pub predicate: Option<Predicate>,
    /// The public time range `[start, end]` (seconds) of a time-bucketed series: required
    /// with a time column, because the first and last events are private (one added event
    /// a day later would add 1,440 one-minute steps to the output).
    pub range: Option<(i64, i64)>,
}

/// Most steps a time-bucketed series may have (checked before anything is allocated):
/// 2^28 steps are 2 GiB of counts, and the decayed sums' outputs as many again (1970 to
/// 2020 at one-second steps, 1.6e9 steps, would need 12.6 GB for the counts alone).
pub const MAX_EVENT_STEPS: i64 = 1 << 28;

/// Parse a public time bound: ISO `YYYY-MM-DD[T ]HH:MM[:SS]` or integer seconds.
pub fn parse_time(name: &str, s: &str) -> Result<i64> {
    s.trim()
        .parse::<i64>()
        .ok()
        .or_else(|| parse_iso(s))
        .ok_or_else(|| {
            Error::param(
                name,
                format!(
                    "'{s}' is not a time (YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] or integer seconds)"
                ),
            )
        })
}

/// `COLUMN OP NUMBER` with OP one of `>=`, `>`, `<=`, `<`, `==`, `!=`.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    /// The column the predicate reads.
    pub column: String,
    /// The comparison: `<`, `<=`, `>`, `>=`, `==` or `!=`.
    pub op: String,
    /// The number compared with.
    pub value: f64,
}

impl Predicate {
    /// Parse `COLUMN OP NUMBER`, e.g. `delay>=15`.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || {
            Error::param(
                "where",
                format!("'{s}' is not COLUMN OP NUMBER (OP: >= > <= < == !=)"),
            )
        };
        for op in [">=", "<=", "==", "!=", ">", "<"] {
            if let Some((c, v)) = s.split_once(op) {
                let value: f64 = v.trim().parse().map_err(|_| bad())?;
                let column = c.trim().to_string();
                if column.is_empty() {
                    return Err(bad());
                }
                return Ok(Self {
                    column,
                    op: op.to_string(),
                    value,
                });
            }
        }
        Err(bad())
    }

    /// Whether `x` passes.
    pub fn holds(&self, x: f64) -> bool {
        match self.op.as_str() {
            ">=" => x >= self.value,
            ">" => x > self.value,
            "<=" => x <= self.value,
            "<" => x < self.value,
            "==" => x == self.value,
            _ => x != self.value,
        }
    }
}

/// `30s`, `1m`, `15m`, `1h`, `1d` -> seconds.
pub fn parse_step(s: &str) -> Result<i64> {
    let bad = || {
        Error::param(
            "step",
            format!("'{s}' is not a step width like 30s, 1m, 1h or 1d"),
        )
    };
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = num.parse().map_err(|_| bad())?;
    let mult = match unit {
        "s" => 1,
        "m" | "" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    if n < 1 {
        return Err(bad());
    }
    n.checked_mul(mult).ok_or_else(bad)
}

/// Seconds since 1970-01-01 of an ISO local timestamp `YYYY-MM-DD[T ]HH:MM[:SS]`, or of
/// a date `YYYY-MM-DD` (its midnight).
fn parse_iso(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once(['T', ' ']).unwrap_or((s, "00:00"));
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (hh, mm) = (t.next()??, t.next()??);
    let ss = match t.next() {
        None => 0,
        Some(v) => v?,
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let fields_ok = (1..=9999).contains(&y)
        && (1..=12).contains(&m)
        && (1..=month_days[(m - 1) as usize]).contains(&day)
        && (0..=23).contains(&hh)
        && (0..=59).contains(&mm)
        && (0..=60).contains(&ss)
        && t.next().is_none()
        && d.next().is_none();
    if !fields_ok {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// Timestamps (seconds) of a CSV column of ISO strings or a Parquet timestamp/integer column.
fn read_times(path: &Path, column: &str) -> Result<Vec<i64>> {
    if !is_parquet(path) {
        return crate::columns::csv_cells(
            path,
            column,
            parse_iso,
            "a timestamp YYYY-MM-DDTHH:MM[:SS]",
        );
    }
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Int64Type, TimeUnit};
    let (dt, arrays) = crate::parquet_io::read_column_arrays(path, column)?;
    let div = match dt {
        DataType::Timestamp(TimeUnit::Second, _) | DataType::Int64 => 1,
        DataType::Timestamp(TimeUnit::Millisecond, _) => 1_000,
        DataType::Timestamp(TimeUnit::Microsecond, _) => 1_000_000,
        DataType::Timestamp(TimeUnit::Nanosecond, _) => 1_000_000_000,
        other => {
            return Err(Error::Schema {
                path: path.to_path_buf(),
                column: column.to_string(),
                msg: format!("type {other}, expected a timestamp or integer seconds"),
            });
        }
    };
    let mut out = Vec::new();
    for a in &arrays {
        let col = arrow::compute::cast(a, &DataType::Int64).map_err(|source| Error::Arrow {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        if col.null_count() > 0 {
            return Err(Error::Value {
                path: path.to_path_buf(),
                column: column.to_string(),
                row: out.len() + (0..col.len()).find(|&i| col.is_null(i)).unwrap_or(0),
                msg: "null timestamp".into(),
            });
        }
        out.extend(
            col.as_primitive::<Int64Type>()
                .values()
                .iter()
                .map(|v| v.div_euclid(div)),
        );
    }
    Ok(out)
}

/// The series of an event table: per-step event counts (with a time column; steps with no
/// event are zeros) or one bit per event (without), keeping only events satisfying the
/// predicate; clamped to `bound` like [`load`].
pub fn load_events(path: &Path, spec: &EventSpec, bound: f64) -> Result<Series> {
    let keep: Option<Vec<bool>> = match &spec.predicate {
        Some(p) => {
            let v = crate::columns::read_numeric(path, &p.column)?;
            Some(v.iter().map(|&x| p.holds(x)).collect())
        }
        None => None,
    };
    let raw: Vec<f64> = match &spec.time_column {
        Some(tc) => {
            let ts = read_times(path, tc)?;
            if let Some(i) = ts.windows(2).position(|w| w[1] < w[0]) {
                return Err(Error::Value {
                    path: path.to_path_buf(),
                    column: tc.clone(),
                    row: i + 1,
                    msg: "timestamps are not sorted (sort the events by time first)".into(),
                });
            }
            let step = spec.step_seconds.max(1);
            let (start, end) = spec.range.ok_or_else(|| {
                Error::param(
                    "start",
                    "a time-bucketed series needs a public --start and --end: its first and \
                     last events are private, and the output length must not depend on them",
                )
            })?;
            let t0 = start.div_euclid(step);
            let last = end.div_euclid(step);
            let steps = last
                .checked_sub(t0)
                .map_or(i64::MAX, |s| s.saturating_add(1));
            if !(1..=MAX_EVENT_STEPS).contains(&steps) {
                return Err(Error::param(
                    "end",
                    format!(
                        "--start/--end at step {}s give {steps} steps; need 1 to \
                         {MAX_EVENT_STEPS} (2^28, 2 GiB of counts): a coarser --step or a \
                         shorter range",
                        spec.step_seconds
                    ),
                ));
            }
            let mut counts = vec![0.0; steps as usize];
            for (i, t) in ts.iter().enumerate() {
                let s = t.div_euclid(step).checked_sub(t0).unwrap_or(-1);
                if (0..steps).contains(&s) && keep.as_ref().is_none_or(|k| k[i]) {
                    counts[s as usize] += 1.0;
                }
            }
            counts
        }
        None => keep
            .ok_or_else(|| Error::param("where", "event input needs --time-column or --where"))?
            .into_iter()
            .map(|b| f64::from(u8::from(b)))
            .collect(),
    };
    if raw.is_empty() {
        return Err(Error::format(path, "the series is empty"));
    }
    let clamped = raw.iter().filter(|&&v| v > bound).count();
    Ok(Series {
        values: raw.into_iter().map(|v| v.min(bound)).collect(),
        clamped,
    })
}

#[cfg(test)]
mod event_tests {
    use super::*;

    #[test]
    fn buckets_csv_events_with_gaps_and_a_predicate() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("e.csv");
        std::fs::write(
            &p,
            "date,delay\n2001-01-01T00:01,3\n2001-01-01T00:01,20\n2001-01-01T00:04,15\n",
        )
        .expect("write");
        let t = |s: &str| parse_time("start", s).expect("time");
        let spec = EventSpec {
            time_column: Some("date".into()),
            step_seconds: 60,
            predicate: None,
            range: Some((t("2001-01-01T00:01"), t("2001-01-01T00:04"))),
        };
        assert_eq!(
            load_events(&p, &spec, 9.0).expect("ok").values,
            vec![2.0, 0.0, 0.0, 1.0]
        );
        let no_range = EventSpec {
            range: None,
            ..spec.clone()
        };
        assert!(
            load_events(&p, &no_range, 9.0)
                .expect_err("range required")
                .to_string()
                .contains("--start")
        );
        let late = EventSpec {
            predicate: Some(Predicate::parse("delay >= 15").expect("pred")),
            ..spec.clone()
        };
        assert_eq!(
            load_events(&p, &late, 9.0).expect("ok").values,
            vec![1.0, 0.0, 0.0, 1.0]
        );
        let bits = EventSpec {
            time_column: None,
            ..late
        };
        assert_eq!(
            load_events(&p, &bits, 1.0).expect("ok").values,
            vec![0.0, 1.0, 1.0]
        );
        std::fs::write(&p, "date,delay\n2001-01-01T00:05,3\n2001-01-01T00:01,20\n").expect("w");
        let e = load_events(&p, &spec, 9.0).expect_err("unsorted");
        assert!(
            e.to_string().contains("not sorted") && e.to_string().contains("row 1"),
            "{e}"
        );
        assert!(Predicate::parse("delay ~ 3").is_err());
        assert_eq!(parse_step("15m").expect("ok"), 900);
        assert!(parse_step("1w").is_err());
        assert_eq!(parse_iso("1970-01-02T00:00"), Some(86_400));
        assert_eq!(parse_iso("2001-01-01T00:00"), Some(978_307_200));
        assert_eq!(t("978307200"), 978_307_200);
        let e = parse_time("start", "yesterday").expect_err("not a time");
        assert!(e.to_string().contains("start") && e.to_string().contains("yesterday"));
        let huge = EventSpec {
            step_seconds: 1,
            range: Some((0, t("2020-01-01T00:00"))),
            ..spec.clone()
        };
        assert!(
            load_events(&p, &huge, 9.0).is_err(),
            "refused before allocating"
        );
    }

    /// Item 5 of the privacy audit: the series ran from the first to the last event, so one
    /// added event (even one the predicate drops) a day later added 1,440 output steps. With
    /// the public range the length is fixed, and events outside it are dropped.
    #[test]
    fn event_series_length_is_public() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("e.csv");
        let q = dir.path().join("f.csv");
        std::fs::write(&p, "date,delay\n2001-01-01T00:01,20\n2001-01-01T00:03,15\n").expect("w");
        std::fs::write(
            &q,
            "date,delay\n2001-01-01T00:01,20\n2001-01-01T00:03,15\n2001-01-02T00:03,1\n",
        )
        .expect("w");
        let t = |s: &str| parse_time("start", s).expect("time");
        let spec = EventSpec {
            time_column: Some("date".into()),
            step_seconds: 60,
            predicate: Some(Predicate::parse("delay>=15").expect("pred")),
            range: Some((t("2001-01-01T00:00"), t("2001-01-01T00:09"))),
        };
        let a = load_events(&p, &spec, 9.0).expect("ok").values;
        let b = load_events(&q, &spec, 9.0).expect("ok").values;
        assert_eq!(a.len(), 10);
        assert_eq!(a, b);
    }

    /// flights-3m.parquet bucketed by minute reproduces the shared per-minute counts.
    #[test]
    fn flights_parquet_buckets_to_the_shared_per_minute_counts() {
        let f = crate::testdata::shared_data_dir().join("flights-3m");
        let ts = read_times(&f.join("flights-3m.parquet"), "date").expect("times");
        let (lo, hi) = (ts[0], ts[ts.len() - 1]);
        let spec = EventSpec {
            time_column: Some("date".into()),
            step_seconds: 60,
            predicate: None,
            range: Some((lo, hi)),
        };
        let s = load_events(&f.join("flights-3m.parquet"), &spec, 1e9).expect("parquet");
        let want = load(&f.join("departures_per_minute.csv"), "departures", 1e9).expect("csv");
        // The CSV starts at 00:00 (no departure); the first event is at 00:01.
        assert_eq!(want.values[0], 0.0);
        assert_eq!(s.values.len(), want.values.len() - 1);
        assert!(s.values.iter().zip(&want.values[1..]).all(|(a, b)| a == b));
        assert_eq!(s.values.iter().sum::<f64>(), 3_000_000.0);
    }

    /// Times written are the times read: every second of a few centuries round-trips, a
    /// date alone is its midnight, and a clock puts each step's start beside its number.
    #[test]
    fn times_round_trip_and_dates_are_midnights() {
        let mut x: u64 = 88_172_645_463_325_252;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = (x % 12_000_000_000) as i64 - 2_000_000_000;
            assert_eq!(parse_iso(&format_time(t)), Some(t), "{t}");
        }
        assert_eq!(format_time(0), "1970-01-01T00:00:00");
        assert_eq!(
            parse_time("start", "2011-01-01").expect("date"),
            1_293_840_000
        );
        assert_eq!(
            parse_iso("2011-01-01 06:30"),
            Some(1_293_840_000 + 6 * 3600 + 1800)
        );
        assert!(parse_time("start", "2011-02-30").is_err());
        let clock = Clock {
            start: 1_293_840_000,
            step: 86_400,
        };
        let csv = encode_columns(
            Path::new("o.csv"),
            &["estimate".into()],
            &[vec![1.5, 2.0]],
            Some(clock),
        )
        .expect("csv");
        assert_eq!(
            String::from_utf8(csv).expect("utf-8"),
            "step,time,estimate\n0,2011-01-01T00:00:00,1.5\n1,2011-01-02T00:00:00,2\n"
        );
    }
}

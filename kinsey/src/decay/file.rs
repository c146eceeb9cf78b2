//! A decayed-sum release from a file to files, as `kinsey decay` makes it: a column
//! streamed in chunks, or a series read whole (events, an evaluation).

use super::builder::{DecayedSumBuilder, Events, OutOfBound, output_set};
use kinsey_core::{Error, Progress, Result};
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::series;
use kinsey_data::stream::{SeriesReader, SeriesWriter, count_steps};
use kinsey_decay::evaluate::{self, ColumnError};
use kinsey_decay::release::{ClampCheck, Path as RunPath};
use kinsey_decay::{DecayRelease, DecayedSum as Mechanism, KeyOrigin, Query};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What [`DecayedSumBuilder::write_file`] writes beside the release, and how it reads.
#[derive(Default)]
pub struct DecayFiles<'a> {
    /// Write the NOT PRIVATE diagnostics (clamped steps, timings) to
    /// `<out>.NOT-PRIVATE.diagnostics.json`.
    pub diagnostics: bool,
    /// Diagnostics too, with the errors against the true sums (the series is then read
    /// whole).
    pub evaluate: bool,
    /// The steps a chart of the evaluation shows, `FROM:TO` (default: the last 1,440).
    pub plot_range: Option<String>,
    /// Steps read, run and written at a time when a column streams (default 2^20).
    pub chunk: Option<usize>,
    /// Where the long steps are reported.
    pub progress: Option<&'a dyn Progress>,
    /// Draws the evaluation's chart into the same output set (written with the release,
    /// or not at all).
    #[allow(clippy::type_complexity)]
    pub chart: Option<&'a dyn Fn(&mut Outputs, &EvaluationChart<'_>) -> Result<()>>,
    /// Draws the release over `plot_range` with its stated error into the same output set
    /// (publishable: released estimates and stated stds only).
    #[allow(clippy::type_complexity)]
    pub release_chart: Option<&'a dyn Fn(&mut Outputs, &ReleaseChart<'_>) -> Result<()>>,
}

/// The first column's released estimates over a range of steps with their stated noise
/// std, for a chart that may be published with the release (no exact data).
#[derive(Debug)]
pub struct ReleaseChart<'a> {
    /// The mechanism's model, in words.
    pub model: &'a str,
    /// The release's guarantee in a few words (`pure 1-DP`).
    pub guarantee: String,
    /// The first output column's name.
    pub column: &'a str,
    /// The estimates of the steps `range.0..range.1`.
    pub estimates: &'a [f64],
    /// Their stated noise stds.
    pub stds: &'a [f64],
    /// The steps shown, `from..to`.
    pub range: (usize, usize),
    /// The chart's path without its extension: `<out>.plot`.
    pub stem: PathBuf,
}

/// The estimates a release chart shows, kept as the steps pass (the whole series is never
/// held for it): an explicit `FROM:TO`, or the last 1,440 steps in a ring.
struct Shown {
    explicit: Option<(usize, usize)>,
    values: std::collections::VecDeque<f64>,
    seen: usize,
}

impl Shown {
    /// `range` parsed (checked against the series' length at the end).
    fn new(range: Option<&str>) -> Result<Self> {
        let explicit = range
            .map(|r| evaluate::plot_range(Some(r), usize::MAX))
            .transpose()?;
        Ok(Self {
            explicit,
            values: std::collections::VecDeque::new(),
            seen: 0,
        })
    }

    fn push(&mut self, chunk: &[f64]) {
        for &v in chunk {
            match self.explicit {
                Some((a, b)) if (a..b).contains(&self.seen) => self.values.push_back(v),
                Some(_) => {}
                None => {
                    self.values.push_back(v);
                    if self.values.len() > 1440 {
                        self.values.pop_front();
                    }
                }
            }
            self.seen += 1;
        }
    }

    /// The range within the `n` steps released, and its estimates.
    fn finish(self, range: Option<&str>) -> Result<((usize, usize), Vec<f64>)> {
        let r = evaluate::plot_range(range, self.seen)?;
        Ok((r, self.values.into_iter().collect()))
    }
}

impl std::fmt::Debug for DecayFiles<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecayFiles")
            .field("diagnostics", &self.diagnostics)
            .field("evaluate", &self.evaluate)
            .field("plot_range", &self.plot_range)
            .field("chunk", &self.chunk)
            .finish_non_exhaustive()
    }
}

/// The true-vs-private series of an evaluation, for a chart. NOT PRIVATE: the true sums
/// are exact.
#[derive(Debug)]
pub struct EvaluationChart<'a> {
    /// The mechanism's model, in words.
    pub model: &'a str,
    /// The release's epsilon.
    pub epsilon: f64,
    /// The first output column's name.
    pub column: &'a str,
    /// Its private estimates.
    pub estimates: &'a [f64],
    /// Its true sums.
    pub truths: &'a [f64],
    /// The steps to show, `from..to`.
    pub range: (usize, usize),
    /// The chart's path without its extension: `<out>.NOT-PRIVATE.plot`.
    pub stem: PathBuf,
}

/// A decayed-sum release written to disk: its report and the public figures of the run;
/// the NOT PRIVATE ones are read by their own methods.
#[derive(Clone)]
pub struct DecayWritten {
    /// The release report (also in [`report_path`](Self::report_path)).
    pub release: DecayRelease,
    /// `<out>.report.json`.
    pub report_path: PathBuf,
    /// `<out>.NOT-PRIVATE.diagnostics.json`, when written.
    pub diagnostics_path: Option<PathBuf>,
    /// Steps released (public: the series' length).
    pub steps: u64,
    /// The mechanism's model, in words.
    pub model: String,
    /// The noise std of one counter.
    pub counter_std: f64,
    /// The stated std of the last step's estimate.
    pub estimate_std: f64,
    /// Where the noise was drawn, in words.
    pub device: String,
    /// A line for the summary when the stated error makes the estimates say little, with
    /// the parameters that lower it (public: [`usefulness`](super::usefulness)).
    pub advice: Option<String>,
    clamped: usize,
    seconds: f64,
    evaluation: Vec<ColumnError>,
}

impl std::fmt::Debug for DecayWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecayWritten")
            .field("release", &self.release)
            .field("report_path", &self.report_path)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl DecayWritten {
    /// Steps clamped to the bound. NOT PRIVATE.
    pub fn clamped_steps_not_private(&self) -> usize {
        self.clamped
    }

    /// Steps per second in the mechanism. NOT PRIVATE (a timing).
    pub fn steps_per_second_not_private(&self) -> f64 {
        self.steps as f64 / self.seconds.max(1e-12)
    }

    /// The errors against the true sums, when evaluated. NOT PRIVATE.
    pub fn evaluation_not_private(&self) -> &[ColumnError] {
        &self.evaluation
    }
}

/// What a file run did, for its report and diagnostics.
struct Run {
    n: u64,
    clamped: usize,
    run_s: f64,
    device: String,
    diag: serde_json::Value,
    evaluation: Vec<ColumnError>,
    /// The range a release chart shows and its estimates, when one is drawn.
    shown: Option<((usize, usize), Vec<f64>)>,
}

impl DecayedSumBuilder {
    /// Run over `column` of `input` (CSV with a header, Parquet, or a `.txt` file of 0/1
    /// characters) and write the estimates to `out` (CSV, or Parquet when it ends in
    /// `.parquet`) with the release at `<out>.report.json` and, asked for, the NOT PRIVATE
    /// diagnostics: all or nothing, as `kinsey decay` does. A column streams in chunks
    /// (memory bounded by the chunk, not the series); events and an evaluation read the
    /// series whole. The bound may be left out where every step is a bit (it is then 1).
    ///
    /// ```no_run
    /// use kinsey::prelude::*;
    /// use kinsey::stats::DecayFiles;
    ///
    /// let run = DecayedSum::window(60)
    ///     .epsilon(1.0)
    ///     .bound(Bound::clamp(3.0)?)
    ///     .write_file("series.parquet".as_ref(), "value", "out/sums.csv".as_ref(),
    ///         &DecayFiles::default())?;
    /// println!("{} steps, estimate std {:.2}", run.steps, run.estimate_std);
    /// # Ok::<(), kinsey::Error>(())
    /// ```
    pub fn write_file(
        self,
        input: &Path,
        column: &str,
        out: &Path,
        files: &DecayFiles<'_>,
    ) -> Result<DecayWritten> {
        let bound = self.bound_for(input)?;
        let query = self.query_with(column, bound)?;
        let silent = kinsey_core::Silent;
        let progress = files.progress.unwrap_or(&silent);
        let whole = files.evaluate || self.events.is_some();
        let (m, o, run) = if whole {
            self.write_whole(input, &query, out, files, progress)?
        } else {
            self.write_streaming(input, &query, out, files, progress)?
        };
        if bound.policy() == OutOfBound::Refuse && run.clamped > 0 {
            return Err(Error::param(
                "bound",
                format!(
                    "{}: a value exceeds the bound {} (Bound::refuse); nothing was released",
                    input.display(),
                    bound.value()
                ),
            ));
        }
        self.finish_file(input, &query, out, m.as_ref(), run, files, o)
    }

    /// The series read whole: events, or a column to evaluate.
    fn write_whole(
        &self,
        input: &Path,
        query: &Query,
        out: &Path,
        files: &DecayFiles<'_>,
        progress: &dyn Progress,
    ) -> Result<(Box<dyn Mechanism>, Outputs, Run)> {
        let t = Instant::now();
        self.charge(input, query)?;
        let series = self.load(input, &query.source.column, query.bound)?;
        let n = series.values.len() as u64;
        if n == 0 {
            return Err(Error::param("series", "the series is empty"));
        }
        // The library takes the length as a horizon only where the model needs one, so
        // the release does not depend on the evaluation (NOT PRIVATE) or the path taken.
        let (m, device) = self.mechanism_for(query, input, Some(n))?;
        let load_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        progress.begin("private decayed sums", None);
        let est = if self.online {
            m.online(&series.values)
        } else {
            m.bulk(&series.values)
        };
        progress.end();
        let est = est?;
        let run_s = t.elapsed().as_secs_f64();
        let mut diag = serde_json::json!({
            "seconds": {"load": load_s, "mechanism": run_s},
            "input": "loaded whole",
        });
        let names = m.columns();
        let mut o = output_set(out)?;
        let mut evaluation = Vec::new();
        if files.evaluate {
            let (stats, truths) = evaluate::errors(m.as_ref(), &series.values, &est);
            let cal = m.calibration();
            if let Some(chart) = files.chart {
                let stem = PathBuf::from(format!("{}.NOT-PRIVATE.plot", out.display()));
                chart(
                    &mut o,
                    &EvaluationChart {
                        model: &cal.model,
                        epsilon: cal.epsilon,
                        column: &names[0],
                        estimates: &est[0],
                        truths: &truths[0],
                        range: evaluate::plot_range(files.plot_range.as_deref(), est[0].len())?,
                        stem,
                    },
                )?;
            }
            diag["evaluation"] = if stats.len() == 1 {
                serde_json::to_value(&stats[0])
            } else {
                serde_json::to_value(&stats)
            }
            .map_err(|e| Error::Numerical(e.to_string()))?;
            evaluation = stats;
        }
        let clock = self
            .events
            .as_ref()
            .map(Events::clock)
            .transpose()?
            .flatten();
        o.write(out, &series::encode_columns(out, &names, &est, clock)?)?;
        let shown = match files.release_chart {
            Some(_) => {
                let (a, b) = evaluate::plot_range(files.plot_range.as_deref(), est[0].len())?;
                Some(((a, b), est[0][a..b].to_vec()))
            }
            None => None,
        };
        let run = Run {
            n,
            clamped: series.clamped,
            run_s,
            device,
            diag,
            evaluation,
            shown,
        };
        Ok((m, o, run))
    }

    /// A column in chunks: read, run, write as it goes; the output is staged and moved
    /// into place only when every chunk is written (an error midway leaves nothing).
    fn write_streaming(
        &self,
        input: &Path,
        query: &Query,
        out: &Path,
        files: &DecayFiles<'_>,
        progress: &dyn Progress,
    ) -> Result<(Box<dyn Mechanism>, Outputs, Run)> {
        let chunk = files.chunk.unwrap_or(1 << 20);
        // A chunk of 2^28 steps already holds 2 GiB per column.
        if !(1..=1 << 28).contains(&chunk) {
            return Err(Error::param(
                "chunk",
                format!("must be 1 to 2^28 steps, got {chunk}"),
            ));
        }
        self.charge(input, query)?;
        // The running and polynomial sums' horizon defaults to the series' (public)
        // length, and so does every zCDP mechanism's: counted first (Parquet metadata, or
        // one pass over the text).
        let column = &query.source.column;
        let len = if query.takes_length() {
            Some(count_steps(input, column)?)
        } else {
            None
        };
        let (mut m, device) = self.mechanism_for(query, input, len)?;
        let mut reader = SeriesReader::open(input, column, query.bound, chunk)?;
        let names = m.columns();
        let mut o = output_set(out)?;
        let staged = o.stage(out)?;
        let mut w = SeriesWriter::create(&staged, out, &names)?;
        // The online path runs a step at a time (minutes on millions of steps): its
        // progress has a total, the public number of steps.
        if self.online {
            let total = match len {
                Some(n) => n,
                None => count_steps(input, column)?,
            };
            progress.begin("private decayed sums, online", Some(total));
        } else {
            progress.begin("private decayed sums", None);
        }
        let mut xs = Vec::with_capacity(chunk.min(1 << 24));
        // The estimates' buffers, reused from chunk to chunk.
        let mut est: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        let mut shown = files
            .release_chart
            .map(|_| Shown::new(files.plot_range.as_deref()))
            .transpose()?;
        let (mut run_s, mut io_s) = (0.0, 0.0);
        let mut t = Instant::now();
        let streamed = (|| {
            while reader.next_chunk(&mut xs)? {
                io_s += t.elapsed().as_secs_f64();
                t = Instant::now();
                if self.online {
                    kinsey_decay::push_each(m.as_mut(), &xs, &mut est)?;
                } else {
                    m.stream_into(&xs, &mut est)?;
                }
                run_s += t.elapsed().as_secs_f64();
                t = Instant::now();
                w.write(&est)?;
                if let Some(s) = shown.as_mut() {
                    s.push(&est[0]);
                }
                progress.advance(xs.len() as u64);
            }
            Ok::<(), Error>(())
        })();
        progress.end();
        streamed?;
        let n = w.finish()?;
        io_s += t.elapsed().as_secs_f64();
        let diag = serde_json::json!({
            "seconds": {"read_and_write": io_s, "mechanism": run_s},
            "input": format!("streamed in chunks of {chunk} steps"),
        });
        let run = Run {
            n,
            clamped: reader.clamped,
            run_s,
            device,
            diag,
            evaluation: Vec::new(),
            shown: shown
                .map(|s| s.finish(files.plot_range.as_deref()))
                .transpose()?,
        };
        Ok((m, o, run))
    }

    /// The end of both paths: the release report (with the clamp check when asked), the
    /// diagnostics when asked, everything moved into place at once.
    #[allow(clippy::too_many_arguments)]
    fn finish_file(
        &self,
        input: &Path,
        query: &Query,
        out: &Path,
        m: &dyn Mechanism,
        run: Run,
        files: &DecayFiles<'_>,
        mut o: Outputs,
    ) -> Result<DecayWritten> {
        let report_path = PathBuf::from(format!("{}.report.json", out.display()));
        let path = if self.online {
            RunPath::Online
        } else {
            RunPath::Bulk
        };
        let origin = KeyOrigin::of(self.seed, self.record_seed);
        let input_name = input.display().to_string();
        let mut release = DecayRelease::new(m, query, input_name, run.n, path, &run.device, origin);
        if let Some(eps) = self.clamp_check {
            let label = format!(
                "kinsey.decay.clamp_check.v1|{}",
                serde_json::to_string(query).map_err(|e| Error::Numerical(e.to_string()))?
            );
            let mut rng = kinsey_dp::NoiseRng::for_release(self.seed, &label, || {
                kinsey_data::digest::of_files(input)
            })?;
            release.clamp_check = Some(ClampCheck::new(
                run.clamped,
                run.n,
                eps,
                query.epsilon,
                &mut rng,
            )?);
        }
        write_json(&mut o, &report_path, &release)?;
        let diagnostics = files.diagnostics || files.evaluate;
        let diagnostics_path = diagnostics
            .then(|| PathBuf::from(format!("{}.NOT-PRIVATE.diagnostics.json", out.display())));
        if let Some(p) = &diagnostics_path {
            let mut diag = run.diag;
            diag["clamped_steps"] = run.clamped.into();
            diag["steps_per_second"] = (run.n as f64 / run.run_s.max(1e-12)).into();
            kinsey_data::output::write_diagnostics(&mut o, p, &diag)?;
        }
        let cal = m.calibration();
        if let (Some(draw), Some((range, estimates))) = (files.release_chart, &run.shown) {
            let stds: Vec<f64> = (range.0..range.1)
                .map(|j| m.noise_std(0, j as u64))
                .collect();
            let names = m.columns();
            draw(
                &mut o,
                &ReleaseChart {
                    model: &cal.model,
                    guarantee: release.guarantee.short(),
                    column: &names[0],
                    estimates,
                    stds: &stds,
                    range: *range,
                    stem: PathBuf::from(format!("{}.plot", out.display())),
                },
            )?;
        }
        o.commit()?;
        Ok(DecayWritten {
            advice: super::usefulness(query, &release),
            release,
            report_path,
            diagnostics_path,
            steps: run.n,
            model: cal.model.clone(),
            counter_std: cal.counter_std,
            estimate_std: m.noise_std(0, run.n - 1),
            device: run.device,
            clamped: run.clamped,
            seconds: run.run_s,
            evaluation: run.evaluation,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decay::{Bound, DecayedSum};

    fn series(dir: &Path) -> PathBuf {
        let csv = dir.join("s.csv");
        let rows: String = (0..500).map(|i| format!("{}\n", (i * 7) % 5)).collect();
        std::fs::write(&csv, format!("value\n{rows}")).expect("csv");
        csv
    }

    fn window() -> DecayedSumBuilder {
        DecayedSum::window(16)
            .epsilon(1.0)
            .bound(Bound::clamp(3.0).expect("bound"))
            .seed(9)
            .device(crate::DevicePref::Cpu)
    }

    /// The release chart sees the estimates written, over its range, streamed (a ring of
    /// the last steps, or an explicit range) or read whole, with their stated stds.
    #[test]
    fn the_release_chart_shows_the_estimates_written() {
        let dir = tempfile::tempdir().expect("tmp");
        let csv = series(dir.path());
        for (range, chunk, evaluate, want) in [
            (None, Some(7), false, (0, 500)),
            (Some("100:130"), Some(7), false, (100, 130)),
            (Some("100:130"), None, true, (100, 130)),
        ] {
            let seen = std::cell::RefCell::new(None);
            let draw = |_: &mut Outputs, c: &ReleaseChart<'_>| {
                *seen.borrow_mut() = Some((c.range, c.estimates.to_vec(), c.stds.to_vec()));
                Ok(())
            };
            let out = dir.path().join(format!("r{}-{evaluate}.csv", want.0));
            let files = DecayFiles {
                chunk,
                evaluate,
                plot_range: range.map(String::from),
                release_chart: Some(&draw),
                ..DecayFiles::default()
            };
            window()
                .write_file(&csv, "value", &out, &files)
                .expect("run");
            let (r, est, stds) = seen.borrow_mut().take().expect("drawn");
            assert_eq!(r, want);
            let written: Vec<f64> = std::fs::read_to_string(&out)
                .expect("csv")
                .lines()
                .skip(1 + r.0)
                .take(r.1 - r.0)
                .map(|l| {
                    l.split(',')
                        .nth(1)
                        .expect("estimate")
                        .parse()
                        .expect("number")
                })
                .collect();
            assert_eq!(est, written);
            assert!(stds.len() == est.len() && stds.iter().all(|s| *s > 0.0));
        }
    }

    #[test]
    fn streamed_in_small_chunks_the_release_is_the_one_read_whole() {
        let dir = tempfile::tempdir().expect("tmp");
        let csv = series(dir.path());
        let (whole, streamed) = (dir.path().join("w.csv"), dir.path().join("s.csv.out"));
        window()
            .over_file(&csv, "value")
            .expect("run")
            .write(&whole)
            .expect("write");
        let files = DecayFiles {
            chunk: Some(7),
            diagnostics: true,
            ..DecayFiles::default()
        };
        let run = window()
            .write_file(&csv, "value", &streamed, &files)
            .expect("run");
        assert_eq!(run.steps, 500);
        assert_eq!(run.clamped_steps_not_private(), 100);
        assert_eq!(
            std::fs::read(&whole).expect("a"),
            std::fs::read(&streamed).expect("b")
        );
        assert!(run.diagnostics_path.as_ref().is_some_and(|p| p.exists()));
        // A different seed, different noise: the comparison above can fail.
        let other = dir.path().join("o.csv");
        window()
            .seed(10)
            .write_file(&csv, "value", &other, &DecayFiles::default())
            .expect("run");
        assert_ne!(
            std::fs::read(&other).expect("o"),
            std::fs::read(&streamed).expect("s")
        );
    }

    #[test]
    fn a_refusing_bound_and_a_bad_chunk_write_nothing() {
        let dir = tempfile::tempdir().expect("tmp");
        let csv = series(dir.path());
        let out = dir.path().join("r.csv");
        let e = window()
            .bound(Bound::refuse(3.0).expect("bound"))
            .write_file(&csv, "value", &out, &DecayFiles::default())
            .expect_err("a value of 4 is above the bound");
        assert!(e.to_string().contains("exceeds the bound"), "{e}");
        let files = DecayFiles {
            chunk: Some(0),
            ..DecayFiles::default()
        };
        let e = window()
            .write_file(&csv, "value", &out, &files)
            .expect_err("chunk 0");
        assert!(e.to_string().contains("chunk"), "{e}");
        assert!(!out.exists());
        assert!(!dir.path().join("r.csv.report.json").exists());
    }

    #[test]
    fn events_without_a_time_column_are_bits_and_need_no_bound() {
        let dir = tempfile::tempdir().expect("tmp");
        let csv = series(dir.path());
        let events = Events {
            predicate: Some("value>=3".into()),
            ..Events::default()
        };
        assert!(crate::decay::steps_are_bits(&csv, Some(&events)));
        let out = dir.path().join("e.csv");
        let run = DecayedSum::running()
            .epsilon(1.0)
            .events(events)
            .device(crate::DevicePref::Cpu)
            .write_file(&csv, "value", &out, &DecayFiles::default())
            .expect("run");
        assert_eq!(run.release.calibration.bound, 1.0);
        assert_eq!(run.steps, 500);
        // A time column needs a public range, refused before anything is read.
        let timed = Events {
            time_column: Some("t".into()),
            ..Events::default()
        };
        assert!(
            timed
                .check()
                .expect_err("no range")
                .to_string()
                .contains("--start")
        );
    }
}

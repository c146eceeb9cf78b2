//! `kinsey decay`: private decayed sums of a time series (seed 004). The mechanism comes
//! from `kinsey_stats::decay::build` (a registry of [`DecayedSum`] implementations); this
//! file only reads the series, writes the release and, when asked, the diagnostics.
//!
//! A column series streams: read a chunk, run the mechanism's chunked path on it, write its
//! rows to the staged output, so memory is bounded by `--chunk`, not the series. Event
//! input (`--time-column`, `--where`) and `--evaluate` (which needs the true sums and a
//! chart over the whole series) load the series into memory.

use crate::term::print_diagnostic;
use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::series::{self, EventSpec, Predicate, Series};
use kinsey_data::stream::{SeriesReader, SeriesWriter, count_steps};
use kinsey_dp::release::NOT_PRIVATE_PREFIX;
use kinsey_stats::decay::release::Path;
use kinsey_stats::decay::{
    DecayRelease, DecayedSum, KeyOrigin, ModelParams, Query, SeriesSource, evaluate,
};
use std::path::PathBuf;
use std::time::Instant;

/// Private window, exponentially decayed or running sums of a time series (seed 004).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// CSV (with a header) or Parquet file, one row per step; or a .txt file of 0/1
    /// characters, one bit per step.
    #[arg(long)]
    input: PathBuf,
    /// The column holding each step's value.
    #[arg(long, default_value = "value")]
    column: String,
    /// Event input: bucket this timestamp column (Parquet timestamp, or ISO text in CSV)
    /// into steps of `--step`; each step's value is its number of events.
    #[arg(long)]
    time_column: Option<String>,
    /// Step width for --time-column: 30s, 1m, 15m, 1h, 1d.
    #[arg(long, default_value = "1m")]
    step: String,
    /// First time of a --time-column series (public; YYYY-MM-DDTHH:MM[:SS] or seconds).
    #[arg(long)]
    start: Option<String>,
    /// Last time of a --time-column series (public): the output covers start..=end
    /// whatever the events, and events outside are dropped.
    #[arg(long)]
    end: Option<String>,
    /// Keep only events with COLUMN OP NUMBER (e.g. "delay>=15"); without --time-column,
    /// one bit per event.
    #[arg(long = "where")]
    predicate: Option<String>,
    /// window | allwindow | exponential | polynomial | running | laplace | rr
    #[arg(long)]
    model: String,
    #[arg(long)]
    /// Privacy budget of the release (event-level: one step's value within [0, --bound]).
    epsilon: f64,
    /// Window length in steps (models window, laplace, rr).
    #[arg(long)]
    window: Option<u64>,
    /// Window lengths for model allwindow (all from one tree), e.g. 60,1440.
    #[arg(long, value_delimiter = ',')]
    windows: Option<Vec<u64>>,
    /// Decay per step, in (0, 1) (model exponential).
    #[arg(long)]
    alpha: Option<f64>,
    /// Decay exponent c > 1 of g(i) = (i + 1)^-c (model polynomial).
    #[arg(long)]
    c: Option<f64>,
    /// Approximation parameter in (0, 1): estimates F' with (1 - beta) F <= F' <= F.
    #[arg(long, default_value_t = 0.1)]
    beta: f64,
    /// Longest stream the running sum is calibrated for (default: the series length,
    /// which is public: a column's length, or --start..--end).
    #[arg(long)]
    horizon: Option<u64>,
    /// Per-step contribution bound B: values are clamped to [0, B] (clamping counted).
    #[arg(long, default_value_t = 1.0)]
    bound: f64,
    /// (step, estimate) as CSV, or Parquet if the name ends in .parquet; a report
    /// `<out>.report.json` is written beside it.
    #[arg(long)]
    out: PathBuf,
    /// Write the NOT PRIVATE diagnostics (clamped steps, timings) to
    /// `<out>.NOT-PRIVATE.diagnostics.json`.
    #[arg(long)]
    diagnostics: bool,
    /// Diagnostics (implies --diagnostics): compute the true sums and the error, and draw
    /// true vs private over `--plot-range` to `<out>.NOT-PRIVATE.plot.svg` and `.png`.
    #[arg(long)]
    evaluate: bool,
    /// Steps to plot with --evaluate, FROM:TO (default: the last 1,440 steps).
    #[arg(long)]
    plot_range: Option<String>,
    /// Run the online path (one step at a time) instead of bulk: the same numbers.
    #[arg(long)]
    online: bool,
    /// Steps read, processed and written at a time when the series streams (memory is
    /// about 40 bytes per step of a chunk, whatever the series' length).
    #[arg(long, default_value_t = 1 << 20)]
    chunk: usize,
    /// Where the bulk noise is drawn: auto (a hardware GPU if any), cpu or gpu (window,
    /// polynomial, exponential, running and laplace; the same numbers bit for bit).
    #[arg(long, default_value = "auto")]
    device: kinsey_kernels::DevicePref,
    /// Derive the noise key from a seed and the release's parameters (NOT private
    /// against whoever knows the seed).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the seed's value into the report (by default it says only that one was used).
    #[arg(long)]
    record_seed: bool,
}

impl Args {
    /// Every public parameter of the release (the input enters a seeded key through its
    /// digest, not its path). The event range and step are parsed here, so a bad one is
    /// refused before any data is read.
    fn query(&self) -> Result<Query> {
        let events = self.time_column.is_some();
        let range = match (&self.start, &self.end) {
            (Some(s), Some(e)) if events => Some((
                series::parse_time("start", s)?,
                series::parse_time("end", e)?,
            )),
            _ => None,
        };
        Ok(Query {
            model: self.model.clone(),
            params: ModelParams {
                window: self.window,
                windows: self.windows.clone(),
                alpha: self.alpha,
                c: self.c,
                beta: self.beta,
                horizon: self.horizon,
            },
            epsilon: self.epsilon,
            bound: self.bound,
            source: SeriesSource {
                column: self.column.clone(),
                time_column: self.time_column.clone(),
                step_seconds: events.then(|| series::parse_step(&self.step)).transpose()?,
                range,
                predicate: self.predicate.clone(),
            },
        })
    }

    /// How the noise key is made.
    fn origin(&self) -> KeyOrigin {
        KeyOrigin::of(self.seed, self.record_seed)
    }

    /// The mechanism for a series of `n` steps (when known), its noise on `--device`, and
    /// the device used, in words. A seeded key binds every byte of the input file (read
    /// once more, before the run): a seed replays the same series only.
    fn mechanism(&self, n: Option<u64>) -> Result<(Box<dyn DecayedSum>, String)> {
        if self.seed.is_some() {
            eprintln!("warning: {}", kinsey_dp::rng::USER_SEED_WARNING);
        }
        let query = self.query()?;
        let key = query.key(self.origin(), || kinsey_data::digest::of_files(&self.input))?;
        query.mechanism(n, key, self.device)
    }

    /// The series: one column's values, or events bucketed into steps.
    fn load(&self) -> Result<Series> {
        if self.time_column.is_none() && self.predicate.is_none() {
            return series::load(&self.input, &self.column, self.bound);
        }
        let range = match (&self.time_column, &self.start, &self.end) {
            (Some(_), Some(s), Some(e)) => Some((
                series::parse_time("start", s)?,
                series::parse_time("end", e)?,
            )),
            (Some(_), _, _) => {
                return Err(Error::param(
                    "start",
                    "--time-column needs a public --start and --end (the first and last events \
                     are private, and the output length must not depend on them)",
                ));
            }
            (None, _, _) => None,
        };
        let spec = EventSpec {
            time_column: self.time_column.clone(),
            step_seconds: series::parse_step(&self.step)?,
            predicate: self
                .predicate
                .as_deref()
                .map(Predicate::parse)
                .transpose()?,
            range,
        };
        series::load_events(&self.input, &spec, self.bound)
    }
}

/// Runs `kinsey decay`.
pub(crate) fn run(a: Args) -> Result<()> {
    if a.time_column.is_none() && a.predicate.is_none() && !a.evaluate {
        return run_streaming(a);
    }
    let t = Instant::now();
    let diagnostics = a.diagnostics || a.evaluate;
    let series = a.load()?;
    let n = series.values.len() as u64;
    let (m, device) = a.mechanism(Some(n))?;
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let bar = crate::term::spinner("private decayed sums");
    let est = if a.online {
        m.online(&series.values)
    } else {
        m.bulk(&series.values)
    };
    bar.finish_and_clear();
    let est = est?;
    let run_s = t.elapsed().as_secs_f64();
    let mut diag = serde_json::json!({
        "seconds": {"load": load_s, "mechanism": run_s},
        "input": "loaded whole",
    });
    let names = m.columns();
    let mut o = outputs(&a)?;
    if a.evaluate {
        diag["evaluation"] = evaluation(&a, m.as_ref(), &series.values, &est, &mut o)?;
    }
    o.write(&a.out, &series::encode_columns(&a.out, &names, &est)?)?;
    let run = Run {
        n,
        clamped: series.clamped,
        run_s,
        device,
    };
    finish(&a, m.as_ref(), &run, diag, diagnostics, o)
}

/// What a run did, for its report, diagnostics and summary.
struct Run {
    /// Steps released.
    n: u64,
    /// Steps clamped to the bound (NOT PRIVATE).
    clamped: usize,
    /// Seconds in the mechanism.
    run_s: f64,
    /// Where the noise was drawn.
    device: String,
}

/// An output set with the output's folder created.
fn outputs(a: &Args) -> Result<Outputs> {
    let mut o = Outputs::new();
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        o.ensure_dir(dir)?;
    }
    Ok(o)
}

/// The end of both paths: the release report, the diagnostics when asked (`diag` and the
/// run's NOT PRIVATE figures), everything moved into place at once, then the summary.
fn finish(
    a: &Args,
    m: &dyn DecayedSum,
    run: &Run,
    mut diag: serde_json::Value,
    diagnostics: bool,
    mut o: Outputs,
) -> Result<()> {
    let rep_path = PathBuf::from(format!("{}.report.json", a.out.display()));
    write_json(&mut o, &rep_path, &release_report(a, m, run)?)?;
    let diag_path = PathBuf::from(format!("{}.NOT-PRIVATE.diagnostics.json", a.out.display()));
    if diagnostics {
        diag["clamped_steps"] = run.clamped.into();
        diag["steps_per_second"] = (run.n as f64 / run.run_s.max(1e-12)).into();
        kinsey_data::output::write_diagnostics(&mut o, &diag_path, &diag)?;
    }
    let ledger = super::ledger::charged(
        String::new(),
        &[a.input.as_path()],
        &format!("decay {}", a.model),
        a.epsilon,
        0.0,
    )?;
    o.commit()?;
    summary(a, m, run, &rep_path, &diag_path);
    if !ledger.is_empty() {
        println!("{}", ledger.trim_start());
    }
    Ok(())
}

/// The lines a run prints: the release's public figures, then (asked for) the diagnostics.
fn summary(
    a: &Args,
    m: &dyn DecayedSum,
    run: &Run,
    rep_path: &std::path::Path,
    diag_path: &std::path::Path,
) {
    let Run {
        n, clamped, run_s, ..
    } = *run;
    let diagnostics = a.diagnostics || a.evaluate;
    let cal = m.calibration();
    println!(
        "{}: {n} steps, counter noise std {:.3}, estimate std {:.3} ({}); wrote {} and {}",
        cal.model,
        cal.counter_std,
        m.noise_std(0, n - 1),
        if a.online {
            "online".to_string()
        } else {
            format!("bulk, noise on {}", run.device)
        },
        a.out.display(),
        rep_path.display()
    );
    if diagnostics {
        print_diagnostic(&format!(
            "{clamped} steps clamped to the bound; {:.3e} steps/s; wrote {}",
            n as f64 / run_s.max(1e-12),
            diag_path.display()
        ));
    }
}

/// A column series in chunks: read, run, write as it goes; the output is staged and moved
/// into place only when every chunk is written (an error midway leaves nothing).
fn run_streaming(a: Args) -> Result<()> {
    // The running sum's and polynomial sum's horizon defaults to the series' (public)
    // length: counted first (Parquet metadata, or one pass over the text).
    // A chunk of 2^28 steps already holds 2 GiB per column.
    if !(1..=1 << 28).contains(&a.chunk) {
        return Err(Error::param(
            "chunk",
            format!("must be 1 to 2^28 steps, got {}", a.chunk),
        ));
    }
    let len = match (a.horizon, a.model.as_str()) {
        (None, "running" | "polynomial") => Some(count_steps(&a.input, &a.column)?),
        _ => None,
    };
    let (mut m, device) = a.mechanism(len)?;
    let mut reader = SeriesReader::open(&a.input, &a.column, a.bound, a.chunk)?;
    let names = m.columns();
    let mut o = outputs(&a)?;
    let staged = o.stage(&a.out)?;
    let mut w = SeriesWriter::create(&staged, &a.out, &names)?;
    let bar = crate::term::spinner("private decayed sums");
    let mut xs = Vec::with_capacity(a.chunk.min(1 << 24));
    // The estimates' buffers, reused from chunk to chunk.
    let mut est: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let (mut run_s, mut io_s) = (0.0, 0.0);
    let mut t = Instant::now();
    while reader.next_chunk(&mut xs)? {
        io_s += t.elapsed().as_secs_f64();
        t = Instant::now();
        if a.online {
            kinsey_stats::decay::push_each(m.as_mut(), &xs, &mut est)?;
        } else {
            m.stream_into(&xs, &mut est)?;
        }
        run_s += t.elapsed().as_secs_f64();
        t = Instant::now();
        w.write(&est)?;
    }
    let n = w.finish()?;
    io_s += t.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let diag = serde_json::json!({
        "seconds": {"read_and_write": io_s, "mechanism": run_s},
        "input": format!("streamed in chunks of {} steps", a.chunk),
    });
    let run = Run {
        n,
        clamped: reader.clamped,
        run_s,
        device,
    };
    finish(&a, m.as_ref(), &run, diag, a.diagnostics, o)
}

/// The release report: public parameters, calibration and guarantee only.
fn release_report(a: &Args, m: &dyn DecayedSum, run: &Run) -> Result<DecayRelease> {
    let path = if a.online { Path::Online } else { Path::Bulk };
    Ok(DecayRelease::new(
        m,
        &a.query()?,
        a.input.display().to_string(),
        run.n,
        path,
        &run.device,
        a.origin(),
    ))
}

/// `--evaluate`: the errors against the true sums (printed as NOT PRIVATE) and the chart.
fn evaluation(
    a: &Args,
    m: &dyn DecayedSum,
    xs: &[f64],
    est: &[Vec<f64>],
    o: &mut Outputs,
) -> Result<serde_json::Value> {
    let names = m.columns();
    let cal = m.calibration();
    let range = evaluate::plot_range(a.plot_range.as_deref(), est[0].len())?;
    let (stats, truths) = evaluate::errors(m, xs, est);
    let chart = crate::plot::truth_vs_private(
        format!(
            "NOT PRIVATE: {} (eps = {}) against the true sums",
            cal.model, a.epsilon
        ),
        &names[0],
        &est[0],
        &truths[0],
        range,
    );
    // `<out>.NOT-PRIVATE.plot.svg` and `.png`.
    let stem = PathBuf::from(format!("{}.NOT-PRIVATE.plot", a.out.display()));
    crate::plot::write_chart(o, &stem, &chart)?;
    for e in &stats {
        println!(
            "{NOT_PRIVATE_PREFIX} evaluation ({}): RMSE {:.3}, mean |error| {:.3}, max {:.3} \
             (theory: std {:.3} at the last step; mean true value {:.3})",
            e.column,
            e.rmse,
            e.mean_abs_error,
            e.max_abs_error,
            e.theoretical_std_last_step,
            e.mean_true_value
        );
    }
    if stats.len() == 1 {
        serde_json::to_value(&stats[0])
    } else {
        serde_json::to_value(&stats)
    }
    .map_err(|e| Error::Numerical(e.to_string()))
}

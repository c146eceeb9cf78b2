//! `kinsey decay`: private decayed sums of a time series (seed 004). The mechanism comes
//! from `kinsey_decay::build` (a registry of [`DecayedSum`] implementations); this
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
use kinsey_decay::release::{ClampCheck, Path};
use kinsey_decay::{
    DecayRelease, DecayedSum, KeyOrigin, ModelParams, Query, SeriesSource, evaluate,
};
use kinsey_dp::release::NOT_PRIVATE_PREFIX;
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
    /// Required under --privacy pure, the default.
    epsilon: Option<f64>,
    /// pure (discrete Laplace, epsilon-DP; the default) or zcdp (discrete Gaussian,
    /// rho-zCDP, stated as (epsilon, delta)-DP at --delta).
    #[arg(long, value_enum, default_value_t = Privacy::Pure)]
    privacy: Privacy,
    /// The zCDP budget of --privacy zcdp (a pure epsilon-DP mechanism is eps^2/2-zCDP:
    /// rho = 0.5 matches epsilon = 1).
    #[arg(long)]
    rho: Option<f64>,
    /// The delta at which a --privacy zcdp release states its (epsilon, delta) (default
    /// 1e-6).
    #[arg(long)]
    delta: Option<f64>,
    /// tree (the dyadic tree, the default), kary (a k-ary tree with
    /// level-weighted noise: about half the error of the tree for running and window sums
    /// at the same epsilon; models running, window, exponential), blt (--privacy zcdp
    /// only: a buffered square-root factorization with correlated Gaussian noise, O(d)
    /// state, needs a horizon) or best (the one with the least stated error, chosen from
    /// public parameters only). Under --privacy zcdp, tree and kary carry Gaussian noise.
    #[arg(long, value_name = "MECHANISM")]
    mechanism: Option<String>,
    /// Children per node of --mechanism kary (default: the arity with the least stated
    /// error).
    #[arg(long)]
    arity: Option<u32>,
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
    /// Per-step contribution bound B, declared from knowledge of the data, not read from
    /// it: values are clamped to [0, B], and the guarantee covers changing one step's value
    /// by up to B. Required, except for 0/1 input (.txt bits, or --where without
    /// --time-column: one bit per event), where it is 1.
    #[arg(long)]
    bound: Option<f64>,
    /// Spend this epsilon more on a noisy count of the steps clamped to --bound, and warn
    /// when it exceeds 1% of the steps (the count and its epsilon are in the report).
    #[arg(long, value_name = "EPSILON")]
    clamp_check: Option<f64>,
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

/// The kind of guarantee a decayed-sum release gives.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Privacy {
    /// epsilon-DP, discrete Laplace noise.
    Pure,
    /// rho-zCDP, discrete Gaussian noise.
    Zcdp,
}

impl Args {
    /// Every public parameter of the release (the input enters a seeded key through its
    /// digest, not its path). The event range and step are parsed here, so a bad one is
    /// refused before any data is read.
    fn query(&self) -> Result<Query> {
        if let Some(e) = self.clamp_check {
            kinsey_core::check_epsilon("clamp-check", e)?;
        }
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
                // The tree is the default: naming it keeps the default's label and bytes.
                mechanism: kinsey_decay::mechanism_param(self.mechanism.as_deref()),
                arity: self.arity,
                rho: self.rho,
                delta: self.delta,
            },
            epsilon: self.budget()?.0,
            bound: self.bound()?,
            source: SeriesSource {
                column: self.column.clone(),
                time_column: self.time_column.clone(),
                step_seconds: events.then(|| series::parse_step(&self.step)).transpose()?,
                range,
                predicate: self.predicate.clone(),
            },
        })
    }

    /// The release's (epsilon, delta): `--epsilon` under pure DP, or what `--rho` implies
    /// at `--delta` under zCDP. Flags of the other kind are refused.
    fn budget(&self) -> Result<(f64, f64)> {
        match self.privacy {
            Privacy::Pure => {
                if self.rho.is_some() || self.delta.is_some() {
                    return Err(Error::param(
                        "privacy",
                        "--rho and --delta are for --privacy zcdp",
                    ));
                }
                let e = self.epsilon.ok_or_else(|| {
                    Error::param("epsilon", "give --epsilon (or --privacy zcdp --rho R)")
                })?;
                kinsey_core::check_epsilon("epsilon", e)?;
                Ok((e, 0.0))
            }
            Privacy::Zcdp => {
                if self.epsilon.is_some() {
                    return Err(Error::param(
                        "epsilon",
                        "under --privacy zcdp the budget is --rho; the release states the \
                         epsilon it implies at --delta",
                    ));
                }
                let rho = self
                    .rho
                    .ok_or_else(|| Error::param("rho", "--privacy zcdp needs --rho"))?;
                let z = kinsey_decay::zcdp::Zcdp::new(rho, self.delta)?;
                Ok((z.epsilon, z.delta))
            }
        }
    }

    /// The per-step bound: declared, or 1 where every step is a bit.
    fn bound(&self) -> Result<f64> {
        let bits = kinsey_data::stream::is_bit_file(&self.input)
            || (self.predicate.is_some() && self.time_column.is_none());
        match (self.bound, bits) {
            (Some(b), _) => Ok(b),
            (None, true) => Ok(1.0),
            (None, false) => Err(Error::param(
                "bound",
                "--bound is required: declare the largest value one step may hold (values \
                 above it are clamped, and the guarantee covers changing one step by up to \
                 it), e.g. --bound 1000; add --clamp-check 0.01 to be warned, on a noisy \
                 count, when clamping is frequent",
            )),
        }
    }

    /// The public clock of a time-bucketed series (its output's `time` column).
    fn clock(&self) -> Result<Option<series::Clock>> {
        match (&self.time_column, &self.start) {
            (Some(_), Some(start)) => Ok(Some(series::Clock {
                start: series::parse_time("start", start)?,
                step: series::parse_step(&self.step)?,
            })),
            _ => Ok(None),
        }
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
            return series::load(&self.input, &self.column, self.bound()?);
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
        series::load_events(&self.input, &spec, self.bound()?)
    }
}

/// Runs `kinsey decay`.
pub(crate) fn run(a: Args) -> Result<()> {
    if a.time_column.is_none() && a.predicate.is_none() && !a.evaluate {
        return run_streaming(a);
    }
    let t = Instant::now();
    let diagnostics = a.diagnostics || a.evaluate;
    let charged = charge(&a)?;
    let series = a.load()?;
    let n = series.values.len() as u64;
    // The library takes the length as a horizon only where the model needs one, so the
    // release does not depend on --evaluate (a NOT PRIVATE flag) or on the path taken.
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
    o.write(
        &a.out,
        &series::encode_columns(&a.out, &names, &est, a.clock()?)?,
    )?;
    let run = Run {
        n,
        clamped: series.clamped,
        run_s,
        device,
    };
    finish(&a, m.as_ref(), &run, diag, diagnostics, (o, charged))
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
    (mut o, charged): (Outputs, super::ledger::Charged),
) -> Result<()> {
    let rep_path = PathBuf::from(format!("{}.report.json", a.out.display()));
    let mut report = release_report(a, m, run)?;
    if let Some(eps) = a.clamp_check {
        let label = format!(
            "kinsey.decay.clamp_check.v1|{}",
            serde_json::to_string(&a.query()?).map_err(|e| Error::Numerical(e.to_string()))?
        );
        let mut rng = kinsey_dp::NoiseRng::for_release(a.seed, &label, || {
            kinsey_data::digest::of_files(&a.input)
        })?;
        report.clamp_check = Some(ClampCheck::new(
            run.clamped,
            run.n,
            eps,
            a.budget()?.0,
            &mut rng,
        )?);
    }
    write_json(&mut o, &rep_path, &report)?;
    let diag_path = PathBuf::from(format!("{}.NOT-PRIVATE.diagnostics.json", a.out.display()));
    if diagnostics {
        diag["clamped_steps"] = run.clamped.into();
        diag["steps_per_second"] = (run.n as f64 / run.run_s.max(1e-12)).into();
        kinsey_data::output::write_diagnostics(&mut o, &diag_path, &diag)?;
    }
    o.commit()?;
    let ledger = charged.summary(String::new());
    summary(a, m, run, &rep_path, &diag_path);
    if let Some(c) = &report.clamp_check {
        let bound = a.bound()?;
        if c.frequent {
            eprintln!(
                "warning: about {:.0} of {} steps held more than --bound {bound} and were \
                 clamped (a noisy count, epsilon {}): the sums undercount; a larger --bound \
                 keeps more of each step at more noise",
                c.noisy_clamped_steps.max(0.0),
                run.n,
                c.epsilon
            );
        } else {
            println!(
                "clamping: about {:.0} of {} steps clamped to --bound {bound} (a noisy count, \
                 epsilon {}; total epsilon {})",
                c.noisy_clamped_steps.max(0.0),
                run.n,
                c.epsilon,
                c.total_epsilon
            );
        }
    }
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
    // length, and so does every zCDP mechanism's (the factorization needs one): counted
    // first (Parquet metadata, or one pass over the text).
    // A chunk of 2^28 steps already holds 2 GiB per column.
    if !(1..=1 << 28).contains(&a.chunk) {
        return Err(Error::param(
            "chunk",
            format!("must be 1 to 2^28 steps, got {}", a.chunk),
        ));
    }
    let charged = charge(&a)?;
    let len = if a.query()?.takes_length() {
        Some(count_steps(&a.input, &a.column)?)
    } else {
        None
    };
    let (mut m, device) = a.mechanism(len)?;
    let mut reader = SeriesReader::open(&a.input, &a.column, a.bound()?, a.chunk)?;
    let names = m.columns();
    let mut o = outputs(&a)?;
    let staged = o.stage(&a.out)?;
    let mut w = SeriesWriter::create(&staged, &a.out, &names)?;
    // The online path runs a step at a time (minutes on millions of steps): a bar with
    // an ETA over the public number of steps, counted first when not known yet.
    let bar = if a.online {
        let total = match len {
            Some(n) => n,
            None => count_steps(&a.input, &a.column)?,
        };
        crate::term::bar(total, "private decayed sums, online")
    } else {
        crate::term::spinner("private decayed sums")
    };
    let mut xs = Vec::with_capacity(a.chunk.min(1 << 24));
    // The estimates' buffers, reused from chunk to chunk.
    let mut est: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let (mut run_s, mut io_s) = (0.0, 0.0);
    let mut t = Instant::now();
    while reader.next_chunk(&mut xs)? {
        io_s += t.elapsed().as_secs_f64();
        t = Instant::now();
        if a.online {
            kinsey_decay::push_each(m.as_mut(), &xs, &mut est)?;
        } else {
            m.stream_into(&xs, &mut est)?;
        }
        run_s += t.elapsed().as_secs_f64();
        t = Instant::now();
        w.write(&est)?;
        bar.inc(xs.len() as u64);
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
    finish(&a, m.as_ref(), &run, diag, a.diagnostics, (o, charged))
}

/// The ledger's charge of the release (and of its clamp check), before any noise.
fn charge(a: &Args) -> Result<super::ledger::Charged> {
    let (epsilon, delta) = a.budget()?;
    super::ledger::charge(
        &[a.input.as_path()],
        &format!("decay {}", a.model),
        epsilon + a.clamp_check.unwrap_or(0.0),
        delta,
    )
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
            cal.model, cal.epsilon
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

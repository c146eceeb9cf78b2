//! `kinsey decay`: private decayed sums of a time series (seed 004). The flags become the
//! facade's [`DecayedSum`] builder, which charges the ledger, streams the series (or
//! reads events whole), draws the noise and writes the release; this file prints, and
//! draws the NOT PRIVATE evaluation chart.

use crate::term::print_diagnostic;
use kinsey::dp::release::NOT_PRIVATE_PREFIX;
use kinsey::stats::{Bound, DecayFiles, DecayWritten, DecayedSum, DecayedSumBuilder, Events};
use kinsey::{Error, Result};
use kinsey_data::output::Outputs;
use std::path::PathBuf;

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
    /// tree (the dyadic tree, the default), kary (a k-ary tree with level-weighted noise
    /// and optimal estimates: about half the error of the tree; models running, window,
    /// exponential, the last on a forest when that is better), smooth (running sums: a
    /// k-ary tree on the leaves with few non-maximal digits), blt (--privacy zcdp only: a
    /// buffered square-root factorization with correlated Gaussian noise, O(d) state,
    /// needs a horizon), sqrt (--privacy zcdp, window sums: the window's own square-root
    /// factorization, at the lower bound) or best (the one with the least stated error,
    /// chosen from public parameters only). Under --privacy zcdp, tree, kary and smooth
    /// carry Gaussian noise.
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
    /// Approximation parameter in (0, 1) of model polynomial: estimates F' with
    /// (1 - beta) F <= F' <= F (default 0.1).
    #[arg(long)]
    beta: Option<f64>,
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
    /// Steps to plot with --plot or --evaluate, FROM:TO (default: the last 1,440 steps).
    #[arg(long)]
    plot_range: Option<String>,
    /// Draw the release over --plot-range with two stated noise stds either side to
    /// `<out>.plot.svg` and `.png`: released estimates and public stds only, publishable
    /// with the release.
    #[arg(long)]
    plot: bool,
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
    device: kinsey::DevicePref,
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
    /// The flags as the facade's builder. Flags of the other privacy kind are refused, and
    /// so is a missing bound (except for bits).
    fn builder(&self) -> Result<DecayedSumBuilder> {
        let events = (self.time_column.is_some() || self.predicate.is_some()).then(|| Events {
            time_column: self.time_column.clone(),
            step: self.step.clone(),
            start: self.start.clone(),
            end: self.end.clone(),
            predicate: self.predicate.clone(),
        });
        let params = kinsey::decay::ModelParams {
            window: self.window,
            windows: self.windows.clone(),
            alpha: self.alpha,
            c: self.c,
            horizon: self.horizon,
            arity: self.arity,
            ..Default::default()
        };
        let mut b = DecayedSum::named(&self.model, params).device(self.device);
        if let Some(beta) = self.beta {
            b = b.beta(beta);
        }
        if let Some(m) = &self.mechanism {
            b = b.mechanism(m);
        }
        b = match self.privacy {
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
                b.epsilon(e)
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
                b.zcdp(rho, self.delta)
            }
        };
        if let Some(ev) = &events {
            ev.check()?;
        }
        match (
            self.bound,
            kinsey::decay::steps_are_bits(&self.input, events.as_ref()),
        ) {
            (Some(v), _) => b = b.bound(Bound::clamp(v)?),
            (None, true) => {}
            (None, false) => {
                return Err(Error::param(
                    "bound",
                    "--bound is required: declare the largest value one step may hold (values \
                     above it are clamped, and the guarantee covers changing one step by up to \
                     it), e.g. --bound 1000; add --clamp-check 0.01 to be warned, on a noisy \
                     count, when clamping is frequent",
                ));
            }
        }
        if let Some(ev) = events {
            b = b.events(ev);
        }
        if let Some(e) = self.clamp_check {
            b = b.clamp_check(e);
        }
        if let Some(s) = self.seed {
            b = b.seed(s);
        }
        if self.record_seed {
            b = b.record_seed();
        }
        if self.online {
            b = b.online();
        }
        Ok(b)
    }
}

/// Runs `kinsey decay`.
pub(crate) fn run(a: Args) -> Result<()> {
    let mut b = a.builder()?;
    let ledger = super::ledger::facade()?;
    if let Some(l) = &ledger {
        b = b.ledger(l);
    }
    super::common::warn_seed(a.seed);
    let bars = crate::term::Bars::default();
    let chart = |o: &mut Outputs, c: &kinsey::decay::EvaluationChart<'_>| {
        let chart = crate::plot::truth_vs_private(
            format!(
                "NOT PRIVATE: {} (eps = {}) against the true sums",
                c.model, c.epsilon
            ),
            c.column,
            c.estimates,
            c.truths,
            c.range,
        );
        crate::plot::write_chart(o, &c.stem, &chart).map(drop)
    };
    let release_chart = |o: &mut Outputs, c: &kinsey::decay::ReleaseChart<'_>| {
        crate::plot::write_chart(o, &c.stem, &crate::plot::release_band(c)).map(drop)
    };
    if a.plot {
        crate::plot::check_fonts()?;
    }
    let files = DecayFiles {
        release_chart: a.plot.then_some(&release_chart as _),
        diagnostics: a.diagnostics,
        evaluate: a.evaluate,
        plot_range: a.plot_range.clone(),
        chunk: Some(a.chunk),
        progress: Some(&bars),
        chart: Some(&chart),
    };
    let (run, charged) = super::ledger::settle(
        ledger.as_ref(),
        b.write_file(&a.input, &a.column, &a.out, &files),
    )?;
    for e in run.evaluation_not_private() {
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
    let ledger_line = charged.summary(String::new());
    summary(&a, &run);
    if let Some(c) = &run.release.clamp_check {
        let bound = run.release.calibration.bound;
        if c.frequent {
            eprintln!(
                "warning: about {:.0} of {} steps held more than --bound {bound} and were \
                 clamped (a noisy count, epsilon {}): the sums undercount; a larger --bound \
                 keeps more of each step at more noise",
                c.noisy_clamped_steps.max(0.0),
                run.steps,
                c.epsilon
            );
        } else {
            println!(
                "clamping: about {:.0} of {} steps clamped to --bound {bound} (a noisy count, \
                 epsilon {}; total epsilon {})",
                c.noisy_clamped_steps.max(0.0),
                run.steps,
                c.epsilon,
                c.total_epsilon
            );
        }
    }
    if !ledger_line.is_empty() {
        println!("{}", ledger_line.trim_start());
    }
    Ok(())
}

/// The lines a run prints: the release's public figures, then (asked for) the diagnostics.
fn summary(a: &Args, run: &DecayWritten) {
    println!(
        "{}: {} steps, counter noise std {:.3}, estimate std {:.3} ({}); wrote {} and {}",
        run.model,
        run.steps,
        run.counter_std,
        run.estimate_std,
        if a.online {
            "online".to_string()
        } else {
            format!("bulk, noise on {}", run.device)
        },
        a.out.display(),
        run.report_path.display()
    );
    if a.plot {
        println!(
            "wrote {0}.plot.svg and {0}.plot.png (the release and its stated error: publishable)",
            a.out.display()
        );
    }
    if let Some(advice) = &run.advice {
        println!("note: {advice}");
    }
    if let Some(p) = &run.diagnostics_path {
        print_diagnostic(&format!(
            "{} steps clamped to the bound; {:.3e} steps/s; wrote {}",
            run.clamped_steps_not_private(),
            run.steps_per_second_not_private(),
            p.display()
        ));
    }
}

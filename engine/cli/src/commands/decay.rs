//! `kinsey decay`: private decayed sums of a time series (seed 004).

use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, write_json};
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
        /// Derive the noise key from a seed and the release's parameters (NOT private
        /// against whoever knows the seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Write the seed's value into the report (by default it says only that one was used).
        #[arg(long)]
        record_seed: bool,
}

/// Runs `Args`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args { input, column, time_column, step, start, end, predicate, model, epsilon, window, windows, alpha, c, beta, horizon, bound, out, diagnostics, evaluate, plot_range, online, seed, record_seed, } = a;
            use crate::term::print_diagnostic;
            use kinsey_dp::release::NOT_PRIVATE_PREFIX;
            let t = Instant::now();
            let diagnostics = diagnostics || evaluate;
            let release_label = format!(
                "decay|input={}|column={column}|time={time_column:?}|step={step}|start={start:?}|end={end:?}|where={predicate:?}|model={model}|epsilon={epsilon}|window={window:?}|windows={windows:?}|alpha={alpha:?}|c={c:?}|beta={beta}|horizon={horizon:?}|bound={bound}",
                input.display()
            );
            let series = if time_column.is_some() || predicate.is_some() {
                let range = match (&time_column, &start, &end) {
                    (Some(_), Some(s), Some(e)) => Some((
                        kinsey_data::series::parse_time("start", s)?,
                        kinsey_data::series::parse_time("end", e)?,
                    )),
                    (Some(_), _, _) => {
                        return Err(Error::param(
                            "start",
                            "--time-column needs a public --start and --end (the first and \
                             last events are private, and the output length must not depend \
                             on them)",
                        ));
                    }
                    (None, _, _) => None,
                };
                let spec = kinsey_data::series::EventSpec {
                    time_column,
                    step_seconds: kinsey_data::series::parse_step(&step)?,
                    predicate: predicate
                        .as_deref()
                        .map(kinsey_data::series::Predicate::parse)
                        .transpose()?,
                    range,
                };
                kinsey_data::series::load_events(&input, &spec, bound)?
            } else {
                kinsey_data::series::load(&input, &column, bound)?
            };
            let n = series.values.len() as u64;
            if seed.is_some() {
                eprintln!("warning: {}", kinsey_dp::rng::USER_SEED_WARNING);
            }
            let key = kinsey_stats::decay::noise::key(seed, &release_label);
            let m = kinsey_stats::decay::Mechanism::build_with(
                &model,
                window,
                windows,
                alpha,
                c.map(|c| (c, beta)),
                horizon.or(Some(n)),
                epsilon,
                bound,
                key,
            )?;
            let load_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let bar = crate::term::spinner("private decayed sums");
            let est = m.run(&series.values, online);
            bar.finish_and_clear();
            let est = est?;
            let run_s = t.elapsed().as_secs_f64();
            let cal = m.calibration();
            let report = serde_json::json!({
                "input": input.display().to_string(),
                "column": column,
                "steps": n,
                "steps_are": "public: the column's length, or --start..=--end",
                "calibration": cal,
                "guarantee": kinsey_dp::release::Guarantee {
                    kind: "pure".into(),
                    epsilon,
                    delta: 0.0,
                    neighbours: "change one step's value within [0, bound] (event-level: one \
                                 event per step changes)".into(),
                    mechanism: format!("{}: exact discrete Laplace on tree counters", cal.model),
                    sensitivity: format!("{} (L1, over all counters)", cal.sensitivity),
                },
                "path": if online { "online" } else { "bulk" },
                "noise_key": match (seed, record_seed) {
                    (Some(s), true) => format!("derived from user seed {s} and the release's parameters"),
                    (Some(_), false) => "derived from a user seed and the release's parameters (seed not recorded)".into(),
                    (None, _) => "OS-random 256-bit key (not stored)".into(),
                },
                "warning": seed.map(|_| kinsey_dp::rng::USER_SEED_WARNING),
                "std_at_last_step": m.std_at(n - 1),
            });
            let mut diag = serde_json::json!({
                "clamped_steps": series.clamped,
                "seconds": {"load": load_s, "mechanism": run_s},
                "steps_per_second": n as f64 / run_s.max(1e-12),
            });
            let names = m.columns();
            let mut o = Outputs::new();
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                o.ensure_dir(dir)?;
            }
            if evaluate {
                use kinsey_stats::decay::evaluate;
                let range = evaluate::plot_range(plot_range.as_deref(), est[0].len())?;
                let (stats, truths) = evaluate::errors(&m, &series.values, &est);
                let chart = crate::plot::truth_vs_private(
                    format!(
                        "NOT PRIVATE: {} (eps = {epsilon}) against the true sums",
                        cal.model
                    ),
                    &names[0],
                    &est[0],
                    &truths[0],
                    range,
                );
                // write_chart replaces the last extension: `<out>.NOT-PRIVATE.plot.svg`/`.png`.
                let stem = PathBuf::from(format!("{}.NOT-PRIVATE.plot.chart", out.display()));
                crate::plot::write_chart(&mut o, &stem, &chart)?;
                for e in &stats {
                    println!(
                        "{NOT_PRIVATE_PREFIX} evaluation ({}): RMSE {:.3}, mean |error| {:.3}, max {:.3} (theory: std {:.3} at the last step; mean true value {:.3})",
                        e.column,
                        e.rmse,
                        e.mean_abs_error,
                        e.max_abs_error,
                        e.theoretical_std_last_step,
                        e.mean_true_value
                    );
                }
                diag["evaluation"] = if stats.len() == 1 {
                    serde_json::to_value(&stats[0])
                } else {
                    serde_json::to_value(&stats)
                }
                .map_err(|e| Error::Numerical(e.to_string()))?;
            }
            o.write(
                &out,
                &kinsey_data::series::encode_columns(&out, &names, &est)?,
            )?;
            let rep_path = PathBuf::from(format!("{}.report.json", out.display()));
            write_json(&mut o, &rep_path, &report)?;
            let diag_path =
                PathBuf::from(format!("{}.NOT-PRIVATE.diagnostics.json", out.display()));
            if diagnostics {
                kinsey_data::output::write_diagnostics(&mut o, &diag_path, &diag)?;
            }
            o.commit()?;
            println!(
                "{}: {n} steps, counter noise std {:.3}, estimate std {:.3} ({}); wrote {} and {}",
                cal.model,
                cal.counter_std,
                m.std_at(n - 1),
                if online { "online" } else { "bulk" },
                out.display(),
                rep_path.display()
            );
            if diagnostics {
                print_diagnostic(&format!(
                    "{} steps clamped to the bound; {:.3e} steps/s; wrote {}",
                    series.clamped,
                    n as f64 / run_s.max(1e-12),
                    diag_path.display()
                ));
            }
            Ok(())
}

//! `kinsey stats`: DP sum, mean, variance and quantiles of a bounded column.

use super::common::*;
use crate::plot::{Chart, Series, XAxis, write_chart};
use clap::Subcommand;
use kinsey::dp::Neighbours;
use kinsey::stats::Summary;
use kinsey_core::Result;
use kinsey_data::output::Outputs;
use serde_json::json;
use std::path::PathBuf;

/// DP summary statistics of one numeric column with declared bounds.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// The sum of the column's values, each clamped to the bounds.
    Sum(StatArgs),
    /// Their mean.
    Mean(StatArgs),
    /// Their sample variance (denominator n - 1).
    Variance(StatArgs),
    /// Quantiles, chosen among evenly spaced candidates in the bounds.
    Quantiles(QuantileArgs),
}

/// What every statistic takes.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct StatArgs {
    /// Parquet (file or directory) or CSV with a header.
    #[arg(long)]
    pub input: PathBuf,
    /// The numeric column.
    #[arg(long)]
    pub column: String,
    /// The column's public range LO:HI, declared from knowledge, not from the data; values
    /// outside it count as the nearer bound.
    #[arg(long, value_parser = parse_bounds, allow_hyphen_values = true)]
    pub bounds: (f64, f64),
    /// Privacy budget of the release.
    #[arg(long)]
    pub epsilon: f64,
    /// bounded (replace one row; the row count is public) or unbounded (add or remove one
    /// row; the row count is private).
    #[arg(long, value_parser = parse_neighbours)]
    pub neighbours: Neighbours,
    /// Output directory: stats.csv and report.json.
    #[arg(long)]
    pub out: PathBuf,
    /// Seed the noise (reproducible; NOT private against whoever knows it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the seed's value into the report (by default it says only that one was used).
    #[arg(long)]
    pub record_seed: bool,
    /// Also write the exact values and the number of clamped rows (NOT PRIVATE) to
    /// run.NOT-PRIVATE.diagnostics.json.
    #[arg(long)]
    pub diagnostics: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct QuantileArgs {
    #[command(flatten)]
    pub common: StatArgs,
    /// Quantile levels in (0, 1), at most six decimals each; epsilon is split evenly.
    #[arg(long, value_delimiter = ',', default_value = "0.5")]
    pub levels: Vec<f64>,
    /// Evenly spaced public candidates in LO:HI (the resolution of the answer).
    #[arg(long, default_value_t = 1001)]
    pub candidates: usize,
}

/// `LO:HI` as two numbers.
pub(crate) fn parse_bounds(s: &str) -> std::result::Result<(f64, f64), String> {
    let (lo, hi) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not LO:HI (e.g. 0:100 or -5:5)"))?;
    let num = |t: &str| {
        t.trim()
            .parse::<f64>()
            .map_err(|_| format!("'{t}' in '{s}' is not a number (LO:HI, e.g. 0:100)"))
    };
    Ok((num(lo)?, num(hi)?))
}

/// Runs `kinsey stats`.
pub(crate) fn run(a: Args) -> Result<()> {
    report_done(match a.cmd {
        Which::Sum(a) => run_stat(&a, Summary::sum())?,
        Which::Mean(a) => run_stat(&a, Summary::mean())?,
        Which::Variance(a) => run_stat(&a, Summary::variance())?,
        Which::Quantiles(q) => run_stat(
            &q.common,
            Summary::quantiles(&q.levels).candidates(q.candidates),
        )?,
    })
}

/// One statistic through the facade's [`Summary`] (which checks the parameters before
/// any data, charges the ledger before the noise and makes the report), written.
fn run_stat(a: &StatArgs, builder: Summary) -> Result<Done> {
    // The chart needs a font: refused before the ledger is charged, not after.
    crate::plot::check_fonts()?;
    let mut s = builder
        .bounds(a.bounds.0, a.bounds.1)
        .epsilon(a.epsilon)
        .neighbours(a.neighbours);
    if let Some(seed) = a.seed {
        s = s.seed(seed);
    }
    if a.record_seed {
        s = s.record_seed();
    }
    if a.diagnostics {
        s = s.diagnostics();
    }
    warn_seed(a.seed);
    let ledger = super::ledger::facade()?;
    if let Some(l) = &ledger {
        s = s.ledger(l);
    }
    let (out, charged) = super::ledger::settle(ledger.as_ref(), s.of_column(&a.input, &a.column))?;
    let report = &out.report;
    let mut o = Outputs::new();
    o.ensure_dir(&a.out)?;
    o.write(&a.out.join("stats.csv"), &report.csv())?;
    write_chart(&mut o, &a.out.join("stats"), &chart(report, &a.column))?;
    let shown: Vec<String> = report
        .estimates
        .iter()
        .map(|e| match e.noise_std {
            Some(s) => format!("{} = {:.6} (noise std {s:.3e})", e.name, e.value),
            None => format!("{} = {:.6}", e.name, e.value),
        })
        .collect();
    let summary = format!(
        "{} of '{}' clamped to [{}, {}], {} neighbours, eps = {}: {}",
        report.statistic,
        a.column,
        a.bounds.0,
        a.bounds.1,
        a.neighbours.as_str(),
        a.epsilon,
        shown.join(", ")
    );
    let summary = charged.summary(summary);
    let diagnostics = out.exact_not_private.map(|exact| {
        let mut lines: Vec<String> = exact
            .values
            .iter()
            .map(|(name, v)| format!("exact {name} = {v:.6}"))
            .collect();
        lines.push(format!(
            "{} of {} rows were outside the bounds",
            exact.clamped, exact.rows
        ));
        (json!(exact), lines)
    });
    finish_split(o, &a.out, report, summary, diagnostics)
}

/// The released values with two stated noise stds either side where one is stated
/// (publishable: the release and public functions of its parameters, no exact data).
fn chart(report: &kinsey::stats::SummaryReport, column: &str) -> Chart {
    let est = &report.estimates;
    let names = est.iter().map(|e| e.name.clone()).collect();
    let stated = est.iter().all(|e| e.noise_std.is_some());
    Chart {
        title: format!(
            "DP {} of '{column}' in [{}, {}], eps = {}{}",
            report.statistic,
            report.bounds[0],
            report.bounds[1],
            report.guarantee.epsilon,
            if stated {
                ": +/- 2 stated noise std"
            } else {
                " (no single noise std is stated for these values)"
            }
        ),
        x_label: "released value".into(),
        y_label: column.into(),
        series: vec![Series {
            name: "released".into(),
            points: est
                .iter()
                .enumerate()
                .map(|(i, e)| (i as f64, e.value))
                .collect(),
            err: stated.then(|| {
                est.iter()
                    .map(|e| 2.0 * e.noise_std.unwrap_or(0.0))
                    .collect()
            }),
            dashed: false,
        }],
        log_x: false,
        x_axis: XAxis::Categories(names),
        bars: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse_or_say_the_form() {
        assert_eq!(parse_bounds("-5:10.5"), Ok((-5.0, 10.5)));
        assert!(parse_bounds("5").expect_err("no colon").contains("LO:HI"));
        assert!(
            parse_bounds("a:1")
                .expect_err("nan")
                .contains("not a number")
        );
    }
}

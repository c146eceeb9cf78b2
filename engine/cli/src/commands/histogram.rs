//! `kinsey histogram`: DP histograms and counts of a column (seed 002).

use super::common::*;
use crate::plot::{Chart, Series, XAxis, write_chart};
use kinsey_core::Result;
use kinsey_data::output::Outputs;
use kinsey_dp::Neighbours;
use kinsey_stats::histogram::Binning;
use kinsey_stats::histogram_query::{Bins, HistogramQuery};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Parquet (file or directory) or CSV with a header.
    #[arg(long)]
    pub input: PathBuf,
    /// The column to count.
    #[arg(long)]
    pub column: String,
    /// Numeric bins LO:HI:BINS (plus "< LO" and ">= HI" bins).
    #[arg(long, conflicts_with = "categories", allow_hyphen_values = true)]
    pub bins: Option<String>,
    /// Declared categories (plus "(other)"); without --bins or --categories, one bin: a count.
    #[arg(long, value_delimiter = ',')]
    pub categories: Option<Vec<String>>,
    /// Count only rows with COLUMN OP NUMBER (a public predicate), e.g. "delay>=15".
    #[arg(long = "where")]
    pub predicate: Option<String>,
    #[arg(long)]
    /// Privacy budget of the release.
    pub epsilon: f64,
    /// bounded (replace one row: sensitivity 2) or unbounded (add/remove: sensitivity 1).
    #[arg(long, value_parser = parse_neighbours)]
    pub neighbours: Neighbours,
    /// Output directory: histogram.csv, report.json, histogram.svg/png.
    #[arg(long)]
    pub out: PathBuf,
    /// Seed the noise (reproducible; NOT private against whoever knows it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the seed's value into the report (by default it says only that one was used).
    #[arg(long)]
    pub record_seed: bool,
}

impl Args {
    /// The query's public parameters; bad ones are refused before any file is read.
    fn query(&self) -> Result<HistogramQuery> {
        let bins = match (&self.bins, &self.categories) {
            (Some(spec), _) => Bins::Binned(Binning::numeric(spec)?),
            (None, Some(cats)) => Bins::Binned(Binning::categories(cats)?),
            (None, None) => Bins::Count,
        };
        let q = HistogramQuery {
            column: self.column.clone(),
            bins,
            predicate: self.predicate.clone(),
            epsilon: self.epsilon,
            neighbours: self.neighbours,
        };
        q.check()?;
        Ok(q)
    }
}

/// The release of `kinsey histogram`: the noisy counts, written with their guarantee.
fn run_histogram(a: &Args) -> Result<Done> {
    // Parameters before data: an absurd epsilon is refused before any file is read.
    let query = a.query()?;
    crate::plot::check_fonts()?;
    let is_count = query.is_count();
    if a.seed.is_some() {
        eprintln!("warning: {}", kinsey_dp::rng::USER_SEED_WARNING);
    }
    // Charge, then draw the noise, then publish.
    let charged = super::ledger::charge(
        &[a.input.as_path()],
        if is_count { "count" } else { "histogram" },
        a.epsilon,
        0.0,
    )?;
    let mut rng = query.rng(a.input.as_path(), a.seed, a.record_seed)?;
    let report = query.release(a.input.as_path(), &mut rng)?;
    let rel = &report.release;
    let mut o = Outputs::new();
    o.ensure_dir(&a.out)?;
    o.write(
        &a.out.join("histogram.csv"),
        &csv(
            "bin,noisy_count,count",
            rel.labels
                .iter()
                .zip(&rel.noisy)
                .zip(&rel.counts)
                .map(|((l, v), c)| format!("\"{l}\",{v},{c}")),
        ),
    )?;
    if !is_count {
        let chart = Chart {
            title: format!(
                "{}: DP histogram (eps = {}, {} neighbours)",
                a.column,
                a.epsilon,
                a.neighbours.as_str()
            ),
            x_label: a.column.clone(),
            y_label: "noisy count (bars: +- 1 noise std)".into(),
            series: vec![Series {
                name: format!("noisy count (noise std {:.1})", rel.noise_std),
                points: rel
                    .noisy
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i as f64, *v))
                    .collect(),
                err: Some(vec![rel.noise_std; rel.noisy.len()]),
                dashed: false,
            }],
            log_x: false,
            x_axis: XAxis::Categories(rel.labels.clone()),
            bars: true,
        };
        write_chart(&mut o, &a.out.join("histogram"), &chart)?;
    }
    let summary = format!(
        "{} of '{}' under {} neighbours (sensitivity {}), eps = {}: noise std {:.2} per bin; total {}{}",
        if is_count { "count" } else { "histogram" },
        a.column,
        a.neighbours.as_str(),
        rel.sensitivity,
        a.epsilon,
        rel.noise_std,
        rel.total.round(),
        if rel.total_is_exact {
            " (n, public under bounded neighbours)"
        } else {
            " (sum of the noisy bins)"
        }
    );
    let summary = charged.summary(summary);
    finish(o, &a.out, &report, summary)
}

// ---------------------------------------------------------------- tree

/// Runs `kinsey histogram`.
pub(crate) fn run(a: Args) -> Result<()> {
    report_done(run_histogram(&a)?)
}

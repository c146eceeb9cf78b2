//! `kinsey histogram`: DP histograms and counts of a column (seed 002).

use super::common::*;
use crate::plot::{Chart, Series, write_chart};
use kinsey_core::Result;
use kinsey_data::columns::{count_rows, read_categorical, read_numeric};
use kinsey_data::output::Outputs;
use kinsey_data::series::Predicate;
use kinsey_dp::Neighbours;
use kinsey_stats::histogram::{self, Binning};
use serde_json::json;
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

/// The release of `kinsey histogram`: the noisy counts, written with their guarantee.
fn run_histogram(a: &Args) -> Result<Done> {
    // Parameters before data: an absurd epsilon is refused before any file is read.
    kinsey_core::check_epsilon("epsilon", a.epsilon)?;
    crate::plot::check_fonts()?;
    let keep: Option<Vec<bool>> = match &a.predicate {
        Some(p) => {
            let p = Predicate::parse(p)?;
            Some(
                read_numeric(&a.input, &p.column)?
                    .iter()
                    .map(|&x| p.holds(x))
                    .collect(),
            )
        }
        None => None,
    };
    let filter = |i: usize| {
        keep.as_ref()
            .is_none_or(|k| k.get(i).copied().unwrap_or(false))
    };
    let (binning, exact) = match (&a.bins, &a.categories) {
        (Some(spec), _) => {
            let b = Binning::numeric(spec)?;
            let v: Vec<f64> = read_numeric(&a.input, &a.column)?
                .into_iter()
                .enumerate()
                .filter(|(i, _)| filter(*i))
                .map(|(_, v)| v)
                .collect();
            let c = b.count_numeric(&v)?;
            (b, c)
        }
        (None, Some(cats)) => {
            let b = Binning::categories(cats)?;
            let v: Vec<String> = read_categorical(&a.input, &a.column)?
                .into_iter()
                .enumerate()
                .filter(|(i, _)| filter(*i))
                .map(|(_, v)| v)
                .collect();
            let c = b.count_categories(&v)?;
            (b, c)
        }
        (None, None) => {
            // a count: one category holding every (kept) row; the column must exist
            let n = count_rows(&a.input, &a.column)?;
            let c = (0..n).filter(|&i| filter(i)).count() as u64;
            (Binning::Categories(vec!["count".into()]), vec![c, 0])
        }
    };
    let is_count = a.bins.is_none() && a.categories.is_none();
    let mut labels = binning.labels();
    let exact = if is_count {
        labels.truncate(1);
        exact[..1].to_vec()
    } else {
        exact
    };
    // The input enters through its digest (`release_rng`), not its path: the same data
    // replays wherever it lies.
    let label = format!(
        "histogram|column={}|bins={:?}|categories={:?}|where={:?}|epsilon={}|neighbours={}",
        a.column,
        a.bins,
        a.categories,
        a.predicate,
        a.epsilon,
        a.neighbours.as_str()
    );
    let mut rng = release_rng(a.seed, a.record_seed, &label, &[&a.input])?;
    let filtered = a.predicate.is_some();
    let rel = histogram::release(&exact, labels, a.neighbours, a.epsilon, filtered, &mut rng)?;
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
                "{}: DP histogram (eps = {}, {})",
                a.column,
                a.epsilon,
                a.neighbours.as_str()
            ),
            x_label: "bin (see histogram.csv)".into(),
            y_label: "noisy count".into(),
            series: vec![Series {
                name: format!("noisy count (std {:.1})", rel.noise_std),
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
    let report = json!({
        "kind": "kinsey.histogram.v1",
        "input": a.input, "column": a.column, "where": a.predicate,
        "binning": binning, "release": rel, "rng": rng.record(),
    });
    finish(o, &a.out, report, summary)
}

// ---------------------------------------------------------------- tree

/// Runs `kinsey histogram`.
pub(crate) fn run(a: Args) -> Result<()> {
    report_done(run_histogram(&a)?)
}

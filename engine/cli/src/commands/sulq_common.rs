//! What the SuLQ subcommands share: the budget, output and input flags as the facade's
//! [`kinsey::sulq::Options`] and [`kinsey::sulq::Input`], and writing a run (its files,
//! charts, release and NOT PRIVATE diagnostics) with its summary.

use super::common::*;
use crate::plot::{Chart, write_chart};
use kinsey::dp::Neighbours;
use kinsey::sulq::{GaussianCalibration, Input, Options, SulqOutput};
use kinsey::{Error, Result};
use std::path::{Path, PathBuf};

pub(crate) fn parse_calibration(s: &str) -> std::result::Result<GaussianCalibration, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// Budget and output options shared by the SuLQ commands.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SulqCommon {
    #[arg(long)]
    /// Privacy budget of the release.
    pub epsilon: f64,
    /// delta of (eps, delta)-DP; keep it well below 1/n.
    #[arg(long, default_value_t = 1e-6)]
    pub delta: f64,
    #[arg(long, value_parser = parse_neighbours)]
    /// bounded (one row replaced; n public) or unbounded (one row added or removed).
    pub neighbours: Neighbours,
    /// zcdp (Gaussian mechanism, zCDP accounting) or paper (the seed's R bound).
    #[arg(long, value_parser = parse_calibration, default_value = "zcdp")]
    pub calibration: GaussianCalibration,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Compute NOT PRIVATE diagnostics (exact row count under unbounded neighbours,
    /// clipping counts, non-private baselines, test accuracy) and write them to
    /// run.NOT-PRIVATE.diagnostics.json.
    #[arg(long)]
    pub diagnostics: bool,
    /// Seed the noise (reproducible; NOT private against whoever knows it).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the seed's value into the report (by default it says only that one was used).
    #[arg(long)]
    pub record_seed: bool,
}

/// Input columns of the SuLQ commands.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct SulqInput {
    /// Parquet (file or directory) or CSV with a header.
    #[arg(long)]
    pub input: PathBuf,
    /// Feature columns: NAME (already in range) or NAME:LO:HI (public bounds); default
    /// every numeric column except the label.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub columns: Vec<String>,
    /// Clip values outside the range instead of failing.
    #[arg(long)]
    pub clip: bool,
}

impl SulqCommon {
    /// The facade's options of these flags, with the ledger the global flags name; warns
    /// once about a user seed.
    pub(crate) fn options(&self) -> Result<Options> {
        warn_seed(self.seed);
        let mut o = Options::new(self.epsilon, self.delta, self.neighbours);
        o.budget.calibration = self.calibration;
        o.budget.seed = self.seed;
        o.budget.record_seed = self.record_seed;
        o.diagnostics = self.diagnostics;
        o.ledger = super::ledger::facade()?;
        Ok(o)
    }
}

impl SulqInput {
    /// The facade's input of these flags.
    pub(crate) fn input(&self) -> Input {
        Input {
            path: self.input.clone(),
            columns: self.columns.clone(),
            clip: self.clip,
        }
    }
}

/// A facade run written out with its charts: the files, the release report and, when
/// computed, the NOT PRIVATE diagnostics, all or nothing; the summary gets the ledger's
/// line, then the diagnostics' findings, each marked NOT PRIVATE.
pub(crate) fn finish_sulq<A: serde::Serialize, R: serde::Serialize>(
    out: &Path,
    output: SulqOutput<A, R>,
    charged: super::ledger::Charged,
    summary: String,
    charts: Vec<(PathBuf, Chart)>,
) -> Result<Done> {
    let lines = output.diagnostic_lines.clone();
    let written = output.write(out, |set| {
        for (stem, chart) in &charts {
            write_chart(set, stem, chart)?;
        }
        Ok(())
    })?;
    let mut summary = charged.summary(summary);
    if let Some(path) = &written.diagnostics {
        for l in lines
            .into_iter()
            .chain(std::iter::once(format!("wrote {}", path.display())))
        {
            summary.push('\n');
            summary.push_str(kinsey::dp::release::NOT_PRIVATE_PREFIX);
            summary.push(' ');
            summary.push_str(&l);
        }
    }
    Ok(Done {
        summary,
        written: written.files,
    })
}

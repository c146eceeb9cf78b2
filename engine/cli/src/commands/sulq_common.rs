//! What the SuLQ subcommands share: the budget and input flags, opening the SuLQ
//! database with the release's generator, and writing a run's release and diagnostics
//! (split by `kinsey_stats::sulq::release::SulqRun`).

use super::common::*;
use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use kinsey_data::table::{
    ColumnBounds, LabelledBlock, Matrix, MatrixShape, Range, for_each_labelled_block, read_matrix,
};
use kinsey_dp::RngRecord;
use kinsey_dp::{Neighbours, NoiseRng};
use kinsey_stats::sulq::QueryRecord;
use kinsey_stats::sulq::release::{OneTable, SulqRun};
use kinsey_stats::sulq::{self, GaussianCalibration, SulqDb, query};
use std::path::{Path, PathBuf};

pub(crate) fn parse_calibration(s: &str) -> std::result::Result<GaussianCalibration, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// The ledger's charge of a SuLQ release on `inputs`, before its noise is drawn.
pub(crate) fn charge(
    c: &SulqCommon,
    inputs: &[&Path],
    command: &str,
) -> Result<super::ledger::Charged> {
    super::ledger::charge(inputs, command, c.epsilon, c.delta)
}

/// A SuLQ run written out: the library splits it into release and diagnostics (the exact
/// row count where private, clipping counts, test accuracy and evaluation figures), and the
/// diagnostics are written (NOT PRIVATE) only with `--diagnostics`.
pub(crate) fn finish_sulq<A: serde::Serialize, R: serde::Serialize>(
    o: Outputs,
    c: &SulqCommon,
    charged: super::ledger::Charged,
    run: SulqRun<A, R>,
    summary: String,
    lines: Vec<String>,
) -> Result<Done> {
    let summary = charged.summary(summary);
    let (release, diag) = run.split();
    let diagnostics = if c.diagnostics {
        let v = serde_json::to_value(&diag).map_err(|e| Error::Numerical(e.to_string()))?;
        Some((v, lines))
    } else {
        None
    };
    finish_split(o, &c.out, &release, summary, diagnostics)
}

/// "N rows" where n is public (bounded neighbours), otherwise nothing that depends on n.
pub(crate) fn rows_text(c: &SulqCommon, n: usize) -> String {
    if c.neighbours.n_is_public() {
        format!("{n} rows")
    } else {
        "a private number of rows".into()
    }
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

impl SulqInput {
    /// The public parameters of the input (its columns and their boxes, clipping), for a
    /// seeded release's description; the data enter through their digest, not the path.
    pub(crate) fn describe(&self) -> serde_json::Value {
        serde_json::json!({"columns": self.columns, "clip": self.clip})
    }

    pub(crate) fn read(&self, range: Range, exclude: &[&str]) -> Result<Matrix> {
        read_matrix(&self.input, &self.specs()?, exclude, range, self.clip)
    }

    /// The `--columns` specifications, parsed.
    fn specs(&self) -> Result<Vec<ColumnBounds>> {
        self.columns.iter().map(|s| s.parse()).collect()
    }

    /// The feature columns' rows (into `range`) and the labels of column `label` (0/1 when
    /// `zero_one`, else -1/+1), a block at a time, as [`for_each_labelled_block`] reads them;
    /// the shape.
    pub(crate) fn for_each_labelled_block(
        &self,
        range: Range,
        (label, zero_one): (&str, bool),
        f: &mut LabelledBlock<'_>,
    ) -> Result<MatrixShape> {
        let enc = if zero_one {
            kinsey_data::LabelEncoding::ZeroOne
        } else {
            kinsey_data::LabelEncoding::PlusMinusOne
        };
        let clip = (range, self.clip);
        for_each_labelled_block(&self.input, &self.specs()?, (label, enc), clip, f)
    }
}

impl SulqCommon {
    /// The library's budget of these flags.
    pub(crate) fn budget(&self) -> query::Budget {
        query::Budget {
            epsilon: self.epsilon,
            delta: self.delta,
            neighbours: self.neighbours,
            calibration: self.calibration,
            seed: self.seed,
            record_seed: self.record_seed,
        }
    }
}

impl SulqInput {
    /// The library's column specification of these flags.
    pub(crate) fn columns(&self) -> query::Columns {
        query::Columns {
            specs: self.columns.clone(),
            clip: self.clip,
        }
    }
}

/// Warn about a user seed, then the run's generator and a SuLQ database on a fork of it
/// (`kinsey_stats::sulq::query::open_db`, the library's, bound to `inputs`' bytes).
pub(crate) fn open_db(
    c: &SulqCommon,
    n: usize,
    plan: sulq::Plan,
    run: serde_json::Value,
    inputs: &[&Path],
) -> Result<(NoiseRng, SulqDb)> {
    warn_seed(c.seed);
    query::open_db(&c.budget(), n, plan, run, || {
        kinsey_data::digest::of_inputs(inputs)
    })
}

/// A one-table SuLQ run as most commands make it (`kinsey_stats::sulq::query::one_table`).
pub(crate) fn one_table<R>(
    kind: &'static str,
    c: &SulqCommon,
    input: &SulqInput,
    m: &MatrixShape,
    ledger: Vec<QueryRecord>,
    result: R,
    rng: RngRecord,
) -> SulqRun<OneTable, R> {
    query::one_table(kind, &c.budget(), &input.input, m, ledger, result, rng)
}

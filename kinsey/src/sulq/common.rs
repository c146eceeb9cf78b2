//! What the SuLQ analyses share: the input and its columns, the budget, charging the
//! ledger, the release's generator and database, and writing a run as its release and
//! (asked for) its NOT PRIVATE diagnostics.

use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::table::{
    ColumnBounds, LabelledBlock, Matrix, MatrixShape, Range, for_each_labelled_block, read_matrix,
};
use kinsey_dp::{NoiseRng, RngRecord};
use kinsey_stats::sulq::release::{OneTable, SulqRun};
use kinsey_stats::sulq::{Plan, QueryRecord, SulqDb, query};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub use kinsey_stats::sulq::query::Budget;

/// The table an analysis reads and its feature columns.
#[derive(Debug, Clone)]
pub struct Input {
    /// Parquet (file or directory) or CSV with a header.
    pub path: PathBuf,
    /// `NAME` (already in range) or `NAME:LO:HI` (public bounds); empty: every numeric
    /// column except the label.
    pub columns: Vec<String>,
    /// Clip values outside the range instead of refusing them.
    pub clip: bool,
}

impl Input {
    /// Every numeric column of `path`, refused outside `[0, 1]` (or `[-1, 1]`).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            columns: Vec::new(),
            clip: false,
        }
    }

    /// The public parameters of the input (its columns and their boxes, clipping), for a
    /// seeded release's description; the data enter through their digest, not the path.
    pub(crate) fn describe(&self) -> serde_json::Value {
        serde_json::json!({"columns": self.columns, "clip": self.clip})
    }

    /// The feature columns' rows, whole, in the box `range`.
    pub(crate) fn read(&self, range: Range, exclude: &[&str]) -> Result<Matrix> {
        read_matrix(&self.path, &self.specs()?, exclude, range, self.clip)
    }

    fn specs(&self) -> Result<Vec<ColumnBounds>> {
        self.columns.iter().map(|s| s.parse()).collect()
    }

    /// The feature columns' rows (into `range`) and the labels of column `label` (0/1 when
    /// `zero_one`, else -1/+1), a block at a time; the shape.
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
        for_each_labelled_block(&self.path, &self.specs()?, (label, enc), clip, f)
    }

    /// The library's column specification.
    pub(crate) fn columns(&self) -> query::Columns {
        query::Columns {
            specs: self.columns.clone(),
            clip: self.clip,
        }
    }
}

/// The budget and what else every analysis takes: whether to compute the NOT PRIVATE
/// diagnostics, and the ledger to charge before any noise is drawn.
#[derive(Debug, Clone)]
pub struct Options {
    /// Epsilon, delta, neighbours, calibration and seed.
    pub budget: Budget,
    /// Compute the NOT PRIVATE diagnostics (exact row count under unbounded neighbours,
    /// clipping counts, non-private baselines, test accuracy).
    pub diagnostics: bool,
    /// The ledger charged before the noise is drawn.
    pub ledger: Option<crate::ledger::Ledger>,
}

impl Options {
    /// `(epsilon, delta)` under `neighbours`, the default calibration (zCDP), no seed.
    pub fn new(epsilon: f64, delta: f64, neighbours: kinsey_dp::Neighbours) -> Self {
        Self {
            budget: Budget {
                epsilon,
                delta,
                neighbours,
                calibration: kinsey_stats::sulq::GaussianCalibration::Zcdp,
                seed: None,
                record_seed: false,
            },
            diagnostics: false,
            ledger: None,
        }
    }

    /// Charge the ledger for a release from `inputs` (each its own data set), before any
    /// noise is drawn.
    pub(crate) fn charge(&self, inputs: &[&Path], command: &str) -> Result<()> {
        let Some(l) = &self.ledger else {
            return Ok(());
        };
        let b = &self.budget;
        l.charge_files(inputs, command, (b.epsilon, b.delta))
            .map(drop)
    }

    /// The run's generator and a SuLQ database on a fork of it, bound to `inputs`' bytes.
    pub(crate) fn open_db(
        &self,
        n: usize,
        plan: Plan,
        run: serde_json::Value,
        inputs: &[&Path],
    ) -> Result<(NoiseRng, SulqDb)> {
        query::open_db(&self.budget, n, plan, run, || {
            kinsey_data::digest::of_inputs(inputs)
        })
    }

    /// A one-table run as most analyses make it.
    pub(crate) fn one_table<R>(
        &self,
        kind: &'static str,
        input: &Input,
        m: &MatrixShape,
        ledger: Vec<QueryRecord>,
        result: R,
        rng: RngRecord,
    ) -> SulqRun<OneTable, R> {
        query::one_table(kind, &self.budget, &input.path, m, ledger, result, rng)
    }

    /// "N rows" where n is public (bounded neighbours), otherwise nothing that depends on n.
    pub fn rows_text(&self, n: usize) -> String {
        if self.budget.neighbours.n_is_public() {
            format!("{n} rows")
        } else {
            "a private number of rows".into()
        }
    }
}

/// A CSV file's bytes: a header, then one line per row.
pub(crate) fn csv(header: &str, rows: impl Iterator<Item = String>) -> Vec<u8> {
    let mut s = String::from(header);
    s.push('\n');
    for r in rows {
        s.push_str(&r);
        s.push('\n');
    }
    s.into_bytes()
}

/// A SuLQ run ready to write: its files beside the report (CSV, model), the run the library
/// splits into release and diagnostics, and the diagnostics' lines (NOT PRIVATE).
#[derive(Debug)]
pub struct SulqOutput<A, R> {
    /// Files written beside the report: a name in the output folder and its bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// The run: release and diagnostics.
    pub run: SulqRun<A, R>,
    /// The diagnostics' one-line findings (NOT PRIVATE), when computed.
    pub diagnostic_lines: Vec<String>,
    /// Whether diagnostics were computed.
    pub diagnostics: bool,
}

/// What [`SulqOutput::write`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// The diagnostics file, when written (NOT PRIVATE).
    pub diagnostics: Option<PathBuf>,
}

impl<A: Serialize, R: Serialize> SulqOutput<A, R> {
    /// Write the files, `report.json` (the release only) and, when computed,
    /// `run.NOT-PRIVATE.diagnostics.json` into `out`, with whatever `extra` adds (charts)
    /// to the same set: all or nothing.
    pub fn write(
        self,
        out: &Path,
        extra: impl FnOnce(&mut Outputs) -> Result<()>,
    ) -> Result<Written> {
        let mut o = Outputs::new();
        o.ensure_dir(out)?;
        for (name, bytes) in &self.files {
            o.write(&out.join(name), bytes)?;
        }
        extra(&mut o)?;
        let (release, diag) = self.run.split();
        write_json(&mut o, &out.join("report.json"), &release)?;
        let diagnostics = if self.diagnostics {
            let v = serde_json::to_value(&diag).map_err(|e| Error::Numerical(e.to_string()))?;
            let path = kinsey_data::output::diagnostics_path(out, "run");
            kinsey_data::output::write_diagnostics(&mut o, &path, &v)?;
            Some(path)
        } else {
            None
        };
        let files = o.commit()?;
        Ok(Written { files, diagnostics })
    }
}

/// A JSON file's bytes as the release files are written (pretty).
pub(crate) fn json_bytes(value: &impl Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(value).map_err(|e| Error::Numerical(e.to_string()))
}

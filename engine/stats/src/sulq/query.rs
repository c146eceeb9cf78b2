//! One SuLQ release as the library makes it, for `kinsey sulq kmeans|pca` and every
//! library caller alike: the budget and input, the release's generator (from the OS, or
//! from a seed bound to the release's parameters and its input's digest), the SuLQ
//! database on a fork of it, the analysis, and the run to split into release and
//! diagnostics ([`SulqRun::split`]). Outputs, plots and the terminal are the caller's.

use super::kmeans::{self, KmeansConfig, KmeansResult};
use super::pca::{self, PcaConfig, PcaResult};
use super::release::{OneTable, SulqRun};
use super::spill::Rows;
use super::{GaussianCalibration, Plan, QueryRecord, SulqDb};
use kinsey_core::Result;
use kinsey_data::memory::ColumnSource;
use kinsey_data::table::{
    ColumnBounds, Matrix, MatrixShape, Range, for_each_matrix_block, matrix_columns, read_matrix,
};
use kinsey_dp::{Neighbours, NoiseRng, RngRecord};
use kinsey_kernels::DevicePref;
use std::path::Path;

/// A seeded release's label: `kinsey.<kind>.v2|` then its public parameters as JSON (keys
/// sorted, shortest round-trip numbers): one encoding per set of parameters, never Rust's
/// `Debug` form and never a path (the input enters through its digest).
pub fn release_label(kind: &str, params: &serde_json::Value) -> String {
    format!("kinsey.{kind}.v2|{params}")
}

/// The budget of one SuLQ release, its neighbours and its seed.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Epsilon of the (epsilon, delta) guarantee.
    pub epsilon: f64,
    /// Delta of the guarantee (keep it well below 1/n).
    pub delta: f64,
    /// The neighbour definition.
    pub neighbours: Neighbours,
    /// zCDP accounting or the seed's R bound.
    pub calibration: GaussianCalibration,
    /// A seed replays the release of the same data (NOT private against its holder).
    pub seed: Option<u64>,
    /// Write the seed's value into the report.
    pub record_seed: bool,
}

/// The input columns: `NAME` (already in range) or `NAME:LO:HI` (public bounds), as the
/// user wrote them (a seeded release's label holds them as written); empty: every numeric
/// column.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    /// The column specifications.
    pub specs: Vec<String>,
    /// Clip values outside the range instead of refusing them.
    pub clip: bool,
}

impl Columns {
    /// Their public description, for a seeded release's label (the data enter through
    /// their digest, not their name).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({"columns": self.specs, "clip": self.clip})
    }

    /// The columns read, with their declared boxes, as a model file records them: the
    /// specifications, or `names` (every column read, already in range) when there are none.
    pub fn bounds(&self, names: &[String]) -> Result<Vec<ColumnBounds>> {
        if self.specs.is_empty() {
            return Ok(names
                .iter()
                .map(|name| ColumnBounds {
                    name: name.clone(),
                    bounds: None,
                })
                .collect());
        }
        self.specs.iter().map(|s| s.parse()).collect()
    }

    /// The columns of `input` in the box `range`.
    pub fn read<S: ColumnSource + ?Sized>(&self, input: &S, range: Range) -> Result<Matrix> {
        let cols = self
            .specs
            .iter()
            .map(|s| s.parse())
            .collect::<Result<Vec<ColumnBounds>>>()?;
        read_matrix(input, &cols, &[], range, self.clip)
    }
}

/// Warn when delta is not below 1/n; only where n is public (bounded neighbours), so that
/// whether the warning appears does not depend on a private n.
pub fn warn_delta(b: &Budget, n: usize) {
    if b.neighbours.n_is_public() && b.delta >= 1.0 / n as f64 {
        tracing::warn!(
            "delta = {} is not below 1/n = {:.3e}: a mechanism could publish a whole row \
             with probability delta",
            b.delta,
            1.0 / n as f64
        );
    }
}

/// The release's generator and a SuLQ database on a fork of it (after [`warn_delta`]).
/// `run` describes the analysis; `digest` is the input's (a file's bytes, a table's values).
pub fn open_db(
    b: &Budget,
    n: usize,
    plan: Plan,
    run: serde_json::Value,
    digest: impl FnOnce() -> Result<kinsey_dp::DataDigest>,
) -> Result<(NoiseRng, SulqDb)> {
    warn_delta(b, n);
    let params = serde_json::json!({
        "epsilon": b.epsilon,
        "delta": b.delta,
        "neighbours": b.neighbours.as_str(),
        "calibration": match b.calibration {
            GaussianCalibration::Zcdp => "zcdp",
            GaussianCalibration::Paper => "paper",
        },
        "run": run,
    });
    let mut rng = NoiseRng::for_release(b.seed, &release_label("sulq", &params), digest)?;
    if b.record_seed {
        rng.record_seed(b.seed);
    }
    let db = SulqDb::new(plan, rng.fork());
    Ok((rng, db))
}

/// A one-table run: its input, columns, ledger, row count, result and clipping counts (the
/// caller sets the rest: device, test table, evaluation).
pub fn one_table<R>(
    kind: &'static str,
    b: &Budget,
    input: &Path,
    m: &MatrixShape,
    ledger: Vec<QueryRecord>,
    result: R,
    rng: RngRecord,
) -> SulqRun<OneTable, R> {
    SulqRun {
        kind,
        about: OneTable {
            input: input.to_path_buf(),
            device: None,
            columns: m.names.clone(),
            test: None,
            ledger,
        },
        neighbours: b.neighbours,
        rows: Some(m.n),
        result,
        rng,
        clipped: Some(m.clipped.clone()),
        evaluation: None,
        test_accuracy: None,
    }
}

/// A finished analysis: the run (release and diagnostics), the shape of the rows it read
/// and its database (for the exact baselines and summaries a caller adds as diagnostics).
#[derive(Debug)]
pub struct Analysis<R> {
    /// What to split into release and diagnostics.
    pub run: SulqRun<OneTable, R>,
    /// The columns read and their shape.
    pub shape: MatrixShape,
    /// The rows read, in the box, where the analysis held them whole (k-means on a GPU);
    /// `None` where it read them a block at a time (NOT PRIVATE: for diagnostics only).
    pub matrix: Option<Matrix>,
    /// Whether its rows went to a spill file past the memory limit (NOT PRIVATE: it
    /// follows the number of rows).
    pub spilled: bool,
    /// The database after the analysis (its plan and budget used).
    pub db: SulqDb,
}

/// [`open_db`] for an analysis of the columns `shape` names of `input` (bound to their
/// digest).
fn open_table<S: ColumnSource + ?Sized>(
    b: &Budget,
    input: &S,
    shape: &MatrixShape,
    plan: Plan,
    run: serde_json::Value,
) -> Result<(NoiseRng, SulqDb)> {
    let names: Vec<&str> = shape.names.iter().map(String::as_str).collect();
    open_db(b, shape.n, plan, run, || input.digest(&names))
}

/// A k-means run's public description, for its seeded label.
fn kmeans_run(columns: &Columns, cfg: &KmeansConfig) -> serde_json::Value {
    serde_json::json!({"command": "kmeans", "input": columns.describe(), "k": cfg.k,
        "iterations": cfg.iters})
}

/// A PCA run's public description, for its seeded label.
fn pca_run(columns: &Columns, cfg: &PcaConfig) -> serde_json::Value {
    serde_json::json!({"command": "pca", "input": columns.describe(),
        "components": cfg.components, "center": cfg.center})
}

/// The columns of `input` its specifications name (every numeric column when none is
/// given), with their declared boxes.
fn resolve<S: ColumnSource + ?Sized>(input: &S, columns: &Columns) -> Result<Vec<ColumnBounds>> {
    let specs = columns
        .specs
        .iter()
        .map(|s| s.parse())
        .collect::<Result<Vec<ColumnBounds>>>()?;
    matrix_columns(input, &specs, &[])
}

/// SuLQ k-means of `input`'s `columns` (in `[0, 1]`): `kinsey sulq kmeans`'s release.
/// Also returns the random start (public randomness) for the exact baseline.
///
/// On the CPU one pass over the input checks the rows, counts them and keeps them as f32:
/// in memory while they fit half the machine's memory, else in an unlinked private spill
/// file (`spill::Rows`); each step's exact sizes and sums are then a pass over them a
/// block of [`MATRIX_BLOCK_ROWS`](kinsey_data::table::MATRIX_BLOCK_ROWS) rows at a time, added in the kernel's fixed order (the
/// sums of the rows held whole, bit for bit). On a GPU the rows go to the device whole.
pub fn kmeans<S: ColumnSource + ?Sized>(
    b: &Budget,
    input: &S,
    columns: &Columns,
    cfg: &KmeansConfig,
    device: DevicePref,
) -> Result<(Analysis<KmeansResult>, Vec<f64>)> {
    let limit = kinsey_core::limits::default_memory_limit();
    kmeans_within(b, input, columns, cfg, (device, limit))
}

/// [`kmeans`] holding at most `memory_limit` bytes of rows on the CPU (past it the rows go
/// to the spill; the release is the same).
pub fn kmeans_within<S: ColumnSource + ?Sized>(
    b: &Budget,
    input: &S,
    columns: &Columns,
    cfg: &KmeansConfig,
    (device, memory_limit): (DevicePref, u64),
) -> Result<(Analysis<KmeansResult>, Vec<f64>)> {
    let whole = if kinsey_kernels::kmeans::runs_on_gpu(device)? {
        Some(columns.read(input, Range::Unit)?)
    } else {
        None
    };
    // Without the rows whole, a first pass checks every cell, counts the rows and keeps
    // them as f32 for the steps: held while they fit `memory_limit`, else spilled.
    let cols = resolve(input, columns)?;
    let mut kept = None;
    let shape = match &whole {
        Some(m) => m.shape(),
        None => {
            let mut rows = Rows::new(cols.len(), memory_limit);
            let clip = (Range::Unit, columns.clip);
            let shape = for_each_matrix_block(input, &cols, &[], clip, &mut |_, x| rows.append(x))?;
            rows.finish()?;
            kept = Some(rows);
            shape
        }
    };
    let plan = kmeans::plan(
        cfg,
        shape.d,
        b.epsilon,
        b.delta,
        b.calibration,
        b.neighbours,
    )?;
    let (mut rng, mut db) = open_table(b, input, &shape, plan, kmeans_run(columns, cfg))?;
    let init = kmeans::random_centers(cfg.k, shape.d, &mut rng);
    let (mut res, device) = match &whole {
        Some(m) => {
            let kernel = kinsey_kernels::kmeans::select(device, &m.x, m.d)?;
            let sums = |c: &[f64]| Ok(kernel.sums(c)?);
            (
                kmeans::run(&shape, cfg, &init, &mut db, &sums)?,
                kernel.describe(),
            )
        }
        None => {
            let (d, kept) = (shape.d, kept.as_ref());
            let sums = |c: &[f64]| {
                let mut acc = kinsey_kernels::kmeans::KmeansSums::zero(c.len() / d.max(1), d);
                if let Some(rows) = kept {
                    rows.for_each_block(&mut |x| {
                        Ok(kinsey_kernels::kmeans::cpu::kmeans_sums_into(
                            &mut acc, x, d, c,
                        )?)
                    })?;
                }
                Ok(acc)
            };
            let res = kmeans::run(&shape, cfg, &init, &mut db, &sums)?;
            // The same words held or spilled: whether the rows fit follows n, private
            // under unbounded neighbours, and this line is part of the release.
            let device = format!("cpu (rayon, {} threads)", rayon::current_num_threads());
            (res, device)
        }
    };
    let bounds = columns.bounds(&shape.names)?;
    res.centers_original = res
        .centers
        .iter()
        .map(|c| crate::apply::to_original(&bounds, c))
        .collect();
    let ledger = std::mem::take(&mut db.ledger);
    let mut run = one_table(
        "kinsey.sulq_kmeans.v1",
        b,
        input.name(),
        &shape,
        ledger,
        res,
        rng.record(),
    );
    run.about.device = Some(device);
    let analysis = Analysis {
        run,
        shape,
        matrix: whole,
        spilled: kept.as_ref().is_some_and(Rows::spilled),
        db,
    };
    Ok((analysis, init))
}

/// SuLQ PCA (or SVD without centring) of `input`'s `columns` (in `[0, 1]`): `kinsey sulq
/// pca`'s release. The rows are read once, a block at a time, into the exact Gram sums
/// (`kinsey_kernels::gram`: exact in f64, so the same whatever the blocks); they are never
/// held whole.
pub fn pca<S: ColumnSource + ?Sized>(
    b: &Budget,
    input: &S,
    columns: &Columns,
    cfg: &PcaConfig,
) -> Result<Analysis<PcaResult>> {
    let cols = resolve(input, columns)?;
    let d = cols.len();
    let mut gram = kinsey_kernels::gram::GramSums::zero(d);
    let shape = for_each_matrix_block(
        input,
        &cols,
        &[],
        (Range::Unit, columns.clip),
        &mut |_, x| Ok(kinsey_kernels::gram::gram_sums_into(&mut gram, x, d)?),
    )?;
    let plan = pca::plan(
        cfg,
        shape.d,
        b.epsilon,
        b.delta,
        b.calibration,
        b.neighbours,
    )?;
    let (rng, mut db) = open_table(b, input, &shape, plan, pca_run(columns, cfg))?;
    let res = pca::run_sums(&shape, &gram, cfg, &mut db)?;
    let ledger = std::mem::take(&mut db.ledger);
    let run = one_table(
        "kinsey.sulq_pca.v1",
        b,
        input.name(),
        &shape,
        ledger,
        res,
        rng.record(),
    );
    Ok(Analysis {
        run,
        shape,
        matrix: None,
        spilled: false,
        db,
    })
}

#[cfg(test)]
mod tests;

//! SuLQ k-means and PCA of a table's columns (seed 003), as `kinsey sulq kmeans|pca`
//! releases them: the centres or components as CSV (and the k-means model for
//! `kinsey predict`), the report, and the NOT PRIVATE baselines when asked.

use super::common::{Input, Options, SulqOutput, csv, json_bytes};
use crate::DevicePref;
use kinsey_core::Result;
use kinsey_data::table::{Matrix, Range};
use kinsey_stats::sulq::kmeans::{self, KmeansConfig, KmeansResult};
use kinsey_stats::sulq::pca::{self, PcaConfig, PcaResult};
use kinsey_stats::sulq::query;
use kinsey_stats::sulq::release::OneTable;
use serde_json::json;

/// The rows an analysis read, whole: its own copy where it held them, else read again (for
/// the NOT PRIVATE diagnostics' exact baselines only).
fn whole_rows(held: Option<Matrix>, input: &Input) -> Result<Matrix> {
    match held {
        Some(m) => Ok(m),
        None => input.read(Range::Unit, &[]),
    }
}

/// A row of numbers as CSV cells.
fn cells(v: &[f64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// SuLQ k-means: `k (1 + d)` noisy sums per iteration as one vector query.
#[derive(Debug, Clone)]
pub struct Kmeans {
    /// The table and its columns.
    pub input: Input,
    /// Clusters.
    pub k: usize,
    /// Iterations (each spends budget).
    pub iterations: usize,
    /// Where the assignment step runs.
    pub device: DevicePref,
    /// On the CPU, the memory the rows may take (default half this machine's): past it
    /// they are spilled to a private temporary file; the release is the same.
    pub memory_limit: Option<u64>,
    /// Budget, diagnostics, ledger.
    pub options: Options,
}

/// A k-means release ready to write (`centers.csv`, `model.json`, `report.json`).
#[derive(Debug)]
pub struct KmeansRun {
    /// The files and the run.
    pub output: SulqOutput<OneTable, KmeansResult>,
    /// The columns read.
    pub names: Vec<String>,
    /// "N rows" where public, else words that do not depend on n.
    pub rows: String,
    /// The noise std of one unit query.
    pub sigma: f64,
    /// Units of the query budget used, and the budget `T`.
    pub units: (f64, f64),
    spilled: bool,
}

impl KmeansRun {
    /// Whether the rows were spilled past the memory limit. NOT PRIVATE (it follows their
    /// number).
    pub fn spilled_not_private(&self) -> bool {
        self.spilled
    }
}

impl Kmeans {
    /// Charge the ledger, run, and make the files.
    pub fn run(&self) -> Result<KmeansRun> {
        let o = &self.options;
        let cfg = KmeansConfig {
            k: self.k,
            iters: self.iterations,
        };
        let limit = self
            .memory_limit
            .unwrap_or_else(kinsey_core::limits::default_memory_limit);
        kmeans::check_config(&cfg)?;
        o.charge(&[self.input.path.as_path()], "sulq kmeans")?;
        let (analysis, init) = query::kmeans_within(
            &o.budget,
            self.input.path.as_path(),
            &self.input.columns(),
            &cfg,
            (self.device, limit),
        )?;
        let query::Analysis {
            mut run,
            shape: m,
            matrix,
            spilled,
            db,
        } = analysis;
        let res = &run.result;
        let flat: Vec<f64> = res.centers.concat();
        let mut lines = Vec::new();
        let evaluation = if o.diagnostics {
            // The exact baselines read the rows whole (NOT PRIVATE diagnostics only).
            let whole = whole_rows(matrix, &self.input)?;
            let private = kmeans::mean_inertia(&whole, &flat)?;
            let exact = kmeans::mean_inertia(&whole, &kmeans::lloyd(&whole, &cfg, &init)?)?;
            let e = json!({"NOT_PRIVATE": "computed on the raw data; do not publish",
            "mean_inertia_private": private, "mean_inertia_non_private_same_start": exact,
            "ratio": private / exact});
            lines.push(format!("inertia ratio to non-private {:.4}", e["ratio"]));
            Some(e)
        } else {
            None
        };
        // The centres in the columns' own units (the mechanism works in the declared boxes,
        // mapped onto [0, 1]); model.json keeps both, for `kinsey predict`.
        let columns = self.input.columns().bounds(&m.names)?;
        let original = &res.centers_original;
        let centers = csv(
            &format!("center,noisy_size,{}", m.names.join(",")),
            original
                .iter()
                .zip(&res.sizes)
                .enumerate()
                .map(|(j, (v, s))| format!("{j},{s},{}", cells(v))),
        );
        let model = json_bytes(&kinsey_stats::apply::KmeansModel {
            kind: kinsey_stats::apply::KMEANS_KIND.into(),
            columns,
            centres: res.centers.clone(),
            centres_original: original.clone(),
        })?;
        run.evaluation = evaluation;
        Ok(KmeansRun {
            output: SulqOutput {
                files: vec![
                    ("centers.csv".into(), centers),
                    ("model.json".into(), model),
                ],
                run,
                diagnostic_lines: lines,
                diagnostics: o.diagnostics,
            },
            rows: o.rows_text(m.n),
            names: m.names,
            sigma: db.plan.sigma,
            units: (db.used(), db.plan.units),
            spilled,
        })
    }
}

/// SuLQ PCA (noisy covariance) or SVD (noisy `A^T A`, `center = false`), eigenvectors by
/// faer.
#[derive(Debug, Clone)]
pub struct Pca {
    /// The table and its columns.
    pub input: Input,
    /// Principal components to release.
    pub components: usize,
    /// PCA of the covariance (`true`) or SVD of `A^T A`.
    pub center: bool,
    /// Budget, diagnostics, ledger.
    pub options: Options,
}

/// A PCA release ready to write (`components.csv`, `report.json`).
#[derive(Debug)]
pub struct PcaRun {
    /// The files and the run.
    pub output: SulqOutput<OneTable, PcaResult>,
    /// The columns read.
    pub names: Vec<String>,
    /// "N rows" where public, else words that do not depend on n.
    pub rows: String,
    /// The exact explained-variance ratios, when diagnostics were asked. NOT PRIVATE.
    pub exact_ratios_not_private: Option<Vec<f64>>,
}

impl Pca {
    /// Charge the ledger, run, and make the files.
    pub fn run(&self) -> Result<PcaRun> {
        let o = &self.options;
        let cfg = PcaConfig {
            components: self.components,
            center: self.center,
        };
        o.charge(&[self.input.path.as_path()], "sulq pca")?;
        let query::Analysis {
            mut run,
            shape: m,
            matrix,
            ..
        } = query::pca(
            &o.budget,
            self.input.path.as_path(),
            &self.input.columns(),
            &cfg,
        )?;
        let res = &run.result;
        let mut lines = Vec::new();
        let mut exact_ratios = None;
        let evaluation = if o.diagnostics {
            let whole = whole_rows(matrix, &self.input)?;
            let (vals, _) = pca::exact(&whole, &cfg)?;
            let pos: f64 = vals.iter().filter(|v| **v > 0.0).sum();
            let ratios: Vec<f64> = vals.iter().map(|v| v.max(0.0) / pos).collect();
            let e = json!({"NOT_PRIVATE": "computed on the raw data; do not publish",
            "captured_variance_vs_optimal": pca::captured_variance_ratio(&whole, &res.components)?,
            "explained_variance_ratio_non_private": ratios});
            lines.push(format!(
                "captures {:.4} of the optimal variance",
                e["captured_variance_vs_optimal"]
            ));
            exact_ratios = Some(ratios);
            Some(e)
        } else {
            None
        };
        let components = csv(
            &format!(
                "component,eigenvalue,explained_variance_ratio,{}",
                m.names.join(",")
            ),
            res.components.iter().enumerate().map(|(j, v)| {
                format!(
                    "{j},{},{},{}",
                    res.eigenvalues[j],
                    res.explained_variance_ratio[j],
                    cells(v)
                )
            }),
        );
        run.evaluation = evaluation;
        Ok(PcaRun {
            output: SulqOutput {
                files: vec![("components.csv".into(), components)],
                run,
                diagnostic_lines: lines,
                diagnostics: o.diagnostics,
            },
            rows: o.rows_text(m.n),
            names: m.names,
            exact_ratios_not_private: exact_ratios,
        })
    }
}

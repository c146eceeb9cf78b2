//! The SuLQ perceptron over a labelled table (seed 003), read once a block of rows at a
//! time and kept as `f32` rows (features, the intercept's 1, the label): held while they
//! fit the memory limit, else in an unlinked private spill file, each round a pass over
//! them in the kernel's fixed order (the same sums, the same release, held or spilled).

use super::common::{Input, Options, SulqOutput, json_bytes};
use kinsey_core::{Error, Result};
use kinsey_data::table::{MatrixShape, Range};
use kinsey_kernels::perceptron::perceptron_sums_labelled_into;
use kinsey_stats::sulq;
use kinsey_stats::sulq::perceptron::PerceptronResult;
use kinsey_stats::sulq::release::OneTable;
use kinsey_stats::sulq::spill::Rows;
use serde_json::json;
use std::path::{Path, PathBuf};

/// The SuLQ perceptron.
#[derive(Debug, Clone)]
pub struct Perceptron {
    /// The table and its feature columns.
    pub input: Input,
    /// The label column.
    pub label: String,
    /// Labels are 0/1 (mapped to -1/+1) instead of -1/+1.
    pub zero_one: bool,
    /// Training rounds (each spends budget).
    pub rounds: usize,
    /// Append a constant-1 feature.
    pub intercept: bool,
    /// Test data (same columns) for the NOT PRIVATE test accuracy.
    pub test: Option<PathBuf>,
    /// The memory the rows may take (default half this machine's).
    pub memory_limit: Option<u64>,
    /// Budget, diagnostics, ledger.
    pub options: Options,
}

/// A perceptron release ready to write (`model.json`, `report.json`).
#[derive(Debug)]
pub struct PerceptronRun {
    /// The files and the run.
    pub output: SulqOutput<OneTable, PerceptronResult>,
    /// "N rows" where public, else words that do not depend on n.
    pub rows: String,
    /// Features, with the intercept's.
    pub d: usize,
    spilled: bool,
}

impl PerceptronRun {
    /// Whether the rows (or the test rows) were spilled past the memory limit. NOT
    /// PRIVATE.
    pub fn spilled_not_private(&self) -> bool {
        self.spilled
    }
}

/// A labelled table's rows, read once: its shape (with the intercept's column) and the rows,
/// each its features, then the intercept's 1 when asked, then its label.
struct Labelled {
    shape: MatrixShape,
    rows: Rows,
}

impl Labelled {
    /// Read `input`'s features (into `[-1, 1]`) and labels, keeping at most `limit` bytes
    /// of rows in memory.
    fn read(input: &Input, p: &Perceptron, limit: u64) -> Result<Self> {
        let extra = usize::from(p.intercept);
        let mut rows: Option<Rows> = None;
        let mut buf = Vec::new();
        let mut shape = input.for_each_labelled_block(
            Range::Signed,
            (&p.label, p.zero_one),
            &mut |_, x, y| {
                let d = x.len() / y.len().max(1);
                buf.clear();
                for (row, &yi) in x.chunks_exact(d.max(1)).zip(y) {
                    buf.extend_from_slice(row);
                    buf.extend(std::iter::repeat_n(1.0, extra));
                    buf.push(yi);
                }
                rows.get_or_insert_with(|| Rows::new(d + extra + 1, limit))
                    .append(&buf)
            },
        )?;
        if p.intercept {
            shape.d += 1;
            shape.names.push("(intercept)".into());
            shape.clipped.push(0);
        }
        let mut rows = rows.unwrap_or_else(|| Rows::new(shape.d + 1, limit));
        rows.finish()?;
        Ok(Self { shape, rows })
    }

    /// A round's exact sums at `w`: one pass over the rows, a block at a time.
    fn sums(&self, w: &[f64]) -> Result<(f64, Vec<f64>)> {
        let d = self.shape.d;
        let mut acc = (0.0, vec![0.0; d]);
        self.rows.for_each_block(&mut |block| {
            Ok(perceptron_sums_labelled_into(&mut acc, block, d, w)?)
        })?;
        Ok(acc)
    }

    /// The share of rows `w` classifies correctly.
    fn accuracy(&self, w: &[f64]) -> Result<f64> {
        sulq::perceptron::accuracy_sums(self.shape.n, w, &|w| self.sums(w))
    }
}

impl Perceptron {
    /// Read the rows, charge the ledger, run, and make the files.
    pub fn run(&self) -> Result<PerceptronRun> {
        if self.test.is_some() && !self.options.diagnostics {
            return Err(Error::param(
                "test",
                "--test is read only for the test accuracy, a NOT PRIVATE diagnostic: add \
                 --diagnostics, or leave --test out",
            ));
        }
        let limit = self
            .memory_limit
            .unwrap_or_else(kinsey_core::limits::default_memory_limit);
        let load = |path: &Path| {
            let inp = Input {
                path: path.to_path_buf(),
                ..self.input.clone()
            };
            Labelled::read(&inp, self, limit)
        };
        let table = load(&self.input.path)?;
        let test = self.test.as_deref().map(load).transpose()?;
        let m = &table.shape;
        let o = &self.options;
        let b = &o.budget;
        let plan = sulq::perceptron::plan(
            self.rounds,
            m.d,
            b.epsilon,
            b.delta,
            b.calibration,
            b.neighbours,
        )?;
        o.charge(&[self.input.path.as_path()], "sulq perceptron")?;
        let spilled = table.rows.spilled() || test.as_ref().is_some_and(|t| t.rows.spilled());
        let (rng, mut db) = o.open_db(
            m.n,
            plan,
            json!({"command": "perceptron", "input": self.input.describe(), "label": self.label,
                "rounds": self.rounds, "intercept": self.intercept}),
            &[&self.input.path],
        )?;
        let res = sulq::perceptron::run_sums(m.d, self.rounds, &mut db, &|w| table.sums(w))?;
        let test_acc = match (&test, o.diagnostics) {
            (Some(t), true) => Some(t.accuracy(&res.w)?),
            _ => None,
        };
        let evaluation = if o.diagnostics {
            let w0 = sulq::perceptron::exact_sums(m.d, self.rounds, &|w| table.sums(w))?;
            Some(
                json!({"NOT_PRIVATE": "computed on the raw data; do not publish",
                "train_accuracy_private": table.accuracy(&res.w)?,
                "train_accuracy_non_private": table.accuracy(&w0)?,
                "test_accuracy_non_private": test.as_ref().map(|t| t.accuracy(&w0)).transpose()?}),
            )
        } else {
            None
        };
        let model = json_bytes(&kinsey_stats::apply::PerceptronModel {
            kind: kinsey_stats::apply::PERCEPTRON_KIND.into(),
            columns: self
                .input
                .columns()
                .bounds(&m.names[..m.d - usize::from(self.intercept)])?,
            intercept: self.intercept,
            w: res.w.clone(),
            rule: "predict +1 when <x, w> > 0, x being the row with each column's declared \
                   box mapped onto [-1, 1] (values outside it clipped), then 1 with --intercept"
                .into(),
        })?;
        let lines = test_acc
            .iter()
            .map(|v| format!("test accuracy {v:.4}"))
            .collect();
        let (rows, d) = (o.rows_text(m.n), m.d);
        let mut run = o.one_table(
            "kinsey.sulq_perceptron.v1",
            &self.input,
            m,
            db.ledger,
            res,
            rng.record(),
        );
        run.evaluation = evaluation;
        run.about.test = self.test.clone();
        run.test_accuracy = test_acc;
        Ok(PerceptronRun {
            output: SulqOutput {
                files: vec![("model.json".into(), model)],
                run,
                diagnostic_lines: lines,
                diagnostics: o.diagnostics,
            },
            rows,
            d,
            spilled,
        })
    }
}

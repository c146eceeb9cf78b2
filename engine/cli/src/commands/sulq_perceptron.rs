//! `kinsey sulq perceptron`: the SuLQ perceptron over a labelled table, read once a block
//! of rows at a time and kept as `f32` rows (features, the intercept's 1, the label): held
//! while they fit the memory limit, else in an unlinked private spill file, each round a
//! pass over them in the kernel's fixed order (the same sums, the same release, held or
//! spilled).

use super::common::*;
use super::sulq_common::*;
use kinsey_core::Result;
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::table::{MatrixShape, Range};
use kinsey_kernels::perceptron::perceptron_sums_labelled_into;
use kinsey_stats::sulq;
use kinsey_stats::sulq::spill::Rows;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PerceptronArgs {
    #[command(flatten)]
    pub input: SulqInput,
    #[arg(long, default_value = "label")]
    /// The label column (values -1 and +1).
    pub label: String,
    /// Labels are 0/1 (mapped to -1/+1) instead of -1/+1.
    #[arg(long)]
    pub zero_one: bool,
    #[arg(long, default_value_t = 10)]
    /// Training rounds (each spends budget).
    pub rounds: usize,
    /// Append a constant-1 feature (a bias through the origin's hyperplane).
    #[arg(long)]
    pub intercept: bool,
    /// Test data (same columns) for the accuracy in the report.
    #[arg(long)]
    pub test: Option<PathBuf>,
    /// The memory the rows may take, e.g. 512MiB (default half this machine's): past it
    /// they are spilled to a private temporary file and each round reads them back a block
    /// at a time; the release is the same.
    #[arg(long, value_parser = kinsey_core::limits::parse_bytes, value_name = "BYTES")]
    pub memory_limit: Option<u64>,
    #[command(flatten)]
    pub common: SulqCommon,
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
    fn read(input: &SulqInput, a: &PerceptronArgs, limit: u64) -> Result<Self> {
        let extra = usize::from(a.intercept);
        let mut rows: Option<Rows> = None;
        let mut buf = Vec::new();
        let mut shape = input.for_each_labelled_block(
            Range::Signed,
            (&a.label, a.zero_one),
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
        if a.intercept {
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

pub(crate) fn run_perceptron(a: &PerceptronArgs) -> Result<Done> {
    let limit = a
        .memory_limit
        .unwrap_or_else(kinsey_core::limits::default_memory_limit);
    let load = |path: &Path| {
        let inp = SulqInput {
            input: path.to_path_buf(),
            ..a.input.clone()
        };
        Labelled::read(&inp, a, limit)
    };
    let table = load(&a.input.input)?;
    let test = a.test.as_deref().map(load).transpose()?;
    let m = &table.shape;
    let c = &a.common;
    let plan = sulq::perceptron::plan(
        a.rounds,
        m.d,
        c.epsilon,
        c.delta,
        c.calibration,
        c.neighbours,
    )?;
    let charged = charge(c, &[a.input.input.as_path()], "sulq perceptron")?;
    if c.diagnostics && (table.rows.spilled() || test.as_ref().is_some_and(|t| t.rows.spilled())) {
        // Whether the rows fit follows their number: a diagnostic, only when asked.
        crate::term::print_diagnostic(&format!(
            "the rows do not fit the memory limit of {}: spilled to a private temporary \
             file, read back a block at a time each round",
            kinsey_core::limits::show_bytes(limit)
        ));
    }
    let (rng, mut db) = open_db(
        c,
        m.n,
        plan,
        json!({"command": "perceptron", "input": a.input.describe(), "label": a.label,
            "rounds": a.rounds, "intercept": a.intercept}),
        &[&a.input.input],
    )?;
    let res = sulq::perceptron::run_sums(m.d, a.rounds, &mut db, &|w| table.sums(w))?;
    let test_acc = match (&test, c.diagnostics) {
        (Some(t), true) => Some(t.accuracy(&res.w)?),
        _ => None,
    };
    let evaluation = if c.diagnostics {
        let w0 = sulq::perceptron::exact_sums(m.d, a.rounds, &|w| table.sums(w))?;
        Some(
            json!({"NOT_PRIVATE": "computed on the raw data; do not publish",
            "train_accuracy_private": table.accuracy(&res.w)?,
            "train_accuracy_non_private": table.accuracy(&w0)?,
            "test_accuracy_non_private": test.as_ref().map(|t| t.accuracy(&w0)).transpose()?}),
        )
    } else {
        None
    };
    let mut o = Outputs::new();
    o.ensure_dir(&c.out)?;
    write_json(
        &mut o,
        &c.out.join("model.json"),
        &kinsey_stats::apply::PerceptronModel {
            kind: kinsey_stats::apply::PERCEPTRON_KIND.into(),
            columns: a
                .input
                .columns()
                .bounds(&m.names[..m.d - usize::from(a.intercept)])?,
            intercept: a.intercept,
            w: res.w.clone(),
            rule: "predict +1 when <x, w> > 0, x being the row with each column's declared \
                   box mapped onto [-1, 1] (values outside it clipped), then 1 with --intercept"
                .into(),
        },
    )?;
    let summary = format!(
        "SuLQ perceptron: {} rounds run of {} ({}), kept round {}, {} x {} features; eps spent {:.4} (delta {})",
        res.rounds_run,
        a.rounds,
        if res.stopped_early {
            "stopped: few misclassified rows left"
        } else {
            "all planned"
        },
        res.kept_round,
        rows_text(c, m.n),
        m.d,
        res.guarantee.epsilon_spent,
        c.delta,
    );
    let lines = test_acc
        .iter()
        .map(|v| format!("test accuracy {v:.4}"))
        .collect();
    let mut run = one_table(
        "kinsey.sulq_perceptron.v1",
        c,
        &a.input,
        m,
        db.ledger,
        res,
        rng.record(),
    );
    run.evaluation = evaluation;
    run.about.test = a.test.clone();
    run.test_accuracy = test_acc;
    finish_sulq(o, c, charged, run, summary, lines)
}

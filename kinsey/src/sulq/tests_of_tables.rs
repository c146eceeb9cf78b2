//! The statistical-query adapter with an SQ learner (the best single binary predictor) and
//! the vertically partitioned implication test (seed 003).

use super::common::{Input, Options, SulqOutput};
use kinsey_core::{Error, Result};
use kinsey_data::series::Predicate;
use kinsey_data::table::Range;
use kinsey_stats::sulq::implication::{ImplicationConfig, ImplicationResult, Method};
use kinsey_stats::sulq::release::{OneTable, SulqRun, TwoTables};
use kinsey_stats::sulq::stat::StumpResult;
use kinsey_stats::sulq::{self, SulqDb};
use serde_json::json;
use std::path::{Path, PathBuf};

/// STAT queries through the SuLQ adapter: the best single binary predictor of a 0/1 label.
#[derive(Debug, Clone)]
pub struct Stat {
    /// The table and its 0/1 feature columns.
    pub input: Input,
    /// The label column.
    pub label: String,
    /// Labels are 0/1 (default -1/+1).
    pub zero_one: bool,
    /// Required accuracy of each STAT answer (refused up front if the budget cannot reach
    /// it).
    pub tau: Option<f64>,
    /// Budget, diagnostics, ledger.
    pub options: Options,
}

/// A STAT release ready to write (`report.json`).
#[derive(Debug)]
pub struct StatRun {
    /// The run.
    pub output: SulqOutput<OneTable, StumpResult>,
    /// STAT queries asked (one per feature).
    pub queries: usize,
}

impl Stat {
    /// One pass over the rows for every stump query's exact count, then the ledger, the
    /// queries and the learner.
    pub fn run(&self) -> Result<StatRun> {
        let mut counts: Vec<u64> = Vec::new();
        let m = self.input.for_each_labelled_block(
            Range::Unit,
            (&self.label, self.zero_one),
            &mut |_, x, y| {
                let d = x.len() / y.len().max(1);
                counts.resize(d, 0);
                sulq::stat::stump_counts_into(&mut counts, x, y, d);
                Ok(())
            },
        )?;
        counts.resize(m.d, 0);
        let o = &self.options;
        let b = &o.budget;
        let plan = sulq::stat::plan(
            m.d,
            m.n,
            self.tau,
            b.epsilon,
            b.delta,
            b.calibration,
            b.neighbours,
        )?;
        o.charge(&[self.input.path.as_path()], "sulq stat")?;
        let (rng, mut db) = o.open_db(
            m.n,
            plan,
            json!({"command": "stat", "input": self.input.describe(), "label": self.label,
                "tau": self.tau}),
            &[&self.input.path],
        )?;
        let mut adapter = sulq::stat::StatAdapter::new(&mut db, m.n)?;
        if let Some(t) = self.tau
            && !b.neighbours.n_is_public()
            && t < adapter.accuracy()
        {
            // Under unbounded neighbours n is private: the check uses the noisy row count
            // (post-processing), after the one query that released it.
            return Err(Error::param(
                "tau",
                format!(
                    "{} STAT queries at eps = {}, delta = {} reach an accuracy of {:.4} on the \
                     noisy row count, not {t}; ask fewer queries, a larger budget or a coarser \
                     tau",
                    m.d,
                    b.epsilon,
                    b.delta,
                    adapter.accuracy()
                ),
            ));
        }
        let res = sulq::stat::best_stump_of_counts(&m.names, &counts, &mut adapter)?;
        let evaluation = if o.diagnostics {
            let j = m.names.iter().position(|n| *n == res.feature).unwrap_or(0);
            let best = (0..m.d)
                .map(|t| {
                    let e = sulq::stat::stump_error_of_counts(&counts, m.n, t, true);
                    e.min(1.0 - e)
                })
                .fold(f64::INFINITY, f64::min);
            Some(
                json!({"NOT_PRIVATE": "computed on the raw data; do not publish",
                "chosen_error_exact": sulq::stat::stump_error_of_counts(&counts, m.n, j, res.positive_when_set),
                "best_error_exact": best}),
            )
        } else {
            None
        };
        let mut run = o.one_table(
            "kinsey.sulq_stat.v1",
            &self.input,
            &m,
            db.ledger,
            res,
            rng.record(),
        );
        run.evaluation = evaluation;
        run.about.columns.clear();
        run.clipped = None;
        Ok(StatRun {
            output: SulqOutput {
                files: Vec::new(),
                run,
                diagnostic_lines: Vec::new(),
                diagnostics: o.diagnostics,
            },
            queries: m.d,
        })
    }
}

/// A 0/1 column or a predicate over a numeric column, as booleans (one byte a row), read a
/// block at a time.
pub fn read_event(path: &Path, spec: &str) -> Result<Vec<bool>> {
    let predicate = if spec.contains(['<', '>', '=', '!']) {
        Some(Predicate::parse(spec)?)
    } else {
        None
    };
    let column = predicate.as_ref().map_or(spec, |p| p.column.as_str());
    let mut out = Vec::new();
    let want = [(column, kinsey_data::blocks::Want::Numeric)];
    kinsey_data::blocks::for_each_block(path, &want, &mut |cells| {
        let row0 = out.len();
        for (i, &v) in cells[0].numeric()?.iter().enumerate() {
            out.push(match &predicate {
                Some(p) => p.holds(v),
                None if v == 0.0 || v == 1.0 => v == 1.0,
                None => {
                    return Err(Error::Value {
                        path: path.to_path_buf(),
                        column: spec.to_string(),
                        row: row0 + i,
                        msg: format!(
                            "the value is not 0 or 1; give a predicate like \"{spec}>=1\""
                        ),
                    });
                }
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// Does `alpha` (in database A) imply `beta` (in database B, rows aligned) in probability:
/// `Pr[beta | alpha] >= Pr[beta] + gap`? Each database is held and accounted separately.
#[derive(Debug, Clone)]
pub struct Implication {
    /// Database A (holds alpha): Parquet or CSV.
    pub a: PathBuf,
    /// A 0/1 column of A, or a predicate `COLUMN OP NUMBER`.
    pub alpha: String,
    /// Database B (holds beta).
    pub b: PathBuf,
    /// A 0/1 column of B, or a predicate.
    pub beta: String,
    /// The gap tested.
    pub gap: f64,
    /// `groups` (one vector query per database) or `heavy-sets` (the seed's).
    pub method: String,
    /// Random halves tried by heavy sets.
    pub trials: usize,
    /// The budget of each database, diagnostics, ledger.
    pub options: Options,
}

/// An implication release ready to write (`report.json`).
#[derive(Debug)]
pub struct ImplicationRun {
    /// The run.
    pub output: SulqOutput<TwoTables, ImplicationResult>,
    /// Whether it used groups (else heavy sets).
    pub groups: bool,
}

impl Implication {
    /// Read both events, charge both databases, run the test.
    pub fn run(&self) -> Result<ImplicationRun> {
        let alpha = read_event(&self.a, &self.alpha)?;
        let beta = read_event(&self.b, &self.beta)?;
        let o = &self.options;
        let b = &o.budget;
        let cfg = ImplicationConfig {
            method: self.method.parse()?,
            trials: self.trials,
            gap: self.gap,
        };
        let plan = sulq::implication::plan(
            &cfg,
            alpha.len(),
            b.epsilon,
            b.delta,
            b.calibration,
            b.neighbours,
        )?;
        o.charge(&[self.a.as_path(), self.b.as_path()], "sulq implication")?;
        let (mut rng, mut db_a) = o.open_db(
            alpha.len(),
            plan.clone(),
            json!({"command": "implication", "alpha": self.alpha, "beta": self.beta,
                "method": self.method, "trials": self.trials, "gap": self.gap}),
            &[&self.a, &self.b],
        )?;
        let mut db_b = SulqDb::new(plan, rng.fork());
        let mut public = rng.fork();
        let res = sulq::implication::run(&alpha, &beta, &cfg, &mut db_a, &mut db_b, &mut public)?;
        let evaluation = o.diagnostics.then(|| {
            json!({"NOT_PRIVATE": "computed on the joined raw data; do not publish",
                "delta_exact": sulq::implication::exact_delta(&alpha, &beta)})
        });
        let lines = evaluation
            .iter()
            .map(|e| format!("exact Pr[beta|alpha] - Pr[beta] = {:.4}", e["delta_exact"]))
            .collect();
        let run = SulqRun {
            kind: "kinsey.sulq_implication.v1",
            about: TwoTables {
                a: self.a.clone(),
                b: self.b.clone(),
                alpha: self.alpha.clone(),
                beta: self.beta.clone(),
                ledger_a: db_a.ledger,
                ledger_b: db_b.ledger,
            },
            neighbours: b.neighbours,
            rows: None,
            result: res,
            rng: rng.record(),
            clipped: None,
            evaluation,
            test_accuracy: None,
        };
        Ok(ImplicationRun {
            output: SulqOutput {
                files: Vec::new(),
                run,
                diagnostic_lines: lines,
                diagnostics: o.diagnostics,
            },
            groups: cfg.method == Method::Groups,
        })
    }
}

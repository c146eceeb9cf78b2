//! `kinsey sulq`: the SuLQ algorithms of seed 003.

use super::common::*;
use super::sulq_common::*;
pub(crate) use super::sulq_perceptron::{PerceptronArgs, run_perceptron};
use crate::plot::{Chart, Series, XAxis, write_chart};
use clap::Subcommand;
use kinsey_core::{Error, Result};
use kinsey_data::output::Outputs;
use kinsey_data::output::write_json;
use kinsey_data::series::Predicate;
use kinsey_data::table::{Matrix, Range};
use kinsey_kernels::DevicePref;
use kinsey_stats::sulq::release::{SulqRun, TwoTables};
use kinsey_stats::sulq::{self, SulqDb};
use serde_json::json;
use std::path::{Path, PathBuf};
// ---------------------------------------------------------------- histogram

/// SuLQ algorithms (seed 003): noisy sums with a bounded number of queries.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    cmd: Which,
}

/// Runs the chosen SuLQ algorithm.
pub(crate) fn run(a: Args) -> Result<()> {
    report_done(match a.cmd {
        Which::Kmeans(a) => run_kmeans(&a)?,
        Which::Pca(a) => run_pca(&a)?,
        Which::Perceptron(a) => run_perceptron(&a)?,
        Which::Stat(a) => run_stat(&a)?,
        Which::Implication(a) => run_implication(&a)?,
    })
}

#[derive(Subcommand, Debug)]
enum Which {
    /// SuLQ k-means: k (1 + d) sums per iteration as one vector query.
    Kmeans(KmeansArgs),
    /// SuLQ PCA (noisy covariance) or SVD (noisy A^T A, --no-center), eigenvectors by faer.
    Pca(PcaArgs),
    /// SuLQ perceptron.
    Perceptron(PerceptronArgs),
    /// The statistical-query adapter with an SQ learner: the best single binary predictor.
    Stat(StatArgs),
    /// Vertically partitioned test: does alpha (in A) imply beta (in B) in probability?
    Implication(ImplicationArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct KmeansArgs {
    #[command(flatten)]
    pub input: SulqInput,
    #[arg(long, default_value_t = 5)]
    /// Clusters.
    pub k: usize,
    #[arg(long, default_value_t = 8)]
    /// Iterations (each spends budget).
    pub iterations: usize,
    /// Where the assignment step runs: auto (a real GPU if any), cpu or gpu.
    #[arg(long, default_value = "auto")]
    pub device: DevicePref,
    /// On the CPU, the memory the rows may take, e.g. 512MiB (default half this machine's):
    /// past it they are spilled to a private temporary file and each step reads them back
    /// a block at a time; the release is the same.
    #[arg(long, value_parser = kinsey_core::limits::parse_bytes, value_name = "BYTES")]
    pub memory_limit: Option<u64>,
    #[command(flatten)]
    pub common: SulqCommon,
}

/// The rows an analysis read, whole: its own copy where it held them, else read again (for
/// the NOT PRIVATE diagnostics' exact baselines only).
fn whole_rows(held: Option<Matrix>, input: &SulqInput) -> Result<Matrix> {
    match held {
        Some(m) => Ok(m),
        None => input.read(Range::Unit, &[]),
    }
}

pub(crate) fn run_kmeans(a: &KmeansArgs) -> Result<Done> {
    crate::plot::check_fonts()?;
    let c = &a.common;
    let cfg = sulq::kmeans::KmeansConfig {
        k: a.k,
        iters: a.iterations,
    };
    warn_seed(c.seed);
    let limit = a
        .memory_limit
        .unwrap_or_else(kinsey_core::limits::default_memory_limit);
    sulq::kmeans::check_config(&cfg)?;
    let charged = charge(c, &[a.input.input.as_path()], "sulq kmeans")?;
    let (analysis, init) = sulq::query::kmeans_within(
        &c.budget(),
        a.input.input.as_path(),
        &a.input.columns(),
        &cfg,
        (a.device, limit),
    )?;
    let sulq::query::Analysis {
        mut run,
        shape: m,
        matrix,
        spilled,
        db,
    } = analysis;
    if spilled && c.diagnostics {
        // Whether the rows fit follows their number: a diagnostic, only when asked.
        crate::term::print_diagnostic(&format!(
            "the rows did not fit the memory limit of {}: each step read them back from a \
             private temporary file (the release is the same)",
            kinsey_core::limits::show_bytes(limit)
        ));
    }
    let res = &run.result;
    let flat: Vec<f64> = res.centers.concat();
    let evaluation = if c.diagnostics {
        // The exact baselines read the rows whole (NOT PRIVATE diagnostics only).
        let m = whole_rows(matrix, &a.input)?;
        let private = sulq::kmeans::mean_inertia(&m, &flat)?;
        let exact = sulq::kmeans::mean_inertia(&m, &sulq::kmeans::lloyd(&m, &cfg, &init)?)?;
        Some(
            json!({"NOT_PRIVATE": "computed on the raw data; do not publish",
            "mean_inertia_private": private, "mean_inertia_non_private_same_start": exact,
            "ratio": private / exact}),
        )
    } else {
        None
    };
    let mut o = Outputs::new();
    o.ensure_dir(&c.out)?;
    // The centres in the columns' own units (the mechanism works in the declared boxes,
    // mapped onto [0, 1]); model.json keeps both, for `kinsey predict`.
    let columns = a.input.columns().bounds(&m.names)?;
    let original = &res.centers_original;
    o.write(
        &c.out.join("centers.csv"),
        &csv(
            &format!("center,noisy_size,{}", m.names.join(",")),
            original
                .iter()
                .zip(&res.sizes)
                .enumerate()
                .map(|(j, (v, s))| {
                    format!(
                        "{j},{s},{}",
                        v.iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    )
                }),
        ),
    )?;
    write_json(
        &mut o,
        &c.out.join("model.json"),
        &kinsey_stats::apply::KmeansModel {
            kind: kinsey_stats::apply::KMEANS_KIND.into(),
            columns,
            centres: res.centers.clone(),
            centres_original: original.clone(),
        },
    )?;
    let chart = Chart {
        title: format!("SuLQ k-means centres (k = {}, eps = {})", a.k, c.epsilon),
        x_label: "column (values in centers.csv, in the columns' units)".into(),
        y_label: "place in the declared range (0 = LO, 1 = HI)".into(),
        series: res
            .centers
            .iter()
            .zip(&res.sizes)
            .enumerate()
            .map(|(j, (v, s))| Series {
                name: format!("centre {j} (size ~{:.0})", s),
                points: v.iter().enumerate().map(|(t, x)| (t as f64, *x)).collect(),
                err: None,
                dashed: false,
            })
            .collect(),
        log_x: false,
        x_axis: XAxis::Categories(m.names.clone()),
        bars: false,
    };
    write_chart(&mut o, &c.out.join("centers"), &chart)?;
    let summary = format!(
        "SuLQ k-means: k = {}, {} iterations on {} x {} columns; sigma {:.2} per unit query, \
         {:.1} units of T = {:.1}; eps spent {:.4} (delta {})",
        a.k,
        a.iterations,
        rows_text(c, m.n),
        m.d,
        db.plan.sigma,
        db.used(),
        db.plan.units,
        res.guarantee.epsilon_spent,
        c.delta,
    );
    let lines = evaluation
        .iter()
        .map(|e| format!("inertia ratio to non-private {:.4}", e["ratio"]))
        .collect();
    run.evaluation = evaluation;
    finish_sulq(o, c, charged, run, summary, lines)
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PcaArgs {
    #[command(flatten)]
    pub input: SulqInput,
    #[arg(long, default_value_t = 2)]
    /// Principal components to release.
    pub components: usize,
    /// SVD of A^T A instead of PCA of the covariance.
    #[arg(long)]
    pub no_center: bool,
    #[command(flatten)]
    pub common: SulqCommon,
}

/// The explained-variance chart with the exact ratios beside it: exact data, so it is only
/// written as a NOT PRIVATE chart, when diagnostics are asked for.
fn with_exact_ratios(chart: &Chart, evaluation: &serde_json::Value, count: usize) -> Chart {
    let mut reference = chart.clone();
    reference.title = chart
        .title
        .replacen(" (eps", ", with the NOT PRIVATE exact ratios (eps", 1);
    let exact = evaluation["explained_variance_ratio_non_private"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    reference.series.push(Series {
        name: "NOT PRIVATE: exact".into(),
        points: exact
            .iter()
            .take(count)
            .enumerate()
            .map(|(i, v)| ((i + 1) as f64, v.as_f64().unwrap_or(f64::NAN)))
            .collect(),
        err: None,
        dashed: false,
    });
    reference
}

pub(crate) fn run_pca(a: &PcaArgs) -> Result<Done> {
    crate::plot::check_fonts()?;
    let c = &a.common;
    let cfg = sulq::pca::PcaConfig {
        components: a.components,
        center: !a.no_center,
    };
    warn_seed(c.seed);
    let charged = charge(c, &[a.input.input.as_path()], "sulq pca")?;
    let sulq::query::Analysis {
        mut run,
        shape: m,
        matrix,
        ..
    } = sulq::query::pca(
        &c.budget(),
        a.input.input.as_path(),
        &a.input.columns(),
        &cfg,
    )?;
    let res = &run.result;
    let evaluation = if c.diagnostics {
        let whole = whole_rows(matrix, &a.input)?;
        let (vals, _) = sulq::pca::exact(&whole, &cfg)?;
        let pos: f64 = vals.iter().filter(|v| **v > 0.0).sum();
        Some(
            json!({"NOT_PRIVATE": "computed on the raw data; do not publish",
            "captured_variance_vs_optimal": sulq::pca::captured_variance_ratio(&whole, &res.components)?,
            "explained_variance_ratio_non_private": vals.iter().map(|v| v.max(0.0) / pos).collect::<Vec<_>>()}),
        )
    } else {
        None
    };
    let mut o = Outputs::new();
    o.ensure_dir(&c.out)?;
    o.write(
        &c.out.join("components.csv"),
        &csv(
            &format!(
                "component,eigenvalue,explained_variance_ratio,{}",
                m.names.join(",")
            ),
            res.components.iter().enumerate().map(|(j, v)| {
                format!(
                    "{j},{},{},{}",
                    res.eigenvalues[j],
                    res.explained_variance_ratio[j],
                    v.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            }),
        ),
    )?;
    let mut cum = 0.0;
    let series = vec![
        Series {
            name: "explained variance ratio (private)".into(),
            points: res
                .explained_variance_ratio
                .iter()
                .enumerate()
                .map(|(i, v)| ((i + 1) as f64, *v))
                .collect(),
            err: None,
            dashed: false,
        },
        Series {
            name: "cumulative (private)".into(),
            points: res
                .explained_variance_ratio
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    cum += v;
                    ((i + 1) as f64, cum)
                })
                .collect(),
            err: None,
            dashed: true,
        },
    ];
    let chart = Chart {
        title: format!(
            "SuLQ {} explained variance (eps = {})",
            if cfg.center { "PCA" } else { "SVD" },
            c.epsilon
        ),
        x_label: "component".into(),
        y_label: "share of variance".into(),
        series,
        log_x: false,
        x_axis: XAxis::Integers,
        bars: false,
    };
    if let Some(e) = &evaluation {
        let reference = with_exact_ratios(&chart, e, res.explained_variance_ratio.len());
        write_chart(
            &mut o,
            &c.out.join("explained_variance.NOT-PRIVATE"),
            &reference,
        )?;
    }
    write_chart(&mut o, &c.out.join("explained_variance"), &chart)?;
    let summary = format!(
        "SuLQ {}: {} of {} components on {}; top explained variance ratios {:?}; eps spent \
         {:.4} (delta {})",
        if cfg.center { "PCA" } else { "SVD" },
        a.components,
        m.d,
        rows_text(c, m.n),
        res.explained_variance_ratio
            .iter()
            .take(a.components)
            .map(|v| (v * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>(),
        res.guarantee.epsilon_spent,
        c.delta,
    );
    let lines = evaluation
        .iter()
        .map(|e| {
            format!(
                "captures {:.4} of the optimal variance",
                e["captured_variance_vs_optimal"]
            )
        })
        .collect();
    run.evaluation = evaluation;
    finish_sulq(o, c, charged, run, summary, lines)
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct StatArgs {
    #[command(flatten)]
    pub input: SulqInput,
    #[arg(long, default_value = "label")]
    /// The 0/1 column whose statistic is released.
    pub label: String,
    #[arg(long)]
    /// Labels are 0/1 (default -1/+1).
    pub zero_one: bool,
    /// Required accuracy of each STAT answer (refused up front if the budget cannot reach it).
    #[arg(long)]
    pub tau: Option<f64>,
    #[command(flatten)]
    pub common: SulqCommon,
}

pub(crate) fn run_stat(a: &StatArgs) -> Result<Done> {
    // One pass, a block of rows at a time: every stump query's exact count.
    let mut counts: Vec<u64> = Vec::new();
    let m =
        a.input
            .for_each_labelled_block(Range::Unit, (&a.label, a.zero_one), &mut |_, x, y| {
                let d = x.len() / y.len().max(1);
                counts.resize(d, 0);
                sulq::stat::stump_counts_into(&mut counts, x, y, d);
                Ok(())
            })?;
    counts.resize(m.d, 0);
    let c = &a.common;
    let plan = sulq::stat::plan(
        m.d,
        m.n,
        a.tau,
        c.epsilon,
        c.delta,
        c.calibration,
        c.neighbours,
    )?;
    let charged = charge(c, &[a.input.input.as_path()], "sulq stat")?;
    let (rng, mut db) = open_db(
        c,
        m.n,
        plan,
        json!({"command": "stat", "input": a.input.describe(), "label": a.label,
            "tau": a.tau}),
        &[&a.input.input],
    )?;
    let mut adapter = sulq::stat::StatAdapter::new(&mut db, m.n)?;
    if let Some(t) = a.tau
        && !c.neighbours.n_is_public()
        && t < adapter.accuracy()
    {
        // Under unbounded neighbours n is private: the check uses the noisy row count
        // (post-processing), after the one query that released it.
        return Err(Error::param(
            "tau",
            format!(
                "{} STAT queries at eps = {}, delta = {} reach an accuracy of {:.4} on the \
                 noisy row count, not {t}; ask fewer queries, a larger budget or a coarser tau",
                m.d,
                c.epsilon,
                c.delta,
                adapter.accuracy()
            ),
        ));
    }
    let res = sulq::stat::best_stump_of_counts(&m.names, &counts, &mut adapter)?;
    let evaluation = if c.diagnostics {
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
    let mut o = Outputs::new();
    o.ensure_dir(&c.out)?;
    let summary = format!(
        "SQ learner on SuLQ ({} STAT queries, accuracy +-{:.4}): best single predictor '{}' \
         (+1 when {}), noisy error {:.4}; eps spent {:.4} (delta {})",
        m.d,
        res.tau,
        res.feature,
        if res.positive_when_set {
            "set"
        } else {
            "not set"
        },
        res.noisy_error,
        res.guarantee.epsilon_spent,
        c.delta
    );
    let mut run = one_table(
        "kinsey.sulq_stat.v1",
        c,
        &a.input,
        &m,
        db.ledger,
        res,
        rng.record(),
    );
    run.evaluation = evaluation;
    run.about.columns.clear();
    run.clipped = None;
    finish_sulq(o, c, charged, run, summary, Vec::new())
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ImplicationArgs {
    /// Database A (holds alpha): Parquet or CSV.
    #[arg(long)]
    pub a: PathBuf,
    /// alpha: a 0/1 column of A, or a predicate "COLUMN OP NUMBER".
    #[arg(long)]
    pub alpha: String,
    /// Database B (holds beta), rows aligned with A.
    #[arg(long)]
    pub b: PathBuf,
    /// beta: a 0/1 column of B, or a predicate.
    #[arg(long)]
    pub beta: String,
    /// Test Pr[beta | alpha] >= Pr[beta] + gap.
    #[arg(long, default_value_t = 0.05)]
    pub gap: f64,
    /// groups (one vector query per database) or heavy-sets (the seed's).
    #[arg(long, default_value = "groups")]
    pub method: String,
    /// Random halves tried by heavy-sets.
    #[arg(long, default_value_t = 200)]
    pub trials: usize,
    /// Budget of EACH database (they are held and accounted separately).
    #[command(flatten)]
    pub common: SulqCommon,
}

/// A 0/1 column or a predicate over a numeric column, as booleans (one byte a row), read a
/// block at a time.
pub(crate) fn read_event(path: &Path, spec: &str) -> Result<Vec<bool>> {
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

pub(crate) fn run_implication(a: &ImplicationArgs) -> Result<Done> {
    let alpha = read_event(&a.a, &a.alpha)?;
    let beta = read_event(&a.b, &a.beta)?;
    let c = &a.common;

    let cfg = sulq::implication::ImplicationConfig {
        method: a.method.parse()?,
        trials: a.trials,
        gap: a.gap,
    };
    let plan = sulq::implication::plan(
        &cfg,
        alpha.len(),
        c.epsilon,
        c.delta,
        c.calibration,
        c.neighbours,
    )?;
    let charged = charge(c, &[a.a.as_path(), a.b.as_path()], "sulq implication")?;
    let (mut rng, mut db_a) = open_db(
        c,
        alpha.len(),
        plan.clone(),
        json!({"command": "implication", "alpha": a.alpha, "beta": a.beta,
            "method": a.method, "trials": a.trials, "gap": a.gap}),
        &[&a.a, &a.b],
    )?;
    let mut db_b = SulqDb::new(plan, rng.fork());
    let mut public = rng.fork();
    let res = sulq::implication::run(&alpha, &beta, &cfg, &mut db_a, &mut db_b, &mut public)?;
    let evaluation = c.diagnostics.then(|| {
        json!({"NOT_PRIVATE": "computed on the joined raw data; do not publish",
            "delta_exact": sulq::implication::exact_delta(&alpha, &beta)})
    });
    let mut o = Outputs::new();
    o.ensure_dir(&c.out)?;
    let summary = format!(
        "alpha = '{}' (A) implies beta = '{}' (B) with gap {}? {}: Pr[beta|alpha] - Pr[beta] = \
         {:.4} +- {:.4} (1 s.e.; {} {}); each database spent eps {:.4} (delta {})",
        a.alpha,
        a.beta,
        a.gap,
        toml_name(&res.verdict),
        res.delta_hat,
        res.std_error,
        res.sets_used,
        if cfg.method == sulq::implication::Method::Groups {
            "groups"
        } else {
            "heavy sets"
        },
        res.guarantee_a.epsilon_spent,
        c.delta,
    );
    let lines = evaluation
        .iter()
        .map(|e| format!("exact Pr[beta|alpha] - Pr[beta] = {:.4}", e["delta_exact"]))
        .collect();
    let run = SulqRun {
        kind: "kinsey.sulq_implication.v1",
        about: TwoTables {
            a: a.a.clone(),
            b: a.b.clone(),
            alpha: a.alpha.clone(),
            beta: a.beta.clone(),
            ledger_a: db_a.ledger,
            ledger_b: db_b.ledger,
        },
        neighbours: c.neighbours,
        rows: None,
        result: res,
        rng: rng.record(),
        clipped: None,
        evaluation,
        test_accuracy: None,
    };
    finish_sulq(o, c, charged, run, summary, lines)
}

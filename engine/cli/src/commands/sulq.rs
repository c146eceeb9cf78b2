//! `kinsey sulq`: the SuLQ algorithms of seed 003. The flags become the facade's
//! analyses (`kinsey::sulq`), which charge the ledger, run and make the files; this file
//! draws the charts and prints.

use super::common::*;
use super::sulq_common::*;
pub(crate) use super::sulq_perceptron::{PerceptronArgs, run_perceptron};
use crate::plot::{Chart, Series, XAxis};
use clap::Subcommand;
use kinsey::DevicePref;
use kinsey::Result;
use kinsey::sulq::{Implication, Kmeans, Pca, Stat};
use std::path::PathBuf;

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

pub(crate) fn run_kmeans(a: &KmeansArgs) -> Result<Done> {
    crate::plot::check_fonts()?;
    let c = &a.common;
    let options = c.options()?;
    let k = Kmeans {
        input: a.input.input(),
        k: a.k,
        iterations: a.iterations,
        device: a.device,
        memory_limit: a.memory_limit,
        options,
    };
    let (run, charged) = super::ledger::settle(k.options.ledger.as_ref(), k.run())?;
    if run.spilled_not_private() && c.diagnostics {
        // Whether the rows fit follows their number: a diagnostic, only when asked.
        let limit = a
            .memory_limit
            .unwrap_or_else(kinsey_core::limits::default_memory_limit);
        crate::term::print_diagnostic(&format!(
            "the rows did not fit the memory limit of {}: each step read them back from a \
             private temporary file (the release is the same)",
            kinsey_core::limits::show_bytes(limit)
        ));
    }
    let res = &run.output.run.result;
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
        x_axis: XAxis::Categories(run.names.clone()),
        bars: false,
    };
    let summary = format!(
        "SuLQ k-means: k = {}, {} iterations on {} x {} columns; sigma {:.2} per unit query, \
         {:.1} units of T = {:.1}; eps spent {:.4} (delta {})",
        a.k,
        a.iterations,
        run.rows,
        run.names.len(),
        run.sigma,
        run.units.0,
        run.units.1,
        res.guarantee.epsilon_spent,
        c.delta,
    );
    let charts = vec![(c.out.join("centers"), chart)];
    finish_sulq(&c.out, run.output, charged, summary, charts)
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
fn with_exact_ratios(chart: &Chart, exact: &[f64], count: usize) -> Chart {
    let mut reference = chart.clone();
    reference.title = chart
        .title
        .replacen(" (eps", ", with the NOT PRIVATE exact ratios (eps", 1);
    reference.series.push(Series {
        name: "NOT PRIVATE: exact".into(),
        points: exact
            .iter()
            .take(count)
            .enumerate()
            .map(|(i, v)| ((i + 1) as f64, *v))
            .collect(),
        err: None,
        dashed: false,
    });
    reference
}

pub(crate) fn run_pca(a: &PcaArgs) -> Result<Done> {
    crate::plot::check_fonts()?;
    let c = &a.common;
    let p = Pca {
        input: a.input.input(),
        components: a.components,
        center: !a.no_center,
        options: c.options()?,
    };
    let (run, charged) = super::ledger::settle(p.options.ledger.as_ref(), p.run())?;
    let res = &run.output.run.result;
    let ratios = &res.explained_variance_ratio;
    let mut cum = 0.0;
    let series = vec![
        Series {
            name: "explained variance ratio (private)".into(),
            points: ratios
                .iter()
                .enumerate()
                .map(|(i, v)| ((i + 1) as f64, *v))
                .collect(),
            err: None,
            dashed: false,
        },
        Series {
            name: "cumulative (private)".into(),
            points: ratios
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
    let kind = if p.center { "PCA" } else { "SVD" };
    let chart = Chart {
        title: format!("SuLQ {kind} explained variance (eps = {})", c.epsilon),
        x_label: "component".into(),
        y_label: "share of variance".into(),
        series,
        log_x: false,
        x_axis: XAxis::Integers,
        bars: false,
    };
    let mut charts = Vec::new();
    if let Some(exact) = &run.exact_ratios_not_private {
        let reference = with_exact_ratios(&chart, exact, ratios.len());
        charts.push((c.out.join("explained_variance.NOT-PRIVATE"), reference));
    }
    charts.push((c.out.join("explained_variance"), chart));
    let summary = format!(
        "SuLQ {kind}: {} of {} components on {}; top explained variance ratios {:?}; eps spent \
         {:.4} (delta {})",
        a.components,
        run.names.len(),
        run.rows,
        ratios
            .iter()
            .take(a.components)
            .map(|v| (v * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>(),
        res.guarantee.epsilon_spent,
        c.delta,
    );
    finish_sulq(&c.out, run.output, charged, summary, charts)
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
    let c = &a.common;
    let s = Stat {
        input: a.input.input(),
        label: a.label.clone(),
        zero_one: a.zero_one,
        tau: a.tau,
        options: c.options()?,
    };
    let (run, charged) = super::ledger::settle(s.options.ledger.as_ref(), s.run())?;
    let res = &run.output.run.result;
    let summary = format!(
        "SQ learner on SuLQ ({} STAT queries, accuracy +-{:.4}): best single predictor '{}' \
         (+1 when {}), noisy error {:.4}; eps spent {:.4} (delta {})",
        run.queries,
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
    finish_sulq(&c.out, run.output, charged, summary, Vec::new())
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

pub(crate) fn run_implication(a: &ImplicationArgs) -> Result<Done> {
    let c = &a.common;
    let t = Implication {
        a: a.a.clone(),
        alpha: a.alpha.clone(),
        b: a.b.clone(),
        beta: a.beta.clone(),
        gap: a.gap,
        method: a.method.clone(),
        trials: a.trials,
        options: c.options()?,
    };
    let (run, charged) = super::ledger::settle(t.options.ledger.as_ref(), t.run())?;
    let res = &run.output.run.result;
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
        if run.groups { "groups" } else { "heavy sets" },
        res.guarantee_a.epsilon_spent,
        c.delta,
    );
    finish_sulq(&c.out, run.output, charged, summary, Vec::new())
}

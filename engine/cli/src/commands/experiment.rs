//! `kinsey experiment`: the seeds' experiments (Figure 2 of seed 001).

use super::common::*;
use clap::Subcommand;
use kinsey::classifier::NoiseKind;
use kinsey_core::Result;
use kinsey_data::parquet_io::ColumnSpec;
use std::path::{Path, PathBuf};

/// Reproduce an experiment of the seeds.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// Figure 2 of Pathak, Rane & Raj (NIPS 2010) on a9a: test error against lambda.
    Figure2(Figure2Args),
    /// The decayed-sum mechanisms' stated error (public: no data) against the window
    /// length and the decay: the tree beside the one --mechanism best chooses.
    Mechanisms(MechanismsArgs),
}

#[derive(clap::Args, Debug)]
struct MechanismsArgs {
    /// Output directory (CSV, SVG and PNG).
    #[arg(long)]
    out: PathBuf,
    /// Steps of the series (the public length the errors are averaged over).
    #[arg(long, default_value_t = 3_000_000)]
    steps: u64,
    /// Privacy budget of each release.
    #[arg(long, default_value_t = 1.0)]
    epsilon: f64,
    /// Per-step bound B.
    #[arg(long, default_value_t = 1.0)]
    bound: f64,
}

/// `kinsey experiment mechanisms`: the stated mean RMSE (the public figure --mechanism best
/// compares) of the tree and of the best mechanism, pure DP at eps and zCDP at the
/// rho = eps^2 / 2 it implies (the Gaussian tree and the best zCDP mechanism), over window
/// lengths and decays.
fn mechanisms(a: MechanismsArgs) -> Result<()> {
    use crate::plot::{Chart, Series, XAxis, write_chart};
    let m = kinsey::bench::mechanisms::mechanisms(a.steps, a.epsilon, a.bound)?;
    let (csv, win, exp) = (m.csv, m.window, m.exponential);
    let mut o = kinsey_data::output::Outputs::new();
    o.ensure_dir(&a.out)?;
    o.write(&a.out.join("mechanisms.csv"), csv.as_bytes())?;
    let rho = a.epsilon * a.epsilon / 2.0;
    let chart = |title: String, x: &str, lines: Vec<Vec<(f64, f64)>>| {
        let names = [
            "dyadic tree (the default), eps".to_string(),
            "best pure (k-ary or smooth tree, optimal estimates), eps".to_string(),
            format!("Gaussian tree, rho = {rho}"),
            format!("best zCDP (factorization), rho = {rho}"),
        ];
        Chart {
            title,
            x_label: x.into(),
            y_label: "stated RMSE (mean over steps)".into(),
            series: names
                .into_iter()
                .zip(lines)
                .enumerate()
                .map(|(i, (name, points))| Series {
                    name,
                    points,
                    err: None,
                    dashed: i % 2 == 0,
                })
                .collect(),
            log_x: true,
            x_axis: XAxis::Numbers,
            bars: false,
        }
    };
    let (wt, at) = (win, exp);
    let eps = a.epsilon;
    write_chart(
        &mut o,
        &a.out.join("error-vs-window"),
        &chart(
            format!("Window sums, eps = {eps}, B = {}", a.bound),
            "window W (steps)",
            wt,
        ),
    )?;
    write_chart(
        &mut o,
        &a.out.join("error-vs-alpha"),
        &chart(
            format!("Exponential sums, eps = {eps}, B = {}", a.bound),
            "1 / (1 - alpha) (steps)",
            at,
        ),
    )?;
    o.commit()?;
    println!(
        "wrote {}/mechanisms.csv, error-vs-window and error-vs-alpha (.svg, .png)",
        a.out.display()
    );
    Ok(())
}

/// Runs the chosen experiment.
pub(crate) fn run(a: Args) -> Result<()> {
    match a.which {
        Which::Figure2(x) => figure2(x),
        Which::Mechanisms(x) => mechanisms(x),
    }
}

#[derive(clap::Args, Debug)]
struct Figure2Args {
    #[arg(long)]
    /// The training set (LIBSVM text, d = 123, or Parquet).
    train: PathBuf,
    #[arg(long)]
    /// The test set (same format).
    test: PathBuf,
    #[arg(long)]
    /// Output directory (CSV, JSON, markdown, SVG and PNG).
    out: PathBuf,
    #[arg(long, default_value_t = 200)]
    /// Noise draws per point of the curve.
    runs: usize,
    #[arg(long)]
    /// Seed of the noise draws (reproducible; NOT private against its holder).
    seed: Option<u64>,
    #[arg(long, value_delimiter = ',')]
    /// Regularisation values lambda of the curve, e.g. 1e-4,1e-3,1e-2.
    lambdas: Option<Vec<f64>>,
    #[arg(long, value_parser = parse_noise, default_value = "l2")]
    /// l2 (the paper's L2-Laplace) or laplace (per coordinate).
    noise: NoiseKind,
}

/// `kinsey experiment figure2`: Figure 2 of seed 001.
fn figure2(a: Figure2Args) -> Result<()> {
    let Figure2Args {
        train,
        test,
        out,
        runs,
        seed,
        lambdas,
        noise,
    } = a;
    let spec = ColumnSpec::default();
    let dim = |p: &Path| {
        if p.extension().is_some_and(|e| e == "parquet") || p.is_dir() {
            None
        } else {
            Some(123)
        }
    };
    let tr = load(&train, &spec, dim(&train))?;
    let te = load(&test, &spec, dim(&test))?;
    crate::plot::check_fonts()?;
    let mut cfg = kinsey::bench::figure2::Figure2Config {
        runs,
        seed,
        noise,
        ..Default::default()
    };
    if let Some(l) = lambdas {
        cfg.lambdas = l;
    }
    let r = kinsey::bench::figure2::run(&tr, &te, &cfg, &crate::term::Bars::default())?;
    let files = crate::experiment::figure2::write(&r, &out)?;
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md"))
    {
        if let Ok(s) = std::fs::read_to_string(f) {
            println!("{s}");
        }
    }
    println!(
        "wrote {} files to {} in {:.1} s",
        files.len(),
        out.display(),
        r.seconds
    );
    Ok(())
}

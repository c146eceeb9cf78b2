//! `kinsey experiment`: the seeds' experiments (Figure 2 of seed 001).

use super::common::*;
use clap::Subcommand;
use kinsey_core::Result;
use kinsey_data::parquet_io::ColumnSpec;
use kinsey_learn::aggregate::NoiseKind;
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
}

/// Runs the chosen experiment.
pub(crate) fn run(a: Args) -> Result<()> {
    match a.which {
        Which::Figure2(x) => figure2(x),
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
    let mut cfg = crate::experiment::figure2::Figure2Config {
        runs,
        seed,
        noise,
        ..Default::default()
    };
    if let Some(l) = lambdas {
        cfg.lambdas = l;
    }
    let r = crate::experiment::figure2::run(&tr, &te, &cfg)?;
    let files = r.write(&out)?;
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

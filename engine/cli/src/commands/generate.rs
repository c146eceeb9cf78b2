//! `kinsey generate`: synthetic parties from a planted logistic model, through the facade's
//! [`kinsey::data::Generate`].

use kinsey_core::Result;
use std::path::PathBuf;

/// Synthetic parties from a planted logistic model (plus a test set).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// Parties (one Parquet file each).
    parties: usize,
    /// Total training rows, split evenly across the parties.
    #[arg(long)]
    rows: usize,
    #[arg(long, value_parser = kinsey_core::limits::parse_dim)]
    /// Features.
    dim: usize,
    #[arg(long)]
    /// Output directory (party-1.parquet, ..., test.parquet).
    out: PathBuf,
    #[arg(long, default_value_t = 0)]
    /// Seed of the generated data (public synthetic data, not noise).
    seed: u64,
    /// Test rows (default: rows / 5).
    #[arg(long)]
    test_rows: Option<usize>,
    /// Norm of the planted model.
    #[arg(long, default_value_t = 4.0)]
    signal: f64,
    /// AR(1) correlation between neighbouring features, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    correlation: f64,
}

/// Runs `kinsey generate`.
pub(crate) fn run(a: Args) -> Result<()> {
    kinsey::data::Generate {
        parties: a.parties,
        rows: a.rows,
        dim: a.dim,
        seed: a.seed,
        test_rows: a.test_rows,
        signal: a.signal,
        correlation: a.correlation,
    }
    .write(&a.out, &crate::term::Bars::default())?;
    println!(
        "wrote {} parties ({} rows, d = {}) and test.parquet to {}",
        a.parties,
        a.rows,
        a.dim,
        a.out.display()
    );
    Ok(())
}

//! `kinsey generate`: synthetic parties from a planted logistic model.

use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::parquet_io::write_parquet;
use kinsey_data::synth;
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
    let Args {
        parties,
        rows,
        dim,
        out,
        seed,
        test_rows,
        signal,
        correlation,
    } = a;
    if !(0.0..1.0).contains(&correlation) {
        return Err(Error::param(
            "correlation",
            format!("must be in [0, 1), got {correlation}"),
        ));
    }
    if parties == 0 || rows < parties || dim == 0 {
        return Err(Error::param(
            "generate",
            "need parties >= 1, rows >= parties, dim >= 1",
        ));
    }
    kinsey_core::limits::check_dense("--rows", rows.saturating_add(test_rows.unwrap_or(0)), dim)?;
    if !(signal.is_finite() && signal >= 0.0) {
        return Err(Error::param("signal", "must be finite and >= 0"));
    }
    let mut o = Outputs::new();
    o.ensure_dir(&out)?;
    let bar = crate::term::bar(parties as u64 + 1, "generating");
    let mut sizes = vec![rows / parties; parties];
    sizes[parties - 1] += rows % parties;
    for (j, &n) in sizes.iter().enumerate() {
        let ds = synth::generate_correlated(
            n,
            dim,
            signal,
            correlation,
            seed,
            j as u64 + 1,
            "gen".into(),
        );
        write_parquet(
            &mut o,
            &out.join(format!("party-{}.parquet", j + 1)),
            &ds,
            "label",
        )?;
        bar.inc(1);
    }
    let test = synth::generate(
        test_rows.unwrap_or(rows / 5).max(1),
        dim,
        signal,
        seed,
        0,
        "gen".into(),
    );
    write_parquet(&mut o, &out.join("test.parquet"), &test, "label")?;
    write_json(
        &mut o,
        &out.join("generate.json"),
        &serde_json::json!({"seed": seed, "signal": signal, "correlation": correlation, "dim": dim, "party_rows": sizes, "test_rows": test.n(), "planted_w": synth::planted_w(dim, signal, seed)}),
    )?;
    bar.finish_and_clear();
    o.commit()?;
    println!(
        "wrote {parties} parties ({rows} rows, d = {dim}) and test.parquet to {}",
        out.display()
    );
    Ok(())
}

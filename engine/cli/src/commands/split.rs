//! `kinsey split`: shuffle a data set and split it into one Parquet file per party.

use super::common::*;
use kinsey::data::SplitSpec;
use kinsey_core::Result;
use std::path::PathBuf;

/// Shuffle a data set (recorded seed) and split it into one Parquet file per party.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// The data set to split: Parquet, or LIBSVM text with --dim.
    input: PathBuf,
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "fractions",
        required_unless_present = "fractions"
    )]
    /// Rows of each party, e.g. 4884,6512,6512 (or --fractions).
    sizes: Vec<usize>,
    #[arg(long, value_delimiter = ',')]
    /// Share of each party, e.g. 0.2,0.3,0.5 (or --sizes).
    fractions: Vec<f64>,
    #[arg(long)]
    /// Output directory (party-1.parquet, ...).
    out: PathBuf,
    #[arg(long)]
    /// Seed of the random assignment of rows to parties.
    seed: Option<u64>,
    /// Dimension, for LIBSVM input.
    #[arg(long)]
    dim: Option<usize>,
    #[command(flatten)]
    cols: ColumnArgs,
}

/// Runs `kinsey split`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        input,
        sizes,
        fractions,
        out,
        seed,
        dim,
        cols,
    } = a;
    let ds = load(&input, &cols.spec(), dim)?;
    let spec = if sizes.is_empty() {
        SplitSpec::Fractions(fractions)
    } else {
        SplitSpec::Sizes(sizes)
    };
    // The shuffle seed is always recorded: drawn from the OS when not given.
    let done = kinsey::data::split_into_parties(&ds, &input, spec, seed, &out, &cols.label)?;
    let seed = done.seed;
    println!(
        "split {} rows into {} parties (seed {seed}) in {}",
        ds.n(),
        done.files.len(),
        out.display()
    );
    Ok(())
}

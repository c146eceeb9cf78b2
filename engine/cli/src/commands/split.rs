//! `kinsey split`: shuffle a data set and split it into one Parquet file per party.

use super::common::*;
use kinsey_core::Result;
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::parquet_io::write_parquet;
use kinsey_data::split::{SplitSpec, split};
use kinsey_dp::NoiseRng;
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
    let seed = seed.unwrap_or_else(|| NoiseRng::from_os().next_u64());
    let parts = split(&ds, &spec, &mut NoiseRng::from_seed_quiet(seed))?;
    let mut o = Outputs::new();
    o.ensure_dir(&out)?;
    let mut files = Vec::new();
    for (j, p) in parts.iter().enumerate() {
        let f = out.join(format!("party-{}.parquet", j + 1));
        write_parquet(&mut o, &f, p, &cols.label)?;
        files.push(serde_json::json!({"file": f, "rows": p.n()}));
    }
    write_json(
        &mut o,
        &out.join("split.json"),
        &serde_json::json!({"input": input, "seed": seed, "rows_in": ds.n(), "parties": files}),
    )?;
    o.commit()?;
    println!(
        "split {} rows into {} parties (seed {seed}) in {}",
        ds.n(),
        parts.len(),
        out.display()
    );
    Ok(())
}

//! `kinsey convert`: LIBSVM text to Parquet.

use super::common::*;
use kinsey::data::LabelEncoding;
use kinsey_core::Result;
use std::path::PathBuf;

/// Convert a LIBSVM text file to Parquet (features f1..fD, label).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long)]
    /// The LIBSVM text file to convert.
    libsvm: PathBuf,
    #[arg(long, value_parser = kinsey_core::limits::parse_dim)]
    /// Its dimension, fixed (a9a: 123; never inferred from the file).
    dim: usize,
    #[arg(long)]
    /// The Parquet file to write (columns f1..fD and label).
    out: PathBuf,
    #[arg(long, value_parser = parse_labels, default_value = "plus_minus_one")]
    /// How the labels are written: plus_minus_one (-1/+1) or zero_one (0/1, mapped to
    /// -1/+1), as `labels` in a train config and `labels=` in Python (pm1 and 01 also read).
    labels: LabelEncoding,
    /// Keep the rows sparse: list columns `indices` (0-based) and `values` of each row's
    /// non-zeros, and `label` (what `[data] format = "sparse-parquet"` reads).
    #[arg(long)]
    sparse: bool,
}

/// Runs `kinsey convert`: the facade's [`kinsey::data::convert_libsvm`], a block of rows at
/// a time into a staged file moved into place only when the whole file has converted.
pub(crate) fn run(a: Args) -> Result<()> {
    let c = kinsey::data::convert_libsvm(&a.libsvm, a.dim, &a.out, a.labels, a.sparse)?;
    match c.nonzeros {
        Some(nnz) => println!(
            "wrote {} ({} rows x {} features, {nnz} non-zeros, sparse)",
            a.out.display(),
            c.rows,
            a.dim
        ),
        None => println!(
            "wrote {} ({} rows x {} features)",
            a.out.display(),
            c.rows,
            a.dim
        ),
    }
    Ok(())
}

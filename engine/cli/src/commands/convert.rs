//! `kinsey convert`: LIBSVM text to Parquet.

use super::common::*;
use kinsey_core::Result;
use kinsey_data::LabelEncoding;
use kinsey_data::libsvm::read_libsvm;
use kinsey_data::output::Outputs;
use kinsey_data::parquet_io::write_parquet;
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
    #[arg(long, value_parser = parse_labels, default_value = "pm1")]
    /// How the labels are written: pm1 (-1/+1) or 01 (0/1, mapped to -1/+1).
    labels: LabelEncoding,
}

/// Runs `kinsey convert`.
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        libsvm,
        dim,
        out,
        labels,
    } = a;
    let ds = read_libsvm(&libsvm, dim, labels)?;
    let mut o = Outputs::new();
    write_parquet(&mut o, &out, &ds, "label")?;
    o.commit()?;
    println!(
        "wrote {} ({} rows x {} features)",
        out.display(),
        ds.n(),
        ds.d
    );
    Ok(())
}

//! `kinsey convert`: LIBSVM text to Parquet.

use super::common::*;
use kinsey_core::Result;
use kinsey_data::LabelEncoding;
use kinsey_data::libsvm::LibsvmBlocks;
use kinsey_data::output::Outputs;
use kinsey_data::parquet_io::ParquetRows;
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

/// Rows read and written at a time: memory is one block (about `BLOCK_ROWS dim 4` bytes
/// twice over), whatever the file's length.
const BLOCK_ROWS: usize = 1 << 16;

/// Runs `kinsey convert`: the LIBSVM text a block of rows at a time into a staged Parquet
/// file (moved into place only when the whole file has converted).
pub(crate) fn run(a: Args) -> Result<()> {
    let Args {
        libsvm,
        dim,
        out,
        labels,
    } = a;
    let mut blocks = LibsvmBlocks::open(&libsvm, dim, labels)?;
    let mut o = Outputs::new();
    let (mut writer, mut rows) = (None, 0usize);
    while let Some(ds) = blocks.next_block(BLOCK_ROWS)? {
        let w = match &mut writer {
            Some(w) => w,
            None => writer.insert(ParquetRows::create(&mut o, &out, &ds, "label")?),
        };
        w.write(&ds)?;
        rows += ds.n();
    }
    let Some(w) = writer else {
        // No rows: the error every reader gives for an empty data set.
        return kinsey_data::Dataset {
            x: Vec::new(),
            y: Vec::new(),
            d: dim,
            features: Vec::new(),
            source: libsvm,
        }
        .check_nonempty();
    };
    w.finish()?;
    o.commit()?;
    println!("wrote {} ({rows} rows x {dim} features)", out.display());
    Ok(())
}

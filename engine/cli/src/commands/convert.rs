//! `kinsey convert`: LIBSVM text to Parquet.

use super::common::*;
use kinsey_core::Result;
use kinsey_data::LabelEncoding;
use kinsey_data::libsvm::LibsvmBlocks;
use kinsey_data::output::Outputs;
use kinsey_data::parquet_io::ParquetRows;
use kinsey_data::sparse::SparseDataset;
use kinsey_data::sparse_parquet::SparseParquetRows;
use std::path::{Path, PathBuf};

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
    /// Keep the rows sparse: list columns `indices` (0-based) and `values` of each row's
    /// non-zeros, and `label` (what `[data] format = "sparse-parquet"` reads).
    #[arg(long)]
    sparse: bool,
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
        sparse,
    } = a;
    if sparse {
        return run_sparse(&libsvm, dim, &out, labels);
    }
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

/// `--sparse`: the LIBSVM text a block of rows at a time into a staged sparse Parquet file.
fn run_sparse(libsvm: &Path, dim: usize, out: &Path, labels: LabelEncoding) -> Result<()> {
    let mut lines = LibsvmBlocks::open(libsvm, dim, labels)?;
    let mut o = Outputs::new();
    let mut w = SparseParquetRows::create(&mut o, out, "label")?;
    let empty = || SparseDataset::empty(dim, libsvm);
    let (mut block, mut rows, mut nnz) = (empty(), 0usize, 0usize);
    loop {
        let next = lines.next_sparse_row(&mut block.indices, &mut block.values)?;
        if let Some(y) = next {
            block.y.push(y);
            block.indptr.push(block.values.len());
        }
        if block.n() == BLOCK_ROWS || (next.is_none() && block.n() > 0) {
            w.write(&block)?;
            (rows, nnz) = (rows + block.n(), nnz + block.nnz());
            block = empty();
        }
        if next.is_none() {
            break;
        }
    }
    if rows == 0 {
        // No rows: the error every reader gives for an empty data set (nothing is written).
        return Err(kinsey_core::Error::format(
            libsvm,
            "the data set has zero rows",
        ));
    }
    w.finish()?;
    o.commit()?;
    println!(
        "wrote {} ({rows} rows x {dim} features, {nnz} non-zeros, sparse)",
        out.display()
    );
    Ok(())
}

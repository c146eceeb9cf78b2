//! A LIBSVM text file to Parquet (features `f1..fD`, `label`), dense or sparse, a block of
//! rows at a time into a staged file moved into place only when the whole file converted.

use kinsey_core::{Error, Result};
use kinsey_data::LabelEncoding;
use kinsey_data::libsvm::LibsvmBlocks;
use kinsey_data::output::Outputs;
use kinsey_data::parquet_io::ParquetRows;
use kinsey_data::sparse::SparseDataset;
use kinsey_data::sparse_parquet::SparseParquetRows;
use std::path::Path;

/// Rows read and written at a time: memory is one block (about `BLOCK_ROWS dim 4` bytes
/// twice over), whatever the file's length.
const BLOCK_ROWS: usize = 1 << 16;

/// What a conversion wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Converted {
    /// Rows written.
    pub rows: usize,
    /// Non-zeros written, for a sparse file.
    pub nonzeros: Option<usize>,
}

/// Convert `libsvm` (dimension `dim`, fixed: never inferred) to the Parquet file `out`:
/// columns `f1..fD` and `label`, or with `sparse` the list columns `indices` (0-based) and
/// `values` of each row's non-zeros and `label` (what `[data] format = "sparse-parquet"`
/// reads). An empty file is refused and nothing is written.
pub fn convert_libsvm(
    libsvm: &Path,
    dim: usize,
    out: &Path,
    labels: LabelEncoding,
    sparse: bool,
) -> Result<Converted> {
    if sparse {
        return convert_sparse(libsvm, dim, out, labels);
    }
    let mut blocks = LibsvmBlocks::open(libsvm, dim, labels)?;
    let mut o = Outputs::new();
    let (mut writer, mut rows) = (None, 0usize);
    while let Some(ds) = blocks.next_block(BLOCK_ROWS)? {
        let w = match &mut writer {
            Some(w) => w,
            None => writer.insert(ParquetRows::create(&mut o, out, &ds, "label")?),
        };
        w.write(&ds)?;
        rows += ds.n();
    }
    let Some(w) = writer else {
        // No rows: the error every reader gives for an empty data set.
        kinsey_data::Dataset {
            x: Vec::new(),
            y: Vec::new(),
            d: dim,
            features: Vec::new(),
            source: libsvm.to_path_buf(),
        }
        .check_nonempty()?;
        return Err(Error::format(libsvm, "the data set has zero rows"));
    };
    w.finish()?;
    o.commit()?;
    Ok(Converted {
        rows,
        nonzeros: None,
    })
}

/// The sparse conversion, a block of rows at a time.
fn convert_sparse(
    libsvm: &Path,
    dim: usize,
    out: &Path,
    labels: LabelEncoding,
) -> Result<Converted> {
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
        return Err(Error::format(libsvm, "the data set has zero rows"));
    }
    w.finish()?;
    o.commit()?;
    Ok(Converted {
        rows,
        nonzeros: Some(nnz),
    })
}

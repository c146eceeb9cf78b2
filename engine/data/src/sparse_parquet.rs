//! Sparse rows stored in Parquet, read as CSR ([`SparseDataset`]) and written by
//! `kinsey convert --sparse`: each row's non-zeros as two list columns of equal lengths
//! (0-based feature indices, integers; their values, numbers), or as one map column (index
//! to value). A row with no non-zeros is an empty list (or map).
//!
//! The checks are the dense reader's and the LIBSVM reader's: every cell finite and
//! non-null, labels in the declared encoding, and per row the indices within `0..dim`,
//! strictly ascending, as many as the values. An error names the file, the column and the
//! row (counted from 0 in the file). Stored zeros are dropped, as the LIBSVM reader drops
//! them, so a row is the same CSR row whichever of the three it was read from.

use crate::parquet_io::{
    arrow_error, as_f64, column_index, numeric_column_index, parquet_error, parquet_files,
};
use crate::sparse::SparseDataset;
use crate::{LabelEncoding, map_label};
use arrow::array::{Array, ArrayRef, AsArray, Float32Array, Int32Array, ListArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use arrow::record_batch::RecordBatch;
use kinsey_core::{Error, Result};
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// How a Parquet file stores each row's non-zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SparseLayout {
    /// Two list columns, of equal lengths in every row: feature indices (0-based integers)
    /// and their values (numbers).
    Lists {
        /// The indices' column.
        indices: String,
        /// The values' column.
        values: String,
    },
    /// One map column from feature index (a 0-based integer) to value.
    Map {
        /// The map's column.
        column: String,
    },
}

impl Default for SparseLayout {
    /// The lists `indices` and `values`, as `kinsey convert --sparse` writes them.
    fn default() -> Self {
        Self::Lists {
            indices: "indices".into(),
            values: "values".into(),
        }
    }
}

/// Rows per batch read or written.
const BATCH_ROWS: usize = 1 << 16;

/// Read a Parquet file (or a directory's `*.parquet` files, in name order) of sparse rows
/// of `dim` features as CSR, its labels from `label`. `within` sees the rows read so far
/// after every batch of 65,536 rows, and its error stops the read (a memory budget).
pub fn read_sparse_parquet_within(
    path: &Path,
    (dim, layout): (usize, &SparseLayout),
    (label, labels): (&str, LabelEncoding),
    within: &mut dyn FnMut(&SparseDataset) -> Result<()>,
) -> Result<SparseDataset> {
    let mut out = SparseDataset::empty(dim, path);
    for file in parquet_files(path)? {
        let pq = |source| parquet_error(&file, source);
        let handle = File::open(&file).map_err(|e| Error::io(&file, e))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(handle).map_err(pq)?;
        let schema = builder.schema().clone();
        let li = numeric_column_index(&file, &schema, label)?;
        let cols: Vec<(usize, &str)> = match layout {
            SparseLayout::Lists { indices, values } => vec![
                (column_index(&file, &schema, indices)?, indices.as_str()),
                (column_index(&file, &schema, values)?, values.as_str()),
            ],
            SparseLayout::Map { column } => {
                vec![(column_index(&file, &schema, column)?, column.as_str())]
            }
        };
        let roots = std::iter::once(li).chain(cols.iter().map(|c| c.0));
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(pq)?;
        let mut row0 = 0usize;
        for batch in reader {
            let batch = batch.map_err(arrow_error(&file))?;
            // The projection keeps the file's column order: find each by name.
            let col = |name: &str| -> ArrayRef {
                let i = batch.schema().index_of(name).unwrap_or(0);
                batch.column(i).clone()
            };
            for (i, v) in as_f64(&col(label), &file, label, row0)?
                .into_iter()
                .enumerate()
            {
                out.y.push(map_label(v, labels, &file, label, row0 + i)?);
            }
            let rows = match layout {
                SparseLayout::Lists { indices, values } => {
                    let (io, ic) = list_parts(&col(indices), &file, indices, row0)?;
                    let (vo, vc) = list_parts(&col(values), &file, values, row0)?;
                    let at = Cells { file: &file, row0 };
                    let idx = at.indices(&ic, &io, indices)?;
                    let val = at.values(&vc, &vo, values)?;
                    Entries {
                        idx: (&idx, &io, indices),
                        val: (&val, &vo, values),
                    }
                    .append(&at, dim, &mut out)?
                }
                SparseLayout::Map { column } => {
                    let (off, keys, vals) = map_parts(&col(column), &file, column, row0)?;
                    let at = Cells { file: &file, row0 };
                    let idx = at.indices(&keys, &off, column)?;
                    let val = at.values(&vals, &off, column)?;
                    Entries {
                        idx: (&idx, &off, column),
                        val: (&val, &off, column),
                    }
                    .append(&at, dim, &mut out)?
                }
            };
            row0 += rows;
            within(&out)?;
        }
    }
    if out.n() == 0 {
        return Err(Error::format(path, "the data set has zero rows"));
    }
    Ok(out)
}

/// A list column's row offsets (relative to its values) and values; a null row is an
/// error naming it.
fn list_parts(
    col: &ArrayRef,
    file: &Path,
    name: &str,
    row0: usize,
) -> Result<(Vec<usize>, ArrayRef)> {
    no_null_rows(col, file, name, row0)?;
    let (offsets, values): (Vec<usize>, ArrayRef) = match col.data_type() {
        DataType::List(_) => {
            let l = col.as_list::<i32>();
            let o = l.value_offsets().iter().map(|&o| o as usize).collect();
            (o, l.values().clone())
        }
        DataType::LargeList(_) => {
            let l = col.as_list::<i64>();
            let o = l.value_offsets().iter().map(|&o| o as usize).collect();
            (o, l.values().clone())
        }
        dt => {
            return Err(schema_error(
                file,
                name,
                format!("type {dt}, expected a list"),
            ));
        }
    };
    Ok((offsets, values))
}

/// A map column's row offsets, keys and values; a null row is an error naming it.
fn map_parts(
    col: &ArrayRef,
    file: &Path,
    name: &str,
    row0: usize,
) -> Result<(Vec<usize>, ArrayRef, ArrayRef)> {
    if !matches!(col.data_type(), DataType::Map(..)) {
        let msg = format!("type {}, expected a map", col.data_type());
        return Err(schema_error(file, name, msg));
    }
    no_null_rows(col, file, name, row0)?;
    let m = col.as_map();
    let offsets = m.value_offsets().iter().map(|&o| o as usize).collect();
    Ok((offsets, m.keys().clone(), m.values().clone()))
}

fn no_null_rows(col: &ArrayRef, file: &Path, name: &str, row0: usize) -> Result<()> {
    match (0..col.len()).find(|&i| col.is_null(i)) {
        Some(i) => Err(value_error(
            file,
            name,
            row0 + i,
            "null row (a row without non-zeros is an empty list)",
        )),
        None => Ok(()),
    }
}

fn schema_error(file: &Path, name: &str, msg: String) -> Error {
    Error::Schema {
        path: file.to_path_buf(),
        column: name.to_string(),
        msg,
    }
}

fn value_error(file: &Path, name: &str, row: usize, msg: impl Into<String>) -> Error {
    Error::Value {
        path: file.to_path_buf(),
        column: name.to_string(),
        row,
        msg: msg.into(),
    }
}

/// Where a batch's cells are: its file and its first row there.
struct Cells<'a> {
    file: &'a Path,
    row0: usize,
}

impl Cells<'_> {
    /// The row (in the file) of element `e` of a list column with `offsets`.
    fn row_of(&self, offsets: &[usize], e: usize) -> usize {
        self.row0 + offsets.partition_point(|&o| o <= e).saturating_sub(1)
    }

    /// A child column of integers as i64, no nulls.
    fn indices(&self, child: &ArrayRef, offsets: &[usize], name: &str) -> Result<Vec<i64>> {
        if !child.data_type().is_integer() {
            let msg = format!("elements of type {}, expected integers", child.data_type());
            return Err(schema_error(self.file, name, msg));
        }
        self.no_null_elements(child, offsets, name)?;
        let cast = arrow::compute::cast(child, &DataType::Int64).map_err(arrow_error(self.file))?;
        Ok(cast.as_primitive::<Int64Type>().values().to_vec())
    }

    /// A child column of numbers as f64, no nulls, every value finite.
    fn values(&self, child: &ArrayRef, offsets: &[usize], name: &str) -> Result<Vec<f64>> {
        if !crate::parquet_io::is_numeric(child.data_type()) {
            let msg = format!("elements of type {}, expected numbers", child.data_type());
            return Err(schema_error(self.file, name, msg));
        }
        self.no_null_elements(child, offsets, name)?;
        as_f64(child, self.file, name, 0).map_err(|e| match e {
            Error::Value { row, msg, .. } => {
                value_error(self.file, name, self.row_of(offsets, row), msg)
            }
            e => e,
        })
    }

    fn no_null_elements(&self, child: &ArrayRef, offsets: &[usize], name: &str) -> Result<()> {
        match (0..child.len()).find(|&i| child.is_null(i)) {
            Some(e) => Err(value_error(
                self.file,
                name,
                self.row_of(offsets, e),
                "null element in a row's list",
            )),
            None => Ok(()),
        }
    }
}

/// One batch's indices and values, each with its row offsets and column name.
struct Entries<'a> {
    idx: (&'a [i64], &'a [usize], &'a str),
    val: (&'a [f64], &'a [usize], &'a str),
}

impl Entries<'_> {
    /// Append the batch's rows to `out` (checked: as many indices as values, every index
    /// in `0..dim`, strictly ascending); the rows appended.
    fn append(&self, at: &Cells<'_>, dim: usize, out: &mut SparseDataset) -> Result<usize> {
        let ((idx, io, iname), (val, vo, vname)) = (self.idx, self.val);
        let rows = io.len().saturating_sub(1);
        for r in 0..rows {
            let (i0, i1, v0, v1) = (io[r], io[r + 1], vo[r], vo[r + 1]);
            let row = at.row0 + r;
            if i1 - i0 != v1 - v0 {
                let msg = format!("{} indices but {} values in {vname}", i1 - i0, v1 - v0);
                return Err(value_error(at.file, iname, row, msg));
            }
            let mut last: Option<i64> = None;
            for (&i, &v) in idx[i0..i1].iter().zip(&val[v0..v1]) {
                if i < 0 || i as u64 >= dim as u64 {
                    let msg =
                        format!("feature index {i} is outside 0..{dim} (indices count from 0)");
                    return Err(value_error(at.file, iname, row, msg));
                }
                if last.is_some_and(|l| l >= i) {
                    let msg = format!(
                        "feature index {i} after {}: indices must be strictly ascending",
                        last.unwrap_or(0)
                    );
                    return Err(value_error(at.file, iname, row, msg));
                }
                last = Some(i);
                let v = v as f32;
                if v != 0.0 {
                    out.indices.push(i as u32);
                    out.values.push(v);
                }
            }
            out.indptr.push(out.values.len());
        }
        Ok(rows)
    }
}

/// A sparse Parquet file written a block of rows at a time in the default layout (lists
/// `indices`, Int32, and `values`, Float32; the label Float32), ZSTD, staged in the
/// `Outputs` it was created from.
pub struct SparseParquetRows {
    writer: ArrowWriter<File>,
    schema: Arc<Schema>,
    target: std::path::PathBuf,
}

impl std::fmt::Debug for SparseParquetRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SparseParquetRows({})", self.target.display())
    }
}

impl SparseParquetRows {
    /// A new file at `target` (staged in `outputs`) with the label column `label`.
    pub fn create(
        outputs: &mut crate::output::Outputs,
        target: &Path,
        label: &str,
    ) -> Result<Self> {
        let tmp = outputs.stage(target)?;
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let item = |dt| Arc::new(Field::new("item", dt, false));
        let schema = Arc::new(Schema::new(vec![
            Field::new("indices", DataType::List(item(DataType::Int32)), false),
            Field::new("values", DataType::List(item(DataType::Float32)), false),
            Field::new(label, DataType::Float32, false),
        ]));
        let level = ZstdLevel::try_new(3).map_err(|e| parquet_error(target, e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(level))
            .set_max_row_group_row_count(Some(BATCH_ROWS * 2))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .map_err(|e| parquet_error(target, e))?;
        Ok(Self {
            writer,
            schema,
            target: target.to_path_buf(),
        })
    }

    /// The rows of `ds`, appended.
    pub fn write(&mut self, ds: &SparseDataset) -> Result<()> {
        let arrow = arrow_error(&self.target);
        let offsets = || {
            let o: Vec<i32> = ds.indptr.iter().map(|&p| p as i32).collect();
            OffsetBuffer::new(o.into())
        };
        let field = |i: usize| match self.schema.field(i).data_type() {
            DataType::List(f) => f.clone(),
            _ => Arc::new(Field::new("item", DataType::Null, false)),
        };
        if ds.nnz() > i32::MAX as usize {
            return Err(Error::param(
                "rows",
                format!(
                    "{}: a block of more than 2^31 non-zeros",
                    self.target.display()
                ),
            ));
        }
        let indices = Int32Array::from_iter_values(ds.indices.iter().map(|&i| i as i32));
        let values = Float32Array::from(ds.values.clone());
        let li =
            ListArray::try_new(field(0), offsets(), Arc::new(indices), None).map_err(&arrow)?;
        let lv = ListArray::try_new(field(1), offsets(), Arc::new(values), None).map_err(&arrow)?;
        let y = Float32Array::from(ds.y.clone());
        let cols: Vec<ArrayRef> = vec![Arc::new(li), Arc::new(lv), Arc::new(y)];
        let batch = RecordBatch::try_new(self.schema.clone(), cols).map_err(&arrow)?;
        self.writer
            .write(&batch)
            .map_err(|e| parquet_error(&self.target, e))
    }

    /// Closes the file (still staged: the `Outputs` commit moves it into place).
    pub fn finish(self) -> Result<()> {
        let target = self.target;
        self.writer.close().map_err(|e| parquet_error(&target, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;

//! Parquet ingest and output with arrow-rs.
//!
//! A party's data set is a Parquet file, or a directory of Parquet files with the same
//! schema (read in name order). The label column and the feature columns come from the
//! config (default: `label`, and every other numeric column). Integers, floats and
//! booleans are features; a non-numeric column listed as a feature is an error, and in
//! the default mode non-numeric columns are skipped with a warning.

use super::output::Outputs;
use super::{Dataset, LabelEncoding, map_label};
use arrow::array::{Array, ArrayRef, AsArray, Float32Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Float64Type, Schema};
use kinsey_core::{Error, Result};
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which columns to read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ColumnSpec {
    /// The label column.
    pub label: String,
    /// Empty: every numeric column except the label.
    pub features: Vec<String>,
    /// How the labels are written.
    pub labels: LabelEncoding,
}

impl Default for ColumnSpec {
    fn default() -> Self {
        Self {
            label: "label".into(),
            features: Vec::new(),
            labels: LabelEncoding::PlusMinusOne,
        }
    }
}

/// Rows per batch when reading and per row group when writing.
const BATCH_ROWS: usize = 64 * 1024;

pub(crate) fn is_numeric(dt: &DataType) -> bool {
    dt.is_numeric() || matches!(dt, DataType::Boolean)
}

/// Parquet files of a path: the file itself, or the `*.parquet` files of a directory.
pub(crate) fn parquet_files(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::io(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::format(path, "directory contains no .parquet files"));
    }
    Ok(files)
}

/// Read a Parquet file or directory into a dense data set.
pub fn read_parquet(path: &Path, spec: &ColumnSpec) -> Result<Dataset> {
    let files = parquet_files(path)?;
    let mut out: Option<Dataset> = None;
    for f in &files {
        let part = read_one(f, spec)?;
        match out.as_mut() {
            None => out = Some(part),
            Some(acc) => {
                acc.check_same_features(&part)?;
                acc.x.extend_from_slice(&part.x);
                acc.y.extend_from_slice(&part.y);
            }
        }
    }
    let mut ds = out.ok_or_else(|| Error::format(path, "no data"))?;
    ds.source = path.to_path_buf();
    ds.check_nonempty()?;
    Ok(ds)
}

/// A Parquet reader's error, or, for a file that does not start with Parquet's magic
/// bytes, what it is not and what to do ("Corrupt footer" told a user who passed LIBSVM
/// text nothing).
pub(crate) fn parquet_error(path: &Path, source: parquet::errors::ParquetError) -> Error {
    let mut magic = [0u8; 4];
    let is_parquet = File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .map(|()| &magic == b"PAR1")
        .unwrap_or(true);
    if is_parquet {
        Error::Parquet {
            path: path.to_path_buf(),
            source: Box::new(source),
        }
    } else if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        // The classifier's parties and the rows a classifier scores are Parquet (or
        // LIBSVM): a CSV there is named as one, with the way to Parquet.
        Error::format(
            path,
            "a CSV file, where the aggregate classifier reads Parquet (or LIBSVM text with \
             --dim D): write the table as Parquet first (pandas: \
             pd.read_csv(path).to_parquet(out); polars: pl.read_csv(path).write_parquet(out)); \
             histograms, statistics, trees, SuLQ and decayed sums read CSV as it is",
        )
    } else {
        Error::format(
            path,
            "not a Parquet file (it does not start with PAR1): a CSV file needs the .csv \
             extension, LIBSVM text needs --dim D (or `kinsey convert --libsvm`)",
        )
    }
}

fn read_one(path: &Path, spec: &ColumnSpec) -> Result<Dataset> {
    if let Some(ds) = read_groups(path, spec)? {
        return Ok(ds);
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let pq = |source| parquet_error(path, source);
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(pq)?;
    let schema = builder.schema().clone();
    let total_rows = builder.metadata().file_metadata().num_rows().max(0) as usize;
    let reader = builder.with_batch_size(BATCH_ROWS).build().map_err(pq)?;
    dataset_of_batches(path, &schema, reader, spec, total_rows)
}

/// Whether a column's *name* marks it as an identifier (`id`, `patient_id`, `PatientID`,
/// `id_x`, `uuid`, `row`, `index`, `key`). Decided on the schema, which is public, and
/// never on the values: whether a column's values are distinct integers can change when
/// one row is added, so a refusal decided on them would be a bit about that row.
pub fn looks_like_identifier(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let exact = [
        "id", "uuid", "guid", "row", "rowid", "row_id", "index", "idx", "key",
    ];
    exact.contains(&lower.as_str())
        || lower.ends_with("_id")
        || lower.ends_with("-id")
        || lower.starts_with("id_")
        || lower.ends_with("_uuid")
        || (name.ends_with("ID") || name.ends_with("Id"))
            && name.len() > 2
            && name[..name.len() - 2]
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// The label's and the features' column indices in `schema` under `spec` (no label index
/// when `spec.label` is empty: rows to score, not to train on), and the features' names.
pub(crate) fn resolve_columns(
    path: &Path,
    schema: &Schema,
    spec: &ColumnSpec,
) -> Result<(Option<usize>, Vec<usize>, Vec<String>)> {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let label_idx = if spec.label.is_empty() {
        None
    } else {
        let i = schema.index_of(&spec.label).map_err(|_| Error::Schema {
            path: path.to_path_buf(),
            column: spec.label.clone(),
            msg: format!(
                "label column not found; the columns are: {}",
                names.join(", ")
            ),
        })?;
        if !is_numeric(schema.field(i).data_type()) {
            return Err(Error::Schema {
                path: path.to_path_buf(),
                column: spec.label.clone(),
                msg: format!(
                    "label column has type {}, expected a numeric type",
                    schema.field(i).data_type()
                ),
            });
        }
        Some(i)
    };
    let feature_idx: Vec<usize> = if spec.features.is_empty() {
        let mut v = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            if Some(i) == label_idx {
                continue;
            }
            if is_numeric(f.data_type()) {
                if looks_like_identifier(f.name()) {
                    return Err(Error::Schema {
                        path: path.to_path_buf(),
                        column: f.name().clone(),
                        msg: "a column named like an identifier would be a feature (the \
                              model would learn row numbers): list the features in \
                              [data] features (kinsey predict --id COLUMN keeps an \
                              identifier beside the predictions)"
                            .into(),
                    });
                }
                v.push(i);
            } else {
                tracing::warn!(
                    "{}: skipping non-numeric column '{}' ({})",
                    path.display(),
                    f.name(),
                    f.data_type()
                );
            }
        }
        v
    } else {
        spec.features
            .iter()
            .map(|name| {
                let i = schema.index_of(name).map_err(|_| Error::Schema {
                    path: path.to_path_buf(),
                    column: name.clone(),
                    msg: format!("feature column not found; the columns are: {}", names.join(", ")),
                })?;
                let dt = schema.field(i).data_type();
                if !is_numeric(dt) {
                    return Err(Error::Schema {
                        path: path.to_path_buf(),
                        column: name.clone(),
                        msg: format!("non-numeric feature (type {dt}); features must be integers, floats or booleans"),
                    });
                }
                if Some(i) == label_idx {
                    return Err(Error::Schema {
                        path: path.to_path_buf(),
                        column: name.clone(),
                        msg: "the label column cannot also be a feature".into(),
                    });
                }
                Ok(i)
            })
            .collect::<Result<_>>()?
    };
    if feature_idx.is_empty() {
        return Err(Error::Schema {
            path: path.to_path_buf(),
            column: "<features>".into(),
            msg: "no numeric feature columns".into(),
        });
    }
    let features = feature_idx
        .iter()
        .map(|&i| schema.field(i).name().clone())
        .collect();
    Ok((label_idx, feature_idx, features))
}

/// A dense data set from record batches of `schema` (a Parquet file's, or a table handed
/// over in memory), read batch by batch into row-major `f32`; `path` names the source in
/// errors, `rows_hint` sizes the buffers. With an empty `spec.label` there are no labels
/// and `y` is all zeros (rows to score only).
pub fn dataset_of_batches<E>(
    path: &Path,
    schema: &Schema,
    batches: impl IntoIterator<Item = std::result::Result<RecordBatch, E>>,
    spec: &ColumnSpec,
    rows_hint: usize,
) -> Result<Dataset>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let (label_idx, feature_idx, features) = resolve_columns(path, schema, spec)?;
    let d = feature_idx.len();
    kinsey_core::limits::check_dense(&path.display().to_string(), rows_hint, d)?;
    let mut x = Vec::with_capacity(rows_hint.saturating_mul(d));
    let mut y = Vec::with_capacity(rows_hint);
    let mut row0 = 0usize;
    for batch in batches {
        let batch = batch.map_err(|source| Error::Arrow {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        if batch.schema().fields() != schema.fields() {
            return Err(Error::format(
                path,
                format!("record batch at row {row0} has another schema than the table's"),
            ));
        }
        let m = batch.num_rows();
        // A stream's length is not known before it ends: the bound is checked as it grows.
        kinsey_core::limits::check_dense(&path.display().to_string(), row0 + m, d)?;
        let cols = Columns {
            path,
            spec,
            label: label_idx,
            features: &feature_idx,
            names: &features,
        };
        decode_batch(&batch, &cols, row0, &mut x, &mut y)?;
        row0 += m;
    }
    Ok(Dataset {
        x,
        y,
        d,
        features,
        source: path.to_path_buf(),
    })
}

/// The columns a batch is decoded with: the label's index (none: rows to score), the
/// features' indices and names, and the file they come from (for errors).
pub(crate) struct Columns<'a> {
    pub(crate) path: &'a Path,
    pub(crate) spec: &'a ColumnSpec,
    pub(crate) label: Option<usize>,
    pub(crate) features: &'a [usize],
    pub(crate) names: &'a [String],
}

/// Append one record batch's rows (row-major `f32` features, mapped labels) to `x` and
/// `y`; `row0` is the batch's first row in the file (for errors).
pub(crate) fn decode_batch(
    batch: &RecordBatch,
    cols: &Columns<'_>,
    row0: usize,
    x: &mut Vec<f32>,
    y: &mut Vec<f32>,
) -> Result<()> {
    let (m, d) = (batch.num_rows(), cols.features.len());
    let (sx, sy) = (x.len(), y.len());
    x.resize(sx + m * d, 0.0);
    y.resize(sy + m, 0.0);
    decode_rows(batch, cols, row0, &mut x[sx..], &mut y[sy..])
}

/// [`decode_batch`] into `x` and `y` of exactly the batch's rows.
pub(crate) fn decode_rows(
    batch: &RecordBatch,
    cols: &Columns<'_>,
    row0: usize,
    x: &mut [f32],
    y: &mut [f32],
) -> Result<()> {
    let (path, spec, d) = (cols.path, cols.spec, cols.features.len());
    match cols.label {
        Some(li) => {
            let label = as_f64(batch.column(li), path, &spec.label, row0)?;
            for (i, (&v, out)) in label.iter().zip(y.iter_mut()).enumerate() {
                *out = map_label(v, spec.labels, path, &spec.label, row0 + i)?;
            }
        }
        None => y.fill(0.0),
    }
    // Checked side by side; the first bad column in column order is the error.
    let views = cols
        .features
        .par_iter()
        .zip(cols.names)
        .map(|(&ci, name)| FeatureView::of(batch.column(ci), path, name, row0))
        .collect::<Vec<_>>()
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    // Columns to rows a tile of rows at a time (tiles side by side), so the rows being
    // written stay in cache (a whole batch's rows are megabytes; one column's stride
    // through them misses on every row).
    x.par_chunks_mut(TILE_ROWS * d.max(1))
        .enumerate()
        .for_each(|(t, tile)| {
            let r0 = t * TILE_ROWS;
            let r1 = r0 + tile.len() / d.max(1);
            for (j, view) in views.iter().enumerate() {
                match view {
                    FeatureView::F32(v) => {
                        for (row, &val) in tile.chunks_exact_mut(d).zip(&v.values()[r0..r1]) {
                            row[j] = val;
                        }
                    }
                    FeatureView::F64(v) => {
                        for (row, &val) in tile.chunks_exact_mut(d).zip(&v.values()[r0..r1]) {
                            row[j] = val as f32;
                        }
                    }
                }
            }
        });
    Ok(())
}

/// Rows per tile of the column-to-row copy.
const TILE_ROWS: usize = 256;

/// A feature column checked (no nulls, finite values) and ready to copy: `f32` columns as
/// they are, every other numeric type through `f64` (the value `as_f64` gives, so the
/// rows are the same either way).
enum FeatureView {
    F32(Float32Array),
    F64(arrow::array::Float64Array),
}

impl FeatureView {
    fn of(col: &ArrayRef, path: &Path, name: &str, row0: usize) -> Result<Self> {
        if col.data_type() != &DataType::Float32 {
            let vals = as_f64(col, path, name, row0)?;
            return Ok(Self::F64(vals.into()));
        }
        if col.null_count() > 0 {
            return as_f64(col, path, name, row0).map(|v| Self::F64(v.into()));
        }
        let a = col.as_primitive::<arrow::datatypes::Float32Type>().clone();
        if let Some(i) = a.values().iter().position(|v| !v.is_finite()) {
            return Err(Error::Value {
                path: path.to_path_buf(),
                column: name.to_string(),
                row: row0 + i,
                msg: "non-finite value (NaN or infinity)".into(),
            });
        }
        Ok(Self::F32(a))
    }
}

/// One numeric column of a Parquet file (all row groups) as f64; nulls and non-finite
/// values are errors naming their row.
pub(crate) fn read_column(path: &Path, name: &str) -> Result<Vec<f64>> {
    let (dt, arrays) = read_column_arrays(path, name)?;
    if !is_numeric(&dt) {
        return Err(Error::Schema {
            path: path.to_path_buf(),
            column: name.to_string(),
            msg: format!("type {dt}, expected a numeric type"),
        });
    }
    let mut out = Vec::new();
    for a in &arrays {
        let row0 = out.len();
        out.extend(as_f64(a, path, name, row0)?);
    }
    Ok(out)
}

/// One column of a Parquet file (only that column is decoded): its type and its arrays,
/// one per record batch. A missing column is an error listing the columns there are.
pub(crate) fn read_column_arrays(path: &Path, name: &str) -> Result<(DataType, Vec<ArrayRef>)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let pq = |source| parquet_error(path, source);
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(pq)?;
    let schema = builder.schema().clone();
    let idx = column_index(path, &schema, name)?;
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), [idx]);
    let reader = builder.with_projection(mask).build().map_err(pq)?;
    let arrays = reader
        .map(|batch| {
            batch
                .map(|b| b.column(0).clone())
                .map_err(|source| Error::Arrow {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((schema.field(idx).data_type().clone(), arrays))
}

/// The index of column `name` in `schema`, or an error listing the columns there are.
pub(crate) fn column_index(path: &Path, schema: &Schema, name: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| Error::Schema {
        path: path.to_path_buf(),
        column: name.to_string(),
        msg: format!(
            "column not found; the columns are: {}",
            schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// The index of numeric column `name` in `schema` (a missing or non-numeric column is an
/// error naming the columns there are, or the type).
pub(crate) fn numeric_column_index(path: &Path, schema: &Schema, name: &str) -> Result<usize> {
    let idx = column_index(path, schema, name)?;
    let dt = schema.field(idx).data_type();
    if !is_numeric(dt) {
        return Err(Error::Schema {
            path: path.to_path_buf(),
            column: name.to_string(),
            msg: format!("type {dt}, expected a numeric type"),
        });
    }
    Ok(idx)
}

/// A numeric column as f64, rejecting nulls and non-finite values with their row.
pub(crate) fn as_f64(col: &ArrayRef, path: &Path, name: &str, row0: usize) -> Result<Vec<f64>> {
    if col.null_count() > 0 {
        let i = (0..col.len()).find(|&i| col.is_null(i)).unwrap_or(0);
        return Err(Error::Value {
            path: path.to_path_buf(),
            column: name.to_string(),
            row: row0 + i,
            msg: "null value (fill or drop missing values before training)".into(),
        });
    }
    let cast = arrow::compute::cast(col, &DataType::Float64).map_err(|source| Error::Arrow {
        path: path.to_path_buf(),
        source: Box::new(source),
    })?;
    let vals = cast.as_primitive::<Float64Type>().values().to_vec();
    if let Some(i) = vals.iter().position(|v| !v.is_finite()) {
        return Err(Error::Value {
            path: path.to_path_buf(),
            column: name.to_string(),
            row: row0 + i,
            msg: "non-finite value (NaN or infinity)".into(),
        });
    }
    Ok(vals)
}

/// Arrow schema for a data set written by kinsey: Float32 features, Float32 label.
fn schema_for(ds: &Dataset, label: &str) -> Arc<Schema> {
    let mut fields: Vec<Field> = ds
        .features
        .iter()
        .map(|n| Field::new(n, DataType::Float32, false))
        .collect();
    fields.push(Field::new(label, DataType::Float32, false));
    Arc::new(Schema::new(fields))
}

/// Write a data set to a Parquet file (ZSTD), staged in `outputs` (committed by the caller).
pub fn write_parquet(
    outputs: &mut Outputs,
    target: &Path,
    ds: &Dataset,
    label: &str,
) -> Result<()> {
    let mut w = ParquetRows::create(outputs, target, ds, label)?;
    w.write(ds)?;
    w.finish()
}

/// A Parquet file written a block of rows at a time (ZSTD, staged in the `Outputs` it was
/// created from): memory is one block, whatever the file's length.
pub struct ParquetRows {
    writer: ArrowWriter<File>,
    schema: Arc<Schema>,
    target: PathBuf,
}

impl std::fmt::Debug for ParquetRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ParquetRows({})", self.target.display())
    }
}

impl ParquetRows {
    /// A new file at `target` (staged) with the columns of `like` and the label `label`.
    pub fn create(
        outputs: &mut Outputs,
        target: &Path,
        like: &Dataset,
        label: &str,
    ) -> Result<Self> {
        let tmp = outputs.stage(target)?;
        let file = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let schema = schema_for(like, label);
        let level = ZstdLevel::try_new(3).map_err(|e| Self::error(target, e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(level))
            // Random floats do not repeat: a dictionary per column only held hundreds of
            // megabytes (124 columns) before falling back to plain pages.
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(BATCH_ROWS * 2))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .map_err(|e| Self::error(target, e))?;
        Ok(Self {
            writer,
            schema,
            target: target.to_path_buf(),
        })
    }

    fn error(target: &Path, source: parquet::errors::ParquetError) -> Error {
        Error::Parquet {
            path: target.to_path_buf(),
            source: Box::new(source),
        }
    }

    /// The rows of `ds` (its columns those the file was created with), appended.
    pub fn write(&mut self, ds: &Dataset) -> Result<()> {
        let d = ds.d;
        if d + 1 != self.schema.fields().len() {
            return Err(Error::param(
                "rows",
                format!(
                    "{}: a block of {d} features for a file of {}",
                    self.target.display(),
                    self.schema.fields().len() - 1
                ),
            ));
        }
        for start in (0..ds.n()).step_by(BATCH_ROWS) {
            let end = (start + BATCH_ROWS).min(ds.n());
            let mut cols: Vec<ArrayRef> = (0..d)
                .map(|j| {
                    Arc::new(Float32Array::from_iter_values(
                        (start..end).map(|i| ds.x[i * d + j]),
                    )) as ArrayRef
                })
                .collect();
            cols.push(Arc::new(Float32Array::from(ds.y[start..end].to_vec())));
            let batch =
                RecordBatch::try_new(self.schema.clone(), cols).map_err(|source| Error::Arrow {
                    path: self.target.clone(),
                    source: Box::new(source),
                })?;
            self.writer
                .write(&batch)
                .map_err(|e| Self::error(&self.target, e))?;
        }
        Ok(())
    }

    /// Closes the file (still staged: the `Outputs` commit moves it into place).
    pub fn finish(self) -> Result<()> {
        let target = self.target;
        self.writer.close().map_err(|e| Self::error(&target, e))?;
        Ok(())
    }
}

/// An Arrow error while reading or writing `path`, for `map_err`.
pub(crate) fn arrow_error(path: &Path) -> impl Fn(arrow::error::ArrowError) -> Error + '_ {
    move |source| Error::Arrow {
        path: path.to_path_buf(),
        source: Box::new(source),
    }
}

/// Only the label and the features are decoded: the columns to project (file order), and
/// where the label and each feature are in a projected batch.
pub(crate) fn projected(
    label: Option<usize>,
    features: &[usize],
) -> (Vec<usize>, Option<usize>, Vec<usize>) {
    let mut keep: Vec<usize> = features.iter().copied().chain(label).collect();
    keep.sort_unstable();
    keep.dedup();
    let at = |i: usize| keep.binary_search(&i).unwrap_or(0);
    let (label_at, features_at) = (label.map(at), features.iter().map(|&i| at(i)).collect());
    (keep, label_at, features_at)
}

// A file read whole with its row groups decoded side by side: each group has its own
// reader (its own file handle, the footer parsed once) on the rayon pool, decodes only the
// label and feature columns, and writes its rows straight into their place in the data set
// (no second copy). The values, checks and errors are the sequential reader's; where
// several groups hold a bad cell, the first group's error is returned, as a reader in row
// order would.

/// Rows per batch a group's reader decodes: small, so that one batch per thread in flight
/// is a few MiB of Arrow columns, not a copy of the data.
const GROUP_BATCH_ROWS: usize = 8192;

/// Read `path` (one Parquet file) as [`read_parquet`](crate::parquet_io::read_parquet)
/// does, its row groups in parallel; `None` when it has a single row group (nothing to
/// gain).
pub(crate) fn read_groups(path: &Path, spec: &ColumnSpec) -> Result<Option<Dataset>> {
    let pq = |source| parquet_error(path, source);
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(pq)?;
    let groups = meta.metadata().row_groups();
    if groups.len() < 2 {
        return Ok(None);
    }
    let schema = meta.schema().clone();
    let (label, features, names) = resolve_columns(path, &schema, spec)?;
    let (keep, label_at, features_at) = projected(label, &features);
    let mask = ProjectionMask::roots(meta.parquet_schema(), keep);
    let d = features.len();
    let sizes: Vec<usize> = groups
        .iter()
        .map(|g| g.num_rows().max(0) as usize)
        .collect();
    let n: usize = sizes.iter().sum();
    kinsey_core::limits::check_dense(&path.display().to_string(), n, d)?;
    let (mut x, mut y) = (vec![0f32; n * d], vec![0f32; n]);
    // Each group's rows, its first row in the file, and its slices of x and y.
    let mut parts = Vec::with_capacity(sizes.len());
    let (mut xr, mut yr, mut row0) = (x.as_mut_slice(), y.as_mut_slice(), 0usize);
    for (g, &m) in sizes.iter().enumerate() {
        let (xg, xt) = xr.split_at_mut(m * d);
        let (yg, yt) = yr.split_at_mut(m);
        parts.push((g, row0, xg, yg));
        (xr, yr, row0) = (xt, yt, row0 + m);
    }
    let cols = Columns {
        path,
        spec,
        label: label_at,
        features: &features_at,
        names: &names,
    };
    let results: Vec<Result<()>> = parts
        .into_par_iter()
        .map(|(g, row0, xg, yg)| {
            let handle = File::open(path).map_err(|e| Error::io(path, e))?;
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(handle, meta.clone())
                .with_row_groups(vec![g])
                .with_projection(mask.clone())
                .with_batch_size(GROUP_BATCH_ROWS)
                .build()
                .map_err(pq)?;
            let mut r = 0usize;
            for batch in reader {
                let batch = batch.map_err(arrow_error(path))?;
                let m = batch.num_rows();
                if r + m > yg.len() {
                    break;
                }
                let xs = &mut xg[r * d..(r + m) * d];
                decode_rows(&batch, &cols, row0 + r, xs, &mut yg[r..r + m])?;
                r += m;
            }
            if r != yg.len() {
                return Err(Error::format(
                    path,
                    format!(
                        "row group {g} gave {r} rows where its footer promises {} (the file \
                         changed while it was read, or is damaged)",
                        yg.len()
                    ),
                ));
            }
            Ok(())
        })
        .collect();
    results.into_iter().collect::<Result<()>>()?;
    Ok(Some(Dataset {
        x,
        y,
        d,
        features: names,
        source: path.to_path_buf(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BooleanArray, Int32Array, StringArray};

    fn write_batch(path: &Path, cols: Vec<(&str, ArrayRef)>) {
        let batch = RecordBatch::try_from_iter(cols).expect("batch");
        let f = File::create(path).expect("create");
        let mut w = ArrowWriter::try_new(f, batch.schema(), None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
    }

    fn f32col(v: &[f32]) -> ArrayRef {
        Arc::new(Float32Array::from(v.to_vec()))
    }

    #[test]
    fn reads_mixed_numeric_types_and_skips_strings() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("a.parquet");
        write_batch(
            &p,
            vec![
                ("age", Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef),
                (
                    "flag",
                    Arc::new(BooleanArray::from(vec![true, false, true])) as ArrayRef,
                ),
                (
                    "name",
                    Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
                ),
                ("label", f32col(&[1.0, -1.0, 1.0])),
            ],
        );
        let ds = read_parquet(&p, &ColumnSpec::default()).expect("read");
        assert_eq!(ds.features, vec!["age", "flag"]);
        assert_eq!(ds.x, vec![1.0, 1.0, 2.0, 0.0, 3.0, 1.0]);
        assert_eq!(ds.y, vec![1.0, -1.0, 1.0]);
        let spec = ColumnSpec {
            features: vec!["name".into()],
            ..Default::default()
        };
        let e = read_parquet(&p, &spec)
            .expect_err("string feature")
            .to_string();
        assert!(e.contains("'name'") && e.contains("non-numeric"), "{e}");
    }

    /// Without a feature list, a column named like an identifier is refused (the schema
    /// decides, not the values); the others are features, and a list is taken as given.
    #[test]
    fn identifier_columns_are_not_features_unless_listed() {
        for (name, refused) in [
            ("patient_id", true),
            ("PatientID", true),
            ("id", true),
            ("uuid", true),
            ("valid", false),
            ("GRID", false),
            ("age", false),
        ] {
            assert_eq!(looks_like_identifier(name), refused, "{name}");
        }
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("ids.parquet");
        write_batch(
            &p,
            vec![
                (
                    "patient_id",
                    Arc::new(Int32Array::from(vec![7, 8, 9])) as ArrayRef,
                ),
                ("x", f32col(&[0.1, 0.2, 0.3])),
                ("label", f32col(&[1.0, -1.0, 1.0])),
            ],
        );
        let e = read_parquet(&p, &ColumnSpec::default())
            .expect_err("an identifier")
            .to_string();
        assert!(
            e.contains("'patient_id'") && e.contains("[data] features"),
            "{e}"
        );
        let listed = ColumnSpec {
            features: vec!["x".into()],
            ..Default::default()
        };
        assert_eq!(read_parquet(&p, &listed).expect("listed").features, ["x"]);
    }

    #[test]
    fn bad_inputs_name_file_column_and_row() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("b.parquet");
        write_batch(
            &p,
            vec![
                ("f1", f32col(&[0.1, f32::NAN])),
                ("label", f32col(&[1.0, 1.0])),
            ],
        );
        let e = read_parquet(&p, &ColumnSpec::default())
            .expect_err("nan")
            .to_string();
        assert!(
            e.contains("b.parquet") && e.contains("'f1'") && e.contains("row 1"),
            "{e}"
        );

        write_batch(
            &p,
            vec![("f1", f32col(&[0.1, 0.2])), ("y", f32col(&[1.0, 1.0]))],
        );
        let e = read_parquet(&p, &ColumnSpec::default())
            .expect_err("no label")
            .to_string();
        assert!(e.contains("'label'") && e.contains("not found"), "{e}");

        write_batch(
            &p,
            vec![("f1", f32col(&[0.1, 0.2])), ("label", f32col(&[1.0, 0.0]))],
        );
        let e = read_parquet(&p, &ColumnSpec::default())
            .expect_err("0 label")
            .to_string();
        assert!(e.contains("row 1") && e.contains("zero_one"), "{e}");
        let spec = ColumnSpec {
            labels: LabelEncoding::ZeroOne,
            ..Default::default()
        };
        assert_eq!(
            read_parquet(&p, &spec).expect("declared").y,
            vec![1.0, -1.0]
        );

        let nulls: ArrayRef = Arc::new(Float32Array::from(vec![Some(0.1), None]));
        write_batch(&p, vec![("f1", nulls), ("label", f32col(&[1.0, 1.0]))]);
        let e = read_parquet(&p, &ColumnSpec::default())
            .expect_err("null")
            .to_string();
        assert!(e.contains("null") && e.contains("row 1"), "{e}");

        write_batch(&p, vec![("f1", f32col(&[])), ("label", f32col(&[]))]);
        let e = read_parquet(&p, &ColumnSpec::default())
            .expect_err("empty")
            .to_string();
        assert!(e.contains("zero rows"), "{e}");

        std::fs::write(&p, b"PAR1 this is not parquet").expect("write");
        assert!(read_parquet(&p, &ColumnSpec::default()).is_err());
        let missing = dir.path().join("missing.parquet");
        let e = read_parquet(&missing, &ColumnSpec::default())
            .expect_err("missing")
            .to_string();
        assert!(e.contains("missing.parquet"), "{e}");
    }

    #[test]
    fn truncated_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("t.parquet");
        let ds = super::super::synth::generate_one(2000, 5, 3.0, 1, "mem".into());
        let mut o = Outputs::new();
        write_parquet(&mut o, &p, &ds, "label").expect("write");
        o.commit().expect("commit");
        let bytes = std::fs::read(&p).expect("read");
        std::fs::write(&p, &bytes[..bytes.len() / 2]).expect("truncate");
        let e = read_parquet(&p, &ColumnSpec::default())
            .expect_err("truncated")
            .to_string();
        assert!(e.contains("t.parquet"), "{e}");
    }

    #[test]
    fn round_trip_and_directory_read() {
        let dir = tempfile::tempdir().expect("tmp");
        let ds = super::super::synth::generate_one(150_000, 4, 3.0, 2, "mem".into());
        let mut o = Outputs::new();
        write_parquet(&mut o, &dir.path().join("p1.parquet"), &ds, "label").expect("write");
        write_parquet(&mut o, &dir.path().join("p2.parquet"), &ds, "label").expect("write");
        o.commit().expect("commit");
        let back =
            read_parquet(&dir.path().join("p1.parquet"), &ColumnSpec::default()).expect("read");
        assert_eq!(back.x, ds.x);
        assert_eq!(back.y, ds.y);
        let both = read_parquet(dir.path(), &ColumnSpec::default()).expect("dir");
        assert_eq!(both.n(), 2 * ds.n());
    }

    mod groups {
        use super::super::*;
        use arrow::array::Float64Array;
        use parquet::file::properties::WriterProperties;

        /// A file of `groups` row groups of `m` rows: f1 (f32), an unused text-free column
        /// `skip`, f2 (f64) and the label; `bad` rows of f2 are NaN.
        fn write(path: &Path, groups: usize, m: usize, bad: &[usize]) {
            let n = groups * m;
            let f1: Vec<f32> = (0..n).map(|i| (i % 7) as f32 / 10.0).collect();
            let f2: Vec<f64> = (0..n)
                .map(|i| {
                    if bad.contains(&i) {
                        f64::NAN
                    } else {
                        (i % 5) as f64 / 10.0
                    }
                })
                .collect();
            let y: Vec<f32> = (0..n)
                .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
                .collect();
            let cols: Vec<(&str, ArrayRef)> = vec![
                ("f1", Arc::new(Float32Array::from(f1))),
                ("skip", Arc::new(Float64Array::from(vec![9.0; n]))),
                ("f2", Arc::new(Float64Array::from(f2))),
                ("label", Arc::new(Float32Array::from(y))),
            ];
            let batch = RecordBatch::try_from_iter(cols).expect("batch");
            let props = WriterProperties::builder()
                .set_max_row_group_row_count(Some(m))
                .build();
            let file = File::create(path).expect("file");
            let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("writer");
            w.write(&batch).expect("write");
            w.close().expect("close");
        }

        /// Groups read side by side give the rows a reader in row order gives (only the
        /// columns asked for), and of several bad cells the first group's is named.
        #[test]
        fn groups_in_parallel_are_the_rows_in_order() {
            let tmp = tempfile::tempdir().expect("tmp");
            let p = tmp.path().join("g.parquet");
            write(&p, 5, 10_000, &[]);
            let spec = ColumnSpec {
                features: vec!["f2".into(), "f1".into()],
                ..ColumnSpec::default()
            };
            let par = read_groups(&p, &spec).expect("read").expect("groups");
            let file = File::open(&p).expect("open");
            let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("builder");
            let schema = builder.schema().clone();
            let reader = builder.build().expect("reader");
            let seq = crate::parquet_io::dataset_of_batches(&p, &schema, reader, &spec, 50_000)
                .expect("sequential");
            assert_eq!(
                (&par.x, &par.y, &par.features),
                (&seq.x, &seq.y, &seq.features)
            );
            assert_eq!(par.n(), 50_000);
            let bad = tmp.path().join("bad.parquet");
            write(&bad, 5, 10_000, &[47_000, 23_456, 31_000]);
            let e = read_groups(&bad, &spec).expect_err("NaN").to_string();
            assert!(e.contains("row 23456") && e.contains("f2"), "{e}");
            let one = tmp.path().join("one.parquet");
            write(&one, 1, 100, &[]);
            assert!(read_groups(&one, &spec).expect("read").is_none());
        }
    }
}

//! A table's record batches decoded into rows one batch at a time, under the column rules
//! and value checks of a Parquet read ([`crate::parquet_io::read_parquet`]).

use crate::parquet_io::{ColumnSpec, Columns, decode_batch, resolve_columns};
use arrow::array::RecordBatch;
use arrow::datatypes::Schema;
use kinsey_core::Result;
use std::path::{Path, PathBuf};

/// Record batches of one schema decoded into rows one batch at a time (a table whose
/// batches arrive elsewhere: a cluster's partition), with the column rules and value checks
/// of [`crate::parquet_io::read_parquet`]; `path` names the source in errors.
#[derive(Debug, Clone)]
pub struct BatchDecoder {
    path: PathBuf,
    spec: ColumnSpec,
    label: Option<usize>,
    features: Vec<usize>,
    names: Vec<String>,
}

impl BatchDecoder {
    /// The decoder of batches of `schema` under `spec` (refused as [`crate::parquet_io::read_parquet`]
    /// refuses: a missing or non-numeric column, an identifier-like feature).
    pub fn new(path: &Path, schema: &Schema, spec: &ColumnSpec) -> Result<Self> {
        let (label, features, names) = resolve_columns(path, schema, spec)?;
        Ok(Self {
            path: path.to_path_buf(),
            spec: spec.clone(),
            label,
            features,
            names,
        })
    }

    /// The features' names, in the rows' column order.
    pub fn features(&self) -> &[String] {
        &self.names
    }

    /// Append `batch`'s rows to `x` (row-major `f32`) and their labels to `y`; `row0` is
    /// the batch's first row in the whole table (for errors).
    pub fn decode(
        &self,
        batch: &RecordBatch,
        row0: usize,
        x: &mut Vec<f32>,
        y: &mut Vec<f32>,
    ) -> Result<()> {
        let cols = Columns {
            path: &self.path,
            spec: &self.spec,
            label: self.label,
            features: &self.features,
            names: &self.names,
        };
        decode_batch(batch, &cols, row0, x, y)
    }
}

//! Tables handed over in memory (a library caller's Arrow data, e.g. Python's pyarrow or
//! Polars tables through the Arrow C stream interface), read with the same checks and the
//! same error messages as a file; and [`ColumnSource`], what the column-reading releases
//! (histograms) take: a file path or such a table.
//!
//! A table's record batches are the caller's buffers: reading a column casts or copies
//! only what the release computes on, never the whole table.

use crate::Dataset;
use crate::blocks::{Cells, Want, cells_of_batch};
use crate::columns::{categories_of, count_rows, read_categorical, read_numeric};
use crate::parquet_io::{ColumnSpec, as_f64, dataset_of_batches};
use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::datatypes::SchemaRef;
use kinsey_core::{Error, Result};
use kinsey_dp::DataDigest;
use std::path::{Path, PathBuf};

/// A table in memory: its schema and record batches, and the name errors and reports use
/// for it (`<table>`, `<party 2>`).
#[derive(Debug, Clone)]
pub struct ArrowTable {
    name: PathBuf,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

/// A column the ledger cannot digest.
fn undigestible(table: &Path, column: &str, why: &str) -> Error {
    Error::Schema {
        path: table.to_path_buf(),
        column: column.to_string(),
        msg: format!("cannot be digested for the ledger ({why})"),
    }
}

impl ArrowTable {
    /// A table named `name` (in errors and reports) of `batches`, each of `schema`.
    pub fn new(
        name: impl Into<PathBuf>,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    ) -> Result<Self> {
        let name = name.into();
        let mut row = 0usize;
        for b in &batches {
            if b.schema().fields() != schema.fields() {
                return Err(Error::format(
                    &name,
                    format!("the record batch at row {row} has another schema than the table's"),
                ));
            }
            row += b.num_rows();
        }
        Ok(Self {
            name,
            schema,
            batches,
        })
    }

    /// Rows in all batches.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The identity of the table's data for the budget ledger: every column's name and
    /// every cell, whatever its type (each cell as Arrow displays it, nulls marked), batch
    /// boundaries aside.
    pub fn identity(&self) -> Result<DataDigest> {
        let mut parts = Vec::with_capacity(self.schema.fields().len());
        for (i, field) in self.schema.fields().iter().enumerate() {
            let mut cells = Vec::new();
            for b in &self.batches {
                let col = arrow::compute::cast(b.column(i), &arrow::datatypes::DataType::Utf8)
                    .map_err(|e| undigestible(&self.name, field.name(), &e.to_string()))?;
                let col = col
                    .as_any()
                    .downcast_ref::<arrow::array::StringArray>()
                    .ok_or_else(|| undigestible(&self.name, field.name(), "not text"))?;
                cells.extend((0..col.len()).map(|r| {
                    if col.is_null(r) {
                        "\u{0}null".to_string()
                    } else {
                        col.value(r).to_string()
                    }
                }));
            }
            parts.push((field.name().clone(), crate::digest::of_labels(&cells)));
        }
        Ok(crate::digest::of_named(&parts))
    }

    /// The record batches (the caller's buffers).
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// The dense data set of `spec`'s label and features, as `read_parquet` reads a file
    /// (an empty `spec.label`: rows to score, `y` all zeros).
    pub fn dataset(&self, spec: &ColumnSpec) -> Result<Dataset> {
        let batches = self
            .batches
            .iter()
            .map(|b| Ok::<_, std::convert::Infallible>(b.clone()));
        let ds = dataset_of_batches(&self.name, &self.schema, batches, spec, self.num_rows())?;
        ds.check_nonempty()?;
        Ok(ds)
    }

    /// Column `name`'s arrays, one per batch, or an error listing the columns there are.
    fn arrays(&self, name: &str) -> Result<(arrow::datatypes::DataType, Vec<ArrayRef>)> {
        let idx = crate::parquet_io::column_index(&self.name, &self.schema, name)?;
        Ok((
            self.schema.field(idx).data_type().clone(),
            self.batches.iter().map(|b| b.column(idx).clone()).collect(),
        ))
    }
}

/// Where a release reads its columns from: a CSV or Parquet file (`&Path`), or an
/// [`ArrowTable`] in memory. Both refuse nulls and non-finite values naming the row, and a
/// missing column listing the columns there are.
pub trait ColumnSource {
    /// The name errors and reports use (a file's path, a table's name).
    fn name(&self) -> &Path;
    /// One numeric column as f64.
    fn numeric(&self, column: &str) -> Result<Vec<f64>>;
    /// One column as category labels (text, integers and booleans in decimal).
    fn categorical(&self, column: &str) -> Result<Vec<String>>;
    /// The rows of `column` (which must exist and hold no non-finite value).
    fn rows(&self, column: &str) -> Result<usize>;
    /// The names of the numeric (and boolean) columns, in order; a CSV's header names all.
    fn numeric_columns(&self) -> Result<Vec<String>>;
    /// What a seeded release binds its noise to: every byte of a file; the values of the
    /// `columns` a release reads, for a table (a file's bytes are not at hand).
    fn digest(&self, columns: &[&str]) -> Result<DataDigest>;
    /// Every block of rows of `columns`, in order, to `f` (one block in memory at a time:
    /// what a release that counts or sums reads), with the cells and errors of
    /// [`numeric`](Self::numeric), [`categorical`](Self::categorical) and
    /// [`rows`](Self::rows).
    fn for_each_block(
        &self,
        columns: &[(&str, Want)],
        f: &mut dyn FnMut(&[Cells]) -> Result<()>,
    ) -> Result<()>;
}

impl ColumnSource for Path {
    fn name(&self) -> &Path {
        self
    }
    fn numeric(&self, column: &str) -> Result<Vec<f64>> {
        read_numeric(self, column)
    }
    fn categorical(&self, column: &str) -> Result<Vec<String>> {
        read_categorical(self, column)
    }
    fn rows(&self, column: &str) -> Result<usize> {
        count_rows(self, column)
    }
    fn numeric_columns(&self) -> Result<Vec<String>> {
        crate::columns::column_names(self)
    }
    fn digest(&self, _columns: &[&str]) -> Result<DataDigest> {
        crate::digest::of_inputs(&[self])
    }
    fn for_each_block(
        &self,
        columns: &[(&str, Want)],
        f: &mut dyn FnMut(&[Cells]) -> Result<()>,
    ) -> Result<()> {
        crate::blocks::for_each_block(self, columns, f)
    }
}

impl ColumnSource for PathBuf {
    fn name(&self) -> &Path {
        self
    }
    fn numeric(&self, column: &str) -> Result<Vec<f64>> {
        self.as_path().numeric(column)
    }
    fn categorical(&self, column: &str) -> Result<Vec<String>> {
        self.as_path().categorical(column)
    }
    fn rows(&self, column: &str) -> Result<usize> {
        self.as_path().rows(column)
    }
    fn numeric_columns(&self) -> Result<Vec<String>> {
        self.as_path().numeric_columns()
    }
    fn digest(&self, columns: &[&str]) -> Result<DataDigest> {
        self.as_path().digest(columns)
    }
    fn for_each_block(
        &self,
        columns: &[(&str, Want)],
        f: &mut dyn FnMut(&[Cells]) -> Result<()>,
    ) -> Result<()> {
        self.as_path().for_each_block(columns, f)
    }
}

impl ArrowTable {
    /// Each of `columns`' group digests ([`crate::digest::column_group`]) over this table's
    /// rows, which are groups `first_group`, `first_group + 1`, ... of
    /// [`crate::digest::GROUP_ROWS`] rows (a whole table: from 0; one group of a table held
    /// by a cluster's executor: its index). A numeric or boolean column is digested as
    /// its stored values, any other as text.
    pub fn group_digests(&self, columns: &[&str], first_group: u64) -> Result<Vec<Vec<[u8; 32]>>> {
        use crate::digest::{ColumnValues, GROUP_ROWS, column_group};
        columns
            .iter()
            .map(|c| {
                let (dt, arrays) = self.arrays(c)?;
                if crate::parquet_io::is_numeric(&dt) {
                    let mut v: Vec<Option<f64>> = Vec::new();
                    for a in &arrays {
                        let f = arrow::compute::cast(a, &arrow::datatypes::DataType::Float64)
                            .map_err(|e| Error::format(&self.name, e.to_string()))?;
                        let f = f
                            .as_any()
                            .downcast_ref::<arrow::array::Float64Array>()
                            .ok_or_else(|| Error::format(&self.name, "a cast to f64 failed"))?;
                        v.extend(f.iter());
                    }
                    Ok(v.chunks(GROUP_ROWS)
                        .enumerate()
                        .map(|(i, g)| {
                            column_group(first_group + i as u64, ColumnValues::Numbers(g))
                        })
                        .collect())
                } else {
                    let v = categories_of(&self.name, c, &dt, &arrays, 0)?;
                    Ok(v.chunks(GROUP_ROWS)
                        .enumerate()
                        .map(|(i, g)| column_group(first_group + i as u64, ColumnValues::Labels(g)))
                        .collect())
                }
            })
            .collect()
    }
}

impl ColumnSource for ArrowTable {
    fn name(&self) -> &Path {
        &self.name
    }
    fn numeric(&self, column: &str) -> Result<Vec<f64>> {
        let (dt, arrays) = self.arrays(column)?;
        if !crate::parquet_io::is_numeric(&dt) {
            return Err(Error::Schema {
                path: self.name.clone(),
                column: column.to_string(),
                msg: format!("type {dt}, expected a numeric type"),
            });
        }
        let mut out = Vec::with_capacity(self.num_rows());
        for a in &arrays {
            let row0 = out.len();
            out.extend(as_f64(a, &self.name, column, row0)?);
        }
        Ok(out)
    }
    fn categorical(&self, column: &str) -> Result<Vec<String>> {
        let (dt, arrays) = self.arrays(column)?;
        categories_of(&self.name, column, &dt, &arrays, 0)
    }
    fn numeric_columns(&self) -> Result<Vec<String>> {
        Ok(crate::columns::numeric_field_names(&self.schema))
    }
    fn rows(&self, column: &str) -> Result<usize> {
        match self.categorical(column) {
            Ok(cells) => Ok(cells.len()),
            // A float column: the numeric reader refuses non-finite values.
            Err(_) => Ok(self.numeric(column)?.len()),
        }
    }
    fn digest(&self, columns: &[&str]) -> Result<DataDigest> {
        let rows = self.batches.iter().map(RecordBatch::num_rows).sum();
        let groups = self.group_digests(columns, 0)?;
        let parts: Vec<(String, DataDigest)> = columns
            .iter()
            .zip(&groups)
            .map(|(c, g)| (c.to_string(), crate::digest::of_column_groups(rows, g)))
            .collect();
        Ok(crate::digest::of_named(&parts))
    }
    fn for_each_block(
        &self,
        columns: &[(&str, Want)],
        f: &mut dyn FnMut(&[Cells]) -> Result<()>,
    ) -> Result<()> {
        for (c, _) in columns {
            crate::parquet_io::column_index(&self.name, &self.schema, c)?;
        }
        let mut row0 = 0;
        for b in &self.batches {
            f(&cells_of_batch(&self.name, b, columns, row0)?)?;
            row0 += b.num_rows();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn table() -> ArrowTable {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Float64, true),
            Field::new("y", DataType::Float64, false),
            Field::new("city", DataType::Utf8, false),
        ]));
        let b = |x: Vec<Option<f64>>, y: Vec<f64>, c: Vec<&str>| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Float64Array::from(x)),
                    Arc::new(Float64Array::from(y)),
                    Arc::new(StringArray::from(c)),
                ],
            )
            .expect("batch")
        };
        ArrowTable::new(
            "<t>",
            schema.clone(),
            vec![
                b(vec![Some(1.0), Some(2.0)], vec![1.0, -1.0], vec!["a", "b"]),
                b(vec![Some(3.0), None], vec![1.0, 1.0], vec!["a", "c"]),
            ],
        )
        .expect("table")
    }

    /// Columns read across batches, with the rows of errors counted across batches too.
    #[test]
    fn columns_and_errors_follow_the_batches() {
        let t = table();
        assert_eq!(t.numeric("y").expect("y"), vec![1.0, -1.0, 1.0, 1.0]);
        assert_eq!(t.categorical("city").expect("city"), ["a", "b", "a", "c"]);
        let e = t.numeric("x").expect_err("null").to_string();
        assert!(
            e.contains("<t>") && e.contains("row 3") && e.contains("null"),
            "{e}"
        );
        let e = t.numeric("nope").expect_err("missing").to_string();
        assert!(e.contains("x, y, city"), "{e}");
        let e = t.numeric("city").expect_err("text").to_string();
        assert!(e.contains("expected a numeric type"), "{e}");
    }

    /// A table's data set equals the one of the same rows in a file; the digest follows
    /// the values of the columns read, not the rest of the table.
    #[test]
    fn a_table_reads_as_a_file_does() {
        let t = table();
        let spec = ColumnSpec {
            label: "y".into(),
            features: vec![],
            labels: crate::LabelEncoding::PlusMinusOne,
        };
        let e = t.dataset(&spec).expect_err("x has a null").to_string();
        assert!(e.contains("row 3"), "{e}");
        let ok =
            ArrowTable::new("<t>", t.schema().clone(), t.batches()[..1].to_vec()).expect("table");
        let ds = ok.dataset(&spec).expect("data set");
        assert_eq!(
            (ds.n(), ds.d, ds.features.clone()),
            (2, 1, vec!["x".to_string()])
        );
        assert_eq!(ds.x, vec![1.0, 2.0]);
        assert_eq!(ds.y, vec![1.0, -1.0]);
        // The digest binds the columns read: the same y under other x is the same data
        // for a release of y; other y values, or another column read, are not.
        let y_only = ok.digest(&["y"]).expect("digest");
        let mut other_x = t.batches()[..1].to_vec();
        other_x[0] = other_x[0]
            .clone()
            .with_schema(t.schema().clone())
            .expect("schema");
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(vec![9.0, 9.0])),
            other_x[0].column(1).clone(),
            other_x[0].column(2).clone(),
        ];
        let other = ArrowTable::new(
            "<u>",
            t.schema().clone(),
            vec![RecordBatch::try_new(t.schema().clone(), cols).expect("batch")],
        )
        .expect("table");
        assert_eq!(other.digest(&["y"]).expect("same y"), y_only);
        assert_ne!(
            other.digest(&["x"]).expect("x"),
            ok.digest(&["x"]).expect("x")
        );
        assert_ne!(t.digest(&["y"]).expect("more rows"), y_only);
    }
}

//! Single columns of a CSV (with a header) or Parquet file, by the file's extension:
//! numeric columns as f64 and categorical columns (text, integers, booleans) as strings.
//! Only the named column is decoded.

use crate::csv_file::CsvFile;
use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;
use kinsey_core::{Error, Result};
use std::path::Path;

/// Whether a path names a Parquet file (or a directory, read as Parquet).
pub(crate) fn is_parquet(path: &Path) -> bool {
    path.is_dir()
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// One numeric column; nulls and non-finite values are errors naming their row.
pub fn read_numeric(path: &Path, column: &str) -> Result<Vec<f64>> {
    if is_parquet(path) {
        crate::parquet_io::read_column(path, column)
    } else {
        read_csv_column(path, column)
    }
}

/// One column as category labels: text as is, integers and booleans in decimal. Floats
/// are refused (bin them with numeric bins instead); nulls are errors naming their row.
pub fn read_categorical(path: &Path, column: &str) -> Result<Vec<String>> {
    if !is_parquet(path) {
        return csv_cells(path, column, |c| Some(c.to_string()), "a category");
    }
    let (dt, arrays) = crate::parquet_io::read_column_arrays(path, column)?;
    categories_of(path, column, &dt, &arrays, 0)
}

/// The category labels of `arrays`, one column of type `dt` (`path` and `column` name it in
/// errors, its first row `row0`): text as is, integers and booleans in decimal; nulls and
/// floats refused.
pub(crate) fn categories_of(
    path: &Path,
    column: &str,
    dt: &DataType,
    arrays: &[arrow::array::ArrayRef],
    row0: usize,
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for a in arrays {
        if a.null_count() > 0 {
            let i = (0..a.len()).find(|&i| a.is_null(i)).unwrap_or(0);
            return Err(Error::Value {
                path: path.to_path_buf(),
                column: column.to_string(),
                row: row0 + out.len() + i,
                msg: "null value (fill missing values or drop the rows first)".into(),
            });
        }
        let a = match a.data_type() {
            DataType::Dictionary(_, v) => {
                arrow::compute::cast(a, v).map_err(|source| Error::Arrow {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                })?
            }
            _ => a.clone(),
        };
        match a.data_type() {
            DataType::Utf8 => out.extend(
                a.as_string::<i32>()
                    .iter()
                    .map(|v| v.unwrap_or("").to_string()),
            ),
            DataType::LargeUtf8 => out.extend(
                a.as_string::<i64>()
                    .iter()
                    .map(|v| v.unwrap_or("").to_string()),
            ),
            DataType::Utf8View => out.extend(
                a.as_string_view()
                    .iter()
                    .map(|v| v.unwrap_or("").to_string()),
            ),
            t if t.is_integer() || *t == DataType::Boolean => {
                let s =
                    arrow::compute::cast(&a, &DataType::Utf8).map_err(|source| Error::Arrow {
                        path: path.to_path_buf(),
                        source: Box::new(source),
                    })?;
                out.extend(
                    s.as_string::<i32>()
                        .iter()
                        .map(|v| v.unwrap_or("").to_string()),
                );
            }
            _ => {
                return Err(Error::Schema {
                    path: path.to_path_buf(),
                    column: column.to_string(),
                    msg: format!(
                        "type {dt} is not categorical (text, integer or boolean); use numeric bins"
                    ),
                });
            }
        }
    }
    Ok(out)
}

pub(crate) fn read_csv_column(path: &Path, column: &str) -> Result<Vec<f64>> {
    // "NaN", "inf" and overflowing literals parse as f64 but are no data: refused here, at
    // their own row, as Parquet's reader refuses them.
    let v = csv_cells(path, column, |c| c.parse::<f64>().ok(), "a number")?;
    match v.iter().position(|x| !x.is_finite()) {
        Some(row) => Err(non_finite(path, column, row)),
        None => Ok(v),
    }
}

/// The error for a NaN or infinite cell.
pub(crate) fn non_finite(path: &Path, column: &str, row: usize) -> Error {
    Error::Value {
        path: path.to_path_buf(),
        column: column.to_string(),
        row,
        msg: "not a finite number (NaN or infinity): fill or drop it first".into(),
    }
}

/// The number of rows of a column, numeric or categorical, for a count: a cell that reads as
/// NaN or infinity is refused at its row whatever the column's type (a count that silently
/// includes them would count rows the user believes were dropped).
pub fn count_rows(path: &Path, column: &str) -> Result<usize> {
    match read_categorical(path, column) {
        Ok(cells) => {
            let bad = cells
                .iter()
                .position(|c| c.parse::<f64>().is_ok_and(|x| !x.is_finite()));
            match bad {
                Some(row) => Err(non_finite(path, column, row)),
                None => Ok(cells.len()),
            }
        }
        // Not categorical (a Parquet float column, or no such column): the numeric reader
        // refuses non-finite values and names a missing column.
        Err(_) => Ok(read_numeric(path, column)?.len()),
    }
}

/// The cells of one column of a CSV file with a header (read as CSV: quoting, a byte-order
/// mark, CRLF), parsed; `row` in errors counts the data rows from 0.
pub(crate) fn csv_cells<T>(
    path: &Path,
    column: &str,
    parse: impl Fn(&str) -> Option<T>,
    expected: &str,
) -> Result<Vec<T>> {
    let mut f = CsvFile::open(path)?;
    let idx = f.column_index(column)?;
    let mut rec = csv::StringRecord::new();
    let mut out = Vec::new();
    while f.read(&mut rec, column)? {
        let v = parse(rec[idx].trim()).ok_or_else(|| Error::Value {
            path: path.to_path_buf(),
            column: column.to_string(),
            row: out.len(),
            msg: format!("the cell is not {expected}"),
        })?;
        out.push(v);
    }
    Ok(out)
}

/// The names of a file's columns (Parquet schema or CSV header).
pub(crate) fn column_names(path: &Path) -> Result<Vec<String>> {
    if is_parquet(path) {
        let file = crate::parquet_io::parquet_files(path)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::format(path, "no Parquet file"))?;
        let f = std::fs::File::open(&file).map_err(|e| Error::io(&file, e))?;
        let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).map_err(
            |source| Error::Parquet {
                path: file.clone(),
                source: Box::new(source),
            },
        )?;
        Ok(numeric_field_names(b.schema()))
    } else {
        Ok(CsvFile::open(path)?.header().to_vec())
    }
}

/// The names of a schema's numeric (and boolean) fields, in order.
pub(crate) fn numeric_field_names(schema: &arrow::datatypes::Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .filter(|f| f.data_type().is_numeric() || *f.data_type() == DataType::Boolean)
        .map(|f| f.name().clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_non_finite_cells_are_refused_at_their_row() {
        let dir = tempfile::tempdir().expect("tmp");
        for (cell, row) in [("NaN", 1), ("inf", 1), ("-inf", 1), ("1e999", 1), ("", 1)] {
            let p = dir.path().join("a.csv");
            std::fs::write(&p, format!("x,y\n1,2\n{cell},3\n4,5\n")).expect("write");
            match read_numeric(&p, "x") {
                Err(Error::Value {
                    column,
                    row: r,
                    msg,
                    ..
                }) => {
                    assert_eq!((column.as_str(), r), ("x", row), "{cell}");
                    assert!(
                        msg.contains("finite number") || msg.contains("a number"),
                        "{msg}"
                    );
                }
                other => panic!("{cell}: {other:?}"),
            }
        }
        // A finite file reads; the check is not a blanket refusal.
        let p = dir.path().join("b.csv");
        std::fs::write(&p, "x\n1\n-2.5\n1e300\n").expect("write");
        assert_eq!(read_numeric(&p, "x").expect("read"), [1.0, -2.5, 1e300]);
        assert_eq!(count_rows(&p, "x").expect("count"), 3);
        // A count refuses NaN too, in a numeric or a text column; text is counted.
        let p = dir.path().join("c.csv");
        std::fs::write(&p, "x,t\n1,a\nnan,b\n").expect("write");
        let e = count_rows(&p, "x").expect_err("NaN");
        assert!(e.to_string().contains("finite"), "{e}");
        assert_eq!(count_rows(&p, "t").expect("text"), 2);
        assert!(count_rows(&p, "missing").is_err());
    }
}

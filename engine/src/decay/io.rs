//! Time-series input and output for `kinsey decay`: one value per step from a CSV or Parquet
//! column, clamped to the declared per-step bound (clamping counted); estimates written as
//! (step, estimate) CSV or Parquet.

use crate::error::{Error, Result};
use std::path::Path;

/// A loaded series.
#[derive(Debug, Clone)]
pub struct Series {
    pub values: Vec<f64>,
    /// Steps whose value exceeded the bound and was clamped to it.
    pub clamped: usize,
}

fn is_parquet(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// One value per step from column `column` of a CSV (with a header) or Parquet file.
/// Values must be finite and >= 0; values above `bound` are clamped to it.
pub fn load(path: &Path, column: &str, bound: f64) -> Result<Series> {
    let is_bits = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("txt"));
    let raw = if is_parquet(path) {
        crate::data::parquet_io::read_column(path, column)?
    } else if is_bits {
        read_bits(path)?
    } else {
        read_csv_column(path, column)?
    };
    if raw.is_empty() {
        return Err(Error::format(path, "the series is empty"));
    }
    let mut clamped = 0;
    let mut values = Vec::with_capacity(raw.len());
    for (row, &v) in raw.iter().enumerate() {
        if !v.is_finite() || v < 0.0 {
            return Err(Error::Value {
                path: path.to_path_buf(),
                column: column.to_string(),
                row,
                msg: format!("value {v} is not a finite non-negative number"),
            });
        }
        if v > bound {
            clamped += 1;
        }
        values.push(v.min(bound));
    }
    Ok(Series { values, clamped })
}

/// A text file of '0' and '1' characters, one bit per step (line breaks ignored).
fn read_bits(path: &Path) -> Result<Vec<f64>> {
    let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    text.iter()
        .filter(|b| !b.is_ascii_whitespace())
        .enumerate()
        .map(|(i, &b)| match b {
            b'0' => Ok(0.0),
            b'1' => Ok(1.0),
            other => Err(Error::Value {
                path: path.to_path_buf(),
                column: "bits".into(),
                row: i,
                msg: format!("'{}' is not a bit", other as char),
            }),
        })
        .collect()
}

fn read_csv_column(path: &Path, column: &str) -> Result<Vec<f64>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut lines = text.lines();
    let header = lines
        .next()
        .ok_or_else(|| Error::format(path, "empty file: expected a header line"))?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let idx = names
        .iter()
        .position(|n| *n == column)
        .ok_or_else(|| Error::Schema {
            path: path.to_path_buf(),
            column: column.to_string(),
            msg: format!("column not found; the columns are: {}", names.join(", ")),
        })?;
    lines
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(row, line)| {
            let cell = line
                .split(',')
                .nth(idx)
                .map(str::trim)
                .ok_or_else(|| Error::Value {
                    path: path.to_path_buf(),
                    column: column.to_string(),
                    row,
                    msg: "missing field".into(),
                })?;
            cell.parse::<f64>().map_err(|_| Error::Value {
                path: path.to_path_buf(),
                column: column.to_string(),
                row,
                msg: format!("'{cell}' is not a number"),
            })
        })
        .collect()
}

/// The (step, estimate) table as CSV or Parquet bytes, by the output's extension.
pub fn encode(path: &Path, estimates: &[f64]) -> Result<Vec<u8>> {
    encode_columns(path, &["estimate".to_string()], &[estimates.to_vec()])
}

/// A (step, column...) table as CSV or Parquet bytes.
pub fn encode_columns(path: &Path, names: &[String], cols: &[Vec<f64>]) -> Result<Vec<u8>> {
    let n = cols.first().map_or(0, Vec::len);
    if is_parquet(path) {
        use arrow::array::{ArrayRef, Float64Array, UInt64Array};
        use arrow::datatypes::{DataType, Field, Schema};
        use arrow::record_batch::RecordBatch;
        use std::sync::Arc;
        let mut fields = vec![Field::new("step", DataType::UInt64, false)];
        fields.extend(
            names
                .iter()
                .map(|c| Field::new(c, DataType::Float64, false)),
        );
        let schema = Arc::new(Schema::new(fields));
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from_iter_values(0..n as u64))];
        arrays.extend(
            cols.iter()
                .map(|c| Arc::new(Float64Array::from(c.clone())) as ArrayRef),
        );
        let arrow_err = |source| Error::Arrow {
            path: path.to_path_buf(),
            source,
        };
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(arrow_err)?;
        let mut buf = Vec::new();
        let pq = |source| Error::Parquet {
            path: path.to_path_buf(),
            source,
        };
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(
                parquet::basic::ZstdLevel::default(),
            ))
            .build();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(&mut buf, schema, Some(props)).map_err(pq)?;
        w.write(&batch).map_err(pq)?;
        w.close().map_err(pq)?;
        Ok(buf)
    } else {
        use std::fmt::Write;
        let mut s = String::with_capacity(n * (1 + 24 * cols.len()) + 64);
        s.push_str("step");
        for c in names {
            s.push(',');
            s.push_str(c);
        }
        s.push('\n');
        for i in 0..n {
            let _ = write!(s, "{i}");
            for c in cols {
                let _ = write!(s, ",{}", c[i]);
            }
            s.push('\n');
        }
        Ok(s.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_column_clamps_and_rejects_bad_values() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("s.csv");
        std::fs::write(&p, "t,count\na,1\nb,7\nc,2.5\n").expect("write");
        let s = load(&p, "count", 5.0).expect("ok");
        assert_eq!(s.values, vec![1.0, 5.0, 2.5]);
        assert_eq!(s.clamped, 1);
        let e = load(&p, "cnt", 5.0).expect_err("missing column");
        assert!(e.to_string().contains("the columns are: t, count"), "{e}");
        std::fs::write(&p, "count\n1\n-2\n").expect("write");
        let e = load(&p, "count", 5.0).expect_err("negative");
        assert!(e.to_string().contains("row 1"), "{e}");
        std::fs::write(&p, "count\n1\nx\n").expect("write");
        assert!(load(&p, "count", 5.0).is_err());
        let bits = dir.path().join("b.txt");
        std::fs::write(&bits, "0110\n1\n").expect("write");
        assert_eq!(
            load(&bits, "", 1.0).expect("bits").values,
            vec![0.0, 1.0, 1.0, 0.0, 1.0]
        );
        std::fs::write(&bits, "012").expect("write");
        assert!(load(&bits, "", 1.0).is_err());
        let out = dir.path().join("o.parquet");
        let bytes = encode(&out, &[1.0, 2.0]).expect("parquet");
        std::fs::write(&out, bytes).expect("write");
        let back = crate::data::parquet_io::read_column(&out, "estimate").expect("read");
        assert_eq!(back, vec![1.0, 2.0]);
    }
}

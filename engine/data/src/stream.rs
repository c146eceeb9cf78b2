//! A time series read and written in chunks, so that `kinsey decay` runs in memory bounded
//! by the chunk, whatever the series' length: [`SeriesReader`] reads a CSV column line by
//! line, a Parquet column batch by batch (only that column is decoded) or a file of bits,
//! with exactly the checks and clamping of [`series::load`](crate::series::load) and the
//! same row numbers in its errors; [`SeriesWriter`] writes the `(step, column...)` table as
//! CSV (the bytes of [`series::encode_columns`](crate::series::encode_columns)) or Parquet,
//! to a staged path that [`Outputs`](crate::output::Outputs) moves into place only when
//! the run succeeds.

use crate::columns::{csv_column_index, is_parquet, non_finite};
use arrow::array::{ArrayRef, Float64Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use kinsey_core::{Error, Result};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the values come from.
enum Source {
    Csv {
        lines: std::io::Lines<BufReader<File>>,
        idx: usize,
    },
    Parquet(ParquetRecordBatchReader),
    Bits(std::io::Bytes<BufReader<File>>),
}

/// A series column read `chunk` values at a time.
pub struct SeriesReader {
    path: PathBuf,
    column: String,
    bound: f64,
    chunk: usize,
    src: Source,
    /// Rows read so far.
    row: usize,
    /// The row count a Parquet file's metadata declares.
    declared_rows: Option<u64>,
    /// Steps whose value exceeded the bound and was clamped to it.
    pub clamped: usize,
}

impl std::fmt::Debug for SeriesReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SeriesReader({}, column {}, row {})",
            self.path.display(),
            self.column,
            self.row
        )
    }
}

impl SeriesReader {
    /// Opens `path` (CSV with a header, Parquet, or `.txt` of bits) and finds `column`.
    pub fn open(path: &Path, column: &str, bound: f64, chunk: usize) -> Result<Self> {
        if chunk == 0 {
            return Err(Error::param("chunk", "must be at least 1 step"));
        }
        let file = || File::open(path).map_err(|e| Error::io(path, e));
        let mut declared_rows = None;
        let src = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("txt"))
        {
            Source::Bits(BufReader::new(file()?).bytes())
        } else if is_parquet(path) {
            let pq = |source| Error::Parquet {
                path: path.to_path_buf(),
                source,
            };
            let builder = ParquetRecordBatchReaderBuilder::try_new(file()?).map_err(pq)?;
            declared_rows = Some(builder.metadata().file_metadata().num_rows().max(0) as u64);
            let idx = crate::parquet_io::numeric_column_index(path, builder.schema(), column)?;
            let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), [idx]);
            Source::Parquet(
                builder
                    .with_projection(mask)
                    .with_batch_size(chunk)
                    .build()
                    .map_err(pq)?,
            )
        } else {
            let mut lines = BufReader::new(file()?).lines();
            let header = lines.next().transpose().map_err(|e| Error::io(path, e))?;
            let idx = csv_column_index(path, header.as_deref(), column)?;
            Source::Csv { lines, idx }
        };
        Ok(Self {
            path: path.to_path_buf(),
            column: column.to_string(),
            bound,
            chunk,
            src,
            row: 0,
            clamped: 0,
            declared_rows,
        })
    }

    /// Rows read so far.
    pub fn rows(&self) -> usize {
        self.row
    }

    /// The next at most `chunk` values into `out` (cleared first), checked and clamped;
    /// `false` at the end of the series.
    pub fn next_chunk(&mut self, out: &mut Vec<f64>) -> Result<bool> {
        out.clear();
        match &mut self.src {
            Source::Csv { lines, idx } => {
                while out.len() < self.chunk {
                    let Some(line) = lines.next() else { break };
                    let line = line.map_err(|e| Error::io(&self.path, e))?;
                    if line.trim().is_empty() {
                        continue;
                    }
                    let cell = line.split(',').nth(*idx).map(str::trim).unwrap_or_default();
                    let row = self.row + out.len();
                    let v = cell.parse::<f64>().map_err(|_| Error::Value {
                        path: self.path.clone(),
                        column: self.column.clone(),
                        row,
                        msg: "the cell is not a number".into(),
                    })?;
                    if !v.is_finite() {
                        return Err(non_finite(&self.path, &self.column, row));
                    }
                    out.push(v);
                }
            }
            Source::Parquet(batches) => {
                if let Some(b) = batches.next() {
                    let b = b.map_err(|source| Error::Arrow {
                        path: self.path.clone(),
                        source,
                    })?;
                    out.extend(crate::parquet_io::as_f64(
                        b.column(0),
                        &self.path,
                        &self.column,
                        self.row,
                    )?);
                }
            }
            Source::Bits(bytes) => {
                while out.len() < self.chunk {
                    let Some(b) = bytes.next() else { break };
                    let b = b.map_err(|e| Error::io(&self.path, e))?;
                    match b {
                        b'0' => out.push(0.0),
                        b'1' => out.push(1.0),
                        b if b.is_ascii_whitespace() => {}
                        _ => {
                            let i = self.row + out.len();
                            return Err(Error::Value {
                                path: self.path.clone(),
                                column: "bits".into(),
                                row: i,
                                msg: format!("character {} is not a bit (0 or 1)", i + 1),
                            });
                        }
                    }
                }
            }
        }
        for (i, v) in out.iter_mut().enumerate() {
            if *v < 0.0 {
                return Err(Error::Value {
                    path: self.path.clone(),
                    column: self.column.clone(),
                    row: self.row + i,
                    msg: "the value is not a finite non-negative number".into(),
                });
            }
            if *v > self.bound {
                self.clamped += 1;
                *v = self.bound;
            }
        }
        self.row += out.len();
        if self.row == 0 && out.is_empty() {
            return Err(Error::format(&self.path, "the series is empty"));
        }
        Ok(!out.is_empty())
    }
}

/// The number of steps of a series file without holding it: Parquet's metadata, or one
/// streaming pass over a CSV's lines or a bit file.
pub fn count_steps(path: &Path, column: &str) -> Result<u64> {
    let mut r = SeriesReader::open(path, column, f64::INFINITY, 1 << 16)?;
    if let Some(n) = r.declared_rows {
        return Ok(n);
    }
    let mut buf = Vec::new();
    while r.next_chunk(&mut buf)? {}
    Ok(r.rows() as u64)
}

/// Where the table goes.
enum Sink<W: Write + Send> {
    Csv(BufWriter<W>),
    Parquet(Box<ArrowWriter<W>>, Arc<Schema>),
}

/// The `(step, column...)` table, written a chunk at a time to a file (or, for
/// [`series::encode_columns`](crate::series::encode_columns), to memory).
pub struct SeriesWriter<W: Write + Send = File> {
    /// The staged file (errors name it).
    path: PathBuf,
    sink: Sink<W>,
    step: u64,
}

impl<W: Write + Send> std::fmt::Debug for SeriesWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SeriesWriter({}, step {})",
            self.path.display(),
            self.step
        )
    }
}

impl SeriesWriter {
    /// Writes to `staged`; CSV or Parquet by the extension of `target` (the final name).
    pub fn create(staged: &Path, target: &Path, names: &[String]) -> Result<Self> {
        let file = File::create(staged).map_err(|e| Error::io(staged, e))?;
        Self::new(file, staged, target, names)
    }

    /// Flushes and closes the file (it stays staged until the run commits); the rows
    /// written.
    pub fn finish(self) -> Result<u64> {
        Ok(self.into_inner()?.0)
    }
}

impl<W: Write + Send> SeriesWriter<W> {
    /// Writes to `w` (errors name `path`); CSV or Parquet by the extension of `target`.
    pub fn new(w: W, path: &Path, target: &Path, names: &[String]) -> Result<Self> {
        let sink = if is_parquet(target) {
            let mut fields = vec![Field::new("step", DataType::UInt64, false)];
            fields.extend(
                names
                    .iter()
                    .map(|c| Field::new(c, DataType::Float64, false)),
            );
            let schema = Arc::new(Schema::new(fields));
            let props = parquet::file::properties::WriterProperties::builder()
                .set_compression(parquet::basic::Compression::ZSTD(
                    parquet::basic::ZstdLevel::default(),
                ))
                .build();
            let w = ArrowWriter::try_new(w, schema.clone(), Some(props)).map_err(|source| {
                Error::Parquet {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
            Sink::Parquet(Box::new(w), schema)
        } else {
            let mut w = BufWriter::with_capacity(1 << 20, w);
            let header = format!("step,{}\n", names.join(","));
            w.write_all(header.as_bytes())
                .map_err(|e| Error::io(path, e))?;
            Sink::Csv(w)
        };
        Ok(Self {
            path: path.to_path_buf(),
            sink,
            step: 0,
        })
    }

    /// The next rows: one vector per column, all the same length.
    pub fn write(&mut self, cols: &[Vec<f64>]) -> Result<()> {
        let n = cols.first().map_or(0, Vec::len);
        match &mut self.sink {
            Sink::Csv(w) => {
                use std::fmt::Write as _;
                let mut s = String::with_capacity(n * (1 + 24 * cols.len()));
                for i in 0..n {
                    let _ = write!(s, "{}", self.step + i as u64);
                    for c in cols {
                        let _ = write!(s, ",{}", c[i]);
                    }
                    s.push('\n');
                }
                w.write_all(s.as_bytes())
                    .map_err(|e| Error::io(&self.path, e))?;
            }
            Sink::Parquet(w, schema) => {
                let mut arrays: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from_iter_values(
                    self.step..self.step + n as u64,
                ))];
                arrays.extend(
                    cols.iter()
                        .map(|c| Arc::new(Float64Array::from(c.clone())) as ArrayRef),
                );
                let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|source| {
                    Error::Arrow {
                        path: self.path.clone(),
                        source,
                    }
                })?;
                w.write(&batch).map_err(|source| Error::Parquet {
                    path: self.path.clone(),
                    source,
                })?;
            }
        }
        self.step += n as u64;
        Ok(())
    }

    /// Flushes and closes the table: the rows written and the writer.
    pub fn into_inner(self) -> Result<(u64, W)> {
        let w = match self.sink {
            Sink::Csv(w) => w
                .into_inner()
                .map_err(|e| Error::io(&self.path, e.into_error()))?,
            Sink::Parquet(w, _) => w.into_inner().map_err(|source| Error::Parquet {
                path: self.path.clone(),
                source,
            })?,
        };
        Ok((self.step, w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series;

    /// Chunked reading gives `load`'s values, clamping and errors (same row), for CSV,
    /// Parquet and bits, with chunks smaller than the file; the writer gives
    /// `encode_columns`' CSV bytes and a Parquet file with the same values.
    #[test]
    fn chunks_equal_the_whole_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let csv = dir.path().join("s.csv");
        let mut text = String::from("t,value\n");
        for i in 0..1000 {
            text.push_str(&format!("{i},{}\n", (i * 37 % 11) as f64 / 2.0));
            if i % 100 == 0 {
                text.push('\n');
            }
        }
        std::fs::write(&csv, &text).expect("w");
        let whole = series::load(&csv, "value", 4.0).expect("load");
        let want: Vec<f64> = (0..1000)
            .map(|i| ((i * 37 % 11) as f64 / 2.0).min(4.0))
            .collect();
        assert_eq!(whole.values, want);
        let over = (0..1000)
            .filter(|i| (i * 37 % 11) as f64 / 2.0 > 4.0)
            .count();
        assert_eq!(whole.clamped, over);
        let pq = dir.path().join("s.parquet");
        std::fs::write(
            &pq,
            series::encode_columns(
                &pq,
                &["value".to_string()],
                std::slice::from_ref(&whole.values),
            )
            .expect("enc"),
        )
        .expect("w");
        for path in [&csv, &pq] {
            let mut r = SeriesReader::open(path, "value", 4.0, 64).expect("open");
            let (mut all, mut buf) = (Vec::new(), Vec::new());
            while r.next_chunk(&mut buf).expect("chunk") {
                assert!(buf.len() <= 64);
                all.extend_from_slice(&buf);
            }
            assert_eq!(all, whole.values, "{}", path.display());
            assert_eq!(count_steps(path, "value").expect("count"), 1000);
        }
        let mut r = SeriesReader::open(&csv, "value", 4.0, 64).expect("open");
        let mut buf = Vec::new();
        while r.next_chunk(&mut buf).expect("chunk") {}
        assert_eq!(r.clamped, whole.clamped);
        // A bad cell deep in the file: the same error as the whole-file reader.
        let bad_row: String = text
            .lines()
            .map(|l| if l.starts_with("700,") { "700,-1" } else { l })
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&csv, &bad_row).expect("w");
        let want = series::load(&csv, "value", 4.0)
            .expect_err("bad")
            .to_string();
        let mut r = SeriesReader::open(&csv, "value", 4.0, 64).expect("open");
        let got = loop {
            match r.next_chunk(&mut buf) {
                Ok(true) => {}
                Ok(false) => panic!("the bad row was not found"),
                Err(e) => break e.to_string(),
            }
        };
        assert_eq!(got, want);
        assert!(got.contains("row 700"), "{got}");
        // Bits.
        let bits = dir.path().join("b.txt");
        std::fs::write(&bits, "0110\n10\n1").expect("w");
        let mut r = SeriesReader::open(&bits, "value", 1.0, 3).expect("open");
        let mut all = Vec::new();
        while r.next_chunk(&mut buf).expect("chunk") {
            all.extend_from_slice(&buf);
        }
        assert_eq!(all, [0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]);
        assert_eq!(all, series::load(&bits, "value", 1.0).expect("bits").values);
        std::fs::write(&csv, "value\n").expect("w");
        let mut r = SeriesReader::open(&csv, "value", 1.0, 3).expect("open");
        assert!(
            r.next_chunk(&mut buf).is_err(),
            "an empty series is refused"
        );
        // The writer, in three pieces.
        let cols = vec![vec![0.5, -1.25, 3.0], vec![1.0, 2.0, 1e-9]];
        let names = vec!["a".to_string(), "b".to_string()];
        for name in ["o.csv", "o.parquet"] {
            let target = dir.path().join(name);
            let staged = dir.path().join(format!("staged-{name}"));
            let mut w = SeriesWriter::create(&staged, &target, &names).expect("create");
            for (a, b) in cols[0].iter().zip(&cols[1]) {
                w.write(&[vec![*a], vec![*b]]).expect("write");
            }
            assert_eq!(w.finish().expect("finish"), 3);
            if name.ends_with(".csv") {
                let want = series::encode_columns(&target, &names, &cols).expect("enc");
                assert_eq!(std::fs::read(&staged).expect("read"), want);
            } else {
                let back = crate::columns::read_numeric(&staged, "b").expect("read");
                assert_eq!(back, cols[1]);
            }
        }
    }
}

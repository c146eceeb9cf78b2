//! A time series read and written in chunks, so that `kinsey decay` runs in memory bounded
//! by the chunk, whatever the series' length: [`SeriesReader`] reads a CSV column line by
//! line, a Parquet column batch by batch (only that column is decoded) or a file of bits,
//! with exactly the checks and clamping of [`series::load`](crate::series::load) and the
//! same row numbers in its errors; [`SeriesWriter`] writes the `(step, column...)` table as
//! CSV (the bytes of [`series::encode_columns`](crate::series::encode_columns)) or Parquet,
//! to a staged path that [`Outputs`](crate::output::Outputs) moves into place only when
//! the run succeeds.

use crate::columns::{is_parquet, non_finite};
use crate::csv_file::{CsvFile, QuotedRest, column_index, header_of_line};
use arrow::array::{ArrayRef, Float64Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use kinsey_core::{Error, Result};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the values come from.
enum Source {
    Csv {
        lines: BufReader<File>,
        idx: usize,
        /// The header's names (for a switch to [`Source::Quoted`]).
        header: Vec<String>,
        /// Bytes read from the file in blocks (reused): whole lines, then part of one.
        block: Vec<u8>,
        /// Where the lines not yet parsed start in `block`.
        start: usize,
        /// The file has no more bytes.
        eof: bool,
        /// Where each line of the batch being parsed ends, from `start`.
        ends: Vec<usize>,
    },
    /// A CSV file past its first double quote: read as CSV records from there (quoted
    /// cells may hold commas and line ends), one at a time.
    Quoted {
        csv: Box<CsvFile<QuotedRest>>,
        idx: usize,
        rec: csv::StringRecord,
    },
    /// Between a [`Source::Csv`] and its [`Source::Quoted`] (never seen by a caller).
    Switching,
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
        let src = if is_bit_file(path) {
            Source::Bits(BufReader::new(file()?).bytes())
        } else if is_parquet(path) {
            let pq = |source| Error::Parquet {
                path: path.to_path_buf(),
                source: Box::new(source),
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
            let mut lines = BufReader::with_capacity(1 << 20, file()?);
            let mut line = Vec::new();
            // The header line as CSV (quoted names, a byte-order mark); the rows split
            // on commas by lines in parallel while no double quote is seen, then as CSV.
            let header = match next_line(&mut lines, &mut line) {
                Ok(true) => header_of_line(path, &line)?,
                Ok(false) => {
                    return Err(Error::format(path, "empty file: expected a header line"));
                }
                Err(e) => return Err(Error::io(path, e)),
            };
            let idx = column_index(path, &header, column)?;
            line.clear();
            Source::Csv {
                lines,
                idx,
                header,
                block: line,
                start: 0,
                eof: false,
                ends: Vec::new(),
            }
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
        while self.fill(out)? {
            // A double quote ahead: the rest of the file is read as CSV records.
            self.switch_to_records(out.len());
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

impl SeriesReader {
    /// Values into `out` from the source, up to `chunk`; `true` when a CSV file's lines
    /// ahead hold a double quote (nothing of them read): the caller switches to records.
    fn fill(&mut self, out: &mut Vec<f64>) -> Result<bool> {
        match &mut self.src {
            Source::Csv {
                lines,
                idx,
                header: _,
                block,
                start,
                eof,
                ends,
            } => {
                // The file is read in blocks of CSV_BLOCK bytes; the whole lines of a block
                // (at most what the chunk still needs) are parsed in parallel; a partial
                // line waits for the next block. The first bad line in file order is the
                // error, at its row.
                while out.len() < self.chunk {
                    let want = self.chunk - out.len();
                    ends.clear();
                    ends.extend(
                        memchr::memchr_iter(b'\n', &block[*start..])
                            .take(want)
                            .map(|i| i + 1),
                    );
                    if ends.is_empty() {
                        if !*eof {
                            // No whole line left: keep the partial one, read the next block.
                            block.drain(..*start);
                            *start = 0;
                            // Up to CSV_BLOCK bytes in all; more only for a longer line.
                            let old = block.len();
                            let size = if old < CSV_BLOCK / 2 {
                                CSV_BLOCK
                            } else {
                                old + CSV_BLOCK
                            };
                            block.resize(size, 0);
                            let n = loop {
                                match lines.read(&mut block[old..]) {
                                    Ok(n) => break n,
                                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                                    Err(e) => {
                                        block.truncate(old);
                                        return Err(Error::io(&self.path, e));
                                    }
                                }
                            };
                            block.truncate(old + n);
                            *eof = n == 0;
                            continue;
                        }
                        if *start == block.len() {
                            break;
                        }
                        // The last line has no line end.
                        ends.push(block.len() - *start);
                    }
                    let lines_at = &block[*start..];
                    let upto = ends.last().copied().unwrap_or(0);
                    if memchr::memchr(b'"', &lines_at[..upto]).is_some() {
                        return Ok(true);
                    }
                    *start += upto;
                    if let Err((k, e)) = parse_lines(lines_at, ends, *idx, out) {
                        // The bad line's row: the values before it in the file.
                        let row = self.row + k;
                        let value = |msg: String| Error::Value {
                            path: self.path.clone(),
                            column: self.column.clone(),
                            row,
                            msg,
                        };
                        return Err(match e {
                            LineError::NotUtf8(e) => {
                                value(format!("the line is not UTF-8 text ({e})"))
                            }
                            LineError::NotNumber => value("the cell is not a number".into()),
                            LineError::NotFinite => non_finite(&self.path, &self.column, row),
                        });
                    }
                }
            }
            Source::Quoted { csv, idx, rec } => {
                while out.len() < self.chunk {
                    if !csv.read(rec, &self.column)? {
                        break;
                    }
                    let row = csv.rows() - 1;
                    let v = rec[*idx].trim().parse::<f64>().map_err(|_| Error::Value {
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
            Source::Switching => {
                return Err(Error::format(
                    &self.path,
                    "the reader stopped at an earlier error",
                ));
            }
            Source::Parquet(batches) => {
                if let Some(b) = batches.next() {
                    let b = b.map_err(|source| Error::Arrow {
                        path: self.path.clone(),
                        source: Box::new(source),
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
        Ok(false)
    }

    /// From the first line with a double quote on, read the CSV file as records: the bytes
    /// read from that line's start, then the rest of the file; `consumed` values of this
    /// chunk are already out.
    fn switch_to_records(&mut self, consumed: usize) {
        let old = std::mem::replace(&mut self.src, Source::Switching);
        if let Source::Csv {
            lines,
            idx,
            header,
            block,
            start,
            ..
        } = old
        {
            let pending = block[start..].to_vec();
            let csv = CsvFile::from_line(&self.path, pending, lines, header, self.row + consumed);
            self.src = Source::Quoted {
                csv: Box::new(csv),
                idx,
                rec: csv::StringRecord::new(),
            };
        }
    }
}

/// Bytes of CSV lines parsed in one parallel batch (a wide file's chunk of lines would
/// otherwise be held whole).
const CSV_BLOCK: usize = 8 << 20;

/// Lines of CSV one thread parses at a time.
const CSV_LINES: usize = 1 << 13;

/// What is wrong with a CSV line.
#[derive(Debug)]
enum LineError {
    NotUtf8(std::str::Utf8Error),
    NotNumber,
    NotFinite,
}

/// The value in column `idx` of `line` (its `\n` or `\r\n` still on), `None` for a blank
/// line.
fn parse_line(line: &[u8], idx: usize) -> std::result::Result<Option<f64>, LineError> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = std::str::from_utf8(line).map_err(LineError::NotUtf8)?;
    let cell = line.split(',').nth(idx);
    if let Some(v) = cell.map(str::as_bytes).and_then(plain_integer) {
        return Ok(Some(v));
    }
    if line.trim().is_empty() {
        return Ok(None);
    }
    let cell = cell.map(str::trim).unwrap_or_default();
    let v = cell.parse::<f64>().map_err(|_| LineError::NotNumber)?;
    if v.is_finite() {
        Ok(Some(v))
    } else {
        Err(LineError::NotFinite)
    }
}

/// The value of a cell that is, between ASCII spaces, an optional sign and 1 to 15 decimal
/// digits (below 2^53: exact), read without the general parser (most of a CSV run's parse
/// time); `None` for any other cell, which the general path then reads. The same value as
/// `str::trim` and `f64::from_str` give (`-0` is `-0.0`).
fn plain_integer(cell: &[u8]) -> Option<f64> {
    let cell = cell.trim_ascii();
    let (negative, digits) = match cell.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, cell),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut v = 0u64;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u64::from(d);
    }
    let v = v as f64;
    Some(if negative { -v } else { v })
}

/// The values of the lines of `block` ending at `ends`, appended to `out` in order, pieces
/// parsed in parallel; the first bad line is the error, with the length of `out` at it (the
/// values before it are appended).
fn parse_lines(
    block: &[u8],
    ends: &[usize],
    idx: usize,
    out: &mut Vec<f64>,
) -> std::result::Result<(), (usize, LineError)> {
    let pieces: Vec<(Vec<f64>, Option<LineError>)> = ends
        .par_chunks(CSV_LINES)
        .enumerate()
        .map(|(p, piece)| {
            let mut start = if p == 0 { 0 } else { ends[p * CSV_LINES - 1] };
            let mut vals = Vec::with_capacity(piece.len());
            for &end in piece {
                match parse_line(&block[start..end], idx) {
                    Ok(Some(v)) => vals.push(v),
                    Ok(None) => {}
                    Err(e) => return (vals, Some(e)),
                }
                start = end;
            }
            (vals, None)
        })
        .collect();
    for (vals, err) in pieces {
        out.extend_from_slice(&vals);
        if let Some(e) = err {
            return Err((out.len(), e));
        }
    }
    Ok(())
}

/// The next line of `r` into `line` without its `\n` or `\r\n` (as `BufRead::lines`, with
/// no allocation per line); `false` at the end of the file.
pub(crate) fn next_line(r: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    if r.read_until(b'\n', line)? == 0 {
        return Ok(false);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    Ok(true)
}

/// A line that is not UTF-8, as an I/O error of `path`.
pub(crate) fn not_utf8(path: &Path, e: std::str::Utf8Error) -> Error {
    Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
    )
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

/// Rows of CSV one thread formats at a time.
const CSV_PIECE: usize = 1 << 15;

/// Rows `rows` of the `(step, column...)` table as CSV lines, the first row numbered
/// `step + rows.start`.
fn csv_rows(
    step: u64,
    cols: &[Vec<f64>],
    rows: std::ops::Range<usize>,
    clock: Option<crate::time::Clock>,
) -> Vec<u8> {
    // A step of up to 20 digits and numbers of up to 24 characters: no reallocation.
    let mut s = Vec::with_capacity(rows.len() * (21 + 25 * cols.len()));
    let mut buf = ryu::Buffer::new();
    for i in rows {
        push_u64(&mut s, step + i as u64);
        if let Some(c) = clock {
            s.push(b',');
            let t = c.start + (step + i as u64) as i64 * c.step;
            s.extend_from_slice(crate::time::format_time(t).as_bytes());
        }
        for c in cols {
            s.push(b',');
            push_f64(&mut s, c[i], &mut buf);
        }
        s.push(b'\n');
    }
    s
}

/// `x` in decimal, as `Display` writes it.
fn push_u64(s: &mut Vec<u8>, x: u64) {
    push_digits(s, x, 1);
}

/// `x` in decimal with at least `width` digits (leading zeros), two digits per step.
fn push_digits(s: &mut Vec<u8>, mut x: u64, width: usize) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut digits = [b'0'; 24];
    let mut at = digits.len();
    while x >= 100 {
        let p = (x % 100) as usize * 2;
        x /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[p..p + 2]);
    }
    if x >= 10 {
        let p = x as usize * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[p..p + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + x as u8;
    }
    at = at.min(digits.len() - width.min(digits.len()));
    s.extend_from_slice(&digits[at..]);
}

/// `x` with the fewest digits that read back as exactly `x` (`ryu`, as the JSON outputs
/// through `serde_json`), whole numbers without `ryu`'s `.0` (`3`, as `Display` writes
/// them). The digits are `Display`'s except where two shortest forms are equally close to
/// `x` (`ryu` takes the even one, `Display` rounds up: `...797.2` for `...797.25`, where
/// both read back as `x`); magnitudes below 1e-5 or from 1e16 take an exponent (`1e16`).
/// About three times as fast as `Display`, which was most of a CSV run's time; the
/// releases on a grid of `2^-k` mostly take [`push_dyadic`], faster again.
fn push_f64(s: &mut Vec<u8>, x: f64, buf: &mut ryu::Buffer) {
    if push_dyadic(s, x) {
        return;
    }
    if x.is_finite() {
        let t = buf.format_finite(x);
        s.extend_from_slice(t.strip_suffix(".0").unwrap_or(t).as_bytes());
    } else {
        use std::io::Write as _;
        let _ = write!(s, "{x}");
    }
}

/// [`push_f64`]'s string for an `x` of magnitude in `[1e-5, 1e15)` whose exact decimal
/// expansion has at most 15 significant digits and at most 19 after the point (a binary
/// fraction `n / 2^k`, `k <= 19`: the releases of the decayed sums, on their grid), written
/// from that expansion; `false` (nothing written) for any other `x`. The same string as
/// `ryu`: a decimal of at most 15 significant digits is the only string of at most that
/// many digits within half an ulp of `x` (two such decimals differ by at least `10^(E-14)`
/// for a leading digit at `10^E`, half an ulp is below `1.2 10^(E-15)`), so it is the
/// shortest that reads back as `x`, and `ryu` writes it in this range without an exponent.
fn push_dyadic(s: &mut Vec<u8>, x: f64) -> bool {
    let a = x.abs();
    if !(1e-5..1e15).contains(&a) {
        return false;
    }
    let bits = a.to_bits();
    // Normal in this range: the implicit bit is set.
    let mant = (bits & ((1 << 52) - 1)) | (1 << 52);
    let tz = mant.trailing_zeros();
    let (m, e) = (mant >> tz, ((bits >> 52) & 0x7ff) as i32 - 1075 + tz as i32);
    let sign: &[u8] = if x < 0.0 { b"-" } else { b"" };
    if e >= 0 {
        s.extend_from_slice(sign);
        push_digits(s, m << e, 1);
        return true;
    }
    let k = e.unsigned_abs();
    if k > 19 {
        return false;
    }
    let int = m >> k;
    // m is odd, so the fraction's digits end in 5: no trailing zeros to strip.
    let frac = (m & ((1 << k) - 1)) * 5u64.pow(k);
    let int_digits = if int == 0 { 0 } else { int.ilog10() + 1 };
    let significant = if int == 0 {
        frac.ilog10() + 1
    } else {
        int_digits + k
    };
    if significant > 15 {
        return false;
    }
    s.extend_from_slice(sign);
    push_digits(s, int, 1);
    s.push(b'.');
    push_digits(s, frac, k as usize);
    true
}

/// Where the table goes.
enum Sink<W: Write + Send> {
    Csv(BufWriter<W>),
    Parquet(Box<ArrowWriter<W>>, Arc<Schema>),
}

/// Whether `path` is read as a 0/1 text, one bit per step (a `.txt` file, any case).
pub fn is_bit_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("txt"))
}

/// The `(step, column...)` table, written a chunk at a time to a file (or, for
/// [`series::encode_columns`](crate::series::encode_columns), to memory).
pub struct SeriesWriter<W: Write + Send = File> {
    /// The staged file (errors name it).
    path: PathBuf,
    sink: Sink<W>,
    step: u64,
    /// A time-bucketed series' clock: each row also carries its step's start time.
    clock: Option<crate::time::Clock>,
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
        Self::new_timed(w, path, target, names, None)
    }

    /// [`new`](Self::new) with a `clock`: a `time` column (ISO text in CSV, a timestamp in
    /// seconds in Parquet) after `step`.
    pub fn new_timed(
        w: W,
        path: &Path,
        target: &Path,
        names: &[String],
        clock: Option<crate::time::Clock>,
    ) -> Result<Self> {
        let sink = if is_parquet(target) {
            let mut fields = vec![Field::new("step", DataType::UInt64, false)];
            if clock.is_some() {
                fields.push(Field::new(
                    "time",
                    DataType::Timestamp(arrow::datatypes::TimeUnit::Second, None),
                    false,
                ));
            }
            fields.extend(
                names
                    .iter()
                    .map(|c| Field::new(c, DataType::Float64, false)),
            );
            let schema = Arc::new(Schema::new(fields));
            // No dictionaries (steps and noisy estimates hardly repeat: the writer built
            // each page's dictionary and then dropped it), the steps as deltas, the
            // estimates' bytes split by position for zstd.
            use parquet::basic::Encoding;
            use parquet::schema::types::ColumnPath;
            let mut props = parquet::file::properties::WriterProperties::builder()
                .set_compression(parquet::basic::Compression::ZSTD(
                    parquet::basic::ZstdLevel::default(),
                ))
                .set_dictionary_enabled(false)
                .set_column_encoding(ColumnPath::from("step"), Encoding::DELTA_BINARY_PACKED);
            for c in names {
                props = props
                    .set_column_encoding(ColumnPath::from(c.as_str()), Encoding::BYTE_STREAM_SPLIT);
            }
            let props = props.build();
            let w = ArrowWriter::try_new(w, schema.clone(), Some(props)).map_err(|source| {
                Error::Parquet {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                }
            })?;
            Sink::Parquet(Box::new(w), schema)
        } else {
            let mut w = BufWriter::with_capacity(1 << 20, w);
            let time = if clock.is_some() { "time," } else { "" };
            let header = format!("step,{time}{}\n", names.join(","));
            w.write_all(header.as_bytes())
                .map_err(|e| Error::io(path, e))?;
            Sink::Csv(w)
        };
        Ok(Self {
            path: path.to_path_buf(),
            sink,
            step: 0,
            clock,
        })
    }

    /// The next rows: one vector per column, all the same length.
    pub fn write(&mut self, cols: &[Vec<f64>]) -> Result<()> {
        let n = cols.first().map_or(0, Vec::len);
        match &mut self.sink {
            Sink::Csv(w) => {
                // Formatting the numbers is most of a CSV run's time: pieces of the chunk
                // are formatted in parallel and written in order (the same bytes).
                let (step, clock) = (self.step, self.clock);
                let pieces: Vec<Vec<u8>> = (0..n.div_ceil(CSV_PIECE))
                    .into_par_iter()
                    .map(|p| {
                        let rows = p * CSV_PIECE..((p + 1) * CSV_PIECE).min(n);
                        csv_rows(step, cols, rows, clock)
                    })
                    .collect();
                for s in &pieces {
                    w.write_all(s).map_err(|e| Error::io(&self.path, e))?;
                }
            }
            Sink::Parquet(w, schema) => {
                let mut arrays: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from_iter_values(
                    self.step..self.step + n as u64,
                ))];
                if let Some(c) = self.clock {
                    let first = c.start + self.step as i64 * c.step;
                    arrays.push(Arc::new(
                        arrow::array::TimestampSecondArray::from_iter_values(
                            (0..n as i64).map(|i| first + i * c.step),
                        ),
                    ));
                }
                arrays.extend(
                    cols.iter()
                        .map(|c| Arc::new(Float64Array::from(c.clone())) as ArrayRef),
                );
                let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|source| {
                    Error::Arrow {
                        path: self.path.clone(),
                        source: Box::new(source),
                    }
                })?;
                w.write(&batch).map_err(|source| Error::Parquet {
                    path: self.path.clone(),
                    source: Box::new(source),
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
                source: Box::new(source),
            })?,
        };
        Ok((self.step, w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series;

    /// A xorshift stream of test values.
    fn xorshift(mut r: u64) -> impl FnMut() -> u64 {
        move || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            r
        }
    }

    /// Every CSV number reads back as exactly the value written; from 1e-5 to 1e16 with as
    /// few characters as `Display` and no exponent, differing only on ties: random
    /// bit patterns over every exponent, grid multiples like the decayed sums' estimates,
    /// whole numbers, zeros, subnormals; non-finite values as `Display`; steps up to
    /// `u64::MAX` as `Display`.
    #[test]
    fn csv_numbers_read_back_exactly() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e-5,
            9.99e-6,
            1e15,
            1e16,
            9_007_199_254_740_993.0,
            f64::from_bits(0xc310_565a_94b4_e5f5), // -1149636667324797.25: a tie
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
        ];
        for _ in 0..200_000 {
            let bits = next();
            xs.push(f64::from_bits(bits));
            xs.push((bits >> 20) as f64 / 4.0 - (1u64 << 41) as f64);
            xs.push((bits % 100_000) as f64 * 0.1);
        }
        // Releases on grids 2^-k (the fast path's values), its edges, and the values
        // above: each the string `ryu` writes.
        let mut grid = xs.clone();
        for k in 0..=22 {
            let g = 2f64.powi(-k);
            for _ in 0..20_000 {
                let n = (next() >> (11 + next() % 40)) as f64;
                grid.push(n * g);
                grid.push(-n * g);
            }
        }
        grid.extend([
            1e-5,
            -1e-5,
            9.999_999_999_999_999e-6,
            1e15,
            1e15 - 1.0,
            999_999_999_999_999.5,
            0.5,
            0.75,
            2f64.powi(-19),
            2f64.powi(-19) * 3.0,
            123_456_789_012.345,
            0.000_015_258_789_062_5,
        ]);
        let mut buf = ryu::Buffer::new();
        let mut fast = 0;
        for &x in &grid {
            if !x.is_finite() {
                continue;
            }
            let mut got = Vec::new();
            fast += usize::from(push_dyadic(&mut got, x));
            if got.is_empty() {
                continue;
            }
            let t = buf.format_finite(x);
            let want = t.strip_suffix(".0").unwrap_or(t);
            assert_eq!(got, want.as_bytes(), "bits {:#x}", x.to_bits());
        }
        assert!(fast > 500_000, "{fast} values took the fast path");
        let mut differ = 0;
        for x in xs.into_iter().filter(|x| x.is_finite()) {
            let mut s = Vec::new();
            push_f64(&mut s, x, &mut buf);
            let s = String::from_utf8(s).expect("ASCII");
            let back: f64 = s.parse().expect("a number");
            assert_eq!(
                back.to_bits(),
                x.to_bits(),
                "{s} for bits {:#x}",
                x.to_bits()
            );
            let d = format!("{x}");
            if (1e-5..1e16).contains(&x.abs()) || x == 0.0 {
                assert!(!s.contains('e'), "{s}: an exponent");
                assert_eq!(s.len(), d.len(), "{s} against {d}");
                differ += usize::from(s != d);
            }
        }
        assert!(differ < 1000, "{differ} ties");
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut s = Vec::new();
            push_f64(&mut s, x, &mut buf);
            assert_eq!(s, format!("{x}").as_bytes());
        }
        for n in [0u64, 7, 10, 99, 1_000_000, u64::MAX, next()] {
            let mut s = Vec::new();
            push_u64(&mut s, n);
            assert_eq!(s, n.to_string().as_bytes());
        }
    }

    /// The integer fast path gives what `trim` and `f64::from_str` give on every cell it
    /// takes, and leaves every other cell (fractions, exponents, 16 digits, inner or
    /// non-ASCII spaces, a lone sign) to the general parser.
    #[test]
    fn plain_integers_read_as_the_general_parser() {
        let taken = [
            "0",
            "-0",
            "+0",
            "7",
            " 42 ",
            "\t-3",
            "000123",
            "999999999999999",
            "-999999999999999",
            "+15",
        ];
        for c in taken {
            let want: f64 = c.trim().parse().expect("a number");
            let got = plain_integer(c.as_bytes()).expect("taken");
            assert_eq!(got.to_bits(), want.to_bits(), "{c:?}");
        }
        let left = [
            "",
            " ",
            "-",
            "+",
            "1.5",
            "1e3",
            "1000000000000000",
            "1 2",
            "--1",
            "0x10",
            "\u{a0}5",
            "5\u{a0}",
            "\u{b}5",
            "inf",
            "NaN",
            "\u{ff15}",
        ];
        for c in left {
            assert_eq!(plain_integer(c.as_bytes()), None, "{c:?}");
        }
        // Through a line: the same values as before the fast path, blank lines skipped.
        for (line, want) in [
            (&b"3, 12 ,x\r\n"[..], Some(12.0)),
            (b" \r\n", None),
            (b"3,\xc2\xa012\n", Some(12.0)),
        ] {
            assert_eq!(parse_line(line, 1).ok().flatten(), want, "{line:?}");
        }
    }

    /// Nanoseconds per CSV row of a step and a grid estimate (`cargo test --release -p
    /// kinsey-data --lib csv_rows_speed -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn csv_rows_speed() {
        let n = 1 << 22;
        let col: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 100_000) as f64 / 4096.0 - 7.0)
            .collect();
        let cols = vec![col];
        let t = std::time::Instant::now();
        let mut total = 0;
        for _ in 0..5 {
            total += csv_rows(100_000_000, &cols, 0..n, None).len();
        }
        let ns = t.elapsed().as_secs_f64() / (5 * n) as f64 * 1e9;
        println!("csv_rows {ns:.2} ns/row ({total} bytes)");
    }

    /// Digits in place equal `format!("{x:0width$}")` for every digit count and width,
    /// appended after what the vector already holds.
    #[test]
    fn digits_in_place_equal_format() {
        let mut xs: Vec<u64> = (0..20)
            .flat_map(|e| {
                let p = 10u64.pow(e);
                [p - 1, p, p + 1, p / 7 * 3]
            })
            .collect();
        xs.extend([u64::MAX, u64::MAX - 1, 0]);
        for x in xs {
            for width in [1usize, 2, 5, 19, 20] {
                let mut s = b"ab".to_vec();
                push_digits(&mut s, x, width);
                assert_eq!(
                    s,
                    format!("ab{x:0width$}").into_bytes(),
                    "{x}, width {width}"
                );
            }
        }
    }

    /// CSV lines parsed in parallel pieces: the values of a file of 30,000 rows (CRLF line
    /// ends, blank lines, spaces around cells, a third column) at any chunk size, in file
    /// order; a bad cell deep in a later piece is reported at its own row, whichever piece
    /// or batch it falls in, and the rows before it are not lost.
    #[test]
    fn parallel_csv_pieces_keep_rows_and_order() {
        let dir = tempfile::tempdir().expect("tmp");
        let csv = dir.path().join("big.csv");
        let value = |i: usize| (i * 37 % 11) as f64 / 2.0;
        let lines = |bad: Option<(usize, &[u8])>| {
            let mut bytes = b"t,value,other\r\n".to_vec();
            for i in 0..30_000 {
                bytes.extend_from_slice(format!("{i}, ").as_bytes());
                match bad {
                    Some((at, cell)) if at == i => bytes.extend_from_slice(cell),
                    _ => bytes.extend_from_slice(value(i).to_string().as_bytes()),
                }
                bytes.extend_from_slice(b" ,x\r\n");
                if i % 97 == 0 {
                    bytes.extend_from_slice(b"  \r\n");
                }
            }
            bytes
        };
        std::fs::write(&csv, lines(None)).expect("w");
        let want: Vec<f64> = (0..30_000).map(|i| value(i).min(4.0)).collect();
        for chunk in [64, 5000, 1 << 20] {
            let mut r = SeriesReader::open(&csv, "value", 4.0, chunk).expect("open");
            let (mut all, mut buf) = (Vec::new(), Vec::new());
            while r.next_chunk(&mut buf).expect("chunk") {
                assert!(buf.len() <= chunk);
                all.extend_from_slice(&buf);
            }
            assert_eq!(all, want, "chunks of {chunk}");
            assert_eq!(r.rows(), 30_000);
        }
        for (at, cell, says) in [
            (25_000, &b"abc"[..], "the cell is not a number"),
            (20_000, b"NaN", "not a finite number"),
            (18_000, b"1\xff", "not UTF-8 text"),
        ] {
            std::fs::write(&csv, lines(Some((at, cell)))).expect("w");
            for chunk in [64, 5000, 1 << 20] {
                let mut r = SeriesReader::open(&csv, "value", 4.0, chunk).expect("open");
                let mut buf = Vec::new();
                let mut read = 0;
                let e = loop {
                    match r.next_chunk(&mut buf) {
                        Ok(true) => read += buf.len(),
                        Ok(false) => panic!("the bad cell at {at} was not found"),
                        Err(e) => break e.to_string(),
                    }
                };
                assert!(e.contains(says), "{e}");
                assert!(e.contains(&format!("row {at}")), "chunks of {chunk}: {e}");
                assert!(read <= at && at - read < chunk, "{read} rows before {at}");
            }
        }
    }

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
                None,
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
                let want = series::encode_columns(&target, &names, &cols, None).expect("enc");
                assert_eq!(std::fs::read(&staged).expect("read"), want);
            } else {
                let back = crate::columns::read_numeric(&staged, "b").expect("read");
                assert_eq!(back, cols[1]);
            }
        }
    }

    /// The Parquet output reads back bit for bit (every f64 pattern, the steps), in the
    /// encodings chosen for it: the steps as deltas, the estimates' bytes split, no
    /// dictionary.
    #[test]
    fn parquet_output_reads_back_exactly_in_its_encodings() {
        use arrow::array::{Array, Float64Array, UInt64Array};
        use parquet::basic::Encoding;
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("o.parquet");
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        let mut a: Vec<f64> = (0..70_000).map(|_| f64::from_bits(next())).collect();
        a[..6].copy_from_slice(&[0.0, -0.0, 5e-324, f64::MAX, -1.5, 1e300]);
        let a: Vec<f64> = a
            .into_iter()
            .map(|x| if x.is_finite() { x } else { 2.5 })
            .collect();
        let b: Vec<f64> = (0..70_000).map(|i| f64::from(i % 5) / 8.0).collect();
        let names = vec!["estimate".to_string(), "window_60".to_string()];
        let mut w = SeriesWriter::create(&target, &target, &names).expect("create");
        for (x, y) in a.chunks(30_000).zip(b.chunks(30_000)) {
            w.write(&[x.to_vec(), y.to_vec()]).expect("write");
        }
        assert_eq!(w.finish().expect("finish"), 70_000);
        let file = std::fs::File::open(&target).expect("open");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .expect("parquet")
            .build()
            .expect("reader");
        let (mut steps, mut got) = (Vec::new(), [Vec::new(), Vec::new()]);
        for batch in reader {
            let batch = batch.expect("batch");
            let s = batch.column(0).as_any().downcast_ref::<UInt64Array>();
            steps.extend(s.expect("u64 steps").values().iter().copied());
            for (c, g) in got.iter_mut().enumerate() {
                let v = batch.column(c + 1).as_any().downcast_ref::<Float64Array>();
                g.extend(v.expect("f64").values().iter().map(|x| x.to_bits()));
            }
        }
        assert_eq!(steps, (0..70_000).collect::<Vec<u64>>());
        assert_eq!(got[0], a.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        assert_eq!(got[1], b.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        let meta = SerializedFileReader::new(std::fs::File::open(&target).expect("open"))
            .expect("meta")
            .metadata()
            .clone();
        for rg in meta.row_groups() {
            for (i, col) in rg.columns().iter().enumerate() {
                let enc: Vec<Encoding> = col.encodings().collect();
                let want = if i == 0 {
                    Encoding::DELTA_BINARY_PACKED
                } else {
                    Encoding::BYTE_STREAM_SPLIT
                };
                assert!(enc.contains(&want), "column {i}: {:?}", enc);
                assert!(
                    !enc.contains(&Encoding::RLE_DICTIONARY)
                        && col.dictionary_page_offset().is_none(),
                    "column {i}: a dictionary"
                );
            }
        }
    }

    /// A series CSV with a quoted text column (a comma and a line end inside a cell, as
    /// pandas writes them) reads the same values whether the quote comes at once or after
    /// thousands of plain lines, in any chunk, as the whole-column reader reads them; a bad
    /// cell after the switch is named at its row.
    #[test]
    fn quoted_cells_switch_the_stream_to_records_without_losing_a_row() {
        let dir = tempfile::tempdir().expect("tmp");
        let csv = dir.path().join("q.csv");
        for plain in [0usize, 3, 5000] {
            let mut text = String::from("\u{feff}\"note\",\"value\"\r\n");
            let mut want = Vec::new();
            for i in 0..plain {
                text.push_str(&format!("n{i},{}\r\n", i % 4));
                want.push((i % 4) as f64);
            }
            for i in 0..300 {
                text.push_str(&format!("\"a, \"\"b\"\"\nc {i}\",{}\n", i % 3));
                want.push((i % 3) as f64);
            }
            std::fs::write(&csv, &text).expect("w");
            assert_eq!(
                series::load(&csv, "value", 4.0).expect("whole").values,
                want
            );
            for chunk in [1, 7, 64, 1 << 16] {
                let mut r = SeriesReader::open(&csv, "value", 4.0, chunk).expect("open");
                let (mut got, mut buf) = (Vec::new(), Vec::new());
                while r.next_chunk(&mut buf).expect("chunk") {
                    got.extend_from_slice(&buf);
                }
                assert_eq!(got, want, "plain {plain}, chunk {chunk}");
            }
            let bad = format!("{text}\"x\",oops\n");
            std::fs::write(&csv, bad).expect("w");
            let mut r = SeriesReader::open(&csv, "value", 4.0, 100).expect("open");
            let mut buf = Vec::new();
            let e = loop {
                match r.next_chunk(&mut buf) {
                    Ok(true) => {}
                    Ok(false) => panic!("the bad row was read"),
                    Err(e) => break e,
                }
            };
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("row {}", want.len())) && msg.contains("not a number"),
                "{msg}"
            );
        }
    }
}

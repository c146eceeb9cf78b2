//! Several columns of a CSV or Parquet input read a block of rows at a time, so that a
//! release that counts or sums (a histogram, a count) holds one block, not the columns,
//! whatever the input's length. The cells and the errors are those of the whole-column
//! readers ([`read_numeric`](crate::columns::read_numeric),
//! [`read_categorical`](crate::columns::read_categorical),
//! [`count_rows`](crate::columns::count_rows)): the same parsing, and the row named in an
//! error counts the non-empty data lines of a CSV or the rows of the Parquet file from 0.
//! Where a block holds two bad cells, the first row is named.
//!
//! A Parquet input may be a directory of `*.parquet` files, read in name order; an error
//! names the file and its row there.

use crate::columns::{categories_of, is_parquet, non_finite};
use crate::csv_file::{CsvFile, QuotedRest, column_index, header_of_line, ragged};
use crate::parquet_io::{as_f64, parquet_error, parquet_files};
use crate::stream::{next_line, not_utf8};
use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use kinsey_core::{Error, Result};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use rayon::prelude::*;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// Rows per block when the caller has no reason to choose: 64Ki rows of a few columns is a
/// few MiB, and large enough that the per-block work is negligible.
pub const DEFAULT_BLOCK_ROWS: usize = 1 << 16;

/// How one column's cells are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// As f64: a cell that is not a finite number is an error at its row.
    Numeric,
    /// As category labels: text as is, integers and booleans in decimal; floats refused.
    Categorical,
    /// Only counted: the column must exist, and a cell that reads as NaN or infinity is an
    /// error at its row whatever the column's type (as [`count_rows`](crate::columns::count_rows)).
    Count,
}

/// One column's cells of one block.
#[derive(Debug, Clone, PartialEq)]
pub enum Cells {
    /// [`Want::Numeric`].
    Numeric(Vec<f64>),
    /// [`Want::Categorical`].
    Categorical(Vec<String>),
    /// [`Want::Count`]: how many rows the block holds.
    Rows(usize),
}

impl Cells {
    /// Rows in the block.
    pub fn len(&self) -> usize {
        match self {
            Cells::Numeric(v) => v.len(),
            Cells::Categorical(v) => v.len(),
            Cells::Rows(n) => *n,
        }
    }

    /// Whether the block is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The numeric cells (a caller asked for [`Want::Numeric`]).
    pub fn numeric(&self) -> Result<&[f64]> {
        match self {
            Cells::Numeric(v) => Ok(v),
            _ => Err(Error::Numerical("block: not a numeric column".into())),
        }
    }

    /// The category labels (a caller asked for [`Want::Categorical`]).
    pub fn categorical(&self) -> Result<&[String]> {
        match self {
            Cells::Categorical(v) => Ok(v),
            _ => Err(Error::Numerical("block: not a categorical column".into())),
        }
    }
}

/// The cells of `columns` in one record batch whose first row is `row0` (`path` names the
/// source in errors): what a Parquet file's and an in-memory table's blocks share.
pub(crate) fn cells_of_batch(
    path: &Path,
    batch: &RecordBatch,
    columns: &[(&str, Want)],
    row0: usize,
) -> Result<Vec<Cells>> {
    columns
        .iter()
        .map(|&(name, want)| {
            let a = batch
                .column_by_name(name)
                .ok_or_else(|| missing(path, name))?;
            cells_of_array(path, name, a, want, row0)
        })
        .collect()
}

fn missing(path: &Path, name: &str) -> Error {
    Error::Schema {
        path: path.to_path_buf(),
        column: name.to_string(),
        msg: "column not found".into(),
    }
}

/// Whether a column of type `dt` is read as categories for a count (else as numbers).
fn counts_as_categories(dt: &DataType) -> bool {
    match dt {
        DataType::Dictionary(_, v) => counts_as_categories(v),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Boolean => true,
        t => t.is_integer(),
    }
}

fn cells_of_array(path: &Path, name: &str, a: &ArrayRef, want: Want, row0: usize) -> Result<Cells> {
    match want {
        Want::Numeric => {
            let dt = a.data_type();
            if !crate::parquet_io::is_numeric(dt) {
                return Err(Error::Schema {
                    path: path.to_path_buf(),
                    column: name.to_string(),
                    msg: format!("type {dt}, expected a numeric type"),
                });
            }
            Ok(Cells::Numeric(as_f64(a, path, name, row0)?))
        }
        Want::Categorical => Ok(Cells::Categorical(categories_of(
            path,
            name,
            a.data_type(),
            std::slice::from_ref(a),
            row0,
        )?)),
        Want::Count if counts_as_categories(a.data_type()) => {
            let cells = categories_of(path, name, a.data_type(), std::slice::from_ref(a), row0)?;
            match cells
                .iter()
                .position(|c| c.parse::<f64>().is_ok_and(|x| !x.is_finite()))
            {
                Some(i) => Err(non_finite(path, name, row0 + i)),
                None => Ok(Cells::Rows(cells.len())),
            }
        }
        Want::Count => {
            cells_of_array(path, name, a, Want::Numeric, row0).map(|c| Cells::Rows(c.len()))
        }
    }
}

/// Where the rows come from.
enum Source {
    /// A CSV file's lines, split on commas (exact while no line holds a double quote),
    /// the cells parsed in parallel.
    Csv {
        lines: BufReader<File>,
        /// Each wanted column's index in the header.
        idx: Vec<usize>,
        /// The header's names.
        header: Vec<String>,
        /// The block's lines, back to back, and where each ends.
        text: String,
        ends: Vec<usize>,
        line: Vec<u8>,
    },
    /// A CSV file from its first line with a double quote: CSV records (quoted cells may
    /// hold commas and line ends).
    Quoted {
        file: Box<CsvFile<QuotedRest>>,
        idx: Vec<usize>,
        /// The block's rows (reused).
        recs: Vec<csv::StringRecord>,
    },
    /// Between the two (never seen by a caller).
    Switching,
    Parquet {
        /// The files not opened yet, last first.
        rest: Vec<PathBuf>,
        /// The file being read, its reader and its rows read so far.
        current: Option<(PathBuf, ParquetRecordBatchReader, usize)>,
    },
}

/// The wanted columns of a CSV or Parquet input, a block of rows at a time.
pub struct ColumnBlocks {
    path: PathBuf,
    columns: Vec<(String, Want)>,
    block_rows: usize,
    src: Source,
    /// CSV rows read so far.
    row: usize,
}

impl std::fmt::Debug for ColumnBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ColumnBlocks({}, row {})", self.path.display(), self.row)
    }
}

impl ColumnBlocks {
    /// Opens `path` (CSV with a header, or a Parquet file or directory) and finds every
    /// column of `columns` (a missing one is an error listing those there are).
    pub fn open(path: &Path, columns: &[(&str, Want)], block_rows: usize) -> Result<Self> {
        if block_rows == 0 {
            return Err(Error::param("block rows", "must be at least 1"));
        }
        let src = if is_parquet(path) {
            let mut rest = parquet_files(path)?;
            rest.reverse();
            Source::Parquet {
                rest,
                current: None,
            }
        } else {
            let file = File::open(path).map_err(|e| Error::io(path, e))?;
            let mut lines = BufReader::with_capacity(1 << 20, file);
            let mut line = Vec::new();
            // The header as CSV: quoted names, a byte-order mark.
            let header = if next_line(&mut lines, &mut line).map_err(|e| Error::io(path, e))? {
                header_of_line(path, &line)?
            } else {
                return Err(Error::format(path, "empty file: expected a header line"));
            };
            let idx = columns
                .iter()
                .map(|(c, _)| column_index(path, &header, c))
                .collect::<Result<Vec<_>>>()?;
            Source::Csv {
                lines,
                idx,
                header,
                text: String::new(),
                ends: Vec::new(),
                line,
            }
        };
        let me = Self {
            path: path.to_path_buf(),
            columns: columns.iter().map(|&(c, w)| (c.to_string(), w)).collect(),
            block_rows,
            src,
            row: 0,
        };
        // Every file's columns are checked before the first block is read.
        if let Source::Parquet { rest, .. } = &me.src {
            for f in rest.iter().rev() {
                parquet_reader(f, columns, block_rows)?;
            }
        }
        Ok(me)
    }

    /// The next block's cells, one entry per wanted column in order; `None` at the end.
    pub fn next_block(&mut self) -> Result<Option<Vec<Cells>>> {
        let wanted: Vec<(&str, Want)> =
            self.columns.iter().map(|(c, w)| (c.as_str(), *w)).collect();
        let Source::Parquet { rest, current } = &mut self.src else {
            return next_csv_block(
                &self.path,
                &mut self.src,
                &wanted,
                self.block_rows,
                &mut self.row,
            );
        };
        loop {
            let (file, reader, rows) = match current {
                Some(c) => c,
                None => {
                    let Some(f) = rest.pop() else { return Ok(None) };
                    let r = parquet_reader(&f, &wanted, self.block_rows)?;
                    current.insert((f, r, 0))
                }
            };
            match reader.next() {
                None => *current = None,
                Some(batch) => {
                    let batch = batch.map_err(|source| Error::Arrow {
                        path: file.clone(),
                        source: Box::new(source),
                    })?;
                    let cells = cells_of_batch(file, &batch, &wanted, *rows)?;
                    *rows += batch.num_rows();
                    return Ok(Some(cells));
                }
            }
        }
    }
}

/// A reader of `file`'s `columns`, `block_rows` rows at a time.
fn parquet_reader(
    file: &Path,
    columns: &[(&str, Want)],
    block_rows: usize,
) -> Result<ParquetRecordBatchReader> {
    let pq = |source| parquet_error(file, source);
    let f = File::open(file).map_err(|e| Error::io(file, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).map_err(pq)?;
    let schema = builder.schema().clone();
    let idx = columns
        .iter()
        .map(|(c, _)| crate::parquet_io::column_index(file, &schema, c))
        .collect::<Result<Vec<_>>>()?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), idx);
    builder
        .with_projection(mask)
        .with_batch_size(block_rows)
        .build()
        .map_err(pq)
}

/// The next block of a CSV source; `row` counts the rows read so far.
fn next_csv_block(
    path: &Path,
    src: &mut Source,
    wanted: &[(&str, Want)],
    block_rows: usize,
    row: &mut usize,
) -> Result<Option<Vec<Cells>>> {
    // Errors about a row as a whole (its number of cells) name the first wanted column.
    let first = wanted.first().map_or("", |w| w.0);
    let quote_at = match src {
        Source::Csv {
            lines,
            header,
            text,
            ends,
            line,
            ..
        } => {
            text.clear();
            ends.clear();
            let mut quote = false;
            while ends.len() < block_rows
                && next_line(lines, line).map_err(|e| Error::io(path, e))?
            {
                if memchr::memchr(b'"', line).is_some() {
                    quote = true;
                    break;
                }
                let l = std::str::from_utf8(line).map_err(|e| not_utf8(path, e))?;
                if l.trim().is_empty() {
                    continue;
                }
                let n = memchr::memchr_iter(b',', line).count() + 1;
                if n != header.len() {
                    let at = *row + ends.len();
                    return Err(ragged(path, first, at, (n, header.len()), false));
                }
                text.push_str(l);
                ends.push(text.len());
            }
            quote
        }
        Source::Quoted { file, recs, .. } => {
            let mut n = 0;
            while n < block_rows {
                if n == recs.len() {
                    recs.push(csv::StringRecord::new());
                }
                if !file.read(&mut recs[n], first)? {
                    break;
                }
                n += 1;
            }
            if n == 0 {
                return Ok(None);
            }
            let Source::Quoted { idx, recs, .. } = &*src else {
                return Ok(None);
            };
            let row0 = *row;
            *row += n;
            let cells = wanted
                .iter()
                .zip(idx.iter())
                .map(|(&(name, want), &j)| {
                    let cell = |i: usize| recs[i][j].trim();
                    csv_block(path, name, want, n, row0, &cell)
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok(Some(cells));
        }
        _ => return Ok(None),
    };
    let Source::Csv {
        idx, text, ends, ..
    } = &*src
    else {
        return Ok(None);
    };
    let block = if ends.is_empty() {
        None
    } else {
        let row0 = *row;
        *row += ends.len();
        let (text, ends) = (&**text, &**ends);
        let line_at = |i: usize| &text[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
        let cells = wanted
            .iter()
            .zip(idx.iter())
            .map(|(&(name, want), &j)| {
                let cell = |i: usize| {
                    line_at(i)
                        .split(',')
                        .nth(j)
                        .map(str::trim)
                        .unwrap_or_default()
                };
                csv_block(path, name, want, ends.len(), row0, &cell)
            })
            .collect::<Result<Vec<_>>>()?;
        Some(cells)
    };
    if quote_at {
        // From the line with the quote on, the file is read as CSV records.
        if let Source::Csv {
            lines,
            idx,
            header,
            line,
            ..
        } = std::mem::replace(src, Source::Switching)
        {
            let mut pending = line;
            pending.push(b'\n');
            *src = Source::Quoted {
                file: Box::new(CsvFile::from_line(path, pending, lines, header, *row)),
                idx,
                recs: Vec::new(),
            };
        }
        if block.is_none() {
            return next_csv_block(path, src, wanted, block_rows, row);
        }
    }
    Ok(block)
}

/// One column of a CSV block of `n` lines from row `row0`, parsed in parallel; the first
/// bad row is the one named.
fn csv_block<'a>(
    path: &Path,
    name: &str,
    want: Want,
    n: usize,
    row0: usize,
    cell: &(dyn Fn(usize) -> &'a str + Sync),
) -> Result<Cells> {
    let bad = |i: usize, msg: &str| Error::Value {
        path: path.to_path_buf(),
        column: name.to_string(),
        row: row0 + i,
        msg: msg.to_string(),
    };
    match want {
        Want::Categorical => Ok(Cells::Categorical(
            (0..n).map(|i| cell(i).to_string()).collect(),
        )),
        Want::Count => match (0..n)
            .into_par_iter()
            .find_first(|&i| cell(i).parse::<f64>().is_ok_and(|x| !x.is_finite()))
        {
            Some(i) => Err(non_finite(path, name, row0 + i)),
            None => Ok(Cells::Rows(n)),
        },
        Want::Numeric => {
            let v: Vec<Option<f64>> = (0..n)
                .into_par_iter()
                .map(|i| cell(i).parse::<f64>().ok())
                .collect();
            let mut out = Vec::with_capacity(n);
            for (i, x) in v.into_iter().enumerate() {
                match x {
                    None => return Err(bad(i, "the cell is not a number")),
                    Some(x) if !x.is_finite() => return Err(non_finite(path, name, row0 + i)),
                    Some(x) => out.push(x),
                }
            }
            Ok(Cells::Numeric(out))
        }
    }
}

/// Every block of `columns` of `path`, in order, to `f`.
pub fn for_each_block(
    path: &Path,
    columns: &[(&str, Want)],
    f: &mut dyn FnMut(&[Cells]) -> Result<()>,
) -> Result<()> {
    let mut blocks = ColumnBlocks::open(path, columns, DEFAULT_BLOCK_ROWS)?;
    while let Some(cells) = blocks.next_block()? {
        f(&cells)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

//! CSV files with a header, read with the `csv` crate (RFC 4180): quoted cells (commas,
//! quotes and line ends inside them), LF or CRLF line ends, a UTF-8 byte-order mark (as
//! Excel writes), cells and names trimmed, blank lines skipped. Every CSV reader of kinsey
//! reads through here, so a file reads the same whichever command reads it; rows in errors
//! count the data rows from 0.

use kinsey_core::{Error, Result};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The reader's settings: a header, rows of any length (checked here, with the row named).
/// Cells are trimmed where they are read (`csv`'s own trimming rebuilds every record).
fn builder(has_headers: bool) -> csv::ReaderBuilder {
    let mut b = csv::ReaderBuilder::new();
    b.has_headers(has_headers)
        .flexible(true)
        .buffer_capacity(1 << 20);
    b
}

/// The rest of a CSV file from a line's start: the bytes already read from that line on,
/// then the file.
pub(crate) type QuotedRest = std::io::Chain<std::io::Cursor<Vec<u8>>, BufReader<File>>;

/// A CSV file being read a record at a time.
pub(crate) struct CsvFile<R: Read = File> {
    reader: csv::Reader<R>,
    header: Vec<String>,
    path: PathBuf,
    /// Data rows read so far.
    row: usize,
}

impl<R: Read> std::fmt::Debug for CsvFile<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CsvFile({}, row {})", self.path.display(), self.row)
    }
}

impl CsvFile {
    /// Opens `path` and reads its header (an empty file is an error).
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut reader = builder(true).from_reader(file);
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(path, None, 0, e))?
            .iter()
            .map(|n| n.trim().to_string())
            .collect();
        if header.is_empty() {
            return Err(Error::format(path, "empty file: expected a header line"));
        }
        Ok(Self {
            reader,
            header,
            path: path.to_path_buf(),
            row: 0,
        })
    }
}

impl CsvFile<QuotedRest> {
    /// How a reader that split lines on commas continues at its first double quote: as
    /// records from `pending` (the bytes read from that line's start on), then the rest of
    /// `file`; `header` already read, the next data row being `row`.
    pub(crate) fn from_line(
        path: &Path,
        pending: Vec<u8>,
        file: BufReader<File>,
        header: Vec<String>,
        row: usize,
    ) -> Self {
        Self {
            reader: builder(false).from_reader(std::io::Cursor::new(pending).chain(file)),
            header,
            path: path.to_path_buf(),
            row,
        }
    }
}

impl<R: Read> CsvFile<R> {
    /// The column names, trimmed.
    pub(crate) fn header(&self) -> &[String] {
        &self.header
    }

    /// Data rows read so far.
    pub(crate) fn rows(&self) -> usize {
        self.row
    }

    /// The index of `column` in the header.
    pub(crate) fn column_index(&self, column: &str) -> Result<usize> {
        column_index(&self.path, &self.header, column)
    }

    /// The next data row into `rec` (`false` at the end; cells untrimmed: trim what you
    /// read): blank lines are skipped, and a
    /// row whose number of cells is not the header's is an error naming it (an unquoted
    /// comma in a cell, or a cut line). `column` names the column in such errors.
    pub(crate) fn read(&mut self, rec: &mut csv::StringRecord, column: &str) -> Result<bool> {
        loop {
            let more = self
                .reader
                .read_record(rec)
                .map_err(|e| csv_error(&self.path, Some(column), self.row, e))?;
            if !more {
                return Ok(false);
            }
            if rec.len() == 1 && rec[0].trim().is_empty() {
                // A blank line (in a one-column file, a row without a value): skipped.
                continue;
            }
            if rec.len() != self.header.len() {
                let open_quote = rec.iter().any(|c| c.contains('\n'));
                let (n, want) = (rec.len(), self.header.len());
                return Err(ragged(&self.path, column, self.row, (n, want), open_quote));
            }
            self.row += 1;
            return Ok(true);
        }
    }
}

/// The error for a row of `got.0` cells where the header has `got.1`: a cell with a comma
/// and no quotes, or (`open_quote`) a double quote left open.
pub(crate) fn ragged(
    path: &Path,
    column: &str,
    row: usize,
    (n, want): (usize, usize),
    open_quote: bool,
) -> Error {
    let cells = |n: usize| format!("{n} cell{}", if n == 1 { "" } else { "s" });
    let msg = if open_quote {
        format!(
            "a double quote opened in this row is not closed where the row should end: the \
             row reads as {} where the header has {}",
            cells(n),
            cells(want)
        )
    } else {
        format!(
            "the row has {} but the header {} (a comma inside a cell needs the cell in \
             double quotes)",
            cells(n),
            cells(want)
        )
    };
    Error::Value {
        path: path.to_path_buf(),
        column: column.to_string(),
        row,
        msg,
    }
}

/// The names of a CSV header line given as bytes (a UTF-8 byte-order mark and the line
/// end already removed or not), parsed as CSV: quoted names, trimmed.
pub(crate) fn header_of_line(path: &Path, line: &[u8]) -> Result<Vec<String>> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let mut r = builder(false).from_reader(line);
    let mut rec = csv::StringRecord::new();
    let got = r
        .read_record(&mut rec)
        .map_err(|e| csv_error(path, None, 0, e))?;
    if !got || (rec.len() == 1 && rec[0].trim().is_empty()) {
        return Err(Error::format(path, "empty file: expected a header line"));
    }
    Ok(rec.iter().map(|n| n.trim().to_string()).collect())
}

/// Whether a line reads as LIBSVM: a number, then at least one `index:value` pair.
pub(crate) fn looks_like_libsvm(line: &str) -> bool {
    let mut parts = line.split_ascii_whitespace();
    parts.next().is_some_and(|l| l.parse::<f64>().is_ok())
        && parts.clone().next().is_some()
        && parts.all(|t| {
            t.split_once(':')
                .is_some_and(|(i, v)| i.parse::<usize>().is_ok() && v.parse::<f64>().is_ok())
        })
}

/// The index of `column` among `names` (a CSV header), or an error listing the names, or
/// saying the file looks separated by something other than commas.
pub(crate) fn column_index(path: &Path, names: &[String], column: &str) -> Result<usize> {
    names.iter().position(|n| n == column).ok_or_else(|| {
        // One "column" holding another separator: say so, rather than list one long name.
        let sep = [';', '\t', '|']
            .into_iter()
            .find(|&c| names.len() == 1 && names[0].contains(c));
        // A LIBSVM line read as a header: "+1 1:0.5 3:1" is one "column".
        let libsvm = names.len() == 1 && looks_like_libsvm(&names[0]);
        let msg = match sep {
            // The line is a data row: named for its form, never echoed.
            _ if libsvm => format!(
                "column not found: the first line looks like LIBSVM text (label then \
                 index:value pairs), not CSV: convert it with `kinsey convert --libsvm {} \
                 --dim D --out FILE.parquet`",
                path.display()
            ),
            Some(c) => format!(
                "column not found: the header has one column, '{}', and looks separated by \
                 {:?}; kinsey reads comma-separated CSV (convert the file, e.g. with `tr '{}' \
                 ','`)",
                names[0],
                c,
                c.escape_default()
            ),
            None => format!("column not found; the columns are: {}", names.join(", ")),
        };
        Error::Schema {
            path: path.to_path_buf(),
            column: column.to_string(),
            msg,
        }
    })
}

/// A `csv` error as kinsey's: I/O as I/O, anything else at its row.
fn csv_error(path: &Path, column: Option<&str>, row: usize, e: csv::Error) -> Error {
    if e.is_io_error() {
        if let csv::ErrorKind::Io(io) = e.into_kind() {
            return Error::io(path, io);
        }
        return Error::format(path, "I/O error");
    }
    let msg = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "the line is not UTF-8 text".to_string(),
        _ => format!("not readable as CSV ({e})"),
    };
    match column {
        Some(c) => Error::Value {
            path: path.to_path_buf(),
            column: c.to_string(),
            row,
            msg,
        },
        None => Error::format(path, format!("the header is {msg}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn rows(p: &Path, column: &str) -> Vec<Vec<String>> {
        let mut f = CsvFile::open(p).expect("open");
        let mut rec = csv::StringRecord::new();
        let mut out = Vec::new();
        while f.read(&mut rec, column).expect("row") {
            out.push(rec.iter().map(|c| c.trim().to_string()).collect());
        }
        out
    }

    /// What pandas, R and Excel write reads as the cells they meant: a quoted cell with a
    /// comma, a quoted header, a byte-order mark, CRLF line ends, blank lines.
    #[test]
    fn quoted_cells_headers_bom_and_crlf_read_as_meant() {
        let dir = tempfile::tempdir().expect("tmp");
        let pandas = file(
            dir.path(),
            "p.csv",
            b"name,age\n\"Smith, J\",41\n\"O\"\"Brien\",7\n",
        );
        assert_eq!(
            rows(&pandas, "age"),
            [["Smith, J", "41"], ["O\"Brien", "7"]]
        );
        let r = file(
            dir.path(),
            "r.csv",
            b"\"name\",\"age\"\r\n\"a\",1\r\n\r\n\"b\",2\r\n",
        );
        let f = CsvFile::open(&r).expect("open");
        assert_eq!(f.header(), ["name", "age"]);
        assert_eq!(f.column_index("age").expect("age"), 1);
        assert_eq!(rows(&r, "age"), [["a", "1"], ["b", "2"]]);
        let excel = file(dir.path(), "e.csv", b"\xEF\xBB\xBFcity,n\nLyon,3\n");
        assert_eq!(CsvFile::open(&excel).expect("open").header(), ["city", "n"]);
        let multi = file(dir.path(), "m.csv", b"note,v\n\"two\nlines\",5\n");
        assert_eq!(rows(&multi, "v"), [["two\nlines", "5"]]);
    }

    /// A row with too many or too few cells is refused at its row, and a semicolon file
    /// is recognised as one.
    #[test]
    fn ragged_rows_and_other_separators_are_named() {
        let dir = tempfile::tempdir().expect("tmp");
        let ragged = file(dir.path(), "r.csv", b"a,b\n1,2\n3,4,5\n");
        let mut f = CsvFile::open(&ragged).expect("open");
        let mut rec = csv::StringRecord::new();
        assert!(f.read(&mut rec, "a").expect("row 0"));
        let e = f.read(&mut rec, "a").expect_err("row 1");
        assert!(
            e.to_string().contains("row 1") && e.to_string().contains("3 cells"),
            "{e}"
        );
        let semi = file(dir.path(), "s.csv", b"a;b\n1;2\n");
        let e = CsvFile::open(&semi)
            .expect("open")
            .column_index("a")
            .expect_err("semicolon");
        assert!(e.to_string().contains("';'"), "{e}");
        let empty = file(dir.path(), "z.csv", b"");
        assert!(
            CsvFile::open(&empty)
                .expect_err("empty")
                .to_string()
                .contains("header")
        );
        assert_eq!(
            header_of_line(&ragged, b"\xEF\xBB\xBF\"x\", y ").expect("line"),
            ["x", "y"]
        );
    }
}

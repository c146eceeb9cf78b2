//! LIBSVM text reader with an explicit dimension.
//!
//! Format: `<label> <index>:<value> ...`, indices 1-based and ascending. The dimension is
//! given, never inferred: a9a has d = 123 but feature 123 never occurs in a9a.t, so an
//! inferred dimension would make train and test disagree.

use super::{Dataset, LabelEncoding, map_label};
use kinsey_core::{Error, Result};
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Read a LIBSVM file into a dense data set of dimension `dim`.
pub fn read_libsvm(path: &Path, dim: usize, labels: LabelEncoding) -> Result<Dataset> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    parse_libsvm(BufReader::new(file), path, dim, labels)
}

/// Parse LIBSVM text from `reader`; `path` names it in errors. The whole file is held
/// dense: the rows read so far are checked against the dense-memory limit line by line.
fn parse_libsvm(
    reader: impl BufRead,
    path: &Path,
    dim: usize,
    labels: LabelEncoding,
) -> Result<Dataset> {
    let mut blocks = LibsvmBlocks::new(reader, path, dim, labels)?;
    blocks.whole = true;
    let mut ds = Dataset {
        x: Vec::new(),
        y: Vec::new(),
        d: dim,
        features: Dataset::default_feature_names(dim),
        source: path.to_path_buf(),
    };
    while let Some(b) = blocks.next_block(BLOCK_ROWS)? {
        ds.x.extend_from_slice(&b.x);
        ds.y.extend_from_slice(&b.y);
    }
    ds.check_nonempty()?;
    Ok(ds)
}

/// Rows a block holds when the whole file is read.
const BLOCK_ROWS: usize = 1 << 16;

/// A LIBSVM file read a block of rows at a time: `kinsey convert` streams a file of any
/// length to Parquet in the memory of one block.
pub struct LibsvmBlocks<R: BufRead> {
    lines: std::io::Lines<R>,
    path: std::path::PathBuf,
    dim: usize,
    labels: LabelEncoding,
    /// Lines read so far.
    lineno: usize,
    /// Every row is kept (check the rows so far against the dense limit), not one block.
    whole: bool,
}

impl<R: BufRead> std::fmt::Debug for LibsvmBlocks<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LibsvmBlocks({}, line {})",
            self.path.display(),
            self.lineno
        )
    }
}

impl LibsvmBlocks<BufReader<std::fs::File>> {
    /// The file at `path`, of dimension `dim`.
    pub fn open(path: &Path, dim: usize, labels: LabelEncoding) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Self::new(BufReader::new(file), path, dim, labels)
    }
}

impl<R: BufRead> LibsvmBlocks<R> {
    /// LIBSVM text from `reader`; `path` names it in errors.
    pub fn new(reader: R, path: &Path, dim: usize, labels: LabelEncoding) -> Result<Self> {
        kinsey_core::limits::check_dim("dim", dim)?;
        Ok(Self {
            lines: reader.lines(),
            path: path.to_path_buf(),
            dim,
            labels,
            lineno: 0,
            whole: false,
        })
    }

    /// The next up to `rows` rows (dense), or `None` at the end of the text.
    pub fn next_block(&mut self, rows: usize) -> Result<Option<Dataset>> {
        let (path, dim) = (self.path.clone(), self.dim);
        let mut x = Vec::new();
        let mut y = Vec::new();
        while y.len() < rows {
            let Some(line) = self.lines.next() else {
                break;
            };
            let line = line.map_err(|e| self.line_error(e))?;
            let lineno = self.lineno;
            self.lineno += 1;
            // The row index is the line index (blank lines are errors, not skipped).
            let counted = if self.whole { lineno + 1 } else { y.len() + 1 };
            kinsey_core::limits::check_dense(
                &format!("{} line {} (--dim {dim})", path.display(), lineno + 1),
                counted,
                dim,
            )?;
            y.push(self.row(&line, lineno, &mut x)?);
        }
        if y.is_empty() {
            return Ok(None);
        }
        Ok(Some(Dataset {
            x,
            y,
            d: dim,
            features: Dataset::default_feature_names(dim),
            source: path,
        }))
    }

    /// A line that could not be read: text that is not UTF-8 (a binary file given as
    /// LIBSVM) names its line; any other read error is the file's.
    fn line_error(&self, e: std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::InvalidData {
            Error::format(
                &self.path,
                format!(
                    "line {}: not UTF-8 text; a LIBSVM file is text lines of 'label \
                     index:value ...' (a Parquet or other binary file is not one)",
                    self.lineno + 1
                ),
            )
        } else {
            Error::io(&self.path, e)
        }
    }

    /// One line: its features appended to `x` (dense), its label returned.
    fn row(&self, line: &str, lineno: usize, x: &mut Vec<f32>) -> Result<f32> {
        let start = x.len();
        x.resize(start + self.dim, 0.0f32);
        self.entries(line, lineno, |i, v| x[start + i] = v)
    }

    /// The next line as a sparse row: its non-zero entries' 0-based indices and values
    /// appended (ascending), its label returned; `None` at the end of the text.
    pub fn next_sparse_row(
        &mut self,
        indices: &mut Vec<u32>,
        values: &mut Vec<f32>,
    ) -> Result<Option<f32>> {
        let Some(line) = self.lines.next() else {
            return Ok(None);
        };
        let line = line.map_err(|e| self.line_error(e))?;
        let lineno = self.lineno;
        self.lineno += 1;
        self.entries(&line, lineno, |i, v| {
            if v != 0.0 {
                indices.push(i as u32);
                values.push(v);
            }
        })
        .map(Some)
    }

    /// One line's entries, each handed to `put` (0-based index, value), in order; its
    /// label returned.
    fn entries(&self, line: &str, lineno: usize, mut put: impl FnMut(usize, f32)) -> Result<f32> {
        let (path, dim) = (self.path.as_path(), self.dim);
        let bad = |msg: String| Error::format(path, format!("line {}: {msg}", lineno + 1));
        let mut parts = line.split_ascii_whitespace();
        let label_tok = parts.next().ok_or_else(|| bad("empty line".into()))?;
        let label: f64 = label_tok.parse().map_err(|_| {
            bad(if line.contains(',') {
                "the label is not a number, and the line holds commas: this looks like CSV, \
                 not LIBSVM text (label then index:value pairs); histograms, statistics, \
                 trees, SuLQ and decayed sums read CSV as it is, and the classifier reads it \
                 once written as Parquet (pandas: pd.read_csv(path).to_parquet(out))"
                    .into()
            } else {
                "the label is not a number".into()
            })
        })?;
        let y = map_label(label, self.labels, path, "label", lineno)?;
        let mut last = 0usize;
        for tok in parts {
            let (i, v) = tok
                .split_once(':')
                .ok_or_else(|| bad(format!("an entry after index {last} is not index:value")))?;
            let i: usize = i
                .parse()
                .map_err(|_| bad(format!("an index after {last} is not a positive integer")))?;
            let v: f64 = v
                .parse()
                .map_err(|_| bad(format!("the value at index {i} is not a number")))?;
            if i == 0 || i > dim {
                return Err(bad(format!(
                    "index {i} is outside 1..={dim} (the declared dimension)"
                )));
            }
            if i <= last {
                return Err(bad(format!("indices must ascend ({i} after {last})")));
            }
            // Features are stored as f32: a finite f64 past f32's range would become inf.
            if !v.is_finite() || !(v as f32).is_finite() {
                return Err(bad(format!(
                    "value at index {i} is not a finite 32-bit float (|v| <= 3.4e38)"
                )));
            }
            last = i;
            put(i - 1, v as f32);
        }
        Ok(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a mutated LIBSVM file loads as has the declared shape, finite values and
    /// labels -1/+1.
    #[test]
    fn fuzz_libsvm() {
        let p = Path::new("x.libsvm");
        kinsey_fuzz::fuzz_text(
            "LIBSVM",
            &["+1 1:0.5 3:0.25\n-1 2:1\n", "-1 1:1 2:1 3:1\n+1\n"],
            |t| {
                if let Ok(ds) = parse_libsvm(t.as_bytes(), p, 3, LabelEncoding::PlusMinusOne) {
                    if ds.x.len() != ds.y.len() * 3 || ds.d != 3 {
                        return Err("wrong shape".into());
                    }
                    if ds.x.iter().any(|v| !v.is_finite())
                        || ds.y.iter().any(|&y| y != 1.0 && y != -1.0)
                    {
                        return Err(format!("accepted {:?} / {:?}", ds.x, ds.y));
                    }
                }
                Ok(())
            },
        );
    }

    /// Blocks of any size concatenate to the whole file; errors name the file's line.
    #[test]
    fn blocks_are_the_whole_file() {
        let text = "+1 1:0.5 3:0.25\n-1 2:1\n+1 3:2\n-1\n+1 1:1\n";
        let p = Path::new("x.libsvm");
        let whole =
            parse_libsvm(text.as_bytes(), p, 3, LabelEncoding::PlusMinusOne).expect("whole");
        let mut b =
            LibsvmBlocks::new(text.as_bytes(), p, 3, LabelEncoding::PlusMinusOne).expect("blocks");
        let (mut x, mut y, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
        while let Some(ds) = b.next_block(2).expect("block") {
            sizes.push(ds.n());
            x.extend(ds.x);
            y.extend(ds.y);
        }
        assert_eq!((x, y), (whole.x, whole.y));
        assert_eq!(sizes, [2, 2, 1]);
        let bad = "+1 1:0.5\n-1 2:1\n+1 9:1\n";
        let mut b =
            LibsvmBlocks::new(bad.as_bytes(), p, 3, LabelEncoding::PlusMinusOne).expect("blocks");
        assert!(b.next_block(2).expect("first block").is_some());
        let e = b.next_block(2).expect_err("line 3");
        assert!(
            e.to_string().contains("line 3") && e.to_string().contains("index 9"),
            "{e}"
        );
    }

    fn tmp(content: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("x.libsvm");
        std::fs::write(&p, content).expect("write");
        (dir, p)
    }

    #[test]
    fn parses_with_fixed_dimension() {
        let (_d, p) = tmp("+1 1:1 3:0.5 \n-1 2:1 \n");
        let ds = read_libsvm(&p, 5, LabelEncoding::PlusMinusOne).expect("parse");
        assert_eq!(ds.d, 5);
        assert_eq!(ds.y, vec![1.0, -1.0]);
        assert_eq!(ds.row(0), &[1.0, 0.0, 0.5, 0.0, 0.0]);
    }

    #[test]
    fn errors_name_the_line() {
        for (content, needle) in [
            ("+1 1:1\n-1 9:1\n", "line 2"),
            ("+1 1:x\n", "value at index 1 is not a number"),
            ("+1 3:1 2:1\n", "ascend"),
            ("abc 1:1\n", "the label is not a number"),
            ("+1 1:1\n\n", "empty line"),
            ("", "zero rows"),
            ("+1 1:1 secret\n", "not index:value"),
            ("+1 1:1 s3cr3t:1\n", "not a positive integer"),
            ("7 1:1\n", "the label is not in"),
        ] {
            let (_d, p) = tmp(content);
            let e = read_libsvm(&p, 4, LabelEncoding::PlusMinusOne)
                .expect_err(content)
                .to_string();
            assert!(e.contains(needle), "{content:?}: {e}");
            // Item 7 of the third privacy audit: no cell of the party's data is quoted.
            for cell in ["'x'", "abc", "secret", "s3cr3t", "label 7"] {
                assert!(!e.contains(cell), "{content:?} quotes {cell}: {e}");
            }
        }
    }

    /// The real a9a files: d = 123 fixed, 32,561 / 16,281 rows, norms up to sqrt(14).
    /// Missing data is a failure (not a skip), as CI must see it.
    #[test]
    fn reads_a9a() {
        let (tr, te) = crate::testdata::a9a().expect("a9a in ../shared/data");
        assert_eq!((tr.n(), te.n()), (32_561, 16_281));
        assert_eq!(tr.y.iter().filter(|&&v| v > 0.0).count(), 7_841);
        assert_eq!(te.y.iter().filter(|&&v| v > 0.0).count(), 3_846);
        let max_ones = (0..tr.n())
            .map(|i| tr.row(i).iter().filter(|&&v| v != 0.0).count())
            .max();
        assert_eq!(max_ones, Some(14));
        assert_eq!(tr.x.iter().filter(|&&v| v != 0.0).count(), 451_592);
    }
}

//! Numeric input of the toolbox: named columns of a Parquet or CSV file as a dense row-major
//! `f32` matrix inside a declared box.
//!
//! The SuLQ analyses need every row inside `[0, 1]^d` (k-means, PCA) or `[-1, 1]^d`
//! (perceptron). The box is a *public* declaration: `name:lo:hi` maps `[lo, hi]` onto the
//! target range (data-derived bounds would leak), values outside it are clipped and counted.
//! A column given without bounds must already lie in the range; a value outside it is an
//! error naming the row, unless clipping was asked for.

use crate::LabelEncoding;
use crate::blocks::{Cells, Want};
use crate::memory::ColumnSource;
use kinsey_core::{Error, Result};
use serde::Serialize;
use std::path::PathBuf;

/// One column and its optional public bounds.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ColumnBounds {
    /// The column name.
    pub name: String,
    /// The declared box `[lo, hi]` (`None`: the column must already lie in `[0, 1]`).
    pub bounds: Option<(f64, f64)>,
}

impl std::str::FromStr for ColumnBounds {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let parts: Vec<&str> = s.split(':').collect();
        let bad = |m: &str| Error::param("columns", format!("'{s}': {m} (NAME or NAME:LO:HI)"));
        match parts.as_slice() {
            [name] if !name.is_empty() => Ok(Self {
                name: name.to_string(),
                bounds: None,
            }),
            [name, lo, hi] if !name.is_empty() => {
                let lo: f64 = lo.parse().map_err(|_| bad("LO is not a number"))?;
                let hi: f64 = hi.parse().map_err(|_| bad("HI is not a number"))?;
                if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                    return Err(bad("need finite LO < HI"));
                }
                Ok(Self {
                    name: name.to_string(),
                    bounds: Some((lo, hi)),
                })
            }
            _ => Err(bad("malformed")),
        }
    }
}

/// The target box of the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Range {
    /// `[0, 1]`.
    Unit,
    /// `[-1, 1]`.
    Signed,
}

impl Range {
    fn lo(self) -> f64 {
        match self {
            Range::Unit => 0.0,
            Range::Signed => -1.0,
        }
    }
    fn describe(self) -> &'static str {
        match self {
            Range::Unit => "[0, 1]",
            Range::Signed => "[-1, 1]",
        }
    }
}

/// A dense row-major matrix in the declared box.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// Row-major values in `[0, 1]`.
    pub x: Vec<f32>,
    /// Rows.
    pub n: usize,
    /// Columns.
    pub d: usize,
    /// Column names.
    pub names: Vec<String>,
    /// Per column: values clipped into the box.
    pub clipped: Vec<usize>,
    /// The file the rows came from.
    pub source: PathBuf,
}

/// A matrix's shape, names and clipping counts, without its rows (a matrix read in
/// blocks: [`for_each_matrix_block`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixShape {
    /// Rows.
    pub n: usize,
    /// Columns.
    pub d: usize,
    /// Column names.
    pub names: Vec<String>,
    /// Per column: values clipped into the box.
    pub clipped: Vec<usize>,
    /// The file the rows came from.
    pub source: PathBuf,
}

impl Matrix {
    /// Its shape, names and clipping counts.
    pub fn shape(&self) -> MatrixShape {
        MatrixShape {
            n: self.n,
            d: self.d,
            names: self.names.clone(),
            clipped: self.clipped.clone(),
            source: self.source.clone(),
        }
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// Build from columns already in the box (tests, synthetic data).
    pub fn from_rows(x: Vec<f32>, d: usize, source: &str) -> Result<Self> {
        if d == 0 || !x.len().is_multiple_of(d) {
            return Err(Error::param("matrix", "values are not whole rows"));
        }
        Ok(Self {
            n: x.len() / d,
            d,
            names: (1..=d).map(|j| format!("x{j}")).collect(),
            clipped: vec![0; d],
            x,
            source: PathBuf::from(source),
        })
    }
}

/// Read `columns` (all numeric columns but `exclude` when empty) into the box `range`.
pub fn read_matrix<S: ColumnSource + ?Sized>(
    input: &S,
    columns: &[ColumnBounds],
    exclude: &[&str],
    range: Range,
    clip: bool,
) -> Result<Matrix> {
    let path = input.name();
    let cols = matrix_columns(input, columns, exclude)?;
    let d = cols.len();
    let mut x: Vec<f32> = Vec::new();
    let mut n = 0;
    let mut clipped = vec![0usize; d];
    for (j, c) in cols.iter().enumerate() {
        let v = input.numeric(&c.name)?;
        if j == 0 {
            // Zero rows is a data set like any other: under unbounded neighbours n is private,
            // so only the mechanism may refuse it, and only where n is public.
            n = v.len();
            x = vec![0.0; n * d];
        } else if v.len() != n {
            return Err(Error::Schema {
                path: path.to_path_buf(),
                column: c.name.clone(),
                msg: "its row count differs from the first column's".into(),
            });
        }
        for (i, &raw) in v.iter().enumerate() {
            let val = place(c, raw, (range, clip), path, i, &mut clipped[j])?;
            x[i * d + j] = val;
        }
    }
    Ok(Matrix {
        x,
        n,
        d,
        names: cols.into_iter().map(|c| c.name).collect(),
        clipped,
        source: path.to_path_buf(),
    })
}

/// The columns [`read_matrix`] reads: `columns`, or every numeric column but `exclude`
/// when empty (an error when that leaves none).
pub fn matrix_columns<S: ColumnSource + ?Sized>(
    input: &S,
    columns: &[ColumnBounds],
    exclude: &[&str],
) -> Result<Vec<ColumnBounds>> {
    let cols: Vec<ColumnBounds> = if columns.is_empty() {
        input
            .numeric_columns()?
            .into_iter()
            .filter(|c| !exclude.contains(&c.as_str()))
            .map(|name| ColumnBounds { name, bounds: None })
            .collect()
    } else {
        columns.to_vec()
    };
    if cols.is_empty() {
        return Err(Error::format(input.name(), "no feature columns to read"));
    }
    Ok(cols)
}

/// One cell of column `c` (row `row`) in the box: mapped by the declared bounds, clipped
/// (and counted) where bounds or clipping are declared, else an error outside the box.
fn place(
    c: &ColumnBounds,
    raw: f64,
    (range, clip): (Range, bool),
    path: &std::path::Path,
    row: usize,
    clipped: &mut usize,
) -> Result<f32> {
    let (lo_t, width_t) = (range.lo(), 1.0 - range.lo());
    let mapped = match c.bounds {
        Some((lo, hi)) => lo_t + width_t * (raw - lo) / (hi - lo),
        None => raw,
    };
    if (lo_t..=1.0).contains(&mapped) {
        Ok(mapped as f32)
    } else if clip || c.bounds.is_some() {
        *clipped += 1;
        Ok(mapped.clamp(lo_t, 1.0) as f32)
    } else {
        Err(Error::Value {
            path: path.to_path_buf(),
            column: c.name.clone(),
            row,
            msg: format!(
                "the value is outside {}; declare public bounds as {}:LO:HI or ask for \
                 clipping",
                range.describe(),
                c.name
            ),
        })
    }
}

/// Rows per block of [`for_each_matrix_block`] (the last may be shorter): a multiple of the
/// kernels' 4,096-row reduction blocks, so sums over the blocks in order are those over
/// the whole matrix, bit for bit.
pub const MATRIX_BLOCK_ROWS: usize = 1 << 16;

/// The rows [`read_matrix`] reads, [`MATRIX_BLOCK_ROWS`] at a time, whatever blocks the
/// input gives: `f(first row, row-major rows)`. The cells, their mapping, clipping and
/// errors are [`read_matrix`]'s (where several cells are bad, the first in row order is
/// named); one block of rows is held at a time. Returns the shape.
pub fn for_each_matrix_block<S: ColumnSource + ?Sized>(
    input: &S,
    columns: &[ColumnBounds],
    exclude: &[&str],
    clip: (Range, bool),
    f: &mut dyn FnMut(usize, &[f32]) -> Result<()>,
) -> Result<MatrixShape> {
    let mut g = |row0: usize, x: &[f32], _: &[f32]| f(row0, x);
    matrix_blocks(input, (columns, exclude), None, clip, &mut g)
}

/// What [`for_each_labelled_block`] hands each block to: `(first row, rows, labels)`.
pub type LabelledBlock<'a> = dyn FnMut(usize, &[f32], &[f32]) -> Result<()> + 'a;

/// [`for_each_matrix_block`] with each row's label from column `label` (not a feature; its
/// values read as `labels` says, a bad one an error naming its row): `f(first row,
/// row-major rows, labels in {-1, +1})`.
pub fn for_each_labelled_block<S: ColumnSource + ?Sized>(
    input: &S,
    columns: &[ColumnBounds],
    (label, labels): (&str, LabelEncoding),
    clip: (Range, bool),
    f: &mut LabelledBlock<'_>,
) -> Result<MatrixShape> {
    matrix_blocks(input, (columns, &[label]), Some((label, labels)), clip, f)
}

fn matrix_blocks<S: ColumnSource + ?Sized>(
    input: &S,
    (columns, exclude): (&[ColumnBounds], &[&str]),
    label: Option<(&str, LabelEncoding)>,
    (range, clip): (Range, bool),
    f: &mut LabelledBlock<'_>,
) -> Result<MatrixShape> {
    let path = input.name();
    let cols = matrix_columns(input, columns, exclude)?;
    let d = cols.len();
    let want: Vec<(&str, Want)> = cols
        .iter()
        .map(|c| c.name.as_str())
        .chain(label.map(|l| l.0))
        .map(|name| (name, Want::Numeric))
        .collect();
    let mut clipped = vec![0usize; d];
    let mut buf: Vec<f32> = Vec::with_capacity(MATRIX_BLOCK_ROWS * d);
    let mut ybuf: Vec<f32> = Vec::new();
    let (mut n, mut row0) = (0usize, 0usize);
    input.for_each_block(&want, &mut |cells| {
        let columns: Vec<&[f64]> = cells
            .iter()
            .map(|c| match c {
                Cells::Numeric(v) => Ok(v.as_slice()),
                _ => Err(Error::Numerical(
                    "a numeric column read as another kind".into(),
                )),
            })
            .collect::<Result<_>>()?;
        let rows = columns.first().map_or(0, |c| c.len());
        for i in 0..rows {
            for ((c, column), count) in cols.iter().zip(&columns).zip(clipped.iter_mut()) {
                buf.push(place(c, column[i], (range, clip), path, n + i, count)?);
            }
            if let Some((name, enc)) = label {
                ybuf.push(crate::map_label(columns[d][i], enc, path, name, n + i)?);
            }
            if buf.len() == MATRIX_BLOCK_ROWS * d.max(1) {
                f(row0, &buf, &ybuf)?;
                row0 += MATRIX_BLOCK_ROWS;
                buf.clear();
                ybuf.clear();
            }
        }
        n += rows;
        Ok(())
    })?;
    if !buf.is_empty() {
        f(row0, &buf, &ybuf)?;
    }
    Ok(MatrixShape {
        n,
        d,
        names: cols.into_iter().map(|c| c.name).collect(),
        clipped,
        source: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("t.csv");
        std::fs::write(&p, text).expect("write");
        (dir, p)
    }

    #[test]
    fn bounds_map_and_clip_and_unbounded_values_must_fit() {
        let (_d, p) = csv("a,b,c\n0.5,10,1\n0.25,30,0\n");
        let cols: Vec<ColumnBounds> = ["a", "b:0:20"]
            .iter()
            .map(|s| s.parse().expect("spec"))
            .collect();
        let m = read_matrix(&p, &cols, &[], Range::Unit, false).expect("reads");
        assert_eq!((m.n, m.d), (2, 2));
        assert_eq!(m.x, vec![0.5, 0.5, 0.25, 1.0]);
        assert_eq!(m.clipped, vec![0, 1]);
        let s = read_matrix(&p, &cols, &[], Range::Signed, false).expect("reads");
        assert_eq!(s.row(0), &[0.5, 0.0]);
        // every column but c; b is outside [0, 1] without bounds
        let e = read_matrix(&p, &[], &["c"], Range::Unit, false).expect_err("b=10");
        assert!(
            e.to_string().contains("'b'") && e.to_string().contains("b:LO:HI"),
            "{e}"
        );
        assert!(read_matrix(&p, &[], &["c"], Range::Unit, true).is_ok());
        assert!("x:3:1".parse::<ColumnBounds>().is_err());
        assert!("x:1".parse::<ColumnBounds>().is_err());
    }

    /// Blocks of 65,536 rows, concatenated, are the whole read (values, clipping counts,
    /// names), whatever blocks the file gives; a value outside the box past the first
    /// block is named by its row in the file, as the whole read names it.
    #[test]
    fn blocks_are_the_whole_read() {
        let n = 2 * MATRIX_BLOCK_ROWS + 5;
        let mut text = String::from("a,b,label\n");
        for i in 0..n {
            text.push_str(&format!(
                "{},{},1\n",
                (i % 97) as f64 / 96.0,
                (i % 13) as f64
            ));
        }
        let (_d, p) = csv(&text);
        let cols: Vec<ColumnBounds> = ["a", "b:0:10"]
            .iter()
            .map(|s| s.parse().expect("spec"))
            .collect();
        let whole = read_matrix(&p, &cols, &[], Range::Unit, false).expect("whole");
        let mut x = Vec::new();
        let mut starts = Vec::new();
        let shape = for_each_matrix_block(&p, &cols, &[], (Range::Unit, false), &mut |r0, b| {
            starts.push(r0);
            x.extend_from_slice(b);
            Ok(())
        })
        .expect("blocks");
        assert_eq!(starts, vec![0, MATRIX_BLOCK_ROWS, 2 * MATRIX_BLOCK_ROWS]);
        assert_eq!(x, whole.x);
        assert_eq!(shape, whole.shape());
        assert!(shape.clipped[1] > 0);
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[70_001] = "1.5,3,1".into();
        let (_e, q) = csv(&(lines.join("\n") + "\n"));
        let a = ["a".parse::<ColumnBounds>().expect("spec")];
        let w = read_matrix(&q, &a, &[], Range::Unit, false)
            .expect_err("1.5 is outside [0, 1]")
            .to_string();
        let b = for_each_matrix_block(&q, &a, &[], (Range::Unit, false), &mut |_, _| Ok(()))
            .expect_err("1.5 is outside [0, 1]")
            .to_string();
        assert_eq!(w, b);
        assert!(b.contains("row 70000"), "{b}");
    }
}

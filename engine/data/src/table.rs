//! Numeric input of the toolbox: named columns of a Parquet or CSV file as a dense row-major
//! `f32` matrix inside a declared box.
//!
//! The SuLQ analyses need every row inside `[0, 1]^d` (k-means, PCA) or `[-1, 1]^d`
//! (perceptron). The box is a *public* declaration: `name:lo:hi` maps `[lo, hi]` onto the
//! target range (data-derived bounds would leak), values outside it are clipped and counted.
//! A column given without bounds must already lie in the range; a value outside it is an
//! error naming the row, unless clipping was asked for.

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

impl Matrix {
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
        return Err(Error::format(path, "no feature columns to read"));
    }
    let d = cols.len();
    let mut x: Vec<f32> = Vec::new();
    let mut n = 0;
    let mut clipped = vec![0usize; d];
    let (lo_t, width_t) = (range.lo(), 1.0 - range.lo());
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
            let mapped = match c.bounds {
                Some((lo, hi)) => lo_t + width_t * (raw - lo) / (hi - lo),
                None => raw,
            };
            let inside = (lo_t..=1.0).contains(&mapped);
            let val = if inside {
                mapped
            } else if clip || c.bounds.is_some() {
                clipped[j] += 1;
                mapped.clamp(lo_t, 1.0)
            } else {
                return Err(Error::Value {
                    path: path.to_path_buf(),
                    column: c.name.clone(),
                    row: i,
                    msg: format!(
                        "the value is outside {}; declare public bounds as {}:LO:HI or \
                         ask for clipping",
                        range.describe(),
                        c.name
                    ),
                });
            };
            x[i * d + j] = val as f32;
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
}

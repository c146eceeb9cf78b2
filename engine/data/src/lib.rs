//! Data ingest: a party's data set as a dense row-major `f32` buffer plus labels in {-1, +1}.
//!
//! Sources: Parquet files or directories (arrow-rs, read row group by row group), LIBSVM
//! text with an explicit dimension, and the synthetic planted-logistic generator.
//! Features are held as `f32` (the GPU's type; the solvers accumulate in `f64`).

/// The Arrow crate the readers use (its record batches cross the facade).
pub use arrow;
pub mod attributes;
pub mod batch_decoder;
pub mod blocks;
pub mod columns;
pub(crate) mod csv_file;
pub mod digest;
pub mod ledger;
pub mod libsvm;
pub mod memory;
pub mod output;
pub mod parquet_blocks;
pub mod parquet_io;
pub mod row_groups;
pub mod series;
pub mod sparse;
pub mod sparse_parquet;
pub mod split;
pub mod stream;
pub mod synth;
pub mod table;
#[cfg(any(test, feature = "testing"))]
pub mod testdata;
pub mod time;

use kinsey_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How labels are written in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelEncoding {
    /// Labels are -1 and +1 (a9a's own convention).
    #[default]
    PlusMinusOne,
    /// Labels are 0 and 1, mapped to -1 and +1. Must be declared.
    ZeroOne,
}

/// A dense labelled data set.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Row-major, `n * d`.
    pub x: Vec<f32>,
    /// Labels in {-1, +1}.
    pub y: Vec<f32>,
    /// Columns (features).
    pub d: usize,
    /// Feature names, in column order.
    pub features: Vec<String>,
    /// Where it came from (for error messages and reports).
    pub source: PathBuf,
}

impl Dataset {
    /// Number of rows.
    pub fn n(&self) -> usize {
        self.y.len()
    }

    /// Row i.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// The kernels' borrowed view.
    pub fn rows(&self) -> Result<kinsey_kernels::Rows<'_>> {
        Ok(kinsey_kernels::Rows::new(&self.x, &self.y, self.d)?)
    }

    /// Rows `idx` in that order (used by splits).
    pub fn select(&self, idx: &[usize], source: PathBuf) -> Dataset {
        let mut x = Vec::with_capacity(idx.len() * self.d);
        let mut y = Vec::with_capacity(idx.len());
        for &i in idx {
            x.extend_from_slice(self.row(i));
            y.push(self.y[i]);
        }
        Dataset {
            x,
            y,
            d: self.d,
            features: self.features.clone(),
            source,
        }
    }

    /// Default feature names `f1..fd` (LIBSVM and synthetic data).
    pub fn default_feature_names(d: usize) -> Vec<String> {
        (1..=d).map(|j| format!("f{j}")).collect()
    }

    /// Error unless the data set has at least one row.
    pub fn check_nonempty(&self) -> Result<()> {
        if self.n() == 0 {
            return Err(Error::format(&self.source, "the data set has zero rows"));
        }
        Ok(())
    }

    /// Error unless `other` has exactly the same feature columns in the same order.
    pub fn check_same_features(&self, other: &Dataset) -> Result<()> {
        if self.features != other.features {
            let diff = self
                .features
                .iter()
                .zip(&other.features)
                .position(|(a, b)| a != b)
                .map(|i| {
                    format!(
                        "column {} is '{}' in {} but '{}' in {}",
                        i + 1,
                        self.features[i],
                        self.source.display(),
                        other.features[i],
                        other.source.display()
                    )
                })
                .unwrap_or_else(|| {
                    format!(
                        "{} has {} features, {} has {}",
                        self.source.display(),
                        self.d,
                        other.source.display(),
                        other.d
                    )
                });
            return Err(Error::Schema {
                path: other.source.clone(),
                column: "<features>".into(),
                msg: format!("feature sets differ across parties: {diff}"),
            });
        }
        Ok(())
    }
}

/// Map a raw label to {-1, +1} under the declared encoding.
pub fn map_label(v: f64, enc: LabelEncoding, path: &Path, column: &str, row: usize) -> Result<f32> {
    let ok = match enc {
        LabelEncoding::PlusMinusOne if v == 1.0 || v == -1.0 => Some(v as f32),
        LabelEncoding::ZeroOne if v == 0.0 => Some(-1.0),
        LabelEncoding::ZeroOne if v == 1.0 => Some(1.0),
        _ => None,
    };
    ok.ok_or_else(|| Error::Value {
        path: path.to_path_buf(),
        column: column.to_string(),
        row,
        // The cell itself is private: the message names its row and column, never it.
        msg: match enc {
            LabelEncoding::PlusMinusOne => "the label is not in {-1, +1}; declare labels = \
                \"zero_one\" if the labels are 0/1"
                .to_string(),
            LabelEncoding::ZeroOne => "the label is not in {0, 1}".to_string(),
        },
    })
}

/// A declared per-record transform that brings rows into the unit L2 ball.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "kind", content = "factor")]
pub enum RowTransform {
    /// Rows must already satisfy ||x||_2 <= 1; a row outside is an error.
    #[default]
    None,
    /// Multiply every row by a public constant (e.g. 1/sqrt(14) for a9a).
    Scale(f64),
    /// Rescale each row with norm above 1 to norm 1.
    Clip,
}

/// Rows may exceed norm 1 by this much (f32 rounding of data prepared elsewhere); such rows
/// are projected onto the ball, so every row the solver sees has norm <= 1 exactly, as the
/// sensitivity assumes (the audit found rows of norm 1 + 1e-5 used unchanged).
pub(crate) const UNIT_BALL_TOLERANCE: f64 = 1e-5;

/// The L2 norm of an f32 row, in f64 (as the kernels compute it).
fn row_norm(row: &[f32]) -> f64 {
    row.iter()
        .map(|&v| (v as f64) * (v as f64))
        .sum::<f64>()
        .sqrt()
}

/// Scale `row` onto the unit ball: after f32 rounding its f64 norm is at most 1 exactly.
fn project_into_ball(row: &mut [f32]) {
    let mut norm = row_norm(row);
    while norm > 1.0 {
        let f = (1.0 - 1e-7) / norm;
        for v in row.iter_mut() {
            *v = (*v as f64 * f) as f32;
        }
        norm = row_norm(row);
    }
}

impl RowTransform {
    /// Apply in place and check the unit-ball condition the privacy guarantee needs.
    /// Returns the number of rows the transform changed (clipped rows for `Clip`).
    pub fn apply(&self, data: &mut Dataset) -> Result<usize> {
        use rayon::prelude::*;
        let d = data.d;
        if d == 0 {
            return Ok(0);
        }
        // Blocks of rows side by side; the first bad row (in row order) is the error.
        const ROWS: usize = 4096;
        let source = &data.source;
        let results: Vec<Result<usize>> = data
            .x
            .par_chunks_mut(ROWS * d)
            .enumerate()
            .map(|(b, blk)| {
                self.apply_rows(blk.chunks_exact_mut(d), source)
                    .map_err(|e| offset_row(e, b * ROWS))
            })
            .collect();
        results.into_iter().sum()
    }

    /// [`apply`](Self::apply) to rows given as slices (a dense row, or a sparse row's
    /// non-zero values: they have the row's norm, and scaling or projecting them is
    /// scaling or projecting the row); `source` names the data in errors.
    pub fn apply_rows<'a>(
        &self,
        rows: impl Iterator<Item = &'a mut [f32]>,
        source: &Path,
    ) -> Result<usize> {
        let mut changed = 0;
        if let RowTransform::Scale(c) = *self
            && !(c.is_finite() && c > 0.0)
        {
            return Err(Error::param(
                "row_scale",
                format!("must be finite and > 0, got {c}"),
            ));
        }
        for (i, row) in rows.enumerate() {
            let norm = row_norm(row);
            match *self {
                RowTransform::None => {
                    if norm > 1.0 + UNIT_BALL_TOLERANCE {
                        return Err(Error::Value {
                            path: source.to_path_buf(),
                            column: "<row>".into(),
                            row: i,
                            msg: "the row has L2 norm > 1; the privacy guarantee needs rows \
                                  in the unit ball: declare row_transform = \"scale\" (with \
                                  row_scale) or \"clip\""
                                .into(),
                        });
                    }
                    if norm > 1.0 {
                        project_into_ball(row);
                        changed += 1;
                    }
                }
                RowTransform::Scale(c) => {
                    for v in row.iter_mut() {
                        *v = (*v as f64 * c) as f32;
                    }
                    changed += 1;
                    let norm = row_norm(row);
                    if norm > 1.0 + UNIT_BALL_TOLERANCE {
                        return Err(Error::Value {
                            path: source.to_path_buf(),
                            column: "<row>".into(),
                            row: i,
                            msg: format!(
                                "scaled by {c}, the row has L2 norm > 1 (choose a smaller \
                                 row_scale or use \"clip\")"
                            ),
                        });
                    }
                    project_into_ball(row);
                }
                RowTransform::Clip => {
                    if norm > 1.0 {
                        project_into_ball(row);
                        changed += 1;
                    }
                }
            }
        }
        Ok(changed)
    }
}

/// The name of the constant feature [`append_intercept`] adds (as the release and the model
/// file list it).
pub const INTERCEPT_FEATURE: &str = "(intercept)";

/// Check a declared intercept constant `c` (`param` names it in the error): finite, in
/// (0, 1).
pub fn check_intercept(param: &str, c: f64) -> Result<()> {
    if c.is_finite() && c > 0.0 && c < 1.0 {
        Ok(())
    } else {
        Err(Error::param(
            param,
            format!(
                "the intercept's constant feature must be in (0, 1), got {c}; 0.5 gives rows (0.866 x, 0.5)"
            ),
        ))
    }
}

/// A row error numbered `offset` rows later (a block's error, in its data set).
pub fn offset_row(e: Error, offset: usize) -> Error {
    match e {
        Error::Value {
            path,
            column,
            row,
            msg,
        } => Error::Value {
            path,
            column,
            row: row + offset,
            msg,
        },
        other => other,
    }
}

/// Append `(s row, c)` to `out`, `s = sqrt(1 - c^2)`, shrinking the `row` part where f32
/// rounding pushed the norm over 1 (the values of a dense row, or a sparse row's
/// non-zeros: the same values either way).
pub(crate) fn intercept_row(row: &[f32], c: f64, out: &mut Vec<f32>) {
    let cf = c as f32;
    let s = (1.0 - f64::from(cf) * f64::from(cf)).sqrt();
    let start = out.len();
    out.extend(row.iter().map(|&v| (f64::from(v) * s) as f32));
    out.push(cf);
    let mut shrink = 1.0;
    while row_norm(&out[start..]) > 1.0 {
        shrink *= 1.0 - 1e-7;
        for (o, &v) in out[start..start + row.len()].iter_mut().zip(row) {
            *o = (f64::from(v) * s * shrink) as f32;
        }
    }
}

/// Give a data set of unit-ball rows an intercept without leaving the ball: every row `x`
/// becomes `(s x, c)` with `s = sqrt(1 - c^2)`, so `||(s x, c)|| <= 1` and the sensitivity
/// of every release over these rows is the one for unit-ball rows. `c` is public (the same
/// for every party and at prediction time); the model's last weight `w_c` then acts as the
/// bias `c w_c` and the others as `s w`. Rows must already lie in the ball (apply the
/// [`RowTransform`] first); after f32 rounding, the norm is at most 1 exactly (the `x` part
/// is shrunk further where rounding pushed it over, `c` never changes).
pub fn append_intercept(data: &mut Dataset, c: f64) -> Result<()> {
    check_intercept("intercept", c)?;
    if data.features.iter().any(|f| f == INTERCEPT_FEATURE) {
        return Err(Error::Schema {
            path: data.source.clone(),
            column: INTERCEPT_FEATURE.into(),
            msg: "a feature already has the intercept's name; rename the column".into(),
        });
    }
    let (d, n) = (data.d, data.n());
    let mut x = Vec::new();
    x.try_reserve_exact(n * (d + 1)).map_err(|_| {
        Error::param(
            "intercept",
            format!(
                "cannot allocate {n} rows of {} features for {}",
                d + 1,
                data.source.display()
            ),
        )
    })?;
    for row in data.x.chunks_exact(d) {
        intercept_row(row, c, &mut x);
    }
    data.x = x;
    data.d = d + 1;
    data.features.push(INTERCEPT_FEATURE.into());
    Ok(())
}

/// The text of a small file (a model, a key), refused before reading when it is larger than
/// `limit` bytes; `what` names the kind of file in the error.
pub fn read_text_at_most(
    path: &std::path::Path,
    limit: u64,
    what: &str,
) -> kinsey_core::Result<String> {
    use kinsey_core::Error;
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    if len > limit {
        return Err(Error::format(
            path,
            format!("{len} bytes; a {what} is at most {limit} bytes"),
        ));
    }
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows with an intercept stay in the unit ball (the sensitivity's assumption), keep
    /// the constant exactly, and keep their direction.
    #[test]
    fn an_intercept_keeps_rows_in_the_ball() {
        let mut a = ds(vec![1.0, 0.0, 0.6, 0.8, 0.0, 0.0, 0.3, -0.4], 2);
        append_intercept(&mut a, 0.5).expect("append");
        assert_eq!(
            (a.d, a.features.last().map(String::as_str)),
            (3, Some("(intercept)"))
        );
        for i in 0..a.n() {
            let r = a.row(i);
            assert!(row_norm(r) <= 1.0, "row {i}: {r:?}");
            assert_eq!(r[2], 0.5);
        }
        assert!((a.row(3)[0] as f64 - 0.3 * 0.75f64.sqrt()).abs() < 1e-6);
        // Every f32 row on the sphere, including those rounding pushes out.
        let mut rng = 9u64;
        let mut x = Vec::new();
        for _ in 0..5000 {
            let mut r: Vec<f32> = (0..7)
                .map(|_| {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((rng >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                })
                .collect();
            project_into_ball(&mut r);
            x.extend(r);
        }
        let mut b = ds(x, 7);
        append_intercept(&mut b, 0.3).expect("append");
        assert!((0..b.n()).all(|i| row_norm(b.row(i)) <= 1.0 && b.row(i)[7] == 0.3f32));
        for bad in [0.0, 1.0, -0.5, f64::NAN] {
            let e = append_intercept(&mut ds(vec![0.1], 1), bad).expect_err("refused");
            assert!(e.to_string().contains("(0, 1)"), "{e}");
        }
    }

    fn ds(x: Vec<f32>, d: usize) -> Dataset {
        let n = x.len() / d;
        Dataset {
            x,
            y: vec![1.0; n],
            d,
            features: Dataset::default_feature_names(d),
            source: "mem".into(),
        }
    }

    /// Item 8 of the privacy audit: a row of norm 1 + 5e-6 was used as it was while the
    /// sensitivity assumed norm 1. Now every row that passes has norm <= 1 exactly.
    #[test]
    fn rows_just_outside_the_ball_are_projected_onto_it() {
        let s = (1.0f64 + 5e-6).sqrt() as f32;
        let mut a = ds(vec![s * 0.6, s * 0.8, 0.5, 0.5], 2);
        assert!(row_norm(&a.x[..2]) > 1.0);
        let changed = RowTransform::None
            .apply(&mut a)
            .expect("within the tolerance");
        assert_eq!(changed, 1);
        for row in a.x.chunks(2) {
            assert!(row_norm(row) <= 1.0, "{}", row_norm(row));
        }
        let mut b = ds(vec![0.6000001, 0.8000001], 2);
        RowTransform::Clip.apply(&mut b).expect("clip");
        assert!(row_norm(&b.x) <= 1.0);
        let mut c = ds(vec![3.0, 4.0], 2);
        RowTransform::Scale(0.2).apply(&mut c).expect("scale");
        assert!(row_norm(&c.x) <= 1.0);
    }

    #[test]
    fn transforms_enforce_the_unit_ball() {
        let mut a = ds(vec![3.0, 4.0, 0.1, 0.2], 2);
        let err = RowTransform::None
            .apply(&mut a.clone())
            .expect_err("norm 5");
        assert!(err.to_string().contains("row 0"), "{err}");
        assert_eq!(RowTransform::Clip.apply(&mut a).expect("clip"), 1);
        assert!((a.x[0] - 0.6).abs() < 1e-6 && (a.x[2] - 0.1).abs() < 1e-7);
        let mut b = ds(vec![3.0, 4.0], 2);
        assert!(RowTransform::Scale(0.3).apply(&mut b.clone()).is_err());
        RowTransform::Scale(0.2).apply(&mut b).expect("exactly 1");
        assert!(RowTransform::Scale(f64::NAN).apply(&mut b).is_err());
    }

    #[test]
    fn labels_follow_the_declared_encoding() {
        let p = Path::new("f");
        assert_eq!(
            map_label(-1.0, LabelEncoding::PlusMinusOne, p, "label", 0).expect("ok"),
            -1.0
        );
        let e = map_label(0.0, LabelEncoding::PlusMinusOne, p, "label", 3).expect_err("undeclared");
        assert!(e.to_string().contains("zero_one") && e.to_string().contains("row 3"));
        assert_eq!(
            map_label(0.0, LabelEncoding::ZeroOne, p, "label", 0).expect("ok"),
            -1.0
        );
        assert!(map_label(2.0, LabelEncoding::ZeroOne, p, "label", 0).is_err());
    }

    #[test]
    fn feature_mismatch_is_named() {
        let a = ds(vec![0.0; 4], 2);
        let mut b = ds(vec![0.0; 4], 2);
        b.features[1] = "age".into();
        b.source = "p2.parquet".into();
        let e = a.check_same_features(&b).expect_err("differ").to_string();
        assert!(e.contains("'f2'") && e.contains("'age'"), "{e}");
    }
}

//! The Gram kernel of SuLQ PCA/SVD: `X^T X` and the column sums, on quantized entries so
//! every sum is an exact f64 (CPU only: one faer product per block is already memory-bound).

use crate::error::KernelError;
use crate::rows::BLOCK_ROWS;
use faer::{Accum, Mat, MatRef, Par};
use rayon::prelude::*;

/// Grid of the Gram kernel's quantized entries: values are rounded to multiples of 2^-12.
pub(crate) const GRAM_GRID_BITS: i32 = 12;
/// Most rows [`gram_sums`] takes: every partial sum then stays an exact f64.
pub(crate) const GRAM_MAX_ROWS: usize = 1 << 27;

/// An entry rounded to the Gram grid (a per-row function: it keeps every entry in the same
/// range, so the query's sensitivity bound is unchanged).
fn quantize(v: f64) -> f64 {
    let s = f64::from(1u32 << GRAM_GRID_BITS);
    (v * s).round() / s
}

/// `Q^T Q` (row-major `d x d`, symmetric) and the column sums of `Q`, where `Q` is `X` with
/// every entry rounded to a multiple of `2^-12`. Entries of `X` lie in [-1, 1], so every
/// product is a multiple of `2^-24` of magnitude at most 1 and every partial sum of at most
/// [`GRAM_MAX_ROWS`] rows is a multiple of `2^-24` below `2^27`: exact in f64 whatever the
/// order of additions. The result is therefore an exact function of the data, and no
/// rounding error needs to enter a query's sensitivity (an f32 product, as before, had
/// data-dependent errors larger than the sensitivity itself at a million rows).
pub fn gram_sums(x: &[f32], d: usize) -> Result<(Vec<f64>, Vec<f64>), KernelError> {
    let mut acc = GramSums::zero(d);
    gram_sums_into(&mut acc, x, d)?;
    Ok((acc.xtx, acc.colsum))
}

/// [`gram_sums`] accumulated over rows that arrive in pieces: every sum is exact, so the
/// pieces give the whole's bits whatever their sizes, up to [`GRAM_MAX_ROWS`] rows in all.
#[derive(Debug, Clone, PartialEq)]
pub struct GramSums {
    /// `Q^T Q`, row-major `d x d`.
    pub xtx: Vec<f64>,
    /// Column sums of `Q`.
    pub colsum: Vec<f64>,
    /// Rows added so far.
    pub rows: usize,
}

impl GramSums {
    /// No rows yet, `d` columns.
    pub fn zero(d: usize) -> Self {
        Self {
            xtx: vec![0.0; d * d],
            colsum: vec![0.0; d],
            rows: 0,
        }
    }
}

/// Add the rows of `x` (`d` columns) to `acc` (see [`gram_sums`]).
pub fn gram_sums_into(acc: &mut GramSums, x: &[f32], d: usize) -> Result<(), KernelError> {
    let n = crate::rows::whole_rows(x, d)?;
    if acc.colsum.len() != d {
        return Err(KernelError::Input(format!(
            "the running sums hold {} columns, {d} given",
            acc.colsum.len()
        )));
    }
    if acc.rows + n > GRAM_MAX_ROWS {
        return Err(KernelError::Input(format!(
            "the Gram kernel takes at most {GRAM_MAX_ROWS} rows (exact f64 sums)"
        )));
    }
    if x.iter().any(|v| !(-1.0..=1.0).contains(v)) {
        return Err(KernelError::Input(
            "the Gram kernel takes entries in [-1, 1]".into(),
        ));
    }
    let zero = || (vec![0.0f64; d * d], vec![0.0f64; d]);
    let partials: Vec<(Vec<f64>, Vec<f64>)> = x
        .par_chunks(BLOCK_ROWS * d)
        .map(|block| {
            let rows = block.len() / d;
            let q: Vec<f64> = block.iter().map(|&v| quantize(f64::from(v))).collect();
            let xb = MatRef::from_row_major_slice(&q, rows, d);
            let mut g = Mat::<f64>::zeros(d, d);
            faer::linalg::matmul::matmul(
                g.as_mut(),
                Accum::Replace,
                xb.transpose(),
                xb,
                1.0f64,
                Par::Seq,
            );
            let (mut gs, mut cs) = zero();
            for i in 0..d {
                for j in 0..d {
                    gs[i * d + j] = g[(i, j)];
                }
            }
            for row in q.chunks_exact(d) {
                cs.iter_mut().zip(row).for_each(|(s, &v)| *s += v);
            }
            (gs, cs)
        })
        .collect();
    for (bg, bc) in partials {
        acc.xtx.iter_mut().zip(&bg).for_each(|(s, v)| *s += v);
        acc.colsum.iter_mut().zip(&bc).for_each(|(s, v)| *s += v);
    }
    acc.rows += n;
    Ok(())
}

/// `sum_i (x_i - m)(x_i - m)^T` from `X^T X`, the column sums `s` and `n` rows:
/// `X^T X - m s^T - s m^T + n m m^T` (f64; the entries are bounded, so no cancellation
/// worth the name at the noise scales of a release).
///
/// The centre `m` (a released, public value) is clamped to [-1, 1] and rounded to the Gram
/// grid first (post-processing), so with [`gram_sums`]'s inputs every term is a multiple of
/// `2^-24` below `2^29` in magnitude and the result is exact in f64.
pub fn center_gram(xtx: &[f64], colsum: &[f64], n: usize, m: &[f64]) -> Vec<f64> {
    let d = m.len();
    let m: Vec<f64> = m.iter().map(|&v| quantize(v.clamp(-1.0, 1.0))).collect();
    let mut out = xtx.to_vec();
    for i in 0..d {
        for j in 0..d {
            out[i * d + j] += -m[i] * colsum[j] - colsum[i] * m[j] + n as f64 * m[i] * m[j];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rows as data;

    #[test]
    fn gram_and_centering_match_the_definition() {
        let (n, d) = (9_000, 4);
        let x = data(n, d, 3);
        let (g, s) = gram_sums(&x, d).expect("shapes");
        let m = [0.3, 0.5, 0.1, 0.9];
        let c = center_gram(&g, &s, n, &m);
        let mut want = vec![0.0; d * d];
        for row in x.chunks(d) {
            for i in 0..d {
                for j in 0..d {
                    want[i * d + j] += (row[i] as f64 - m[i]) * (row[j] as f64 - m[j]);
                }
            }
        }
        for (a, b) in c.iter().zip(&want) {
            // the rows and the centre are on the 2^-12 grid: within n 2^-12 of the raw sums
            assert!((a - b).abs() < 4.0 * n as f64 / 4096.0, "{a} vs {b}");
        }
        assert!(gram_sums(&x[..7], d).is_err());
    }

    /// Item 8 of the privacy audit: the Gram sums must be an exact function of the data, so
    /// the order of additions (threads, blocks) cannot matter and no rounding error enters
    /// the sensitivity. Reversing the rows gives the same bits; one changed row moves each
    /// entry by at most 1 (the bound the SuLQ sensitivity uses).
    #[test]
    fn gram_sums_are_exact() {
        let (n, d) = (20_000, 5);
        let x = data(n, d, 7);
        let (g, s) = gram_sums(&x, d).expect("ok");
        let rev: Vec<f32> = x.chunks(d).rev().flatten().copied().collect();
        let (g2, s2) = gram_sums(&rev, d).expect("ok");
        assert_eq!(g, g2);
        assert_eq!(s, s2);
        let mut y = x.clone();
        y[..d].copy_from_slice(&[1.0, 0.0, 1.0, 0.0, 1.0]);
        let (g3, _) = gram_sums(&y, d).expect("ok");
        assert!(g.iter().zip(&g3).all(|(a, b)| (a - b).abs() <= 1.0));
        assert!(
            gram_sums(&[2.0; 5], 5).is_err(),
            "entries beyond [-1, 1] refused"
        );
    }
}

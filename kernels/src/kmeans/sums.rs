//! The k-means step's interface and what both twins share: the nearest centre in the
//! shader's f32 arithmetic, and the f64 sums in a fixed reduction order.

use crate::error::KernelError;
use crate::rows::BLOCK_ROWS;
use rayon::prelude::*;

/// Per-cluster sizes and coordinate sums for one Lloyd step.
#[derive(Debug, Clone, PartialEq)]
pub struct KmeansSums {
    /// Rows whose nearest centre is j (ties go to the lowest index).
    pub counts: Vec<f64>,
    /// Row-major `k x d`: sum of the rows assigned to centre j.
    pub sums: Vec<f64>,
    /// Sum over rows of the squared distance to the nearest centre.
    pub inertia: f64,
}

/// Index of the nearest centre of `row` and its squared distance (f32 arithmetic, the
/// shader's; ties go to the lowest index). `centers` is row-major `k x d` in f32.
#[inline]
pub fn nearest(row: &[f32], centers: &[f32], d: usize) -> (usize, f32) {
    let mut best = (0, f32::INFINITY);
    for (j, c) in centers.chunks_exact(d).enumerate() {
        let dist: f32 = row.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum();
        if dist < best.1 {
            best = (j, dist);
        }
    }
    best
}

/// Sizes, sums and inertia given each row's (centre, squared distance), computed by
/// `assign(global row index, row)`; blocks of rows in parallel, reduced in a fixed order.
pub fn accumulate(
    x: &[f32],
    d: usize,
    k: usize,
    assign: impl Fn(usize, &[f32]) -> (usize, f32) + Sync,
) -> KmeansSums {
    let mut acc = KmeansSums::zero(k, d);
    accumulate_into(&mut acc, x, d, 0, assign);
    acc
}

impl KmeansSums {
    /// No rows: every size, sum and the inertia zero, for `k` centres of `d` columns.
    pub fn zero(k: usize, d: usize) -> Self {
        Self {
            counts: vec![0.0; k],
            sums: vec![0.0; k * d],
            inertia: 0.0,
        }
    }
}

/// [`accumulate`] of rows that continue what `acc` holds (`row0`: the first row's global
/// index): each block of [`BLOCK_ROWS`] rows is added to `acc` in order, so rows that come
/// in pieces of whole blocks give the bits of [`accumulate`] over all of them.
pub(crate) fn accumulate_into(
    acc: &mut KmeansSums,
    x: &[f32],
    d: usize,
    row0: usize,
    assign: impl Fn(usize, &[f32]) -> (usize, f32) + Sync,
) {
    let k = acc.counts.len();
    let partials: Vec<KmeansSums> = x
        .par_chunks(BLOCK_ROWS * d)
        .enumerate()
        .map(|(b, block)| {
            let mut part = KmeansSums::zero(k, d);
            for (r, row) in block.chunks_exact(d).enumerate() {
                let (j, dist) = assign(row0 + b * BLOCK_ROWS + r, row);
                part.counts[j] += 1.0;
                part.inertia += dist as f64;
                for (s, &v) in part.sums[j * d..(j + 1) * d].iter_mut().zip(row) {
                    *s += v as f64;
                }
            }
            part
        })
        .collect();
    for b in partials {
        acc.inertia += b.inertia;
        acc.counts
            .iter_mut()
            .zip(&b.counts)
            .for_each(|(s, v)| *s += v);
        acc.sums.iter_mut().zip(&b.sums).for_each(|(s, v)| *s += v);
    }
}

/// One interface, two implementations (like [`crate::logistic::LogisticKernel`]).
pub trait KmeansKernel: Send + Sync + std::fmt::Debug {
    /// Human-readable name of the implementation and device.
    fn describe(&self) -> String;
    /// One step's sizes, sums and inertia at `centers` (row-major `k x d`).
    fn sums(&self, centers: &[f64]) -> Result<KmeansSums, KernelError>;
}

#[cfg(test)]
mod tests {
    use crate::kmeans::cpu::kmeans_sums;
    use crate::test_rows as data;

    #[test]
    fn kmeans_sums_match_the_definition() {
        let (n, d) = (10_000, 5);
        let x = data(n, d, 1);
        let centers: Vec<f64> = data(3, d, 2).iter().map(|&v| v as f64).collect();
        let got = kmeans_sums(&x, d, &centers).expect("shapes");
        let mut counts = [0.0; 3];
        let mut sums = vec![0.0; 3 * d];
        for row in x.chunks(d) {
            let mut best = (0, f64::INFINITY);
            for j in 0..3 {
                let dist: f64 = (0..d)
                    .map(|t| (row[t] as f64 - centers[j * d + t]).powi(2))
                    .sum();
                if dist < best.1 {
                    best = (j, dist);
                }
            }
            counts[best.0] += 1.0;
            for t in 0..d {
                sums[best.0 * d + t] += row[t] as f64;
            }
        }
        assert_eq!(got.counts, counts.to_vec());
        for (a, b) in got.sums.iter().zip(&sums) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        assert_eq!(got.counts.iter().sum::<f64>(), n as f64);
        assert!(kmeans_sums(&x, d, &centers[..4]).is_err());
    }
}

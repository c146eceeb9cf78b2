//! Sum kernels of the DP toolbox (SuLQ k-means, PCA/SVD, perceptron): each returns the
//! exact sums over rows that a SuLQ query then perturbs. Rows are row-major `f32`, sums are
//! accumulated in `f64` per block of rows and the blocks are reduced in a fixed order, so
//! a result does not depend on the number of threads.
//!
//! The GPU twin of [`kmeans_sums`] is `gpu::GpuKmeans` (`shaders/kmeans.wgsl`).

use crate::KernelError;
use faer::{Accum, Mat, MatRef, Par};
use rayon::prelude::*;

/// Rows per block: one block is one rayon task and one f32 Gram product.
pub const BLOCK_ROWS: usize = 4096;

fn check(x: &[f32], d: usize) -> Result<usize, KernelError> {
    if d == 0 {
        return Err(KernelError::Input("dimension must be >= 1".into()));
    }
    if !x.len().is_multiple_of(d) {
        return Err(KernelError::Input(format!(
            "{} values are not whole rows of {d} columns",
            x.len()
        )));
    }
    Ok(x.len() / d)
}

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

/// Assign every row to its nearest centre and sum sizes and coordinates per centre.
pub fn kmeans_sums(x: &[f32], d: usize, centers: &[f64]) -> Result<KmeansSums, KernelError> {
    check(x, d)?;
    if centers.is_empty() || !centers.len().is_multiple_of(d) {
        return Err(KernelError::Input(format!(
            "{} centre values are not whole centres of {d} columns",
            centers.len()
        )));
    }
    let k = centers.len() / d;
    let c32: Vec<f32> = centers.iter().map(|&v| v as f32).collect();
    Ok(accumulate(x, d, k, |_, row| nearest(row, &c32, d)))
}

/// Sizes, sums and inertia given each row's (centre, squared distance), computed by
/// `assign(global row index, row)`; blocks of rows in parallel, reduced in a fixed order.
pub fn accumulate(
    x: &[f32],
    d: usize,
    k: usize,
    assign: impl Fn(usize, &[f32]) -> (usize, f32) + Sync,
) -> KmeansSums {
    let empty = || KmeansSums {
        counts: vec![0.0; k],
        sums: vec![0.0; k * d],
        inertia: 0.0,
    };
    let partials: Vec<KmeansSums> = x
        .par_chunks(BLOCK_ROWS * d)
        .enumerate()
        .map(|(b, block)| {
            let mut acc = empty();
            for (r, row) in block.chunks_exact(d).enumerate() {
                let (j, dist) = assign(b * BLOCK_ROWS + r, row);
                acc.counts[j] += 1.0;
                acc.inertia += dist as f64;
                for (s, &v) in acc.sums[j * d..(j + 1) * d].iter_mut().zip(row) {
                    *s += v as f64;
                }
            }
            acc
        })
        .collect();
    partials.into_iter().fold(empty(), |mut a, b| {
        a.inertia += b.inertia;
        a.counts
            .iter_mut()
            .zip(&b.counts)
            .for_each(|(s, v)| *s += v);
        a.sums.iter_mut().zip(&b.sums).for_each(|(s, v)| *s += v);
        a
    })
}

/// The k-means step on the CPU or a GPU, chosen like the logistic kernel (`auto` takes a GPU
/// only if it is not a software rasteriser).
pub enum KmeansKernel<'a> {
    Cpu { x: &'a [f32], d: usize },
    Gpu(Box<crate::gpu::kmeans::GpuKmeans<'a>>),
}

impl std::fmt::Debug for KmeansKernel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl<'a> KmeansKernel<'a> {
    pub fn select(pref: crate::DevicePref, x: &'a [f32], d: usize) -> Result<Self, KernelError> {
        use crate::DevicePref;
        use crate::gpu::{GpuContext, kmeans::GpuKmeans};
        check(x, d)?;
        match pref {
            DevicePref::Cpu => Ok(Self::Cpu { x, d }),
            DevicePref::Gpu => Ok(Self::Gpu(Box::new(GpuKmeans::new(
                GpuContext::open()?,
                x,
                d,
            )?))),
            DevicePref::Auto => match GpuContext::open() {
                Ok(ctx) if !ctx.is_software() => {
                    Ok(Self::Gpu(Box::new(GpuKmeans::new(ctx, x, d)?)))
                }
                _ => Ok(Self::Cpu { x, d }),
            },
        }
    }

    /// One step's sizes, sums and inertia at `centers`.
    pub fn sums(&self, centers: &[f64]) -> Result<KmeansSums, KernelError> {
        match self {
            Self::Cpu { x, d } => kmeans_sums(x, *d, centers),
            Self::Gpu(g) => g.sums(centers),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Cpu { .. } => format!("cpu (rayon, {} threads)", rayon::current_num_threads()),
            Self::Gpu(g) => g.describe(),
        }
    }
}

/// Grid of the Gram kernel's quantized entries: values are rounded to multiples of 2^-12.
pub const GRAM_GRID_BITS: i32 = 12;
/// Most rows [`gram_sums`] takes: every partial sum then stays an exact f64.
pub const GRAM_MAX_ROWS: usize = 1 << 27;

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
    let n = check(x, d)?;
    if n > GRAM_MAX_ROWS {
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
    Ok(partials
        .into_iter()
        .fold(zero(), |(mut g, mut c), (bg, bc)| {
            g.iter_mut().zip(&bg).for_each(|(s, v)| *s += v);
            c.iter_mut().zip(&bc).for_each(|(s, v)| *s += v);
            (g, c)
        }))
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

/// Perceptron step sums at `w`: the number of rows with `y_i <x_i, w> <= 0` and the sum of
/// `y_i x_i` over them.
pub fn perceptron_sums(
    x: &[f32],
    y: &[f32],
    d: usize,
    w: &[f64],
) -> Result<(f64, Vec<f64>), KernelError> {
    let n = check(x, d)?;
    if y.len() != n || w.len() != d {
        return Err(KernelError::Input(format!(
            "{n} rows, {} labels and a weight vector of {} for {d} columns",
            y.len(),
            w.len()
        )));
    }
    let partials: Vec<(f64, Vec<f64>)> = x
        .par_chunks(BLOCK_ROWS * d)
        .zip(y.par_chunks(BLOCK_ROWS))
        .map(|(block, labels)| {
            let mut count = 0.0;
            let mut sums = vec![0.0; d];
            for (row, &yi) in block.chunks_exact(d).zip(labels) {
                let z: f64 = row.iter().zip(w).map(|(&a, b)| a as f64 * b).sum();
                if yi as f64 * z <= 0.0 {
                    count += 1.0;
                    sums.iter_mut()
                        .zip(row)
                        .for_each(|(s, &v)| *s += (yi * v) as f64);
                }
            }
            (count, sums)
        })
        .collect();
    Ok(partials
        .into_iter()
        .fold((0.0, vec![0.0; d]), |(c, mut s), (bc, bs)| {
            s.iter_mut().zip(&bs).for_each(|(a, b)| *a += b);
            (c + bc, s)
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn data(n: usize, d: usize, seed: u64) -> Vec<f32> {
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n * d).map(|_| r.random::<f32>()).collect()
    }

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

    #[test]
    fn perceptron_sums_match_the_definition() {
        let (n, d) = (5_000, 3);
        let x: Vec<f32> = data(n, d, 4).iter().map(|v| 2.0 * v - 1.0).collect();
        let y: Vec<f32> = (0..n)
            .map(|i| if x[i * d] > 0.1 { 1.0 } else { -1.0 })
            .collect();
        let w = [0.2, -0.1, 0.3];
        let (c, s) = perceptron_sums(&x, &y, d, &w).expect("shapes");
        let mut wc = 0.0;
        let mut ws = vec![0.0; d];
        for (row, &yi) in x.chunks(d).zip(&y) {
            let z: f64 = (0..d).map(|t| row[t] as f64 * w[t]).sum();
            if yi as f64 * z <= 0.0 {
                wc += 1.0;
                (0..d).for_each(|t| ws[t] += (yi * row[t]) as f64);
            }
        }
        assert_eq!(c, wc);
        for (a, b) in s.iter().zip(&ws) {
            assert!((a - b).abs() < 1e-9);
        }
        assert!(perceptron_sums(&x, &y[1..], d, &w).is_err());
    }
}

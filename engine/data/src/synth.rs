//! Synthetic parties from a planted logistic model, for the demo and for benchmarks.
//!
//! Rows: `x_j ~ N(0, 1/d)`, then clipped to the unit ball, so rows satisfy the privacy
//! condition by construction. Labels: `P(y = +1 | x) = sigma(w*.x)` with a planted `w*` of norm
//! `signal`. Data generation uses ChaCha8 (fast; not privacy noise).

use super::Dataset;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::path::PathBuf;

/// The planted model for a seed and dimension (norm `signal`).
pub fn planted_w(d: usize, signal: f64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let v: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
    let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
    v.into_iter().map(|a| a * signal / norm).collect()
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `n` rows from the planted model of `seed`; `stream` picks an independent row stream
/// (different parties and the test set use different streams of the same model).
pub fn generate(
    n: usize,
    d: usize,
    signal: f64,
    seed: u64,
    stream: u64,
    source: PathBuf,
) -> Dataset {
    generate_correlated(n, d, signal, 0.0, seed, stream, source)
}

/// As [`generate`], with AR(1)-correlated features: `x_j = rho x_(j-1) + sqrt(1 - rho^2) e_j`
/// (before scaling and clipping). Real design matrices are correlated; `rho = 0` is the
/// isotropic case, the easiest one for first-order solvers.
pub fn generate_correlated(
    n: usize,
    d: usize,
    signal: f64,
    rho: f64,
    seed: u64,
    stream: u64,
    source: PathBuf,
) -> Dataset {
    let w = planted_w(d, signal, seed);
    let innov = (1.0 - rho * rho).max(0.0).sqrt();
    const BLOCK: usize = 8192;
    let blocks: Vec<(Vec<f32>, Vec<f32>)> = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(stream.wrapping_mul(1 << 32).wrapping_add(b as u64));
            let m = BLOCK.min(n - b * BLOCK);
            let mut x = Vec::with_capacity(m * d);
            let mut y = Vec::with_capacity(m);
            let sd = 1.0 / (d as f64).sqrt();
            let mut row = vec![0.0f64; d];
            for _ in 0..m {
                let mut prev = 0.0;
                for (j, v) in row.iter_mut().enumerate() {
                    let e = normal(&mut rng);
                    prev = if j == 0 { e } else { rho * prev + innov * e };
                    *v = prev * sd;
                }
                let norm = row.iter().map(|a| a * a).sum::<f64>().sqrt();
                let s = if norm > 1.0 { 1.0 / norm } else { 1.0 };
                let z: f64 = row.iter().zip(&w).map(|(a, b)| a * s * b).sum();
                let p = kinsey_kernels::sigmoid(z);
                y.push(if rng.random::<f64>() < p { 1.0 } else { -1.0 });
                x.extend(row.iter().map(|a| (a * s) as f32));
            }
            (x, y)
        })
        .collect();
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for (bx, by) in blocks {
        x.extend_from_slice(&bx);
        y.extend_from_slice(&by);
    }
    Dataset {
        x,
        y,
        d,
        features: Dataset::default_feature_names(d),
        source,
    }
}

/// One data set on stream 0 (tests).
pub fn generate_one(n: usize, d: usize, signal: f64, seed: u64, source: PathBuf) -> Dataset {
    generate(n, d, signal, seed, 0, source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_in_unit_ball_labels_follow_model_and_streams_differ() {
        let a = generate(20_000, 10, 4.0, 7, 1, "a".into());
        let b = generate(20_000, 10, 4.0, 7, 2, "b".into());
        assert_ne!(a.x[..10], b.x[..10]);
        assert_eq!(
            a.x,
            generate(20_000, 10, 4.0, 7, 1, "a".into()).x,
            "reproducible"
        );
        for i in 0..a.n() {
            let n2: f32 = a.row(i).iter().map(|v| v * v).sum();
            assert!(n2 <= 1.0 + 1e-5);
        }
        let w = planted_w(10, 4.0, 7);
        let agree = (0..a.n())
            .filter(|&i| {
                let z: f64 = a.row(i).iter().zip(&w).map(|(&x, w)| x as f64 * w).sum();
                (z > 0.0) == (a.y[i] > 0.0)
            })
            .count();
        assert!(agree as f64 / a.n() as f64 > 0.6, "labels carry signal");
    }
}

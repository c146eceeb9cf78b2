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
    let model = Planted::new(d, signal, rho, seed, stream);
    model.blocks(n, 0..n.div_ceil(GEN_BLOCK), source)
}

/// Rows per generated block. Each block has its own ChaCha8 stream (seed, row stream, block
/// index), so any range of blocks is generated alone, in any order, with the same values:
/// `kinsey generate` writes a party of any size a few blocks at a time.
pub const GEN_BLOCK: usize = 8192;

/// One planted model and row stream: the generator of [`generate_correlated`]'s rows.
#[derive(Debug, Clone)]
pub struct Planted {
    w: Vec<f64>,
    d: usize,
    rho: f64,
    seed: u64,
    stream: u64,
}

impl Planted {
    /// The model of `seed` (norm `signal`, AR(1) correlation `rho`) on row stream `stream`.
    pub fn new(d: usize, signal: f64, rho: f64, seed: u64, stream: u64) -> Self {
        Self {
            w: planted_w(d, signal, seed),
            d,
            rho,
            seed,
            stream,
        }
    }

    /// Blocks `blocks` of the `n`-row data set (block `b`: rows `b GEN_BLOCK ..`), generated
    /// in parallel.
    pub fn blocks(&self, n: usize, blocks: std::ops::Range<usize>, source: PathBuf) -> Dataset {
        let parts: Vec<(Vec<f32>, Vec<f32>)> = blocks
            .into_par_iter()
            .map(|b| self.block(b, GEN_BLOCK.min(n.saturating_sub(b * GEN_BLOCK))))
            .collect();
        let rows: usize = parts.iter().map(|(_, y)| y.len()).sum();
        let mut x = Vec::with_capacity(rows * self.d);
        let mut y = Vec::with_capacity(rows);
        for (bx, by) in parts {
            x.extend_from_slice(&bx);
            y.extend_from_slice(&by);
        }
        Dataset {
            x,
            y,
            d: self.d,
            features: Dataset::default_feature_names(self.d),
            source,
        }
    }

    /// Block `b`'s `m` rows and labels.
    fn block(&self, b: usize, m: usize) -> (Vec<f32>, Vec<f32>) {
        let (d, rho, w) = (self.d, self.rho, &self.w);
        let innov = (1.0 - rho * rho).max(0.0).sqrt();
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(self.stream.wrapping_mul(1 << 32).wrapping_add(b as u64));
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
            let z: f64 = row.iter().zip(w).map(|(a, b)| a * s * b).sum();
            let p = kinsey_kernels::sigmoid(z);
            y.push(if rng.random::<f64>() < p { 1.0 } else { -1.0 });
            x.extend(row.iter().map(|a| (a * s) as f32));
        }
        (x, y)
    }
}

/// A synthetic party of `n` rows generated a block at a time (the rows of [`Planted::blocks`]
/// over the whole party): the demo's parties when they do not fit in memory together.
#[derive(Debug, Clone)]
pub struct SynthParty {
    model: Planted,
    n: usize,
    features: Vec<String>,
    source: PathBuf,
}

impl SynthParty {
    /// `n` rows of `model`, named `source`.
    pub fn new(model: Planted, n: usize, source: PathBuf) -> Self {
        let features = Dataset::default_feature_names(model.d);
        Self {
            model,
            n,
            features,
            source,
        }
    }

    /// Every row at once (what [`generate_correlated`] gives).
    pub fn generate(&self) -> Dataset {
        self.model
            .blocks(self.n, 0..self.n.div_ceil(GEN_BLOCK), self.source.clone())
    }
}

impl crate::parquet_blocks::PartyBlocks for SynthParty {
    fn name(&self) -> &std::path::Path {
        &self.source
    }

    fn rows(&self) -> usize {
        self.n
    }

    fn features(&self) -> &[String] {
        &self.features
    }

    fn reader_bytes(&self) -> u64 {
        0
    }

    /// Blocks of whole generator blocks where `block_rows` is a multiple of [`GEN_BLOCK`];
    /// otherwise each block is cut from the generator blocks that cover it.
    fn for_each_block(
        &self,
        block_rows: usize,
        f: &mut dyn FnMut(&mut Dataset) -> kinsey_core::Result<()>,
    ) -> kinsey_core::Result<()> {
        let (n, d, step) = (self.n, self.model.d, block_rows.max(1));
        let mut start = 0;
        while start < n {
            let end = (start + step).min(n);
            let (g0, g1) = (start / GEN_BLOCK, end.div_ceil(GEN_BLOCK));
            let mut block = self.model.blocks(n, g0..g1, self.source.clone());
            let skip = start - g0 * GEN_BLOCK;
            if skip > 0 || block.n() != end - start {
                block.x = block.x[skip * d..(skip + end - start) * d].to_vec();
                block.y = block.y[skip..skip + end - start].to_vec();
            }
            f(&mut block)?;
            start = end;
        }
        Ok(())
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

    #[test]
    fn any_range_of_blocks_is_the_same_rows() {
        let n = 3 * GEN_BLOCK + 17;
        let whole = generate_correlated(n, 5, 4.0, 0.3, 9, 2, "w".into());
        let m = Planted::new(5, 4.0, 0.3, 9, 2);
        let (a, b) = (m.blocks(n, 0..2, "a".into()), m.blocks(n, 2..4, "b".into()));
        assert_eq!([a.x, b.x].concat(), whole.x);
        assert_eq!([a.y, b.y].concat(), whole.y);
        assert_eq!(m.blocks(n, 3..4, "c".into()).n(), 17);
        // A party read in blocks of any size is the same rows.
        let party = SynthParty::new(m, n, "p".into());
        for step in [GEN_BLOCK, 5000, 3 * GEN_BLOCK + 17, n + 1] {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            crate::parquet_blocks::PartyBlocks::for_each_block(&party, step, &mut |b| {
                assert!(b.n() <= step && b.d == 5);
                x.extend_from_slice(&b.x);
                y.extend_from_slice(&b.y);
                Ok(())
            })
            .expect("blocks");
            assert_eq!((&x, &y), (&whole.x, &whole.y), "blocks of {step}");
        }
    }
}

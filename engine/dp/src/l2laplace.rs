//! The L2-Laplace vector mechanism ("multivariate Laplace" of Chaudhuri & Monteleoni 2008):
//! density proportional to `exp(-||eta||_2 / s)` on R^d, with `s = Delta2 / eps`.
//!
//! Privacy map: for two outputs centred at `w` and `w'` with `||w - w'||_2 <= Delta2`, the
//! density ratio is `exp((||y - w'|| - ||y - w||) / s) <= exp(||w - w'|| / s) <= exp(eps)`
//! (triangle inequality), so the release is eps-DP for L2 sensitivity `Delta2`.
//!
//! Sampler: in polar form the norm has density proportional to `r^(d-1) exp(-r/s)`, i.e.
//! `||eta|| ~ Gamma(d, s)`, and the direction is uniform on the sphere. Gamma with integer
//! shape d is sampled exactly as `s * (E_1 + ... + E_d)` with `E_i ~ Exp(1)`; the direction
//! is a normalised vector of d standard normals. Expected norm `d * s` (seed 001 Lemma 2).
//!
//! Floating point: the vector is sampled in f64 and, where it enters fixed-point crypto,
//! rounded to the protocol's `2^-f` grid; unlike the scalar mechanism this is not a
//! proven float-safe construction (see ARCHITECTURE.md, "known limits").

use super::rng::NoiseRng;
use kinsey_core::{Result, check_epsilon};
use serde::Serialize;

/// Calibrated L2-Laplace mechanism.
#[derive(Debug, Clone, Serialize)]
pub struct L2LaplaceMechanism {
    /// Stated L2 sensitivity.
    pub sensitivity: f64,
    /// Privacy parameter.
    pub epsilon: f64,
    /// Dimension.
    pub dim: usize,
}

impl L2LaplaceMechanism {
    /// The mechanism for an L2 sensitivity, epsilon and dimension.
    pub fn new(sensitivity: f64, epsilon: f64, dim: usize) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(kinsey_core::Error::param(
                "sensitivity",
                format!("must be finite and > 0, got {sensitivity}"),
            ));
        }
        if dim == 0 {
            return Err(kinsey_core::Error::param("dim", "must be >= 1"));
        }
        Ok(Self {
            sensitivity,
            epsilon,
            dim,
        })
    }

    /// Scale `s = Delta2 / eps`.
    pub fn scale(&self) -> f64 {
        self.sensitivity / self.epsilon
    }

    /// Privacy map: eps for an L2 input distance.
    pub fn privacy_map(&self, d_in: f64) -> f64 {
        d_in / self.scale()
    }

    /// Expected noise norm `d * s`.
    pub fn expected_norm(&self) -> f64 {
        self.dim as f64 * self.scale()
    }

    /// Draw one noise vector.
    pub fn sample(&self, rng: &mut NoiseRng) -> Vec<f64> {
        sample_l2_laplace(self.dim, self.scale(), rng)
    }
}

/// Draw `eta` with density proportional to exp(-||eta||_2 / scale) in R^dim.
pub fn sample_l2_laplace(dim: usize, scale: f64, rng: &mut NoiseRng) -> Vec<f64> {
    let norm: f64 = scale * (0..dim).map(|_| rng.exp1()).sum::<f64>();
    let mut dir: Vec<f64> = loop {
        let v: Vec<f64> = (0..dim).map(|_| rng.std_normal()).collect();
        if v.iter().any(|x| *x != 0.0) {
            break v;
        }
    };
    let len = dir.iter().map(|x| x * x).sum::<f64>().sqrt();
    for x in &mut dir {
        *x *= norm / len;
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stattest::{ALPHA, gamma_cdf, ks_test, normal_cdf};

    fn norms(dim: usize, factor: f64, n: usize, seed: u64) -> Vec<f64> {
        let m = L2LaplaceMechanism::new(0.1, 0.5, dim).expect("valid");
        let mut rng = NoiseRng::from_seed_quiet(seed);
        (0..n)
            .map(|_| {
                let v = sample_l2_laplace(dim, m.scale() * factor, &mut rng);
                v.iter().map(|x| x * x).sum::<f64>().sqrt()
            })
            .collect()
    }

    #[test]
    fn norm_is_gamma_d_s() {
        for dim in [1usize, 5, 123] {
            let mut v = norms(dim, 1.0, 40_000, dim as u64);
            let s = 0.1 / 0.5;
            let (_, p) = ks_test(&mut v, |x| gamma_cdf(x, dim as f64, s));
            assert!(p > ALPHA, "dim {dim}: p = {p}");
        }
    }

    #[test]
    fn power_check_rejects_30_percent_too_small() {
        for dim in [1usize, 123] {
            let mut v = norms(dim, 0.7, 40_000, 100 + dim as u64);
            let s = 0.1 / 0.5;
            let (_, p) = ks_test(&mut v, |x| gamma_cdf(x, dim as f64, s));
            assert!(p < ALPHA, "dim {dim}: p = {p}");
        }
    }

    #[test]
    fn direction_is_uniform() {
        // For a uniform direction u in R^d, sqrt(d) * u_1 is close to N(0, 1) for large d;
        // test the exact marginal for d = 3 instead: u_1 is uniform on [-1, 1] (Archimedes).
        let mut rng = NoiseRng::from_seed_quiet(9);
        let mut first: Vec<f64> = (0..50_000)
            .map(|_| {
                let v = sample_l2_laplace(3, 1.0, &mut rng);
                v[0] / v.iter().map(|x| x * x).sum::<f64>().sqrt()
            })
            .collect();
        let (_, p) = ks_test(&mut first, |x| ((x + 1.0) / 2.0).clamp(0.0, 1.0));
        assert!(p > ALPHA, "p = {p}");
        let mut rng = NoiseRng::from_seed_quiet(10);
        let d = 400;
        let mut scaled: Vec<f64> = (0..20_000)
            .map(|_| {
                let v = sample_l2_laplace(d, 1.0, &mut rng);
                (d as f64).sqrt() * v[7] / v.iter().map(|x| x * x).sum::<f64>().sqrt()
            })
            .collect();
        let (_, p) = ks_test(&mut scaled, |x| normal_cdf(x, 1.0));
        assert!(p > 1e-4, "p = {p}");
    }

    #[test]
    fn privacy_map_and_lemma2_mean() {
        let m = L2LaplaceMechanism::new(0.2, 0.4, 10).expect("valid");
        assert!((m.privacy_map(0.2) - 0.4).abs() < 1e-15);
        assert!((m.expected_norm() - 5.0).abs() < 1e-12);
        assert!(L2LaplaceMechanism::new(0.2, -1.0, 10).is_err());
        assert!(L2LaplaceMechanism::new(0.2, 1.0, 0).is_err());
    }
}

//! Gaussian mechanism with the analytic calibration of Balle & Wang (ICML 2018).
//!
//! Privacy map: for L2 sensitivity `Delta` and noise `N(0, sigma^2 I)`, the mechanism is
//! (eps, delta)-DP iff
//!   `Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta) <= delta`
//! (Balle & Wang, Theorem 8). We find the smallest such sigma by bisection; unlike the
//! classic `sqrt(2 ln(1.25/delta)) Delta / eps` it is exact and valid for every eps > 0.
//!
//! What is released: each coordinate on the grid `gamma = 2^(floor(log2 sigma) - 20)` as
//! `gamma (round(x / gamma) + Z)` with `Z` an exact discrete Gaussian in grid steps
//! ([`super::dgauss::DiscreteGaussian`], exact). The rounded input
//! has integer L2 sensitivity at most `Delta / gamma + sqrt(d)`, and the multivariate
//! discrete Gaussian is `Delta_int^2 / (2 sigma_int^2)`-zCDP for it (CKS Theorem 14), i.e.
//! `rho = (Delta + sqrt(d) gamma)^2 / (2 sigma^2)`. The mechanism's sigma is the smallest
//! with [`super::exact::zcdp_delta`]`(rho, eps) <= delta` (CKS Corollary 13). The analytic
//! calibration below is exact for the continuous Gaussian only, so it is kept as a
//! reference (about 5% less noise) and not used for the discrete release.

use super::dgauss::DiscreteGaussian;
use super::exact::zcdp_delta;
use super::rng::NoiseRng;
use kinsey_core::{Error, Result, check_delta, check_epsilon};
use serde::Serialize;

/// Calibrated Gaussian mechanism.
#[derive(Debug, Clone, Serialize)]
pub struct GaussianMechanism {
    /// L2 sensitivity.
    pub sensitivity: f64,
    /// Epsilon of the (epsilon, delta) guarantee.
    pub epsilon: f64,
    /// Delta of the (epsilon, delta) guarantee.
    pub delta: f64,
    /// Dimension.
    pub dim: usize,
    /// Standard deviation of the noise per coordinate.
    pub sigma: f64,
    /// The noise lives on the grid `2^grid_exp`.
    pub grid_exp: i32,
}

/// The standard normal CDF.
fn phi(x: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2)
}

/// delta(sigma) of the analytic Gaussian mechanism.
pub(crate) fn analytic_delta(sensitivity: f64, epsilon: f64, sigma: f64) -> f64 {
    let a = sensitivity / (2.0 * sigma);
    let b = epsilon * sigma / sensitivity;
    (phi(a - b) - epsilon.exp() * phi(-a - b)).max(0.0)
}

/// Smallest sigma with `analytic_delta(sensitivity, eps, sigma) <= delta`.
pub(crate) fn analytic_sigma(sensitivity: f64, epsilon: f64, delta: f64) -> Result<f64> {
    smallest_sigma(sensitivity, epsilon, delta, |sigma| {
        analytic_delta(sensitivity, epsilon, sigma) <= delta
    })
}

/// The smallest sigma (to bisection precision) for which `ok(sigma)` holds, `ok` monotone;
/// checks the parameters of a Gaussian calibration first.
fn smallest_sigma(l2: f64, epsilon: f64, delta: f64, ok: impl Fn(f64) -> bool) -> Result<f64> {
    check_epsilon("epsilon", epsilon)?;
    check_delta("delta", delta)?;
    if delta == 0.0 {
        return Err(Error::param(
            "delta",
            "the Gaussian mechanism needs delta > 0",
        ));
    }
    let (mut lo, mut hi) = (l2 * 1e-6, l2);
    while !ok(hi) {
        hi *= 2.0;
        if hi > l2 * 1e12 {
            return Err(Error::Numerical("Gaussian calibration diverged".into()));
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

impl GaussianMechanism {
    /// Calibrate for L2 sensitivity `Delta` on `dim` coordinates.
    pub fn new(sensitivity: f64, epsilon: f64, delta: f64, dim: usize) -> Result<Self> {
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(Error::param(
                "sensitivity",
                format!("must be finite and > 0, got {sensitivity}"),
            ));
        }
        if dim == 0 {
            return Err(Error::param("dim", "must be >= 1"));
        }
        let sigma0 = analytic_sigma(sensitivity, epsilon, delta)?;
        let grid_exp = sigma0.log2().floor() as i32 - super::laplace::GRID_BITS_BELOW_SCALE;
        let gamma = (grid_exp as f64).exp2();
        let effective = sensitivity + (dim as f64).sqrt() * gamma;
        let sigma = zcdp_sigma(effective, epsilon, delta)?;
        Ok(Self {
            sensitivity,
            epsilon,
            delta,
            dim,
            sigma,
            grid_exp,
        })
    }

    /// Grid step.
    pub fn gamma(&self) -> f64 {
        (self.grid_exp as f64).exp2()
    }

    /// Privacy map: delta at this mechanism's epsilon for an L2 input distance.
    pub fn privacy_map(&self, d_in: f64) -> f64 {
        let l2 = d_in + (self.dim as f64).sqrt() * self.gamma();
        zcdp_delta(l2 * l2 / (2.0 * self.sigma * self.sigma), self.epsilon)
    }

    /// Release a vector.
    pub fn release(&self, x: &[f64], rng: &mut NoiseRng) -> Result<Vec<f64>> {
        if x.len() != self.dim {
            return Err(Error::param(
                "value",
                format!("expected {} coordinates, got {}", self.dim, x.len()),
            ));
        }
        if let Some(i) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::param(
                "value",
                format!("coordinate {i} of the Gaussian mechanism's input is not finite"),
            ));
        }
        add_noise_on_grid(x, self.sigma, self.gamma(), rng)
    }
}

/// Smallest sigma whose discrete Gaussian is (eps, delta)-DP for L2 sensitivity `l2` through
/// zCDP: `zcdp_delta(l2^2 / (2 sigma^2), eps) <= delta`, by bisection.
pub(crate) fn zcdp_sigma(l2: f64, epsilon: f64, delta: f64) -> Result<f64> {
    smallest_sigma(l2, epsilon, delta, |sigma| {
        zcdp_delta(l2 * l2 / (2.0 * sigma * sigma), epsilon) <= delta
    })
}

/// `exact + Z` per coordinate, `Z` an exact discrete Gaussian of standard deviation `std`
/// in steps of `grid`, released on that grid (input rounded to it). The caller states the
/// sensitivity and accounts for the rounding (`sqrt(d) * grid` more L2 sensitivity); this
/// only samples. `std / grid` must lie in `[1e-3, 2^40]`: callers choose the grid from the
/// public `std`, so a failure here is a calibration bug, reported as an error.
pub fn add_noise_on_grid(
    exact: &[f64],
    std: f64,
    grid: f64,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>> {
    let law = DiscreteGaussian::new(std / grid)?;
    Ok(exact
        .iter()
        .map(|&v| grid * ((v / grid).round() + law.sample(rng) as f64))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stattest::{ALPHA, ks_test, normal_cdf};

    #[test]
    fn analytic_calibration_matches_known_values() {
        // Balle & Wang: for eps = 1, delta = 1e-5, Delta = 1, sigma is about 3.73
        // (the classic bound gives 4.84).
        let s = analytic_sigma(1.0, 1.0, 1e-5).expect("valid");
        assert!((s - 3.73).abs() < 0.02, "sigma = {s}");
        assert!(analytic_delta(1.0, 1.0, s) <= 1e-5);
        assert!(analytic_delta(1.0, 1.0, s * 0.99) > 1e-5);
        // Classic bound is always looser where it applies.
        let classic = (2.0 * (1.25f64 / 1e-5).ln()).sqrt();
        assert!(s < classic);
    }

    fn samples(factor: f64, seed: u64) -> (Vec<f64>, f64) {
        let m = GaussianMechanism::new(1.0, 0.5, 1e-6, 1).expect("valid");
        let mut rng = NoiseRng::from_seed_quiet(seed);
        let v = (0..100_000)
            .map(|_| {
                let mut noisy = m.clone();
                noisy.sigma *= factor;
                noisy.release(&[0.0], &mut rng).expect("ok")[0]
            })
            .collect();
        (v, m.sigma)
    }

    #[test]
    fn gaussian_fits_and_power_check() {
        let (mut v, s) = samples(1.0, 21);
        let (_, p) = ks_test(&mut v, |x| normal_cdf(x, s));
        assert!(p > ALPHA, "p = {p}");
        let (mut v, s) = samples(0.7, 22);
        let (_, p) = ks_test(&mut v, |x| normal_cdf(x, s));
        assert!(p < ALPHA, "power: p = {p}");
    }

    #[test]
    fn privacy_map_and_errors() {
        let m = GaussianMechanism::new(2.0, 0.8, 1e-6, 4).expect("valid");
        assert!(m.privacy_map(2.0) <= 1e-6);
        assert!(m.privacy_map(2.0) > 0.9e-6, "the calibration is tight");
        // The zCDP calibration of the discrete law costs a few percent over the analytic one.
        let analytic = analytic_sigma(2.0, 0.8, 1e-6).expect("ok");
        assert!(m.sigma > analytic && m.sigma < 1.2 * analytic);
        assert!(GaussianMechanism::new(2.0, 0.8, 0.0, 4).is_err());
        assert!(GaussianMechanism::new(2.0, 0.8, 1.5, 4).is_err());
        assert!(
            m.release(&[1.0, 2.0], &mut NoiseRng::from_seed_quiet(1))
                .is_err()
        );
    }
}

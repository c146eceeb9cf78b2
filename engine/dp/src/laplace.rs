//! Float-safe scalar Laplace mechanism: a discrete Laplace on a power-of-two grid.
//!
//! Why not `x + b * Laplace()` in floats: Mironov (CCS 2012) showed the set of reachable
//! floating-point outputs depends on `x`, which leaks it. Here every output lies on the
//! grid `gamma * Z` with `gamma = 2^k` chosen from the scale only, so the support does not
//! depend on the input (the approach of OpenDP and Google's libraries).
//!
//! Privacy map (proof beside the code):
//! * input sensitivity `Delta` (|f(D) - f(D')| <= Delta, the caller states it);
//! * the input is rounded to the grid: `k(x) = round(x / gamma)`, so neighbouring inputs
//!   differ by at most `Delta_int = ceil(Delta / gamma) + 1` grid steps;
//! * discrete Laplace with parameter `t` (P(z) proportional to exp(-|z| / t)) on the
//!   integers is `Delta_int / t`-DP for integer sensitivity `Delta_int`;
//! * so with `t = Delta_int / eps` the release `gamma * (k(x) + Z)` is eps-DP.
//!
//! The grid is `gamma = 2^(floor(log2(Delta min(1, 1/eps))) - 20)`: at least 2^20 grid steps
//! below the sensitivity, so the rounding costs a relative `2^-20` in the scale (accounted,
//! not ignored), and the integer parameter stays within the exact sampler's range.
//!
//! Sampler: [`super::exact::DiscreteLaplace`], the exact integer sampler of Canonne, Kamath
//! and Steinke (2020), with `t = 2^k / r >= Delta_int / eps` checked in integers; there is no
//! floating-point draw and no bounded support (the old `floor(t E)` with a 53-bit uniform
//! could not exceed about 37 t).

use super::exact::DiscreteLaplace;
use super::rng::NoiseRng;
use kinsey_core::{Result, check_epsilon};
use serde::Serialize;

/// Bits of grid resolution below the sensitivity (and below the scale).
pub const GRID_BITS_BELOW_SCALE: i32 = 20;

/// The scalar Laplace mechanism, calibrated once, applied to many values.
#[derive(Debug, Clone, Serialize)]
pub struct LaplaceMechanism {
    /// Stated L1 sensitivity of the query (|f(D) - f(D')| for neighbours).
    pub sensitivity: f64,
    /// Privacy parameter.
    pub epsilon: f64,
    /// Grid exponent k: outputs are multiples of 2^k.
    pub grid_exp: i32,
    /// Discrete Laplace parameter in grid units.
    pub t: f64,
    /// The exact sampler (`t = 2^k / r`).
    #[serde(skip)]
    law: DiscreteLaplace,
}

/// Integer sensitivity after rounding onto the grid.
fn grid_sensitivity(sensitivity: f64, gamma: f64) -> f64 {
    (sensitivity / gamma).ceil() + 1.0
}

impl LaplaceMechanism {
    /// Calibrate for sensitivity `Delta` and privacy `eps`.
    pub fn new(sensitivity: f64, epsilon: f64) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(kinsey_core::Error::param(
                "sensitivity",
                format!("must be finite and > 0, got {sensitivity}"),
            ));
        }
        let grid_exp =
            (sensitivity * (1.0 / epsilon).min(1.0)).log2().floor() as i32 - GRID_BITS_BELOW_SCALE;
        let gamma = (grid_exp as f64).exp2();
        let law =
            DiscreteLaplace::for_sensitivity(grid_sensitivity(sensitivity, gamma) as u64, epsilon)?;
        Ok(Self {
            sensitivity,
            epsilon,
            grid_exp,
            t: law.t(),
            law,
        })
    }

    /// Grid step `gamma = 2^k`.
    pub fn gamma(&self) -> f64 {
        (self.grid_exp as f64).exp2()
    }

    /// Effective continuous scale `b = gamma * t` (slightly above `Delta / eps`).
    pub fn scale(&self) -> f64 {
        self.gamma() * self.t
    }

    /// Privacy map: the epsilon this calibration gives for an input distance `d_in`.
    pub fn privacy_map(&self, d_in: f64) -> f64 {
        self.law
            .epsilon_for(grid_sensitivity(d_in, self.gamma()) as u64)
    }

    /// The exact integer law of the noise (in grid steps).
    pub fn law(&self) -> DiscreteLaplace {
        self.law
    }

    /// Release `x` privately.
    pub fn release(&self, x: f64, rng: &mut NoiseRng) -> Result<f64> {
        if !x.is_finite() {
            return Err(kinsey_core::Error::param(
                "value",
                format!("Laplace input must be finite, got {x}"),
            ));
        }
        let gamma = self.gamma();
        let k = (x / gamma).round();
        Ok(gamma * (k + self.law.sample(rng) as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stattest::{ALPHA, ks_test, laplace_cdf};

    fn draws(scale_factor: f64, n: usize, seed: u64) -> (Vec<f64>, f64) {
        let m = LaplaceMechanism::new(1.0, 0.5).expect("valid");
        // scale_factor < 1 simulates a mechanism whose noise is too small.
        let weak = LaplaceMechanism::new(1.0, 0.5 / scale_factor).expect("valid");
        let mut rng = NoiseRng::from_seed_quiet(seed);
        let v = (0..n)
            .map(|_| weak.release(0.0, &mut rng).expect("finite"))
            .collect();
        (v, m.scale())
    }

    #[test]
    fn laplace_fits_its_distribution() {
        let (mut v, b) = draws(1.0, 200_000, 11);
        let (_, p) = ks_test(&mut v, |x| laplace_cdf(x, b));
        assert!(p > ALPHA, "p = {p}");
    }

    #[test]
    fn laplace_power_check_rejects_30_percent_too_small() {
        let (mut v, b) = draws(0.7, 200_000, 12);
        let (_, p) = ks_test(&mut v, |x| laplace_cdf(x, b));
        assert!(
            p < ALPHA,
            "the test cannot see a 30% smaller scale: p = {p}"
        );
    }

    #[test]
    fn outputs_lie_on_the_grid_whatever_the_input() {
        let m = LaplaceMechanism::new(1.0, 1.0).expect("valid");
        let mut rng = NoiseRng::from_seed_quiet(5);
        for x in [0.1, 1.0 / 3.0, 1e-9, 12345.678] {
            let y = m.release(x, &mut rng).expect("finite");
            assert_eq!((y / m.gamma()).fract(), 0.0);
        }
    }

    #[test]
    fn privacy_map_meets_epsilon_and_calibration_is_near_nominal() {
        let m = LaplaceMechanism::new(2.0, 0.3).expect("valid");
        assert!(m.privacy_map(2.0) <= 0.3 + 1e-15);
        assert!(m.privacy_map(4.0) > 0.3);
        let nominal = 2.0 / 0.3;
        assert!((m.scale() / nominal - 1.0).abs() < 3e-4);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(LaplaceMechanism::new(1.0, 0.0).is_err());
        assert!(LaplaceMechanism::new(1.0, f64::NAN).is_err());
        assert!(LaplaceMechanism::new(-1.0, 1.0).is_err());
        let m = LaplaceMechanism::new(1.0, 1.0).expect("valid");
        assert!(
            m.release(f64::NAN, &mut NoiseRng::from_seed_quiet(1))
                .is_err()
        );
    }
}

//! Exponential mechanism (McSherry & Talwar 2007; seed 002 slides on choosing an attribute).
//!
//! Privacy map: for a utility `u(D, r)` with sensitivity `Delta_u` (max over r of
//! |u(D, r) - u(D', r)| for neighbours), selecting r with probability proportional to
//! `exp(eps u(D, r) / (2 Delta_u))` is eps-DP. If the utility is monotone (all scores move in
//! the same direction between neighbours) the factor 2 can be dropped; the caller says so.
//!
//! Sampler: Gumbel-max. `argmax_r (eps u_r / (2 Delta_u) + G_r)` with i.i.d. standard Gumbel
//! `G_r = -ln(E_r)`, `E_r ~ Exp(1)`, has exactly the softmax law above.

use super::rng::NoiseRng;
use kinsey_core::{Error, Result, check_epsilon};
use serde::Serialize;

/// Calibrated exponential mechanism over a finite candidate set.
#[derive(Debug, Clone, Serialize)]
pub struct ExponentialMechanism {
    /// Sensitivity of the score.
    pub sensitivity: f64,
    /// Privacy parameter.
    pub epsilon: f64,
    pub(crate) monotone: bool,
}

impl ExponentialMechanism {
    /// The mechanism for a score of the given sensitivity (`monotone`: the score only moves one
    /// way between neighbours, which halves the exponent's factor).
    pub fn new(sensitivity: f64, epsilon: f64, monotone: bool) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(Error::param(
                "sensitivity",
                format!("must be finite and > 0, got {sensitivity}"),
            ));
        }
        Ok(Self {
            sensitivity,
            epsilon,
            monotone,
        })
    }

    /// Multiplier applied to scores.
    pub(crate) fn temperature(&self) -> f64 {
        let factor = if self.monotone { 1.0 } else { 2.0 };
        self.epsilon / (factor * self.sensitivity)
    }

    /// Selection probabilities (for tests and for reports).
    pub fn probabilities(&self, scores: &[f64]) -> Vec<f64> {
        let t = self.temperature();
        let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = scores.iter().map(|s| ((s - m) * t).exp()).collect();
        let z: f64 = w.iter().sum();
        w.into_iter().map(|x| x / z).collect()
    }

    /// Choose an index privately.
    pub fn select(&self, scores: &[f64], rng: &mut NoiseRng) -> Result<usize> {
        if scores.is_empty() {
            return Err(Error::param("scores", "no candidates to choose from"));
        }
        if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
            return Err(Error::param(
                "scores",
                format!("candidate {i} has a non-finite score"),
            ));
        }
        let t = self.temperature();
        let mut best = (f64::NEG_INFINITY, 0);
        for (i, s) in scores.iter().enumerate() {
            let g = -rng.exp1().ln();
            let v = s * t + g;
            if v > best.0 {
                best = (v, i);
            }
        }
        Ok(best.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stattest::{ALPHA, chi_square_test};

    fn counts(mech: &ExponentialMechanism, scores: &[f64], n: usize, seed: u64) -> Vec<u64> {
        let mut rng = NoiseRng::from_seed_quiet(seed);
        let mut c = vec![0u64; scores.len()];
        for _ in 0..n {
            c[mech.select(scores, &mut rng).expect("ok")] += 1;
        }
        c
    }

    #[test]
    fn selection_law_fits_and_power_check() {
        let scores = [0.0, 1.0, 2.0, 3.0, 5.0];
        let m = ExponentialMechanism::new(1.0, 1.0, false).expect("valid");
        let n = 200_000;
        let expected: Vec<f64> = m
            .probabilities(&scores)
            .iter()
            .map(|p| p * n as f64)
            .collect();
        let (_, p) = chi_square_test(&counts(&m, &scores, n, 1), &expected);
        assert!(p > ALPHA, "p = {p}");
        // Noise 30% too small = temperature 1/0.7 too large.
        let hot = ExponentialMechanism::new(1.0 / 0.7, 1.0, false).expect("valid");
        let hot = ExponentialMechanism {
            sensitivity: 0.7,
            ..hot
        };
        let (_, p) = chi_square_test(&counts(&hot, &scores, n, 2), &expected);
        assert!(p < ALPHA, "power: p = {p}");
    }

    #[test]
    fn probabilities_ratio_is_bounded_by_eps() {
        let m = ExponentialMechanism::new(1.0, 0.7, false).expect("valid");
        let a = m.probabilities(&[0.0, 1.0, 2.0]);
        let b = m.probabilities(&[1.0, 0.0, 2.0]); // neighbour: each score moved by <= 1
        for (x, y) in a.iter().zip(&b) {
            assert!((x / y).ln().abs() <= 0.7 + 1e-12);
        }
    }

    #[test]
    fn errors() {
        let m = ExponentialMechanism::new(1.0, 1.0, true).expect("valid");
        let mut r = NoiseRng::from_seed_quiet(1);
        assert!(m.select(&[], &mut r).is_err());
        assert!(m.select(&[1.0, f64::NAN], &mut r).is_err());
        assert!(ExponentialMechanism::new(0.0, 1.0, true).is_err());
    }
}

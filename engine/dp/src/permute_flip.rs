//! Permute-and-flip (McKenna & Sheldon, NeurIPS 2020): choose one of `m` candidates with
//! integer scores, `epsilon`-DP for scores of sensitivity `Delta`, never worse in expected
//! score than the exponential mechanism at the same epsilon.
//!
//! The mechanism: visit the candidates in a uniformly random order; accept candidate `r`
//! with probability `exp(epsilon (s_r - s*) / (2 Delta))`, where `s*` is the best score;
//! the best candidate is accepted with probability 1, so the walk ends. McKenna & Sheldon
//! prove it `epsilon`-DP (Theorem 1) for any scores whose sensitivity is `Delta`
//! (`|s_r(D) - s_r(D')| <= Delta` for every `r` and neighbours `D`, `D'`).
//!
//! Exact: every acceptance is [`bernoulli_exp_minus`] of a ratio of integers, so no
//! floating-point number enters a draw. Epsilon enters as a dyadic rational: it is rounded
//! *down* to 31 significant bits ([`exact_epsilon`]), which only strengthens the guarantee,
//! and the rounded value is what the mechanism uses and states.

use crate::exact::{BitReader, bernoulli_exp_minus};
use crate::rng::NoiseRng;
use kinsey_core::{Error, Result, check_epsilon};

/// Epsilon rounded down to `m / 2^j` with `m < 2^31`: `(m, j)`.
pub fn exact_epsilon(epsilon: f64) -> Result<(u128, u32)> {
    check_epsilon("epsilon", epsilon)?;
    // j with epsilon 2^j in [2^30, 2^31).
    let j = 30 - epsilon.log2().floor() as i64;
    if !(0..=120).contains(&j) {
        return Err(Error::param(
            "epsilon",
            format!("{epsilon:e} is outside what permute-and-flip supports (2^-90 to 2^30)"),
        ));
    }
    let m = (epsilon * (j as f64).exp2()).floor() as u128;
    Ok((m.max(1), j as u32))
}

/// The permute-and-flip mechanism, calibrated.
#[derive(Debug, Clone, Copy)]
pub struct PermuteAndFlip {
    /// Epsilon as used: `eps_num / 2^eps_shift`, at most the epsilon asked for.
    eps_num: u128,
    eps_shift: u32,
    /// The scores' sensitivity.
    sensitivity: u128,
}

impl PermuteAndFlip {
    /// The mechanism for scores of sensitivity `sensitivity` (>= 1) at `epsilon`.
    pub fn new(sensitivity: u64, epsilon: f64) -> Result<Self> {
        if sensitivity == 0 || sensitivity >= 1 << 40 {
            return Err(Error::param(
                "sensitivity",
                format!("score sensitivity {sensitivity} outside 1 ..= 2^40"),
            ));
        }
        let (eps_num, eps_shift) = exact_epsilon(epsilon)?;
        Ok(Self {
            eps_num,
            eps_shift,
            sensitivity: u128::from(sensitivity),
        })
    }

    /// The epsilon the mechanism uses (at most the one asked for).
    pub fn epsilon(&self) -> f64 {
        self.eps_num as f64 / (self.eps_shift as f64).exp2()
    }

    /// The acceptance exponent of a candidate `gap = s* - s_r` below the best, as the
    /// ratio `eps gap / (2 Delta)` of integers; `None` when it does not fit 128 bits (then
    /// the candidate's acceptance probability is below `exp(-2^40)` and it is treated as
    /// rejected, a change of the law smaller than `2^-1000`, stated in the release).
    fn exponent(&self, gap: u64) -> Option<(u128, u128)> {
        let num = self.eps_num.checked_mul(u128::from(gap))?;
        let den = (2 * self.sensitivity).checked_mul(1u128 << self.eps_shift)?;
        Some((num, den))
    }

    /// The probability of accepting a candidate `gap` below the best (for tests and for
    /// the exact law of small cases).
    pub fn accept_probability(&self, gap: u64) -> f64 {
        match self.exponent(gap) {
            Some((n, d)) => (-(n as f64) / d as f64).exp(),
            None => 0.0,
        }
    }

    /// The index of the chosen candidate. `scores` must not be empty.
    pub fn choose(&self, scores: &[i128], rng: &mut NoiseRng) -> Result<usize> {
        let best = scores
            .iter()
            .copied()
            .max()
            .ok_or_else(|| Error::param("candidates", "no candidate to choose from"))?;
        let mut order: Vec<usize> = (0..scores.len()).collect();
        rng.shuffle(&mut order);
        let mut bits = BitReader::new(rng);
        for r in order {
            let gap = u64::try_from(best - scores[r]).unwrap_or(u64::MAX);
            if gap == 0 {
                return Ok(r);
            }
            if let Some((num, den)) = self.exponent(gap)
                && bernoulli_exp_minus(&mut bits, num, den)
            {
                return Ok(r);
            }
        }
        // Unreachable: the best candidate (gap 0) is accepted when visited.
        Err(Error::Numerical(
            "permute-and-flip visited every candidate without accepting".into(),
        ))
    }
}

/// The exact output law of permute-and-flip on `gaps` (each candidate's `s* - s_r`), by
/// summing over every visiting order: for tests of small cases (at most 8 candidates).
pub fn exact_law(mech: &PermuteAndFlip, gaps: &[u64]) -> Vec<f64> {
    let p: Vec<f64> = gaps.iter().map(|&g| mech.accept_probability(g)).collect();
    let m = p.len();
    let mut law = vec![0.0; m];
    // P(first accepted is r) = sum over subsets S visited before r (not containing r) of
    // |S|! (m - 1 - |S|)! / m! * prod_{s in S} (1 - p_s) * p_r.
    let fact = |k: usize| (1..=k).map(|x| x as f64).product::<f64>();
    for (r, pr) in p.iter().enumerate() {
        let others: Vec<usize> = (0..m).filter(|&s| s != r).collect();
        for mask in 0u32..(1 << others.len()) {
            let size = mask.count_ones() as usize;
            let fail: f64 = others
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, &s)| 1.0 - p[s])
                .product();
            law[r] += fact(size) * fact(m - 1 - size) / fact(m) * fail * pr;
        }
    }
    law
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stattest::{ALPHA, chi_square_test};

    #[test]
    fn epsilon_is_rounded_down_to_a_dyadic() {
        for eps in [1.0, 0.1, 3.7, 1e-6, 100.0] {
            let (m, j) = exact_epsilon(eps).expect("ok");
            let used = m as f64 / (j as f64).exp2();
            assert!(used <= eps && used > eps * (1.0 - 2e-9), "{eps}: {used}");
        }
        assert!(exact_epsilon(0.0).is_err() && exact_epsilon(f64::NAN).is_err());
    }

    #[test]
    fn the_exact_law_sums_to_one_and_favours_the_best() {
        let mech = PermuteAndFlip::new(1, 1.0).expect("ok");
        let law = exact_law(&mech, &[0, 1, 3, 0]);
        assert!((law.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(law[0] > law[1] && law[1] > law[2] && (law[0] - law[3]).abs() < 1e-12);
    }

    /// The choices follow the exact law of permute-and-flip (chi-square, alpha = 1e-6); the
    /// same test rejects the mechanism run with 30% less noise (epsilon / 0.7).
    #[test]
    fn choices_fit_the_law_and_30_percent_less_noise_is_rejected() {
        let scores: [i128; 5] = [10, 8, 9, 5, 10 - 3];
        let gaps: Vec<u64> = scores.iter().map(|&s| (10 - s) as u64).collect();
        let mech = PermuteAndFlip::new(2, 1.5).expect("ok");
        let law = exact_law(&mech, &gaps);
        let n = 100_000;
        let draw = |m: &PermuteAndFlip, seed: u64| {
            let mut rng = NoiseRng::from_seed_quiet(seed);
            let mut counts = vec![0u64; scores.len()];
            for _ in 0..n {
                counts[m.choose(&scores, &mut rng).expect("choice")] += 1;
            }
            counts
        };
        let expected: Vec<f64> = law.iter().map(|p| p * n as f64).collect();
        let (_, p) = chi_square_test(&draw(&mech, 1), &expected);
        assert!(p > ALPHA, "p = {p}");
        let weak = PermuteAndFlip::new(2, 1.5 / 0.7).expect("ok");
        let (_, p) = chi_square_test(&draw(&weak, 2), &expected);
        assert!(p < ALPHA, "30% less noise must be rejected, p = {p}");
    }

    /// Privacy: on neighbouring score vectors (each score moved by at most Delta), every
    /// output's probability ratio is at most e^epsilon.
    #[test]
    fn neighbouring_scores_change_each_probability_by_at_most_e_to_the_epsilon() {
        let eps = 0.8;
        let mech = PermuteAndFlip::new(3, eps).expect("ok");
        let a: [i64; 4] = [0, 2, 7, 4];
        let b: [i64; 4] = [3, -1, 4, 7];
        let gaps = |s: &[i64]| {
            let best = *s.iter().max().expect("nonempty");
            s.iter().map(|&x| (best - x) as u64).collect::<Vec<_>>()
        };
        let (la, lb) = (exact_law(&mech, &gaps(&a)), exact_law(&mech, &gaps(&b)));
        for (x, y) in la.iter().zip(&lb) {
            assert!(x / y <= eps.exp() * (1.0 + 1e-9) && y / x <= eps.exp() * (1.0 + 1e-9));
        }
    }
}

//! Goodness-of-fit tests used by the mechanisms' statistical tests (and by the experiments).
//!
//! Every sampler is tested twice: the fit test must accept the sampler at alpha = 1e-6, and
//! the *same* test must reject a sampler whose scale is 30% too small (power check), so a
//! test that cannot fail is caught by its own power check.

use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The significance level used by the statistical tests.
pub const ALPHA: f64 = 1e-6;

/// One-sample Kolmogorov-Smirnov test. Returns (D statistic, asymptotic p-value).
pub fn ks_test(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in samples.iter().enumerate() {
        let f = cdf(x);
        let lo = f - i as f64 / n;
        let hi = (i as f64 + 1.0) / n - f;
        d = d.max(lo).max(hi);
    }
    (d, kolmogorov_sf((n.sqrt() + 0.12 + 0.11 / n.sqrt()) * d))
}

/// Survival function of the Kolmogorov distribution, Q(t) = 2 sum (-1)^(k-1) exp(-2 k^2 t^2).
pub(crate) fn kolmogorov_sf(t: f64) -> f64 {
    if t < 0.2 {
        return 1.0;
    }
    let mut s = 0.0;
    for k in 1..200 {
        let k = k as f64;
        let term = (-2.0 * k * k * t * t).exp();
        s += if (k as i64) % 2 == 1 { term } else { -term };
        if term < 1e-300 {
            break;
        }
    }
    (2.0 * s).clamp(0.0, 1.0)
}

/// Pearson chi-square goodness of fit. `expected` are expected counts (same length as
/// `observed`); bins with expected count below 5 are pooled into their neighbour.
/// Returns (statistic, p-value).
pub fn chi_square_test(observed: &[u64], expected: &[f64]) -> (f64, f64) {
    assert_eq!(observed.len(), expected.len());
    let mut obs = Vec::new();
    let mut exp = Vec::new();
    let (mut o_acc, mut e_acc) = (0.0, 0.0);
    for (&o, &e) in observed.iter().zip(expected) {
        o_acc += o as f64;
        e_acc += e;
        if e_acc >= 5.0 {
            obs.push(o_acc);
            exp.push(e_acc);
            o_acc = 0.0;
            e_acc = 0.0;
        }
    }
    if e_acc > 0.0 || o_acc > 0.0 {
        if let (Some(lo), Some(le)) = (obs.last_mut(), exp.last_mut()) {
            *lo += o_acc;
            *le += e_acc;
        } else {
            obs.push(o_acc);
            exp.push(e_acc);
        }
    }
    let stat: f64 = obs
        .iter()
        .zip(&exp)
        .map(|(o, e)| (o - e) * (o - e) / e)
        .sum();
    let df = (obs.len() as f64 - 1.0).max(1.0);
    let p = ChiSquared::new(df).map(|c| c.sf(stat)).unwrap_or(0.0);
    (stat, p)
}

/// CDF of the Laplace distribution with location 0 and scale b.
/// Chi-square test of counts against the uniform distribution over their bins.
pub fn chi_square_uniform(observed: &[u64]) -> (f64, f64) {
    let total: u64 = observed.iter().sum();
    let e = total as f64 / observed.len().max(1) as f64;
    chi_square_test(observed, &vec![e; observed.len()])
}

/// CDF of the Laplace law of scale `b`.
pub fn laplace_cdf(x: f64, b: f64) -> f64 {
    if x < 0.0 {
        0.5 * (x / b).exp()
    } else {
        1.0 - 0.5 * (-x / b).exp()
    }
}

/// CDF of the normal distribution N(0, sigma^2).
pub fn normal_cdf(x: f64, sigma: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / (sigma * std::f64::consts::SQRT_2))
}

/// CDF of Gamma(shape k, scale theta).
pub fn gamma_cdf(x: f64, k: f64, theta: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    statrs::function::gamma::gamma_lr(k, x / theta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_rejects_wrong_distribution_and_accepts_right_one() {
        // Deterministic quantiles of U(0,1) pass; a shifted set fails.
        let mut good: Vec<f64> = (0..10_000).map(|i| (i as f64 + 0.5) / 10_000.0).collect();
        let (_, p) = ks_test(&mut good, |x| x.clamp(0.0, 1.0));
        assert!(p > 0.99);
        let mut bad: Vec<f64> = (0..10_000)
            .map(|i| ((i as f64 + 0.5) / 10_000.0).powi(2))
            .collect();
        let (_, p) = ks_test(&mut bad, |x| x.clamp(0.0, 1.0));
        assert!(p < ALPHA);
    }

    #[test]
    fn chi_square_pools_small_bins() {
        let (s, p) = chi_square_test(&[50, 50, 1, 0], &[50.0, 50.0, 0.5, 0.5]);
        assert!(s < 1.0 && p > 0.3);
        let (_, p) = chi_square_test(&[100, 0], &[50.0, 50.0]);
        assert!(p < ALPHA);
    }
}

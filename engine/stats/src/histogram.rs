//! DP histograms and counts (seed 002, slides 20-21 and 25-27).
//!
//! Bins are public: equal-width numeric bins on a declared `[lo, hi)` (plus an underflow
//! and an overflow bin, so no row is dropped and the sensitivity argument holds), or a
//! declared list of categories (plus an "(other)" bin). Deriving bins or categories from the
//! data would leak which values occur.
//!
//! Sensitivity (L1, of the vector of bin counts):
//! * bounded neighbours (replace one row): one bin loses the row and one gains it: 2;
//! * unbounded neighbours (add/remove one row): one bin changes by 1: 1.
//!
//! Privacy map: each count gets the float-safe discrete Laplace of [`LaplaceMechanism`]
//! calibrated to that sensitivity and eps, which makes the whole vector eps-DP
//! (Dwork et al. 2006 with the L1 sensitivity above). The total count is published exactly
//! only where it is n itself under bounded neighbours (no row filter): a count behind a
//! predicate is not n and is private. Otherwise it is the sum of the noisy bins
//! (post-processing, no extra budget). Clamping negatives to 0 and rounding is
//! post-processing too; both the raw and the post-processed counts are released.

use kinsey_core::{Error, Result};
use kinsey_dp::release::{Guarantee, GuaranteeKind};
use kinsey_dp::{LaplaceMechanism, Neighbours, NoiseRng};
use serde::Serialize;

/// The public bins.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binning {
    /// `bins` equal-width bins on `[lo, hi)`, plus `< lo` and `>= hi`.
    Numeric {
        /// Lower end of the first bin.
        lo: f64,
        /// Upper end of the last bin.
        hi: f64,
        /// Number of equal-width bins.
        bins: usize,
    },
    /// The listed categories, plus "(other)".
    Categories(Vec<String>),
}

impl Binning {
    /// Parse `LO:HI:BINS`.
    pub fn numeric(spec: &str) -> Result<Self> {
        let bad = |m: &str| Error::param("bins", format!("'{spec}': {m} (expected LO:HI:BINS)"));
        let p: Vec<&str> = spec.split(':').collect();
        let [lo, hi, bins] = p.as_slice() else {
            return Err(bad("malformed"));
        };
        let lo: f64 = lo.parse().map_err(|_| bad("LO is not a number"))?;
        let hi: f64 = hi.parse().map_err(|_| bad("HI is not a number"))?;
        let bins: usize = bins.parse().map_err(|_| bad("BINS is not a count"))?;
        if !(lo.is_finite() && hi.is_finite() && lo < hi) || bins == 0 || bins > 1_000_000 {
            return Err(bad("need finite LO < HI and 1 <= BINS <= 1e6"));
        }
        Ok(Self::Numeric { lo, hi, bins })
    }

    /// Declared categories, one bin each.
    pub fn categories(list: &[String]) -> Result<Self> {
        if list.is_empty() {
            return Err(Error::param("categories", "the category list is empty"));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = list.iter().find(|c| !seen.insert(c.as_str())) {
            return Err(Error::param(
                "categories",
                format!("category '{dup}' is listed twice"),
            ));
        }
        Ok(Self::Categories(list.to_vec()))
    }

    /// Bin labels, in output order.
    pub fn labels(&self) -> Vec<String> {
        match self {
            Binning::Numeric { lo, hi, bins } => {
                let w = (hi - lo) / *bins as f64;
                let mut v = vec![format!("< {lo}")];
                v.extend(
                    (0..*bins)
                        .map(|b| format!("[{}, {})", lo + w * b as f64, lo + w * (b + 1) as f64)),
                );
                v.push(format!(">= {hi}"));
                v
            }
            Binning::Categories(c) => {
                let mut v = c.clone();
                v.push("(other)".into());
                v
            }
        }
    }

    /// Exact counts of numeric values.
    pub fn count_numeric(&self, values: &[f64]) -> Result<Vec<u64>> {
        let Binning::Numeric { lo, hi, bins } = *self else {
            return Err(Error::param(
                "bins",
                "categorical bins need categorical values",
            ));
        };
        let mut c = vec![0u64; bins + 2];
        let w = (hi - lo) / bins as f64;
        for &v in values {
            if !v.is_finite() {
                return Err(Error::param("value", format!("non-finite value {v}")));
            }
            let b = if v < lo {
                0
            } else if v >= hi {
                bins + 1
            } else {
                (((v - lo) / w) as usize).min(bins - 1) + 1
            };
            c[b] += 1;
        }
        Ok(c)
    }

    /// Exact counts of category labels.
    pub fn count_categories(&self, values: &[String]) -> Result<Vec<u64>> {
        let Binning::Categories(cats) = self else {
            return Err(Error::param("bins", "numeric bins need numeric values"));
        };
        let index: std::collections::HashMap<&str, usize> = cats
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), i))
            .collect();
        let mut c = vec![0u64; cats.len() + 1];
        for v in values {
            c[index.get(v.as_str()).copied().unwrap_or(cats.len())] += 1;
        }
        Ok(c)
    }
}

/// L1 sensitivity of a histogram under a neighbour definition.
pub(crate) fn histogram_sensitivity(neighbours: Neighbours) -> f64 {
    neighbours.factor()
}

/// A released histogram.
#[derive(Debug, Clone, Serialize)]
pub struct HistogramRelease {
    /// The neighbour definition the release is for.
    pub neighbours: Neighbours,
    /// L1 sensitivity of the counts.
    pub sensitivity: f64,
    /// Privacy parameter.
    pub epsilon: f64,
    /// The noise.
    pub mechanism: LaplaceMechanism,
    /// Standard deviation of each noisy count (sqrt(2) times the Laplace scale).
    pub noise_std: f64,
    /// Bin labels.
    pub labels: Vec<String>,
    /// The noisy counts as released (on the mechanism's grid).
    pub noisy: Vec<f64>,
    /// Post-processing: rounded and clamped at 0.
    pub counts: Vec<u64>,
    /// Exact n under bounded neighbours without a row filter (public there); otherwise the
    /// sum of the noisy bins.
    pub total: f64,
    /// Whether the total is released exactly (bounded neighbours without a filter: n is
    /// public).
    pub total_is_exact: bool,
    /// What the release guarantees, as every release states it.
    pub guarantee: Guarantee,
}

/// Release `exact` bin counts under `neighbours` with budget `epsilon`; `filtered` says
/// whether a row filter chose the rows counted (then their total is not n, and is private).
pub fn release(
    exact: &[u64],
    labels: Vec<String>,
    neighbours: Neighbours,
    epsilon: f64,
    filtered: bool,
    rng: &mut NoiseRng,
) -> Result<HistogramRelease> {
    let sensitivity = histogram_sensitivity(neighbours);
    let mech = LaplaceMechanism::new(sensitivity, epsilon)?;
    let noisy = exact
        .iter()
        .map(|&c| mech.release(c as f64, rng))
        .collect::<Result<Vec<f64>>>()?;
    let counts = noisy.iter().map(|v| v.round().max(0.0) as u64).collect();
    let (total, total_is_exact) = if neighbours.n_is_public() && !filtered {
        (exact.iter().sum::<u64>() as f64, true)
    } else {
        (noisy.iter().sum(), false)
    };
    let noise_std = std::f64::consts::SQRT_2 * mech.scale();
    let guarantee = Guarantee {
        kind: GuaranteeKind::Pure,
        epsilon,
        delta: 0.0,
        neighbours: neighbours.relation(),
        mechanism: format!(
            "exact discrete Laplace (two-sided geometric on the grid of 2^{}) on each bin's \
             count, scale {}",
            mech.grid_exp,
            mech.scale()
        ),
        sensitivity: format!(
            "{sensitivity} (L1 over the bins: {})",
            if sensitivity > 1.0 {
                "replacing one row moves one count down and another up"
            } else {
                "adding or removing one row changes one count by 1"
            }
        ),
        sensitivity_value: Some(sensitivity),
        rho: None,
        noise_std: Some(noise_std),
    };
    Ok(HistogramRelease {
        neighbours,
        sensitivity,
        epsilon,
        guarantee,
        noise_std,
        mechanism: mech,
        labels,
        noisy,
        counts,
        total,
        total_is_exact,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_dp::stattest::{ALPHA, ks_test, laplace_cdf};

    #[test]
    fn bins_cover_every_value() {
        let b = Binning::numeric("0:10:5").expect("spec");
        let c = b
            .count_numeric(&[-1.0, 0.0, 1.99, 2.0, 9.999, 10.0, 55.0])
            .expect("finite");
        assert_eq!(c, vec![1, 2, 1, 0, 0, 1, 2]);
        assert_eq!(b.labels().len(), 7);
        assert!(b.count_numeric(&[f64::NAN]).is_err());
        let cat = Binning::categories(&["a".into(), "b".into()]).expect("list");
        let c = cat
            .count_categories(&["a".into(), "z".into(), "b".into(), "a".into()])
            .expect("ok");
        assert_eq!(c, vec![2, 1, 1]);
        assert!(Binning::categories(&["a".into(), "a".into()]).is_err());
        assert!(Binning::numeric("5:1:3").is_err());
        assert!(Binning::numeric("0:1:0").is_err());
    }

    /// The noise of every bin is Laplace with scale sensitivity/eps, for both neighbour
    /// definitions; the same test rejects a scale 30% too small (power check).
    #[test]
    fn noise_has_the_calibrated_scale_and_fails_if_30_percent_smaller() {
        let mut rng = NoiseRng::from_seed_quiet(11);
        for (nb, eps) in [(Neighbours::Bounded, 0.7), (Neighbours::Unbounded, 0.7)] {
            let exact = [50u64, 0, 1000, 3];
            let mut samples: Vec<f64> = Vec::new();
            for _ in 0..1500 {
                let r = release(&exact, vec!["".into(); 4], nb, eps, false, &mut rng).expect("ok");
                samples.extend(r.noisy.iter().zip(exact).map(|(v, c)| v - c as f64));
            }
            let b = histogram_sensitivity(nb) / eps;
            let (_, p) = ks_test(&mut samples.clone(), |x| laplace_cdf(x, b));
            assert!(p > ALPHA, "{nb:?}: p = {p}");
            let (_, p_small) = ks_test(&mut samples, |x| laplace_cdf(x, 0.7 * b));
            assert!(
                p_small < ALPHA,
                "{nb:?}: a 30% smaller scale was not rejected"
            );
        }
    }

    #[test]
    fn total_is_public_only_under_bounded_without_a_filter() {
        let mut rng = NoiseRng::from_seed_quiet(3);
        let ab = || vec!["a".into(), "b".into()];
        let b = release(&[5, 6], ab(), Neighbours::Bounded, 1.0, false, &mut rng).expect("ok");
        assert!(b.total_is_exact && b.total == 11.0 && b.sensitivity == 2.0);
        let u = release(&[5, 6], ab(), Neighbours::Unbounded, 1.0, false, &mut rng).expect("ok");
        assert!(!u.total_is_exact && u.sensitivity == 1.0);
        assert!((u.total - u.noisy.iter().sum::<f64>()).abs() < 1e-9);
        // Item 3 of the privacy audit: rows chosen by a predicate do not total n, so their
        // total is private even under bounded neighbours.
        let f = release(&[5, 6], ab(), Neighbours::Bounded, 1.0, true, &mut rng).expect("ok");
        assert!(!f.total_is_exact && f.total != 11.0);
        assert!((f.total - f.noisy.iter().sum::<f64>()).abs() < 1e-9);
        assert!(
            release(
                &[1],
                vec!["a".into()],
                Neighbours::Bounded,
                0.0,
                false,
                &mut rng
            )
            .is_err()
        );
    }
}

//! The public query of a summary release and the pieces a release is made of.

use kinsey_core::{Error, Result};
use kinsey_data::memory::ColumnSource;
use kinsey_dp::{Neighbours, NoiseRng};
use serde::Serialize;

/// Which statistic.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// The sum of the clamped values.
    Sum,
    /// Their mean.
    Mean,
    /// Their sample variance (denominator n - 1).
    Variance,
    /// Quantiles at the given levels, each in (0, 1) with at most six decimals.
    Quantiles(Vec<f64>),
}

impl Statistic {
    /// The name users write (`sum`, `mean`, `variance`, `quantiles`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sum => "sum",
            Self::Mean => "mean",
            Self::Variance => "variance",
            Self::Quantiles(_) => "quantiles",
        }
    }
}

/// Every public parameter of one release.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct SummaryQuery {
    /// The column summarised.
    pub column: String,
    /// What is released.
    pub statistic: Statistic,
    /// Declared lower bound: smaller values are raised to it.
    pub lo: f64,
    /// Declared upper bound: larger values are lowered to it.
    pub hi: f64,
    /// Privacy parameter of the whole release.
    pub epsilon: f64,
    /// The neighbour definition the guarantee is for.
    pub neighbours: Neighbours,
    /// Quantiles only: the number of evenly spaced public candidates in `[lo, hi]`.
    pub candidates: usize,
}

/// One released number.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Estimate {
    /// `sum`, `mean`, `variance`, or `q0.5` for a quantile.
    pub name: String,
    /// The released value (post-processed into what the bounds allow).
    pub value: f64,
    /// The standard deviation of the noise in `value` where it is public (a sum, or a mean
    /// or variance under bounded neighbours); `None` where it depends on the private n.
    pub noise_std: Option<f64>,
}

/// One noisy quantity a release is made of, with its share of epsilon.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Part {
    /// What was noised (`sum of clamped values`, `count`, ...).
    pub quantity: String,
    /// Its share of epsilon.
    pub epsilon: f64,
    /// Its sensitivity, in the column's units (squared units for sums of squares).
    pub sensitivity: f64,
    /// The public grid its values are rounded to (a power of two), in the same units.
    pub grid: f64,
    /// The noise's standard deviation, in the same units (`None` for a choice among
    /// candidates, whose error is not additive noise).
    pub noise_std: Option<f64>,
}

impl SummaryQuery {
    /// The report's kind.
    pub const KIND: &'static str = "kinsey.stats.v1";
    /// The seeded-noise label encoding's version.
    pub const LABEL_VERSION: &'static str = "kinsey.stats.v1";
    /// The most candidates a quantile release takes.
    pub const MAX_CANDIDATES: usize = 1 << 20;

    /// Refuse bad parameters before any data is read.
    pub fn check(&self) -> Result<()> {
        kinsey_core::check_epsilon("epsilon", self.epsilon)?;
        if !(self.lo.is_finite() && self.hi.is_finite() && self.lo < self.hi) {
            return Err(Error::param(
                "bounds",
                format!(
                    "need finite LO < HI, got {}:{} (declare the public range of the column, \
                     e.g. --bounds 0:100)",
                    self.lo, self.hi
                ),
            ));
        }
        let magnitude = self.lo.abs().max(self.hi.abs());
        if magnitude / (self.hi - self.lo) > 2f64.powi(40) || magnitude > 1e30 {
            return Err(Error::param(
                "bounds",
                format!(
                    "{}:{} is too narrow for its magnitude (or too large) for the exact \
                     integer grid: shift the column first",
                    self.lo, self.hi
                ),
            ));
        }
        if let Statistic::Quantiles(qs) = &self.statistic {
            if qs.is_empty() {
                return Err(Error::param(
                    "quantiles",
                    "give at least one level in (0, 1)",
                ));
            }
            for &q in qs {
                level(q)?;
            }
            if !(2..=Self::MAX_CANDIDATES).contains(&self.candidates) {
                return Err(Error::param(
                    "candidates",
                    format!(
                        "{} is outside 2 ..= {}",
                        self.candidates,
                        Self::MAX_CANDIDATES
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The canonical seeded-noise label: the version, then the query as JSON.
    /// `candidates` counts only for quantiles: elsewhere it is left out (as 0), so callers
    /// that fill it differently draw the same noise for the same release.
    pub fn label(&self) -> Result<String> {
        let mut canonical = self.clone();
        if !matches!(canonical.statistic, Statistic::Quantiles(_)) {
            canonical.candidates = 0;
        }
        let json = serde_json::to_string(&canonical)
            .map_err(|e| Error::Numerical(format!("stats label: {e}")))?;
        Ok(format!("{}|{json}", Self::LABEL_VERSION))
    }

    /// The generator of this release of `input`: from the OS, or derived from `seed`, the
    /// label and a digest of the input (recorded in the report only when `record_seed`).
    pub fn rng<S: ColumnSource + ?Sized>(
        &self,
        input: &S,
        seed: Option<u64>,
        record_seed: bool,
    ) -> Result<NoiseRng> {
        self.rng_from(seed, record_seed, || input.digest(&[&self.column]))
    }

    /// [`rng`](Self::rng) with the input's digest (of this query's column) from `digest`,
    /// called only when seeded: a table held elsewhere (a cluster) digests its groups
    /// there.
    pub fn rng_from(
        &self,
        seed: Option<u64>,
        record_seed: bool,
        digest: impl FnOnce() -> Result<kinsey_dp::DataDigest>,
    ) -> Result<NoiseRng> {
        let label = self.label()?;
        NoiseRng::for_release_recorded(seed, record_seed, &label, digest)
    }

    /// The column's values, each finite (a non-finite value is refused naming its row).
    pub fn values<S: ColumnSource + ?Sized>(&self, input: &S) -> Result<Vec<f64>> {
        let v = input.numeric(&self.column)?;
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(Error::Value {
                path: input.name().to_path_buf(),
                column: self.column.clone(),
                row: i,
                msg: "not a finite number (drop or impute it first)".into(),
            });
        }
        Ok(v)
    }
}

/// What a statistic's release computed, before the report wraps it.
pub(crate) struct Released {
    pub(crate) estimates: Vec<Estimate>,
    pub(crate) parts: Vec<Part>,
    pub(crate) mechanism: String,
    pub(crate) sensitivity: String,
    pub(crate) sensitivity_value: Option<f64>,
    pub(crate) notes: Vec<String>,
}

/// The denominator of a quantile level.
pub const LEVEL_DENOMINATOR: u64 = 1_000_000;

/// The level `q` as `a / 10^6`, refused unless `0 < q < 1` with at most six decimals.
pub fn level(q: f64) -> Result<u64> {
    let a = (q * LEVEL_DENOMINATOR as f64).round();
    if !(q > 0.0 && q < 1.0) || (a / LEVEL_DENOMINATOR as f64 - q).abs() > 1e-12 {
        return Err(Error::param(
            "quantiles",
            format!("level {q} must be in (0, 1) with at most six decimals, e.g. 0.5 or 0.99"),
        ));
    }
    Ok(a as u64)
}

//! The release of a summary query and its exact twin (NOT PRIVATE).

use super::spec::{Estimate, Part, Statistic, SummaryQuery};
use super::{moments, quantile};
use kinsey_core::Result;
use kinsey_data::memory::ColumnSource;
use kinsey_dp::release::{Guarantee, GuaranteeKind};
use kinsey_dp::{NoiseRng, RngRecord};
use serde::Serialize;
use std::path::PathBuf;

/// The release report (`report.json`).
#[derive(Debug, Clone, Serialize)]
pub struct SummaryReport {
    /// [`SummaryQuery::KIND`].
    pub kind: &'static str,
    /// The input, as the caller named it.
    pub input: PathBuf,
    /// The column.
    pub column: String,
    /// `sum`, `mean`, `variance` or `quantiles`.
    pub statistic: &'static str,
    /// The declared bounds `[lo, hi]`.
    pub bounds: [f64; 2],
    /// The released values.
    pub estimates: Vec<Estimate>,
    /// The row count where it is public (bounded neighbours), else `None`.
    pub n: Option<u64>,
    /// What the guarantee covers.
    pub guarantee: Guarantee,
    /// The noisy quantities behind the estimates.
    pub parts: Vec<Part>,
    /// What the bounds and the grid mean for the values, in words.
    pub notes: Vec<String>,
    /// How the noise generator was keyed.
    pub rng: RngRecord,
}

/// The exact values (NOT PRIVATE: for diagnostics only).
#[derive(Debug, Clone, Serialize)]
pub struct ExactSummary {
    /// The statistic on the clamped values, by estimate name.
    pub values: Vec<(String, f64)>,
    /// Rows read.
    pub rows: usize,
    /// Rows outside the bounds (clamped).
    pub clamped: usize,
}

impl SummaryQuery {
    /// The release of `input`'s column, noised by `rng`.
    pub fn release<S: ColumnSource + ?Sized>(
        &self,
        input: &S,
        rng: &mut NoiseRng,
    ) -> Result<SummaryReport> {
        self.check()?;
        let values = self.values(input)?;
        self.release_values(&values, input.name().to_path_buf(), rng)
    }

    /// The release of `values` (already read) as the column of `input`.
    pub fn release_values(
        &self,
        values: &[f64],
        input: PathBuf,
        rng: &mut NoiseRng,
    ) -> Result<SummaryReport> {
        self.check()?;
        let released = match &self.statistic {
            Statistic::Quantiles(qs) => quantile::release(self, qs, values, rng)?,
            _ => moments::release(self, values, rng)?,
        };
        let n = self.neighbours.n_is_public().then_some(values.len() as u64);
        let mut notes = vec![format!(
            "values outside [{}, {}] count as the nearer bound: the bounds are what limits \
             one row's influence, so they must be declared, not read from the data",
            self.lo, self.hi
        )];
        notes.extend(released.notes);
        Ok(SummaryReport {
            kind: Self::KIND,
            input,
            column: self.column.clone(),
            statistic: self.statistic.name(),
            bounds: [self.lo, self.hi],
            estimates: released.estimates,
            n,
            guarantee: Guarantee {
                kind: GuaranteeKind::Pure,
                epsilon: self.epsilon,
                delta: 0.0,
                neighbours: self.neighbours.relation(),
                mechanism: released.mechanism,
                sensitivity: released.sensitivity,
                sensitivity_value: released.sensitivity_value,
            },
            parts: released.parts,
            notes,
            rng: rng.record(),
        })
    }

    /// The exact statistic on the clamped values (NOT PRIVATE).
    pub fn exact(&self, values: &[f64]) -> ExactSummary {
        let outside = values
            .iter()
            .filter(|&&x| x < self.lo || x > self.hi)
            .count();
        let clamped: Vec<f64> = values.iter().map(|x| x.clamp(self.lo, self.hi)).collect();
        let n = clamped.len() as f64;
        let sum: f64 = clamped.iter().sum();
        let mean = sum / n;
        let exact = match &self.statistic {
            Statistic::Sum => vec![("sum".into(), sum)],
            Statistic::Mean => vec![("mean".into(), mean)],
            Statistic::Variance => vec![(
                "variance".into(),
                clamped.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0),
            )],
            Statistic::Quantiles(qs) => {
                let mut sorted = clamped.clone();
                sorted.sort_by(f64::total_cmp);
                qs.iter()
                    .map(|&q| {
                        let i = ((q * n).ceil() as usize).clamp(1, sorted.len().max(1)) - 1;
                        (
                            quantile::name(q),
                            sorted.get(i).copied().unwrap_or(f64::NAN),
                        )
                    })
                    .collect()
            }
        };
        ExactSummary {
            values: exact,
            rows: clamped.len(),
            clamped: outside,
        }
    }
}

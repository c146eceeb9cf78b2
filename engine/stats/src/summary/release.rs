//! The release of a summary query and its exact twin (NOT PRIVATE).

use super::moments::MomentSums;
use super::quantile::CandidateCounts;
use super::spec::{Estimate, Part, Statistic, SummaryQuery};
use super::{moments, quantile};
use kinsey_core::{Error, Result};
use kinsey_data::blocks::Want;
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

impl SummaryReport {
    /// `stats.csv`: one line per released value with its noise std where it is public, as
    /// every front door writes it.
    pub fn csv(&self) -> Vec<u8> {
        let mut s = String::from("statistic,value,noise_std\n");
        for e in &self.estimates {
            let std = e.noise_std.map(|s| s.to_string()).unwrap_or_default();
            s.push_str(&format!("{},{},{std}\n", e.name, e.value));
        }
        s.into_bytes()
    }
}

/// What a release accumulates from its column, a block at a time.
#[derive(Debug, Clone)]
pub enum SummarySums {
    /// A sum's, mean's or variance's exact integer sums.
    Moments(MomentSums),
    /// The quantiles' counts below and above each candidate.
    Quantiles(CandidateCounts),
}

impl SummarySums {
    /// Add a block of the column's values.
    pub fn add(&mut self, values: &[f64]) {
        match self {
            SummarySums::Moments(m) => m.add(values),
            SummarySums::Quantiles(c) => c.add(values),
        }
    }

    /// Values added.
    pub fn rows(&self) -> usize {
        match self {
            SummarySums::Moments(m) => m.rows(),
            SummarySums::Quantiles(c) => c.rows(),
        }
    }
}

/// [`SummarySums`] as exact integers, to move between machines (a cluster's executors
/// accumulate, the driver adds): the sums are integers, so any split adds to the same.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub enum SumParts {
    /// Rows, the sum of the grid indices and of their squares (as decimal text: 128 bits).
    Moments(String, String, String),
    /// The quantiles' counts.
    Quantiles(Vec<u64>, Vec<u64>),
}

impl SummarySums {
    /// The sums as [`SumParts`].
    pub fn to_parts(&self) -> SumParts {
        match self {
            SummarySums::Moments(m) => {
                let (n, s1, s2) = m.parts();
                SumParts::Moments(n.to_string(), s1.to_string(), s2.to_string())
            }
            SummarySums::Quantiles(c) => {
                let (a, b) = c.parts();
                SumParts::Quantiles(a, b)
            }
        }
    }

    /// Add `parts` of the same query's sums accumulated elsewhere.
    pub fn add_parts(&mut self, parts: &SumParts) -> Result<()> {
        let bad = || Error::Numerical("sums of another query".into());
        match (self, parts) {
            (SummarySums::Moments(m), SumParts::Moments(n, s1, s2)) => {
                let n = n.parse().map_err(|_| bad())?;
                let s1 = s1.parse().map_err(|_| bad())?;
                let s2 = s2.parse().map_err(|_| bad())?;
                m.add_parts((n, s1, s2));
                Ok(())
            }
            (SummarySums::Quantiles(c), SumParts::Quantiles(a, b)) => {
                c.add_parts(a, b).then_some(()).ok_or_else(bad)
            }
            _ => Err(bad()),
        }
    }
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
    /// Empty accumulators of what this release needs from its column.
    pub fn sums(&self) -> SummarySums {
        match &self.statistic {
            Statistic::Quantiles(_) => SummarySums::Quantiles(CandidateCounts::new(
                quantile::candidates(self.lo, self.hi, self.candidates),
            )),
            _ => SummarySums::Moments(MomentSums::new(self)),
        }
    }

    /// What this release needs from `input`'s column, read a block of rows at a time
    /// (memory holds one block, whatever the column's length; a cell that is not a finite
    /// number is refused naming its row).
    pub fn accumulate<S: ColumnSource + ?Sized>(&self, input: &S) -> Result<SummarySums> {
        let mut sums = self.sums();
        input.for_each_block(&[(self.column.as_str(), Want::Numeric)], &mut |cells| {
            sums.add(cells[0].numeric()?);
            Ok(())
        })?;
        Ok(sums)
    }

    /// The release of `input`'s column, noised by `rng`, read in blocks.
    pub fn release<S: ColumnSource + ?Sized>(
        &self,
        input: &S,
        rng: &mut NoiseRng,
    ) -> Result<SummaryReport> {
        self.check()?;
        let sums = self.accumulate(input)?;
        self.release_sums(&sums, input.name().to_path_buf(), rng)
    }

    /// The release of `values` (already read) as the column of `input`.
    pub fn release_values(
        &self,
        values: &[f64],
        input: PathBuf,
        rng: &mut NoiseRng,
    ) -> Result<SummaryReport> {
        let mut sums = self.sums();
        sums.add(values);
        self.release_sums(&sums, input, rng)
    }

    /// The release from the column's accumulated `sums` (see [`accumulate`](Self::accumulate)).
    pub fn release_sums(
        &self,
        sums: &SummarySums,
        input: PathBuf,
        rng: &mut NoiseRng,
    ) -> Result<SummaryReport> {
        self.check()?;
        let released = match (&self.statistic, sums) {
            (Statistic::Quantiles(qs), SummarySums::Quantiles(c)) => {
                quantile::release(self, qs, c, rng)?
            }
            (Statistic::Quantiles(_), _) | (_, SummarySums::Quantiles(_)) => {
                return Err(Error::param(
                    "sums",
                    "these sums were accumulated for another statistic",
                ));
            }
            (_, SummarySums::Moments(m)) => moments::release(self, m, rng)?,
        };
        let values = sums;
        let n = self
            .neighbours
            .n_is_public()
            .then_some(values.rows() as u64);
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
                rho: None,
                // Each estimate states its own.
                noise_std: None,
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

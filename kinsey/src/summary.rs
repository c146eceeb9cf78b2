//! DP summary statistics of one bounded column: sum, mean, variance and quantiles, as
//! `kinsey stats` and Python's `kinsey.stats` release them (the one builder both call).

use kinsey_core::{Error, Result};
use kinsey_data::memory::{ArrowTable, ColumnSource};
use kinsey_dp::Neighbours;
use kinsey_stats::summary::{ExactSummary, Statistic, SummaryQuery, SummaryReport};
use std::path::Path;

/// A summary statistic's release, built up from its public parameters.
///
/// ```no_run
/// use kinsey::prelude::*;
/// use kinsey::stats::Summary;
///
/// let out = Summary::mean()
///     .bounds(0.0, 1000.0)
///     .epsilon(1.0)
///     .neighbours(Neighbours::Bounded)
///     .of_column("hour.csv", "cnt")?;
/// println!("{:?}", out.report.estimates);
/// # Ok::<(), kinsey::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Summary {
    statistic: Statistic,
    bounds: Option<(f64, f64)>,
    epsilon: Option<f64>,
    neighbours: Option<Neighbours>,
    candidates: usize,
    seed: Option<u64>,
    record_seed: bool,
    diagnostics: bool,
    ledger: Option<crate::ledger::Ledger>,
}

/// A summary release and, only when asked ([`Summary::diagnostics`]), its exact values.
#[derive(Debug, Clone)]
pub struct SummaryOutput {
    /// The release.
    pub report: SummaryReport,
    /// NOT PRIVATE: the exact statistic and the rows clamped.
    pub exact_not_private: Option<ExactSummary>,
}

impl Summary {
    fn of(statistic: Statistic) -> Self {
        Self {
            statistic,
            bounds: None,
            epsilon: None,
            neighbours: None,
            candidates: 2,
            seed: None,
            record_seed: false,
            diagnostics: false,
            ledger: None,
        }
    }

    /// The sum of the clamped values.
    pub fn sum() -> Self {
        Self::of(Statistic::Sum)
    }

    /// Their mean.
    pub fn mean() -> Self {
        Self::of(Statistic::Mean)
    }

    /// Their sample variance (denominator n - 1).
    pub fn variance() -> Self {
        Self::of(Statistic::Variance)
    }

    /// Quantiles at `levels` (each in (0, 1), at most six decimals; epsilon split evenly),
    /// among 1,001 evenly spaced candidates in the bounds unless
    /// [`candidates`](Self::candidates) says otherwise.
    pub fn quantiles(levels: &[f64]) -> Self {
        Self {
            candidates: 1001,
            ..Self::of(Statistic::Quantiles(levels.to_vec()))
        }
    }

    /// The statistic by its name (`sum`, `mean`, `variance`, `quantiles`).
    pub fn named(name: &str, levels: &[f64]) -> Result<Self> {
        Ok(match name {
            "sum" => Self::sum(),
            "mean" => Self::mean(),
            "variance" => Self::variance(),
            "quantiles" => Self::quantiles(levels),
            other => {
                return Err(Error::param(
                    "statistic",
                    format!("'{other}' is not one of sum, mean, variance, quantiles"),
                ));
            }
        })
    }

    /// The column's public range (required), declared from knowledge, not from the data:
    /// values outside it count as the nearer bound.
    pub fn bounds(mut self, lo: f64, hi: f64) -> Self {
        self.bounds = Some((lo, hi));
        self
    }

    /// Privacy parameter (required).
    pub fn epsilon(mut self, epsilon: f64) -> Self {
        self.epsilon = Some(epsilon);
        self
    }

    /// The neighbour definition of the guarantee (required).
    pub fn neighbours(mut self, neighbours: Neighbours) -> Self {
        self.neighbours = Some(neighbours);
        self
    }

    /// Quantiles only: the number of evenly spaced public candidates (the answer's
    /// resolution).
    pub fn candidates(mut self, n: usize) -> Self {
        if matches!(self.statistic, Statistic::Quantiles(_)) {
            self.candidates = n;
        }
        self
    }

    /// Derive the noise from a seed, the parameters and the data (NOT private against
    /// whoever knows it; trials only).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Write the seed's value into the report.
    pub fn record_seed(mut self) -> Self {
        self.record_seed = true;
        self
    }

    /// Also compute the exact values (NOT PRIVATE; the column is then read whole).
    pub fn diagnostics(mut self) -> Self {
        self.diagnostics = true;
        self
    }

    /// Charge the release to `ledger` before its noise is drawn (refused past the data
    /// set's budget: nothing is released).
    pub fn ledger(mut self, ledger: &crate::ledger::Ledger) -> Self {
        self.ledger = Some(ledger.clone());
        self
    }

    /// The query these parameters make, checked before any data is read.
    fn query(&self, column: &str) -> Result<SummaryQuery> {
        let (lo, hi) = self
            .bounds
            .ok_or_else(|| Error::param("bounds", "the column's bounds must be given"))?;
        let q = SummaryQuery {
            column: column.into(),
            statistic: self.statistic.clone(),
            lo,
            hi,
            epsilon: crate::required_epsilon(self.epsilon)?,
            neighbours: self.neighbours.ok_or_else(|| {
                Error::param("neighbours", "the neighbour definition must be given")
            })?,
            candidates: self.candidates,
        };
        q.check()?;
        Ok(q)
    }

    /// The release of `column` of a Parquet or CSV file: what `kinsey stats STATISTIC
    /// --input PATH --column COLUMN` writes with the same parameters.
    pub fn of_column(self, path: impl AsRef<Path>, column: &str) -> Result<SummaryOutput> {
        let path = path.as_ref();
        self.release(path, column, |l, command, eps| {
            l.charge_file(path, command, (eps, 0.0)).map(drop)
        })
    }

    /// The release of `column` of a table in memory (the ledger's data set needs a name).
    pub fn of_table(self, table: &ArrowTable, column: &str) -> Result<SummaryOutput> {
        self.release(table, column, |l, command, eps| {
            l.charge_table(table, command, (eps, 0.0)).map(drop)
        })
    }

    /// The release of `column` of a table whose rows are on a cluster (`kinsey.spark`):
    /// the executors sum (exact integers), this process draws the noise. With a seed it is
    /// the release of the same values as a table in memory ([`of_table`](Self::of_table)),
    /// but for the input's name. Diagnostics and a ledger are refused.
    #[cfg(feature = "classifier")]
    pub fn of_remote(
        self,
        table: &dyn crate::classifier::RemoteParty,
        column: &str,
    ) -> Result<SummaryOutput> {
        if self.ledger.is_some() {
            return Err(crate::stats::remote_ledger());
        }
        if self.diagnostics {
            return Err(Error::param(
                "diagnostics",
                "the exact values of a table on a cluster are not computed (they would bring \
                 its column here): leave the diagnostics out",
            ));
        }
        let query = self.query(column)?;
        let mut rng = query.rng_from(self.seed, self.record_seed, || {
            crate::cluster::digest(table, &[column.to_string()])
        })?;
        let sums = crate::cluster::summary_sums(table, &query)?;
        let report = query.release_sums(&sums, table.name().into(), &mut rng)?;
        Ok(SummaryOutput {
            report,
            exact_not_private: None,
        })
    }

    fn release<S: ColumnSource + ?Sized>(
        self,
        input: &S,
        column: &str,
        charge: impl FnOnce(&crate::ledger::Ledger, &str, f64) -> Result<()>,
    ) -> Result<SummaryOutput> {
        let query = self.query(column)?;
        // The release reads the column in blocks; only the exact values (NOT PRIVATE),
        // when asked for, need it whole, and then it is read once for both.
        let (sums, values) = if self.diagnostics {
            let values = query.values(input)?;
            let mut sums = query.sums();
            sums.add(&values);
            (sums, Some(values))
        } else {
            (query.accumulate(input)?, None)
        };
        // Charge, then draw the noise, then publish.
        if let Some(l) = &self.ledger {
            charge(
                l,
                &format!("stats {}", query.statistic.name()),
                query.epsilon,
            )?;
        }
        let mut rng = query.rng(input, self.seed, self.record_seed)?;
        let report = query.release_sums(&sums, input.name().to_path_buf(), &mut rng)?;
        Ok(SummaryOutput {
            report,
            exact_not_private: values.map(|v| query.exact(&v)),
        })
    }
}

//! DP statistics with one curator: private decayed sums of a series under continual
//! observation (seed 004), DP histograms and counts, summary statistics ([`Summary`]) and
//! decision trees ([`Tree`]) (seed 002). The decayed sums are [`crate::decay`]'s, re-exported
//! here; the SuLQ analyses are [`crate::sulq`]'s.
//!
//! ```no_run
//! use kinsey::prelude::*;
//!
//! // The last 1,440 steps' sum after every step, each value at most 3 (larger ones clamped).
//! let out = DecayedSum::window(1440)
//!     .epsilon(1.0)
//!     .bound(Bound::clamp(3.0)?)
//!     .over_file("series.csv", "value")?;
//! println!("{} estimates, {}", out.estimates().len(), out.release.guarantee.short());
//!
//! let hist = Histogram::numeric(0.0, 100.0, 10)?
//!     .epsilon(0.5)
//!     .neighbours(Neighbours::Bounded)
//!     .of_column("table.parquet", "age")?;
//! println!("{:?}", hist.release.counts);
//! # Ok::<(), kinsey::Error>(())
//! ```

use kinsey_core::{Error, Result};
use kinsey_dp::{Neighbours, NoiseRng};
use kinsey_stats::histogram::Binning;
use kinsey_stats::histogram_query::{Bins, HistogramQuery};
use std::path::Path;

/// A ledger given to a release of a table on a cluster.
#[cfg(feature = "classifier")]
pub(crate) fn remote_ledger() -> Error {
    Error::param(
        "ledger",
        "tables on a cluster are not charged to a ledger yet: leave the ledger out (a later \
         version charges them by their digests)",
    )
}

pub use crate::decay::{
    Bound, DecayFiles, DecayOutput, DecayRelease, DecayWritten, DecayedSum, DecayedSumBuilder,
    Events, OutOfBound,
};
pub use crate::summary::{Summary, SummaryOutput};
pub use crate::tree::{Tree, TreeOutput};
pub use kinsey_stats::histogram_query::HistogramReport;
pub use kinsey_stats::summary::ExactSummary;
/// DP decision trees (seed 002), as `kinsey tree` releases them.
pub use kinsey_stats::summary::{Statistic, SummaryQuery, SummaryReport};
pub use kinsey_stats::tree_release::{TreeOutcome, TreeQuery};

/// A DP histogram or count of one column, with public bins.
#[derive(Debug, Clone)]
pub struct Histogram {
    bins: Bins,
    predicate: Option<String>,
    epsilon: Option<f64>,
    neighbours: Option<Neighbours>,
    seed: Option<u64>,
    record_seed: bool,
    ledger: Option<crate::ledger::Ledger>,
}

impl Histogram {
    fn of(bins: Bins) -> Self {
        Self {
            bins,
            predicate: None,
            epsilon: None,
            neighbours: None,
            seed: None,
            record_seed: false,
            ledger: None,
        }
    }

    /// Charge the release to `ledger` before its noise is drawn (refused past the data
    /// set's budget: nothing is computed).
    pub fn ledger(mut self, ledger: &crate::ledger::Ledger) -> Self {
        self.ledger = Some(ledger.clone());
        self
    }

    /// `bins` equal-width bins on `[lo, hi)`, plus `< lo` and `>= hi`.
    pub fn numeric(lo: f64, hi: f64, bins: usize) -> Result<Self> {
        Ok(Self::of(Bins::Binned(Binning::numeric(&format!(
            "{lo}:{hi}:{bins}"
        ))?)))
    }

    /// Bins written as `LO:HI:BINS` (`kinsey histogram --bins`): `BINS` equal-width bins
    /// on `[LO, HI)`, plus `< LO` and `>= HI`.
    pub fn numeric_spec(spec: &str) -> Result<Self> {
        Ok(Self::of(Bins::Binned(Binning::numeric(spec)?)))
    }

    /// One bin per declared category, plus "(other)".
    pub fn categories<S: AsRef<str>>(list: &[S]) -> Result<Self> {
        let list: Vec<String> = list.iter().map(|s| s.as_ref().to_string()).collect();
        Ok(Self::of(Bins::Binned(Binning::categories(&list)?)))
    }

    /// A single count of the (kept) rows.
    pub fn count() -> Self {
        Self::of(Bins::Count)
    }

    /// Privacy parameter (required).
    pub fn epsilon(mut self, epsilon: f64) -> Self {
        self.epsilon = Some(epsilon);
        self
    }

    /// The neighbour definition of the guarantee (required): bounded (sensitivity 2) or
    /// unbounded (1).
    pub fn neighbours(mut self, neighbours: Neighbours) -> Self {
        self.neighbours = Some(neighbours);
        self
    }

    /// Count only rows with `COLUMN OP NUMBER` (a public predicate), e.g. `delay>=15`.
    pub fn filter(mut self, predicate: &str) -> Self {
        self.predicate = Some(predicate.into());
        self
    }

    /// Derive the noise from a seed, the parameters and the file (NOT private against
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

    /// The release of `column` of a Parquet or CSV file: the report
    /// `kinsey histogram --input PATH --column COLUMN` writes with the same parameters.
    pub fn of_column(self, path: impl AsRef<Path>, column: &str) -> Result<HistogramReport> {
        let path = path.as_ref();
        self.of_source(path, column, |l, command, eps| {
            l.charge_file(path, command, (eps, 0.0)).map(drop)
        })
    }

    /// The release of `column` of a table in memory. A seed replays it for the same values
    /// of the columns it reads (the column and the filter's); the release of a file's
    /// column binds every byte of the file instead, so the same seed gives a table and
    /// its file different noise.
    pub fn of_table(
        self,
        table: &kinsey_data::memory::ArrowTable,
        column: &str,
    ) -> Result<HistogramReport> {
        self.of_source(table, column, |l, command, eps| {
            l.charge_table(table, command, (eps, 0.0)).map(drop)
        })
    }

    /// The release of `column` of a table whose rows are on a cluster (`kinsey.spark`):
    /// the executors count, this process adds the counts and draws the noise. With a seed it
    /// is the release of the same values as a table in memory ([`of_table`](Self::of_table)),
    /// but for the input's name.
    #[cfg(feature = "classifier")]
    pub fn of_remote(
        self,
        table: &dyn crate::classifier::RemoteParty,
        column: &str,
    ) -> Result<HistogramReport> {
        if self.ledger.is_some() {
            return Err(remote_ledger());
        }
        let (seed, record_seed) = (self.seed, self.record_seed);
        let query = self.query(column)?;
        let mut rng = query.rng_from(seed, record_seed, || {
            crate::cluster::digest(table, &query.digest_columns()?)
        })?;
        let (labels, exact) = crate::cluster::histogram_counts(table, &query)?;
        query.release_counts(labels, &exact, table.name().into(), &mut rng)
    }

    /// The query these parameters make for `column`, checked.
    fn query(&self, column: &str) -> Result<HistogramQuery> {
        let query = HistogramQuery {
            column: column.into(),
            bins: self.bins.clone(),
            predicate: self.predicate.clone(),
            epsilon: crate::required_epsilon(self.epsilon)?,
            neighbours: self.neighbours.ok_or_else(|| {
                Error::param("neighbours", "the neighbour definition must be given")
            })?,
        };
        query.check()?;
        Ok(query)
    }

    fn of_source<S: kinsey_data::memory::ColumnSource + ?Sized>(
        self,
        path: &S,
        column: &str,
        charge: impl FnOnce(&crate::ledger::Ledger, &str, f64) -> Result<()>,
    ) -> Result<HistogramReport> {
        let query = HistogramQuery {
            column: column.into(),
            bins: self.bins,
            predicate: self.predicate,
            epsilon: crate::required_epsilon(self.epsilon)?,
            neighbours: self.neighbours.ok_or_else(|| {
                Error::param("neighbours", "the neighbour definition must be given")
            })?,
        };
        query.check()?;
        if let Some(l) = &self.ledger {
            let command = if query.is_count() {
                "count"
            } else {
                "histogram"
            };
            charge(l, command, query.epsilon)?;
        }
        let mut rng: NoiseRng = query.rng(path, self.seed, self.record_seed)?;
        query.release(path, &mut rng)
    }
}

//! DP statistics with one curator: private decayed sums of a series under continual
//! observation (seed 004), DP histograms and counts, summary statistics ([`Summary`]) and
//! decision trees ([`Tree`]) (seed 002). The SuLQ algorithms are in [`kinsey_stats`],
//! re-exported as [`engine`] and [`sulq`].
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

use crate::DevicePref;
use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, write_json};
use kinsey_decay::release::Path as RunPath;
use kinsey_decay::{KeyOrigin, ModelParams, Query, SeriesSource};
use kinsey_dp::{Neighbours, NoiseRng};
use kinsey_stats::histogram::Binning;
use kinsey_stats::histogram_query::{Bins, HistogramQuery};
use std::path::{Path, PathBuf};

pub use crate::summary::{Summary, SummaryOutput};
pub use crate::tree::{Tree, TreeOutput};
pub use kinsey_decay::DecayRelease;
pub use kinsey_stats as engine;
pub use kinsey_stats::histogram_query::HistogramReport;
/// SuLQ releases (k-means, PCA) of a file's or a table's columns, as `kinsey sulq` makes
/// them: [`sulq::Budget`], [`sulq::Columns`], [`sulq::kmeans`], [`sulq::pca`].
pub use kinsey_stats::sulq::query as sulq;
/// The SuLQ analyses' parameters.
pub use kinsey_stats::sulq::{GaussianCalibration, kmeans::KmeansConfig, pca::PcaConfig};
pub use kinsey_stats::summary::ExactSummary;
/// DP decision trees (seed 002), as `kinsey tree` releases them.
pub use kinsey_stats::summary::{Statistic, SummaryQuery, SummaryReport};
pub use kinsey_stats::tree_release::{TreeOutcome, TreeQuery};

/// What a value above the per-step bound does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfBound {
    /// It is clamped to the bound (the count of clamped steps is a diagnostic).
    Clamp,
    /// The run stops with an error and releases nothing.
    Refuse,
}

/// The per-step bound `B` the sensitivity assumes of every value, and what a larger value
/// does. Its own type, so it cannot be swapped with epsilon.
///
/// ```
/// use kinsey::prelude::*;
///
/// assert_eq!(Bound::clamp(3.0)?.value(), 3.0);
/// assert!(Bound::refuse(0.0).is_err());
/// assert!(Bound::clamp(f64::INFINITY).is_err());
/// # Ok::<(), kinsey::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    value: f64,
    policy: OutOfBound,
}

impl Bound {
    /// Values above `b` are clamped to it.
    pub fn clamp(b: f64) -> Result<Self> {
        Self::new(b, OutOfBound::Clamp)
    }

    /// A value above `b` is an error: nothing is released.
    pub fn refuse(b: f64) -> Result<Self> {
        Self::new(b, OutOfBound::Refuse)
    }

    fn new(value: f64, policy: OutOfBound) -> Result<Self> {
        if value.is_finite() && value > 0.0 {
            Ok(Self { value, policy })
        } else {
            Err(Error::param(
                "bound",
                format!("the per-step bound must be finite and > 0, got {value}"),
            ))
        }
    }

    /// `B`.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// What a larger value does.
    pub fn policy(&self) -> OutOfBound {
        self.policy
    }
}

/// Private decayed sums: pick a mechanism, then set its parameters by name.
#[derive(Debug, Clone, Copy)]
pub struct DecayedSum;

impl DecayedSum {
    fn model(model: &str, params: ModelParams) -> DecayedSumBuilder {
        DecayedSumBuilder {
            model: model.into(),
            params,
            epsilon: None,
            bound: None,
            seed: None,
            record_seed: false,
            device: DevicePref::Auto,
            online: false,
            ledger: None,
        }
    }

    /// The sum of the last `w` steps.
    pub fn window(w: u64) -> DecayedSumBuilder {
        Self::model(
            "window",
            ModelParams {
                window: Some(w),
                ..ModelParams::default()
            },
        )
    }

    /// Window sums for several window lengths, from one tree.
    pub fn all_windows(windows: Vec<u64>) -> DecayedSumBuilder {
        Self::model(
            "allwindow",
            ModelParams {
                windows: Some(windows),
                ..ModelParams::default()
            },
        )
    }

    /// `sum alpha^(j - i) x_i`, alpha in (0, 1).
    pub fn exponential(alpha: f64) -> DecayedSumBuilder {
        Self::model(
            "exponential",
            ModelParams {
                alpha: Some(alpha),
                ..ModelParams::default()
            },
        )
    }

    /// The running sum (binary mechanism); the horizon defaults to the series' length.
    pub fn running() -> DecayedSumBuilder {
        Self::model("running", ModelParams::default())
    }

    /// `sum (j - i + 1)^-c x_i`, c > 1, within a factor `1 - beta` (default 0.1).
    pub fn polynomial(c: f64) -> DecayedSumBuilder {
        Self::model(
            "polynomial",
            ModelParams {
                c: Some(c),
                ..ModelParams::default()
            },
        )
    }
}

/// A decayed-sum release being set up; [`over_file`](Self::over_file) or
/// [`over_values`](Self::over_values) runs it.
#[derive(Debug, Clone)]
pub struct DecayedSumBuilder {
    model: String,
    params: ModelParams,
    epsilon: Option<f64>,
    bound: Option<Bound>,
    seed: Option<u64>,
    record_seed: bool,
    device: DevicePref,
    online: bool,
    ledger: Option<crate::ledger::Ledger>,
}

/// A decayed-sum run: the estimates and the release report. Its `Debug` form shows the
/// release only: the NOT PRIVATE clamped-step count is read by its own method, never
/// printed with the rest.
#[derive(Clone)]
pub struct DecayOutput {
    /// The estimates' column names.
    pub columns: Vec<String>,
    /// One vector of estimates per column, one estimate per step.
    pub values: Vec<Vec<f64>>,
    /// The release report: public parameters, calibration, guarantee.
    pub release: DecayRelease,
    clamped: usize,
}

impl std::fmt::Debug for DecayOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecayOutput")
            .field("columns", &self.columns)
            .field("values", &self.values)
            .field("release", &self.release)
            .finish_non_exhaustive()
    }
}

impl DecayOutput {
    /// The first (for most models, only) column of estimates.
    pub fn estimates(&self) -> &[f64] {
        self.values.first().map_or(&[], Vec::as_slice)
    }

    /// Steps clamped to the bound. NOT PRIVATE: computed from the exact data.
    pub fn clamped_steps_not_private(&self) -> usize {
        self.clamped
    }

    /// Write the estimates to `out` (CSV, or Parquet when it ends in `.parquet`) and the
    /// release to `<out>.report.json`, both or neither: the files `kinsey decay` writes.
    pub fn write(&self, out: impl AsRef<Path>) -> Result<()> {
        let out = out.as_ref();
        let mut o = Outputs::new();
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            o.ensure_dir(dir)?;
        }
        let bytes = kinsey_data::series::encode_columns(out, &self.columns, &self.values, None)?;
        o.write(out, &bytes)?;
        let report = PathBuf::from(format!("{}.report.json", out.display()));
        write_json(&mut o, &report, &self.release)?;
        o.commit()?;
        Ok(())
    }
}

impl DecayedSumBuilder {
    /// The privacy parameter of the whole output sequence (required).
    pub fn epsilon(mut self, epsilon: f64) -> Self {
        self.epsilon = Some(epsilon);
        self
    }

    /// The per-step bound (required).
    pub fn bound(mut self, bound: Bound) -> Self {
        self.bound = Some(bound);
        self
    }

    /// The longest stream the mechanism is calibrated for (running, polynomial).
    pub fn horizon(mut self, steps: u64) -> Self {
        self.params.horizon = Some(steps);
        self
    }

    /// The polynomial sum's approximation parameter in (0, 1).
    pub fn beta(mut self, beta: f64) -> Self {
        self.params.beta = beta;
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

    /// Where the bulk noise is drawn (default: a hardware GPU if any; the same numbers).
    pub fn device(mut self, device: DevicePref) -> Self {
        self.device = device;
        self
    }

    /// The mechanism: `tree` (the dyadic tree of seed 004, the default), `kary` (a k-ary
    /// tree with level-weighted noise: running, window and exponential sums), `best` (the
    /// least stated error, from public parameters only), or under [`zcdp`](Self::zcdp)
    /// also `blt`.
    pub fn mechanism(mut self, mechanism: &str) -> Self {
        self.params.mechanism = kinsey_decay::mechanism_param(Some(mechanism));
        self
    }

    /// Children per node of the `kary` mechanism (default: the least stated error).
    pub fn arity(mut self, k: u32) -> Self {
        self.params.arity = Some(k);
        self
    }

    /// zCDP instead of pure DP: exact discrete Gaussian noise under the budget `rho` (no
    /// [`epsilon`](Self::epsilon)), stated as (epsilon, delta)-DP at `delta` (`None`:
    /// 1e-6). The mechanisms are then the Gaussian `tree` (the default), `kary`, `blt` (a
    /// buffered square-root factorization) and `best`.
    ///
    /// ```
    /// use kinsey::prelude::*;
    ///
    /// let steps: Vec<f64> = (0..5000).map(|i| f64::from(i % 3 == 0)).collect();
    /// let out = DecayedSum::window(60)
    ///     .zcdp(0.5, None)
    ///     .mechanism("blt")
    ///     .bound(Bound::clamp(1.0)?)
    ///     .device(DevicePref::Cpu)
    ///     .over_values(&steps)?;
    /// let g = &out.release.guarantee;
    /// assert_eq!(g.delta, 1e-6);
    /// assert!(g.mechanism.contains("rho = 0.5") && g.epsilon > 5.0);
    /// assert!(out.release.calibration.model.contains("factorization"));
    /// # Ok::<(), kinsey::Error>(())
    /// ```
    pub fn zcdp(mut self, rho: f64, delta: Option<f64>) -> Self {
        self.params.rho = Some(rho);
        self.params.delta = delta;
        self
    }

    /// One step at a time instead of in bulk (the same numbers).
    pub fn online(mut self) -> Self {
        self.online = true;
        self
    }

    /// Charge the release to `ledger` before its noise is drawn (refused past the data
    /// set's budget: nothing is computed).
    pub fn ledger(mut self, ledger: &crate::ledger::Ledger) -> Self {
        self.ledger = Some(ledger.clone());
        self
    }

    /// The release's `(epsilon, delta)`, as the ledger charges it.
    fn budget(&self, query: &Query) -> Result<(f64, f64)> {
        Ok(match query.zcdp()? {
            Some(z) => (z.epsilon, z.delta),
            None => (query.epsilon, 0.0),
        })
    }

    fn query(&self, column: &str) -> Result<(Query, Bound)> {
        let epsilon = match self.params.rho {
            Some(rho) => {
                if self.epsilon.is_some() {
                    return Err(Error::param(
                        "epsilon",
                        "a zCDP release's budget is rho: give zcdp(rho, delta) or epsilon, \
                         not both",
                    ));
                }
                kinsey_decay::zcdp::Zcdp::new(rho, self.params.delta)?.epsilon
            }
            None => crate::required_epsilon(self.epsilon)?,
        };
        let bound = self
            .bound
            .ok_or_else(|| Error::param("bound", "the per-step bound must be given"))?;
        let query = Query {
            model: self.model.clone(),
            params: self.params.clone(),
            epsilon,
            bound: bound.value,
            source: SeriesSource {
                column: column.into(),
                ..SeriesSource::default()
            },
        };
        Ok((query, bound))
    }

    fn finish(
        &self,
        query: &Query,
        input: String,
        xs: &[f64],
        key: [u8; 32],
        clamped: usize,
    ) -> Result<DecayOutput> {
        let n = xs.len() as u64;
        if n == 0 {
            return Err(Error::param("series", "the series is empty"));
        }
        let (m, device) = query.mechanism(Some(n), key, self.device)?;
        let values = if self.online {
            m.online(xs)?
        } else {
            m.bulk(xs)?
        };
        let path = if self.online {
            RunPath::Online
        } else {
            RunPath::Bulk
        };
        let origin = KeyOrigin::of(self.seed, self.record_seed);
        let release = DecayRelease::new(m.as_ref(), query, input, n, path, &device, origin);
        Ok(DecayOutput {
            columns: m.columns(),
            values,
            release,
            clamped,
        })
    }

    /// Run over `column` of a CSV or Parquet file (one row per step): the release
    /// `kinsey decay --input PATH --column COLUMN` makes with the same parameters.
    pub fn over_file(self, path: impl AsRef<Path>, column: &str) -> Result<DecayOutput> {
        let path = path.as_ref();
        let (query, bound) = self.query(column)?;
        let series = kinsey_data::series::load(path, column, bound.value)?;
        if bound.policy == OutOfBound::Refuse && series.clamped > 0 {
            return Err(Error::param(
                "bound",
                format!(
                    "{}: a value of column '{column}' exceeds the bound {} (Bound::refuse); \
                     nothing was released",
                    path.display(),
                    bound.value
                ),
            ));
        }
        if let Some(l) = &self.ledger {
            let command = format!("decay {}", query.model);
            l.charge_file(path, &command, self.budget(&query)?)?;
        }
        let origin = KeyOrigin::of(self.seed, self.record_seed);
        let key = query.key(origin, || kinsey_data::digest::of_files(path))?;
        let input = path.display().to_string();
        self.finish(&query, input, &series.values, key, series.clamped)
    }

    /// Run over values in memory (finite and >= 0).
    ///
    /// ```
    /// use kinsey::prelude::*;
    ///
    /// let steps = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0];
    /// let out = DecayedSum::running()
    ///     .epsilon(1.0)
    ///     .bound(Bound::refuse(1.0)?)
    ///     .device(DevicePref::Cpu)
    ///     .over_values(&steps)?;
    /// assert_eq!(out.estimates().len(), steps.len());
    /// assert_eq!(out.release.guarantee.epsilon, 1.0);
    /// // A value above a refusing bound releases nothing.
    /// assert!(DecayedSum::running().epsilon(1.0).bound(Bound::refuse(1.0)?)
    ///     .over_values(&[2.0]).is_err());
    /// # Ok::<(), kinsey::Error>(())
    /// ```
    pub fn over_values(self, values: &[f64]) -> Result<DecayOutput> {
        let (query, bound) = self.query("values")?;
        if let Some(i) = values.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(Error::param(
                "values",
                format!("step {i}: the value is not a finite non-negative number"),
            ));
        }
        let over = values.iter().filter(|&&x| x > bound.value).count();
        if over > 0 && bound.policy == OutOfBound::Refuse {
            return Err(Error::param(
                "bound",
                format!(
                    "a value exceeds the bound {} (Bound::refuse); nothing was released",
                    bound.value
                ),
            ));
        }
        let xs: Vec<f64> = values.iter().map(|x| x.min(bound.value)).collect();
        if let Some(l) = &self.ledger {
            let digest = kinsey_data::digest::of_values(values);
            let command = format!("decay {}", query.model);
            l.charge_digest(digest, "<values in memory>", &command, self.budget(&query)?)?;
        }
        let origin = KeyOrigin::of(self.seed, self.record_seed);
        let key = query.key(origin, || Ok(kinsey_data::digest::of_values(values)))?;
        self.finish(&query, "<values in memory>".into(), &xs, key, over)
    }
}

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

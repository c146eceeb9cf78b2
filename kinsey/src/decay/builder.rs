//! The builder of a decayed-sum release, the per-step bound and an event series.

use crate::DevicePref;
use kinsey_core::{Error, Result};
use kinsey_data::output::{Outputs, write_json};
use kinsey_data::series::{self, EventSpec, Predicate};
use kinsey_decay::release::Path as RunPath;
use kinsey_decay::{
    DecayRelease, DecayedSum as Mechanism, KeyOrigin, ModelParams, Query, SeriesSource,
};
use std::path::{Path, PathBuf};

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
            events: None,
            clamp_check: None,
            beta_given: false,
        }
    }

    /// A model by its name (`window`, `allwindow`, `exponential`, `polynomial`, `running`,
    /// `laplace`, `rr`) with its parameters, as `kinsey decay --model` names it.
    pub fn named(model: &str, params: ModelParams) -> DecayedSumBuilder {
        Self::model(model, params)
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
    pub(super) model: String,
    pub(super) params: ModelParams,
    pub(super) epsilon: Option<f64>,
    pub(super) bound: Option<Bound>,
    pub(super) seed: Option<u64>,
    pub(super) record_seed: bool,
    pub(super) device: DevicePref,
    pub(super) online: bool,
    pub(super) ledger: Option<crate::ledger::Ledger>,
    pub(super) events: Option<Events>,
    pub(super) clamp_check: Option<f64>,
    /// Whether [`beta`](Self::beta) was called (it has a default, so only the call tells
    /// a parameter the model ignores from one left alone).
    pub(super) beta_given: bool,
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
    /// The stated noise std of each estimate, as `values` (public: a function of the
    /// parameters and the step, never of the data).
    pub stds: Vec<Vec<f64>>,
    /// The release report: public parameters, calibration, guarantee.
    pub release: DecayRelease,
    /// A line for the summary when the stated error makes the estimates say little, with
    /// the parameters that lower it (public: [`usefulness`](super::usefulness)).
    pub advice: Option<String>,
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
        let mut o = output_set(out)?;
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
        self.beta_given = true;
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

    /// Steps of a file bucketed from events (a timestamp column, a predicate, or both)
    /// instead of one column's values.
    pub fn events(mut self, events: Events) -> Self {
        self.events = Some(events);
        self
    }

    /// Spend `epsilon` more on a noisy count of the steps clamped to the bound (in the
    /// report, with whether clamping is frequent); the ledger charges both.
    pub fn clamp_check(mut self, epsilon: f64) -> Self {
        self.clamp_check = Some(epsilon);
        self
    }

    /// The release's `(epsilon, delta)`, as the ledger charges it (with the clamp check's
    /// epsilon).
    fn budget(&self, query: &Query) -> Result<(f64, f64)> {
        let (e, d) = match query.zcdp()? {
            Some(z) => (z.epsilon, z.delta),
            None => (query.epsilon, 0.0),
        };
        Ok((e + self.clamp_check.unwrap_or(0.0), d))
    }

    fn query(&self, column: &str) -> Result<(Query, Bound)> {
        let bound = self
            .bound
            .ok_or_else(|| Error::param("bound", "the per-step bound must be given"))?;
        Ok((self.query_with(column, bound)?, bound))
    }

    /// Every public parameter of the release (the input enters a seeded key through its
    /// digest, not its path). An event range and step are parsed here, so a bad one is
    /// refused before any data is read.
    pub(super) fn query_with(&self, column: &str, bound: Bound) -> Result<Query> {
        kinsey_decay::check_params_apply(&self.model, &self.params)?;
        if self.beta_given && self.model != "polynomial" {
            return Err(Error::param(
                "beta",
                format!(
                    "beta is a parameter of model polynomial, not of model '{}': remove it \
                     (or choose that model)",
                    self.model
                ),
            ));
        }
        if let Some(e) = self.clamp_check {
            kinsey_core::check_epsilon("clamp-check", e)?;
        }
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
        let ev = self.events.clone().unwrap_or_default();
        let timed = ev.time_column.is_some();
        let range = match (&ev.start, &ev.end) {
            (Some(s), Some(e)) if timed => Some((
                series::parse_time("start", s)?,
                series::parse_time("end", e)?,
            )),
            _ => None,
        };
        Ok(Query {
            model: self.model.clone(),
            params: self.params.clone(),
            epsilon,
            bound: bound.value,
            source: SeriesSource {
                column: column.into(),
                step_seconds: timed.then(|| series::parse_step(&ev.step)).transpose()?,
                time_column: ev.time_column,
                range,
                predicate: ev.predicate,
            },
        })
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
        let stds = (0..values.len())
            .map(|c| (0..n).map(|j| m.noise_std(c, j)).collect())
            .collect();
        Ok(DecayOutput {
            columns: m.columns(),
            values,
            stds,
            advice: super::usefulness(query, &release),
            release,
            clamped,
        })
    }

    /// Run over `column` of a CSV or Parquet file (one row per step): the release
    /// `kinsey decay --input PATH --column COLUMN` makes with the same parameters.
    pub fn over_file(self, path: impl AsRef<Path>, column: &str) -> Result<DecayOutput> {
        let path = path.as_ref();
        let (query, bound) = self.query(column)?;
        let series = self.load(path, column, bound.value)?;
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

/// A series made of events: each step's value is the number of rows in it that hold the
/// predicate (every row without one). With a time column the steps are its timestamps
/// bucketed into `step`-wide steps over the public `start..=end`; without one, each row is
/// a step, one bit each.
#[derive(Debug, Clone)]
pub struct Events {
    /// The timestamp column (Parquet timestamp, or ISO text in CSV).
    pub time_column: Option<String>,
    /// The step width: `30s`, `1m`, `15m`, `1h`, `1d`.
    pub step: String,
    /// The first time (public): `YYYY-MM-DDTHH:MM[:SS]` or seconds.
    pub start: Option<String>,
    /// The last time (public): the output covers `start..=end` whatever the events.
    pub end: Option<String>,
    /// Keep only rows with `COLUMN OP NUMBER` (e.g. `delay>=15`).
    pub predicate: Option<String>,
}

impl Default for Events {
    fn default() -> Self {
        Self {
            time_column: None,
            step: "1m".into(),
            start: None,
            end: None,
            predicate: None,
        }
    }
}

impl Events {
    /// Refuse a bad event series before anything is read: a time column without a public
    /// start and end, a bad step, time or predicate.
    pub fn check(&self) -> Result<()> {
        self.spec().map(drop)
    }

    /// The spec the loader reads with: a time column needs a public start and end.
    fn spec(&self) -> Result<EventSpec> {
        let range = match (&self.time_column, &self.start, &self.end) {
            (Some(_), Some(s), Some(e)) => Some((
                series::parse_time("start", s)?,
                series::parse_time("end", e)?,
            )),
            (Some(_), _, _) => {
                return Err(Error::param(
                    "start",
                    "--time-column needs a public --start and --end (the first and last events \
                     are private, and the output length must not depend on them)",
                ));
            }
            (None, _, _) => None,
        };
        Ok(EventSpec {
            time_column: self.time_column.clone(),
            step_seconds: series::parse_step(&self.step)?,
            predicate: self
                .predicate
                .as_deref()
                .map(Predicate::parse)
                .transpose()?,
            range,
        })
    }

    /// The public clock of a time-bucketed series (its output's `time` column).
    pub(super) fn clock(&self) -> Result<Option<series::Clock>> {
        match (&self.time_column, &self.start) {
            (Some(_), Some(start)) => Ok(Some(series::Clock {
                start: series::parse_time("start", start)?,
                step: series::parse_step(&self.step)?,
            })),
            _ => Ok(None),
        }
    }
}

/// Whether every step of `input` read with `events` is a bit (a `.txt` file of 0/1
/// characters, or a predicate without a time column): then the bound is 1 unless declared.
pub fn steps_are_bits(input: &Path, events: Option<&Events>) -> bool {
    kinsey_data::stream::is_bit_file(input)
        || events.is_some_and(|e| e.predicate.is_some() && e.time_column.is_none())
}

impl DecayedSumBuilder {
    /// The per-step bound: declared, or 1 where every step is a bit.
    pub(super) fn bound_for(&self, input: &Path) -> Result<Bound> {
        match self.bound {
            Some(b) => Ok(b),
            None if steps_are_bits(input, self.events.as_ref()) => Bound::clamp(1.0),
            None => Err(Error::param("bound", "the per-step bound must be given")),
        }
    }

    /// The series of `input`: one column's values, or events bucketed into steps.
    pub(super) fn load(&self, input: &Path, column: &str, bound: f64) -> Result<series::Series> {
        match &self.events {
            Some(ev) if ev.time_column.is_some() || ev.predicate.is_some() => {
                series::load_events(input, &ev.spec()?, bound)
            }
            _ => series::load(input, column, bound),
        }
    }

    /// Charge the ledger, when one is set, before any noise is drawn.
    pub(super) fn charge(&self, input: &Path, query: &Query) -> Result<()> {
        if let Some(l) = &self.ledger {
            let command = format!("decay {}", query.model);
            l.charge_file(input, &command, self.budget(query)?)?;
        }
        Ok(())
    }

    /// The mechanism for a series of `n` steps (when known) keyed by the query and, with
    /// a seed, every byte of the input: a seed replays the same series only.
    pub(super) fn mechanism_for(
        &self,
        query: &Query,
        input: &Path,
        n: Option<u64>,
    ) -> Result<(Box<dyn Mechanism>, String)> {
        let origin = KeyOrigin::of(self.seed, self.record_seed);
        let key = query.key(origin, || kinsey_data::digest::of_files(input))?;
        query.mechanism(n, key, self.device)
    }
}

/// An output set with `out`'s folder created: what a decayed-sum release is written into.
pub(super) fn output_set(out: &Path) -> Result<Outputs> {
    let mut o = Outputs::new();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        o.ensure_dir(dir)?;
    }
    Ok(o)
}

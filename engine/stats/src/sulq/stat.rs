//! The statistical-query adapter (seed 003, "Capturing STAT", after Kearns 1993): a
//! STAT(c, D) oracle answers `Pr_x[p(x, c(x))]` within `tau`; on a SuLQ database of `n`
//! labelled rows the adapter sums the predicate, repeating the query `t` times to reduce the
//! variance (`t >= R / (tau^2 n^2)`), and returns `tally / (t n)`.
//!
//! With Gaussian noise, `t` repetitions of a unit query are exactly one query with noise
//! `sigma / sqrt(t)` charged `t` units, which is how they are asked here. We choose `t` so
//! that the answer's standard deviation is at most `tau / 2` (|error| <= tau with
//! probability about 0.95). A predicate's sum has sensitivity 1 under both neighbour
//! definitions (one row changes it by at most 1).
//!
//! On top of it, an SQ learner: the best single binary feature as a predictor of the label
//! ("what is the single best predictor for risk of stroke?"), with one STAT query per
//! feature.

use super::{GaussianCalibration, Guarantee, Need, Plan, Sensitivity, SulqDb};
use kinsey_core::{Error, Result};
use kinsey_data::table::Matrix;
use kinsey_dp::Neighbours;
use rayon::prelude::*;
use serde::Serialize;

const UNIT: Sensitivity = Sensitivity {
    l2: 1.0,
    paper_units: 1.0,
};

/// A STAT oracle over a SuLQ database.
#[derive(Debug)]
pub struct StatAdapter<'a> {
    db: &'a mut SulqDb,
    /// n: exact under bounded neighbours (public there), otherwise a noisy count.
    pub n: f64,
}

impl<'a> StatAdapter<'a> {
    /// Under unbounded neighbours this spends one unit on a noisy row count.
    pub fn new(db: &'a mut SulqDb, rows: usize) -> Result<Self> {
        let n = if db.plan.neighbours.n_is_public() {
            rows as f64
        } else {
            db.release("STAT: row count", &[rows as f64], UNIT)?[0].max(1.0)
        };
        Ok(Self { db, n })
    }

    /// Repetitions for accuracy `tau`.
    pub(crate) fn repeats(&self, tau: f64) -> f64 {
        // the tolerance keeps t = 1 at exactly the unrepeated accuracy
        ((2.0 * self.db.plan.sigma / (tau * self.n)).powi(2) - 1e-9)
            .ceil()
            .max(1.0)
    }

    /// The accuracy (two standard deviations) of one unrepeated query.
    pub fn accuracy(&self) -> f64 {
        2.0 * self.db.plan.sigma / self.n
    }

    /// `Pr[p(x, y)]` within `tau`.
    pub fn stat(
        &mut self,
        label: &str,
        m: &Matrix,
        y: &[f32],
        tau: f64,
        pred: impl Fn(&[f32], f32) -> bool + Sync,
    ) -> Result<f64> {
        if !(tau > 0.0 && tau < 1.0) {
            return Err(Error::param(
                "tau",
                format!("accuracy must be in (0, 1), got {tau}"),
            ));
        }
        let count = (0..m.n)
            .into_par_iter()
            .filter(|&i| pred(m.row(i), y[i]))
            .count() as f64;
        self.stat_count(label, count, tau)
    }

    /// [`StatAdapter::stat`] of a predicate whose exact count over the rows is `count`
    /// (counted by the caller, in one pass over any number of blocks).
    pub fn stat_count(&mut self, label: &str, count: f64, tau: f64) -> Result<f64> {
        if !(tau > 0.0 && tau < 1.0) {
            return Err(Error::param(
                "tau",
                format!("accuracy must be in (0, 1), got {tau}"),
            ));
        }
        let t = self.repeats(tau);
        let noisy = self.db.release_repeated(label, &[count], UNIT, t)?[0];
        Ok((noisy / self.n).clamp(0.0, 1.0))
    }
}

/// The plan for `queries` STAT queries of one unit each; errors if it cannot reach `tau`.
pub fn plan(
    queries: usize,
    n: usize,
    tau: Option<f64>,
    epsilon: f64,
    delta: f64,
    calibration: GaussianCalibration,
    neighbours: Neighbours,
) -> Result<Plan> {
    let extra = if neighbours.n_is_public() { 0.0 } else { 1.0 };
    let p = Plan::sized(
        epsilon,
        delta,
        calibration,
        neighbours,
        &[Need {
            sens: UNIT,
            coordinates: 1,
            times: queries as f64 + extra,
        }],
    )?;
    // Under unbounded neighbours n is private: the caller checks tau against the noisy
    // row count instead (a refusal here would depend on the exact n).
    let achieved = 2.0 * p.sigma / n as f64;
    if let Some(t) = tau
        && neighbours.n_is_public()
        && t < achieved
    {
        return Err(Error::param(
            "tau",
            format!(
                "{queries} STAT queries on {n} rows at eps = {epsilon}, delta = {delta} reach \
                 an accuracy of {achieved:.4}, not {t}; ask fewer queries, a larger budget or a \
                 coarser tau"
            ),
        ));
    }
    Ok(p)
}

/// The learned predictor.
#[derive(Debug, Clone, Serialize)]
pub struct StumpResult {
    /// The chosen feature.
    pub feature: String,
    /// Predict +1 when the feature is 1 (true) or when it is 0 (false).
    pub positive_when_set: bool,
    /// Noisy error of the chosen predictor.
    pub noisy_error: f64,
    /// Noisy errors of "+1 when set" for every feature.
    pub errors: Vec<f64>,
    /// The tolerance tau of the statistical queries.
    pub tau: f64,
    /// What the release guarantees.
    pub guarantee: Guarantee,
}

impl super::Stated for StumpResult {
    fn sulq_guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

/// Per feature `j`, the rows of a block where "+1 when feature `j` is set" (values >= 0.5)
/// is wrong, added to `counts`: every stump query's exact count, in one pass over the rows
/// (integers: the same whatever the blocks).
pub fn stump_counts_into(counts: &mut [u64], x: &[f32], y: &[f32], d: usize) {
    for (row, &yi) in x.chunks_exact(d.max(1)).zip(y) {
        for (c, &v) in counts.iter_mut().zip(row) {
            *c += u64::from((v >= 0.5) != (yi > 0.0));
        }
    }
}

/// The best single binary feature (values >= 0.5 count as set) as a predictor of y.
pub fn best_stump(m: &Matrix, y: &[f32], adapter: &mut StatAdapter<'_>) -> Result<StumpResult> {
    if y.len() != m.n {
        return Err(Error::param(
            "labels",
            "the label column's length differs from the feature columns'".to_string(),
        ));
    }
    let mut counts = vec![0u64; m.d];
    stump_counts_into(&mut counts, &m.x, y, m.d);
    best_stump_of_counts(&m.names, &counts, adapter)
}

/// [`best_stump`] from the features' names and their [`stump_counts_into`] counts.
pub fn best_stump_of_counts(
    names: &[String],
    counts: &[u64],
    adapter: &mut StatAdapter<'_>,
) -> Result<StumpResult> {
    let tau = adapter.accuracy();
    let mut errors = Vec::with_capacity(names.len());
    for (name, &count) in names.iter().zip(counts) {
        let label = format!("STAT: error of '{name}'");
        errors.push(adapter.stat_count(&label, count as f64, tau)?);
    }
    let (mut best, mut pos, mut err) = (0, true, f64::INFINITY);
    for (j, &e) in errors.iter().enumerate() {
        if e < err {
            (best, pos, err) = (j, true, e);
        }
        if 1.0 - e < err {
            (best, pos, err) = (j, false, 1.0 - e);
        }
    }
    Ok(StumpResult {
        feature: names.get(best).cloned().unwrap_or_default(),
        positive_when_set: pos,
        noisy_error: err,
        errors,
        tau,
        guarantee: adapter.db.guarantee(),
    })
}

/// Exact error of "+1 when feature j is set" (NOT private: evaluation).
pub fn stump_error(m: &Matrix, y: &[f32], j: usize, positive_when_set: bool) -> f64 {
    let mut counts = vec![0u64; m.d];
    stump_counts_into(&mut counts, &m.x, y, m.d);
    stump_error_of_counts(&counts, m.n, j, positive_when_set)
}

/// [`stump_error`] from the [`stump_counts_into`] counts of `n` rows.
pub fn stump_error_of_counts(counts: &[u64], n: usize, j: usize, positive_when_set: bool) -> f64 {
    let wrong = counts.get(j).copied().unwrap_or(0) as f64;
    let wrong = if positive_when_set {
        wrong
    } else {
        n as f64 - wrong
    };
    wrong / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_dp::NoiseRng;

    #[test]
    fn finds_the_informative_feature_and_respects_tau() {
        let mut r = NoiseRng::from_seed_quiet(6);
        let (n, d) = (20_000, 5);
        let mut x = Vec::new();
        let mut y = Vec::new();
        for _ in 0..n {
            let row: Vec<f32> = (0..d).map(|_| if r.bit() { 1.0 } else { 0.0 }).collect();
            // feature 3 predicts the label 85% of the time, the others are noise
            let agree = r.uniform_open0() < 0.85;
            let lab = if (row[3] > 0.5) == agree { 1.0 } else { -1.0 };
            x.extend(row);
            y.push(lab);
        }
        let m = Matrix::from_rows(x, d, "sq").expect("rows");
        let p = plan(
            d,
            n,
            Some(0.02),
            1.0,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("feasible");
        let mut db = SulqDb::new(p, NoiseRng::from_seed_quiet(2));
        let mut a = StatAdapter::new(&mut db, n).expect("ok");
        let res = best_stump(&m, &y, &mut a).expect("runs");
        assert_eq!(res.feature, "x4");
        assert!(res.positive_when_set);
        assert!((res.noisy_error - stump_error(&m, &y, 3, true)).abs() < 0.02);
        assert!(db.used() <= db.plan.units * super::super::UNIT_SLACK);
        // too fine an accuracy for the budget is refused up front
        let e = plan(
            d,
            n,
            Some(1e-5),
            1.0,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect_err("infeasible");
        assert!(e.to_string().contains("accuracy"), "{e}");
    }
}

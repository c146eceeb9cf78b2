//! SuLQ perceptron (seed 003): start at `w = 0`; each round asks one joint query, the
//! number `s` of misclassified rows (`y <x, w> <= 0`) and the sum of `y x` over them, and
//! moves `w` by their noisy average. It stops when the noisy `s` is no longer well above
//! the noise (`s < 4 sigma`, the seed's `s >> sqrt(R)`) or after the planned rounds.
//!
//! On data that is not linearly separable the averaged update oscillates, so the result
//! is the iterate with the smallest *noisy* misclassified count ("pocket"): choosing among
//! already released values is post-processing and costs no budget.
//!
//! Sensitivity of the joint answer (rows in `[-1, 1]^d`, labels in {-1, +1}):
//! * unbounded: `||(1, y x)||_2 <= sqrt(1 + d)`;
//! * bounded: the count moves by at most 1 and the sum by `||y x - y' x'|| <= 2 sqrt(d)`:
//!   `sqrt(1 + 4 d)`.

use super::{GaussianCalibration, Guarantee, Need, Plan, Sensitivity, SulqDb};
use kinsey_core::{Error, Result};
use kinsey_data::table::Matrix;
use kinsey_dp::Neighbours;
use kinsey_kernels::perceptron::perceptron_sums;
use serde::Serialize;

pub(crate) fn round_sensitivity(d: usize, neighbours: Neighbours) -> Sensitivity {
    let d = d as f64;
    Sensitivity {
        l2: match neighbours {
            Neighbours::Unbounded => (1.0 + d).sqrt(),
            Neighbours::Bounded => (1.0 + 4.0 * d).sqrt(),
        },
        paper_units: 1.0 + 4.0 * d,
    }
}

/// The plan: one query per round.
pub fn plan(
    rounds: usize,
    d: usize,
    epsilon: f64,
    delta: f64,
    calibration: GaussianCalibration,
    neighbours: Neighbours,
) -> Result<Plan> {
    Plan::sized(
        epsilon,
        delta,
        calibration,
        neighbours,
        &[Need {
            sens: round_sensitivity(d, neighbours),
            coordinates: 1 + d,
            times: rounds as f64,
        }],
    )
}

#[derive(Debug, Clone, Serialize)]
/// The perceptron's release.
pub struct PerceptronResult {
    /// The pocket iterate: smallest noisy misclassified count.
    pub w: Vec<f64>,
    /// Round whose iterate was kept (1-based).
    pub kept_round: usize,
    /// The last iterate.
    pub(crate) w_last: Vec<f64>,
    /// Rounds run.
    pub rounds_run: usize,
    /// Noisy misclassified counts per round.
    pub misclassified: Vec<f64>,
    /// Whether it stopped before the last round (no noisy mistake left).
    pub stopped_early: bool,
    /// What the release guarantees.
    pub guarantee: Guarantee,
}

impl super::Stated for PerceptronResult {
    fn sulq_guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

/// Check the labels are in {-1, +1}.
fn check_labels(y: &[f32], m: &Matrix) -> Result<()> {
    if y.len() != m.n {
        return Err(Error::param(
            "labels",
            "the label column's length differs from the feature columns'".to_string(),
        ));
    }
    if let Some(i) = y.iter().position(|&v| v != 1.0 && v != -1.0) {
        return Err(Error::Value {
            path: m.source.clone(),
            column: "label".into(),
            row: i,
            msg: "the label is not -1 or +1".into(),
        });
    }
    Ok(())
}

/// One round's exact sums at `w`: the misclassified count and the sum of their `y x`
/// (one pass over the rows, however they are held).
pub type RoundSums<'a> = dyn Fn(&[f64]) -> Result<(f64, Vec<f64>)> + 'a;

/// The sums of the rows of `m` and their labels `y` (checked) at once.
fn matrix_sums<'a>(m: &'a Matrix, y: &'a [f32]) -> Result<Box<RoundSums<'a>>> {
    check_labels(y, m)?;
    Ok(Box::new(move |w: &[f64]| {
        Ok(perceptron_sums(&m.x, y, m.d, w)?)
    }))
}

/// Run at most `rounds` rounds.
pub fn run(m: &Matrix, y: &[f32], rounds: usize, db: &mut SulqDb) -> Result<PerceptronResult> {
    run_sums(m.d, rounds, db, &*matrix_sums(m, y)?)
}

/// [`run`] over rows of `d` columns whose round sums `sums` computes (rows held whole, or
/// read a block at a time: the same sums, the same release).
pub fn run_sums(
    d: usize,
    rounds: usize,
    db: &mut SulqDb,
    sums: &RoundSums<'_>,
) -> Result<PerceptronResult> {
    if rounds == 0 {
        return Err(Error::param("rounds", "need at least one round"));
    }
    let sens = round_sensitivity(d, db.plan.neighbours);
    let mut w = vec![0.0; d];
    let mut hist = Vec::new();
    let mut stopped = false;
    let mut pocket = (f64::INFINITY, w.clone(), 0);
    for r in 0..rounds {
        let (count, sums) = sums(&w)?;
        let mut exact = vec![count];
        exact.extend_from_slice(&sums);
        let noisy = db.release(&format!("perceptron round {}", r + 1), &exact, sens)?;
        hist.push(noisy[0]);
        if noisy[0] < pocket.0 {
            pocket = (noisy[0], w.clone(), r + 1);
        }
        if noisy[0] < 4.0 * db.plan.sigma {
            stopped = true;
            break;
        }
        for t in 0..d {
            w[t] += noisy[1 + t] / noisy[0];
        }
    }
    Ok(PerceptronResult {
        w: pocket.1,
        kept_round: pocket.2,
        w_last: w,
        rounds_run: hist.len(),
        misclassified: hist,
        stopped_early: stopped,
        guarantee: db.guarantee(),
    })
}

/// Non-private reference: the same averaged-update pocket perceptron without noise.
pub fn exact(m: &Matrix, y: &[f32], rounds: usize) -> Result<Vec<f64>> {
    exact_sums(m.d, rounds, &*matrix_sums(m, y)?)
}

/// [`exact`] over rows of `d` columns whose round sums `sums` computes.
pub fn exact_sums(d: usize, rounds: usize, sums: &RoundSums<'_>) -> Result<Vec<f64>> {
    let mut w = vec![0.0; d];
    let mut pocket = (f64::INFINITY, w.clone());
    for _ in 0..rounds {
        let (count, sums) = sums(&w)?;
        if count < pocket.0 {
            pocket = (count, w.clone());
        }
        if count == 0.0 {
            break;
        }
        w.iter_mut().zip(&sums).for_each(|(a, s)| *a += s / count);
    }
    Ok(pocket.1)
}

/// Share of rows with `y <x, w> > 0`.
pub fn accuracy(m: &Matrix, y: &[f32], w: &[f64]) -> Result<f64> {
    accuracy_sums(m.n, w, &*matrix_sums(m, y)?)
}

/// [`accuracy`] of `n` rows whose round sums `sums` computes.
pub fn accuracy_sums(n: usize, w: &[f64], sums: &RoundSums<'_>) -> Result<f64> {
    let (wrong, _) = sums(w)?;
    Ok(1.0 - wrong / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_dp::NoiseRng;

    #[test]
    fn learns_a_separable_concept() {
        let mut r = NoiseRng::from_seed_quiet(4);
        let (n, d) = (40_000, 4);
        let w_true = [0.6, -0.5, 0.4, 0.2];
        let mut x = Vec::new();
        let mut y = Vec::new();
        while y.len() < n {
            let row: Vec<f64> = (0..d).map(|_| 2.0 * r.uniform_open0() - 1.0).collect();
            let z: f64 = row.iter().zip(&w_true).map(|(a, b)| a * b).sum();
            if z.abs() < 0.1 {
                continue; // margin
            }
            x.extend(row.iter().map(|v| *v as f32));
            y.push(if z > 0.0 { 1.0 } else { -1.0 });
        }
        let m = Matrix::from_rows(x, d, "sep").expect("rows");
        let p = plan(
            20,
            d,
            1.0,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("ok");
        let mut db = SulqDb::new(p, NoiseRng::from_seed_quiet(8));
        let res = run(&m, &y, 20, &mut db).expect("runs");
        let acc = accuracy(&m, &y, &res.w).expect("ok");
        assert!(acc > 0.95, "accuracy {acc}");
        assert!(db.used() <= db.plan.units * super::super::UNIT_SLACK);
        assert!(run(&m, &y[1..], 3, &mut db).is_err());
        let mut bad = y.clone();
        bad[3] = 0.0;
        assert!(run(&m, &bad, 3, &mut db).is_err());
    }
}

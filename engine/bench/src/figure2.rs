//! Figure 2 of seed 001 (Pathak, Rane & Raj, NIPS 2010) on a9a.
//!
//! 5 parties, three splits of the training set (6512 x 5 / 4884,6512,6512,6512,8141 /
//! 3256,6512,6512,6512,9769), lambda = 1 (the paper's) and lambda in {1e-2, 1e-3, 1e-4}
//! (where the classifier is informative, see calibration.md section 7), epsilon from 0.05
//! to 0.4 in steps of 0.05 plus a wider sweep, `runs` noise draws per point, both
//! calibrations. Rows are scaled by 1/sqrt(14) (a9a rows have at most 14 ones) so that
//! they lie in the unit ball. Series: non-private on all data (w*), DP on all data (output
//! perturbation of w* with the pooled sensitivity), and the DP aggregate per split.
//! Each split is one seeded shuffle; the local classifiers are trained once per split and
//! lambda, and the noise is redrawn `runs` times per point.

use kinsey_core::{Error, Result};
use kinsey_data::split::{SplitSpec, split};
use kinsey_data::{Dataset, RowTransform};
use kinsey_dp::NoiseRng;
use kinsey_learn::aggregate::{self, NoiseKind, PrivacySpec, SensitivityDerivation};
use kinsey_learn::logreg::{self, Objective, SolverConfig};
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;

/// The paper's three splits.
/// The paper's three splits of the 32,561 training rows over five parties.
pub const PAPER_SPLITS: [(&str, [usize; 5]); 3] = [
    ("even 6512x5", [6512, 6512, 6512, 6512, 6512]),
    ("n(1)=4884", [4884, 6512, 6512, 6512, 8141]),
    ("n(1)=3256", [3256, 6512, 6512, 6512, 9769]),
];

/// Experiment settings.
#[derive(Debug, Clone, Serialize)]
/// What the experiment sweeps.
pub struct Figure2Config {
    /// Regularisation values of the curves.
    pub lambdas: Vec<f64>,
    /// Epsilons of each curve.
    pub epsilons: Vec<f64>,
    /// Noise draws per point.
    pub runs: usize,
    /// The noise's shape (the paper's L2-Laplace, or per coordinate).
    pub noise: NoiseKind,
    /// Seed of the noise draws (NOT private against its holder).
    pub seed: Option<u64>,
    /// The public constant every row is multiplied by (into the unit ball).
    pub row_scale: f64,
}

impl Default for Figure2Config {
    fn default() -> Self {
        let mut epsilons: Vec<f64> = (1..=8).map(|i| i as f64 * 5.0 / 100.0).collect();
        epsilons.extend([0.6, 0.8, 1.0, 2.0, 4.0, 8.0]);
        Self {
            lambdas: vec![1.0, 1e-2, 1e-3, 1e-4],
            epsilons,
            runs: 200,
            noise: NoiseKind::L2,
            seed: None,
            row_scale: 1.0 / 14f64.sqrt(),
        }
    }
}

/// One point of the figure.
#[derive(Debug, Clone, Serialize)]
/// One point of a curve.
pub struct Point {
    /// Its lambda.
    pub lambda: f64,
    /// Its curve.
    pub series: String,
    /// `paper` or `tight`.
    pub calibration: String,
    /// Its epsilon (`None`: non-private).
    pub epsilon: Option<f64>,
    /// Mean test error over the draws.
    pub mean_test_error: f64,
    /// Its standard deviation.
    pub std_test_error: f64,
    /// Draws.
    pub runs: usize,
}

/// Theorem 4.2 check per (lambda, split).
#[derive(Debug, Clone, Serialize)]
/// Theorem 4.2 on one split: the aggregate's distance to w* against its bound.
pub struct BoundCheck {
    /// Its lambda.
    pub lambda: f64,
    /// The split.
    pub split: String,
    /// `||w_hat - w*||`.
    pub distance: f64,
    /// `(K - 1) / (n(1) lambda)`.
    pub bound: f64,
    /// distance / bound.
    pub ratio: f64,
    /// Test error of the unperturbed average.
    pub average_test_error: f64,
}

#[derive(Debug, Clone, Serialize)]
/// The experiment's figures.
pub struct Figure2Result {
    /// What was swept.
    pub config: Figure2Config,
    /// How the noise was drawn.
    pub rng: kinsey_dp::RngRecord,
    /// Every point.
    pub points: Vec<Point>,
    /// Theorem 4.2 per split and lambda.
    pub theorem_4_2: Vec<BoundCheck>,
    /// Seconds it took.
    pub seconds: f64,
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

/// Test error of `center + noise_r` over `runs` noise draws (parallel, each run its own stream).
fn noisy_errors(
    center: &[f64],
    cal: &aggregate::NoiseCalibration,
    runs: usize,
    rng: &mut NoiseRng,
    test: &Dataset,
) -> Vec<f64> {
    let rngs: Vec<NoiseRng> = (0..runs).map(|_| rng.fork()).collect();
    rngs.into_par_iter()
        .map(|mut r| {
            let w: Vec<f64> = center
                .iter()
                .zip(cal.sample_published(&mut r))
                .map(|(a, b)| a + b)
                .collect();
            logreg::error_rate(&w, &test.x, &test.y, test.d)
        })
        .collect()
}

/// The points of one series: both calibrations x every epsilon, noise calibrated to
/// `(n, k, g)` (smallest party size, parties, gradient bound) around `center`.
fn sweep(
    obj: &Objective,
    cfg: &Figure2Config,
    test: &Dataset,
    center: &[f64],
    series: &str,
    (n, k, g): (usize, usize, f64),
    rng: &mut NoiseRng,
) -> Result<Vec<Point>> {
    let mut points = Vec::new();
    for calibration in [SensitivityDerivation::Tight, SensitivityDerivation::Paper] {
        for &epsilon in &cfg.epsilons {
            let spec = PrivacySpec {
                epsilon,
                calibration,
                noise: cfg.noise,
            };
            let cal = aggregate::calibrate(obj, &spec, n, k, test.d, g)?;
            let (m, s) = mean_std(&noisy_errors(center, &cal, cfg.runs, rng, test));
            points.push(Point {
                lambda: obj.lambda,
                series: series.to_string(),
                calibration: format!("{calibration:?}").to_lowercase(),
                epsilon: Some(epsilon),
                mean_test_error: m,
                std_test_error: s,
                runs: cfg.runs,
            });
        }
    }
    Ok(points)
}

/// Run the experiment (pure computation; the caller writes it), each point reported to
/// `progress`.
pub fn run(
    train: &Dataset,
    test: &Dataset,
    cfg: &Figure2Config,
    progress: &dyn kinsey_core::Progress,
) -> Result<Figure2Result> {
    let start = std::time::Instant::now();
    if cfg.runs < 2 {
        return Err(Error::param("runs", "need at least 2 runs per point"));
    }
    for &e in &cfg.epsilons {
        kinsey_core::check_epsilon("epsilon", e)?;
    }
    let mut train = train.clone();
    let mut test = test.clone();
    train.check_same_features(&test)?;
    RowTransform::Scale(cfg.row_scale).apply(&mut train)?;
    RowTransform::Scale(cfg.row_scale).apply(&mut test)?;
    let mut rng = NoiseRng::for_release(
        cfg.seed,
        &format!(
            "experiment figure2|lambdas={:?}|epsilons={:?}|runs={}|noise={}|row_scale={}",
            cfg.lambdas,
            cfg.epsilons,
            cfg.runs,
            cfg.noise.name(),
            cfg.row_scale
        ),
        || Ok(kinsey_data::digest::of_dataset(&train)),
    )?;
    let solver = SolverConfig::default();
    let k = 5;
    let mut points = Vec::new();
    let mut checks = Vec::new();
    let splits: Vec<(String, Vec<Dataset>)> = PAPER_SPLITS
        .iter()
        .map(|(name, sizes)| {
            let parts = split(&train, &SplitSpec::Sizes(sizes.to_vec()), &mut rng.fork())?;
            Ok((name.to_string(), parts))
        })
        .collect::<Result<_>>()?;
    let total = cfg.lambdas.len() as u64 * (1 + PAPER_SPLITS.len() as u64);
    progress.begin("figure 2", Some(total));
    for &lambda in &cfg.lambdas {
        let obj = Objective::new(lambda)?;
        let star = logreg::train_cpu(train.rows()?, &obj, &solver)?;
        let star_err = logreg::error_rate(&star.w, &test.x, &test.y, test.d);
        points.push(Point {
            lambda,
            series: "non-private, all data".into(),
            calibration: "-".into(),
            epsilon: None,
            mean_test_error: star_err,
            std_test_error: 0.0,
            runs: 1,
        });
        let g_star =
            kinsey_learn::pipeline::public_gradient_bound(std::slice::from_ref(&star), &solver)?;
        points.extend(sweep(
            &obj,
            cfg,
            &test,
            &star.w,
            "DP, all data",
            (train.n(), 1, g_star),
            &mut rng,
        )?);
        progress.advance(1);
        for (name, parts) in &splits {
            let fits = parts
                .iter()
                .map(|p| logreg::train_cpu(p.rows()?, &obj, &solver))
                .collect::<Result<Vec<_>>>()?;
            let ws: Vec<&[f64]> = fits.iter().map(|f| f.w.as_slice()).collect();
            let avg = aggregate::average(&ws);
            let n_min = parts.iter().map(Dataset::n).min().unwrap_or(1);
            let dist = aggregate::distance(&avg, &star.w);
            let bound = aggregate::theorem_4_2_bound(k, n_min, lambda);
            checks.push(BoundCheck {
                lambda,
                split: name.clone(),
                distance: dist,
                bound,
                ratio: dist / bound,
                average_test_error: logreg::error_rate(&avg, &test.x, &test.y, test.d),
            });
            let g = kinsey_learn::pipeline::public_gradient_bound(&fits, &solver)?;
            let series = format!("DP aggregate, {name}");
            points.extend(sweep(
                &obj,
                cfg,
                &test,
                &avg,
                &series,
                (n_min, k, g),
                &mut rng,
            )?);
            progress.advance(1);
        }
    }
    progress.end();
    Ok(Figure2Result {
        config: cfg.clone(),
        rng: rng.record(),
        points,
        theorem_4_2: checks,
        seconds: start.elapsed().as_secs_f64(),
    })
}

impl Figure2Result {
    /// Every point as CSV.
    pub fn to_csv(&self) -> String {
        let mut s =
            String::from("lambda,series,calibration,epsilon,mean_test_error,std_test_error,runs\n");
        for p in &self.points {
            let _ = writeln!(
                s,
                "{},\"{}\",{},{},{:.6},{:.6},{}",
                p.lambda,
                p.series.replace('"', "'"),
                p.calibration,
                p.epsilon.map(|e| format!("{e}")).unwrap_or_default(),
                p.mean_test_error,
                p.std_test_error,
                p.runs
            );
        }
        s
    }

    /// The series of one (lambda, calibration) panel, in the order they were computed.
    pub fn series_names(&self, lambda: f64, calibration: &str) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for p in self
            .points
            .iter()
            .filter(|p| p.lambda == lambda && p.calibration == calibration)
        {
            if !names.contains(&p.series) {
                names.push(p.series.clone());
            }
        }
        names
    }

    /// Markdown table (epsilon in columns) for one lambda and calibration.
    pub fn markdown(&self, lambda: f64, calibration: &str, max_eps: f64) -> String {
        let eps: Vec<f64> = self
            .config
            .epsilons
            .iter()
            .copied()
            .filter(|&e| e <= max_eps + 1e-12)
            .collect();
        let mut s = format!(
            "| series \\ epsilon | {} |\n|---|{}\n",
            eps.iter()
                .map(|e| format!("{e}"))
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(eps.len())
        );
        let names = self.series_names(lambda, calibration);
        if let Some(np) = self
            .points
            .iter()
            .find(|p| p.lambda == lambda && p.epsilon.is_none())
        {
            let _ = writeln!(
                s,
                "| {} | {} |",
                np.series,
                vec![format!("{:.4}", np.mean_test_error); eps.len()].join(" | ")
            );
        }
        for name in names {
            let row: Vec<String> = eps
                .iter()
                .map(|&e| {
                    self.points
                        .iter()
                        .find(|p| {
                            p.lambda == lambda
                                && p.calibration == calibration
                                && p.series == name
                                && p.epsilon == Some(e)
                        })
                        .map(|p| format!("{:.4} ± {:.4}", p.mean_test_error, p.std_test_error))
                        .unwrap_or_default()
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", name, row.join(" | "));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reduced run on the real a9a: the non-private optimum at lambda = 1 predicts the
    /// majority class (test error = share of +1 = 0.2362, calibration.md section 7), the
    /// DP error falls with epsilon, and Theorem 4.2 holds on every split.
    #[test]
    fn figure2_on_a9a_reduced() {
        let (tr, te) = kinsey_data::testdata::a9a().expect("a9a in ../shared/data");
        let cfg = Figure2Config {
            lambdas: vec![1.0, 1e-3],
            epsilons: vec![0.05, 0.4, 8.0],
            runs: 20,
            seed: Some(5),
            ..Default::default()
        };
        let r = run(&tr, &te, &cfg, &kinsey_core::Silent).expect("runs");
        let np = |l: f64| {
            r.points
                .iter()
                .find(|p| p.lambda == l && p.epsilon.is_none())
                .expect("np")
                .mean_test_error
        };
        assert!((np(1.0) - 0.2362).abs() < 5e-4, "{}", np(1.0));
        assert!((np(1e-3) - 0.1639).abs() < 3e-3, "{}", np(1e-3));
        for c in &r.theorem_4_2 {
            assert!(c.ratio <= 1.0, "{c:?}");
        }
        let at = |e: f64| {
            r.points
                .iter()
                .find(|p| {
                    p.lambda == 1e-3
                        && p.calibration == "paper"
                        && p.series.contains("3256")
                        && p.epsilon == Some(e)
                })
                .expect("point")
                .mean_test_error
        };
        assert!(at(0.05) > at(8.0), "error falls with epsilon");
    }
}

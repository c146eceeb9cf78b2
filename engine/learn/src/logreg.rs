//! Local training: L2-regularised logistic regression, solved by Newton's method.
//!
//! The objective convention is written once, here (seed 001, eq. 2):
//!
//!   `J(w) = (1/n) sum_i log(1 + exp(-y_i w.x_i)) + lambda * w.w`
//!
//! so `J` is `Lambda`-strongly convex with `Lambda = 2 lambda`, and every sensitivity in
//! the engine is derived from [`Objective::strong_convexity`] (see `docs/calibration.md`
//! in shared/ and `aggregate.rs`), never hard-coded.
//!
//! Solver: Newton with a faer Cholesky solve and Armijo backtracking, to
//! `||grad J|| <= tol` (default 1e-10). Loss and gradient are always computed in f64 on the
//! CPU (the tolerance is below f32 resolution); the Hessian comes from the selected kernel
//! (CPU, or GPU where it is the expensive `X^T D X`). The reached gradient norm is recorded
//! and folded into the sensitivity by the caller.

use crate::formula::Expr;
use crate::passes::{KernelPasses, MemoryPasses, Passes};
use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use kinsey_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The regularised objective of seed 001, eq. (2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    /// The paper's lambda (coefficient of `w.w`).
    pub lambda: f64,
}

impl Objective {
    /// The objective with regulariser `lambda > 0`.
    pub fn new(lambda: f64) -> Result<Self> {
        if !(lambda.is_finite() && lambda > 0.0) {
            return Err(Error::param(
                "lambda",
                format!("must be finite and > 0, got {lambda}"),
            ));
        }
        Ok(Self { lambda })
    }

    /// Strong-convexity constant `Lambda` of J (Hessian of the regulariser `lambda w.w`).
    pub(crate) fn strong_convexity(&self) -> f64 {
        2.0 * self.lambda
    }

    /// L2 sensitivity of the exact minimiser when one of `n` records is replaced, for a
    /// 1-Lipschitz loss and rows with `||x|| <= 1` (Chaudhuri & Monteleoni 2008, Cor. 2,
    /// stated for `(Lambda/2)||w||^2`): `2 / (n Lambda)`, as the formula a release states,
    /// `n = n_(1)` the secret size of the smallest party.
    pub(crate) fn minimiser_sensitivity_expr(&self) -> Expr {
        Expr::Lit(2.0) / (Expr::Secret("n_(1)") * Expr::Named("Lambda", self.strong_convexity()))
    }

    /// [`inexact_slack`](Self::inexact_slack) as a formula.
    pub(crate) fn inexact_slack_expr(&self, g: f64) -> Expr {
        Expr::Lit(2.0) * Expr::Named("g", g) / Expr::Named("Lambda", self.strong_convexity())
    }

    /// Extra L2 distance between two *approximate* minimisers, each with
    /// `||grad J|| <= g`: `||w~ - w*|| <= g / Lambda` per side, so `2 g / Lambda`.
    pub(crate) fn inexact_slack(&self, g: f64) -> f64 {
        self.inexact_slack_expr(g).eval(0.0)
    }

    /// J(w) from the kernel's loss sum.
    pub fn value(&self, loss_sum: f64, n: usize, w: &[f64]) -> f64 {
        loss_sum / n as f64 + self.lambda * dot(w, w)
    }

    /// grad J(w) from the kernel's gradient sum.
    pub fn gradient(&self, grad_sum: &[f64], n: usize, w: &[f64]) -> Vec<f64> {
        grad_sum
            .iter()
            .zip(w)
            .map(|(g, wi)| g / n as f64 + 2.0 * self.lambda * wi)
            .collect()
    }

    /// Hessian of J from the kernel's Hessian sum (row-major d x d).
    pub fn hessian(&self, hess_sum: &[f64], n: usize, d: usize) -> Mat<f64> {
        Mat::from_fn(d, d, |j, k| {
            hess_sum[j * d + k] / n as f64 + if j == k { self.strong_convexity() } else { 0.0 }
        })
    }
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Euclidean norm.
pub fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// Solver settings.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SolverConfig {
    /// Stop when `||grad J|| <= tolerance`.
    pub tolerance: f64,
    /// Newton iterations before giving up.
    pub max_iterations: usize,
    /// Rows used for the Hessian (a fixed strided subsample; 0 = all rows). The gradient
    /// and the stopping test always use every row, so the tolerance is met exactly; the
    /// subsample only changes the Newton direction (sub-sampled Newton, Roosta-Khorasani &
    /// Mahoney 2016): quadratic convergence becomes fast linear convergence.
    pub hessian_rows: usize,
}

impl Default for SolverConfig {
    fn default() -> Self {
        Self {
            tolerance: 1e-10,
            max_iterations: 100,
            hessian_rows: 1 << 15,
        }
    }
}

/// A trained local classifier and how it was reached.
#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    /// The minimiser.
    pub w: Vec<f64>,
    /// `J(w)` at the minimiser.
    pub objective: f64,
    /// `||grad J(w)||` at the returned w (folded into the sensitivity).
    pub grad_norm: f64,
    /// Newton iterations.
    pub iterations: usize,
    /// Full passes over the data for loss and gradient.
    pub passes: usize,
    /// Hessian evaluations, and the rows each one read.
    pub hessian_evaluations: usize,
    /// Rows in the Hessian subsample (0: all rows).
    pub hessian_rows: usize,
    /// Total seconds, including the warm start on the Hessian subsample.
    pub seconds: f64,
    pub(crate) warm_start_seconds: f64,
    /// Seconds spent putting the rows on the device for the full passes (included in
    /// `seconds`; 0 when the passes run on the CPU).
    pub upload_seconds: f64,
    /// Rows fitted.
    pub n: usize,
    /// Where the kernel ran (`cpu (rayon, 2 threads)`, `gpu: ...`).
    pub device: String,
}

/// Rows `0, s, 2s, ...` with `s = n / m`: the Hessian subsample (deterministic, spread over
/// the whole file so that sorted inputs are sampled evenly). `None` when all rows are used.
pub(crate) fn hessian_subsample(n: usize, m: usize) -> Option<Vec<usize>> {
    if m == 0 || m >= n {
        return None;
    }
    let step = n as f64 / m as f64;
    Some(
        (0..m)
            .map(|i| ((i as f64 * step) as usize).min(n - 1))
            .collect(),
    )
}

/// Train by (sub-sampled) Newton's method. `hess` provides Hessian sums over its rows (any
/// device, all rows or a subsample); `exact` provides loss and gradient over all rows in
/// f64: on the CPU (in memory or streamed: the same bits), or on the device
/// ([`device_passes`]: the same sums within 1e-15 relative, not the same bits).
pub fn train(
    hess: &dyn Passes,
    exact: &dyn Passes,
    obj: &Objective,
    cfg: &SolverConfig,
    w0: Option<&[f64]>,
) -> Result<Fit> {
    if !(cfg.tolerance.is_finite() && cfg.tolerance > 0.0) {
        return Err(Error::param(
            "tolerance",
            format!("must be > 0, got {}", cfg.tolerance),
        ));
    }
    let start = Instant::now();
    let (n, d) = exact.shape();
    let (nh, dh) = hess.shape();
    if dh != d || nh == 0 {
        return Err(Error::Numerical(
            "Hessian kernel and data shapes differ".into(),
        ));
    }
    let mut passes = 0usize;
    let mut hess_evals = 0usize;
    let mut value_grad = |w: &[f64]| -> Result<(f64, Vec<f64>)> {
        let s = exact.sums(w, false)?;
        passes += 1;
        Ok((obj.value(s.loss, n, w), obj.gradient(&s.grad, n, w)))
    };
    let mut sampled_hessian = |w: &[f64]| -> Result<Mat<f64>> {
        let h = hess
            .sums(w, true)?
            .hess
            .ok_or_else(|| Error::Numerical("kernel returned no Hessian".into()))?;
        hess_evals += 1;
        Ok(obj.hessian(&h, nh, d))
    };
    let mut w = match w0 {
        Some(v) if v.len() == d => v.to_vec(),
        Some(v) => {
            return Err(Error::Numerical(format!(
                "starting point has {} entries, not {d}",
                v.len()
            )));
        }
        None => vec![0.0; d],
    };
    let (mut f, mut g) = value_grad(&w)?;
    // Curvature model: the (sub-sampled) Hessian, corrected by BFGS updates from the exact
    // gradients, so the sampling error of the Hessian does not limit the convergence rate.
    let mut b: Option<Mat<f64>> = None;
    let mut iterations = 0;
    let mut last_ratio = 1.0;
    while norm(&g) > cfg.tolerance && iterations < cfg.max_iterations {
        tracing::debug!(
            "newton: n = {n}, iteration {iterations}, J = {f:.15}, ||grad J|| = {:.3e}",
            norm(&g)
        );
        iterations += 1;
        // Re-sample the Hessian when the last step made poor progress.
        if b.is_none() || last_ratio > 0.25 {
            b = Some(sampled_hessian(&w)?);
        }
        let bm = b
            .as_ref()
            .ok_or_else(|| Error::Numerical("missing Hessian".into()))?;
        let llt = match bm.llt(Side::Lower) {
            Ok(l) => l,
            Err(_) => {
                let fresh = sampled_hessian(&w)?;
                let l = fresh.llt(Side::Lower).map_err(|e| {
                    Error::Numerical(format!("Hessian is not positive definite: {e:?}"))
                })?;
                b = Some(fresh);
                l
            }
        };
        let rhs = Mat::from_fn(d, 1, |i, _| -g[i]);
        let p = llt.solve(&rhs);
        let step: Vec<f64> = (0..d).map(|i| p[(i, 0)]).collect();
        let slope = dot(&g, &step);
        let mut t = 1.0;
        loop {
            let trial: Vec<f64> = w.iter().zip(&step).map(|(a, b)| a + t * b).collect();
            let (ft, gt) = value_grad(&trial)?;
            // Armijo condition; near the optimum round-off makes f flat, so a step that
            // reduces the gradient norm without increasing f is accepted too.
            if ft <= f + 1e-4 * t * slope || (ft <= f + 1e-12 * f.abs() && norm(&gt) < norm(&g)) {
                last_ratio = if t < 1.0 { 1.0 } else { norm(&gt) / norm(&g) };
                let sv: Vec<f64> = step.iter().map(|v| t * v).collect();
                let yv: Vec<f64> = gt.iter().zip(&g).map(|(a, c)| a - c).collect();
                if let Some(bm) = b.as_mut() {
                    bfgs_update(bm, &sv, &yv);
                }
                w = trial;
                f = ft;
                g = gt;
                break;
            }
            t *= 0.5;
            if t < 1e-10 {
                return Err(Error::Numerical(format!(
                    "line search failed at ||grad J|| = {:.3e}; the tolerance {:.1e} may be \
                     below what this data's precision allows",
                    norm(&g),
                    cfg.tolerance
                )));
            }
        }
    }
    let grad_norm = norm(&g);
    if grad_norm > cfg.tolerance {
        tracing::warn!(
            "Newton stopped after {iterations} iterations at ||grad J|| = {grad_norm:.3e} > {:.1e}; \
             the reached norm is folded into the sensitivity",
            cfg.tolerance
        );
    }
    Ok(Fit {
        w,
        objective: f,
        grad_norm,
        iterations,
        passes,
        hessian_evaluations: hess_evals,
        hessian_rows: nh,
        seconds: start.elapsed().as_secs_f64(),
        warm_start_seconds: 0.0,
        upload_seconds: 0.0,
        n,
        device: hess.describe(),
    })
}

/// BFGS update of a curvature matrix with step `s` and gradient change `y`; skipped when
/// the curvature condition `y.s > 0` fails numerically.
fn bfgs_update(b: &mut Mat<f64>, s: &[f64], y: &[f64]) {
    let d = s.len();
    let ys = dot(y, s);
    let bs: Vec<f64> = (0..d)
        .map(|i| (0..d).map(|k| b[(i, k)] * s[k]).sum())
        .collect();
    let sbs = dot(s, &bs);
    if !(ys > 1e-12 * norm(s) * norm(y) && sbs > 0.0) {
        return;
    }
    for i in 0..d {
        for k in 0..d {
            b[(i, k)] += y[i] * y[k] / ys - bs[i] * bs[k] / sbs;
        }
    }
}

/// Train on rows with the chosen device: the Hessian kernel runs on a strided subsample
/// (`cfg.hessian_rows`), and when there is one the problem restricted to the subsample is
/// solved first (its passes cost m/n of a full pass) and its optimum is the starting point
/// of the full-data iterations. The reported passes are full-data passes; the warm start's
/// work is in `warm_start_seconds`.
pub(crate) fn fit_rows(
    rows: kinsey_kernels::Rows<'_>,
    device: kinsey_kernels::DevicePref,
    obj: &Objective,
    cfg: &SolverConfig,
) -> Result<Fit> {
    fit_passes(&MemoryPasses::new(rows), device, obj, cfg)
}

/// [`fit_rows`] over any [`Passes`]: rows in memory, or streamed from disk (then the
/// subsample is gathered in one pass, and without a subsample the Hessian is summed by the
/// streamed passes on the CPU). The same rows give the same model either way. Under
/// `DevicePref::Gpu` with the rows in memory the full-data passes run on the device in f64
/// ([`device_passes`]; without a subsample the Hessian too): the model then agrees with
/// the CPU's within the solver's tolerance, not bit for bit.
pub fn fit_passes(
    exact: &dyn Passes,
    device: kinsey_kernels::DevicePref,
    obj: &Objective,
    cfg: &SolverConfig,
) -> Result<Fit> {
    let t = Instant::now();
    let on_device = device_passes(exact, device)?;
    let upload_s = t.elapsed().as_secs_f64();
    let mut fit = fit_passes_on(exact, on_device.as_ref(), device, obj, cfg)?;
    if on_device.is_some() {
        fit.upload_seconds = upload_s;
        fit.seconds += upload_s;
    }
    Ok(fit)
}

/// Training's full-data passes on the device (in f64: `kinsey_kernels::passes`), when the
/// preference asks for the GPU, the rows are in memory and the device has 64-bit floats;
/// `None` where they stay on the CPU (`KINSEY_GPU_PASSES=cpu` keeps them there, one half
/// of an A/B pair).
pub fn device_passes<'a>(
    exact: &'a dyn Passes,
    device: kinsey_kernels::DevicePref,
) -> Result<Option<KernelPasses<'a>>> {
    Ok(match exact.in_memory() {
        Some(rows) => kinsey_kernels::passes::select(device, rows)?.map(KernelPasses),
        None => None,
    })
}

/// [`fit_passes`] with the full-data passes on `on_device` when given (from
/// [`device_passes`]: a caller that times passes after the fit reuses the resident rows);
/// the upload is the caller's to count.
pub fn fit_passes_on(
    exact: &dyn Passes,
    on_device: Option<&KernelPasses<'_>>,
    device: kinsey_kernels::DevicePref,
    obj: &Objective,
    cfg: &SolverConfig,
) -> Result<Fit> {
    let mut fit = fit_with(exact, on_device, device, obj, cfg)?;
    if let Some(k) = on_device
        && !fit.device.starts_with(&k.describe())
    {
        fit.device = format!("{}; full passes: {}", fit.device, k.describe());
    }
    Ok(fit)
}

/// [`fit_passes_on`] before the device is named.
fn fit_with(
    exact: &dyn Passes,
    on_device: Option<&KernelPasses<'_>>,
    device: kinsey_kernels::DevicePref,
    obj: &Objective,
    cfg: &SolverConfig,
) -> Result<Fit> {
    let (n, d) = exact.shape();
    let full: &dyn Passes = match on_device {
        Some(k) => k,
        None => exact,
    };
    match hessian_subsample(n, cfg.hessian_rows) {
        None => match (on_device, exact.in_memory()) {
            // The full Hessian in f64 from the same resident rows.
            (Some(k), _) => train(k, k, obj, cfg, None),
            (None, Some(rows)) => {
                let k = KernelPasses(kinsey_kernels::select(device, rows)?);
                train(&k, exact, obj, cfg, None)
            }
            (None, None) => {
                if device == kinsey_kernels::DevicePref::Gpu {
                    return Err(Error::param(
                        "model.hessian_rows",
                        "rows streamed from disk or kept sparse sum their full Hessian on \
                         the CPU; set a Hessian subsample (hessian_rows > 0) to use the GPU",
                    ));
                }
                train(exact, exact, obj, cfg, None)
            }
        },
        Some(idx) => {
            let t = Instant::now();
            let (x, y) = exact.gather(&idx)?;
            let sub_rows = kinsey_kernels::Rows::new(&x, &y, d)?;
            let sub_exact = MemoryPasses::new(sub_rows);
            let k = KernelPasses(kinsey_kernels::select(device, sub_rows)?);
            let warm_cfg = SolverConfig {
                tolerance: cfg.tolerance.max(WARM_START_TOLERANCE),
                ..*cfg
            };
            let warm = train(&k, &sub_exact, obj, &warm_cfg, None)?;
            let warm_s = t.elapsed().as_secs_f64();
            let mut fit = train(&k, full, obj, cfg, Some(&warm.w))?;
            fit.warm_start_seconds = warm_s;
            fit.seconds += warm_s;
            fit.hessian_evaluations += warm.hessian_evaluations;
            if exact.in_memory().is_none() {
                fit.device = format!("{}; {}", fit.device, exact.describe());
            }
            Ok(fit)
        }
    }
}

/// Gradient tolerance of the warm start on the subsample.
const WARM_START_TOLERANCE: f64 = 1e-8;

/// Convenience: train on the CPU.
pub fn train_cpu(
    rows: kinsey_kernels::Rows<'_>,
    obj: &Objective,
    cfg: &SolverConfig,
) -> Result<Fit> {
    fit_rows(rows, kinsey_kernels::DevicePref::Cpu, obj, cfg)
}

/// Fraction of rows where `sign(w.x)` (ties to -1) differs from the label.
pub fn error_rate(w: &[f64], x: &[f32], y: &[f32], d: usize) -> f64 {
    crate::passes::misclassified(w, x, y, d) as f64 / y.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_data::synth;

    #[test]
    fn newton_reaches_tolerance_and_stationarity() {
        let ds = synth::generate_one(5000, 8, 4.0, 3, "s".into());
        let obj = Objective::new(1e-3).expect("lambda");
        let fit = train_cpu(ds.rows().expect("rows"), &obj, &SolverConfig::default()).expect("fit");
        assert!(fit.grad_norm <= 1e-10, "{}", fit.grad_norm);
        assert!(fit.iterations < 20);
        // Objective is minimal: small perturbations increase it.
        let k = MemoryPasses::new(ds.rows().expect("rows"));
        for j in 0..8 {
            let mut w = fit.w.clone();
            w[j] += 1e-3;
            let s = k.sums(&w, false).expect("eval");
            assert!(obj.value(s.loss, ds.n(), &w) > fit.objective);
        }
    }

    /// Under `DevicePref::Gpu` the full passes run on the device in f64 (lavapipe in CI):
    /// the model is the CPU's within what the stopping rule allows (`||g|| / lambda` each,
    /// by strong convexity), with and without a Hessian subsample; the fit names where its
    /// passes ran and counts the upload. Must FAIL (not skip) without an adapter.
    #[test]
    fn full_passes_on_the_device_fit_the_cpus_model() {
        use kinsey_kernels::DevicePref::{Cpu, Gpu};
        let ds = synth::generate_one(20_000, 9, 4.0, 5, "s".into());
        let obj = Objective::new(1e-3).expect("lambda");
        for hessian_rows in [0, 2000] {
            let cfg = SolverConfig {
                hessian_rows,
                ..SolverConfig::default()
            };
            let rows = ds.rows().expect("rows");
            let cpu = fit_rows(rows, Cpu, &obj, &cfg).expect("cpu fit");
            let gpu = fit_rows(rows, Gpu, &obj, &cfg).expect("gpu fit (lavapipe in CI)");
            assert!(gpu.device.contains("f64 passes"), "{}", gpu.device);
            assert!(gpu.upload_seconds > 0.0 && gpu.seconds >= gpu.upload_seconds);
            assert!(gpu.grad_norm <= cfg.tolerance, "{}", gpu.grad_norm);
            let gap = cpu
                .w
                .iter()
                .zip(&gpu.w)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            let bound = (cpu.grad_norm + gpu.grad_norm) / obj.strong_convexity() + 1e-12;
            assert!(gap <= bound, "models differ by {gap:e} > {bound:e}");
            assert!((gpu.objective - cpu.objective).abs() <= 1e-12 * cpu.objective);
        }
    }

    #[test]
    fn sensitivity_is_derived_from_strong_convexity() {
        let obj = Objective::new(0.5).expect("lambda");
        assert_eq!(obj.strong_convexity(), 1.0);
        assert!((obj.minimiser_sensitivity_expr().eval(100.0) - 0.02).abs() < 1e-15);
        assert!((obj.inexact_slack(1e-10) - 2e-10).abs() < 1e-20);
        assert!(Objective::new(0.0).is_err());
    }

    /// Empirical check of the sensitivity bound: replacing one record moves the exact
    /// minimiser by at most 2/(n Lambda) (it must never exceed it).
    #[test]
    fn replacing_one_record_respects_the_bound() {
        let mut ds = synth::generate_one(400, 5, 3.0, 8, "s".into());
        let obj = Objective::new(0.05).expect("lambda");
        let cfg = SolverConfig::default();
        let w0 = train_cpu(ds.rows().expect("rows"), &obj, &cfg)
            .expect("fit")
            .w;
        let bound =
            obj.minimiser_sensitivity_expr().eval(ds.n() as f64) + obj.inexact_slack(cfg.tolerance);
        for (i, flip) in [(0usize, true), (17, false), (399, true)] {
            let saved = (ds.row(i).to_vec(), ds.y[i]);
            // adversarial-ish replacement: unit-norm row along the first axis, label flipped
            for (j, v) in ds.x[i * 5..(i + 1) * 5].iter_mut().enumerate() {
                *v = if j == 0 { 1.0 } else { 0.0 };
            }
            if flip {
                ds.y[i] = -ds.y[i];
            }
            let w1 = train_cpu(ds.rows().expect("rows"), &obj, &cfg)
                .expect("fit")
                .w;
            let moved = norm(&w0.iter().zip(&w1).map(|(a, b)| a - b).collect::<Vec<_>>());
            assert!(moved <= bound, "moved {moved} > bound {bound}");
            ds.x[i * 5..(i + 1) * 5].copy_from_slice(&saved.0);
            ds.y[i] = saved.1;
        }
    }

    /// The pooled optimum on a9a equals an independent solver's: scikit-learn's values in
    /// shared/docs/calibration.md section 7 (rows scaled by 1/sqrt(14), no intercept).
    #[test]
    fn a9a_optimum_matches_scikit_learn() {
        use kinsey_data::RowTransform;
        let (mut tr, mut te) = kinsey_data::testdata::a9a().expect("a9a in ../shared/data");
        let scale = RowTransform::Scale(1.0 / 14f64.sqrt());
        scale.apply(&mut tr).expect("unit ball");
        scale.apply(&mut te).expect("unit ball");
        for (lambda, j_ref, err_ref) in [
            (1.0, 0.68543, 0.2362),
            (1e-2, 0.52604, 0.2259),
            (1e-3, 0.40882, 0.1639),
        ] {
            let obj = Objective::new(lambda).expect("lambda");
            let fit =
                train_cpu(tr.rows().expect("rows"), &obj, &SolverConfig::default()).expect("fit");
            assert!(fit.grad_norm <= 1e-10);
            assert!(
                (fit.objective - j_ref).abs() < 1e-5,
                "lambda {lambda}: J = {}",
                fit.objective
            );
            let err = error_rate(&fit.w, &te.x, &te.y, te.d);
            assert!(
                (err - err_ref).abs() < 1e-4,
                "lambda {lambda}: test error {err}"
            );
        }
    }

    /// a9a kept sparse fits the dense model: both reach ||grad J|| <= g, so by strong
    /// convexity their minimisers are within 2 g / Lambda of each other; with the full
    /// Hessian and with a subsample.
    #[test]
    fn a9a_as_csr_fits_the_dense_model() {
        let path = kinsey_data::testdata::shared_data_dir()
            .join("a9a")
            .join("a9a");
        let labels = kinsey_data::LabelEncoding::PlusMinusOne;
        let mut dense = kinsey_data::libsvm::read_libsvm(&path, 123, labels).expect("dense");
        let mut sparse =
            kinsey_data::sparse::read_libsvm_sparse(&path, 123, labels).expect("sparse");
        let t = kinsey_data::RowTransform::Scale(1.0 / 14f64.sqrt());
        t.apply(&mut dense).expect("dense");
        sparse.apply(t).expect("sparse");
        let obj = Objective::new(1e-3).expect("lambda");
        for hessian_rows in [0, 4096] {
            let cfg = SolverConfig {
                hessian_rows,
                ..SolverConfig::default()
            };
            let cpu = kinsey_kernels::DevicePref::Cpu;
            let d = fit_passes(
                &MemoryPasses::new(dense.rows().expect("rows")),
                cpu,
                &obj,
                &cfg,
            )
            .expect("dense fit");
            let rows = kinsey_kernels::logistic::csr::CsrRows::new(
                &sparse.indptr,
                &sparse.indices,
                &sparse.values,
                &sparse.y,
                sparse.d,
            )
            .expect("csr");
            let s = fit_passes(&crate::passes::CsrPasses::new(rows), cpu, &obj, &cfg)
                .expect("sparse fit");
            assert!(s.grad_norm <= cfg.tolerance && d.grad_norm <= cfg.tolerance);
            let gap: Vec<f64> = s.w.iter().zip(&d.w).map(|(a, b)| a - b).collect();
            let bound = 2.0 * cfg.tolerance / (2.0 * obj.lambda);
            assert!(norm(&gap) <= bound, "{} > {bound}", norm(&gap));
            assert!((s.objective - 0.40882).abs() < 1e-5, "{}", s.objective);
        }
    }
}

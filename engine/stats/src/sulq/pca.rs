//! SuLQ PCA and SVD (seed 003, "Optimal projections"): approximate `cov(A)` (PCA) or
//! `A^T A` (SVD) through SuLQ, then take the top eigenvectors with faer.
//!
//! * PCA (`center = true`), the seed's `d + d^2` queries as two vector queries:
//!   1. the row count and the column sums, `(1, x)`: L2 sensitivity `sqrt(1 + d)`
//!      unbounded, `sqrt(d)`-ish bounded (the count cannot change; we use `sqrt(1 + d)` for
//!      both); the noisy mean `mu'` is clipped to the box;
//!   2. the upper triangle of `sum_i (x_i - mu')(x_i - mu')^T`: each row adds `v v^T` with
//!      `v = x - mu'` in `[-1, 1]^d`, `||v v^T||_F = ||v||^2 <= d`; a replacement changes it
//!      by `||v v^T - u u^T||_F <= sqrt(||v||^4 + ||u||^4) <= sqrt(2) d`. So `d`
//!      unbounded, `sqrt(2) d` bounded.
//! * SVD (`center = false`): the upper triangle of `A^T A` only, same bounds (rows in
//!   `[0, 1]^d`).
//!
//! The released matrix is symmetrised from its upper triangle and decomposed; eigenvalues
//! can come out negative from the noise and are reported as they are (the explained
//! variance ratios use the positive part).

use super::{GaussianCalibration, Guarantee, Need, Plan, Sensitivity, SulqDb};
use faer::{Mat, Side};
use kinsey_core::{Error, Result};
use kinsey_data::table::{Matrix, MatrixShape};
use kinsey_dp::Neighbours;
use kinsey_kernels::gram::{center_gram, gram_sums};
use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize)]
/// PCA's parameters.
pub struct PcaConfig {
    /// Components kept.
    pub components: usize,
    /// PCA of the covariance (true) or SVD of `A^T A` (false).
    pub center: bool,
}

fn mean_sensitivity(d: usize) -> Sensitivity {
    Sensitivity {
        l2: (1.0 + d as f64).sqrt(),
        paper_units: 1.0 + d as f64,
    }
}

fn scatter_sensitivity(d: usize, center: bool, neighbours: Neighbours) -> Sensitivity {
    let d = d as f64;
    let tri = d * (d + 1.0) / 2.0;
    Sensitivity {
        l2: match neighbours {
            Neighbours::Unbounded => d,
            Neighbours::Bounded => std::f64::consts::SQRT_2 * d,
        },
        // centred entries lie in [-1, 1]: range 2
        paper_units: if center { 4.0 * tri } else { tri },
    }
}

/// The plan: one Gram query (and one mean query when centring).
pub fn plan(
    cfg: &PcaConfig,
    d: usize,
    epsilon: f64,
    delta: f64,
    calibration: GaussianCalibration,
    neighbours: Neighbours,
) -> Result<Plan> {
    let mut needs = vec![Need {
        sens: scatter_sensitivity(d, cfg.center, neighbours),
        coordinates: d * (d + 1) / 2,
        times: 1.0,
    }];
    if cfg.center {
        needs.push(Need {
            sens: mean_sensitivity(d),
            coordinates: d + 1,
            times: 1.0,
        });
    }
    Plan::sized(epsilon, delta, calibration, neighbours, &needs)
}

/// The released projection.
#[derive(Debug, Clone, Serialize)]
pub struct PcaResult {
    /// Its parameters.
    pub config: PcaConfig,
    /// The noisy mean (PCA) used for centring.
    pub mean: Option<Vec<f64>>,
    /// Row count used to scale: exact under bounded neighbours, noisy under unbounded.
    pub(crate) n_used: f64,
    /// Eigenvalues of the noisy covariance (or of `A^T A / n`), largest first.
    pub eigenvalues: Vec<f64>,
    /// Eigenvalue over the sum of the positive eigenvalues.
    pub explained_variance_ratio: Vec<f64>,
    /// `components` unit vectors of `d` coordinates.
    pub components: Vec<Vec<f64>>,
    /// What the release guarantees.
    pub guarantee: Guarantee,
}

impl super::Stated for PcaResult {
    fn sulq_guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

fn upper(m: &[f64], d: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(d * (d + 1) / 2);
    for i in 0..d {
        for j in i..d {
            v.push(m[i * d + j]);
        }
    }
    v
}

/// Top eigenpairs of a symmetric `d x d` matrix given by its upper triangle: (eigenvalues
/// descending, eigenvectors as rows).
pub(crate) fn top_eigen(tri: &[f64], d: usize) -> Result<(Vec<f64>, Vec<Vec<f64>>)> {
    let mut a = Mat::<f64>::zeros(d, d);
    let mut t = 0;
    for i in 0..d {
        for j in i..d {
            a[(i, j)] = tri[t];
            a[(j, i)] = tri[t];
            t += 1;
        }
    }
    let eig = a
        .self_adjoint_eigen(Side::Lower)
        .map_err(|e| Error::Numerical(format!("eigendecomposition failed: {e:?}")))?;
    let s = eig.S().column_vector();
    let u = eig.U();
    // faer sorts ascending
    let vals: Vec<f64> = (0..d).rev().map(|i| s[i]).collect();
    let vecs: Vec<Vec<f64>> = (0..d)
        .rev()
        .map(|c| (0..d).map(|r| u[(r, c)]).collect())
        .collect();
    Ok((vals, vecs))
}

/// Run SuLQ PCA/SVD.
pub fn run(m: &Matrix, cfg: &PcaConfig, db: &mut SulqDb) -> Result<PcaResult> {
    let mut gram = kinsey_kernels::gram::GramSums::zero(m.d);
    kinsey_kernels::gram::gram_sums_into(&mut gram, &m.x, m.d)?;
    run_sums(&m.shape(), &gram, cfg, db)
}

/// Run SuLQ PCA/SVD from the exact Gram sums of the rows of shape `m` (summed in any
/// blocks: they are exact).
pub fn run_sums(
    m: &MatrixShape,
    gram: &kinsey_kernels::gram::GramSums,
    cfg: &PcaConfig,
    db: &mut SulqDb,
) -> Result<PcaResult> {
    let d = m.d;
    if gram.colsum.len() != d || gram.rows != m.n {
        return Err(Error::Numerical(format!(
            "the Gram sums hold {} rows of {} columns, the matrix {} of {d}",
            gram.rows,
            gram.colsum.len(),
            m.n
        )));
    }
    if cfg.components == 0 || cfg.components > d {
        return Err(Error::param(
            "components",
            format!("need 1 <= components <= {d}, got {}", cfg.components),
        ));
    }
    let nb = db.plan.neighbours;
    // Refused only where n is public (an empty table and a one-row one are unbounded
    // neighbours).
    if m.n == 0 && nb.n_is_public() {
        return Err(Error::format(&m.source, "the data set has zero rows"));
    }
    let (xtx, colsum) = (&gram.xtx, &gram.colsum);
    let exact_n = m.n as f64;
    let (scatter, mean, n_used) = if cfg.center {
        let mut q = vec![exact_n];
        q.extend_from_slice(colsum);
        let noisy = db.release("PCA: count and column sums", &q, mean_sensitivity(d))?;
        let n_used = if nb.n_is_public() {
            exact_n
        } else {
            noisy[0].max(1.0)
        };
        let mu: Vec<f64> = noisy[1..]
            .iter()
            .map(|s| (s / n_used).clamp(0.0, 1.0))
            .collect();
        (center_gram(xtx, colsum, m.n, &mu), Some(mu), n_used)
    } else {
        (xtx.clone(), None, exact_n)
    };
    let noisy_tri = db.release(
        if cfg.center {
            "PCA: centred scatter matrix"
        } else {
            "SVD: A^T A"
        },
        &upper(&scatter, d),
        scatter_sensitivity(d, cfg.center, nb),
    )?;
    // Under unbounded neighbours and no centring, n is not public: the scale of the
    // eigenvalues is then that of A^T A itself.
    let scale = if cfg.center || nb.n_is_public() {
        n_used
    } else {
        1.0
    };
    let tri: Vec<f64> = noisy_tri.iter().map(|v| v / scale).collect();
    let (vals, vecs) = top_eigen(&tri, d)?;
    let pos: f64 = vals.iter().filter(|v| **v > 0.0).sum();
    Ok(PcaResult {
        config: *cfg,
        mean,
        n_used: scale,
        explained_variance_ratio: vals
            .iter()
            .map(|v| if pos > 0.0 { v.max(0.0) / pos } else { 0.0 })
            .collect(),
        eigenvalues: vals,
        components: vecs.into_iter().take(cfg.components).collect(),
        guarantee: db.guarantee(),
    })
}

/// The exact covariance (centred) or `A^T A / n`, full row-major `d x d`.
fn exact_scatter(m: &Matrix, center: bool) -> Result<Vec<f64>> {
    let (xtx, colsum) = gram_sums(&m.x, m.d)?;
    let n = m.n as f64;
    let s = if center {
        let mu: Vec<f64> = colsum.iter().map(|s| s / n).collect();
        center_gram(&xtx, &colsum, m.n, &mu)
    } else {
        xtx
    };
    Ok(s.iter().map(|v| v / n).collect())
}

/// Non-private reference: (eigenvalues, components) of the exact covariance or `A^T A / n`.
pub fn exact(m: &Matrix, cfg: &PcaConfig) -> Result<(Vec<f64>, Vec<Vec<f64>>)> {
    let (vals, vecs) = top_eigen(&upper(&exact_scatter(m, cfg.center)?, m.d), m.d)?;
    Ok((vals, vecs.into_iter().take(cfg.components).collect()))
}

/// Share of the data's variance (around its true mean) captured by the span of
/// `components`, relative to the best possible with as many components (NOT private:
/// evaluation). 1.0 is optimal.
pub fn captured_variance_ratio(m: &Matrix, components: &[Vec<f64>]) -> Result<f64> {
    let d = m.d;
    let cov = exact_scatter(m, true)?;
    let quad = |v: &[f64]| -> f64 {
        (0..d)
            .map(|i| v[i] * (0..d).map(|j| cov[i * d + j] * v[j]).sum::<f64>())
            .sum()
    };
    let got: f64 = components.iter().map(|v| quad(v)).sum();
    let (vals, _) = top_eigen(&upper(&cov, d), d)?;
    let best: f64 = vals.iter().take(components.len()).sum();
    Ok(if best > 0.0 { got / best } else { 1.0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_dp::NoiseRng;

    /// Rows with one dominant direction (1, 1, 0, ...)/sqrt(2) plus small isotropic noise.
    fn elongated(n: usize, d: usize) -> Matrix {
        let mut r = NoiseRng::from_seed_quiet(5);
        let mut x = Vec::with_capacity(n * d);
        for _ in 0..n {
            let t = 0.2 * r.std_normal();
            for j in 0..d {
                let base = if j < 2 { t } else { 0.0 };
                x.push((0.5 + base + 0.02 * r.std_normal()).clamp(0.0, 1.0) as f32);
            }
        }
        Matrix::from_rows(x, d, "elongated").expect("rows")
    }

    #[test]
    fn recovers_the_dominant_direction() {
        let m = elongated(50_000, 6);
        for center in [true, false] {
            let cfg = PcaConfig {
                components: 1,
                center,
            };
            let p = plan(
                &cfg,
                6,
                1.0,
                1e-6,
                GaussianCalibration::Zcdp,
                Neighbours::Bounded,
            )
            .expect("ok");
            let mut db = SulqDb::new(p, NoiseRng::from_seed_quiet(9));
            let r = run(&m, &cfg, &mut db).expect("runs");
            assert!(db.used() <= db.plan.units * super::super::UNIT_SLACK);
            assert!(db.used() > 0.999_999 * db.plan.units, "the plan is spent");
            if center {
                let v = &r.components[0];
                let cos = (v[0] + v[1]).abs() / std::f64::consts::SQRT_2;
                assert!(cos > 0.99, "cos = {cos}");
                let q = captured_variance_ratio(&m, &r.components).expect("ok");
                assert!(q > 0.98, "captured {q}");
                assert!(r.explained_variance_ratio[0] > 0.8);
            }
        }
        let cfg = PcaConfig {
            components: 7,
            center: true,
        };
        let p = plan(
            &cfg,
            6,
            1.0,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("ok");
        assert!(run(&m, &cfg, &mut SulqDb::new(p, NoiseRng::from_seed_quiet(1))).is_err());
    }

    #[test]
    fn scatter_sensitivity_bounds_a_replacement() {
        // worst case: v = all ones (norm^2 = d) replaced by u = -ones... both in [-1, 1]^d
        let d = 5;
        let v = vec![1.0; d];
        let u: Vec<f64> = (0..d)
            .map(|i| if i % 2 == 0 { -1.0 } else { 1.0 })
            .collect();
        let mut f = 0.0;
        for i in 0..d {
            for j in i..d {
                f += (v[i] * v[j] - u[i] * u[j]).powi(2);
            }
        }
        let s = scatter_sensitivity(d, true, Neighbours::Bounded);
        assert!(f.sqrt() <= s.l2 + 1e-12, "{} > {}", f.sqrt(), s.l2);
    }
}

//! SuLQ k-means (seed 003, "Side by side: k means and SuLQ k-means").
//!
//! Each Lloyd step asks one vector query: for every centre j, the number of rows whose
//! nearest centre is j and the sum of those rows (the seed's `k(1 + d)` scalar queries,
//! asked jointly). The new centre is `noisy sum / noisy size`, clipped to the box.
//!
//! Sensitivity of the joint answer (rows in `[0, 1]^d`): a row contributes a one-hot count
//! and its own coordinates to exactly one centre, so
//! * unbounded (add/remove): `||(1, x)||_2 <= sqrt(1 + d)`;
//! * bounded (replace): the row may leave centre a and join centre b: `sqrt(2 (1 + d))`.
//!
//! Centres start at points drawn uniformly in the box (public randomness, independent of
//! the data). A centre whose noisy size is below `max(3, 2 sqrt(d)) sigma` (its average
//! would be mostly noise) is re-seeded next to the centre with the largest noisy size, offset by up to 0.1
//! per coordinate (a public pseudo-random offset): the large cluster is split at the next
//! step. Both rules use released values only (post-processing, no budget); without them a
//! random start in high dimension leaves most centres empty for good. The exact sums come
//! from the kernels crate, on the CPU or a GPU.

use super::{GaussianCalibration, Guarantee, Need, Plan, Sensitivity, SulqDb};
use kinsey_core::{Error, Result};
use kinsey_data::table::{Matrix, MatrixShape};
use kinsey_dp::{Neighbours, NoiseRng};
use kinsey_kernels::kmeans::cpu::kmeans_sums;
use kinsey_kernels::kmeans::{KmeansKernel, KmeansSums};
use serde::Serialize;

/// What to run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KmeansConfig {
    /// Clusters.
    pub k: usize,
    /// Lloyd iterations.
    pub iters: usize,
}

/// Sensitivity of one step's joint (counts, sums) answer.
pub(crate) fn step_sensitivity(k: usize, d: usize, neighbours: Neighbours) -> Sensitivity {
    let one = 1.0 + d as f64;
    Sensitivity {
        l2: match neighbours {
            Neighbours::Unbounded => one.sqrt(),
            Neighbours::Bounded => (2.0 * one).sqrt(),
        },
        paper_units: k as f64 * one,
    }
}

/// The parameters alone (k, iterations): public, checked before a front door charges the
/// budget ledger.
pub fn check_config(cfg: &KmeansConfig) -> Result<()> {
    if cfg.k == 0 || cfg.k > 10_000 {
        return Err(Error::param(
            "k",
            format!("need 1 <= k <= 10000, got {}", cfg.k),
        ));
    }
    if cfg.iters == 0 {
        return Err(Error::param("iterations", "need at least one iteration"));
    }
    Ok(())
}

/// The plan for `iters` steps.
pub fn plan(
    cfg: &KmeansConfig,
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
            sens: step_sensitivity(cfg.k, d, neighbours),
            coordinates: cfg.k * (1 + d),
            times: cfg.iters as f64,
        }],
    )
}

/// The released clustering.
#[derive(Debug, Clone, Serialize)]
pub struct KmeansResult {
    /// Its parameters.
    pub config: KmeansConfig,
    /// `k` centres of `d` coordinates, in the box (`[0, 1]` per column: where the
    /// mechanism and `kinsey predict` measure distances).
    pub centers: Vec<Vec<f64>>,
    /// The same centres in the columns' own units (`LO + c (HI - LO)` for a column
    /// declared `NAME:LO:HI`): post-processing of `centers`.
    pub centers_original: Vec<Vec<f64>>,
    /// Noisy cluster sizes of the last step.
    pub sizes: Vec<f64>,
    /// Noisy sizes at every step.
    pub(crate) size_history: Vec<Vec<f64>>,
    /// What the release guarantees.
    pub guarantee: Guarantee,
}

impl super::Stated for KmeansResult {
    fn sulq_guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

/// Uniform random centres in the unit box (public randomness).
pub fn random_centers(k: usize, d: usize, rng: &mut NoiseRng) -> Vec<f64> {
    (0..k * d).map(|_| rng.uniform_open0()).collect()
}

fn check(m: &MatrixShape, cfg: &KmeansConfig, nb: Neighbours) -> Result<()> {
    check_config(cfg)?;
    // Refused only where n is public: under unbounded neighbours an empty table and a
    // one-row table are neighbours, and a refusal would tell them apart.
    if m.n == 0 && nb.n_is_public() {
        return Err(Error::format(&m.source, "the data set has zero rows"));
    }
    Ok(())
}

/// Run SuLQ k-means from `init` (row-major `k x d`) on rows of shape `m`; each step's
/// exact sizes and sums at the centres come from `sums` (a kernel on the rows in memory,
/// or a pass over the input in blocks).
pub fn run(
    m: &MatrixShape,
    cfg: &KmeansConfig,
    init: &[f64],
    db: &mut SulqDb,
    sums: &dyn Fn(&[f64]) -> Result<KmeansSums>,
) -> Result<KmeansResult> {
    check(m, cfg, db.plan.neighbours)?;
    let (k, d) = (cfg.k, m.d);
    if init.len() != k * d {
        return Err(Error::param("init", "initial centres are not k x d"));
    }
    let sens = step_sensitivity(k, d, db.plan.neighbours);
    let mut centers = init.to_vec();
    let mut history = Vec::new();
    for it in 0..cfg.iters {
        let s = sums(&centers)?;
        let mut exact = s.counts.clone();
        exact.extend_from_slice(&s.sums);
        let noisy = db.release(&format!("k-means step {}", it + 1), &exact, sens)?;
        let floor = size_floor(db.plan.sigma, d);
        for j in 0..k {
            let size = noisy[j];
            if size > floor {
                for t in 0..d {
                    centers[j * d + t] = (noisy[k + j * d + t] / size).clamp(0.0, 1.0);
                }
            }
        }
        reseed(&mut centers, &noisy[..k], floor, d, it);
        history.push(noisy[..k].to_vec());
    }
    let centers: Vec<Vec<f64>> = centers.chunks(d).map(<[f64]>::to_vec).collect();
    Ok(KmeansResult {
        config: *cfg,
        // Columns already in [0, 1] until the caller maps the declared boxes back.
        centers_original: centers.clone(),
        centers,
        sizes: history.last().cloned().unwrap_or_default(),
        size_history: history,
        guarantee: db.guarantee(),
    })
}

/// [`run`] with the rows of `m` in memory and each step's sums from `kernel` (built on
/// them).
pub fn run_kernel(
    m: &Matrix,
    cfg: &KmeansConfig,
    init: &[f64],
    db: &mut SulqDb,
    kernel: &dyn KmeansKernel,
) -> Result<KmeansResult> {
    run(&m.shape(), cfg, init, db, &|c| Ok(kernel.sums(c)?))
}

/// Smallest noisy size at which a centre moves to its noisy average: the average's noise
/// has norm about `sigma sqrt(d) / size`, so `2 sigma sqrt(d)` keeps it near 0.5 (and at
/// least 3 sigma, the seed's "size >> sqrt(R)").
pub(crate) fn size_floor(sigma: f64, d: usize) -> f64 {
    sigma * f64::max(3.0, 2.0 * (d as f64).sqrt())
}

/// A public pseudo-random offset in [-0.1, 0.1] for (step, centre, coordinate): splitmix64.
fn offset(it: usize, j: usize, t: usize) -> f64 {
    let mut z = (it as u64) << 40 ^ (j as u64) << 20 ^ t as u64;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    0.2 * ((z >> 11) as f64 / (1u64 << 53) as f64) - 0.1
}

/// Move centres with `size <= floor` next to the largest centre (post-processing).
fn reseed(centers: &mut [f64], sizes: &[f64], floor: f64, d: usize, it: usize) {
    let big = (0..sizes.len()).fold(0, |b, j| if sizes[j] > sizes[b] { j } else { b });
    if sizes[big] <= floor {
        return;
    }
    for j in 0..sizes.len() {
        if sizes[j] <= floor {
            for t in 0..d {
                centers[j * d + t] = (centers[big * d + t] + offset(it, j, t)).clamp(0.0, 1.0);
            }
        }
    }
}

/// Non-private Lloyd iterations from the same start (the evaluation's reference).
pub fn lloyd(m: &Matrix, cfg: &KmeansConfig, init: &[f64]) -> Result<Vec<f64>> {
    // The non-private reference (a diagnostic): an empty table has nothing to cluster.
    check(&m.shape(), cfg, Neighbours::Bounded)?;
    let d = m.d;
    let mut centers = init.to_vec();
    for it in 0..cfg.iters {
        let s = kmeans_sums(&m.x, d, &centers)?;
        for j in 0..cfg.k {
            if s.counts[j] > 0.0 {
                for t in 0..d {
                    centers[j * d + t] = s.sums[j * d + t] / s.counts[j];
                }
            }
        }
        reseed(&mut centers, &s.counts, 0.0, d, it);
    }
    Ok(centers)
}

/// Mean squared distance of the rows to their nearest centre (NOT private: evaluation).
pub fn mean_inertia(m: &Matrix, centers: &[f64]) -> Result<f64> {
    Ok(kmeans_sums(&m.x, m.d, centers)?.inertia / m.n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_kernels::kmeans::cpu::CpuKmeans;

    /// Three well separated blobs in [0,1]^2.
    fn blobs(n: usize, seed: u64) -> Matrix {
        let mut r = NoiseRng::from_seed_quiet(seed);
        let means = [(0.2, 0.2), (0.8, 0.3), (0.5, 0.85)];
        let mut x = Vec::new();
        for i in 0..n {
            let (a, b) = means[i % 3];
            x.push((a + 0.05 * r.std_normal()).clamp(0.0, 1.0) as f32);
            x.push((b + 0.05 * r.std_normal()).clamp(0.0, 1.0) as f32);
        }
        Matrix::from_rows(x, 2, "blobs").expect("rows")
    }

    #[test]
    fn finds_the_blobs_close_to_the_non_private_result() {
        let m = blobs(60_000, 1);
        let cfg = KmeansConfig { k: 3, iters: 8 };
        let mut rng = NoiseRng::from_seed_quiet(7);
        let init = [0.1, 0.5, 0.5, 0.1, 0.9, 0.9];
        let p = plan(
            &cfg,
            2,
            1.0,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("plan");
        let mut db = SulqDb::new(p, rng.fork());
        let cpu = CpuKmeans { x: &m.x, d: m.d };
        let r = run_kernel(&m, &cfg, &init, &mut db, &cpu).expect("runs");
        assert!(
            (db.used() / db.plan.units - 1.0).abs() < 1e-6,
            "the plan is spent"
        );
        assert!(r.guarantee.epsilon_spent <= 1.0 && r.guarantee.epsilon_spent > 0.999_99);
        let flat: Vec<f64> = r.centers.concat();
        let private = mean_inertia(&m, &flat).expect("ok");
        let exact = mean_inertia(&m, &lloyd(&m, &cfg, &init).expect("ok")).expect("ok");
        assert!(
            private < 1.05 * exact,
            "private {private} vs non-private {exact}"
        );
        // one more step than planned is refused
        let more = KmeansConfig { k: 3, iters: 1 };
        assert!(matches!(
            run_kernel(&m, &more, &init, &mut db, &cpu),
            Err(Error::Budget(_))
        ));
    }

    /// Replacing (bounded) or removing (unbounded) any row moves the joint answer by at most
    /// the stated L2 sensitivity, including the worst case of a corner row changing centre.
    #[test]
    fn stated_sensitivity_bounds_neighbouring_answers() {
        let m = blobs(600, 3);
        let centers = [0.0, 0.0, 1.0, 1.0, 0.5, 0.9];
        let answer = |x: &[f32]| -> Vec<f64> {
            let s = kmeans_sums(x, 2, &centers).expect("ok");
            [s.counts, s.sums].concat()
        };
        let base = answer(&m.x);
        let dist = |a: &[f64], b: &[f64]| -> f64 {
            a.iter()
                .zip(b)
                .map(|(u, v)| (u - v).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let mut worst_b: f64 = 0.0;
        for i in 0..m.n {
            for corner in [[0.0f32, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]] {
                let mut x = m.x.clone();
                x[2 * i..2 * i + 2].copy_from_slice(&corner);
                worst_b = worst_b.max(dist(&base, &answer(&x)));
            }
        }
        let mut worst_u: f64 = 0.0;
        for i in (0..m.n).step_by(7) {
            let mut x = m.x.clone();
            x.drain(2 * i..2 * i + 2);
            worst_u = worst_u.max(dist(&base, &answer(&x)));
        }
        let b = step_sensitivity(3, 2, Neighbours::Bounded).l2;
        let u = step_sensitivity(3, 2, Neighbours::Unbounded).l2;
        assert!(worst_b <= b + 1e-9 && worst_b > 0.8 * b, "{worst_b} vs {b}");
        assert!(worst_u <= u + 1e-9, "{worst_u} vs {u}");
    }

    #[test]
    fn joint_sensitivity_is_cheaper_than_one_query_per_coordinate() {
        let b = step_sensitivity(8, 50, Neighbours::Bounded);
        assert!((b.l2 * b.l2 - 102.0).abs() < 1e-9);
        assert_eq!(b.paper_units, 408.0);
        let u = step_sensitivity(8, 50, Neighbours::Unbounded);
        assert!((u.l2 * u.l2 - 51.0).abs() < 1e-9);
        let m = blobs(30, 2);
        let bad = KmeansConfig { k: 0, iters: 1 };
        let one = KmeansConfig { k: 1, iters: 1 };
        let p = plan(
            &one,
            2,
            1.0,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("ok");
        let mut db = SulqDb::new(p, NoiseRng::from_seed_quiet(1));
        let cpu = CpuKmeans { x: &m.x, d: m.d };
        assert!(run_kernel(&m, &bad, &[], &mut db, &cpu).is_err());
    }
}

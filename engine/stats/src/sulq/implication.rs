//! Vertically partitioned databases (seed 003; Dwork & Nissim 2004): attribute `alpha` is
//! held by one SuLQ database and `beta` by another, over the same rows (row ids are shared
//! and public, so `n` is public: bounded neighbours). Neither database sees the other's
//! column; the analyst learns whether `alpha` implies `beta` in probability,
//! `Pr[beta | alpha] >= Pr[beta] + gap`, from the two databases' noisy answers only.
//!
//! Why it works: on a set S of rows whose `alpha` count exceeds its expectation by
//! `excess = a_S - |S| Pr[alpha]`, the expected `beta` count is
//! `|S| Pr[beta] + excess * Delta / (1 - Pr[alpha])` with `Delta = Pr[beta|alpha] - Pr[beta]`.
//! Natural excesses are of order `sqrt(|S|)`, so noise `o(sqrt(n))` does not hide them.
//!
//! Two methods:
//! * `heavy-sets` (the seed): draw random halves S, keep those with
//!   `excess > sqrt(|S| a (1 - a))` (one unit of A each), ask B for the `beta` count on
//!   each kept set (one unit of B each) and average `Delta_S`.
//! * `groups` (default): partition the rows at random into `m` public groups and ask each
//!   database once for the vector of per-group counts. Disjoint groups make that vector's
//!   L2 sensitivity 1, so all groups cost one unit instead of one per set; `Delta` is the
//!   slope of B's group counts on A's, times `1 - a`, with the slope corrected for the
//!   known noise variance in A's counts (errors in variables). `m` makes each group's
//!   natural spread about twice the noise.
//!
//! The public randomness (sets, groups) is independent of the data.

use super::{GaussianCalibration, Guarantee, Need, Plan, Sensitivity, SulqDb};
use kinsey_core::{Error, Result};
use kinsey_dp::{Neighbours, NoiseRng};
use serde::Serialize;

const UNIT: Sensitivity = Sensitivity {
    l2: 1.0,
    paper_units: 1.0,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
/// How the test groups rows.
pub enum Method {
    /// A random partition into public groups, one vector query per database (default).
    Groups,
    /// The seed's method: random halves with a noisy excess of `alpha`, one query each.
    HeavySets,
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "groups" => Ok(Self::Groups),
            "heavy-sets" | "heavy_sets" => Ok(Self::HeavySets),
            o => Err(Error::param(
                "method",
                format!("unknown implication method '{o}' (groups or heavy-sets)"),
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
/// The test's parameters.
pub struct ImplicationConfig {
    /// How rows are grouped.
    pub method: Method,
    /// Random halves tried (heavy-sets).
    pub trials: usize,
    /// The gap of "alpha implies beta in probability".
    pub gap: f64,
}

/// Repetitions of the Pr[alpha] and Pr[beta] queries under heavy-sets: their error is
/// shared by every set's estimate, so it must be small next to the sets' excesses.
fn base_repeats(cfg: &ImplicationConfig) -> f64 {
    match cfg.method {
        Method::Groups => 1.0,
        Method::HeavySets => (cfg.trials as f64 / 2.0).max(1.0),
    }
}

/// The plan of one database (the same for A and B) for `n` aligned rows.
pub fn plan(
    cfg: &ImplicationConfig,
    n: usize,
    epsilon: f64,
    delta: f64,
    calibration: GaussianCalibration,
    neighbours: Neighbours,
) -> Result<Plan> {
    if neighbours != Neighbours::Bounded {
        return Err(Error::param(
            "neighbours",
            "the vertically partitioned test aligns rows by public ids, so n is public: use \
             bounded neighbours",
        ));
    }
    let base = Need {
        sens: UNIT,
        coordinates: 1,
        times: base_repeats(cfg),
    };
    let sets = match cfg.method {
        // one vector of at most n / 8 group counts
        Method::Groups => Need {
            sens: UNIT,
            coordinates: (n / 8).max(1),
            times: 1.0,
        },
        Method::HeavySets => Need {
            sens: UNIT,
            coordinates: 1,
            times: cfg.trials as f64,
        },
    };
    Plan::sized(epsilon, delta, calibration, neighbours, &[base, sets])
}

/// Verdict at the 95% level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// alpha implies beta.
    Implies,
    /// alpha does not imply beta.
    DoesNotImply,
    /// The noise is too large to tell.
    Undecided,
}

#[derive(Debug, Clone, Serialize)]
/// The test's release.
pub struct ImplicationResult {
    /// Its parameters.
    pub config: ImplicationConfig,
    /// Rows (public under bounded neighbours).
    pub n: usize,
    /// Noisy Pr[alpha] (from A) and Pr[beta] (from B).
    pub(crate) p_alpha: f64,
    pub(crate) p_beta: f64,
    /// Estimate of Pr[beta | alpha] - Pr[beta] and its standard error.
    pub delta_hat: f64,
    /// Standard error of the estimate.
    pub std_error: f64,
    /// The answer.
    pub verdict: Verdict,
    /// Groups (groups) or heavy sets found (heavy-sets).
    pub sets_used: usize,
    /// The guarantee of database A.
    pub guarantee_a: Guarantee,
    pub(crate) guarantee_b: Guarantee,
}

fn verdict(delta_hat: f64, se: f64, gap: f64) -> Verdict {
    if delta_hat - 1.96 * se >= gap {
        Verdict::Implies
    } else if delta_hat + 1.96 * se < gap {
        Verdict::DoesNotImply
    } else {
        Verdict::Undecided
    }
}

fn count_in(col: &[bool], idx: &[usize]) -> f64 {
    idx.iter().filter(|&&i| col[i]).count() as f64
}

/// Run the test; `a` is queried only through `db_a`, `b` only through `db_b`.
pub fn run(
    a: &[bool],
    b: &[bool],
    cfg: &ImplicationConfig,
    db_a: &mut SulqDb,
    db_b: &mut SulqDb,
    public: &mut NoiseRng,
) -> Result<ImplicationResult> {
    let n = a.len();
    if b.len() != n {
        return Err(Error::param(
            "rows",
            format!(
                "the databases hold {n} and {} rows; rows must align",
                b.len()
            ),
        ));
    }
    if n < 64 {
        return Err(Error::param(
            "rows",
            format!("{n} rows are too few for the test"),
        ));
    }
    if !(cfg.gap > -1.0 && cfg.gap < 1.0) {
        return Err(Error::param(
            "gap",
            format!("must be in (-1, 1), got {}", cfg.gap),
        ));
    }
    let nf = n as f64;
    let all: Vec<usize> = (0..n).collect();
    let t = base_repeats(cfg);
    let pa = (db_a.release_repeated("Pr[alpha]", &[count_in(a, &all)], UNIT, t)?[0] / nf)
        .clamp(1e-6, 1.0 - 1e-6);
    let pb =
        (db_b.release_repeated("Pr[beta]", &[count_in(b, &all)], UNIT, t)?[0] / nf).clamp(0.0, 1.0);
    let mut order = all.clone();
    let (delta_hat, se, used) = match cfg.method {
        Method::Groups => {
            let var_a = db_a.plan.sigma * db_a.plan.sigma;
            let m = ((nf * pa * (1.0 - pa) / (4.0 * var_a)).round() as usize).clamp(8, n / 8);
            public.shuffle(&mut order);
            let groups: Vec<&[usize]> =
                (0..m).map(|g| &order[g * n / m..(g + 1) * n / m]).collect();
            let ea: Vec<f64> = groups.iter().map(|g| count_in(a, g)).collect();
            let eb: Vec<f64> = groups.iter().map(|g| count_in(b, g)).collect();
            let na = db_a.release("alpha counts per group", &ea, UNIT)?;
            let nb = db_b.release("beta counts per group", &eb, UNIT)?;
            let x: Vec<f64> = groups
                .iter()
                .zip(&na)
                .map(|(g, v)| v - g.len() as f64 * pa)
                .collect();
            let y: Vec<f64> = groups
                .iter()
                .zip(&nb)
                .map(|(g, v)| v - g.len() as f64 * pb)
                .collect();
            let mf = m as f64;
            let (mx, my) = (x.iter().sum::<f64>() / mf, y.iter().sum::<f64>() / mf);
            let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
            let sxy: f64 = x.iter().zip(&y).map(|(u, v)| (u - mx) * (v - my)).sum();
            let sxx_true = sxx - (mf - 1.0) * var_a;
            if sxx_true <= 0.0 {
                return Err(Error::Numerical(
                    "the noise of A's group counts hides their natural spread; raise epsilon or \
                     use more rows"
                        .into(),
                ));
            }
            let slope = sxy / sxx_true;
            let resid: f64 = x
                .iter()
                .zip(&y)
                .map(|(u, v)| (v - my - slope * (u - mx)).powi(2))
                .sum::<f64>()
                / (mf - 2.0);
            let se = (resid / sxx_true).sqrt() * (1.0 - pa);
            (slope * (1.0 - pa), se, m)
        }
        Method::HeavySets => {
            let half = n / 2;
            let mut est = Vec::new();
            for t in 0..cfg.trials {
                public.shuffle(&mut order);
                let s = &order[..half];
                let a_s = db_a.release(
                    &format!("alpha count on set {}", t + 1),
                    &[count_in(a, s)],
                    UNIT,
                )?[0];
                let excess = a_s - half as f64 * pa;
                if excess > (half as f64 * pa * (1.0 - pa)).sqrt() {
                    let b_s = db_b.release(
                        &format!("beta count on set {}", t + 1),
                        &[count_in(b, s)],
                        UNIT,
                    )?[0];
                    est.push((b_s - half as f64 * pb) * (1.0 - pa) / excess);
                }
            }
            if est.len() < 2 {
                return Err(Error::Numerical(format!(
                    "only {} heavy sets in {} trials; ask for more trials",
                    est.len(),
                    cfg.trials
                )));
            }
            let k = est.len() as f64;
            let mean = est.iter().sum::<f64>() / k;
            let var = est.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0);
            (mean, (var / k).sqrt(), est.len())
        }
    };
    Ok(ImplicationResult {
        config: *cfg,
        n,
        p_alpha: pa,
        p_beta: pb,
        delta_hat,
        std_error: se,
        verdict: verdict(delta_hat, se, cfg.gap),
        sets_used: used,
        guarantee_a: db_a.guarantee(),
        guarantee_b: db_b.guarantee(),
    })
}

/// Exact Pr[beta | alpha] - Pr[beta] (NOT private: evaluation).
pub fn exact_delta(a: &[bool], b: &[bool]) -> f64 {
    let n = a.len() as f64;
    let na = a.iter().filter(|v| **v).count() as f64;
    let nab = a.iter().zip(b).filter(|(x, y)| **x && **y).count() as f64;
    let nb = b.iter().filter(|v| **v).count() as f64;
    if na == 0.0 { 0.0 } else { nab / na - nb / n }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// alpha ~ Bernoulli(0.3); beta ~ Bernoulli(0.5 if alpha else 0.2): Delta = 0.21.
    fn columns(n: usize, linked: bool) -> (Vec<bool>, Vec<bool>) {
        let mut r = NoiseRng::from_seed_quiet(12);
        let a: Vec<bool> = (0..n).map(|_| r.uniform_open0() < 0.3).collect();
        let b = a
            .iter()
            .map(|&x| {
                r.uniform_open0()
                    < if linked && x {
                        0.5
                    } else if linked {
                        0.2
                    } else {
                        0.29
                    }
            })
            .collect();
        (a, b)
    }

    fn dbs(cfg: &ImplicationConfig, eps: f64) -> (SulqDb, SulqDb) {
        let p = plan(
            cfg,
            200_000,
            eps,
            1e-6,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("plan");
        (
            SulqDb::new(p.clone(), NoiseRng::from_seed_quiet(1)),
            SulqDb::new(p, NoiseRng::from_seed_quiet(2)),
        )
    }

    #[test]
    fn both_methods_detect_an_implication_and_its_absence() {
        let n = 200_000;
        // heavy sets need a larger budget and many more sets for the same power
        for (method, eps, trials) in [(Method::Groups, 1.0, 0), (Method::HeavySets, 4.0, 600)] {
            let cfg = ImplicationConfig {
                method,
                trials,
                gap: 0.05,
            };
            let (a, b) = columns(n, true);
            let truth = exact_delta(&a, &b);
            assert!((truth - 0.21).abs() < 0.01);
            let (mut da, mut db) = dbs(&cfg, eps);
            let r = run(
                &a,
                &b,
                &cfg,
                &mut da,
                &mut db,
                &mut NoiseRng::from_seed_quiet(3),
            )
            .expect("runs");
            assert!(
                (r.delta_hat - truth).abs() < 4.0 * r.std_error + 0.02,
                "{method:?}: {r:?}"
            );
            assert_eq!(r.verdict, Verdict::Implies, "{method:?}: {r:?}");
            assert!(da.used() <= da.plan.units * super::super::UNIT_SLACK);
            assert!(db.used() <= db.plan.units * super::super::UNIT_SLACK);
            let (a, b) = columns(n, false);
            let (mut da, mut db) = dbs(&cfg, eps);
            let r = run(
                &a,
                &b,
                &cfg,
                &mut da,
                &mut db,
                &mut NoiseRng::from_seed_quiet(4),
            )
            .expect("runs");
            assert_ne!(r.verdict, Verdict::Implies, "{method:?}: {r:?}");
        }
        let cfg = ImplicationConfig {
            method: Method::Groups,
            trials: 0,
            gap: 0.1,
        };
        assert!(
            plan(
                &cfg,
                1000,
                1.0,
                1e-6,
                GaussianCalibration::Zcdp,
                Neighbours::Unbounded
            )
            .is_err()
        );
    }
}

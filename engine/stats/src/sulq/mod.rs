//! SuLQ, "sub-linear queries" (seed 003; Dwork & Nissim 2004, Blum, Dwork, McSherry &
//! Nissim 2005): the database answers `sum_i f(row_i) + noise` for query functions chosen
//! by the analyst, and the interlocutor fixes the noise and the number of queries `T` in
//! advance. On top of it: k-means, PCA/SVD, the perceptron, the statistical-query adapter
//! and the vertically partitioned implication test.
//!
//! # The guarantee (which analysis)
//! Two calibrations, recorded in every output:
//! * `zcdp` (default, modern): each answer is the Gaussian mechanism. A query whose exact
//!   answer vector has L2 sensitivity `Delta` (over the declared [`Neighbours`]) and gets
//!   `N(0, sigma^2)` per coordinate is `Delta^2 / (2 sigma^2)`-zCDP (Bun & Steinke 2016,
//!   Prop. 1.6); zCDP composes additively and adaptively; `rho`-zCDP implies
//!   `(rho + 2 sqrt(rho ln(1/delta)), delta)`-DP (their Prop. 1.3). The budget `(eps, delta)`
//!   gives `rho`; `T` query units share it, so `sigma = 1 / sqrt(2 rho / T)`; a query of
//!   sensitivity `Delta` costs `Delta^2` units (a unit is one `[0, 1]`-valued scalar query).
//!   Vector queries with a joint sensitivity are therefore cheaper than the seed's one
//!   query per coordinate (k-means: `2(1 + d)` units per iteration instead of `k(1 + d)`).
//! * `paper`: the seed's bound `R > 32 log(2/delta) log(T/delta) T / eps^2`, noise
//!   `N(0, R)` per scalar query of range 1 (its ((eps, delta), T)-privacy of confidence
//!   changes, a different notion from (eps, delta)-DP); a query costs as many units as
//!   it has scalar coordinates, times the square of their range.
//!
//! The `T`-th unit is the last: a query beyond it is refused with [`Error::Budget`].
//! Outputs are released on a grid chosen from public values only (`Plan::grid`), paid for
//! by adding one grid step per coordinate to the sensitivity (as in
//! [`kinsey_dp::GaussianMechanism`]); the noise is the exact discrete Gaussian of
//! [`kinsey_dp::exact`] in grid steps, whose zCDP is the continuous Gaussian's
//! `Delta_int^2 / (2 sigma_int^2)` (Canonne, Kamath & Steinke 2020, Theorem 14), so the
//! `zcdp` accounting above holds exactly. The `paper` analysis is stated for continuous
//! Gaussian noise; the discrete law on a grid `2^-39 sigma` fine is used for it too.

pub mod bench;
pub mod implication;
pub mod kmeans;
pub mod pca;
pub mod perceptron;
pub mod query;
pub mod release;
pub mod spill;
pub mod stat;

use kinsey_core::{Error, Result, check_delta, check_epsilon};
use kinsey_dp::{Neighbours, NoiseRng};
use serde::Serialize;

/// Which analysis calibrates the noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GaussianCalibration {
    /// zCDP calibration (tighter).
    Zcdp,
    /// The seed's formula.
    Paper,
}

impl std::str::FromStr for GaussianCalibration {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "zcdp" => Ok(Self::Zcdp),
            "paper" => Ok(Self::Paper),
            o => Err(Error::param(
                "calibration",
                format!("unknown SuLQ calibration '{o}' (zcdp or paper)"),
            )),
        }
    }
}

/// The interlocutor's plan: budget, number of query units, noise.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Total epsilon.
    pub epsilon: f64,
    /// Total delta.
    pub delta: f64,
    /// T: query units the budget is divided into.
    pub units: f64,
    /// How the noise is calibrated.
    pub calibration: GaussianCalibration,
    /// The neighbour definition.
    pub neighbours: Neighbours,
    /// Noise standard deviation of one unit query.
    pub sigma: f64,
    /// zCDP parameter of the whole plan (zcdp calibration).
    pub rho: Option<f64>,
}

/// rho such that rho-zCDP gives (eps, delta)-DP through `eps = rho + 2 sqrt(rho ln(1/delta))`.
pub(crate) fn rho_for(epsilon: f64, delta: f64) -> f64 {
    let l = (1.0 / delta).ln();
    ((l + epsilon).sqrt() - l.sqrt()).powi(2)
}

/// The (eps) of rho-zCDP at `delta`.
pub(crate) fn epsilon_of_rho(rho: f64, delta: f64) -> f64 {
    rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt()
}

impl Plan {
    /// A plan of `units` query units under `(epsilon, delta)`.
    pub fn new(
        epsilon: f64,
        delta: f64,
        units: f64,
        calibration: GaussianCalibration,
        neighbours: Neighbours,
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_delta("delta", delta)?;
        if delta == 0.0 {
            return Err(Error::param(
                "delta",
                "SuLQ's Gaussian noise needs delta > 0 (e.g. 1e-6, below 1/n)",
            ));
        }
        if !(units.is_finite() && units >= 1.0) {
            return Err(Error::param(
                "queries",
                format!("the number of query units T must be >= 1, got {units}"),
            ));
        }
        let (sigma, rho) = match calibration {
            GaussianCalibration::Zcdp => {
                let rho = rho_for(epsilon, delta);
                // sigma leaves room for the grid overhead of every query (see `cost`)
                (
                    (units * UNIT_SLACK / (2.0 * rho * RHO_RESERVE)).sqrt(),
                    Some(rho),
                )
            }
            GaussianCalibration::Paper => {
                let r =
                    32.0 * (2.0 / delta).ln() * (units / delta).ln() * units / (epsilon * epsilon);
                (r.sqrt(), None)
            }
        };
        Ok(Self {
            epsilon,
            delta,
            units,
            calibration,
            neighbours,
            sigma,
            rho,
        })
    }

    /// A plan whose `T` is exactly what `needs` cost: one entry per kind of query with
    /// how many times it is asked.
    pub fn sized(
        epsilon: f64,
        delta: f64,
        calibration: GaussianCalibration,
        neighbours: Neighbours,
        needs: &[Need],
    ) -> Result<Self> {
        let units: f64 = needs
            .iter()
            .map(|n| {
                n.times
                    * match calibration {
                        GaussianCalibration::Paper => n.sens.paper_units,
                        GaussianCalibration::Zcdp => n.sens.l2 * n.sens.l2,
                    }
            })
            .sum();
        Self::new(
            epsilon,
            delta,
            f64::max(units, 1.0),
            calibration,
            neighbours,
        )
    }

    /// The (eps, delta) spent after `used` units (zcdp; the paper calibration is all or
    /// nothing and reports its planned budget).
    pub fn privacy_map(&self, used: f64) -> (f64, f64) {
        match self.calibration {
            GaussianCalibration::Zcdp => {
                let rho = used / (2.0 * self.sigma * self.sigma);
                (epsilon_of_rho(rho, self.delta), self.delta)
            }
            GaussianCalibration::Paper => (self.epsilon, self.delta),
        }
    }

    /// Output grid of a query with L2 sensitivity `l2` over `coordinates` coordinates: fine
    /// enough that the rounding adds at most a relative 1e-8 to the sensitivity (so at most
    /// 2.01e-8 to the cost in units, inside [`UNIT_SLACK`]); it depends only on public values.
    fn grid(&self, l2: f64, coordinates: usize) -> f64 {
        let fine = (1e-8 * l2 / (coordinates.max(1) as f64).sqrt())
            .log2()
            .floor();
        // at most 2^40 grid steps per sigma: the exact discrete Gaussian's range
        let coarse = (self.sigma.log2() - 39.0).floor();
        (fine.max(coarse) as i32 as f64).exp2()
    }
}

/// Spending may exceed `T` by this factor: each query's grid rounding adds at most 2.01e-8
/// relative to its cost, and the plan's sigma is calibrated for `T * UNIT_SLACK` units at
/// `RHO_RESERVE` of rho, so the budget still holds exactly.
pub(crate) const UNIT_SLACK: f64 = 1.0 + 1e-6;
const RHO_RESERVE: f64 = 1.0 - 1e-9;

/// The sensitivity of one query's exact answer vector.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sensitivity {
    /// L2 sensitivity under the plan's neighbour definition (zcdp).
    pub l2: f64,
    /// Units under the paper calibration: scalar coordinates times their range squared.
    pub(crate) paper_units: f64,
}

/// A kind of query an algorithm will ask, and how often (for [`Plan::sized`]).
#[derive(Debug, Clone, Copy)]
pub struct Need {
    /// Sensitivity of one coordinate.
    pub sens: Sensitivity,
    /// Coordinates in the query.
    pub coordinates: usize,
    /// How many units it costs.
    pub times: f64,
}

/// One answered query, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct QueryRecord {
    /// What was asked.
    pub label: String,
    /// Coordinates.
    pub coordinates: usize,
    /// Units charged.
    pub units: f64,
    /// Standard deviation of its noise.
    pub noise_std: f64,
}

/// The noisy interface: the only way a SuLQ algorithm's results leave the data.
#[derive(Debug)]
pub struct SulqDb {
    /// The plan.
    pub plan: Plan,
    used: f64,
    rng: NoiseRng,
    /// Every query answered, in order.
    pub ledger: Vec<QueryRecord>,
}

impl SulqDb {
    /// A database under `plan`, drawing noise from `rng`.
    pub fn new(plan: Plan, rng: NoiseRng) -> Self {
        Self {
            plan,
            used: 0.0,
            rng,
            ledger: Vec::new(),
        }
    }

    /// Units used.
    pub fn used(&self) -> f64 {
        self.used
    }

    /// Units left.
    pub fn remaining(&self) -> f64 {
        (self.plan.units - self.used).max(0.0)
    }

    /// Units a query costs, repeated `repeats` times (the seed's variance reduction).
    pub fn cost(&self, sens: Sensitivity, coordinates: usize, repeats: f64) -> f64 {
        let units = match self.plan.calibration {
            GaussianCalibration::Zcdp => {
                let l2 =
                    sens.l2 + (coordinates as f64).sqrt() * self.plan.grid(sens.l2, coordinates);
                l2 * l2
            }
            // the seed's analysis has no output grid; its rounding is below 2^-39 sigma
            GaussianCalibration::Paper => sens.paper_units,
        };
        units * repeats
    }

    /// Answer `exact + N(0, sigma^2 / repeats)` per coordinate, charging `repeats` times the
    /// query's units; refused (nothing released, nothing charged) beyond `T`.
    pub(crate) fn release_repeated(
        &mut self,
        label: &str,
        exact: &[f64],
        sens: Sensitivity,
        repeats: f64,
    ) -> Result<Vec<f64>> {
        if !(sens.l2.is_finite() && sens.l2 > 0.0 && repeats >= 1.0) {
            return Err(Error::param(
                "sensitivity",
                format!("'{label}': need a finite L2 sensitivity > 0 and repeats >= 1"),
            ));
        }
        if let Some(i) = exact.iter().position(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!(
                "'{label}': coordinate {i} of the exact answer is {}",
                exact[i]
            )));
        }
        let units = self.cost(sens, exact.len(), repeats);
        if self.used + units > self.plan.units * UNIT_SLACK {
            return Err(Error::Budget(format!(
                "SuLQ query '{label}' needs {units:.4} query units but only {:.4} of T = {} \
                 are left",
                self.remaining(),
                self.plan.units
            )));
        }
        self.used += units;
        let std = self.plan.sigma / repeats.sqrt();
        let g = self.plan.grid(sens.l2, exact.len());
        let out = kinsey_dp::gaussian::add_noise_on_grid(exact, std, g, &mut self.rng)?;
        self.ledger.push(QueryRecord {
            label: label.to_string(),
            coordinates: exact.len(),
            units,
            noise_std: std,
        });
        Ok(out)
    }

    /// One query, no repetition.
    pub fn release(&mut self, label: &str, exact: &[f64], sens: Sensitivity) -> Result<Vec<f64>> {
        self.release_repeated(label, exact, sens, 1.0)
    }

    /// The guarantee as a report block.
    pub fn guarantee(&self) -> Guarantee {
        let (eps_spent, delta) = self.plan.privacy_map(self.used);
        Guarantee {
            analysis: match self.plan.calibration {
                GaussianCalibration::Zcdp => "Gaussian mechanism under zCDP (Bun & Steinke 2016): \
                    rho-zCDP => (rho + 2 sqrt(rho ln(1/delta)), delta)-DP"
                    .into(),
                GaussianCalibration::Paper => {
                    "seed 003 (Blum, Dwork, McSherry & Nissim 2005): noise \
                    N(0, R), R = 32 ln(2/delta) ln(T/delta) T / eps^2; ((eps, delta), T)-privacy \
                    of confidence, not (eps, delta)-DP"
                        .into()
                }
            },
            plan: self.plan.clone(),
            units_used: self.used,
            epsilon_spent: eps_spent,
            delta,
            queries: self.ledger.len(),
        }
    }
}

/// What a SuLQ output states about its privacy.
#[derive(Debug, Clone, Serialize)]
pub struct Guarantee {
    /// The analysis (`kmeans`, `pca`, ...).
    pub analysis: String,
    /// The plan.
    pub plan: Plan,
    pub(crate) units_used: f64,
    /// Epsilon spent.
    pub epsilon_spent: f64,
    /// Delta of the guarantee.
    pub delta: f64,
    /// Queries answered.
    pub queries: usize,
}

impl Guarantee {
    /// The guarantee as every release states it (one type across kinsey): (epsilon,
    /// delta)-DP of Gaussian noise on every unit query, with sigma per unit query as its
    /// noise std, and rho where the calibration is zCDP.
    pub fn stated(&self) -> kinsey_dp::release::Guarantee {
        let p = &self.plan;
        kinsey_dp::release::Guarantee {
            kind: if p.rho.is_some() {
                kinsey_dp::release::GuaranteeKind::ZcdpConverted
            } else {
                kinsey_dp::release::GuaranteeKind::Approximate
            },
            epsilon: self.epsilon_spent,
            delta: self.delta,
            neighbours: p.neighbours.relation(),
            mechanism: format!(
                "SuLQ {}: Gaussian noise (sigma {:.6} per unit query, {} calibration) on {} \
                 queries of {} units in all",
                self.analysis,
                p.sigma,
                match p.calibration {
                    GaussianCalibration::Zcdp => "zCDP",
                    GaussianCalibration::Paper => "the seed's",
                },
                self.queries,
                self.units_used
            ),
            sensitivity: "1 per row and unit query (L2, values clipped into the declared box)"
                .into(),
            sensitivity_value: Some(1.0),
            rho: p.rho,
            noise_std: Some(p.sigma),
        }
    }
}

/// A SuLQ result, which carries its guarantee.
pub trait Stated {
    /// The result's guarantee.
    fn sulq_guarantee(&self) -> &Guarantee;
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_dp::stattest::{ALPHA, ks_test, normal_cdf};

    fn plan(units: f64) -> Plan {
        Plan::new(
            1.0,
            1e-6,
            units,
            GaussianCalibration::Zcdp,
            Neighbours::Bounded,
        )
        .expect("valid")
    }

    #[test]
    fn zcdp_conversion_round_trips_and_matches_known_values() {
        let rho = rho_for(1.0, 1e-6);
        assert!((epsilon_of_rho(rho, 1e-6) - 1.0).abs() < 1e-12);
        // eps = 1, delta = 1e-6: rho ~= 0.01735 (sqrt(rho) = sqrt(L + 1) - sqrt(L))
        assert!((rho - 0.017_47).abs() < 1e-4, "{rho}");
        let p = plan(100.0);
        assert!((p.sigma - (100.0 / (2.0 * rho)).sqrt()).abs() < 1e-4);
        assert!(p.privacy_map(100.0 * UNIT_SLACK).0 <= 1.0);
        assert!((p.privacy_map(100.0).0 - 1.0).abs() < 1e-5);
        assert!(p.privacy_map(50.0).0 < 0.75);
        // the paper's R for T = 100 is far larger
        let q = Plan::new(
            1.0,
            1e-6,
            100.0,
            GaussianCalibration::Paper,
            Neighbours::Bounded,
        )
        .expect("ok");
        assert!(q.sigma > 10.0 * p.sigma);
        assert!(
            Plan::new(
                1.0,
                0.0,
                10.0,
                GaussianCalibration::Zcdp,
                Neighbours::Bounded
            )
            .is_err()
        );
        assert!(
            Plan::new(
                1.0,
                1e-6,
                0.5,
                GaussianCalibration::Zcdp,
                Neighbours::Bounded
            )
            .is_err()
        );
        assert!(
            Plan::new(
                -1.0,
                1e-6,
                5.0,
                GaussianCalibration::Zcdp,
                Neighbours::Bounded
            )
            .is_err()
        );
    }

    #[test]
    fn the_budget_of_t_units_is_never_exceeded() {
        let mut db = SulqDb::new(plan(3.0), NoiseRng::from_seed_quiet(1));
        let unit = Sensitivity {
            l2: 1.0,
            paper_units: 1.0,
        };
        db.release("a", &[1.0], unit).expect("1 of 3");
        db.release("b", &[1.0], unit).expect("2 of 3");
        let err = db
            .release(
                "c",
                &[1.0, 2.0],
                Sensitivity {
                    l2: 2f64.sqrt(),
                    ..unit
                },
            )
            .expect_err("needs 2 units, 1 left");
        assert!(
            err.to_string().contains("'c'") && err.to_string().contains("T = 3"),
            "{err}"
        );
        assert_eq!(db.ledger.len(), 2, "a refused query is not recorded");
        db.release("d", &[5.0], unit).expect("the last unit");
        assert!(db.release("e", &[5.0], unit).is_err());
        assert!(db.guarantee().epsilon_spent <= 1.0 + 1e-9);
        assert!(db.release("nan", &[f64::NAN], unit).is_err());
    }

    /// Noise of a unit query is N(0, sigma^2); repetition divides the variance; a sigma 30%
    /// smaller is rejected by the same test (power check).
    #[test]
    fn noise_is_calibrated_and_a_30_percent_smaller_sigma_is_rejected() {
        let p = plan(4.0);
        let sigma = p.sigma;
        let mut db = SulqDb::new(
            Plan::new(
                1.0,
                1e-6,
                1e9,
                GaussianCalibration::Zcdp,
                Neighbours::Bounded,
            )
            .expect("ok"),
            NoiseRng::from_seed_quiet(2),
        );
        db.plan.sigma = sigma;
        let unit = Sensitivity {
            l2: 1.0,
            paper_units: 1.0,
        };
        let mut s: Vec<f64> = (0..4000)
            .map(|_| db.release("q", &[10.0], unit).expect("budget")[0] - 10.0)
            .collect();
        let (_, p_ok) = ks_test(&mut s.clone(), |x| normal_cdf(x, sigma));
        assert!(p_ok > ALPHA, "p = {p_ok}");
        let (_, p_small) = ks_test(&mut s, |x| normal_cdf(x, 0.7 * sigma));
        assert!(p_small < ALPHA);
        let mut r: Vec<f64> = (0..4000)
            .map(|_| db.release_repeated("r", &[0.0], unit, 4.0).expect("budget")[0])
            .collect();
        let (_, p_rep) = ks_test(&mut r, |x| normal_cdf(x, sigma / 2.0));
        assert!(p_rep > ALPHA, "p = {p_rep}");
    }
}

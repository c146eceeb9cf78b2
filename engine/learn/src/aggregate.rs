//! The differentially private aggregate classifier of seeds 000/001:
//!
//!   `w_s = (1/K) sum_j w_j + eta`, with `eta` calibrated to the smallest party.
//!
//! Each party calibrates and samples its *own* noise from its own size `n_j` (as in the
//! protocol, Stage 2 step 3); the aggregator keeps the noise of the smallest party (ties:
//! lowest party index). The arithmetic is the protocol's: each model is encoded in fixed
//! point `W_j = round(w_j 2^f)` (f = [`FIXED_POINT_BITS`]), each party's noise at the finer
//! resolution `2^-f / K`, `N = round(eta K 2^f)` ([`encode_noise`]), the integers
//! `S = sum_j W_j + N` are added exactly, and the result is `S / (K 2^f)`. So a secure
//! [`Aggregator`] that computes the same integer sum from shares gives a bit-identical
//! classifier.
//!
//! Why the noise is encoded at `2^-f / K`: encoding it at `2^-f` and multiplying by K (as
//! before) made the noise term a multiple of K, so `S mod K`, readable exactly from the
//! published f64, was a noiseless function of the local models (found by an audit: the
//! same residues in 123 of 123 coordinates across seeds). Now `N` is the rounding of a
//! continuous draw (L2) or an exact integer draw (Laplace) in units of `1/(K 2^f)`, so no
//! residue of `S` is noise-free. Rounding the continuous draw to integers keeps its privacy
//! ratio for integer shifts (each cell maps onto a cell), and the rounding of each `W_j`
//! moves `S / (K 2^f)` by at most `sqrt(d) 2^-f / K` in L2, which the calibration adds to
//! the sensitivity.
//!
//! SensitivityDerivation (shared/docs/calibration.md, derived here, checked in tests):
//! * `Lambda = 2 lambda` (eq. 2 of seed 001; `Objective::strong_convexity`).
//! * Replacing one record of party j moves its exact minimiser by at most
//!   `2/(n_j Lambda)` in L2 (Chaudhuri & Monteleoni, Cor. 2); an approximate minimiser with
//!   `||grad J|| <= g` adds `2g/Lambda` (`Objective::inexact_slack`).
//! * `tight` (default): the average divides that by K, so
//!   `Delta2 = (2/(n_(1) Lambda) + 2g/Lambda) / K`.
//! * `paper`: the published scale `2/(n_(1) lambda)` (ignores the 1/K and uses lambda for
//!   Lambda: 2K times the tight scale), plus the same slack. Offered to reproduce Figure 2.
//! * `noise = "l2"` (default): L2-Laplace with scale `Delta2 / eps`: eps-DP.
//! * `noise = "laplace"`: per-coordinate Laplace calibrated to the L1 sensitivity
//!   `sqrt(d) Delta2` (never to the L2 sensitivity, which would not be eps-DP).
//! * Bounded DP: party sizes are fixed and public to the analysis (replace-one neighbours).

use crate::formula::Expr;
use crate::logreg::{Objective, norm};
use kinsey_core::{Error, Result, check_epsilon};
use kinsey_dp::exact::DiscreteLaplace;
use kinsey_dp::l2laplace::GridL2Laplace;
use kinsey_dp::{L2LaplaceMechanism, NoiseRng};
use serde::{Deserialize, Serialize};

/// Fixed-point precision of the protocol's encoding.
pub const FIXED_POINT_BITS: u32 = 32;

/// Which sensitivity to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensitivityDerivation {
    #[default]
    /// The derivation of seed 001 with the constants of `Objective` (the default).
    Tight,
    /// The paper's published formula.
    Paper,
}

/// Which noise distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseKind {
    #[default]
    /// Noise with density proportional to `exp(-eps ||eta|| / sensitivity)` (the paper's).
    L2,
    /// Per-coordinate exact discrete Laplace, calibrated to the L1 sensitivity.
    Laplace,
}

impl SensitivityDerivation {
    /// The name as written in TOML.
    pub fn name(self) -> &'static str {
        match self {
            SensitivityDerivation::Tight => "tight",
            SensitivityDerivation::Paper => "paper",
        }
    }
}

impl NoiseKind {
    /// The name as written in TOML.
    pub fn name(self) -> &'static str {
        match self {
            NoiseKind::L2 => "l2",
            NoiseKind::Laplace => "laplace",
        }
    }
}

/// What the user asks for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrivacySpec {
    /// Privacy parameter of the release.
    pub epsilon: f64,
    /// Which sensitivity derivation.
    pub calibration: SensitivityDerivation,
    /// Which noise law.
    pub noise: NoiseKind,
}

/// Bits of the largest noise value the protocol carries (units of `2^-f / K`); every draw
/// is clamped below `2^NOISE_BITS` and the probability of a clamp is part of the stated
/// delta.
pub const NOISE_BITS: u32 = 80;

/// A party's noise calibration, as recorded in reports.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NoiseCalibration {
    /// Which sensitivity derivation.
    pub calibration: SensitivityDerivation,
    /// Which noise law.
    pub noise: NoiseKind,
    /// Privacy parameter.
    pub epsilon: f64,
    /// The party's rows (the calibration's own n).
    pub n: usize,
    /// Number of parties K.
    pub parties: usize,
    /// Dimension d.
    pub dim: usize,
    /// L2 sensitivity of the published vector (including the inexactness slack).
    pub l2_sensitivity: f64,
    /// The slack part of it (from the solver tolerance).
    pub slack: f64,
    /// L2-Laplace: the norm scale s (E||eta|| = d s). Laplace: the per-coordinate scale b.
    pub scale: f64,
    /// The noise's expected L2 norm.
    pub expected_noise_norm: f64,
    /// The draw, in units of `1 / (K 2^f)`.
    #[serde(skip)]
    pub law: NoiseLaw,
}

/// The integer law a party's noise is drawn from, in units of `1 / (K 2^f)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseLaw {
    /// Per coordinate, exact.
    Laplace(DiscreteLaplace),
    /// The L2-Laplace vector on the grid (d >= 2), within a stated total variation.
    L2(GridL2Laplace),
}

/// The L2 sensitivity of the published vector as the formula a release states (with the
/// secret `n_(1)`), which [`calibrate`] evaluates at the party's own size: one source.
pub fn sensitivity(
    obj: &Objective,
    calibration: SensitivityDerivation,
    k: usize,
    d: usize,
    g: f64,
) -> Expr {
    let kk = Expr::Named("K", k as f64);
    // The rounding of each party's model to 2^-f moves the average by sqrt(d) 2^-f / K.
    let rounding =
        Expr::Named("d", d as f64).sqrt() * Expr::Pow2(-(FIXED_POINT_BITS as i32)) / kk.clone();
    match calibration {
        SensitivityDerivation::Tight => {
            (obj.minimiser_sensitivity_expr() + obj.inexact_slack_expr(g)) / kk + rounding
        }
        SensitivityDerivation::Paper => {
            Expr::Lit(2.0) / (Expr::Secret("n_(1)") * Expr::Named("lambda", obj.lambda))
                + obj.inexact_slack_expr(g)
                + rounding
        }
    }
}

/// Whether the noise is the exact discrete Laplace: asked for (`noise = "laplace"`), or at
/// d = 1, where the L2-Laplace is the Laplace law and the exact sampler draws it (the f64
/// one reached a lattice far in its tail).
pub fn exact_law(noise: NoiseKind, d: usize) -> bool {
    noise == NoiseKind::Laplace || d == 1
}

/// One unit of the noise's fixed point, `K 2^f` per published unit.
fn unit(k: usize) -> f64 {
    k as f64 * (FIXED_POINT_BITS as f64).exp2()
}

/// Relative margin that covers the float rounding of a sensitivity's evaluation (a few
/// operations, each within `2^-53`) and of the products below, so that a scale or an integer
/// sensitivity is never below the exact one.
const ROUNDING_MARGIN: f64 = 1.0 + 1.0 / (1u64 << 46) as f64;

/// The L2 norm scale in units, rounded up: never below `Delta2 K 2^f / eps`.
fn grid_scale(l2: f64, epsilon: f64, k: usize) -> f64 {
    l2 / epsilon * unit(k) * ROUNDING_MARGIN
}

/// The exact Laplace law for an L2 sensitivity: integer L1 sensitivity `sqrt(d) l2 K 2^f`,
/// rounded up.
fn laplace_law(l2: f64, epsilon: f64, k: usize, d: usize) -> Result<DiscreteLaplace> {
    let d1 = ((d as f64).sqrt() * l2 * unit(k) * ROUNDING_MARGIN).ceil();
    if !d1.is_finite() || d1 >= 2f64.powi(50) {
        return Err(Error::param(
            "privacy.noise",
            "the Laplace noise's sensitivity does not fit the fixed point (raise lambda)",
        ));
    }
    DiscreteLaplace::for_sensitivity_wide(d1 as u64, epsilon)
}

/// The delta a job's release states, public whatever the parties' sizes: the samplers' stated
/// gap (L2-Laplace) and the chance that a draw reaches `2^NOISE_BITS` units and is clamped,
/// times `1 + e^eps`. Also the check against the protocol's capacity: every refusal here
/// depends on public parameters only (the scale grows as a party shrinks, so it is checked
/// at one row, never at a party's own size).
pub fn public_delta(
    obj: &Objective,
    spec: &PrivacySpec,
    k: usize,
    d: usize,
    g: f64,
) -> Result<f64> {
    let l2 = sensitivity(obj, spec.calibration, k, d, g).eval(1.0);
    let eps = spec.epsilon;
    let cap = (NOISE_BITS as f64).exp2();
    let too_large = || {
        Error::param(
            "privacy.epsilon",
            format!(
                "at epsilon = {eps}, lambda = {}, K = {k}, d = {d}, a party of few rows would \
                 draw noise beyond the protocol's 2^{NOISE_BITS}-unit fixed point: raise \
                 epsilon or lambda (checked at one row: a party's own size may not decide a \
                 refusal)",
                obj.lambda
            ),
        )
    };
    let gap = if exact_law(spec.noise, d) {
        let t = laplace_law(l2, eps, k, d)?.t();
        // P(|Z| >= 2^NOISE_BITS) <= 2 q^(2^NOISE_BITS) / (1 + q) <= exp(-2^NOISE_BITS / t).
        if t > cap / 128.0 {
            return Err(too_large());
        }
        d as f64 * (-cap / t).exp()
    } else {
        let s = grid_scale(l2, eps, k);
        // Outside the gap's bad events R <= R_max, so |N_i| <= S R_max + 1 < 2^NOISE_BITS.
        if s * (kinsey_dp::l2laplace::norm_bound(d) + 1.0) + 1.0 >= cap {
            return Err(too_large());
        }
        kinsey_dp::l2laplace::gap(d, s)
    };
    Ok(gap * (1.0 + eps.exp()))
}

/// Calibrate the noise for a party with `n` rows among `k`, in dimension `d`, given the
/// public bound `g` on the gradient norm every party reached.
pub fn calibrate(
    obj: &Objective,
    spec: &PrivacySpec,
    n: usize,
    k: usize,
    d: usize,
    g: f64,
) -> Result<NoiseCalibration> {
    let PrivacySpec {
        epsilon,
        calibration,
        noise,
    } = *spec;
    check_epsilon("epsilon", epsilon)?;
    if n == 0 || k == 0 || d == 0 {
        return Err(Error::param(
            "parties",
            "sizes, party count and dimension must be >= 1",
        ));
    }
    if !(g.is_finite() && g >= 0.0) {
        return Err(Error::param(
            "gradient bound",
            format!("must be finite and >= 0, got {g}"),
        ));
    }
    // Public first: a refusal may not depend on n.
    public_delta(obj, spec, k, d, g)?;
    let slack = obj.inexact_slack(g);
    let l2 = sensitivity(obj, calibration, k, d, g).eval(n as f64);
    let (scale, expected, law) = if exact_law(noise, d) {
        let law = laplace_law(l2, epsilon, k, d)?;
        let b = law.t() / unit(k);
        // E||eta||_2 <= sqrt(E||eta||^2) = sqrt(2 d) b
        (b, (2.0 * d as f64).sqrt() * b, NoiseLaw::Laplace(law))
    } else {
        let m = L2LaplaceMechanism::new(l2, epsilon, d)?;
        let grid = GridL2Laplace::new(d, grid_scale(l2, epsilon, k))?;
        (m.scale(), m.expected_norm(), NoiseLaw::L2(grid))
    };
    Ok(NoiseCalibration {
        calibration,
        noise,
        epsilon,
        n,
        parties: k,
        dim: d,
        l2_sensitivity: l2,
        slack: slack
            / if calibration == SensitivityDerivation::Tight {
                k as f64
            } else {
                1.0
            },
        scale,
        expected_noise_norm: expected,
        law,
    })
}

impl NoiseCalibration {
    /// Privacy map: epsilon spent for an L2 input distance `d_in`.
    pub fn privacy_map(&self, d_in: f64) -> f64 {
        match self.law {
            NoiseLaw::L2(_) => d_in / self.scale,
            NoiseLaw::Laplace(_) => (self.dim as f64).sqrt() * d_in / self.scale,
        }
    }

    /// Draw this party's noise vector, in units of `1 / (K 2^f)` (the protocol's integers):
    /// exact Laplace per coordinate, or the L2-Laplace vector on the grid; clamped below
    /// `2^NOISE_BITS` (a clamp's probability is in [`public_delta`]).
    pub fn sample(&self, rng: &mut NoiseRng) -> Vec<i128> {
        let cap = (1i128 << NOISE_BITS) - 1;
        let v = match self.law {
            NoiseLaw::Laplace(law) => (0..self.dim).map(|_| law.sample_wide(rng)).collect(),
            NoiseLaw::L2(grid) => grid.sample(rng),
        };
        v.into_iter().map(|x| x.clamp(-cap, cap)).collect()
    }

    /// A draw in published units (f64, for experiments; the protocol takes the integers).
    pub fn sample_published(&self, rng: &mut NoiseRng) -> Vec<f64> {
        let u = unit(self.parties);
        self.sample(rng).iter().map(|&x| x as f64 / u).collect()
    }
}

/// What one party contributes (its private inputs to the protocol).
#[derive(Debug, Clone)]
pub struct PartyInput {
    /// The party's rows.
    pub n: usize,
    /// The party's local model.
    pub w: Vec<f64>,
    /// The party's own noise draw, calibrated to its own n, in units of `1 / (K 2^f)`.
    pub noise: Vec<i128>,
}

/// The published result.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    /// The published classifier.
    pub w: Vec<f64>,
    /// Which aggregator produced it ("plaintext reference", "secure 3-stage protocol (...)").
    pub aggregator: String,
    /// The crypto backend that computed it (`None` for the plaintext reference).
    pub backend: Option<kinsey_backend::BackendInfo>,
    /// The aggregator's report of its own run (per-stage time, operations, traffic). It
    /// depends on the parties' data sizes, so it belongs to the diagnostics only.
    #[serde(skip)]
    pub report: Option<serde_json::Value>,
}

/// Computes `(1/K) sum_j w_j + eta_smallest`. Implemented by [`PlaintextAggregator`] (the
/// reference, all inputs in one place) and by `kinsey_protocol::SecureAggregator` (the
/// 3-stage protocol), which must match the reference bit for bit.
pub trait Aggregator: std::fmt::Debug + Send + Sync {
    /// A human-readable name for reports.
    fn name(&self) -> String;
    /// The noisy average of the parties' models.
    fn aggregate(&self, parties: &[PartyInput]) -> Result<Aggregate>;
    /// [`aggregate`](Self::aggregate), reporting its progress (the secure protocol: each
    /// stage by name, with a bar over its operations).
    fn aggregate_with_progress(
        &self,
        parties: &[PartyInput],
        progress: &dyn kinsey_core::Progress,
    ) -> Result<Aggregate> {
        let _ = progress;
        self.aggregate(parties)
    }
    /// Whether this is the plaintext reference itself (then nothing is cross-checked).
    fn is_reference(&self) -> bool {
        false
    }
}

/// The fixed-point format of every value that enters the aggregate: `2^-32` steps,
/// magnitudes below `2^100` before scaling down (the backend interface's codec).
pub(crate) const FIXED_POINT: kinsey_backend::FixedPoint = kinsey_backend::FixedPoint {
    frac_bits: FIXED_POINT_BITS,
    capacity_bits: 100,
};

/// Fixed-point encoding `round(x 2^f)` with overflow detection.
pub fn encode_fixed(x: f64) -> Result<i128> {
    FIXED_POINT.encode(x).map_err(|_| {
        Error::Numerical(format!(
            "a model coordinate is not finite or overflows the fixed point (|x| < 2^{})",
            FIXED_POINT.capacity_bits - FIXED_POINT_BITS
        ))
    })
}

/// The noise encoding: `round(eta K 2^f)`, units of `1 / (K 2^f)`, with overflow detection.
pub fn encode_noise(x: f64, k: usize) -> Result<i128> {
    FIXED_POINT.encode(x * k as f64).map_err(|_| {
        Error::Numerical(
            "a noise value is not finite or overflows the fixed point at 1/K resolution".into(),
        )
    })
}

/// The integer the protocol computes: `sum_j enc(w_j) + enc_K(eta_smallest)`, per coordinate.
pub fn fixed_point_sum(parties: &[PartyInput]) -> Result<Vec<i128>> {
    let first = parties
        .first()
        .ok_or_else(|| Error::param("parties", "no parties"))?;
    let d = first.w.len();
    if let Some(j) = parties
        .iter()
        .position(|p| p.w.len() != d || p.noise.len() != d)
    {
        return Err(Error::param(
            "parties",
            format!("party {} has a different dimension", j + 1),
        ));
    }
    let smallest = smallest_party(parties)?;
    (0..d)
        .map(|i| {
            let mut s = parties[smallest].noise[i];
            for p in parties {
                s += encode_fixed(p.w[i])?;
            }
            Ok(s)
        })
        .collect()
}

/// Index of the smallest party (ties: lowest index).
pub(crate) fn smallest_party(parties: &[PartyInput]) -> Result<usize> {
    parties
        .iter()
        .enumerate()
        .min_by_key(|(j, p)| (p.n, *j))
        .map(|(j, _)| j)
        .ok_or_else(|| Error::param("parties", "no parties"))
}

/// Decode `S / (K 2^f)`.
pub fn decode_average(sum: &[i128], k: usize) -> Vec<f64> {
    let denom = k as f64 * (FIXED_POINT_BITS as f64).exp2();
    sum.iter().map(|&s| s as f64 / denom).collect()
}

/// The reference aggregator: plaintext, in the protocol's fixed-point arithmetic.
#[derive(Debug, Default, Clone, Copy)]
pub struct PlaintextAggregator;

impl Aggregator for PlaintextAggregator {
    fn name(&self) -> String {
        "plaintext (reference; no secrecy between parties)".into()
    }

    fn aggregate(&self, parties: &[PartyInput]) -> Result<Aggregate> {
        let sum = fixed_point_sum(parties)?;
        Ok(Aggregate {
            w: decode_average(&sum, parties.len()),
            aggregator: self.name(),
            backend: None,
            report: None,
        })
    }

    fn is_reference(&self) -> bool {
        true
    }
}

/// Unperturbed average `(1/K) sum_j w_j`.
pub fn average(ws: &[&[f64]]) -> Vec<f64> {
    let d = ws.first().map_or(0, |w| w.len());
    (0..d)
        .map(|i| ws.iter().map(|w| w[i]).sum::<f64>() / ws.len() as f64)
        .collect()
}

/// Theorem 4.2 (seed 001): `||w_hat - w*|| <= (K - 1) / (n_(1) lambda)`.
pub fn theorem_4_2_bound(k: usize, n_min: usize, lambda: f64) -> f64 {
    (k as f64 - 1.0) / (n_min as f64 * lambda)
}

/// L2 distance.
pub fn distance(a: &[f64], b: &[f64]) -> f64 {
    norm(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_dp::stattest::{ALPHA, gamma_cdf, ks_test};

    fn obj() -> Objective {
        Objective::new(1.0).expect("lambda")
    }

    /// SensitivityDerivation for K = 5 parties at lambda = 1.
    fn cal(
        calibration: SensitivityDerivation,
        noise: NoiseKind,
        epsilon: f64,
        n: usize,
        d: usize,
        g: f64,
    ) -> Result<NoiseCalibration> {
        let spec = PrivacySpec {
            epsilon,
            calibration,
            noise,
        };
        calibrate(&obj(), &spec, n, 5, d, g)
    }

    #[test]
    fn tight_and_paper_scales_follow_the_derivation() {
        let t = cal(
            SensitivityDerivation::Tight,
            NoiseKind::L2,
            0.1,
            1000,
            10,
            0.0,
        )
        .expect("ok");
        // 2 / (K n Lambda) = 2 / (5 * 1000 * 2), plus the fixed-point rounding
        // sqrt(d) 2^-32 / K of the local models.
        let rounding = 10f64.sqrt() * 2f64.powi(-32) / 5.0;
        assert!((t.l2_sensitivity - (2e-4 + rounding)).abs() < 1e-18);
        assert!((t.scale - (2e-4 + rounding) / 0.1).abs() < 1e-15);
        let p = cal(
            SensitivityDerivation::Paper,
            NoiseKind::L2,
            0.1,
            1000,
            10,
            0.0,
        )
        .expect("ok");
        assert!((p.l2_sensitivity - (2e-3 + rounding)).abs() < 1e-15);
        assert!(
            (p.scale / t.scale - 10.0).abs() < 1e-5,
            "paper = 2K x tight"
        );
        let l = cal(
            SensitivityDerivation::Tight,
            NoiseKind::Laplace,
            0.1,
            1000,
            16,
            0.0,
        )
        .expect("ok");
        assert!(
            (l.scale / (4.0 * 2e-4 / 0.1) - 1.0).abs() < 3e-4 && l.scale >= 4.0 * 2e-4 / 0.1,
            "L1 = sqrt(d) * L2, rounded up to the exact sampler's parameter"
        );
        assert!(l.privacy_map(l.l2_sensitivity) <= 0.1 + 1e-12);
        assert!((t.privacy_map(t.l2_sensitivity) - 0.1).abs() < 1e-12);
        let s = cal(
            SensitivityDerivation::Tight,
            NoiseKind::L2,
            0.1,
            1000,
            10,
            1e-6,
        )
        .expect("ok");
        assert!(
            s.l2_sensitivity > t.l2_sensitivity,
            "gradient slack is folded in"
        );
        assert!(
            cal(
                SensitivityDerivation::Tight,
                NoiseKind::L2,
                0.0,
                1000,
                10,
                0.0
            )
            .is_err()
        );
        assert!(
            cal(
                SensitivityDerivation::Tight,
                NoiseKind::L2,
                f64::NAN,
                1000,
                10,
                0.0
            )
            .is_err()
        );
    }

    /// One source: the formula a release states evaluates to the sensitivity the noise was
    /// calibrated to (the audit found the report adding a `(1 + 1/K)` the calibration did not).
    #[test]
    fn the_stated_sensitivity_is_the_calibrated_one() {
        for calibration in [SensitivityDerivation::Tight, SensitivityDerivation::Paper] {
            let e = sensitivity(&obj(), calibration, 5, 10, 1e-6);
            let c = cal(calibration, NoiseKind::L2, 0.1, 1000, 10, 1e-6).expect("ok");
            assert_eq!(e.eval(1000.0), c.l2_sensitivity);
            let text = e.to_string();
            assert!(text.ends_with(" + sqrt(d) 2^-32 / K"), "{text}");
            assert!(text.contains("n_(1)") && !text.contains("1/K"), "{text}");
        }
    }

    /// Item 4 of the second audit: at d = 1 the f64 L2-Laplace (`s (-ln U) sign`, 53-bit U)
    /// reached a lattice in its tail, while the report said pure, delta 0. At d = 1 the noise
    /// is now the exact discrete Laplace, calibrated to the same (L1 = L2) sensitivity.
    #[test]
    fn d1_noise_is_the_exact_discrete_laplace() {
        let c = cal(
            SensitivityDerivation::Tight,
            NoiseKind::L2,
            1.0,
            1000,
            1,
            1e-10,
        )
        .expect("ok");
        let unit = 5.0 * 2f64.powi(32);
        // Calibrated to the L2 (= L1) sensitivity, rounded up to the sampler's grid.
        let want = DiscreteLaplace::for_sensitivity_wide(
            (c.l2_sensitivity * unit * ROUNDING_MARGIN).ceil() as u64,
            1.0,
        )
        .expect("law");
        assert_eq!(
            c.law,
            NoiseLaw::Laplace(want),
            "an exact integer law at d = 1"
        );
        assert!(c.privacy_map(c.l2_sensitivity) <= 1.0 + 1e-12);
        let two = cal(
            SensitivityDerivation::Tight,
            NoiseKind::L2,
            1.0,
            1000,
            2,
            1e-10,
        )
        .expect("ok");
        assert!(matches!(two.law, NoiseLaw::L2(_)));
    }

    /// The noise actually drawn for the aggregate has norm Gamma(d, s) with the calibrated
    /// s, and the same test rejects a draw whose scale is 30% too small.
    #[test]
    fn aggregate_noise_has_the_calibrated_scale() {
        let c = cal(
            SensitivityDerivation::Tight,
            NoiseKind::L2,
            0.2,
            500,
            20,
            1e-10,
        )
        .expect("ok");
        let unit = 5.0 * 2f64.powi(32);
        let mut rng = NoiseRng::from_seed_quiet(77);
        let draw = |c: &NoiseCalibration, rng: &mut NoiseRng| -> Vec<f64> {
            (0..6000)
                .map(|_| {
                    let v: Vec<f64> = c.sample(rng).iter().map(|&x| x as f64 / unit).collect();
                    norm(&v)
                })
                .collect()
        };
        let mut v = draw(&c, &mut rng);
        let (_, p) = ks_test(&mut v, |x| gamma_cdf(x, 20.0, c.scale));
        assert!(p > ALPHA, "p = {p}");
        let small = NoiseCalibration {
            law: NoiseLaw::L2(GridL2Laplace::new(20, c.scale * unit * 0.7).expect("grid")),
            ..c.clone()
        };
        let mut v = draw(&small, &mut rng);
        let (_, p) = ks_test(&mut v, |x| gamma_cdf(x, 20.0, c.scale));
        assert!(p < ALPHA, "power: p = {p}");
        // Laplace noise: each coordinate is Laplace(b).
        let l = cal(
            SensitivityDerivation::Tight,
            NoiseKind::Laplace,
            0.2,
            500,
            4,
            0.0,
        )
        .expect("ok");
        let mut coords: Vec<f64> = (0..20_000)
            .flat_map(|_| l.sample(&mut rng))
            .map(|x| x as f64 / unit)
            .collect();
        let (_, p) = ks_test(&mut coords, |x| {
            kinsey_dp::stattest::laplace_cdf(x, l.scale)
        });
        assert!(p > ALPHA, "p = {p}");
    }

    #[test]
    fn aggregate_uses_the_smallest_partys_noise_in_fixed_point() {
        // Noise in units of 2^-32 / K, K = 3.
        let u = |x: f64| encode_noise(x, 3).expect("units");
        let parties = vec![
            PartyInput {
                n: 300,
                w: vec![1.0, 2.0],
                noise: vec![u(10.0), u(10.0)],
            },
            PartyInput {
                n: 100,
                w: vec![3.0, 4.0],
                noise: vec![u(0.5), u(-0.25)],
            },
            PartyInput {
                n: 100,
                w: vec![5.0, 6.0],
                noise: vec![u(99.0), u(99.0)],
            },
        ];
        assert_eq!(smallest_party(&parties).expect("some"), 1);
        let a = PlaintextAggregator.aggregate(&parties).expect("ok");
        assert_eq!(a.w, vec![3.0 + 0.5, 4.0 - 0.25]);
        let bad = vec![PartyInput {
            n: 1,
            w: vec![1.0],
            noise: vec![1, 2],
        }];
        assert!(PlaintextAggregator.aggregate(&bad).is_err());
        assert!(PlaintextAggregator.aggregate(&[]).is_err());
        assert!(encode_fixed(f64::INFINITY).is_err());
    }

    /// Item 1 of the privacy audit: with the noise encoded at 2^-32 and multiplied by K,
    /// `S mod K` (read exactly from the published f64) was the same for every noise draw.
    /// Now it varies with the noise, for both noise kinds.
    #[test]
    fn published_value_has_no_noiseless_residue() {
        for noise in [NoiseKind::L2, NoiseKind::Laplace] {
            let c = cal(SensitivityDerivation::Tight, noise, 1.0, 5000, 40, 1e-10).expect("ok");
            let mut rng = NoiseRng::from_seed_quiet(9);
            let ws: Vec<Vec<f64>> = (0..5)
                .map(|_| (0..40).map(|_| rng.std_normal()).collect())
                .collect();
            let residues = |rng: &mut NoiseRng| -> Vec<i128> {
                let parties: Vec<PartyInput> = ws
                    .iter()
                    .enumerate()
                    .map(|(j, w)| PartyInput {
                        n: 5000 + j,
                        w: w.clone(),
                        noise: c.sample(rng),
                    })
                    .collect();
                let out = PlaintextAggregator.aggregate(&parties).expect("ok");
                out.w
                    .iter()
                    .map(|x| ((x * 5.0 * 2f64.powi(32)).round() as i128).rem_euclid(5))
                    .collect()
            };
            let a = residues(&mut rng);
            let b = residues(&mut rng);
            let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
            // Independent residues agree in about 1/5 of 40 coordinates; noiseless ones in 40.
            assert!(
                same < 20,
                "{noise:?}: {same} of 40 residues unchanged by the noise"
            );
        }
    }
}

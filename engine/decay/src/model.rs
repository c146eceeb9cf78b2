//! What every decayed-sum mechanism is: the [`DecayedSum`] trait, its calibration
//! report, the parameters users give, and helpers the mechanisms share.

use kinsey_core::{Error, Result};
use kinsey_dp::release::{Guarantee, GuaranteeKind, NeighbourRelation};
use serde::{Deserialize, Serialize};

pub(super) fn check_bound(bound: f64) -> Result<()> {
    if bound.is_finite() && bound > 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            "bound",
            format!("per-step contribution bound must be finite and > 0, got {bound}"),
        ))
    }
}

/// A decay per step must lie in (0, 1).
pub(super) fn check_alpha(alpha: f64) -> Result<()> {
    if alpha > 0.0 && alpha < 1.0 {
        Ok(())
    } else {
        Err(Error::param(
            "alpha",
            format!("the decay must be in (0, 1), got {alpha}"),
        ))
    }
}

/// Exact decayed sums `sum alpha^(j - i) x_i` (running sums at `alpha = 1`; evaluation
/// only, never part of a release).
pub(super) fn decayed_truth(xs: &[f64], alpha: f64) -> Vec<f64> {
    let mut s = 0.0;
    xs.iter()
        .map(|&x| {
            s = alpha * s + x;
            s
        })
        .collect()
}

/// The `mechanism` parameter for a name users give: the tree, the default, is left out,
/// so naming it keeps the default's seeded label and bytes.
pub fn mechanism_param(name: Option<&str>) -> Option<String> {
    name.filter(|m| *m != "tree").map(str::to_string)
}

/// What a mechanism reports about its calibration.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationReport {
    /// The model and its parameters, as text.
    pub model: String,
    /// Privacy parameter of the whole output sequence.
    pub epsilon: f64,
    /// Per-step bound `B`.
    pub bound: f64,
    /// Levels of the tree (instances, for polynomial).
    pub levels: u32,
    /// L1 sensitivity of the counters.
    pub sensitivity: f64,
    /// Per-counter noise scale (after grid rounding) and standard deviation.
    pub(crate) counter_scale: f64,
    /// Standard deviation of one counter's noise.
    pub counter_std: f64,
    /// The zCDP parameter of a Gaussian mechanism (then `epsilon` is the one it implies at
    /// the stated delta).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
}

/// Exact window sums by a running difference (evaluation and baselines only).
pub(super) fn window_truth(xs: &[f64], w: u64) -> Vec<f64> {
    let mut s = 0.0;
    (0..xs.len())
        .map(|j| {
            s += xs[j];
            if j as u64 >= w {
                s -= xs[j - w as usize];
            }
            s
        })
        .collect()
}

/// A private decayed sum under continual observation: every mechanism and baseline of seed
/// 004 implements it, in its own file, and the CLI and the benchmarks drive them only
/// through it. All paths of one instance (online [`push`](Self::push), [`bulk`](Self::bulk)
/// and chunked [`stream`](Self::stream)) give the same numbers bit for bit under one key.
pub trait DecayedSum: std::fmt::Debug + Send + Sync {
    /// The model's name, parameters and noise calibration, as the release states them.
    fn calibration(&self) -> CalibrationReport;

    /// L1 sensitivity of everything the mechanism releases, for one step's change.
    fn sensitivity(&self) -> f64 {
        self.calibration().sensitivity
    }

    /// Output columns: one per window for `allwindow`, else `estimate`.
    fn columns(&self) -> Vec<String> {
        vec!["estimate".into()]
    }

    /// Standard deviation of column `column`'s estimate at step `j` (public: it depends on
    /// the parameters and `j` only).
    fn noise_std(&self, column: usize, j: u64) -> f64;

    /// Online: one step in; one estimate per column written to `out`.
    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()>;

    /// Bulk: the estimates of a whole series from step 0, one vector per column (parallel
    /// where the mechanism allows). Does not change `self`. The default is a fresh copy's
    /// chunked stream over the whole series, one chunk.
    fn bulk(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        self.fresh().stream(xs)
    }

    /// Chunked stream: the estimates of the next `chunk` steps, continuing from every step
    /// this instance has seen, one vector per column, into `out` (reshaped to the columns
    /// and the chunk's length; its allocations are reused, so a stream of equal chunks
    /// allocates once). Memory is bounded by the chunk and the mechanism's window, not the
    /// stream. The default pushes one step at a time; mechanisms with a faster chunked
    /// path override it.
    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        push_each(self, chunk, out)
    }

    /// [`stream_into`](Self::stream_into) new vectors.
    fn stream(&mut self, chunk: &[f64]) -> Result<Vec<Vec<f64>>> {
        let mut out = Vec::new();
        self.stream_into(chunk, &mut out)?;
        Ok(out)
    }

    /// Draw the counters' noise in bulk and streaming on `device` (`cpu`, `gpu`, `auto`: a
    /// hardware GPU when there is one); the numbers are the same bit for bit. Returns the
    /// GPU used, in words, or `None` for the CPU. Mechanisms without a GPU path refuse
    /// `gpu` and run `auto` on the CPU.
    fn use_device(&mut self, device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
        match device {
            kinsey_kernels::DevicePref::Gpu => Err(Error::param(
                "device",
                "no GPU path for this mechanism (window, polynomial, exponential, running \
                 and laplace have one); use device = cpu or auto",
            )),
            _ => Ok(None),
        }
    }

    /// The exact decayed sums the estimates are unbiased for, per column (evaluation only;
    /// never part of a release).
    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>>;

    /// A copy of this mechanism at step 0 (same key, same parameters).
    fn fresh(&self) -> Box<dyn DecayedSum>;

    /// What a release of this mechanism guarantees.
    fn guarantee(&self) -> Guarantee {
        laplace_guarantee(&self.calibration(), "tree counters", "counters")
    }

    /// The online path over a whole series from step 0 (tests and `--online`): the same
    /// numbers as [`bulk`](Self::bulk).
    fn online(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        self.fresh().stream(xs)
    }
}

/// The model parameters a user may give (flags of `kinsey decay`, or TOML); each model
/// reads the ones it needs and names any that is missing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelParams {
    /// Window length in steps (window, laplace, rr).
    pub window: Option<u64>,
    /// Window lengths (allwindow).
    pub windows: Option<Vec<u64>>,
    /// Decay per step in (0, 1) (exponential).
    pub alpha: Option<f64>,
    /// Decay exponent c > 1 (polynomial).
    pub c: Option<f64>,
    /// Approximation parameter in (0, 1) (polynomial).
    pub beta: f64,
    /// Longest stream the mechanism is calibrated for (running, polynomial).
    pub horizon: Option<u64>,
    /// The mechanism: `tree` (the dyadic tree of seed 004, the default), `kary` (a k-ary
    /// tree, see `decay::kary`) or `best` (the one with the least stated error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Children per node of `kary` (default: the arity with the least stated error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arity: Option<u32>,
    /// zCDP: the budget `rho` of Gaussian noise (`--privacy zcdp`; `None`: pure DP at
    /// epsilon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// zCDP: the delta a release states its (epsilon, delta) at (default 1e-6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
}

impl Default for ModelParams {
    fn default() -> Self {
        Self {
            window: None,
            windows: None,
            alpha: None,
            c: None,
            beta: 0.1,
            horizon: None,
            mechanism: None,
            arity: None,
            rho: None,
            delta: None,
        }
    }
}

/// The public parameters every model takes: epsilon, the per-step bound and the noise key.
#[derive(Clone)]
pub struct Public {
    /// Privacy parameter of the whole output sequence.
    pub epsilon: f64,
    /// Per-step contribution bound `B` (values are clamped to `[0, B]` before).
    pub bound: f64,
    /// 256-bit noise key ([`crate::noise::key`]).
    pub key: [u8; 32],
    /// zCDP: the budget of a Gaussian mechanism (`None`: pure DP at `epsilon`).
    pub zcdp: Option<Zcdp>,
}

impl std::fmt::Debug for Public {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is secret: never printed.
        write!(
            f,
            "Public {{ epsilon: {}, bound: {} }}",
            self.epsilon, self.bound
        )
    }
}

impl ModelParams {
    /// A required parameter, or an error naming the model and the flag.
    pub(crate) fn need<T: Clone>(&self, model: &str, flag: &str, v: &Option<T>) -> Result<T> {
        v.clone()
            .ok_or_else(|| Error::param(flag, format!("model '{model}' needs --{flag}")))
    }
}

/// The default [`DecayedSum::stream_into`]: one [`push`](DecayedSum::push) per step, the
/// estimates into `out` (one vector per column, allocations reused); also `--online`.
pub fn push_each<M: DecayedSum + ?Sized>(
    m: &mut M,
    chunk: &[f64],
    out: &mut Vec<Vec<f64>>,
) -> Result<()> {
    let cols = m.columns().len();
    out.resize_with(cols, Vec::new);
    out.iter_mut().for_each(Vec::clear);
    let mut row = vec![0.0; cols];
    for &x in chunk {
        m.push(x, &mut row)?;
        for (o, v) in out.iter_mut().zip(&row) {
            o.push(*v);
        }
    }
    Ok(())
}

/// `out` as one column of `len` values (old values kept where they fit: the caller
/// overwrites every one), reusing its allocation.
pub(crate) fn one_column(out: &mut Vec<Vec<f64>>, len: usize) -> &mut [f64] {
    out.truncate(1);
    if out.is_empty() {
        out.push(Vec::new());
    }
    let col = &mut out[0];
    col.resize(len, 0.0);
    col
}

/// The exact sum of the last `W` values of a stream, fed one value or one chunk at a time:
/// the same additions and subtractions, in the same order, as [`window_truth`] over the
/// whole stream, so every path of a baseline gives the same bits.
#[derive(Debug, Clone)]
pub(super) struct Sliding {
    w: u64,
    /// The last `min(W, seen)` values, oldest first.
    recent: std::collections::VecDeque<f64>,
    sum: f64,
    seen: u64,
}

impl Sliding {
    pub(super) fn new(w: u64) -> Self {
        Self {
            w,
            recent: std::collections::VecDeque::new(),
            sum: 0.0,
            seen: 0,
        }
    }

    /// One value in; the sum of the last `W` out.
    pub(super) fn push(&mut self, v: f64) -> f64 {
        self.sum += v;
        self.recent.push_back(v);
        self.seen += 1;
        if self.seen > self.w {
            self.sum -= self.recent.pop_front().unwrap_or(0.0);
        }
        self.sum
    }

    /// A chunk in; `emit(i, sum)` for each of its values, on a contiguous buffer (the
    /// chunked stream's path).
    pub(super) fn extend(&mut self, vs: &[f64], mut emit: impl FnMut(usize, f64)) {
        let w = usize::try_from(self.w).unwrap_or(usize::MAX);
        let k = self.recent.len();
        let old = self.recent.make_contiguous();
        // Steps before this chunk's index `full` leave the window not yet full.
        let full = usize::try_from(self.w.saturating_sub(self.seen)).unwrap_or(usize::MAX);
        let mut s = self.sum;
        for (i, &v) in vs.iter().enumerate() {
            s += v;
            if i >= full {
                // The value leaving is `w` positions back in old ++ vs.
                let j = k + i - w;
                s -= if j < k { old[j] } else { vs[j - k] };
            }
            emit(i, s);
        }
        self.sum = s;
        self.seen += vs.len() as u64;
        let keep = k.saturating_add(vs.len()).min(w);
        let from_vs = keep.min(vs.len());
        let from_old = keep - from_vs;
        let mut recent: std::collections::VecDeque<f64> =
            old[k - from_old..].iter().copied().collect();
        recent.extend(&vs[vs.len() - from_vs..]);
        self.recent = recent;
    }
}

/// The pure eps-DP guarantee of discrete Laplace noise on `noised` (the tree counters, or
/// every output), with the L1 sensitivity over all `units`, for changing one step's value.
pub(super) fn laplace_guarantee(cal: &CalibrationReport, noised: &str, units: &str) -> Guarantee {
    Guarantee {
        kind: GuaranteeKind::Pure,
        epsilon: cal.epsilon,
        delta: 0.0,
        neighbours: NeighbourRelation::ChangeOneStep,
        mechanism: format!(
            "{}: exact dyadic discrete Laplace (two-sided geometric with dyadic \
             probabilities, privacy map from its tables) on {noised}",
            cal.model
        ),
        sensitivity: format!("{} (L1, over all {units})", cal.sensitivity),
        sensitivity_value: Some(cal.sensitivity),
        rho: None,
        // The release states it per step (`std_at_last_step`, the report's figures).
        noise_std: None,
    }
}

/// The delta a zCDP release states its (epsilon, delta) at when none is declared.
pub const DEFAULT_DELTA: f64 = 1e-6;

/// A zCDP budget and the (epsilon, delta) it is stated as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zcdp {
    /// The zCDP parameter of the whole output sequence.
    pub rho: f64,
    /// The delta of the stated conversion.
    pub delta: f64,
    /// The epsilon `rho` implies at `delta`.
    pub epsilon: f64,
}

impl Zcdp {
    /// `rho`, stated at `delta` (default [`DEFAULT_DELTA`]).
    pub fn new(rho: f64, delta: Option<f64>) -> Result<Self> {
        super::gauss::check_rho(rho)?;
        let delta = delta.unwrap_or(DEFAULT_DELTA);
        let epsilon = kinsey_dp::exact::zcdp_epsilon(rho, delta)?;
        // The epsilon the release states stays in the range every epsilon is held to.
        if !(kinsey_core::MIN_EPSILON..=kinsey_core::MAX_EPSILON).contains(&epsilon) {
            return Err(Error::param(
                "rho",
                format!(
                    "rho {rho} at delta {delta} states epsilon {epsilon:.4}, outside [{:e}, \
                     {}] (the range of every epsilon kinsey releases under)",
                    kinsey_core::MIN_EPSILON,
                    kinsey_core::MAX_EPSILON
                ),
            ));
        }
        Ok(Self {
            rho,
            delta,
            epsilon,
        })
    }

    /// Checks the budget (as [`new`](Self::new) does).
    pub fn check(&self) -> Result<()> {
        super::gauss::check_rho(self.rho)?;
        if self.delta > 0.0 && self.delta < 1.0 && self.epsilon > 0.0 {
            Ok(())
        } else {
            Err(Error::param("delta", "must be in (0, 1)"))
        }
    }
}

/// The zCDP guarantee of discrete Gaussian noise on `noised`, stated as (epsilon, delta).
pub(super) fn zcdp_guarantee(cal: &CalibrationReport, z: Zcdp, noised: &str) -> Guarantee {
    Guarantee {
        kind: GuaranteeKind::ZcdpConverted,
        epsilon: z.epsilon,
        delta: z.delta,
        neighbours: NeighbourRelation::ChangeOneStep,
        mechanism: format!(
            "{}: exact discrete Gaussian (Canonne, Kamath and Steinke 2020) on {noised}; \
             rho-zCDP with rho = {}, stated as (epsilon, delta)-DP by CKS Corollary 13",
            cal.model, z.rho
        ),
        sensitivity: format!("{} (L2, over everything noised)", cal.sensitivity),
        sensitivity_value: Some(cal.sensitivity),
        rho: Some(z.rho),
        noise_std: None,
    }
}

/// The refusal of `--device gpu` by the zCDP mechanisms (their exact discrete Gaussian
/// draws run on every CPU thread; there is no GPU twin).
pub(super) fn zcdp_no_gpu(device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
    match device {
        kinsey_kernels::DevicePref::Gpu => Err(Error::param(
            "device",
            "the zCDP mechanisms have no GPU path (their discrete Gaussian draws run on every \
             CPU thread); use --device cpu or auto",
        )),
        _ => Ok(None),
    }
}

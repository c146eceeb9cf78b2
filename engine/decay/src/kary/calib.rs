//! The public arithmetic of the k-ary trees ([`super`]): their levels, the load each level
//! carries in an estimate, the level weights and the weighted sensitivity they imply, and
//! the choice of arity and weights by stated error. Everything here is a function of
//! public parameters only.

use crate::model::DecayedSum;
use kinsey_core::{Error, Result};

/// The arities `--mechanism kary` chooses among (without `--arity`).
pub const ARITIES: [u32; 12] = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32];

/// Largest arity accepted.
pub(super) const MAX_ARITY: u32 = 256;

/// Largest window block (steps): its nodes are kept for two blocks.
pub(super) const MAX_BLOCK: u64 = 1 << 24;

/// Which decayed sum a k-ary tree computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Running sums over at most `horizon` steps.
    Running {
        /// The declared horizon.
        horizon: u64,
    },
    /// `sum alpha^(j - i) x_i`.
    Exponential {
        /// Decay per step in (0, 1).
        alpha: f64,
        /// The longest stream, when known (the series' public length): the tree then has
        /// the levels it needs and no more.
        horizon: Option<u64>,
    },
    /// The sum of the last `w` steps.
    Window {
        /// Window length.
        w: u64,
    },
}

/// A k-ary tree's shape: its arity, its level weights' exponent and, for exponential sums,
/// whether it is a forest (every node released, the top level without parents) and of how
/// many levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tree {
    /// Children per node.
    pub k: u32,
    /// The level weights' exponent ([`POWERS`]; 0: the same noise on every level).
    pub power: f64,
    /// Exponential sums: a forest of this many levels (`None`: the tree of `levels_of`).
    pub forest: Option<u32>,
}

/// `sum_t alpha^((k^(t-1) - 1) / (k - 1))` over `levels` levels (all while terms matter).
pub(crate) fn prefix_sensitivity(alpha: f64, k: u64, levels: u32) -> f64 {
    let mut s = 0.0;
    let mut gap = 0.0f64; // (k^(t-1) - 1) / (k - 1)
    let mut span = 1.0f64; // k^(t-1)
    for _ in 0..levels {
        let term = if alpha == 1.0 { 1.0 } else { alpha.powf(gap) };
        s += term;
        if term < 1e-18 * s {
            break;
        }
        gap += span;
        span *= k as f64;
    }
    s
}

/// Levels of base-`k` digits for the numbers `1 ..= n`: the least `L` with `k^L > n`.
pub(super) fn digits_for(k: u64, n: u64) -> u32 {
    debug_assert!(k >= 2, "arity checked by the callers");
    let k = k.max(2);
    let mut l = 1;
    let mut p = k;
    while p <= n {
        p = p.saturating_mul(k);
        l += 1;
    }
    l
}

/// Levels an exponential (unbounded) tree keeps: `k^L <= 2^62`.
pub(super) fn unbounded_levels(k: u64) -> u32 {
    digits_for(k, 1 << 62) - 1
}

/// Per level, the sum of the squared weights of the nodes the estimate at step `j` adds
/// (a public function of the parameters and `j`): the estimate's variance is
/// `sum_l load_l var_l`.
///
/// In a forest (`forest`) the top level is an unbounded run: every node of it before the
/// step's last boundary is in the estimate.
pub fn load_at(kind: Kind, k: u64, levels: u32, forest: bool, j: u64) -> Vec<f64> {
    let mut load = vec![0.0; levels as usize];
    match kind {
        Kind::Window { w } => {
            let block = k.pow(levels);
            let (b, p) = (j / block, j % block);
            let start = (j + 1).saturating_sub(w);
            let here = b * block;
            let mut count = |l: usize, _: u64| load[l] += 1.0;
            if start >= here {
                interval(levels, k, start - here, p + 1, &mut count);
            } else {
                interval(levels, k, start + block - here, block, &mut count);
                interval(levels, k, 0, p + 1, &mut count);
            }
        }
        Kind::Running { .. } | Kind::Exponential { .. } => {
            let alpha = match kind {
                Kind::Exponential { alpha, .. } => alpha,
                _ => 1.0,
            };
            let (mut m, mut span, mut end) = (j + 1, 1u64, j + 1);
            let top = levels as usize - 1;
            for (l, slot) in load.iter_mut().enumerate() {
                if m == 0 {
                    break;
                }
                if forest && l == top {
                    // All of the run: a geometric sum of the decayed weights.
                    let (first, ratio) = (
                        alpha.powf(2.0 * (j + 1 - end) as f64),
                        alpha.powf(2.0 * span as f64),
                    );
                    *slot += if alpha == 1.0 {
                        m as f64
                    } else {
                        first * (1.0 - ratio.powf(m as f64)) / (1.0 - ratio)
                    };
                    break;
                }
                let d = m % k;
                for c in 0..d {
                    let dist = (j + 1 - end) + c * span;
                    *slot += if alpha == 1.0 {
                        1.0
                    } else {
                        alpha.powf(2.0 * dist as f64)
                    };
                }
                end -= d * span;
                m /= k;
                span = span.saturating_mul(k);
            }
        }
    }
    load
}

/// Sample `i` of `n` steps in `0 .. span`: all of them when `n = span`, else spread by a
/// multiplicative hash (evenly spaced samples alias with the tree's powers of `k`).
pub(crate) fn spread(i: u64, n: u64, span: u64) -> u64 {
    if n >= span {
        return i;
    }
    ((u128::from(i) * 0x9E37_79B9_7F4A_7C15) % u128::from(span)) as u64
}

/// Steps sampled for the mean load of each level ([`level_loads`]).
pub(super) const LOAD_SAMPLES: u64 = 2048;

/// The levels of a tree for `kind` with arity `k`: running sums, the digits of the horizon;
/// exponential sums, `k^L <= 2^62`; windows, blocks of `k^L > W` steps (at most
/// [`MAX_BLOCK`]).
/// The levels of a tree of shape `forest` (see [`Tree`]): a forest's own (1 to the
/// exponential tree's levels), else [`levels_of`].
pub(super) fn shape_levels(kind: Kind, k: u64, forest: Option<u32>) -> Result<u32> {
    let full = levels_of(kind, k)?;
    match forest {
        None => Ok(full),
        Some(l) if matches!(kind, Kind::Exponential { .. }) && (1..=full).contains(&l) => Ok(l),
        Some(l) => Err(Error::param(
            "forest",
            format!(
                "a forest is for exponential sums, with 1 to {full} levels at arity {k}; got {l}"
            ),
        )),
    }
}

pub(super) fn levels_of(kind: Kind, k: u64) -> Result<u32> {
    Ok(match kind {
        Kind::Running { horizon } => {
            if horizon < 1 {
                return Err(Error::param("horizon", "must be >= 1 step"));
            }
            digits_for(k, horizon)
        }
        Kind::Exponential { alpha, horizon } => {
            crate::model::check_alpha(alpha)?;
            match horizon {
                Some(0) => return Err(Error::param("horizon", "must be >= 1 step")),
                Some(h) => digits_for(k, h).min(unbounded_levels(k)),
                None => unbounded_levels(k),
            }
        }
        Kind::Window { w } => {
            if w < 1 {
                return Err(Error::param("window", "must be >= 1 step"));
            }
            let levels = digits_for(k, w);
            if k.checked_pow(levels).is_none_or(|b| b > MAX_BLOCK) {
                return Err(Error::param(
                    "arity",
                    format!(
                        "blocks of {k}^{levels} steps are over the {MAX_BLOCK}-step limit; \
                         choose a smaller arity"
                    ),
                ));
            }
            levels
        }
    })
}

/// The mean [`load_at`] of each level over the steps a release covers in the long run
/// (public: parameters only): a running sum's whole horizon, an exponential sum's and a
/// window's steady state.
pub fn level_loads(kind: Kind, k: u64, levels: u32, forest: bool, samples: u64) -> Vec<f64> {
    let (from, span) = match kind {
        Kind::Running { horizon } => (0, horizon),
        Kind::Exponential {
            horizon: Some(h), ..
        } => (0, h),
        Kind::Exponential { horizon: None, .. } => (1 << 24, 1 << 24),
        Kind::Window { w } => (w, k.pow(levels).max(w) * 2),
    };
    let n = samples.min(span).max(1);
    let mut mean = vec![0.0; levels as usize];
    for i in 0..n {
        let j = from + spread(i, n, span);
        for (m, v) in mean.iter_mut().zip(load_at(kind, k, levels, forest, j)) {
            *m += v / n as f64;
        }
    }
    mean
}

/// The smallest weight a level gets: its noise is then at most 10 times the least (a
/// level that estimates rarely use still serves some steps: a node that just completed
/// enters the estimate whole).
pub(super) const MIN_WEIGHT: f64 = 0.1;

/// Level weights `(load / max load)^power`, at least [`MIN_WEIGHT`] (and at least what
/// keeps `eps u` in the samplers' range).
pub(super) fn weights_of(loads: &[f64], power: f64, epsilon: f64) -> Vec<f64> {
    let max = loads.iter().copied().fold(0.0, f64::max);
    let floor = MIN_WEIGHT.max(2e-6 / epsilon).min(1.0);
    loads
        .iter()
        .map(|&c| {
            if power == 0.0 || max <= 0.0 {
                1.0
            } else {
                (c / max).powf(power).max(floor)
            }
        })
        .collect()
}

/// Levels whose subsets [`weighted_reach`] searches exhaustively; the weights of the levels
/// above are added whole (an upper bound).
pub(super) const SEARCHED_LEVELS: usize = 16;

/// The weighted L1 reach of one step (per unit of `B`): the largest `sum_l u_l |change of
/// its level-l node|` over the steps. Windows and running sums: every level, undecayed,
/// `sum u_l`. Exponential sums: a step's released ancestors at levels `S` end at least
/// `sum_(m in S, m < l) k^m` steps after it, so the reach is the largest `sum_(l in S) u_l
/// alpha^(gap)` over the level sets `S` (each level's digit `k - 2` attains it; `k - 1`
/// leaves the level out), searched over the first 16 levels; the levels above are bounded
/// by their largest weight, decayed by the gap and summed as a geometric series.
pub(super) fn weighted_reach(kind: Kind, k: u64, weights: &[f64]) -> f64 {
    let alpha = match kind {
        Kind::Exponential { alpha, .. } => alpha,
        _ => return weights.iter().sum(),
    };
    if weights.iter().all(|&u| u == 1.0) {
        return prefix_sensitivity(alpha, k, weights.len() as u32);
    }
    let searched = weights.len().min(SEARCHED_LEVELS);
    // The levels above: their i-th taken one is at least (i - 1) k^16 steps after the
    // first, so together they add at most u_max alpha^gap / (1 - alpha^(k^16)) (and at
    // most u_max alpha^gap per level).
    let tail = &weights[searched..];
    let tail_max = tail.iter().copied().fold(0.0, f64::max);
    let step = alpha.powf((k as f64).powi(SEARCHED_LEVELS as i32));
    let tail_factor = if tail.is_empty() {
        0.0
    } else {
        tail_max * (1.0 / (1.0 - step)).min(tail.len() as f64)
    };
    let mut best: f64 = 0.0;
    for mask in 0u32..(1 << searched) {
        let (mut gap, mut sum, mut span) = (0.0f64, 0.0, 1.0f64);
        for (l, &u) in weights[..searched].iter().enumerate() {
            if mask >> l & 1 == 1 {
                sum += u * alpha.powf(gap);
                gap += span;
            }
            span *= k as f64;
        }
        best = best.max(sum + tail_factor * alpha.powf(gap));
    }
    best
}

/// The stated mean variance of `m`'s first column over steps `0 .. n` (a public function
/// of the parameters; sampled at up to 4,096 evenly spaced steps).
pub fn mean_variance(m: &dyn DecayedSum, n: u64) -> f64 {
    let n = n.max(1);
    let samples = n.min(4096);
    let mut s = 0.0;
    for i in 0..samples {
        let j = spread(i, samples, n);
        let sd = m.noise_std(0, j);
        s += sd * sd;
    }
    s / samples as f64
}

/// Among `first` and `others`, the one with the least stated mean variance over `n` steps
/// (the earlier of equals).
pub(crate) fn least_variance(
    first: Box<dyn DecayedSum>,
    others: Vec<Box<dyn DecayedSum>>,
    n: u64,
) -> Box<dyn DecayedSum> {
    let mut best = (mean_variance(first.as_ref(), n), first);
    for m in others {
        let v = mean_variance(m.as_ref(), n);
        if v < best.0 {
            best = (v, m);
        }
    }
    best.1
}

/// The canonical decomposition of steps `a .. b` of one block of `levels` levels into
/// nodes: `visit(level, index)` for each, bottom up. The block's own node is never needed
/// (`b - a` is below the block).
#[inline]
pub(super) fn interval(levels: u32, k: u64, a: u64, b: u64, mut visit: impl FnMut(usize, u64)) {
    // Positions inside a block are below 2^26: 32-bit division is the fast one.
    let (k, mut a, mut b) = (k as u32, a as u32, b as u32);
    for l in 0..levels as usize {
        while a < b && a % k != 0 {
            visit(l, u64::from(a));
            a += 1;
        }
        while b > a && b % k != 0 {
            b -= 1;
            visit(l, u64::from(b));
        }
        if a == b {
            break;
        }
        a /= k;
        b /= k;
    }
}

/// The exponents the level weights are tried with (0: the same noise on every level).
pub const POWERS: [f64; 5] = [0.0, 0.2, 0.25, 0.3, 1.0 / 3.0];

/// The arities to try: `arity` when given (checked), else [`ARITIES`].
fn arities(arity: Option<u32>) -> Result<Vec<u32>> {
    if let Some(k) = arity
        && !(2..=MAX_ARITY).contains(&k)
    {
        return Err(Error::param(
            "arity",
            format!("a tree has 2 to {MAX_ARITY} children per node, got {k}"),
        ));
    }
    Ok(arity.map_or_else(|| ARITIES.to_vec(), |k| vec![k]))
}

/// The levels of arity `k` for `kind`, or `None` when that arity is not a candidate (its
/// window blocks too large); a given arity's error is the answer.
fn candidate_levels(kind: Kind, k: u64, arity: Option<u32>) -> Result<Option<u32>> {
    match levels_of(kind, k) {
        Ok(l) => Ok(Some(l)),
        Err(e) if arity.is_some() => Err(e),
        Err(_) => Ok(None),
    }
}

/// The shapes of arity `k` for `kind`: the tree, and for exponential sums every forest.
fn shapes_of(kind: Kind, full: u32) -> Vec<Option<u32>> {
    let mut shapes = vec![None];
    if matches!(kind, Kind::Exponential { .. }) {
        shapes.extend((1..=full).map(Some));
    }
    shapes
}

/// The stated mean variance of a tree of `levels` levels whose counters have variances
/// `var`, over the steps [`level_loads`] samples (`loads` its mean loads): the optimal
/// estimates' ([`super::honaker`]) where the tree has them, else the plain sums'.
fn stated_mean(kind: Kind, k: u64, levels: u32, forest: bool, loads: &[f64], var: &[f64]) -> f64 {
    let (optimal, alpha) = match kind {
        Kind::Exponential { alpha, .. } => (forest, alpha),
        _ => (true, 1.0),
    };
    if !optimal {
        return loads.iter().zip(var).map(|(c, v)| c * v).sum();
    }
    let lv = super::honaker::Levels::new(var, k, alpha);
    if let Kind::Window { w } = kind {
        let (top, span) = (levels as usize - 1, k.pow(levels).max(w) * 2);
        let n = LOAD_SAMPLES.min(span).max(1);
        let sum: f64 = (0..n)
            .map(|i| super::honaker::window_var(&lv, k, top, w, w + spread(i, n, span)))
            .sum();
        return sum / n as f64;
    }
    loads.iter().zip(&lv.var).map(|(c, v)| c * v).sum()
}

/// The shape (arity among [`ARITIES`] or `arity` when given, level-weight exponent among
/// [`POWERS`], and for exponential sums the tree or a forest) with the least stated mean
/// variance of discrete Laplace noise over the steps [`level_loads`] samples: public
/// parameters only decide.
pub fn best_choice(kind: Kind, arity: Option<u32>, epsilon: f64, bound: f64) -> Result<Tree> {
    let mut best: Option<(f64, Tree)> = None;
    for k in arities(arity)? {
        let k64 = u64::from(k);
        // An arity whose window blocks are too large is not a candidate.
        let Some(full) = candidate_levels(kind, k64, arity)? else {
            continue;
        };
        for forest in shapes_of(kind, full) {
            let levels = forest.unwrap_or(full);
            let loads = level_loads(kind, k64, levels, forest.is_some(), LOAD_SAMPLES);
            for power in POWERS {
                let u = weights_of(&loads, power, epsilon);
                let reach = if forest.is_some() {
                    u.iter().sum()
                } else {
                    weighted_reach(kind, k64, &u)
                };
                // Laplace variance 2 (reach B / (eps u_l))^2 per counter of level l.
                let var: Vec<f64> = u
                    .iter()
                    .map(|u| 2.0 * (reach * bound / (epsilon * u)).powi(2))
                    .collect();
                let v = stated_mean(kind, k64, levels, forest.is_some(), &loads, &var);
                if best.is_none_or(|(b, _)| v < b) {
                    best = Some((v, Tree { k, power, forest }));
                }
            }
        }
    }
    best.map(|(_, t)| t).ok_or_else(|| {
        Error::param(
            "arity",
            "no arity gives blocks within the limit for this window",
        )
    })
}

/// The L2 reach of a tree with the same noise on every level: `sqrt` of it times `B` is
/// the counters' L2 sensitivity. An input is in at most one released node per level, of
/// weight `alpha^gap` (1 without decay), so it is the L1 reach at `alpha^2`.
pub(crate) fn l2_reach(kind: Kind, k: u64, levels: u32) -> f64 {
    let squared = match kind {
        Kind::Exponential { alpha, horizon } => Kind::Exponential {
            alpha: alpha * alpha,
            horizon,
        },
        other => other,
    };
    weighted_reach(squared, k, &vec![1.0; levels as usize])
}

/// The shape (as [`best_choice`], the same noise on every level) with the least stated
/// mean variance of Gaussian noise: a level's variance is `reach B^2 / (2 rho)` whatever
/// the level (`l2_reach`, or a forest's `L`), so the choice minimises the stated mean at
/// unit variance times the reach (public parameters only).
pub fn best_gaussian_arity(kind: Kind, arity: Option<u32>) -> Result<Tree> {
    let mut best: Option<(f64, Tree)> = None;
    for k in arities(arity)? {
        let k64 = u64::from(k);
        let Some(full) = candidate_levels(kind, k64, arity)? else {
            continue;
        };
        for forest in shapes_of(kind, full) {
            let levels = forest.unwrap_or(full);
            let loads = level_loads(kind, k64, levels, forest.is_some(), LOAD_SAMPLES);
            let reach = match forest {
                Some(l) => f64::from(l),
                None => l2_reach(kind, k64, levels),
            };
            let var = vec![reach; levels as usize];
            let v = stated_mean(kind, k64, levels, forest.is_some(), &loads, &var);
            if best.is_none_or(|(b, _)| v < b) {
                let power = 0.0;
                best = Some((v, Tree { k, power, forest }));
            }
        }
    }
    best.map(|(_, t)| t).ok_or_else(|| {
        Error::param(
            "arity",
            "no arity gives blocks within the limit for this window",
        )
    })
}

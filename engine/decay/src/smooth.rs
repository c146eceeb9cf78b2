//! The smooth k-ary tree for running sums (`--mechanism smooth`): a k-ary tree whose time
//! steps are mapped to a public subset of its leaves, in the spirit of the smooth binary
//! mechanism (Andersson and Pagh, NeurIPS 2023) adapted to pure DP and to any arity.
//!
//! **Leaves.** A leaf (a number below `k^L` written with `L` base-`k` digits) is *usable*
//! when at most `s` of its digits differ from `k - 1`. Step `t` is the `t`-th usable leaf
//! in increasing order (the leaf `k^L - 1` is never used); the other leaves hold nothing.
//! The `T` (the horizon) usable leaves needed exist by the choice of `(k, L, s)`.
//!
//! **Noise.** Level `l`'s `n`-th released node takes counter `n` of the level's keyed
//! stream (releases at a level come in order, so `n` is a public function of the step),
//! drawn in batches.
//!
//! **Counters.** As in the k-ary prefix tree ([`super::kary`]): a node (level `l`, index
//! `m`) covers leaves `[m k^l, (m + 1) k^l)`; the estimate after leaf `x` is the sum of the
//! nodes of `x + 1`'s base-`k` digits (`d_l` nodes at level `l`, the left siblings of its
//! ancestors). A node is released, with noise, when it completes and a later estimate uses
//! it: its parent is still open (its digit is not `k - 1`) and it holds a usable leaf (the
//! digits above and at its level have at most `s` digits other than `k - 1`); every other
//! node holds exactly 0 (no step maps into it), a public fact, and enters as 0 without noise.
//!
//! **Privacy.** A step's leaf `x` has at most `s` digits other than `k - 1`, and only its
//! ancestors at those levels are ever released (an ancestor whose digit is `k - 1` completes
//! with its parent and is never released): its value touches at most `s` counters, so the
//! counters have L1 sensitivity `s B` (L2 `sqrt(s) B`). Discrete Laplace noise at `eps`
//! (pure DP) or discrete Gaussian noise at `rho` (zCDP) on each, as the trees.
//!
//! **Error.** An estimate after leaf `x` sums, per level `l`, the `d_l(x + 1)` nodes there
//! when the digits of `x + 1` above `l` have fewer than `s` digits other than `k - 1` (else
//! those nodes hold no usable leaf and are exactly 0): its variance is that count times a
//! counter's variance, a public function of the step. Fewer nodes per estimate and fewer
//! counters per input than the k-ary tree, at the cost of more levels: `(k, L, s)` are
//! chosen by the stated mean variance over the horizon ([`choose`]).
//!
//! Online and bulk are the same loop (the default chunked stream), so they agree bit for
//! bit under one key.

use super::gauss::{CounterNoise, Draws, KeyedGauss};
use super::kary::ARITIES;
use super::model::{
    CalibrationReport, DecayedSum, ModelParams, Public, Zcdp, check_bound, decayed_truth,
    laplace_guarantee, zcdp_guarantee,
};
use super::noise::KeyedNoise;
use kinsey_core::{Error, Result, check_epsilon};

/// Most levels a smooth tree has (`k^L` stays below `2^63`).
const MAX_LEVELS: u32 = 62;

/// The smooth tree's shape: arity, levels and the cap on a leaf's non-`k - 1` digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Children per node.
    pub k: u64,
    /// Levels (digits of a leaf).
    pub levels: u32,
    /// Most digits other than `k - 1` a usable leaf has.
    pub cap: u32,
}

impl Shape {
    /// Strings of `len` digits with at most `budget` digits other than `k - 1`.
    fn count(&self, len: u32, budget: i64) -> u128 {
        if budget < 0 {
            return 0;
        }
        // The i = 0 term, then C(len, i) (k - 1)^i for i = 1 ..= budget.
        let (mut total, mut binom, mut pow) = (1u128, 1u128, 1u128);
        for i in 1..=u128::from(len.min(budget as u32)) {
            binom = binom * (u128::from(len) - i + 1) / i;
            pow = pow.saturating_mul(u128::from(self.k - 1));
            total = total.saturating_add(binom.saturating_mul(pow));
        }
        total
    }

    /// Usable leaves (the all-`k - 1` leaf excluded).
    pub fn usable(&self) -> u128 {
        self.count(self.levels, i64::from(self.cap)) - 1
    }

    /// The `t`-th usable leaf (0-based), digits from level 0 up.
    fn unrank(&self, mut t: u128) -> Vec<u64> {
        let mut digits = vec![0u64; self.levels as usize];
        let mut budget = i64::from(self.cap);
        for l in (0..self.levels as usize).rev() {
            for e in 0..self.k {
                let cost = i64::from(e != self.k - 1);
                let n = self.count(l as u32, budget - cost);
                if t < n {
                    digits[l] = e;
                    budget -= cost;
                    break;
                }
                t -= n;
            }
        }
        digits
    }

    /// The next usable leaf after `digits` (in place): the greedy successor (the lowest
    /// digit other than `k - 1` raised to `k - 1` while the leaf has too many).
    fn successor(&self, digits: &mut [u64]) {
        let k = self.k;
        // + 1
        for d in digits.iter_mut() {
            *d += 1;
            if *d < k {
                break;
            }
            *d = 0;
        }
        loop {
            let other = digits.iter().filter(|&&d| d != k - 1).count() as u32;
            if other <= self.cap {
                return;
            }
            if let Some(d) = digits.iter_mut().find(|d| **d != k - 1) {
                *d = k - 1;
            }
        }
    }

    /// Per level, the nodes the estimate after leaf `digits` sums that may hold a usable
    /// leaf (each adds one counter's variance).
    fn loads(&self, digits: &[u64]) -> Vec<u64> {
        let k = self.k;
        let mut next = digits.to_vec();
        for d in next.iter_mut() {
            *d += 1;
            if *d < k {
                break;
            }
            *d = 0;
        }
        let mut load = vec![0u64; self.levels as usize];
        let mut above = 0u32;
        for l in (0..self.levels as usize).rev() {
            if above < self.cap {
                load[l] = next[l];
            }
            above += u32::from(next[l] != k - 1);
        }
        load
    }

    /// Mean number of counters per estimate over `horizon` steps (sampled at up to 4,096
    /// steps spread over it, as the trees' choice is).
    fn mean_load(&self, horizon: u64) -> f64 {
        let samples = horizon.clamp(1, 4096);
        let mut s = 0u64;
        for i in 0..samples {
            let t = super::kary::spread_steps(i, samples, horizon);
            s += self.loads(&self.unrank(u128::from(t))).iter().sum::<u64>();
        }
        s as f64 / samples as f64
    }
}

/// The shape with the least stated mean variance for a horizon `horizon`, pure DP
/// (`l1 = true`, variance `s^2` per counter and unit) or zCDP (variance `s`): every arity
/// of [`ARITIES`], the fewest levels that hold the horizon and four more, each with the
/// least cap that holds it and one more. Public parameters only.
pub fn choose(horizon: u64, l1: bool) -> Result<Shape> {
    let mut best: Option<(f64, Shape)> = None;
    for k in ARITIES.map(u64::from) {
        let mut levels = 1u32;
        while (k as f64).powi(levels as i32) <= horizon as f64 + 1.0 {
            levels += 1;
        }
        for levels in levels..(levels + 5).min(MAX_LEVELS + 1) {
            if (k as f64).powi(levels as i32) >= 2f64.powi(63) {
                break;
            }
            let least =
                (1..=levels).find(|&cap| Shape { k, levels, cap }.usable() >= u128::from(horizon));
            let Some(least) = least else { continue };
            for cap in least..=(least + 1).min(levels) {
                let shape = Shape { k, levels, cap };
                let sens2 = if l1 {
                    f64::from(cap).powi(2)
                } else {
                    f64::from(cap)
                };
                let v = sens2 * shape.mean_load(horizon);
                if best.is_none_or(|(b, _)| v < b) {
                    best = Some((v, shape));
                }
            }
        }
    }
    best.map(|(_, s)| s)
        .ok_or_else(|| Error::param("horizon", "no smooth tree holds this horizon"))
}

/// The smooth k-ary tree for running sums (see the module's documentation).
#[derive(Debug, Clone)]
pub struct SmoothSum {
    shape: Shape,
    horizon: u64,
    bound: f64,
    epsilon: f64,
    zcdp: Option<Zcdp>,
    sensitivity: f64,
    /// Per level: its noise (stream `1 + level`, counter = the node's index at its level).
    noise: Vec<CounterNoise>,
    /// `k^l` per level.
    span: Vec<u64>,
    /// The current leaf's digits (level 0 first) and its number; `None` before step 0.
    leaf: Option<(Vec<u64>, u64)>,
    /// The position the counters are complete up to (the last leaf + 1).
    pos: u64,
    /// True value of the node forming at each level.
    acc: Vec<f64>,
    /// Per level: the sum of the released nodes in the current estimate.
    open: Vec<f64>,
    /// Per level: nodes released so far (a released node's noise counter: the releases of
    /// a level are in order, so its number is a public function of the step).
    released: Vec<u64>,
    draws: Vec<Draws>,
    t: u64,
}

impl SmoothSum {
    /// The mechanism over `horizon` steps with the shape of least stated error, values in
    /// `[0, bound]`, pure DP at `epsilon` or zCDP at `zcdp`.
    pub fn new(horizon: u64, public: &Public) -> Result<Self> {
        let shape = choose(horizon.max(1), public.zcdp.is_none())?;
        Self::with_shape(shape, horizon, public)
    }

    /// The mechanism with a given shape.
    pub fn with_shape(shape: Shape, horizon: u64, public: &Public) -> Result<Self> {
        check_bound(public.bound)?;
        if horizon < 1 {
            return Err(Error::param("horizon", "must be >= 1 step"));
        }
        if shape.usable() < u128::from(horizon) {
            return Err(Error::param(
                "horizon",
                "the smooth tree has fewer usable leaves than the horizon",
            ));
        }
        let (key, bound, cap) = (public.key, public.bound, shape.cap);
        let (noise, sensitivity, epsilon) = match public.zcdp {
            None => {
                check_epsilon("epsilon", public.epsilon)?;
                let s = bound * f64::from(cap);
                let grid = KeyedNoise::grid_for(s, public.epsilon);
                let noise = (0..shape.levels)
                    .map(|l| {
                        KeyedNoise::on_grid(key, 1 + u64::from(l), s, cap, public.epsilon, grid)
                            .map(CounterNoise::Laplace)
                    })
                    .collect::<Result<Vec<_>>>()?;
                (noise, s, public.epsilon)
            }
            Some(z) => {
                z.check()?;
                let s = bound * f64::from(cap).sqrt();
                let noise = (0..shape.levels)
                    .map(|l| {
                        KeyedGauss::new(key, 1 + u64::from(l), s, u64::from(cap), z.rho)
                            .map(CounterNoise::Gauss)
                    })
                    .collect::<Result<Vec<_>>>()?;
                (noise, s, z.epsilon)
            }
        };
        let span = (0..shape.levels).map(|l| shape.k.pow(l)).collect();
        Ok(Self {
            shape,
            horizon,
            bound,
            epsilon,
            zcdp: public.zcdp,
            sensitivity,
            noise,
            span,
            leaf: None,
            pos: 0,
            acc: vec![0.0; shape.levels as usize],
            open: vec![0.0; shape.levels as usize],
            released: vec![0; shape.levels as usize],
            draws: vec![Draws::default(); shape.levels as usize],
            t: 0,
        })
    }

    /// The shape used.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Whether node (level `l`, index `m`) may hold a usable leaf: its digits (the index's)
    /// have at most `cap - 1` digits other than `k - 1` when it is a left sibling (its own
    /// digit is one of them), i.e. at most `cap` in all.
    fn may_hold(&self, l: usize, mut m: u64) -> bool {
        let k = self.shape.k;
        let mut other = 0u32;
        for _ in l..self.shape.levels as usize {
            other += u32::from(m % k != k - 1);
            m /= k;
        }
        other <= self.shape.cap
    }

    /// Moves the completed position from `self.pos` to `to`: every node that completes in
    /// between is released when a later estimate uses it, else dropped.
    fn advance(&mut self, to: u64) -> Result<()> {
        let k = self.shape.k;
        for l in 0..self.shape.levels as usize {
            let (a, b) = (self.pos / self.span[l], to / self.span[l]);
            if a == b {
                break;
            }
            let v = std::mem::take(&mut self.acc[l]);
            if a / k == b / k {
                // Its parent is still open: the estimates after it use this node.
                if self.may_hold(l, a) {
                    let noise = &self.noise[l];
                    let z = self.draws[l].get(|at, z| noise.fill(at, z), self.released[l])?;
                    self.released[l] += 1;
                    self.open[l] += noise.release(v, z);
                }
            } else {
                self.open[l] = 0.0;
            }
        }
        self.pos = to;
        Ok(())
    }

    fn step(&mut self, x: f64) -> Result<f64> {
        if self.t >= self.horizon {
            return Err(Error::param(
                "horizon",
                format!(
                    "the stream is longer than the declared horizon of {} steps",
                    self.horizon
                ),
            ));
        }
        let (digits, leaf) = match self.leaf.take() {
            None => {
                let d = self.shape.unrank(0);
                let n = number(&d, self.shape.k);
                (d, n)
            }
            Some((mut d, _)) => {
                self.shape.successor(&mut d);
                let n = number(&d, self.shape.k);
                (d, n)
            }
        };
        self.advance(leaf)?;
        let v = x.clamp(0.0, self.bound);
        for a in self.acc.iter_mut() {
            *a += v;
        }
        self.advance(leaf + 1)?;
        self.leaf = Some((digits, leaf));
        self.t += 1;
        Ok(self.open.iter().sum())
    }

    /// Standard deviation of the estimate at step `j` (public: parameters and `j` only).
    pub fn std_at(&self, j: u64) -> f64 {
        let digits = self.shape.unrank(u128::from(j.min(self.horizon - 1)));
        let var = self.noise[0].std_dev().powi(2);
        (self.shape.loads(&digits).iter().sum::<u64>() as f64 * var).sqrt()
    }

    /// The mean stated variance over the horizon (sampled as the choice is).
    pub fn mean_variance(&self) -> f64 {
        self.noise[0].std_dev().powi(2) * self.shape.mean_load(self.horizon)
    }

    /// A copy whose noise is `factor` times the calibrated one (tests).
    #[cfg(test)]
    pub(crate) fn scaled(&self, factor: f64) -> Self {
        let mut m = self.clone();
        m.noise = m.noise.iter().map(|n| n.scaled(factor)).collect();
        m
    }
}

/// `--mechanism smooth`: running sums only, over the declared horizon.
pub(crate) fn build(model: &str, p: &ModelParams, public: &Public) -> Result<Box<dyn DecayedSum>> {
    if model != "running" {
        return Err(Error::param(
            "mechanism",
            format!("the smooth tree computes running sums, not '{model}'"),
        ));
    }
    Ok(Box::new(SmoothSum::new(
        p.need(model, "horizon", &p.horizon)?,
        public,
    )?))
}

/// The number whose base-`k` digits (level 0 first) are `digits`.
fn number(digits: &[u64], k: u64) -> u64 {
    digits.iter().rev().fold(0u64, |n, &d| n * k + d)
}

impl DecayedSum for SmoothSum {
    fn calibration(&self) -> CalibrationReport {
        let s = self.shape;
        CalibrationReport {
            model: format!(
                "running (horizon {}), smooth {}-ary tree ({} levels, leaves with at most {} \
                 digits other than {})",
                self.horizon,
                s.k,
                s.levels,
                s.cap,
                s.k - 1
            ),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: s.levels,
            sensitivity: self.sensitivity,
            counter_scale: self.noise[0].scale(),
            counter_std: self.noise[0].std_dev(),
            rho: self.zcdp.map(|z| z.rho),
        }
    }

    fn noise_std(&self, _column: usize, j: u64) -> f64 {
        self.std_at(j)
    }

    fn use_device(&mut self, device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
        match device {
            kinsey_kernels::DevicePref::Gpu => Err(Error::param(
                "device",
                "the smooth tree has no GPU path; use --device cpu or auto",
            )),
            _ => Ok(None),
        }
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        out[0] = self.step(x)?;
        Ok(())
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![decayed_truth(xs, 1.0)]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.leaf = None;
        m.pos = 0;
        m.t = 0;
        m.acc.iter_mut().for_each(|v| *v = 0.0);
        m.open.iter_mut().for_each(|v| *v = 0.0);
        m.released.iter_mut().for_each(|v| *v = 0);
        Box::new(m)
    }

    fn guarantee(&self) -> kinsey_dp::release::Guarantee {
        match self.zcdp {
            Some(z) => zcdp_guarantee(&self.calibration(), z, "the smooth tree's counters"),
            None => laplace_guarantee(&self.calibration(), "smooth tree counters", "counters"),
        }
    }
}

#[cfg(test)]
mod tests;

//! k-ary trees for running, exponentially decayed and window sums (`--mechanism kary`):
//! the same counters, noise and guarantee as the dyadic tree of seed 004, with `k`
//! children per node instead of two.
//!
//! Why it has less error: with `L` levels every input lies in one node per level, so the
//! Laplace scale grows as `L` and a variance as `L^2`; an estimate sums up to `k - 1` nodes
//! per level. A binary tree over `T` steps has `L = log2 T` levels and about `L / 2` nodes
//! per estimate (variance about `L^3 / 2 (B / eps)^2 x 2`); a `k`-ary tree has `log_k T`
//! levels and about `(k - 1) / 2` nodes per level, a variance `(k - 1) / (log2 k)^3` times
//! the binary tree's: 0.25 at `k = 16`, so half the RMSE. This is the `k`-ary tree
//! mechanism of the continual-counting literature (e.g. Qardaji, Yang, Li 2013 on
//! hierarchical histograms' branching; Andersson and Pagh 2023 for the smooth variants);
//! kinsey chooses `k` from public parameters only, by the stated mean variance.
//!
//! * **Running and exponential sums** (prefix trees). Node (level `l`, index `m`) covers
//!   steps `[m k^l, (m + 1) k^l - 1]` and holds `sum alpha^(u - i) x_i` (`u` its last
//!   step; `alpha = 1` for running sums). The estimate at step `j` is the nodes of
//!   `j + 1`'s base-`k` digits, each weighted by `alpha^(j - u)`: `d_l` nodes at level
//!   `l`. A node whose index ends in the digit `k - 1` completes its parent and is never
//!   released (no noise). Sensitivity: `x_i`'s released ancestors are at levels
//!   `l_1 < l_2 < ...`; the `t`-th ends at least `sum_(s < t) k^(l_s) >= (k^(t-1) - 1) /
//!   (k - 1)` steps after `i`, so the L1 sensitivity is at most `B sum_t
//!   alpha^((k^(t-1) - 1) / (k - 1))` (attained by `i` ending `t` nodes at once; for
//!   `k = 2` the binary mechanism's `sum alpha^(2^(t-1) - 1)`). Running sums over a
//!   horizon `T` have `L` levels with `k^L > T` (the top digit's last node never completes),
//!   so sensitivity `L B`.
//! * **Window sums**: blocks of `k^h > W` steps, every node of levels `0 .. h - 1`
//!   released (the block itself is never needed: a window is shorter); a window is an
//!   interval inside one block or a suffix of one and a prefix of the next, each the
//!   canonical decomposition into at most `2 (k - 1)` nodes per level. Sensitivity `h B`.
//!
//! **Estimates** (`kary::honaker`): window and running sums, and exponential sums on a forest,
//! take the minimum-variance linear combination of the released counters (Honaker 2015),
//! online in `O(levels)` a step (windows in `O(1)`: two running sums of the leaves' top-down
//! estimates); the stated std is that estimate's exact one. Window sums run whole blocks a
//! level at a time in bulk (`KarySum::run_block`), the same operations as one step at a
//! time. Running sums
//! and forests release every node, the last child of a parent included (a running sum's
//! input is in one node per level either way; a forest of `L` levels pays `L` levels, not the
//! decayed reach): the parent's estimate then combines its own counter with its children's.
//! A forest's top level is an unbounded run of nodes without a parent. Exponential sums keep
//! the tree above as well (`forest: None`): without the last children no counter has a
//! complete subtree below it, and the plain sums are already the optimal ones.
//!
//! Noise: [`KeyedNoise`], one id per node in completion order (bottom up at each step,
//! released or not), drawn in batches of consecutive ids: the online path (`push`) and
//! `bulk` run the same loop, so they agree bit for bit.

use super::gauss::{CounterNoise, Draws, KeyedGauss, overlapped};
use super::model::{
    CalibrationReport, DecayedSum, ModelParams, Public, Zcdp, check_bound, laplace_guarantee,
    window_truth, zcdp_guarantee,
};
use super::noise::KeyedNoise;
use kinsey_core::{Error, Result, check_epsilon};
use std::sync::Arc;

mod calib;
pub(crate) mod honaker;
mod window;
pub(crate) use calib::spread as spread_steps;
pub use calib::{
    ARITIES, Kind, POWERS, Tree, best_choice, best_gaussian_arity, level_loads, load_at,
    mean_variance,
};
use calib::{LOAD_SAMPLES, MAX_ARITY, l2_reach, shape_levels, weighted_reach, weights_of};
pub(crate) use calib::{least_variance, prefix_sensitivity};

/// A k-ary tree mechanism (see the module's documentation).
#[derive(Debug, Clone)]
pub struct KarySum {
    kind: Kind,
    k: u64,
    /// Levels with nodes (0 = single steps).
    levels: u32,
    /// Per level: its noise (stream `1 + level`, counter = the node's index at its level).
    noise: Vec<CounterNoise>,
    /// The zCDP budget of Gaussian noise (`None`: discrete Laplace, pure DP).
    zcdp: Option<Zcdp>,
    /// Per level: the privacy weight `u_l` (at most 1; the noise scale is `S / (eps u_l)`).
    weights: Vec<f64>,
    /// The exponent the weights were chosen with (0: uniform).
    power: f64,
    bound: f64,
    epsilon: f64,
    sensitivity: f64,
    /// `alpha^(k^l)` per level (1 without decay).
    span_pow: Vec<f64>,
    /// True value of the node forming at each level (its completed children).
    acc: Vec<f64>,
    /// Prefix trees: per level, the decayed sum of the released nodes inside the forming
    /// parent.
    open: Vec<f64>,
    /// Prefix trees: the estimate, `open`'s sum as a running total.
    total: f64,
    /// Prefix trees of exponential sums: the step each level's `open` value is as of.
    stamp: Vec<u64>,
    /// Window trees: the optimal estimates of the nodes of the last two blocks (from their
    /// subtrees), per block parity and level.
    blocks: [Vec<Vec<f64>>; 2],
    /// Window trees: per block parity, the running sums of the leaves' optimal estimates
    /// from the block's start (`leaves[c][i]`: leaves `0 .. i`), filled for each top-level
    /// node as it completes (every window's left end lies in a complete top-level node).
    leaves: [Vec<f64>; 2],
    /// Window trees: per level, the sum of the estimates of the completed children of the
    /// node forming there (its `combine` input).
    kids: Vec<f64>,
    /// Window trees: the top-down estimates of one top-level node's subtree, a level at a
    /// time (scratch).
    down: Vec<f64>,
    /// Window trees: the nodes per level in a block (`block / k^l`).
    level_len: Vec<u64>,
    /// Exponential sums: the top level is an unbounded run of nodes (no parent).
    forest: bool,
    /// The optimal estimates' levels (`None`: the plain sums of an exponential tree).
    best: Option<honaker::Levels>,
    t: u64,
    /// Per level, the draws of the current chunk (shared, not copied, by a window sum's
    /// parallel segments).
    draws: Arc<Vec<Draws>>,
    /// The next chunk's draws per level, drawn while this chunk steps.
    ahead: Vec<Draws>,
    /// Tests: every released counter's level, index and true value.
    #[cfg(test)]
    record: Option<Vec<(usize, u64, f64)>>,
    /// Tests: every released counter's level, index and noisy value.
    #[cfg(test)]
    heard: Option<Vec<(usize, u64, f64)>>,
}

impl KarySum {
    /// The mechanism for `kind` with arity `k` (2 to 256) and the same noise on every
    /// level.
    pub fn new(kind: Kind, k: u32, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        Self::weighted(kind, k, 0.0, epsilon, bound, key)
    }

    /// The mechanism for `kind` with arity `k` and level weights `u_l = (c_l / max c)^power`
    /// (floored), `c_l` the mean load of level `l` ([`level_loads`]): levels that estimates
    /// lean on less get more noise. `power = 0`: the same noise on every level.
    pub fn weighted(
        kind: Kind,
        k: u32,
        power: f64,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
    ) -> Result<Self> {
        let tree = Tree {
            k,
            power,
            forest: None,
        };
        Self::shaped(kind, tree, epsilon, bound, key)
    }

    /// The mechanism for `kind` in the shape `tree` (arity, level weights and, for
    /// exponential sums, a forest of that many levels with every node released).
    pub fn shaped(kind: Kind, tree: Tree, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        let Tree { k, power, forest } = tree;
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if !(2..=MAX_ARITY).contains(&k) {
            return Err(Error::param(
                "arity",
                format!("a tree has 2 to {MAX_ARITY} children per node, got {k}"),
            ));
        }
        if !(power.is_finite() && (0.0..=1.0).contains(&power)) {
            return Err(Error::param("power", "the weights' exponent is in [0, 1]"));
        }
        let k64 = u64::from(k);
        let levels = shape_levels(kind, k64, forest)?;
        let loads = if power == 0.0 {
            vec![1.0; levels as usize]
        } else {
            level_loads(kind, k64, levels, forest.is_some(), LOAD_SAMPLES)
        };
        let weights = weights_of(&loads, power, epsilon);
        // A forest releases every node: an input is in one per level, undecayed at worst.
        let reach = if forest.is_some() {
            weights.iter().sum()
        } else {
            weighted_reach(kind, k64, &weights)
        };
        let sensitivity = bound * reach;
        // One grid for every level; level l is calibrated at eps u_l against the weighted
        // sensitivity, with the rounding of every level a node touches counted once per
        // unit of weight (see the module's documentation).
        let grid = KeyedNoise::grid_for(sensitivity, epsilon);
        let touched = weights.iter().sum::<f64>().ceil().max(1.0) as u32;
        let noise = weights
            .iter()
            .enumerate()
            .map(|(l, &u)| {
                KeyedNoise::on_grid(key, 1 + l as u64, sensitivity, touched, epsilon * u, grid)
                    .map(CounterNoise::Laplace)
            })
            .collect::<Result<Vec<_>>>()?;
        let alpha = match kind {
            Kind::Exponential { alpha, .. } => alpha,
            _ => 1.0,
        };
        let mut span_pow = Vec::with_capacity(levels as usize);
        let mut p = alpha;
        for _ in 0..levels {
            span_pow.push(p);
            p = p.powi(k as i32);
        }
        let mut m = Self {
            kind,
            k: k64,
            levels,
            noise,
            zcdp: None,
            weights,
            power,
            bound,
            epsilon,
            sensitivity,
            span_pow,
            acc: vec![0.0; levels as usize + 1],
            open: vec![0.0; levels as usize],
            total: 0.0,
            stamp: vec![0; levels as usize],
            blocks: [Vec::new(), Vec::new()],
            leaves: [Vec::new(), Vec::new()],
            kids: vec![0.0; levels as usize],
            down: Vec::new(),
            forest: forest.is_some(),
            best: None,
            level_len: (0..levels)
                .map(|l| k64.checked_pow(levels - l).unwrap_or(0))
                .collect(),
            t: 0,
            draws: Arc::new(vec![Draws::default(); levels as usize]),
            ahead: Vec::new(),
            #[cfg(test)]
            record: None,
            #[cfg(test)]
            heard: None,
        };
        m.set_estimator();
        Ok(m)
    }

    /// The optimal estimator's levels for the noise as it is now.
    fn set_estimator(&mut self) {
        let optimal = !matches!(self.kind, Kind::Exponential { .. }) || self.forest;
        self.best = optimal.then(|| {
            let var: Vec<f64> = self.noise.iter().map(|n| n.std_dev().powi(2)).collect();
            honaker::Levels::new(&var, self.k, self.alpha())
        });
    }

    /// The tree for `kind` with arity `k` and exact discrete Gaussian noise, the same on
    /// every level: `rho`-zCDP for the counters' L2 sensitivity `B sqrt(l2_reach)` (one
    /// released node per level, weight `alpha^gap`), each input's rounding counted over the
    /// `levels` counters it touches ([`KeyedGauss`]). `k = 2` is the Gaussian binary tree,
    /// the zCDP family's baseline.
    pub fn gaussian(kind: Kind, k: u32, z: Zcdp, bound: f64, key: [u8; 32]) -> Result<Self> {
        let tree = Tree {
            k,
            power: 0.0,
            forest: None,
        };
        Self::gaussian_shaped(kind, tree, z, bound, key)
    }

    /// The Gaussian tree in the shape `tree` (its level weights are not used: the same
    /// noise on every level); a forest's L2 sensitivity is `B sqrt(L)`.
    pub fn gaussian_shaped(
        kind: Kind,
        tree: Tree,
        z: Zcdp,
        bound: f64,
        key: [u8; 32],
    ) -> Result<Self> {
        z.check()?;
        // The tree's shape at any epsilon; its Laplace noise is replaced below.
        let tree = Tree { power: 0.0, ..tree };
        let mut m = Self::shaped(kind, tree, 1.0, bound, key)?;
        let reach = if m.forest {
            f64::from(m.levels)
        } else {
            l2_reach(kind, m.k, m.levels)
        };
        let l2 = bound * reach.sqrt();
        let touched = u64::from(m.levels);
        m.noise = (0..m.levels)
            .map(|l| {
                KeyedGauss::new(key, 1 + u64::from(l), l2, touched, z.rho).map(CounterNoise::Gauss)
            })
            .collect::<Result<_>>()?;
        m.sensitivity = l2;
        m.epsilon = z.epsilon;
        m.zcdp = Some(z);
        m.set_estimator();
        Ok(m)
    }

    fn alpha(&self) -> f64 {
        match self.kind {
            Kind::Exponential { alpha, .. } => alpha,
            _ => 1.0,
        }
    }

    fn block(&self) -> u64 {
        self.k.pow(self.levels)
    }

    /// One released node (level `l`, index `m` at its level): its noisy value.
    #[inline]
    fn release(&mut self, v: f64, l: usize, m: u64) -> Result<f64> {
        #[cfg(test)]
        if let Some(r) = &mut self.record {
            r.push((l, m, v));
        }
        let noise = &self.noise[l];
        let z = match self.draws[l].peek(m) {
            Some(z) => z,
            // Not drawn yet (online steps, or a chunk's end): a new batch from `m`, in a
            // copy of its own if a segment shares the draws (the same values: a draw is a
            // function of its counter).
            None => Arc::make_mut(&mut self.draws)[l].get(|at, z| noise.fill(at, z), m)?,
        };
        let y = self.noise[l].release(v, z);
        #[cfg(test)]
        if let Some(r) = &mut self.heard {
            r.push((l, m, y));
        }
        Ok(y)
    }

    /// Prefix trees: step `t` with value `x`; the estimate.
    fn step_prefix(&mut self, x: f64) -> Result<f64> {
        let alpha = self.alpha();
        let t = self.t;
        // The estimate, the sum of `open`, is kept as a running total: the released levels'
        // changes are added to it. Exponential sums decay lazily: level `l` holds its value
        // as of step `stamp[l]`, read as `open[l] alpha^(t - stamp[l])`, and the total
        // decays by `alpha` a step (the same sum: every level decays alike). Values below
        // 1e-250 are dropped (they would crawl through the subnormals, a hundred times
        // slower, for no visible digit).
        let mut total = self.total;
        if alpha != 1.0 {
            total *= alpha;
            if total.abs() < 1e-250 {
                total = 0.0;
            }
        }
        let read = |open: &[f64], stamp: &[u64], l: usize| -> f64 {
            if alpha == 1.0 {
                return open[l];
            }
            let v = open[l] * pow_u64(alpha, t - stamp[l]);
            if v.abs() < 1e-250 { 0.0 } else { v }
        };
        let (k, top) = (self.k, self.levels - 1);
        let (mut v, mut l, mut idx) = (x, 0u32, self.t);
        // Digits by masks and shifts for a power-of-two arity (the binary trees).
        let (pow2, sh) = (k.is_power_of_two(), k.trailing_zeros());
        // The decayed sum of the estimates of the children of the node being formed.
        let mut kids = 0.0;
        loop {
            let li = l as usize;
            let digit = if pow2 { idx & (k - 1) } else { idx % k };
            let last = digit == k - 1 && !(self.forest && l == top);
            if !last || self.best.is_some() {
                // Released: every node with optimal estimates, else all but last children.
                let noisy = self.release(v, li, idx)?;
                let z = match &self.best {
                    Some(b) => b.combine(li, noisy, kids),
                    None => noisy,
                };
                if !last {
                    self.open[li] = read(&self.open, &self.stamp, li) + z;
                    self.stamp[li] = t;
                    total += z;
                    self.acc[li + 1] = self.acc[li + 1] * self.span_pow[li] + v;
                    break;
                }
                kids = read(&self.open, &self.stamp, li) + z;
            }
            if l == top {
                // Beyond the declared horizon (refused before) or 2^62 steps.
                return Err(Error::param(
                    "horizon",
                    "the stream is longer than the tree's horizon",
                ));
            }
            v += self.acc[li + 1] * self.span_pow[li];
            self.acc[li + 1] = 0.0;
            total -= read(&self.open, &self.stamp, li);
            self.open[li] = 0.0;
            self.stamp[li] = t;
            l += 1;
            idx = if pow2 { idx >> sh } else { idx / k };
        }
        self.total = total;
        Ok(total)
    }

    /// One step in, the estimate out.
    fn step(&mut self, x: f64) -> Result<f64> {
        if let Kind::Running { horizon }
        | Kind::Exponential {
            horizon: Some(horizon),
            ..
        } = self.kind
            && self.t >= horizon
        {
            return Err(Error::param(
                "horizon",
                format!("the stream is longer than the declared horizon of {horizon} steps"),
            ));
        }
        let out = match self.kind {
            Kind::Window { w } => self.step_window(x, w)?,
            _ => self.step_prefix(x)?,
        };
        self.t += 1;
        Ok(out)
    }

    /// Standard deviation of the estimate at step `j` (public: parameters and `j` only).
    pub fn std_at(&self, j: u64) -> f64 {
        let top = self.levels as usize - 1;
        if let (Kind::Window { w }, Some(best)) = (self.kind, &self.best) {
            return honaker::window_var(best, self.k, top, w, j).sqrt();
        }
        let var: Vec<f64> = match &self.best {
            Some(best) => best.var.clone(),
            None => self.noise.iter().map(|n| n.std_dev().powi(2)).collect(),
        };
        let loads = load_at(self.kind, self.k, self.levels, self.forest, j);
        loads
            .iter()
            .zip(&var)
            .map(|(c, v)| c * v)
            .sum::<f64>()
            .sqrt()
    }
}

/// Which decayed sum `model` is, with its parameters.
pub(crate) fn kind_of(model: &str, p: &ModelParams) -> Result<Kind> {
    Ok(match model {
        "running" => Kind::Running {
            horizon: p.need(model, "horizon", &p.horizon)?,
        },
        "exponential" => Kind::Exponential {
            alpha: p.need(model, "alpha", &p.alpha)?,
            horizon: p.horizon,
        },
        "window" => Kind::Window {
            w: p.need(model, "window", &p.window)?,
        },
        other => {
            return Err(Error::param(
                "mechanism",
                format!(
                    "the k-ary tree computes running, exponential and window sums, not \
                     '{other}' (use --mechanism tree)"
                ),
            ));
        }
    })
}

/// The steps a choice between mechanisms averages over: the horizon when known (the series'
/// public length), else 2^20.
pub(crate) fn public_steps(p: &ModelParams) -> u64 {
    p.horizon.unwrap_or(1 << 20)
}

/// `--mechanism kary` for `model`: `--arity`, or the arity with the least stated error.
pub(crate) fn build(model: &str, p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let kind = kind_of(model, p)?;
    let tree = best_choice(kind, p.arity, c.epsilon, c.bound)?;
    Ok(Box::new(KarySum::shaped(
        kind, tree, c.epsilon, c.bound, c.key,
    )?))
}

impl DecayedSum for KarySum {
    fn calibration(&self) -> CalibrationReport {
        let what = match self.kind {
            Kind::Running { horizon } => format!("running (horizon {horizon})"),
            Kind::Exponential { alpha, .. } => format!("exponential (alpha = {alpha})"),
            Kind::Window { w } => format!("window (W = {w})"),
        };
        let weights = if self.zcdp.is_some() {
            "the same discrete Gaussian noise on every level".to_string()
        } else if self.power == 0.0 {
            "the same noise on every level".to_string()
        } else {
            format!(
                "level weights (mean load)^{:.3}: {:?}",
                self.power,
                self.weights
                    .iter()
                    .map(|u| (u * 1e4).round() / 1e4)
                    .collect::<Vec<_>>()
            )
        };
        let shape = if self.forest {
            format!(
                "{}-ary forest of {} levels (every node released), optimal estimates",
                self.k, self.levels
            )
        } else if self.best.is_some() {
            format!("{}-ary tree, optimal estimates", self.k)
        } else {
            format!("{}-ary tree", self.k)
        };
        CalibrationReport {
            model: format!("{what}, {shape}, {weights}"),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.levels,
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
        if self.zcdp.is_some() {
            return super::model::zcdp_no_gpu(device);
        }
        match device {
            kinsey_kernels::DevicePref::Gpu => Err(Error::param(
                "device",
                "the k-ary tree has no GPU path (its noise is drawn on every CPU thread); use \
                 --device cpu or auto, or --mechanism tree",
            )),
            _ => Ok(None),
        }
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        out[0] = self.step(x)?;
        Ok(())
    }

    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        // Every level's draws for the chunk in one fill each (the keystream of a long chunk
        // then runs on every thread; the counters are the same as one at a time), or drawn
        // already while the chunk before stepped.
        let (t0, n) = (self.t, chunk.len() as u64);
        let mut ahead = std::mem::take(&mut self.ahead);
        ahead.resize(self.draws.len(), Draws::default());
        let ranges = self.level_ranges(t0, n);
        let draws = Arc::make_mut(&mut self.draws);
        for (l, (first, count)) in ranges.into_iter().enumerate() {
            let noise = &self.noise[l];
            draws[l].take_or_draw(&mut ahead[l], |at, z| noise.fill(at, z), first, count)?;
        }
        let col = super::model::one_column(out, chunk.len());
        if let Kind::Window { .. } = self.kind {
            self.ahead = ahead;
            return self.window_blocks(chunk, col);
        }
        // Running and exponential sums step in order on this thread while the next chunk's
        // counters are drawn on the others (a counter's draw depends on its id alone).
        let next = self.level_ranges(t0 + n, n);
        let noise = self.noise.clone();
        let horizon = match self.kind {
            Kind::Running { horizon }
            | Kind::Exponential {
                horizon: Some(horizon),
                ..
            } => horizon,
            _ => u64::MAX,
        };
        let steps = || -> Result<()> {
            for (o, &x) in col.iter_mut().zip(chunk) {
                *o = self.step(x)?;
            }
            Ok(())
        };
        let draw_next = || -> Result<Vec<Draws>> {
            if t0 + n < horizon {
                for ((d, &(first, count)), noise) in ahead.iter_mut().zip(&next).zip(&noise) {
                    d.ensure(|at, z| noise.fill(at, z), first, count)?;
                }
            }
            Ok(ahead)
        };
        let (done, ahead) = overlapped(steps, draw_next);
        self.ahead = ahead?;
        done
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![match self.kind {
            Kind::Window { w } => window_truth(xs, w),
            _ => super::model::decayed_truth(xs, self.alpha()),
        }]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.reset();
        Box::new(m)
    }

    fn guarantee(&self) -> kinsey_dp::release::Guarantee {
        match self.zcdp {
            Some(z) => zcdp_guarantee(&self.calibration(), z, "the tree's released counters"),
            None => laplace_guarantee(&self.calibration(), "k-ary tree counters", "counters"),
        }
    }
}

/// `alpha^n` by squaring (`log2 n` products; the levels read in a step are mostly the
/// lowest, whose `n` is a step or two).
#[inline]
fn pow_u64(alpha: f64, mut n: u64) -> f64 {
    let (mut result, mut base) = (1.0f64, alpha);
    while n > 0 {
        if n & 1 == 1 {
            result *= base;
        }
        base *= base;
        n >>= 1;
    }
    result
}

impl KarySum {
    /// Per level, the counters `(first, count)` that steps `t0 .. t0 + n` use (the node
    /// being formed at the end included; at most 2^26 a level).
    fn level_ranges(&self, t0: u64, n: u64) -> Vec<(u64, u64)> {
        let t1 = t0 + n;
        let mut span = 1u64;
        (0..self.levels as usize)
            .map(|_| {
                let (first, last) = (t0 / span, t1 / span);
                span = span.saturating_mul(self.k);
                if last > first {
                    (first, (last - first + 1).min(1 << 26))
                } else {
                    (first, 0)
                }
            })
            .collect()
    }

    /// Back to step 0 (same key and parameters).
    fn reset(&mut self) {
        self.acc.iter_mut().for_each(|v| *v = 0.0);
        self.open.iter_mut().for_each(|v| *v = 0.0);
        self.kids.iter_mut().for_each(|v| *v = 0.0);
        self.total = 0.0;
        self.stamp.iter_mut().for_each(|s| *s = 0);
        self.t = 0;
    }
}

#[cfg(test)]
mod tests;

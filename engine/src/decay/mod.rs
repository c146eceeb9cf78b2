//! Decayed sums under continual observation (seed 004, `../shared/docs/decayed-sums.md`):
//! after every step `j` of a stream of bounded non-negative values `x_i <= B`, a private
//! estimate of `F(j) = sum_{i <= j} g(j - i) x_i`, eps-DP for the whole output sequence with
//! respect to changing one `x_i`.
//!
//! Every mechanism keeps noisy counters on the nodes of a dyadic forest ([`Forest`]): a node
//! (level `k`, index `m`) covers steps `[m 2^k, (m + 1) 2^k - 1]`; nodes are numbered in the
//! order they complete (at each step, the levels that close, bottom up), which is also their
//! noise id ([`noise::KeyedNoise`]). The online path (`push` one value, get the estimate) and
//! the bulk path (`bulk`, whole series, parallel and in chunks) run the same code on the
//! same numbers, so under one key they agree bit for bit.
//!
//! Mechanisms and their sensitivities (derived here, checked in the tests):
//! * [`WindowSum`] (`g = 1` on the last `W` steps): blocks of `W' = 2^h >= W` steps, a tree of
//!   `h + 1` levels per block. Each `x_i` lies in exactly one node per level, so the counters
//!   have L1 sensitivity `(h + 1) B`; a window is at most two partial blocks, at most `2h`
//!   nodes, so the error is `O(h^1.5 B / eps)` whatever `j` is.
//! * [`ExponentialSum`] (`g(i) = alpha^i`): one unbounded tree; a left node `[l, u]` holds
//!   `sum alpha^(u - i) x_i` and a prefix `[0, j]` is the left nodes of `j + 1`'s binary digits.
//!   `x_i` is in at most one left node per level and its `k`-th left ancestor (k = 1, 2, ...)
//!   ends at `u_k >= i + 2^(k - 1) - 1` (seed Assertion 2), so the L1 sensitivity is at most
//!   `B sum_k alpha^(2^(k-1) - 1)`, summed numerically to convergence (the seed's closed-form
//!   bound is looser). Right nodes are never released and get no noise.
//! * [`RunningSum`] (`g = 1`): the binary mechanism (Chan, Shi, Song 2011): exponential with
//!   `alpha = 1` over a declared horizon `T`, `ceil(log2 T) + 1` levels, sensitivity
//!   `(ceil(log2 T) + 1) B`.

pub mod noise;

use crate::error::{Error, Result, check_epsilon};
use noise::KeyedNoise;
use rayon::prelude::*;
use serde::Serialize;

/// The nodes completing at one step, bottom up, with their true values.
#[derive(Debug, Clone)]
struct Forest {
    /// Highest level (nodes above are not formed).
    h: u32,
    /// True value of the left child waiting for its sibling, per level.
    pending: Vec<f64>,
    /// Weight of a left child when merged with its right sibling, per child level.
    left_weight: Vec<f64>,
}

impl Forest {
    fn new(h: u32, alpha: f64) -> Self {
        let mut left_weight = Vec::with_capacity(h as usize + 1);
        let mut a = alpha;
        for _ in 0..=h {
            left_weight.push(a); // alpha^(2^k): the right sibling of a level-k node has 2^k steps
            a *= a;
        }
        Self {
            h,
            pending: vec![0.0; h as usize + 1],
            left_weight,
        }
    }

    /// Step `t` with value `x`: calls `emit(k, m, true value)` for every node that completes.
    #[inline]
    fn step(&mut self, t: u64, x: f64, mut emit: impl FnMut(u32, u64, f64)) {
        let mut v = x;
        let mut k = 0u32;
        loop {
            let m = t >> k;
            emit(k, m, v);
            if k == self.h {
                break;
            }
            if m & 1 == 0 {
                self.pending[k as usize] = v;
                break;
            }
            let w = self.left_weight[k as usize];
            v = if w == 1.0 {
                self.pending[k as usize] + v
            } else {
                w * self.pending[k as usize] + v
            };
            k += 1;
        }
    }
}

/// Number of nodes (levels `0..=h`) that complete before step `t`: the noise id of the
/// first node completing at `t`.
pub fn first_id(t: u64, h: u32) -> u64 {
    (0..=h.min(63)).map(|j| t >> j).sum()
}

/// Released values of the recent nodes, per level.
#[derive(Debug, Clone, Default)]
struct Releases {
    /// Per level: index of the first kept node, and the kept values.
    levels: Vec<(u64, std::collections::VecDeque<f64>)>,
}

impl Releases {
    fn new(h: u32) -> Self {
        Self {
            levels: (0..=h)
                .map(|_| (0, std::collections::VecDeque::new()))
                .collect(),
        }
    }

    fn push(&mut self, k: u32, m: u64, v: f64) {
        let (base, q) = &mut self.levels[k as usize];
        if q.is_empty() {
            *base = m;
        }
        debug_assert_eq!(*base + q.len() as u64, m);
        q.push_back(v);
    }

    #[inline]
    fn get(&self, k: u32, m: u64) -> f64 {
        let (base, q) = &self.levels[k as usize];
        q[(m - base) as usize]
    }

    /// Drop nodes that end before step `keep_from`.
    fn prune(&mut self, keep_from: u64) {
        for (k, (base, q)) in self.levels.iter_mut().enumerate() {
            let first_needed = keep_from >> k;
            while *base < first_needed && !q.is_empty() {
                q.pop_front();
                *base += 1;
            }
        }
    }
}

/// Sum of the released nodes covering `[l, u]` (maximal aligned nodes of level `<= h`, left
/// to right): the one combination both paths use.
#[inline]
fn interval_sum(l: u64, u: u64, h: u32, get: impl Fn(u32, u64) -> f64) -> f64 {
    let mut s = 0.0;
    let mut at = l;
    while at <= u {
        let mut k = at.trailing_zeros().min(h);
        while k > 0 && at + (1u64 << k) - 1 > u {
            k -= 1;
        }
        s += get(k, at >> k);
        at += 1u64 << k;
    }
    s
}

fn check_bound(bound: f64) -> Result<()> {
    if bound.is_finite() && bound > 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            "bound",
            format!("per-step contribution bound must be finite and > 0, got {bound}"),
        ))
    }
}

/// What a mechanism reports about its calibration.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub model: String,
    pub epsilon: f64,
    pub bound: f64,
    pub levels: u32,
    /// L1 sensitivity of the counters.
    pub sensitivity: f64,
    /// Per-counter noise scale (after grid rounding) and standard deviation.
    pub counter_scale: f64,
    pub counter_std: f64,
}

/// The sliding-window sum of the last `W` steps.
#[derive(Debug, Clone)]
pub struct WindowSum {
    w: u64,
    h: u32,
    noise: KeyedNoise,
    bound: f64,
    epsilon: f64,
    forest: Forest,
    rel: Releases,
    t: u64,
    next_id: u64,
}

impl WindowSum {
    pub fn new(w: u64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if w < 1 {
            return Err(Error::param("window", "the window must be >= 1 step"));
        }
        let h = w.next_power_of_two().trailing_zeros();
        let noise = KeyedNoise::new(key, 0, f64::from(h + 1) * bound, h + 1, epsilon)?;
        Ok(Self {
            w,
            h,
            noise,
            bound,
            epsilon,
            forest: Forest::new(h, 1.0),
            rel: Releases::new(h),
            t: 0,
            next_id: 0,
        })
    }

    pub fn calibration(&self) -> Calibration {
        Calibration {
            model: format!("window (W = {}, blocks of {})", self.w, 1u64 << self.h),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.h + 1,
            sensitivity: f64::from(self.h + 1) * self.bound,
            counter_scale: self.noise.scale(),
            counter_std: self.noise.std_dev(),
        }
    }

    /// Standard deviation of the estimate at step `j` (sum of the independent counters used).
    pub fn std_at(&self, j: u64) -> f64 {
        let l = (j + 1).saturating_sub(self.w);
        let nodes = interval_sum(l, j, self.h, |_, _| 1.0);
        nodes.sqrt() * self.noise.std_dev()
    }

    /// Online: one step in, the estimate of the window ending here out.
    pub fn push(&mut self, x: f64) -> f64 {
        let t = self.t;
        let (noise, rel, next_id) = (&self.noise, &mut self.rel, &mut self.next_id);
        self.forest.step(t, x, |k, m, v| {
            rel.push(k, m, noise.release(v, noise.z(*next_id)));
            *next_id += 1;
        });
        let l = (t + 1).saturating_sub(self.w);
        let out = interval_sum(l, t, self.h, |k, m| self.rel.get(k, m));
        self.t += 1;
        self.rel.prune(self.t.saturating_sub(self.w));
        out
    }

    /// Bulk: the estimates for a whole series, in parallel over segments of whole blocks.
    /// Same key, same numbers as `push`, bit for bit.
    pub fn bulk(&self, xs: &[f64]) -> Vec<f64> {
        let block = 1u64 << self.h;
        let seg = block.max(1 << 14);
        let n = xs.len() as u64;
        let segments: Vec<u64> = (0..n.div_ceil(seg)).collect();
        segments
            .par_iter()
            .flat_map_iter(|&s| {
                let start = s * seg;
                let end = (start + seg).min(n);
                // The window can reach back into the previous block: rebuild it too.
                let from = start.saturating_sub(block);
                let mut forest = Forest::new(self.h, 1.0);
                let mut rel = Releases::new(self.h);
                let first = first_id(from, self.h);
                let count = (first_id(end, self.h) - first) as usize;
                let mut z = vec![0i64; count];
                self.noise.fill(first, &mut z);
                let mut idx = 0usize;
                for t in from..end {
                    forest.step(t, xs[t as usize], |k, m, v| {
                        rel.push(k, m, self.noise.release(v, z[idx]));
                        idx += 1;
                    });
                }
                (start..end)
                    .map(|t| {
                        let l = (t + 1).saturating_sub(self.w);
                        interval_sum(l, t, self.h, |k, m| rel.get(k, m))
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// Exponentially decayed sums `sum alpha^(j - i) x_i` (and, with `alpha = 1` over a declared
/// horizon, the binary mechanism for running sums).
#[derive(Debug, Clone)]
pub struct ExponentialSum {
    alpha: f64,
    h: u32,
    noise: KeyedNoise,
    bound: f64,
    epsilon: f64,
    sensitivity: f64,
    forest: Forest,
    /// Latest released left node per level.
    last_left: Vec<f64>,
    /// alpha^(2^k).
    pow: Vec<f64>,
    t: u64,
    next_id: u64,
    horizon: Option<u64>,
}

/// `sum_k alpha^(2^(k-1) - 1)` over `levels` levels (all of them while terms matter).
pub fn exponential_sensitivity(alpha: f64, levels: u32) -> f64 {
    let mut s = 0.0;
    for k in 1..=levels {
        let e = (2f64).powi(k as i32 - 1) - 1.0;
        let term = alpha.powf(e);
        s += term;
        if term < 1e-18 * s {
            break;
        }
    }
    s
}

impl ExponentialSum {
    pub fn new(alpha: f64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(Error::param(
                "alpha",
                format!("the decay must be in (0, 1), got {alpha}"),
            ));
        }
        Self::build(alpha, 62, None, epsilon, bound, key)
    }

    /// The binary mechanism over at most `horizon` steps.
    pub fn running(horizon: u64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        if horizon < 1 {
            return Err(Error::param("horizon", "must be >= 1 step"));
        }
        let h = horizon.next_power_of_two().trailing_zeros();
        Self::build(1.0, h, Some(horizon), epsilon, bound, key)
    }

    fn build(
        alpha: f64,
        h: u32,
        horizon: Option<u64>,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        let levels = h + 1;
        let sensitivity = bound * exponential_sensitivity(alpha, levels);
        let noise = KeyedNoise::new(key, 1, sensitivity, levels, epsilon)?;
        let forest = Forest::new(h, alpha);
        let pow = forest.left_weight.clone();
        Ok(Self {
            alpha,
            h,
            noise,
            bound,
            epsilon,
            sensitivity,
            forest,
            last_left: vec![0.0; levels as usize],
            pow,
            t: 0,
            next_id: 0,
            horizon,
        })
    }

    pub fn calibration(&self) -> Calibration {
        Calibration {
            model: match self.horizon {
                Some(t) => format!("running (binary mechanism, horizon {t})"),
                None => format!("exponential (alpha = {})", self.alpha),
            },
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.h + 1,
            sensitivity: self.sensitivity,
            counter_scale: self.noise.scale(),
            counter_std: self.noise.std_dev(),
        }
    }

    /// Standard deviation of the estimate at step `j`.
    pub fn std_at(&self, j: u64) -> f64 {
        // Left nodes of j + 1's binary digits, each weighted by alpha^(j - u).
        let mut var = 0.0;
        let mut end = j + 1; // exclusive end of the remaining prefix
        for k in 0..=self.h {
            if (j + 1) >> k & 1 == 1 {
                let dist = (j + 1) - end;
                var += self.alpha.powf(2.0 * dist as f64);
                end -= 1 << k;
            }
        }
        var.sqrt() * self.noise.std_dev()
    }

    #[inline]
    fn output(&self, t: u64) -> f64 {
        let n = t + 1;
        let mut acc = 0.0;
        for k in (0..=self.h).rev() {
            if n >> k & 1 == 1 {
                acc = acc * self.pow[k as usize] + self.last_left[k as usize];
            }
        }
        acc
    }

    fn take(&mut self, t: u64, x: f64, z: &mut impl FnMut(u64) -> i64) -> Result<f64> {
        if self.horizon.is_some_and(|hz| t >= hz) {
            return Err(Error::param(
                "horizon",
                format!("the stream is longer than the declared horizon of {t} steps"),
            ));
        }
        let (noise, last, next_id) = (&self.noise, &mut self.last_left, &mut self.next_id);
        self.forest.step(t, x, |k, m, v| {
            if m & 1 == 0 {
                last[k as usize] = noise.release(v, z(*next_id));
            }
            *next_id += 1;
        });
        Ok(self.output(t))
    }

    /// Online: one step in, the decayed sum up to here out.
    pub fn push(&mut self, x: f64) -> Result<f64> {
        let t = self.t;
        let noise = self.noise.clone();
        let out = self.take(t, x, &mut |id| noise.z(id))?;
        self.t += 1;
        Ok(out)
    }

    /// Bulk: sequential over the series (one pass, noise drawn in keystream order), same
    /// numbers as `push`.
    pub fn bulk(&self, xs: &[f64]) -> Result<Vec<f64>> {
        let mut me = self.clone();
        let mut out = Vec::with_capacity(xs.len());
        let chunk = 1usize << 16;
        let mut z = Vec::new();
        for (c, part) in xs.chunks(chunk).enumerate() {
            let start = me.t;
            let first = first_id(start, me.h);
            let count = (first_id(start + part.len() as u64, me.h) - first) as usize;
            z.resize(count, 0);
            me.noise.fill(first, &mut z);
            let _ = c;
            for (i, &x) in part.iter().enumerate() {
                let t = start + i as u64;
                let zz = &z;
                out.push(me.take(t, x, &mut |id| zz[(id - first) as usize])?);
            }
            me.t = start + part.len() as u64;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;

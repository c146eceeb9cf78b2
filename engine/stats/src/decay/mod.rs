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

pub mod evaluate;

pub mod noise;

use kinsey_core::{Error, Result, check_epsilon};
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

/// Released values of one segment's nodes, per level, from the segment's first step.
#[derive(Default)]
struct Flat {
    levels: Vec<(u64, Vec<f64>)>,
}

impl Flat {
    /// Empty levels `0..=h` starting at step `from`, keeping their allocations.
    fn reset(&mut self, h: u32, from: u64) {
        self.levels.resize_with(h as usize + 1, Default::default);
        for (k, (base, v)) in self.levels.iter_mut().enumerate() {
            *base = from >> k;
            v.clear();
        }
    }

    #[inline]
    fn push(&mut self, k: u32, v: f64) {
        self.levels[k as usize].1.push(v);
    }

    #[inline]
    fn get(&self, k: u32, m: u64) -> f64 {
        let (base, v) = &self.levels[k as usize];
        v[(m - base) as usize]
    }
}

/// Prefix and suffix sums of one block's canonical decompositions. Steps at or after
/// `stop` are not formed yet; their entries are left at zero and never read.
fn block_sums(rel: &Flat, h: u32, start: u64, stop: u64, pre: &mut [f64], suf: &mut [f64]) {
    let wp = pre.len();
    let n = ((stop.saturating_sub(start)) as usize).min(wp);
    for o in 0..n {
        let size = 1usize << (o + 1).trailing_zeros();
        let k = size.trailing_zeros();
        let node = rel.get(k, (start + (o + 1 - size) as u64) >> k);
        pre[o] = if o + 1 == size {
            node
        } else {
            pre[o - size] + node
        };
    }
    if n == wp {
        for o in (0..wp).rev() {
            let size = if o == 0 {
                wp
            } else {
                1usize << o.trailing_zeros()
            };
            let k = size.trailing_zeros().min(h);
            let node = rel.get(k, (start + o as u64) >> k);
            suf[o] = if o + size == wp {
                node
            } else {
                node + suf[o + size]
            };
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
        // The largest aligned node starting at `at` that fits in [at, u] and the forest.
        let fits = 63 - (u - at + 1).leading_zeros();
        let k = at.trailing_zeros().min(h).min(fits);
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
    /// Every sum of releases is exact (bulk may reorder additions).
    exact_sums: bool,
    bound: f64,
    epsilon: f64,
    forest: Forest,
    rel: Releases,
    t: u64,
    next_id: u64,
}

impl WindowSum {
    pub fn new(w: u64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        Self::with_stream(w, epsilon, bound, key, 0)
    }

    /// An instance with its own noise stream (several instances under one key).
    pub fn with_stream(
        w: u64,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
        stream: u64,
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if w < 1 {
            return Err(Error::param("window", "the window must be >= 1 step"));
        }
        let h = w.next_power_of_two().trailing_zeros();
        // Every release is a grid multiple and every sum the bulk path forms (at most 4(h + 1)
        // releases, each at most W' B plus noise) is exact, so online and bulk may add the
        // same nodes in different orders and still agree bit for bit.
        let exact = KeyedNoise::new_exact(
            key,
            stream,
            f64::from(h + 1) * bound,
            h + 1,
            epsilon,
            (1u64 << h) as f64 * bound,
            4 * (h + 1),
        )?;
        let fine = KeyedNoise::new(key, stream, f64::from(h + 1) * bound, h + 1, epsilon)?;
        // Exact sums need a grid within 2^52 of the largest sum; when the noise is so much
        // larger than the sensitivity that this grid would inflate the scale, keep the fine
        // grid and let bulk add the nodes in the online order instead.
        let exact_sums = exact.scale() <= fine.scale() * (1.0 + 1e-6);
        let noise = if exact_sums { exact } else { fine };
        Ok(Self {
            w,
            h,
            noise,
            exact_sums,
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
        self.bulk_offset(xs, 0, 0)
    }

    /// Bulk over a series too long for memory: `chunks` yields consecutive pieces, `sink`
    /// gets the estimates of each piece. Memory is one chunk plus two blocks.
    pub fn stream<E>(
        &self,
        chunks: impl Iterator<Item = std::result::Result<Vec<f64>, E>>,
        mut sink: impl FnMut(&[f64]) -> std::result::Result<(), E>,
    ) -> std::result::Result<u64, E> {
        let block = 1u64 << self.h;
        let mut history: Vec<f64> = Vec::new();
        let mut base = 0u64; // step of history[0], a multiple of the block
        for chunk in chunks {
            let chunk = chunk?;
            let start = base + history.len() as u64;
            history.extend_from_slice(&chunk);
            let out = self.bulk_offset(&history, base, start);
            sink(&out)?;
            let end = base + history.len() as u64;
            let keep = (end / block).saturating_sub(1) * block;
            history.drain(..(keep - base) as usize);
            base = keep;
        }
        Ok(base + history.len() as u64)
    }

    /// `xs[i]` is step `base + i` (`base` a multiple of the block); the estimates for steps
    /// `out_from .. base + xs.len()`.
    fn bulk_offset(&self, xs: &[f64], base: u64, out_from: u64) -> Vec<f64> {
        let block = 1u64 << self.h;
        let seg = block.max(1 << 15);
        let end = base + xs.len() as u64;
        let mut out = vec![0.0; (end - out_from) as usize];
        // Segments are aligned to `seg` in step numbers; the first may start late.
        let first_len = ((out_from / seg + 1) * seg).min(end) - out_from;
        let (head, tail) = out.split_at_mut(first_len as usize);
        let mut pieces: Vec<(u64, &mut [f64])> = vec![(out_from, head)];
        let mut at = out_from + first_len;
        for c in tail.chunks_mut(seg as usize) {
            let len = c.len() as u64;
            pieces.push((at, c));
            at += len;
        }
        pieces
            .into_par_iter()
            .for_each_init(Scratch::default, |sc, (start, dst)| {
                self.segment(xs, base, start, start + dst.len() as u64, dst, sc);
            });
        out
    }

    /// Estimates for steps `start..stop` into `dst`, rebuilding the blocks they need.
    fn segment(
        &self,
        xs: &[f64],
        base: u64,
        start: u64,
        stop: u64,
        dst: &mut [f64],
        sc: &mut Scratch,
    ) {
        let block = 1u64 << self.h;
        // The window can reach back into the previous block: rebuild it too.
        let from = ((start / block) * block).saturating_sub(block).max(base);
        let mut forest = Forest::new(self.h, 1.0);
        sc.rel.reset(self.h, from);
        let first = first_id(from, self.h);
        let count = (first_id(stop, self.h) - first) as usize;
        sc.z.clear();
        sc.z.resize(count, 0);
        self.noise.fill(first, &mut sc.z);
        let (rel, z) = (&mut sc.rel, &sc.z);
        let mut idx = 0usize;
        for t in from..stop {
            forest.step(t, xs[(t - base) as usize], |k, _m, v| {
                rel.push(k, self.noise.release(v, z[idx]));
                idx += 1;
            });
        }
        // Per block: prefix sums Pre[o] (nodes of [start, start + o]) and suffix sums
        // Suf[o] (nodes of [start + o, end]), one addition per step each. All releases
        // are grid multiples and these sums are exact, so they equal `interval_sum`.
        let wp = block as usize;
        let b0 = from / block;
        let nb = (stop.div_ceil(block) - b0) as usize;
        sc.pre.resize(nb * wp, 0.0);
        sc.suf.resize(nb * wp, 0.0);
        for i in 0..nb {
            let sb = (b0 + i as u64) * block;
            block_sums(
                &sc.rel,
                self.h,
                sb,
                stop,
                &mut sc.pre[i * wp..(i + 1) * wp],
                &mut sc.suf[i * wp..(i + 1) * wp],
            );
        }
        let (rel, pre_all, suf_all) = (&sc.rel, &sc.pre, &sc.suf);
        for (d, t) in dst.iter_mut().zip(start..stop) {
            let b = t / block;
            let sb = b * block;
            let i = (b - b0) as usize;
            let pre = &pre_all[i * wp..(i + 1) * wp];
            let o = (t - sb) as usize;
            let l = (t + 1).saturating_sub(self.w);
            *d = if sb + block > stop || !self.exact_sums {
                // A block the segment ends inside: no suffix sums yet.
                interval_sum(l, t, self.h, |k, m| rel.get(k, m))
            } else if l == sb {
                pre[o]
            } else if l < sb {
                suf_all[(i - 1) * wp + (l - (sb - block)) as usize] + pre[o]
            } else {
                let suf = &suf_all[i * wp..(i + 1) * wp];
                let p = 63 - (l ^ (t + 1)).leading_zeros();
                let c = ((t + 1) >> p) << p;
                let lo = (l - sb) as usize;
                let co = (c - sb) as usize;
                let right = pre[o] - if co > 0 { pre[co - 1] } else { 0.0 };
                let left = suf[lo] - if co < wp { suf[co] } else { 0.0 };
                left + right
            };
        }
    }
}

/// Per-thread buffers reused across segments (no page faults per segment).
#[derive(Default)]
struct Scratch {
    z: Vec<i64>,
    rel: Flat,
    pre: Vec<f64>,
    suf: Vec<f64>,
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

    /// Step `t`; `z(noise, id)` gives counter `id`'s draw, asked for released (left) nodes only.
    fn take(&mut self, t: u64, x: f64, z: &mut impl FnMut(&KeyedNoise, u64) -> i64) -> Result<f64> {
        if let Some(hz) = self.horizon.filter(|&hz| t >= hz) {
            return Err(Error::param(
                "horizon",
                format!("the stream is longer than the declared horizon of {hz} steps"),
            ));
        }
        let (noise, last, next_id) = (&self.noise, &mut self.last_left, &mut self.next_id);
        self.forest.step(t, x, |k, m, v| {
            if m & 1 == 0 {
                last[k as usize] = noise.release(v, z(noise, *next_id));
            }
            *next_id += 1;
        });
        Ok(self.output(t))
    }

    /// Online: one step in, the decayed sum up to here out.
    pub fn push(&mut self, x: f64) -> Result<f64> {
        let t = self.t;
        let out = self.take(t, x, &mut |noise, id| noise.z(id))?;
        self.t += 1;
        Ok(out)
    }

    /// Bulk: sequential over the series (one pass, noise drawn in keystream order), same
    /// numbers as `push`.
    pub fn bulk(&self, xs: &[f64]) -> Result<Vec<f64>> {
        self.clone().bulk_continue(xs)
    }

    /// Bulk from the current state on (streaming: call it chunk after chunk).
    /// The keystream is read in order, but only the left nodes' words become draws (the
    /// right nodes, half the ids, are never released).
    pub fn bulk_continue(&mut self, xs: &[f64]) -> Result<Vec<f64>> {
        let mut out = Vec::with_capacity(xs.len());
        let mut words = Vec::new();
        for part in xs.chunks(1 << 16) {
            let start = self.t;
            let first = first_id(start, self.h);
            let count = (first_id(start + part.len() as u64, self.h) - first) as usize;
            words.resize(count, [0u64; 2]);
            self.noise.words(first, &mut words);
            for (i, &x) in part.iter().enumerate() {
                let w = &words;
                let mut z = |n: &KeyedNoise, id: u64| n.draw(id, w[(id - first) as usize]);
                out.push(self.take(start + i as u64, x, &mut z)?);
            }
            self.t = start + part.len() as u64;
        }
        Ok(out)
    }
}

/// Riemann zeta `sum_{n >= 1} n^-s` for `s > 1` (partial sum plus Euler-Maclaurin tail).
pub fn zeta(s: f64) -> f64 {
    // The tail correction leaves an error of order n^(-s-3): below 1e-11 for s > 1.
    let n = 1_000u32;
    let partial: f64 = (1..=n).map(|k| f64::from(k).powf(-s)).sum();
    let nf = f64::from(n);
    partial + nf.powf(1.0 - s) / (s - 1.0) - 0.5 * nf.powf(-s) + s / 12.0 * nf.powf(-s - 1.0)
}

/// Window sums for several window sizes at once from one tree: level `k` (0-based) gets
/// `eps_k = eps / (zeta(delta) (k + 1)^delta)`, so the levels together spend at most
/// `sum_k eps_k = eps` however many levels and windows are used. Each `x_i` lies in one node
/// per level (L1 sensitivity `B` per level), so level `k`'s counters get `Lap(B / eps_k)`. A
/// window of size `W` uses the nodes of levels `<= ceil(log2 W)` covering it.
#[derive(Debug, Clone)]
pub struct AllWindowSum {
    windows: Vec<u64>,
    hs: Vec<u32>,
    h: u32,
    delta: f64,
    levels: Vec<KeyedNoise>,
    bound: f64,
    epsilon: f64,
    forest: Forest,
    rel: Releases,
    t: u64,
    next_id: u64,
}

impl AllWindowSum {
    pub fn new(
        windows: &[u64],
        epsilon: f64,
        bound: f64,
        delta: f64,
        key: [u8; 32],
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if windows.is_empty() || windows.contains(&0) {
            return Err(Error::param(
                "windows",
                "list one or more window sizes, each >= 1 step",
            ));
        }
        if !(delta > 1.0 && delta.is_finite()) {
            return Err(Error::param(
                "delta",
                format!("the level exponent must be > 1, got {delta}"),
            ));
        }
        let hs: Vec<u32> = windows
            .iter()
            .map(|w| w.next_power_of_two().trailing_zeros())
            .collect();
        let h = hs.iter().copied().max().unwrap_or(0);
        let z = zeta(delta);
        let levels = (0..=h)
            .map(|k| {
                let eps_k = epsilon / (z * f64::from(k + 1).powf(delta));
                KeyedNoise::new_exact(
                    key,
                    5,
                    bound,
                    1,
                    eps_k,
                    (1u64 << h) as f64 * bound,
                    4 * (h + 1),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            windows: windows.to_vec(),
            hs,
            h,
            delta,
            levels,
            bound,
            epsilon,
            forest: Forest::new(h, 1.0),
            rel: Releases::new(h),
            t: 0,
            next_id: 0,
        })
    }

    pub fn windows(&self) -> &[u64] {
        &self.windows
    }

    pub fn calibration(&self) -> Calibration {
        Calibration {
            model: format!(
                "all windows (W = {:?}, delta = {}, levels 0..={})",
                self.windows, self.delta, self.h
            ),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.h + 1,
            sensitivity: self.bound,
            counter_scale: self.levels[0].scale(),
            counter_std: self.levels[0].std_dev(),
        }
    }

    /// Standard deviation of window `i`'s estimate at step `j`.
    pub fn std_at(&self, i: usize, j: u64) -> f64 {
        let l = (j + 1).saturating_sub(self.windows[i]);
        interval_sum(l, j, self.hs[i], |k, _| {
            self.levels[k as usize].std_dev().powi(2)
        })
        .sqrt()
    }

    /// Online: one step in, one estimate per window out.
    pub fn push(&mut self, x: f64) -> Vec<f64> {
        let t = self.t;
        let (levels, rel, next_id) = (&self.levels, &mut self.rel, &mut self.next_id);
        self.forest.step(t, x, |k, m, v| {
            let n = &levels[k as usize];
            rel.push(k, m, n.release(v, n.z(*next_id)));
            *next_id += 1;
        });
        let out = self
            .windows
            .iter()
            .zip(&self.hs)
            .map(|(&w, &h)| {
                let l = (t + 1).saturating_sub(w);
                interval_sum(l, t, h, |k, m| self.rel.get(k, m))
            })
            .collect();
        self.t += 1;
        let wmax = self.windows.iter().copied().max().unwrap_or(1);
        self.rel.prune(self.t.saturating_sub(wmax));
        out
    }

    /// Bulk: per window, all estimates; parallel over segments; same numbers as `push`.
    pub fn bulk(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        let block = 1u64 << self.h;
        let seg = block.max(1 << 15);
        let n = xs.len() as u64;
        let parts: Vec<Vec<Vec<f64>>> = (0..n.div_ceil(seg))
            .into_par_iter()
            .map(|s| {
                let start = s * seg;
                let stop = (start + seg).min(n);
                let from = ((start / block) * block).saturating_sub(block);
                let mut forest = Forest::new(self.h, 1.0);
                let mut rel = Flat::default();
                rel.reset(self.h, from);
                let first = first_id(from, self.h);
                let mut words = vec![[0u64; 2]; (first_id(stop, self.h) - first) as usize];
                self.levels[0].words(first, &mut words);
                let mut idx = 0usize;
                for t in from..stop {
                    forest.step(t, xs[t as usize], |k, _m, v| {
                        let nz = &self.levels[k as usize];
                        let id = first + idx as u64;
                        rel.push(k, nz.release(v, nz.draw(id, words[idx])));
                        idx += 1;
                    });
                }
                self.windows
                    .iter()
                    .zip(&self.hs)
                    .map(|(&w, &h)| {
                        (start..stop)
                            .map(|t| {
                                let l = (t + 1).saturating_sub(w);
                                interval_sum(l, t, h, |k, m| rel.get(k, m))
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        (0..self.windows.len())
            .map(|i| parts.iter().flat_map(|p| p[i].iter().copied()).collect())
            .collect()
    }
}

/// Polynomially decayed sums `F(k) = sum_i (k - i + 1)^-c x_i`, approximated within a factor
/// `1 - beta` (the seed's bicriteria guarantee). Lags are cut at `b(j) = max{i : (i + 1)^-c >=
/// (1 - beta)^j}`; on the lags `(b(j-1), b(j)]` the decay is replaced by `(1 - beta)^j`, so
/// `(1 - beta) g <= g' <= g`, and `F'(k) = x_k + sum_j (1 - beta)^j WS_j(k - b(j-1) - 1)`, where
/// `WS_j` is the window sum of width `W_j = b(j) - b(j-1)`. Each `WS_j` is a [`WindowSum`]
/// over the weighted stream `w_j x` (bound `w_j B`) with its own noise stream and budget
/// `eps_j = eps w_j (h_j + 1) / S`, `S = sum_j w_j (h_j + 1)`: the budgets add up to eps
/// (sequential composition), and every instance's counters get the same noise scale
/// `S B / eps`, as the seed prescribes. Instances start
/// once the stream is longer than their smallest lag; `S` sums over all instances (the
/// series converges), so the calibration does not depend on the stream length. Online the
/// estimate needs the last `b(j)` steps of each instance: memory grows with the largest lag
/// in use, which is the nature of heavy-tailed decay.
#[derive(Debug, Clone)]
pub struct PolynomialSum {
    c: f64,
    beta: f64,
    epsilon: f64,
    bound: f64,
    /// (width, weight, lag offset b(j-1) + 1, instance) for j >= 1 with W_j >= 1; lag 0 first.
    parts: Vec<(u64, f64, u64, WindowSum)>,
    total: f64,
    /// Online: the recent outputs of each instance, newest last.
    recent: Vec<std::collections::VecDeque<f64>>,
}

/// `b(j)` for the polynomial decay `(i + 1)^-c` and step `1 - beta`.
fn poly_cut(c: f64, beta: f64, j: u32) -> u64 {
    let x = (1.0 - beta).powf(-f64::from(j) / c);
    (x.floor() as u64).saturating_sub(1)
}

impl PolynomialSum {
    /// `max_len`: the longest stream this instance will see (instances whose smallest lag is
    /// beyond it are not built; the calibration includes them anyway).
    pub fn new(
        c: f64,
        beta: f64,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
        max_len: u64,
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if !(c > 1.0 && c.is_finite()) {
            return Err(Error::param(
                "c",
                format!("the decay exponent must be > 1, got {c}"),
            ));
        }
        if !(beta > 0.0 && beta < 1.0) {
            return Err(Error::param(
                "beta",
                format!("beta must be in (0, 1), got {beta}"),
            ));
        }
        // (width, weight, offset) for lag 0 and every nonempty (b(j-1), b(j)].
        let mut specs: Vec<(u64, f64, u64)> = vec![(1, 1.0, 0)];
        let mut total = 1.0; // lag 0: window 1, h = 0
        let mut prev = 0u64;
        for j in 1..20_000u32 {
            let b = poly_cut(c, beta, j);
            let w = (1.0 - beta).powi(j as i32);
            if b > prev {
                let width = b - prev;
                let h = width.next_power_of_two().trailing_zeros();
                total += w * f64::from(h + 1);
                if prev < max_len {
                    specs.push((width, w, prev + 1));
                }
                prev = b;
            }
            if w * 64.0 < 1e-17 * total {
                break;
            }
        }
        let parts = specs
            .into_iter()
            .enumerate()
            .map(|(i, (width, w, off))| {
                let h = width.next_power_of_two().trailing_zeros();
                let eps_j = epsilon * w * f64::from(h + 1) / total;
                WindowSum::with_stream(width, eps_j, w * bound, key, 100 + i as u64)
                    .map(|ws| (width, w, off, ws))
            })
            .collect::<Result<Vec<_>>>()?;
        let n = parts.len();
        Ok(Self {
            c,
            beta,
            epsilon,
            bound,
            parts,
            total,
            recent: vec![std::collections::VecDeque::new(); n],
        })
    }

    pub fn calibration(&self) -> Calibration {
        Calibration {
            model: format!(
                "polynomial (c = {}, beta = {}, {} window instances)",
                self.c,
                self.beta,
                self.parts.len()
            ),
            epsilon: self.epsilon,
            bound: self.bound,
            levels: self.parts.len() as u32,
            sensitivity: self.total * self.bound,
            counter_scale: self.total * self.bound / self.epsilon,
            counter_std: std::f64::consts::SQRT_2 * self.total * self.bound / self.epsilon,
        }
    }

    /// Standard deviation of the estimate at step `j`.
    pub fn std_at(&self, j: u64) -> f64 {
        self.parts
            .iter()
            .filter(|(_, _, off, _)| *off <= j)
            .map(|(_, _, off, ws)| ws.std_at(j - off).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// Online: one step in, the estimate out.
    pub fn push(&mut self, x: f64) -> f64 {
        let mut out = 0.0;
        for ((_, w, off, ws), q) in self.parts.iter_mut().zip(&mut self.recent) {
            q.push_back(ws.push(*w * x));
            // The instance's output `off` steps ago (its window ends `off` steps back).
            if q.len() as u64 > *off {
                out += q[q.len() - 1 - *off as usize];
            }
            while q.len() as u64 > *off + 1 {
                q.pop_front();
            }
        }
        out
    }

    /// Bulk: every instance in bulk (each parallel inside), added into the result one
    /// instance after another, in the same order as `push`: memory stays at two series.
    pub fn bulk(&self, xs: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; xs.len()];
        for (_, w, off, ws) in &self.parts {
            let off = *off as usize;
            if off >= xs.len() {
                continue;
            }
            let weighted: Vec<f64> = xs[..xs.len() - off].par_iter().map(|x| *w * x).collect();
            let o = ws.bulk(&weighted);
            out[off..]
                .par_iter_mut()
                .zip(o.par_iter())
                .for_each(|(r, v)| *r += v);
        }
        out
    }

    /// The approximated decayed sums `F'` (what the mechanism estimates without bias), exact.
    pub fn approx_truth(&self, xs: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; xs.len()];
        for (width, w, off, _) in &self.parts {
            let off = *off as usize;
            if off >= xs.len() {
                continue;
            }
            let t = window_truth(&xs[..xs.len() - off], *width);
            for (r, v) in out[off..].iter_mut().zip(&t) {
                *r += *w * v;
            }
        }
        out
    }
}

/// Baseline: each window sum released with its own Laplace noise. One step is in `W`
/// outputs, so the output vector has L1 sensitivity `W B` and every output gets
/// `Lap(W B / eps)`: error `O(W / eps)`.
#[derive(Debug, Clone)]
pub struct LaplaceWindow {
    w: u64,
    noise: KeyedNoise,
    bound: f64,
    epsilon: f64,
}

impl LaplaceWindow {
    pub fn new(w: u64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        check_bound(bound)?;
        if w < 1 {
            return Err(Error::param("window", "the window must be >= 1 step"));
        }
        let touched = u32::try_from(w).unwrap_or(u32::MAX);
        let noise = KeyedNoise::new(key, 2, w as f64 * bound, touched, epsilon)?;
        Ok(Self {
            w,
            noise,
            bound,
            epsilon,
        })
    }

    /// All estimates; the true window sums are exact running differences of integers.
    pub fn run(&self, xs: &[f64]) -> Vec<f64> {
        let truth = window_truth(xs, self.w);
        let mut z = vec![0i64; xs.len()];
        self.noise.fill(0, &mut z);
        truth
            .iter()
            .zip(&z)
            .map(|(v, &z)| self.noise.release(*v, z))
            .collect()
    }
}

/// Baseline for bits: randomized response. Each bit is flipped with probability
/// `p = 1 / (1 + e^eps)` (eps-DP per step, and a step is in one report), debiased as
/// `(y - p) / (1 - 2p)`, and the window sums of the debiased values are released.
#[derive(Debug, Clone)]
pub struct RandomizedResponse {
    w: u64,
    p: f64,
    key: [u8; 32],
    epsilon: f64,
}

impl RandomizedResponse {
    pub fn new(w: u64, epsilon: f64, key: [u8; 32]) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        if w < 1 {
            return Err(Error::param("window", "the window must be >= 1 step"));
        }
        Ok(Self {
            w,
            p: 1.0 / (1.0 + epsilon.exp()),
            key,
            epsilon,
        })
    }

    pub fn run(&self, xs: &[f64]) -> Result<Vec<f64>> {
        if let Some(i) = xs.iter().position(|&x| x != 0.0 && x != 1.0) {
            return Err(Error::param(
                "model",
                format!("randomized response needs bits; step {i} is {}", xs[i]),
            ));
        }
        use rand_chacha::ChaCha20Rng;
        use rand_core::{RngCore, SeedableRng};
        let mut r = ChaCha20Rng::from_seed(self.key);
        r.set_stream(3);
        let threshold = (self.p * (1u64 << 53) as f64) as u64;
        let debiased: Vec<f64> = xs
            .iter()
            .map(|&x| {
                let flip = (r.next_u64() >> 11) < threshold;
                let y = if flip { 1.0 - x } else { x };
                (y - self.p) / (1.0 - 2.0 * self.p)
            })
            .collect();
        Ok(window_truth(&debiased, self.w))
    }

    pub fn std_at(&self, j: u64) -> f64 {
        let n = (j + 1).min(self.w) as f64;
        (n * self.p * (1.0 - self.p)).sqrt() / (1.0 - 2.0 * self.p)
    }
}

/// Exact window sums by a running difference (evaluation and baselines only).
fn window_truth(xs: &[f64], w: u64) -> Vec<f64> {
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

/// A configured mechanism, for the CLI and benchmarks.
#[derive(Debug, Clone)]
pub enum Mechanism {
    Window(WindowSum),
    Exponential(ExponentialSum),
    Laplace(LaplaceWindow),
    Rr(RandomizedResponse),
    AllWindow(AllWindowSum),
    Polynomial(PolynomialSum),
}

impl Mechanism {
    /// Build `model` ("window", "exponential", "running") from its parameters.
    pub fn build(
        model: &str,
        window: Option<u64>,
        alpha: Option<f64>,
        horizon: Option<u64>,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
    ) -> Result<Self> {
        Self::build_with(
            model, window, None, alpha, None, horizon, epsilon, bound, key,
        )
    }

    /// [`build`](Self::build) with a list of windows (model `allwindow`).
    #[allow(clippy::too_many_arguments)]
    pub fn build_with(
        model: &str,
        window: Option<u64>,
        windows: Option<Vec<u64>>,
        alpha: Option<f64>,
        poly: Option<(f64, f64)>,
        horizon: Option<u64>,
        epsilon: f64,
        bound: f64,
        key: [u8; 32],
    ) -> Result<Self> {
        let need = |what: &str| Error::param(what, format!("model '{model}' needs --{what}"));
        match model {
            "window" => Ok(Self::Window(WindowSum::new(
                window.ok_or_else(|| need("window"))?,
                epsilon,
                bound,
                key,
            )?)),
            "exponential" => Ok(Self::Exponential(ExponentialSum::new(
                alpha.ok_or_else(|| need("alpha"))?,
                epsilon,
                bound,
                key,
            )?)),
            "running" => Ok(Self::Exponential(ExponentialSum::running(
                horizon.ok_or_else(|| need("horizon"))?,
                epsilon,
                bound,
                key,
            )?)),
            "polynomial" => {
                let (c, beta) = poly.ok_or_else(|| need("c and --beta"))?;
                Ok(Self::Polynomial(PolynomialSum::new(
                    c,
                    beta,
                    epsilon,
                    bound,
                    key,
                    horizon.ok_or_else(|| need("horizon"))?,
                )?))
            }
            "allwindow" => Ok(Self::AllWindow(AllWindowSum::new(
                &windows.ok_or_else(|| need("windows"))?,
                epsilon,
                bound,
                2.0,
                key,
            )?)),
            "laplace" => Ok(Self::Laplace(LaplaceWindow::new(
                window.ok_or_else(|| need("window"))?,
                epsilon,
                bound,
                key,
            )?)),
            "rr" => Ok(Self::Rr(RandomizedResponse::new(
                window.ok_or_else(|| need("window"))?,
                epsilon,
                key,
            )?)),
            other => Err(Error::param(
                "model",
                format!("unknown model '{other}' (window, exponential, running, laplace or rr)"),
            )),
        }
    }

    pub fn calibration(&self) -> Calibration {
        match self {
            Self::Window(m) => m.calibration(),
            Self::Exponential(m) => m.calibration(),
            Self::Laplace(m) => Calibration {
                model: format!("per-output Laplace baseline (W = {})", m.w),
                epsilon: m.epsilon,
                bound: m.bound,
                levels: 1,
                sensitivity: m.w as f64 * m.bound,
                counter_scale: m.noise.scale(),
                counter_std: m.noise.std_dev(),
            },
            Self::AllWindow(m) => m.calibration(),
            Self::Polynomial(m) => m.calibration(),
            Self::Rr(m) => Calibration {
                model: format!("randomized response baseline (W = {})", m.w),
                epsilon: m.epsilon,
                bound: 1.0,
                levels: 1,
                sensitivity: 1.0,
                counter_scale: 0.0,
                counter_std: m.std_at(0),
            },
        }
    }

    pub fn std_at(&self, j: u64) -> f64 {
        match self {
            Self::Window(m) => m.std_at(j),
            Self::Exponential(m) => m.std_at(j),
            Self::Laplace(m) => m.noise.std_dev(),
            Self::Rr(m) => m.std_at(j),
            Self::AllWindow(m) => m.std_at(0, j),
            Self::Polynomial(m) => m.std_at(j),
        }
    }

    /// Output column names: one per window for `allwindow`, else `estimate`.
    pub fn columns(&self) -> Vec<String> {
        match self {
            Self::AllWindow(m) => m.windows().iter().map(|w| format!("window_{w}")).collect(),
            _ => vec!["estimate".into()],
        }
    }

    /// Every output column, by the bulk or the online path (the same numbers).
    pub fn run(&self, xs: &[f64], online: bool) -> Result<Vec<Vec<f64>>> {
        match (self, online) {
            (Self::AllWindow(m), false) => Ok(m.bulk(xs)),
            (Self::AllWindow(m), true) => {
                let mut m = m.clone();
                let rows: Vec<Vec<f64>> = xs.iter().map(|&x| m.push(x)).collect();
                Ok((0..m.windows().len())
                    .map(|i| rows.iter().map(|r| r[i]).collect())
                    .collect())
            }
            (_, false) => Ok(vec![self.bulk(xs)?]),
            (_, true) => Ok(vec![self.online(xs)?]),
        }
    }

    /// True values per column (evaluation only).
    pub fn truth_columns(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        match self {
            Self::AllWindow(m) => m.windows().iter().map(|&w| window_truth(xs, w)).collect(),
            _ => vec![self.truth(xs)],
        }
    }

    /// Standard deviation of column `col` at step `j`.
    pub fn std_at_col(&self, col: usize, j: u64) -> f64 {
        match self {
            Self::AllWindow(m) => m.std_at(col, j),
            _ => self.std_at(j),
        }
    }

    /// All estimates, bulk path.
    pub fn bulk(&self, xs: &[f64]) -> Result<Vec<f64>> {
        match self {
            Self::Window(m) => Ok(m.bulk(xs)),
            Self::Exponential(m) => m.bulk(xs),
            Self::Laplace(m) => Ok(m.run(xs)),
            Self::Rr(m) => m.run(xs),
            Self::AllWindow(m) => Ok(m.bulk(xs).swap_remove(0)),
            Self::Polynomial(m) => Ok(m.bulk(xs)),
        }
    }

    /// All estimates, one step at a time (the online path; same numbers).
    pub fn online(&self, xs: &[f64]) -> Result<Vec<f64>> {
        match self {
            Self::Window(m) => {
                let mut m = m.clone();
                Ok(xs.iter().map(|&x| m.push(x)).collect())
            }
            Self::Exponential(m) => {
                let mut m = m.clone();
                xs.iter().map(|&x| m.push(x)).collect()
            }
            // The baselines release each step from its own keyed draw: one path.
            Self::Laplace(_) | Self::Rr(_) => self.bulk(xs),
            Self::AllWindow(m) => {
                let mut m = m.clone();
                Ok(xs.iter().map(|&x| m.push(x)[0]).collect())
            }
            Self::Polynomial(m) => {
                let mut m = m.clone();
                Ok(xs.iter().map(|&x| m.push(x)).collect())
            }
        }
    }

    /// The true decayed sums (evaluation only; never part of a private output).
    pub fn truth(&self, xs: &[f64]) -> Vec<f64> {
        match self {
            Self::Window(WindowSum { w, .. })
            | Self::Laplace(LaplaceWindow { w, .. })
            | Self::Rr(RandomizedResponse { w, .. }) => window_truth(xs, *w),
            Self::AllWindow(m) => window_truth(xs, m.windows()[0]),
            // The (1 - beta)-approximation F' the mechanism estimates without bias.
            Self::Polynomial(m) => m.approx_truth(xs),
            Self::Exponential(m) => {
                let mut s = 0.0;
                xs.iter()
                    .map(|&x| {
                        s = m.alpha * s + x;
                        s
                    })
                    .collect()
            }
        }
    }
}

/// Throughput of the bulk path on a generated stream of `steps` values in `{0, 1, 2, 3}`.
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    pub model: String,
    pub steps: u64,
    pub seconds: f64,
    pub steps_per_second: f64,
    pub peak_rss_mib: f64,
    pub threads: usize,
    /// Time generating the input (not included in `seconds`).
    pub generate_seconds: f64,
}

/// Peak resident memory of this process (Linux), MiB.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `kinsey bench decay`: the bulk path over a generated stream, chunk by chunk.
pub fn bench(
    model: &str,
    steps: u64,
    window: u64,
    alpha: f64,
    chunk: usize,
) -> Result<BenchResult> {
    let m = Mechanism::build(
        model,
        Some(window),
        Some(alpha),
        Some(steps),
        1.0,
        3.0,
        noise::key(None, "bench"),
    )?;
    let mut gen_s = 0.0;
    let mut done = 0u64;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let shift = if model == "rr" { 63 } else { 62 }; // bits for randomized response
    let mut next_chunk = |len: usize| -> Vec<f64> {
        let t = std::time::Instant::now();
        let v: Vec<f64> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> shift) as f64
            })
            .collect();
        gen_s += t.elapsed().as_secs_f64();
        v
    };
    let t = std::time::Instant::now();
    let mut checksum = 0.0;
    match &m {
        Mechanism::Window(w) => {
            let chunks = std::iter::from_fn(|| {
                (done < steps).then(|| {
                    let len = (steps - done).min(chunk as u64) as usize;
                    done += len as u64;
                    Ok::<_, Error>(next_chunk(len))
                })
            });
            w.stream(chunks, |o| {
                checksum += o.last().copied().unwrap_or(0.0);
                Ok(())
            })?;
        }
        Mechanism::Laplace(_)
        | Mechanism::Rr(_)
        | Mechanism::AllWindow(_)
        | Mechanism::Polynomial(_) => {
            while done < steps {
                let len = (steps - done).min(chunk as u64) as usize;
                let out = m.bulk(&next_chunk(len))?;
                checksum += out.last().copied().unwrap_or(0.0);
                done += len as u64;
            }
        }
        Mechanism::Exponential(e) => {
            let mut e = e.clone();
            while done < steps {
                let len = (steps - done).min(chunk as u64) as usize;
                let xs = next_chunk(len);
                let out = e.bulk_continue(&xs)?;
                checksum += out.last().copied().unwrap_or(0.0);
                done += len as u64;
            }
        }
    }
    let seconds = t.elapsed().as_secs_f64() - gen_s;
    std::hint::black_box(checksum);
    Ok(BenchResult {
        model: m.calibration().model,
        steps,
        seconds,
        steps_per_second: steps as f64 / seconds,
        peak_rss_mib: peak_rss_mib(),
        threads: rayon::current_num_threads(),
        generate_seconds: gen_s,
    })
}

#[cfg(test)]
mod tests;

//! Exponentially decayed sums, and the binary mechanism for running sums (alpha = 1 over
//! a declared horizon).

use super::model::{CalibrationReport, DecayedSum, ModelParams, Public, check_bound};
use super::noise::{Batch, KeyedNoise};
use super::tree::{Forest, first_id};
use kinsey_core::{Error, Result, check_epsilon};
use kinsey_kernels::window::gpu::{GpuWindow, PendingSums};
use kinsey_kernels::window::running::RunningChunk;
use rayon::prelude::*;

/// Steps per GPU pass of the segments (whole segments; small in tests, so
/// that a test stream crosses several).
const GPU_STEPS: usize = if cfg!(test) { 1 << 14 } else { 1 << 21 };

/// Exponentially decayed sums `sum alpha^(j - i) x_i` (and, with `alpha = 1` over a declared
/// horizon, the binary mechanism for running sums).
#[derive(Debug, Clone)]
pub struct ExponentialSum {
    pub(super) alpha: f64,
    pub(super) h: u32,
    pub(super) noise: KeyedNoise,
    pub(super) bound: f64,
    pub(super) epsilon: f64,
    pub(super) sensitivity: f64,
    pub(super) forest: Forest,
    /// Latest released left node per level.
    pub(super) last_left: Vec<f64>,
    /// alpha^(2^k).
    pub(super) pow: Vec<f64>,
    pub(super) t: u64,
    pub(super) next_id: u64,
    pub(super) horizon: Option<u64>,
    /// Bulk runs aligned segments of `2^seg_bits` steps in parallel.
    pub(super) seg_bits: u32,
    /// The segments on the GPU (with the noise there).
    pub(super) sums_gpu: Option<GpuWindow>,
}

/// `sum_k alpha^(2^(k-1) - 1)` over `levels` levels (all of them while terms matter): the
/// k-ary trees' prefix sensitivity at `k = 2`, the same numbers.
pub(crate) fn exponential_sensitivity(alpha: f64, levels: u32) -> f64 {
    super::kary::prefix_sensitivity(alpha, 2, levels)
}

impl ExponentialSum {
    /// Decay `alpha` in (0, 1) per step.
    pub fn new(alpha: f64, epsilon: f64, bound: f64, key: [u8; 32]) -> Result<Self> {
        super::model::check_alpha(alpha)?;
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
            // Small in tests, so that test streams have many segments.
            seg_bits: if cfg!(test) { 12 } else { 16 },
            sums_gpu: None,
        })
    }

    pub(crate) fn calibration(&self) -> CalibrationReport {
        CalibrationReport {
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
            rho: None,
        }
    }

    /// Standard deviation of the estimate at step `j`.
    pub(crate) fn std_at(&self, j: u64) -> f64 {
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
        output(&self.pow, &self.last_left, self.h, t)
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
    pub(crate) fn advance(&mut self, x: f64) -> Result<f64> {
        let t = self.t;
        let out = self.take(t, x, &mut |noise, id| noise.z(id))?;
        self.t += 1;
        Ok(out)
    }

    /// Bulk: sequential over the series (one pass, noise drawn in keystream order), same
    /// numbers as `push`.
    pub(crate) fn bulk_series(&self, xs: &[f64]) -> Result<Vec<f64>> {
        let mut out = vec![0.0; xs.len()];
        self.clone().bulk_continue(xs, &mut out)?;
        Ok(out)
    }

    /// Bulk from the current state on (streaming: call it chunk after chunk): the whole
    /// aligned segments of `2^seg_bits` steps in parallel ([`segments`](Self::segments)),
    /// the ragged ends in order. Same numbers as `push`.
    pub(crate) fn bulk_continue(&mut self, xs: &[f64], out: &mut [f64]) -> Result<()> {
        let (t0, end) = (self.t, self.t + xs.len() as u64);
        if let Some(hz) = self.horizon.filter(|&hz| end > hz) {
            return Err(Error::param(
                "horizon",
                format!("the stream is longer than the declared horizon of {hz} steps"),
            ));
        }
        let seg = 1u64 << self.seg_bits;
        let (a, b) = (t0.div_ceil(seg) * seg, (end / seg) * seg);
        if out.len() != xs.len() {
            return Err(Error::Numerical(format!(
                "exponential: {} outputs for {} steps",
                out.len(),
                xs.len()
            )));
        }
        if self.seg_bits >= self.h || b < a + 2 * seg {
            return self.sequential(xs, out);
        }
        let (head, rest) = xs.split_at((a - t0) as usize);
        let (mid, tail) = rest.split_at((b - a) as usize);
        let (out_head, out_rest) = out.split_at_mut(head.len());
        let (out_mid, out_tail) = out_rest.split_at_mut(mid.len());
        self.sequential(head, out_head)?;
        self.segments(mid, out_mid)?;
        self.sequential(tail, out_tail)
    }

    /// In order, one step after the other. The keystream is read in order, but only the
    /// left nodes' words become draws (the right nodes, half the ids, are never released).
    fn sequential(&mut self, xs: &[f64], out: &mut [f64]) -> Result<()> {
        let mut batch = Batch::default();
        for (part, dst) in xs.chunks(1 << 16).zip(out.chunks_mut(1 << 16)) {
            let start = self.t;
            let first = first_id(start, self.h);
            let count = (first_id(start + part.len() as u64, self.h) - first) as usize;
            self.noise.refill(&mut batch, first, count)?;
            for (i, (&x, d)) in part.iter().zip(dst.iter_mut()).enumerate() {
                let b = &batch;
                let mut z = |n: &KeyedNoise, id: u64| n.batch_z(b, id);
                *d = self.take(start + i as u64, x, &mut z)?;
            }
            self.t = start + part.len() as u64;
        }
        Ok(())
    }

    /// Whole segments of `2^L` steps (`L = seg_bits`), the first at the current step (a
    /// multiple of `2^L`), in three passes. A segment's nodes of levels up to `L` depend only
    /// on its own steps; the levels above only on the segments' level-`L` nodes. (1) In
    /// parallel, each segment's level-`L` node. (2) In order, the levels above `L` in the
    /// global forest: their releases and the latest left nodes after each segment. (3) In
    /// parallel, each segment's levels below `L` and its outputs, the levels from `L` up
    /// taken from (2). Every node is formed and released by the operations of `push`, so
    /// the numbers are the same bit for bit.
    fn segments(&mut self, xs: &[f64], out: &mut [f64]) -> Result<()> {
        if let Some(g) = self.sums_gpu.clone() {
            return self.segments_gpu(&g, xs, out);
        }
        let (l, h, alpha, a) = (self.seg_bits, self.h, self.alpha, self.t);
        let seg = 1usize << l;
        let tops: Vec<f64> = xs
            .par_chunks(seg)
            .enumerate()
            .map(|(j, c)| {
                let mut f = Forest::new(l, alpha);
                let start = a + (j * seg) as u64;
                let mut top = 0.0;
                for (i, &x) in c.iter().enumerate() {
                    f.step(start + i as u64, x, |k, _, v| {
                        if k == l {
                            top = v;
                        }
                    });
                }
                top
            })
            .collect();
        let lu = l as usize;
        let states = self.above(a, &tops);
        let lows: Vec<Vec<f64>> = out
            .par_chunks_mut(seg)
            .zip(xs.par_chunks(seg))
            .enumerate()
            .map(|(j, (dst, c))| {
                let start = a + (j * seg) as u64;
                let mut f = Forest::new(l, alpha);
                let mut last = vec![0.0; h as usize + 1];
                last[lu..].copy_from_slice(&states[j]);
                let first = first_id(start, h);
                let count = (first_id(start + seg as u64, h) - first) as usize;
                let mut batch = Batch::default();
                self.noise.refill(&mut batch, first, count)?;
                let noise = &self.noise;
                let mut idx = 0usize;
                // Until the segment's last step, t + 1 has the digits of `start` from level
                // `l` up, and those levels' left nodes are the segment's state: their part of
                // the Horner sum is the same for every step. Below, Horner over the digits of
                // n = t + 1 is Horner over those of n' (n without its lowest digit c), which
                // is the output of step n' - 1 (no left node above c was released since),
                // then one more term: `hp[k]` keeps the latest output whose n had lowest
                // digit k. One multiply-add a step, the same operations as `output`.
                let high = horner(&self.pow, &last, start, l..=h, 0.0);
                let mut hp = [0.0f64; 64];
                for (i, (d, &x)) in dst.iter_mut().zip(c).enumerate() {
                    let t = start + i as u64;
                    f.step(t, x, |k, m, v| {
                        if k < l && m & 1 == 0 {
                            let id = first + idx as u64;
                            last[k as usize] = noise.release(v, noise.batch_z(&batch, id));
                        }
                        idx += 1;
                    });
                    *d = if i + 1 == seg {
                        last[lu..].copy_from_slice(&states[j + 1]);
                        output(&self.pow, &last, h, t)
                    } else {
                        let n = t + 1;
                        let c = n.trailing_zeros() as usize;
                        let np = n ^ (1 << c);
                        let prefix = if np == start {
                            high
                        } else {
                            hp[np.trailing_zeros() as usize]
                        };
                        hp[c] = prefix * self.pow[c] + last[c];
                        hp[c]
                    };
                }
                last.truncate(lu);
                Ok(last)
            })
            .collect::<Result<_>>()?;
        if let Some(low) = lows.last() {
            self.last_left[..lu].copy_from_slice(low);
        }
        self.t = a + xs.len() as u64;
        self.next_id = first_id(self.t, h);
        Ok(())
    }
}

impl ExponentialSum {
    /// Step (2) of [`segments`](Self::segments): the levels from `seg_bits` up over the
    /// segments from step `a` on, given each one's level-`seg_bits` node; the latest left
    /// nodes of those levels before the first segment and after each.
    fn above(&mut self, a: u64, tops: &[f64]) -> Vec<Vec<f64>> {
        let (l, h) = (self.seg_bits, self.h);
        let lu = l as usize;
        let mut states = vec![self.last_left[lu..].to_vec()];
        for (j, &v) in tops.iter().enumerate() {
            let t = a + ((j as u64 + 1) << l) - 1;
            let base = first_id(t, h);
            let (noise, last) = (&self.noise, &mut self.last_left);
            self.forest.step_from(l, t, v, |k, m, v| {
                if m & 1 == 0 {
                    last[k as usize] = noise.release(v, noise.z(base + u64::from(k)));
                }
            });
            states.push(self.last_left[lu..].to_vec());
        }
        states
    }

    /// [`segments`](Self::segments) with the GPU: per pass of up to [`GPU_STEPS`] steps,
    /// the draws and the levels below `seg_bits` on the device, the levels above on the CPU
    /// from the level-`seg_bits` nodes read back, then every step's sum on the device from
    /// its segment's start value. The same operations as the CPU path, each product
    /// rounded on its own (`kinsey_kernels::window::running`): the same bits.
    fn segments_gpu(&mut self, g: &GpuWindow, xs: &[f64], out: &mut [f64]) -> Result<()> {
        let (l, h) = (self.seg_bits, self.h);
        let lu = l as usize;
        let pow = self.pow.clone();
        // Pipelined (unless KINSEY_GPU_PIPELINE=serial): pass p + 1's draws are submitted
        // before pass p's levels are read, and pass p's sums are read (straight into their
        // slice) after pass p + 1's levels ran; the host's levels above run in order.
        let ahead_ok = !kinsey_kernels::gpu::stream::serial();
        let mut ahead = None;
        let mut pending: Option<(PendingSums, &mut [f64])> = None;
        let mut parts = xs
            .chunks(GPU_STEPS)
            .zip(out.chunks_mut(GPU_STEPS))
            .peekable();
        while let Some((part, dst)) = parts.next() {
            let a = self.t;
            let chunk = RunningChunk {
                l,
                h,
                gamma: self.noise.gamma(),
                pow: &pow,
                from: a,
                xs: part,
            };
            let drawn = match ahead.take() {
                Some(p) => Some(p),
                None => self.noise.submit_draws(first_id(a, h), chunk.draws())?,
            };
            if let (Some((next, _)), true) = (parts.peek(), ahead_ok) {
                let b = a + part.len() as u64;
                let count = (first_id(b + next.len() as u64, h) - first_id(b, h)) as usize;
                ahead = self.noise.submit_draws(first_id(b, h), count)?;
            }
            let Some(drawn) = drawn else {
                return Err(Error::Numerical(
                    "exponential: GPU sums without GPU noise".into(),
                ));
            };
            let z = self.noise.finish_draws(drawn)?;
            let lv = g.running_levels(&chunk, &z)?;
            if let Some((p, done)) = pending.take() {
                g.finish_into(p, vec![done])?;
            }
            let states = self.above(a, &lv.tops.tops);
            let mut last = vec![0.0; h as usize + 1];
            let starts: Vec<[f64; 2]> = states
                .windows(2)
                .enumerate()
                .map(|(j, w)| {
                    let start = a + ((j as u64) << l);
                    last[lu..].copy_from_slice(&w[0]);
                    let high = horner(&self.pow, &last, start, l..=h, 0.0);
                    last[lu..].copy_from_slice(&w[1]);
                    [high, output(&self.pow, &last, h, start + (1 << l) - 1)]
                })
                .collect();
            pending = Some((g.submit_running_sums(&chunk, &lv, &starts)?, dst));
            self.last_left[..lu].copy_from_slice(&lv.tops.ends);
            self.t = a + part.len() as u64;
            self.next_id = first_id(self.t, h);
        }
        if let Some((p, done)) = pending {
            g.finish_into(p, vec![done])?;
        }
        Ok(())
    }

    /// The noise on `device`, and the segments' trees and sums too where the GPU has
    /// 64-bit floats; the GPU used, in words.
    pub(crate) fn use_device(
        &mut self,
        device: kinsey_kernels::DevicePref,
    ) -> Result<Option<String>> {
        let (used, sums) = self.noise.use_device_with_sums(device)?;
        self.sums_gpu = sums;
        Ok(used)
    }
}

/// The decayed sum at step `t` from the latest left node of each level (`pow[k]` =
/// `alpha^(2^k)`): Horner over the binary digits of `t + 1`, highest first.
#[inline]
fn output(pow: &[f64], last_left: &[f64], h: u32, t: u64) -> f64 {
    horner(pow, last_left, t + 1, 0..=h, 0.0)
}

/// Horner over the set bits of `n` at `levels`, highest first, continuing from `acc`:
/// `acc = acc pow[k] + last_left[k]` for each (the same operations, in the same order, as
/// a pass over every level testing its bit).
#[inline]
fn horner(
    pow: &[f64],
    last_left: &[f64],
    n: u64,
    levels: std::ops::RangeInclusive<u32>,
    mut acc: f64,
) -> f64 {
    let (lo, hi) = (*levels.start(), (*levels.end()).min(63));
    let below_hi = if hi == 63 {
        u64::MAX
    } else {
        (1u64 << (hi + 1)) - 1
    };
    let mut bits = n & below_hi & !((1u64 << lo) - 1);
    while bits != 0 {
        let k = 63 - bits.leading_zeros();
        acc = acc * pow[k as usize] + last_left[k as usize];
        bits ^= 1u64 << k;
    }
    acc
}

/// `exponential`: needs `--alpha`.
pub(crate) fn build(p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let alpha = p.need("exponential", "alpha", &p.alpha)?;
    Ok(Box::new(ExponentialSum::new(
        alpha, c.epsilon, c.bound, c.key,
    )?))
}

/// `running`: needs `--horizon` (the CLI defaults it to the public series length).
pub(crate) fn build_running(p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let horizon = p.need("running", "horizon", &p.horizon)?;
    Ok(Box::new(ExponentialSum::running(
        horizon, c.epsilon, c.bound, c.key,
    )?))
}

impl DecayedSum for ExponentialSum {
    fn calibration(&self) -> CalibrationReport {
        ExponentialSum::calibration(self)
    }

    fn noise_std(&self, _column: usize, j: u64) -> f64 {
        self.std_at(j)
    }

    fn use_device(&mut self, device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
        ExponentialSum::use_device(self, device)
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        out[0] = self.advance(x)?;
        Ok(())
    }

    fn bulk(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        Ok(vec![self.bulk_series(xs)?])
    }

    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        self.bulk_continue(chunk, super::model::one_column(out, chunk.len()))
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![super::model::decayed_truth(xs, self.alpha)]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.forest = Forest::new(self.h, self.alpha);
        m.last_left.iter_mut().for_each(|v| *v = 0.0);
        m.t = 0;
        m.next_id = 0;
        Box::new(m)
    }
}

//! The sliding window's own square-root factorization under zCDP (`--mechanism sqrt`,
//! window sums only): the encoder is `C = A^(1/2)` for the window workload `A` itself,
//! `(1 - z^W) / (1 - z)`, which reaches the square-root lower bound of the factorization
//! norm (Henzinger, Upadhyay and Upadhyay, SODA 2024) where the damped prefix-sum factor of
//! [`super::BltSum`] stays about 9% above it.
//!
//! **Factor.** `C(z) = (1 - z)^(-1/2) (1 - z^W)^(1/2) = (1 - z^W) A_1(z) A_2(z^W)`, with `A_1`
//! and `A_2` mixtures of geometric sequences fitted to `(1 - z)^(-1/2)` (memory: the horizon)
//! and `(1 - y)^(-1/2)` in `y = z^W` (memory: the horizon over `W`), as the buffered
//! factorization's (`fit::Buffers`). `A_2(z^W)` runs on `W`-lagged state: one set
//! of buffers per residue of the step modulo `W` (`W d_2` buffers).
//!
//! **Encoder** (a block of 32 steps at a time, [`super::BltSum`]'s block form, every
//! rounding bounded). Values divided by `B` are quantised to `q` (units `2^-32`).
//! The first stage `V = A_1 (1 - z^W) q` is the block mixture on the lagged differences
//! `q_t - q_(t - W)` (exact: multiples of `2^-32` in `[-1, 1]`), its buffers at block
//! starts 64-bit integers in units `2^-48` (a buffer of such differences stays below `W`:
//! `Precision::Lagged`), within `e_1` of the exact one at every step; so
//! `|V| <= Q = L (1 + 1e-6) + e_1` for `L = sum_k |v_k|` the realised `(1 - z^W) A_1`'s
//! impulse response summed over the horizon. The lagged stage `E = A_2(z^W) V` runs the
//! same block mixture on each residue's sequence, the residues side by side (four lanes
//! wide, runs of groups on every thread), within `e_2` of the exact one for inputs below
//! `Q`. So `E` is within `D = G_2 e_1 + e_2` of the exact `C x / B` at every step
//! (`G_2 = 1 + sum |omega_i| / (1 - theta_i)` the lagged stage's L1 gain), and the rounded
//! release has integer L2 sensitivity at most `(||C e_0|| + 2 D sqrt(T)) / gamma + sqrt(T)`
//! over the horizon `T`; `T` independent discrete Gaussians calibrated to it are
//! `rho`-zCDP (CKS Theorem 14). `||C e_0||` is the realised factor's impulse response
//! summed over the horizon (with a `1e-6` relative margin for the float sum). (Until
//! 2026-12 both stages were recurrences a step on 128-bit integers; the block form is
//! about five times faster.)
//!
//! **Pipeline.** A chunk goes through encoder, release and decoder `SUB` (2^17) steps at a
//! time, so its intermediate values stay in cache.
//!
//! **Decoder.** The estimate is `A C^-1 Y = (1 - z)^(-1) A_2^-1(z^W) A_1^-1(z) Y`: the
//! block decoder, its lagged twin (the residues side by side), then a running sum (the
//! `1 - z^W` factors cancel).
//! Its noise is `g * Z` for `g` the decoder's impulse response (the exact square root
//! `C` when the fits are exact): stated variance `(B gamma)^2 (sigma^2 + 1/4) sum_(k <= j)
//! g_k^2`, computed at build.
//!
//! **Bit for bit.** The encoder and the decoder run the same f64 operations in the same
//! order on every path (a step at a time, or a chunk's blocks and residues on every
//! thread), and step `t`'s noise is counter `t` of a [`KeyedGauss`].

use super::block::decoder::Decoder;
use super::block::lanes::{LaneDecoder, LaneEncoder};
use super::block::{BlockMix, Encoder, Precision};
use super::fit::{Buffers, Spacing, mix_step};
use super::{PIECE, Prefetch, SUB, check_horizon, quantise, release};
use crate::gauss::{KeyedGauss, grid_for};
use crate::model::{
    CalibrationReport, DecayedSum, Zcdp, check_bound, window_truth, zcdp_guarantee,
};
use kinsey_core::{Error, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// Longest horizon (the stated variance is computed step by step at build).
pub const MAX_HORIZON: u64 = 1 << 26;
/// Most lagged buffers (`W d_2`).
const MAX_LAGGED: u64 = 1 << 22;
/// Stated-variance samples kept (as the buffered factorization's).
const SAMPLES: u64 = 1 << 16;
/// Largest bound on the lagged stage's inputs its block encoder takes.
const MAX_LAGGED_INPUT: f64 = 1_048_576.0; // 2^20

/// The window's square-root factorization (see the module's documentation).
#[derive(Debug, Clone)]
pub struct WindowRoot {
    w: u64,
    horizon: u64,
    bound: f64,
    zcdp: Zcdp,
    a1: Arc<Buffers>,
    a2: Arc<Buffers>,
    noise: KeyedGauss,
    l2: f64,
    /// The encoder's deviation bound `D` (values divided by `B`).
    dev: f64,
    /// Stated variance per unit noise variance at steps `(s + 1) stride - 1`.
    cum: Arc<Vec<f64>>,
    stride: u64,
    t: u64,
    pipe: Pipeline,
    /// The draws of the current chunk and the next.
    draws: Prefetch,
}

/// The encoder, the release and the decoder with their state: everything a step changes.
#[derive(Debug, Clone)]
struct Pipeline {
    w: u64,
    bound: f64,
    m1: Arc<BlockMix>,
    m2: Arc<BlockMix>,
    enc1: Encoder,
    /// The quantised inputs of the last `W` steps, by residue.
    ring: Vec<f64>,
    /// Scratch: the lagged differences, and the first stage's outputs (then the
    /// decoder's first stage's).
    dq: Vec<f64>,
    v: Vec<f64>,
    enc2: LaneEncoder,
    /// The decoder's two stages and the running sum that ends it.
    dec1: Decoder,
    dec2: LaneDecoder,
    acc: f64,
}

impl Pipeline {
    fn new(m1: &Arc<BlockMix>, m2: &Arc<BlockMix>, w: u64, bound: f64) -> Self {
        let wu = w as usize;
        Self {
            w,
            bound,
            m1: m1.clone(),
            m2: m2.clone(),
            enc1: Encoder::new(m1),
            ring: vec![0.0; wu],
            dq: Vec::new(),
            v: Vec::new(),
            enc2: LaneEncoder::new(m2, wu),
            dec1: Decoder::new(m1),
            dec2: LaneDecoder::new(m2, wu),
            acc: 0.0,
        }
    }

    /// The encoder's outputs (values divided by `B`) for the values `xs` of steps `t ..`
    /// (quantised here; into `out`), every stage on every thread when `parallel`.
    fn encode(&mut self, t: u64, xs: &[f64], out: &mut [f64], parallel: bool) {
        let (n, w, lag, bound) = (xs.len(), self.w as usize, self.w, self.bound);
        // q_t - q_(t - W) (exact: multiples of 2^-32 in [0, 1]): the inputs of the last W
        // steps from the ring, by residue, then the chunk itself.
        let res = |p: usize| ((t + p as u64) % lag) as usize;
        let ring = &self.ring;
        let diff = |p: usize, x: f64| {
            quantise(x, bound)
                - if p >= w {
                    quantise(xs[p - w], bound)
                } else {
                    ring[res(p)]
                }
        };
        self.dq.resize(n, 0.0);
        if parallel && n > PIECE {
            self.dq
                .par_chunks_mut(PIECE)
                .zip(xs.par_chunks(PIECE))
                .enumerate()
                .for_each(|(k, (d, x))| {
                    for (i, (d, &x)) in d.iter_mut().zip(x).enumerate() {
                        *d = diff(k * PIECE + i, x);
                    }
                });
        } else {
            for (p, (d, &x)) in self.dq.iter_mut().zip(xs).enumerate() {
                *d = diff(p, x);
            }
        }
        let from = n - n.min(w);
        for (p, &x) in xs.iter().enumerate().skip(from) {
            self.ring[res(p)] = quantise(x, bound);
        }
        self.v.resize(n, 0.0);
        if parallel {
            self.enc1.run_parallel(&self.m1, &self.dq, &mut self.v);
        } else {
            self.enc1.run(&self.m1, &self.dq, &mut self.v);
        }
        self.enc2.run(&self.m2, t, &self.v, out, parallel);
    }

    /// The estimates of steps `t ..` for values `xs` and draws `z` (into `out`): encoded,
    /// released, decoded.
    fn run(
        &mut self,
        noise: &KeyedGauss,
        t: u64,
        xs: &[f64],
        z: &[i64],
        out: &mut [f64],
        parallel: bool,
    ) {
        self.encode(t, xs, out, parallel);
        release(noise, out, z);
        self.decode(t, out, parallel);
    }

    /// The window estimates of the released values of steps `t ..`, in place (`io`), every
    /// stage but the running sum on every thread when `parallel`.
    fn decode(&mut self, t: u64, io: &mut [f64], parallel: bool) {
        self.v.resize(io.len(), 0.0);
        if parallel {
            self.dec1.run_parallel(&self.m1, io, &mut self.v);
        } else {
            self.dec1.run(&self.m1, io, &mut self.v);
        }
        self.dec2.run(&self.m2, t, &self.v, io, parallel);
        let mut acc = self.acc;
        for o in io.iter_mut() {
            acc += *o;
            *o = acc * self.bound;
        }
        self.acc = acc;
    }
}

/// `1 + sum |omega_i| / (1 - theta_i)`: the mixture's L1 gain.
fn gain(b: &Buffers) -> f64 {
    1.0 + b
        .omega
        .iter()
        .zip(&b.theta)
        .map(|(o, t)| o.abs() / (1.0 - t))
        .sum::<f64>()
}

/// The decoder's float state for one step: `dec = y - sum omega_i r_i` after
/// `r_i <- theta_i r_i + prev` (the inverse of `1 + sum omega_i theta_i^(k-1) z^k`; the
/// stated variances' recurrence).
#[inline]
fn inverse_step(b: &Buffers, r: &mut [f64], prev: f64, y: f64) -> f64 {
    y - mix_step(&b.theta, &b.omega, r, prev)
}

/// `x + sum omega_i s_i` after `s_i <- theta_i s_i + prev` (the mixture itself, in floats).
#[inline]
fn forward_step(b: &Buffers, s: &mut [f64], prev: f64, x: f64) -> f64 {
    x + mix_step(&b.theta, &b.omega, s, prev)
}

impl WindowRoot {
    /// The factorization for windows of `w` steps over `horizon` steps, values in
    /// `[0, bound]`, under `zcdp`.
    pub fn new(w: u64, horizon: u64, bound: f64, zcdp: Zcdp, key: [u8; 32]) -> Result<Self> {
        check_bound(bound)?;
        zcdp.check()?;
        if w == 0 {
            return Err(Error::param("window", "must be >= 1 step"));
        }
        if horizon == 0 || horizon > MAX_HORIZON {
            return Err(Error::param(
                "horizon",
                format!(
                    "the window's square-root factorization needs a horizon of 1 to 2^26 \
                     steps, got {horizon}"
                ),
            ));
        }
        let a1 = Buffers::new(horizon as f64, 1.0, Spacing::COARSE)?;
        let a2 = Buffers::new(horizon.div_ceil(w) as f64, 1.0, Spacing::COARSER)?;
        if w.saturating_mul(a2.theta.len() as u64 + 2) > MAX_LAGGED {
            return Err(Error::param(
                "window",
                format!("a window of {w} steps needs too many lagged buffers (at most 2^22)"),
            ));
        }
        let (norm, reach, cum, stride) = responses(&a1, &a2, w, horizon);
        let m1 = BlockMix::new(
            &a1.theta_m,
            &a1.theta,
            &a1.omega,
            Precision::Lagged { q_max: 1.0, lag: w },
        );
        let e1 = m1.enc_err();
        let q_max = reach * (1.0 + 1e-6) + e1;
        if !q_max.is_finite() || q_max >= MAX_LAGGED_INPUT {
            return Err(Error::Numerical(
                "the window factorization's first stage is out of the encoder's range".into(),
            ));
        }
        let m2 = BlockMix::new(
            &a2.theta_m,
            &a2.theta,
            &a2.omega,
            Precision::Int64 { q_max },
        );
        let dev = gain(&a2) * e1 + m2.enc_err();
        let l2 = norm * (1.0 + 1e-6) + 2.0 * dev * (horizon as f64).sqrt();
        let grid_exp = grid_for(l2 / (2.0 * zcdp.rho).sqrt());
        // Every encoder output, in grid steps, and its noise must be exact integers in f64.
        let steps = m2.reach() * (-f64::from(grid_exp)).exp2();
        if !(-1000..=1000).contains(&grid_exp) || steps >= 2f64.powi(52) {
            return Err(Error::param(
                "rho",
                format!(
                    "rho {} puts the noise outside the encoder's range",
                    zcdp.rho
                ),
            ));
        }
        let noise = KeyedGauss::on_grid(key, 1, l2, horizon, zcdp.rho, grid_exp)?;
        Ok(Self {
            w,
            horizon,
            bound,
            zcdp,
            pipe: Pipeline::new(&Arc::new(m1), &Arc::new(m2), w, bound),
            a1: Arc::new(a1),
            a2: Arc::new(a2),
            noise,
            l2,
            dev,
            cum: Arc::new(cum),
            stride,
            t: 0,
            draws: Prefetch::default(),
        })
    }

    fn step(&mut self, x: f64) -> Result<f64> {
        check_horizon(self.t, 1, self.horizon)?;
        let z = self.draws.one(&self.noise, self.t)?;
        let mut e = [0.0f64];
        self.pipe
            .run(&self.noise, self.t, &[x], &[z], &mut e, false);
        self.t += 1;
        Ok(e[0])
    }

    /// A chunk: its draws (drawn while the chunk before ran, else now), then [`SUB`] steps
    /// at a time through the whole pipeline (every stage on every thread) while the next
    /// chunk's counters are drawn on the other threads.
    fn stream_chunk(&mut self, chunk: &[f64], col: &mut [f64]) -> Result<()> {
        let (t, n) = (self.t, chunk.len());
        check_horizon(t, n, self.horizon)?;
        self.draws.chunk(&self.noise, t, n)?;
        let (pipe, noise) = (&mut self.pipe, &self.noise);
        let work = |z: &[i64]| {
            for (k, ((xs, out), z)) in chunk
                .chunks(SUB)
                .zip(col.chunks_mut(SUB))
                .zip(z.chunks(SUB))
                .enumerate()
            {
                pipe.run(noise, t + (k * SUB) as u64, xs, z, out, true);
            }
        };
        self.draws.during(&self.noise, t, n, self.horizon, work)?;
        self.t += n as u64;
        Ok(())
    }

    fn reset(&mut self) {
        self.t = 0;
        let (m1, m2) = (self.pipe.m1.clone(), self.pipe.m2.clone());
        self.pipe = Pipeline::new(&m1, &m2, self.w, self.bound);
        self.draws = Prefetch::default();
    }

    /// The encoder's largest deviation from the exact factor at any step (values divided
    /// by the bound; its L2 sensitivity counts `2 D sqrt(T)`).
    pub fn deviation(&self) -> f64 {
        self.dev
    }

    /// Standard deviation of the estimate at step `j`.
    pub fn std_at(&self, j: u64) -> f64 {
        let s = ((j / self.stride) as usize).min(self.cum.len() - 1);
        let g = self.bound * self.noise.gamma();
        g * ((self.noise.sigma_steps().powi(2) + 0.25) * self.cum[s]).sqrt()
    }

    /// The mean stated variance over the horizon.
    pub fn mean_variance(&self) -> f64 {
        let g = self.bound * self.noise.gamma();
        let mean = self.cum.iter().sum::<f64>() / self.cum.len() as f64;
        g * g * (self.noise.sigma_steps().powi(2) + 0.25) * mean
    }

    /// A copy whose noise has `factor` times the calibrated sigma (tests).
    #[cfg(test)]
    pub(crate) fn scaled(&self, factor: f64) -> Self {
        Self {
            noise: self.noise.scaled(factor),
            ..self.clone()
        }
    }

    /// The encoder's grid values for `xs` (tests).
    #[cfg(test)]
    pub(crate) fn encoded(&self, xs: &[f64]) -> Vec<i128> {
        let mut m = self.clone();
        m.reset();
        let mut e = vec![0.0; xs.len()];
        m.pipe.encode(0, xs, &mut e, false);
        let inv = 1.0 / m.noise.gamma();
        e.iter().map(|x| (x * inv).round() as i128).collect()
    }

    /// The integer L2 sensitivity the noise is calibrated for, in grid steps (tests).
    #[cfg(test)]
    pub(crate) fn grid_sensitivity(&self) -> f64 {
        self.l2 / self.noise.gamma() + (self.horizon as f64).sqrt()
    }
}

/// Over `horizon` steps: `||C e_0||_2` of the realised factor, `L = sum |v_k|` of its
/// first stage `(1 - z^W) A_1(z)` (the lagged stage's inputs are at most `L`), and the
/// decoder's cumulative squared impulse response sampled every `stride` steps (with the
/// stride). The two recurrences are independent, run on two threads.
fn responses(a1: &Buffers, a2: &Buffers, w: u64, horizon: u64) -> (f64, f64, Vec<f64>, u64) {
    let stride = horizon.div_ceil(SAMPLES).max(1);
    let ((norm, reach), cum) = rayon::join(
        || encoder_norm(a1, a2, w, horizon),
        || decoder_cum(a1, a2, w, horizon, stride),
    );
    (norm, reach, cum, stride)
}

/// `||c||_2` over `horizon` steps, `c = (1 - z^W) A_1(z) A_2(z^W) e_0`, and `sum |v_k|`,
/// `v = (1 - z^W) A_1(z) e_0`.
fn encoder_norm(a1: &Buffers, a2: &Buffers, w: u64, horizon: u64) -> (f64, f64) {
    let (wu, n1, n2) = (w as usize, a1.theta.len(), a2.theta.len());
    let (mut s1, mut prev) = (vec![0.0; n1], 0.0);
    let (mut ring, mut vring) = (vec![0.0; wu], vec![0.0; wu]);
    let mut r2 = vec![0.0; wu * n2];
    let (mut norm2, mut reach) = (0.0f64, 0.0f64);
    for t in 0..horizon {
        let res = (t % w) as usize;
        let x = if t == 0 { 1.0 } else { 0.0 };
        let e1 = forward_step(a1, &mut s1, prev, x);
        prev = x;
        let v = e1 - std::mem::replace(&mut ring[res], e1);
        reach += v.abs();
        let old_v = std::mem::replace(&mut vring[res], v);
        let c = forward_step(a2, &mut r2[res * n2..(res + 1) * n2], old_v, v);
        norm2 += c * c;
    }
    (norm2.sqrt(), reach)
}

/// The running sums of `g = (1 - z)^-1 A_2^-1(z^W) A_1^-1(z) e_0` squared, every `stride`
/// steps.
fn decoder_cum(a1: &Buffers, a2: &Buffers, w: u64, horizon: u64, stride: u64) -> Vec<f64> {
    let (wu, n1, n2) = (w as usize, a1.theta.len(), a2.theta.len());
    let (mut d1, mut p1) = (vec![0.0; n1], 0.0);
    let (mut d2, mut p2) = (vec![0.0; wu * n2], vec![0.0; wu]);
    let (mut g, mut cum, mut out) = (0.0f64, 0.0f64, Vec::new());
    for t in 0..horizon {
        let res = (t % w) as usize;
        let x = if t == 0 { 1.0 } else { 0.0 };
        let dec1 = inverse_step(a1, &mut d1, p1, x);
        p1 = dec1;
        let dec2 = inverse_step(a2, &mut d2[res * n2..(res + 1) * n2], p2[res], dec1);
        p2[res] = dec2;
        g += dec2;
        cum += g * g;
        if (t + 1) % stride == 0 || t + 1 == horizon {
            out.push(cum);
        }
    }
    out
}

impl DecayedSum for WindowRoot {
    fn calibration(&self) -> CalibrationReport {
        CalibrationReport {
            model: format!(
                "window (W = {}), the window's square-root factorization ({} + {} lagged \
                 buffers, horizon {})",
                self.w,
                self.a1.theta.len(),
                self.a2.theta.len(),
                self.horizon
            ),
            epsilon: self.zcdp.epsilon,
            bound: self.bound,
            levels: (self.a1.theta.len() + self.a2.theta.len()) as u32,
            sensitivity: self.l2 * self.bound,
            counter_scale: self.noise.std_dev() * self.bound,
            counter_std: self.noise.std_dev() * self.bound,
            rho: Some(self.zcdp.rho),
        }
    }

    fn noise_std(&self, _column: usize, j: u64) -> f64 {
        self.std_at(j)
    }

    fn use_device(&mut self, device: kinsey_kernels::DevicePref) -> Result<Option<String>> {
        crate::model::zcdp_no_gpu(device)
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        out[0] = self.step(x)?;
        Ok(())
    }

    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        let col = crate::model::one_column(out, chunk.len());
        self.stream_chunk(chunk, col)
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![window_truth(xs, self.w)]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.reset();
        Box::new(m)
    }

    fn guarantee(&self) -> kinsey_dp::release::Guarantee {
        zcdp_guarantee(
            &self.calibration(),
            self.zcdp,
            "the encoder's output (one per step; the estimates are its public linear \
             functions)",
        )
    }
}

#[cfg(test)]
mod tests;

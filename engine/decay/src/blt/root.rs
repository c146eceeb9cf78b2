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
//! **Encoder** (integers only). Values divided by `B` are quantised to `X` (units `2^-32`).
//! `E_1 = A_1 X` is the buffered factorization's encoder (units `2^-88`); `V = (E_1 -
//! E_1(t - W)) >> 48` (units `2^-40`, floored); the lagged buffers `R_i <- trunc(theta_i
//! R_i(t - W)) + V(t - W)` and `E = V 2^24 + sum w_i R_i` (units `2^-64`); the release is
//! `round(E / gamma) + Z` on the noise's grid. Each floor or truncation is at most one unit
//! off, so `E` is within `D = G_2 (2 e_1 + 2^-39)` of the exact `C x / B` at every step
//! (`e_1` the first stage's deviation, `G_2 = 1 + sum |omega_i| / (1 - theta_i)` the second
//! stage's gain), and the rounded release has integer L2 sensitivity at most
//! `(||C e_0|| + 2 D sqrt(T)) / gamma + sqrt(T)` over the horizon `T`; `T` independent
//! discrete Gaussians calibrated to it are `rho`-zCDP (CKS Theorem 14). `||C e_0||` is the
//! realised factor's impulse response summed over the horizon (with a `1e-6` relative
//! margin for the float sum).
//!
//! **Decoder.** The estimate is `A C^-1 Y = (1 - z)^(-1) A_2^-1(z^W) A_1^-1(z) Y`: the
//! buffered decoder, its lagged twin, then a running sum (the `1 - z^W` factors cancel).
//! Its noise is `g * Z` for `g` the decoder's impulse response (the exact square root
//! `C` when the fits are exact): stated variance `(B gamma)^2 (sigma^2 + 1/4) sum_(k <= j)
//! g_k^2`, computed at build.
//!
//! **Bit for bit.** The encoder is integer; the decoder runs the same f64 operations in the
//! same order on every path, and step `t`'s noise is counter `t` of a [`KeyedGauss`].

use super::fit::{Buffers, encoder_error, mix_step, mul_theta, to_f64};
use crate::gauss::{Draws, KeyedGauss, Sequential, grid_for, stream_sequential};
use crate::model::{
    CalibrationReport, DecayedSum, Zcdp, check_bound, window_truth, zcdp_guarantee,
};
use kinsey_core::{Error, Result};
use std::sync::Arc;

/// `E_1` (units `2^-88`) to `V` (units `2^-40`).
const SHIFT_V: u32 = 48;
/// Longest horizon (the stated variance is computed step by step at build).
pub const MAX_HORIZON: u64 = 1 << 26;
/// Most lagged buffers (`W d_2`).
const MAX_LAGGED: u64 = 1 << 22;
/// Stated-variance samples kept (as the buffered factorization's).
const SAMPLES: u64 = 1 << 16;

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
    /// `64 + grid_exp`: `E` in units `2^-64` to grid steps.
    shift: u32,
    l2: f64,
    /// Stated variance per unit noise variance at steps `(s + 1) stride - 1`.
    cum: Arc<Vec<f64>>,
    stride: u64,
    t: u64,
    s1: Vec<u128>,
    prev_x: u128,
    /// `E_1` and `V` of the last `W` steps, by residue; the lagged buffers by residue.
    e1: Vec<i128>,
    v: Vec<i128>,
    r2: Vec<i128>,
    d1: Vec<f64>,
    prev1: f64,
    d2: Vec<f64>,
    prev2: Vec<f64>,
    acc: f64,
    draws: Draws,
    /// The next chunk's draws, drawn while this chunk steps.
    ahead: Draws,
}

/// `trunc(m R / 2^64)` for `|R| < 2^88`.
#[inline]
fn mul_theta_signed(m: u64, r: i128) -> i128 {
    let mag = mul_theta(m, r.unsigned_abs()) as i128;
    if r < 0 { -mag } else { mag }
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
/// `r_i <- theta_i r_i + prev` (the inverse of `1 + sum omega_i theta_i^(k-1) z^k`).
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
        let a1 = Buffers::new(horizon as f64, 1.0)?;
        let a2 = Buffers::new(horizon.div_ceil(w) as f64, 1.0)?;
        if w.saturating_mul(a2.theta.len() as u64 + 2) > MAX_LAGGED {
            return Err(Error::param(
                "window",
                format!("a window of {w} steps needs too many lagged buffers (at most 2^22)"),
            ));
        }
        let (g1, g2) = (gain(&a1), gain(&a2));
        if g1 >= 2f64.powi(23) || g1 * g2 >= 2f64.powi(58) {
            return Err(Error::Numerical(
                "the window factorization's buffers are out of the encoder's range".into(),
            ));
        }
        let dev = g2 * (2.0 * encoder_error(&a1.theta_m, &a1.omega) + 2f64.powi(-39));
        let (norm, cum, stride) = responses(&a1, &a2, w, horizon);
        let l2 = norm * (1.0 + 1e-6) + 2.0 * dev * (horizon as f64).sqrt();
        let grid_exp = grid_for(l2 / (2.0 * zcdp.rho).sqrt());
        let shift = 64 + grid_exp;
        if !(1..=100).contains(&shift) {
            return Err(Error::param(
                "rho",
                format!(
                    "rho {} puts the noise outside the encoder's range",
                    zcdp.rho
                ),
            ));
        }
        let noise = KeyedGauss::on_grid(key, 1, l2, horizon, zcdp.rho, grid_exp)?;
        let (n1, n2, wu) = (a1.theta.len(), a2.theta.len(), w as usize);
        Ok(Self {
            w,
            horizon,
            bound,
            zcdp,
            a1: Arc::new(a1),
            a2: Arc::new(a2),
            noise,
            shift: shift as u32,
            l2,
            cum: Arc::new(cum),
            stride,
            t: 0,
            s1: vec![0; n1],
            prev_x: 0,
            e1: vec![0; wu],
            v: vec![0; wu],
            r2: vec![0; wu * n2],
            d1: vec![0.0; n1],
            prev1: 0.0,
            d2: vec![0.0; wu * n2],
            prev2: vec![0.0; wu],
            acc: 0.0,
            draws: Draws::default(),
            ahead: Draws::default(),
        })
    }

    /// The grid value of this step's encoder output for the quantised value `x`.
    #[inline]
    fn encode(&mut self, x: u64) -> i128 {
        let a1 = &self.a1;
        let mut e1 = i128::from(x) << 56;
        for ((s, &m), &w) in self.s1.iter_mut().zip(&a1.theta_m).zip(&a1.w) {
            *s = mul_theta(m, *s) + self.prev_x;
            e1 += i128::from(w) * (*s as i128);
        }
        self.prev_x = u128::from(x) << 32;
        let res = (self.t % self.w) as usize;
        let v = (e1 - std::mem::replace(&mut self.e1[res], e1)) >> SHIFT_V;
        let old_v = std::mem::replace(&mut self.v[res], v);
        let n2 = self.a2.theta.len();
        let mut e = v << 24;
        let r = &mut self.r2[res * n2..(res + 1) * n2];
        for ((r, &m), &w) in r.iter_mut().zip(&self.a2.theta_m).zip(&self.a2.w) {
            *r = mul_theta_signed(m, *r) + old_v;
            e += i128::from(w) * *r;
        }
        let half = 1i128 << (self.shift - 1);
        (e + half) >> self.shift
    }

    /// The decoded window-difference for the released value `y` (values divided by `B`).
    #[inline]
    fn decode(&mut self, y: f64) -> f64 {
        let dec1 = inverse_step(&self.a1, &mut self.d1, self.prev1, y);
        self.prev1 = dec1;
        let res = (self.t % self.w) as usize;
        let n2 = self.a2.theta.len();
        let r = &mut self.d2[res * n2..(res + 1) * n2];
        let dec2 = inverse_step(&self.a2, r, self.prev2[res], dec1);
        self.prev2[res] = dec2;
        dec2
    }

    fn step(&mut self, x: f64) -> Result<f64> {
        if self.t >= self.horizon {
            return Err(Error::param(
                "horizon",
                format!(
                    "the factorization is calibrated for {} steps; this is step {} (give a \
                     longer --horizon)",
                    self.horizon,
                    self.t + 1
                ),
            ));
        }
        let q = (x / self.bound).clamp(0.0, 1.0) * 2f64.powi(32);
        let yint = self.encode(q.round() as u64);
        let noise = &self.noise;
        let z = self.draws.get(|at, z| noise.fill(at, z), self.t)?;
        let y = to_f64(yint + i128::from(z)) * self.noise.gamma();
        self.acc += self.decode(y);
        self.t += 1;
        Ok(self.acc * self.bound)
    }

    fn reset(&mut self) {
        let Self {
            t,
            s1,
            prev_x,
            e1,
            v,
            r2,
            d1,
            prev1,
            d2,
            prev2,
            acc,
            draws,
            ahead,
            ..
        } = self;
        *t = 0;
        s1.iter_mut().for_each(|x| *x = 0);
        *prev_x = 0;
        e1.iter_mut()
            .chain(v.iter_mut())
            .chain(r2.iter_mut())
            .for_each(|x| *x = 0);
        d1.iter_mut()
            .chain(d2.iter_mut())
            .chain(prev2.iter_mut())
            .for_each(|x| *x = 0.0);
        *prev1 = 0.0;
        *acc = 0.0;
        *draws = Draws::default();
        *ahead = Draws::default();
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

    /// The integer encoder's grid values for `xs` (tests).
    #[cfg(test)]
    pub(crate) fn encoded(&self, xs: &[f64]) -> Vec<i128> {
        let mut m = self.clone();
        m.reset();
        xs.iter()
            .map(|&x| {
                let q = (x / m.bound).clamp(0.0, 1.0) * 2f64.powi(32);
                let e = m.encode(q.round() as u64);
                m.t += 1;
                e
            })
            .collect()
    }

    /// The integer L2 sensitivity the noise is calibrated for, in grid steps (tests).
    #[cfg(test)]
    pub(crate) fn grid_sensitivity(&self) -> f64 {
        self.l2 / self.noise.gamma() + (self.horizon as f64).sqrt()
    }
}

/// Over `horizon` steps: `||C e_0||_2` of the realised factor, and the decoder's
/// cumulative squared impulse response sampled every `stride` steps (with the stride). The
/// two are independent recurrences, run on two threads.
fn responses(a1: &Buffers, a2: &Buffers, w: u64, horizon: u64) -> (f64, Vec<f64>, u64) {
    let stride = horizon.div_ceil(SAMPLES).max(1);
    let (norm, cum) = rayon::join(
        || encoder_norm(a1, a2, w, horizon),
        || decoder_cum(a1, a2, w, horizon, stride),
    );
    (norm, cum, stride)
}

/// `||c||_2` over `horizon` steps, `c = (1 - z^W) A_1(z) A_2(z^W) e_0`.
fn encoder_norm(a1: &Buffers, a2: &Buffers, w: u64, horizon: u64) -> f64 {
    let (wu, n1, n2) = (w as usize, a1.theta.len(), a2.theta.len());
    let (mut s1, mut prev) = (vec![0.0; n1], 0.0);
    let (mut ring, mut vring) = (vec![0.0; wu], vec![0.0; wu]);
    let mut r2 = vec![0.0; wu * n2];
    let mut norm2 = 0.0f64;
    for t in 0..horizon {
        let res = (t % w) as usize;
        let x = if t == 0 { 1.0 } else { 0.0 };
        let e1 = forward_step(a1, &mut s1, prev, x);
        prev = x;
        let v = e1 - std::mem::replace(&mut ring[res], e1);
        let old_v = std::mem::replace(&mut vring[res], v);
        let c = forward_step(a2, &mut r2[res * n2..(res + 1) * n2], old_v, v);
        norm2 += c * c;
    }
    norm2.sqrt()
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

impl Sequential for WindowRoot {
    fn noise(&self) -> &KeyedGauss {
        &self.noise
    }

    fn position(&self) -> (u64, u64) {
        (self.t, self.horizon)
    }

    fn buffers(&mut self) -> (&mut Draws, &mut Draws) {
        (&mut self.draws, &mut self.ahead)
    }

    fn step_one(&mut self, x: f64) -> Result<f64> {
        self.step(x)
    }
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
        stream_sequential(self, chunk, col)
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

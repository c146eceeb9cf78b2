//! A buffered square-root factorization for running, exponential and window sums under
//! zCDP (`--privacy zcdp --mechanism blt`): correlated Gaussian noise with `O(d)` state, in
//! the family of the matrix mechanism's square-root factorizations (Henzinger, Upadhyay and
//! Upadhyay, SODA 2024; Fichtenberger, Henzinger and Upadhyay 2023) and of buffered linear
//! Toeplitz mechanisms (Dvijotham et al., FOCS 2024; jax_privacy's `buffered_toeplitz`).
//!
//! **Mechanism.** The workload `A` (prefix sums, decayed prefix sums or window sums) is
//! lower-triangular Toeplitz. The encoder `C` is Toeplitz with `c_0 = 1` and
//! `c_k = sum_i omega_i theta_i^(k-1)` (`d` buffers, [`fit::Fit`]), close to
//! `(1 - beta z)^(-1/2)`, the square root of the prefix-sum operator damped by `beta`. The
//! mechanism releases `Y = round(C x) + Z` on a grid, `Z` exact discrete Gaussian per step,
//! and every estimate is a public linear function of `Y`: the decoder `x~ = C^-1 Y` (an
//! estimate of the stream, `O(d)` per step) and the workload on `x~`. The noise an estimate
//! carries is `A C^-1 Z`: about `(1 - z)^(-1/2)` for running sums, a `log T` variance where
//! the binary tree has `log^2 T`.
//!
//! **Privacy.** Values are divided by `B` (the clamped per-step bound) and quantised to
//! `q = round(x / B 2^32) / 2^32`, so changing one step changes one `q` by at most 1. The
//! encoder runs a block of 32 steps at a time (`blt::block`): the buffers at block starts are
//! integers advanced exactly, everything within a block f64, and every rounding is bounded,
//! so `E` is within `e` ([`fit::Fit::enc_err`], about `1e-10`) of the exact `C x / B` at
//! every step, for every input. The exact encoder's L2 sensitivity is `||C e_0||_2` over
//! the horizon `T` (the longest column of a lower-triangular Toeplitz matrix), computed in
//! closed form; rounding each step to the grid moves each difference by at most one step;
//! so the rounded release has integer L2 sensitivity at most
//! `(||C e_0|| + 2 e sqrt(T)) / gamma + sqrt(T)`, and `T` independent discrete Gaussians
//! calibrated to it are `rho`-zCDP (CKS Theorem 14) for the whole sequence. Steps beyond `T`
//! are refused. (Until 2026-12 the encoder was a recurrence a step on 128-bit integers,
//! `e = sum |omega_i| / (1 - theta_i) 2^-64`: exact to `1e-16` but four times slower.)
//!
//! **Error.** The estimate at step `j` carries `B gamma (A C^-1 Z)_j` plus the rounding:
//! stated variance `(B gamma)^2 (sigma^2 + 1/4) sum_(k <= j) g_k^2`, `g` the impulse response
//! of `A C^-1`, computed at build. `beta` is chosen from public parameters only (the model,
//! `W` or `alpha`, `T`) by the ideal factor's objective.
//!
//! **Bit for bit.** The encoder and the decoder (the inverse mixture in the same block form)
//! run the same f64 operations in the same order on every path, whole blocks or a step at a
//! time, and the noise of step `t` is counter `t` of a [`KeyedGauss`]: online `push`,
//! chunked `stream` and `bulk` agree bit for bit. In bulk, the encoder's blocks run on
//! every thread, then the decoder steps the chunk in order while the next chunk's noise is
//! drawn on the other threads.

mod block;
pub mod fit;
pub mod root;

use super::gauss::{Draws, KeyedGauss, grid_for, overlapped};
use super::kary::Kind;
use super::model::{
    CalibrationReport, DecayedSum, Sliding, Zcdp, check_bound, window_truth, zcdp_guarantee,
};
use block::Encoder;
use block::decoder::Decoder;
use fit::Fit;
use kinsey_core::{Error, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// The buffered factorization (see the module's documentation).
#[derive(Debug, Clone)]
pub struct BltSum {
    kind: Kind,
    horizon: u64,
    bound: f64,
    zcdp: Zcdp,
    fit: Arc<Fit>,
    noise: KeyedGauss,
    /// The L2 sensitivity the noise is calibrated for (values divided by `B`).
    l2: f64,
    t: u64,
    enc: Encoder,
    dec: Decoder,
    /// The estimates of the decoded stream.
    sums: Sums,
    /// The draws of the current chunk and the next.
    draws: Prefetch,
    /// A chunk's inputs, then its releases (kept between chunks).
    scratch: Vec<f64>,
}

impl BltSum {
    /// The mechanism for `kind` over `horizon` steps, values in `[0, bound]`, under `zcdp`.
    pub fn new(kind: Kind, horizon: u64, bound: f64, zcdp: Zcdp, key: [u8; 32]) -> Result<Self> {
        check_bound(bound)?;
        zcdp.check()?;
        if let Kind::Exponential { alpha, .. } = kind {
            super::model::check_alpha(alpha)?;
        }
        if let Kind::Window { w } = kind
            && w == 0
        {
            return Err(Error::param("window", "must be >= 1 step"));
        }
        let beta = fit::choose_beta(kind, horizon.max(1));
        let fit = Fit::new(kind, horizon, beta)?;
        let root_t = (horizon as f64).sqrt();
        let l2 = fit.norm + 2.0 * fit.enc_err * root_t;
        let approx_sigma = l2 / (2.0 * zcdp.rho).sqrt();
        let grid_exp = grid_for(approx_sigma);
        // Every encoder output, in grid steps, and its noise must be exact integers in f64.
        let steps = fit.mix.reach() * (-f64::from(grid_exp)).exp2();
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
        let (enc, dec) = (Encoder::new(&fit.mix), Decoder::new(&fit.mix));
        Ok(Self {
            kind,
            horizon,
            bound,
            zcdp,
            fit: Arc::new(fit),
            noise,
            l2,
            t: 0,
            enc,
            dec,
            sums: Sums::new(kind, bound),
            draws: Prefetch::default(),
            scratch: Vec::new(),
        })
    }

    /// The encoder's buffers and their fit.
    pub fn fit(&self) -> &Fit {
        &self.fit
    }

    /// One step: the estimate.
    fn step(&mut self, x: f64) -> Result<f64> {
        check_horizon(self.t, 1, self.horizon)?;
        let mut e = [0.0f64];
        self.enc
            .run(&self.fit.mix, &[quantise(x, self.bound)], &mut e);
        let z = self.draws.one(&self.noise, self.t)?;
        release(&self.noise, &mut e, &[z]);
        let (mut dec, mut est) = ([0.0f64], [0.0f64]);
        self.dec.run(&self.fit.mix, &e, &mut dec);
        self.sums.estimate(&dec, &mut est);
        self.t += 1;
        Ok(est[0])
    }

    /// A chunk: its draws (drawn while the chunk before stepped, else now), then
    /// [`SUB`] steps at a time through the encoder (its blocks on every thread), the
    /// releases, the decoder and the estimates, while the next chunk's counters are drawn
    /// (the threads share both). A piece's intermediate values stay in cache.
    fn stream_chunk(&mut self, chunk: &[f64], col: &mut [f64]) -> Result<()> {
        let (t, n) = (self.t, chunk.len());
        check_horizon(t, n, self.horizon)?;
        self.draws.chunk(&self.noise, t, n)?;
        let mut e = std::mem::take(&mut self.scratch);
        let (mix, noise, bound) = (&self.fit.mix, &self.noise, self.bound);
        let (enc, dec, sums) = (&mut self.enc, &mut self.dec, &mut self.sums);
        let work = |z: &[i64]| {
            for ((xs, out), z) in chunk
                .chunks(SUB)
                .zip(col.chunks_mut(SUB))
                .zip(z.chunks(SUB))
            {
                quantise_all(xs, bound, &mut e);
                enc.run_parallel(mix, &e, out);
                release(noise, out, z);
                dec.run_parallel(mix, out, &mut e);
                sums.estimate(&e, out);
            }
        };
        self.draws.during(&self.noise, t, n, self.horizon, work)?;
        self.scratch = e;
        self.t += n as u64;
        Ok(())
    }

    fn reset(&mut self) {
        self.t = 0;
        self.enc = Encoder::new(&self.fit.mix);
        self.dec = Decoder::new(&self.fit.mix);
        self.sums = Sums::new(self.kind, self.bound);
        self.draws = Prefetch::default();
    }

    /// Standard deviation of the estimate at step `j`.
    pub fn std_at(&self, j: u64) -> f64 {
        let g = self.bound * self.noise.gamma();
        let s2 = self.noise.sigma_steps().powi(2) + 0.25;
        g * (s2 * self.fit.variance_at(j)).sqrt()
    }

    /// The mean stated variance over the horizon.
    pub fn mean_variance(&self) -> f64 {
        let g = self.bound * self.noise.gamma();
        g * g * (self.noise.sigma_steps().powi(2) + 0.25) * self.fit.mean_variance()
    }

    /// A copy whose noise has `factor` times the calibrated sigma (tests).
    #[cfg(test)]
    pub(crate) fn scaled(&self, factor: f64) -> Self {
        Self {
            noise: self.noise.scaled(factor),
            ..self.clone()
        }
    }

    /// The encoder's grid values for `xs` (tests: the sensitivity on neighbouring streams,
    /// without noise).
    #[cfg(test)]
    pub(crate) fn encoded(&self, xs: &[f64]) -> Vec<i128> {
        let qs: Vec<f64> = xs.iter().map(|&x| quantise(x, self.bound)).collect();
        let mut e = vec![0.0; qs.len()];
        Encoder::new(&self.fit.mix).run(&self.fit.mix, &qs, &mut e);
        let inv = 1.0 / self.noise.gamma();
        e.iter().map(|v| (v * inv).round() as i128).collect()
    }

    /// The integer L2 sensitivity the noise is calibrated for, in grid steps (tests).
    #[cfg(test)]
    pub(crate) fn grid_sensitivity(&self) -> f64 {
        self.l2 / self.noise.gamma() + (self.horizon as f64).sqrt()
    }
}

impl DecayedSum for BltSum {
    fn calibration(&self) -> CalibrationReport {
        let what = match self.kind {
            Kind::Running { horizon } => format!("running (horizon {horizon})"),
            Kind::Exponential { alpha, .. } => format!("exponential (alpha = {alpha})"),
            Kind::Window { w } => format!("window (W = {w})"),
        };
        CalibrationReport {
            model: format!(
                "{what}, buffered square-root factorization ({} buffers, beta = {}, horizon {})",
                self.fit.buffers(),
                self.fit.beta,
                self.horizon
            ),
            epsilon: self.zcdp.epsilon,
            bound: self.bound,
            levels: self.fit.buffers() as u32,
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
        super::model::zcdp_no_gpu(device)
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        out[0] = self.step(x)?;
        Ok(())
    }

    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        let col = super::model::one_column(out, chunk.len());
        self.stream_chunk(chunk, col)
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![match self.kind {
            Kind::Window { w } => window_truth(xs, w),
            Kind::Exponential { alpha, .. } => super::model::decayed_truth(xs, alpha),
            Kind::Running { .. } => super::model::decayed_truth(xs, 1.0),
        }]
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

/// `x` divided by the bound, clamped to `[0, 1]` and quantised to `2^-32`: a
/// factorization's input.
#[inline]
pub(crate) fn quantise(x: f64, bound: f64) -> f64 {
    ((x / bound).clamp(0.0, 1.0) * 2f64.powi(32)).round() * 2f64.powi(-32)
}

/// Steps a factorization's chunk is taken through the whole pipeline at a time (encoder,
/// release, decoder): the intermediate values (1 MiB each) stay in cache instead of a
/// pass over the chunk's memory each.
pub(crate) const SUB: usize = 1 << 17;

/// Steps a thread takes at a time in a factorization's element-wise passes.
pub(crate) const PIECE: usize = 1 << 14;

/// `out` = the quantised `xs` (long inputs on every thread).
pub(crate) fn quantise_all(xs: &[f64], bound: f64, out: &mut Vec<f64>) {
    out.resize(xs.len(), 0.0);
    if xs.len() > PIECE {
        out.par_chunks_mut(PIECE)
            .zip(xs.par_chunks(PIECE))
            .for_each(|(o, x)| {
                o.iter_mut()
                    .zip(x)
                    .for_each(|(o, &x)| *o = quantise(x, bound))
            });
    } else {
        out.iter_mut()
            .zip(xs)
            .for_each(|(o, &x)| *o = quantise(x, bound));
    }
}

/// Refuses steps `t .. t + n` past a factorization's horizon before any is taken.
pub(crate) fn check_horizon(t: u64, n: usize, horizon: u64) -> Result<()> {
    if t + n as u64 > horizon {
        return Err(Error::param(
            "horizon",
            format!(
                "the factorization is calibrated for {horizon} steps; this is step {} (give a \
                 longer --horizon)",
                horizon + 1
            ),
        ));
    }
    Ok(())
}

/// The released values (values divided by `B`) of encoder outputs `e` with the draws `z`:
/// `(round(e / gamma) + z) gamma`, exact integers of grid steps (long chunks on every
/// thread).
pub(crate) fn release(noise: &KeyedGauss, e: &mut [f64], z: &[i64]) {
    let (gamma, inv) = (noise.gamma(), 1.0 / noise.gamma());
    let piece = |e: &mut [f64], z: &[i64]| {
        for (v, &z) in e.iter_mut().zip(z) {
            *v = (((*v * inv).round() as i64 + z) as f64) * gamma;
        }
    };
    if e.len() < 1 << 16 {
        piece(e, z);
    } else {
        e.par_chunks_mut(PIECE)
            .zip(z.par_chunks(PIECE))
            .for_each(|(e, z)| piece(e, z));
    }
}

/// A factorization's noise, step `t`'s counter `t`: the current chunk's draws and the
/// next chunk's, drawn on the other threads while this one decodes (a draw depends on its
/// counter alone, so drawing early changes no value).
#[derive(Debug, Clone, Default)]
pub(crate) struct Prefetch {
    draws: Draws,
    ahead: Draws,
}

impl Prefetch {
    /// Step `t`'s draw (online).
    pub(crate) fn one(&mut self, noise: &KeyedGauss, t: u64) -> Result<i64> {
        self.draws.get(|at, z| noise.fill(at, z), t)
    }

    /// Counters `t .. t + n` drawn: taken from the ones drawn ahead, else drawn now.
    pub(crate) fn chunk(&mut self, noise: &KeyedGauss, t: u64, n: usize) -> Result<()> {
        let Self { draws, ahead } = self;
        draws.take_or_draw(ahead, |at, z| noise.fill(at, z), t, n as u64)
    }

    /// `work(z)` on this thread, `z` the draws of counters `t .. t + n` (drawn by
    /// [`chunk`](Self::chunk)), while the chunk after it (up to the horizon) is drawn on
    /// the others.
    pub(crate) fn during<R: Send>(
        &mut self,
        noise: &KeyedGauss,
        t: u64,
        n: usize,
        horizon: u64,
        work: impl FnOnce(&[i64]) -> R + Send,
    ) -> Result<R> {
        let Self { draws, ahead } = self;
        let z = draws
            .slice(t, n)
            .ok_or_else(|| Error::Numerical("the chunk's noise was not drawn".into()))?;
        let next = || {
            let (first, end) = (t + n as u64, (t + 2 * n as u64).min(horizon));
            ahead.ensure(|at, z| noise.fill(at, z), first, end.saturating_sub(first))
        };
        let (done, drawn) = overlapped(|| work(z), next);
        drawn.map(|()| done)
    }
}

/// The estimates of a decoded stream: running and exponential sums' accumulator, window
/// sums' sliding sum.
#[derive(Debug, Clone)]
struct Sums {
    kind: Kind,
    bound: f64,
    acc: f64,
    sliding: Option<Sliding>,
}

impl Sums {
    fn new(kind: Kind, bound: f64) -> Self {
        Self {
            kind,
            bound,
            acc: 0.0,
            sliding: match kind {
                Kind::Window { w } => Some(Sliding::new(w)),
                _ => None,
            },
        }
    }

    /// The estimates of the decoded stream `dec`, in order, into `out`.
    fn estimate(&mut self, dec: &[f64], out: &mut [f64]) {
        let b = self.bound;
        let mut acc = self.acc;
        match self.kind {
            Kind::Running { .. } => {
                for (o, &v) in out.iter_mut().zip(dec) {
                    acc += v;
                    *o = acc * b;
                }
            }
            Kind::Exponential { alpha, .. } => {
                for (o, &v) in out.iter_mut().zip(dec) {
                    acc = alpha * acc + v;
                    *o = acc * b;
                }
            }
            Kind::Window { .. } => {
                if let Some(s) = &mut self.sliding {
                    s.extend(dec, |i, v| out[i] = v * b);
                }
            }
        }
        self.acc = acc;
    }
}

#[cfg(test)]
mod tests;

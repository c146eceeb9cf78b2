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
//! `X = round(x / B 2^32)`, so changing one step changes one `X` by at most `2^32`. The
//! encoder runs in integers: buffers `S_i <- floor(theta_i S_i) + X_(t-1) 2^32` with
//! `theta_i = m_i / 2^64`, and `E_t = X_t 2^56 + sum w_i S_i` with `omega_i = w_i / 2^24`
//! (units `2^-88`), no float anywhere. Each floor is at most one unit off, so `E` is within
//! `e = sum |omega_i| / (1 - theta_i) 2^-64` of the exact `C x / B` at every step, for every
//! input ([`fit::Fit::enc_err`]). The exact encoder's L2 sensitivity is `||C e_0||_2`
//! over the horizon `T` (the longest column of a lower-triangular Toeplitz matrix), computed
//! in closed form; rounding each step to the grid moves each difference by at most one
//! step; so the rounded release has integer L2 sensitivity at most
//! `(||C e_0|| + 2 e sqrt(T)) / gamma + sqrt(T)`, and `T` independent discrete Gaussians
//! calibrated to it are `rho`-zCDP (CKS Theorem 14) for the whole sequence. Steps beyond `T`
//! are refused.
//!
//! **Error.** The estimate at step `j` carries `B gamma (A C^-1 Z)_j` plus the rounding:
//! stated variance `(B gamma)^2 (sigma^2 + 1/4) sum_(k <= j) g_k^2`, `g` the impulse response
//! of `A C^-1`, computed at build. `beta` is chosen from public parameters only (the model,
//! `W` or `alpha`, `T`) by the ideal factor's objective.
//!
//! **Bit for bit.** The encoder is integer; the decoder and the workload run the same f64
//! operations in the same order on every path, and the noise of step `t` is counter `t` of
//! a [`KeyedGauss`]: online `push`, chunked `stream` and `bulk` agree bit for bit.

pub mod fit;
pub mod root;

use super::gauss::{Draws, KeyedGauss, Sequential, grid_for, stream_sequential};
use super::kary::Kind;
use super::model::{
    CalibrationReport, DecayedSum, Sliding, Zcdp, check_bound, window_truth, zcdp_guarantee,
};
use fit::{Fit, mix_step, mul_theta};
use kinsey_core::{Error, Result};
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
    /// `88 + grid_exp`: `E` in units `2^-88` to grid steps.
    shift: u32,
    /// The L2 sensitivity the noise is calibrated for (values divided by `B`).
    l2: f64,
    t: u64,
    /// Encoder buffers (units `2^-64`) and the previous step's `X 2^32`.
    s: Vec<u128>,
    prev_x: u128,
    /// Decoder buffers and the previous decoded value.
    r: Vec<f64>,
    prev_dec: f64,
    /// Running and exponential sums' accumulator; window sums' sliding sum.
    acc: f64,
    sliding: Option<Sliding>,
    draws: Draws,
    /// The next chunk's draws, drawn while this chunk steps.
    ahead: Draws,
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
        let shift = 88 + grid_exp;
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
        let d = fit.buffers();
        Ok(Self {
            kind,
            horizon,
            bound,
            zcdp,
            fit: Arc::new(fit),
            noise,
            shift: shift as u32,
            l2,
            t: 0,
            s: vec![0; d],
            prev_x: 0,
            r: vec![0.0; d],
            prev_dec: 0.0,
            acc: 0.0,
            sliding: match kind {
                Kind::Window { w } => Some(Sliding::new(w)),
                _ => None,
            },
            draws: Draws::default(),
            ahead: Draws::default(),
        })
    }

    /// The encoder's buffers and their fit.
    pub fn fit(&self) -> &Fit {
        &self.fit
    }

    /// The grid value of step `t`'s encoder output for the quantised value `x` (units
    /// `2^-32`), buffers advanced.
    #[inline]
    fn encode(&mut self, x: u64) -> i128 {
        let mut e = i128::from(x) << 56;
        for ((s, &m), &w) in self.s.iter_mut().zip(&self.fit.theta_m).zip(&self.fit.w) {
            *s = mul_theta(m, *s) + self.prev_x;
            // |w| < 2^31 and S < 2^88: the product and the sum stay below 2^124.
            e += i128::from(w) * (*s as i128);
        }
        self.prev_x = u128::from(x) << 32;
        let half = 1i128 << (self.shift - 1);
        (e + half) >> self.shift
    }

    /// The decoded stream value for the released grid value `y` (values divided by `B`).
    #[inline]
    fn decode(&mut self, y: f64) -> f64 {
        let dec = y - mix_step(&self.fit.theta, &self.fit.omega, &mut self.r, self.prev_dec);
        self.prev_dec = dec;
        dec
    }

    /// One step: the estimate.
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
        let y = fit::to_f64(yint + i128::from(z)) * self.noise.gamma();
        let dec = self.decode(y);
        let est = match self.kind {
            Kind::Running { .. } => {
                self.acc += dec;
                self.acc
            }
            Kind::Exponential { alpha, .. } => {
                self.acc = alpha * self.acc + dec;
                self.acc
            }
            Kind::Window { .. } => match &mut self.sliding {
                Some(s) => s.push(dec),
                None => 0.0,
            },
        };
        self.t += 1;
        Ok(est * self.bound)
    }

    fn reset(&mut self) {
        self.t = 0;
        self.s.iter_mut().for_each(|v| *v = 0);
        self.prev_x = 0;
        self.r.iter_mut().for_each(|v| *v = 0.0);
        self.prev_dec = 0.0;
        self.acc = 0.0;
        if let Kind::Window { w } = self.kind {
            self.sliding = Some(Sliding::new(w));
        }
        self.draws = Draws::default();
        self.ahead = Draws::default();
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

    /// The integer encoder's grid values for `xs` (tests: the sensitivity on neighbouring
    /// streams, without noise).
    #[cfg(test)]
    pub(crate) fn encoded(&self, xs: &[f64]) -> Vec<i128> {
        let mut m = self.clone();
        m.reset();
        xs.iter()
            .map(|&x| {
                let q = (x / m.bound).clamp(0.0, 1.0) * 2f64.powi(32);
                m.encode(q.round() as u64)
            })
            .collect()
    }

    /// The integer L2 sensitivity the noise is calibrated for, in grid steps (tests).
    #[cfg(test)]
    pub(crate) fn grid_sensitivity(&self) -> f64 {
        self.l2 / self.noise.gamma() + (self.horizon as f64).sqrt()
    }
}

impl Sequential for BltSum {
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
        stream_sequential(self, chunk, col)
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

#[cfg(test)]
mod tests;

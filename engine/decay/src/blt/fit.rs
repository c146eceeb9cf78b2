//! The public arithmetic of the buffered factorization ([`super`]): the choice of the
//! damping `beta`, the buffers `(theta_i, omega_i)` of the encoder `C`, its exact L2
//! sensitivity over the horizon, and the stated variance of every estimate. Everything here
//! is a function of public parameters only (the model, `W` or `alpha`, the horizon).

use super::block::{BlockMix, Precision};
use crate::kary::Kind;
use kinsey_core::{Error, Result};

/// Fraction bits of the encoder's `omega` (`omega = w / 2^24`).
pub(super) const OMEGA_BITS: u32 = 24;
/// Largest `|omega|` the encoder's integer bounds allow.
const MAX_OMEGA: f64 = 127.0;
/// Shortest distance of a `theta` below 1: the encoder's buffers hold at most `2^88` units.
pub(super) const MIN_GAP_LOG2: i32 = -24;
/// Quadrature in `s = -ln(1 - t)` (see [`quadrature`]): first node.
const S_MIN: f64 = 0.018_315_638_888_734_18; // e^-4

/// How far apart [`quadrature`]'s nodes are: the steps grow by `ratio` times the node up
/// to `step`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Spacing {
    /// Growth of the steps relative to the node.
    pub ratio: f64,
    /// Largest step.
    pub step: f64,
}

impl Spacing {
    /// The buffered factorization's: about 1% off the target's coefficients.
    pub(super) const FINE: Self = Self {
        ratio: 0.5,
        step: 1.0,
    };
    /// The window square-root factorization's first stage, with [`Spacing::COARSER`] for
    /// its lagged one: about twice fewer buffers (16 and 10 in place of 28 and 24 at
    /// `T = 3e7`, `W = 1024`; the coefficients within 5%) for a stated error 0.12% higher
    /// (3.9417 in place of 3.9369 for `W = 1440`, `T = 3e6`; the lower bound is 3.937): the
    /// error is stationary at the exact square root, so a coarser fit costs it little.
    pub(super) const COARSE: Self = Self {
        ratio: 1.0,
        step: 2.0,
    };
    /// The window square-root factorization's lagged stage (see [`Spacing::COARSE`]).
    pub(super) const COARSER: Self = Self {
        ratio: 1.5,
        step: 3.0,
    };
}
/// Responses below this are zero for the stated variance (squares below 1e-400).
const TINY: f64 = 1e-200;
/// Longest horizon accepted (the stated variance is computed step by step at build).
pub(super) const MAX_HORIZON: u64 = 1 << 32;
/// Stated-variance samples kept (a step between two samples states the later one's
/// variance, an upper bound: the variance never decreases with the step).
const SAMPLES: u64 = 1 << 16;

/// The encoder's buffers and everything stated about them.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The damping the target `(1 - beta z)^(-1/2)` was chosen with.
    pub beta: f64,
    /// `theta_i = theta_m[i] / 2^64` (exact in f64 as well; tests: the exact integer
    /// encoder the block encoder is held against).
    #[cfg(test)]
    pub(super) theta_m: Vec<u64>,
    /// `omega_i = w[i] / 2^24` (tests, as `theta_m`).
    #[cfg(test)]
    pub(super) w: Vec<i64>,
    /// The same `theta_i` and `omega_i` as f64 (exactly).
    pub(super) theta: Vec<f64>,
    pub(super) omega: Vec<f64>,
    /// `||C e_0||_2` over the horizon: the L2 sensitivity of the exact encoder for values
    /// in [0, 1] (rounded up).
    pub norm: f64,
    /// Largest deviation of the encoder from the exact one, per step (in values): the
    /// block encoder's bound (`blt::block`).
    pub enc_err: f64,
    /// The mixture in block form.
    pub(super) mix: BlockMix,
    /// Stated variance per unit noise variance: `sum_(k <= j) g_k^2` at steps
    /// `j = (s + 1) stride - 1`, `g` the estimates' response to one unit of noise.
    cum: Vec<f64>,
    stride: u64,
}

/// `(1 - z)^(-1/2) = sum c_k z^k` as `c_k = (1/pi) int_0^1 t^(k-1) sqrt(t) / sqrt(1 - t) dt`,
/// a mixture of geometric sequences. With `1 - t = e^-s` it is
/// `(1/pi) int_0^inf t^(k-1) sqrt(t (1 - t)) ds`, whose integrand for large `k` is a bump
/// of width about 1 around `s = ln k`: nodes from `s = e^-4` growing geometrically (steps
/// `spacing.ratio` times the node) up to steps of `spacing.step`, to the memory `memory` (where `1 - t` is about
/// `1 / (16 memory)`, never closer to 1 than `2^MIN_GAP_LOG2`), trapezoid weights, and the
/// tail beyond the last node (`int e^(-s/2) ds`) lumped onto it. `(theta, omega)` with
/// `c_k ~ sum omega theta^(k-1)` (k >= 1), about 1% off for every `k` below the memory
/// with [`Spacing::FINE`].
pub(super) fn quadrature(memory: f64, spacing: Spacing) -> Vec<(f64, f64)> {
    let s_max = (16.0 * memory.max(2.0))
        .ln()
        .min(-f64::from(MIN_GAP_LOG2) * std::f64::consts::LN_2);
    let mut s = vec![S_MIN];
    while let Some(&last) = s.last()
        && last < s_max
    {
        s.push((last + (spacing.ratio * last).min(spacing.step)).min(s_max));
    }
    let n = s.len();
    (0..n)
        .map(|j| {
            let lo = if j > 0 { s[j - 1] } else { 0.0 };
            let hi = if j + 1 < n { s[j + 1] } else { s[j] };
            let gap = (-s[j]).exp(); // 1 - t
            let t = 1.0 - gap;
            let mut omega = (t * gap).sqrt() * (hi - lo) / 2.0 / std::f64::consts::PI;
            if j + 1 == n {
                omega += 2.0 * (-s[j] / 2.0).exp() / std::f64::consts::PI;
            }
            (t, omega)
        })
        .collect()
}

/// The response of an estimate to one unit of noise on the stream at step 0, step by step:
/// the stream's response (the decoder's impulse response) in, the estimate's out.
#[derive(Debug, Clone)]
struct Workload {
    kind: Kind,
    s: f64,
    /// Window sums: prefix sums `P` in a ring of the last `W`; `g_k = P_k - P_(k - W)`.
    ring: Vec<f64>,
    at: usize,
}

impl Workload {
    fn new(kind: Kind) -> Self {
        Self {
            kind,
            s: 0.0,
            ring: Vec::new(),
            at: 0,
        }
    }

    #[inline]
    fn push(&mut self, v: f64) -> f64 {
        match self.kind {
            Kind::Running { .. } => {
                self.s += v;
                self.s
            }
            Kind::Exponential { alpha, .. } => {
                self.s = alpha * self.s + v;
                if self.s.abs() < TINY {
                    self.s = 0.0; // decayed away (and no subnormal arithmetic)
                }
                self.s
            }
            Kind::Window { w } => {
                let w = usize::try_from(w).unwrap_or(usize::MAX).max(1);
                self.s += v;
                let old = if self.ring.len() < w {
                    self.ring.push(self.s);
                    0.0
                } else {
                    let o = std::mem::replace(&mut self.ring[self.at], self.s);
                    self.at = if self.at + 1 == w { 0 } else { self.at + 1 };
                    o
                };
                self.s - old
            }
        }
    }
}

/// Steps whose ratios `(k - 1/2) / k` and `(k - 3/2) / k` are computed once for every
/// candidate damping.
const CHUNK: usize = 1 << 14;

/// The proxy objective of one damping `beta`: sensitivity^2 times the mean variance, with
/// the ideal square-root factor `(1 - beta z)^(-1/2)` (its inverse `(1 - beta z)^(1/2)`),
/// accumulated a chunk of steps at a time.
#[derive(Debug, Clone)]
struct Proxy {
    beta: f64,
    horizon: u64,
    /// `c_k` of the factor and `sum c_k^2` (until a term is below 1e-20 of the sum).
    c: f64,
    sens2: f64,
    sens_done: bool,
    /// Steps of the inverse's response that count, `n_k`, and `sum (T - k) g_k^2`.
    steps: u64,
    n: f64,
    work: Workload,
    mean: f64,
}

impl Proxy {
    fn new(kind: Kind, horizon: u64, beta: f64) -> Self {
        // Decaying workloads (window and exponential sums) have responses that vanish
        // after a few memories of the workload and of beta: the rest adds nothing.
        let memory = |m: f64| (64.0 * m).min(horizon as f64) as u64;
        let damped = if beta < 1.0 {
            1.0 / (1.0 - beta)
        } else {
            f64::INFINITY
        };
        let steps = match kind {
            Kind::Running { .. } => horizon,
            Kind::Exponential { alpha, .. } => memory((1.0 / (1.0 - alpha)).max(damped)),
            Kind::Window { w } => memory((w as f64).max(damped)),
        };
        Self {
            beta,
            horizon,
            c: 1.0,
            sens2: 0.0,
            sens_done: false,
            steps,
            n: 1.0,
            work: Workload::new(kind),
            mean: 0.0,
        }
    }

    /// Steps `k0 .. k0 + ra.len()`, `ra[i]` and `rb[i]` the ratios of step `k0 + i`.
    fn run(&mut self, k0: u64, ra: &[f64], rb: &[f64]) {
        let sens_end = self.horizon.saturating_sub(k0).min(ra.len() as u64) as usize;
        if !self.sens_done {
            for (i, &r) in ra[..sens_end].iter().enumerate() {
                if k0 + i as u64 > 0 {
                    self.c *= self.beta * r;
                }
                self.sens2 += self.c * self.c;
                if self.c * self.c < 1e-20 * self.sens2 {
                    self.sens_done = true;
                    break;
                }
            }
        }
        let inv_end = self.steps.saturating_sub(k0).min(rb.len() as u64) as usize;
        let running = matches!(self.work.kind, Kind::Running { .. });
        for (i, &r) in rb[..inv_end].iter().enumerate() {
            let k = k0 + i as u64;
            if k > 0 {
                self.n *= self.beta * r;
            }
            let g = self.work.push(self.n);
            self.mean += (self.horizon - k) as f64 * g * g;
            // A running sum whose input no longer moves it (below 2^-60 of it) stays
            // constant: the remaining steps add sum_(k' > k) (T - k') g^2 in closed form.
            if running && k > 0 && self.n.abs() < 1e-18 * g.abs() {
                let left = (self.horizon - k - 1) as f64;
                self.mean += left * (left + 1.0) / 2.0 * g * g;
                self.steps = k + 1;
                break;
            }
        }
    }

    fn value(&self) -> f64 {
        self.sens2 * self.mean / self.horizon as f64
    }
}

/// The proxy objectives of the dampings `betas`: every one advances over the same chunk of
/// steps (its ratios divided once), the dampings in parallel.
fn proxies(kind: Kind, horizon: u64, betas: &[f64]) -> Vec<f64> {
    use rayon::prelude::*;
    let mut proxies: Vec<Proxy> = betas
        .iter()
        .map(|&b| Proxy::new(kind, horizon, b))
        .collect();
    let (mut ra, mut rb) = (vec![0.0f64; CHUNK], vec![0.0f64; CHUNK]);
    let mut k0 = 0u64;
    while proxies
        .iter()
        .any(|p| !p.sens_done && k0 < p.horizon || k0 < p.steps)
    {
        for (i, (a, b)) in ra.iter_mut().zip(rb.iter_mut()).enumerate() {
            let k = (k0 + i as u64) as f64;
            (*a, *b) = ((k - 0.5) / k, (k - 1.5) / k);
        }
        proxies.par_iter_mut().for_each(|p| p.run(k0, &ra, &rb));
        k0 += CHUNK as u64;
    }
    proxies.iter().map(Proxy::value).collect()
}

/// The candidate dampings: `1 - 2^-s` for `s = 2, 3, ..`, memories up to twice the
/// horizon, then `1`.
fn candidates(horizon: u64) -> Vec<f64> {
    let top = 64 - horizon.leading_zeros() + 1;
    let mut cands: Vec<f64> = (2..=top.min(40))
        .map(|s| 1.0 - (-f64::from(s)).exp2())
        .collect();
    cands.push(1.0);
    cands
}

/// The damping with the least proxy objective among the candidates. Window and
/// exponential sums search from the shortest memory up, two at a time, and stop once two
/// candidates in a row are worse than the best so far (their objective falls, then rises,
/// with the memory): they never pay for the longest memories. A running sum's best is the
/// longest memory or next to it: all its candidates go in one pass.
pub fn choose_beta(kind: Kind, horizon: u64) -> f64 {
    let cands = candidates(horizon);
    let batch = match kind {
        Kind::Running { .. } => cands.len(),
        _ => 2,
    };
    let (mut best, mut best_v, mut worse) = (1.0, f64::INFINITY, 0);
    for pair in cands.chunks(batch) {
        for (&b, v) in pair.iter().zip(proxies(kind, horizon, pair)) {
            if v < best_v {
                (best, best_v, worse) = (b, v, 0);
            } else {
                worse += 1;
            }
        }
        if worse >= 2 {
            break;
        }
    }
    best
}

/// `sum omega_i s_i` after `s_i <- theta_i s_i + prev` (one step of a mixture of
/// geometric buffers): buffer `i` adds into lane `i mod 4` and the lanes are added as
/// `(l0 + l1) + (l2 + l3)`. Every path (encoder responses, decoders, stated variances) uses
/// this one order; four lanes make a quarter of the dependent additions of a plain sum.
#[inline]
pub(super) fn mix_step(theta: &[f64], omega: &[f64], s: &mut [f64], prev: f64) -> f64 {
    let mut lanes = [0.0f64; 4];
    let mut sc = s.chunks_exact_mut(4);
    let mut tc = theta.chunks_exact(4);
    let mut oc = omega.chunks_exact(4);
    for ((s4, t4), o4) in (&mut sc).zip(&mut tc).zip(&mut oc) {
        for j in 0..4 {
            s4[j] = t4[j] * s4[j] + prev;
            lanes[j] += o4[j] * s4[j];
        }
    }
    let rest = sc.into_remainder().iter_mut();
    for (j, ((v, &t), &o)) in rest.zip(tc.remainder()).zip(oc.remainder()).enumerate() {
        *v = t * *v + prev;
        lanes[j] += o * *v;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// The integer buffers of a mixture `sum omega_i theta_i^(k - 1)` fitted to
/// `(1 - beta z)^(-1/2)` up to `memory` steps: `theta_i = theta_m[i] / 2^64`,
/// `omega_i = w[i] / 2^24` (and both exactly as f64).
#[derive(Debug, Clone)]
pub(super) struct Buffers {
    pub theta_m: Vec<u64>,
    pub w: Vec<i64>,
    pub theta: Vec<f64>,
    pub omega: Vec<f64>,
}

impl Buffers {
    /// The buffers of [`quadrature`]`(memory)` damped by `beta`, in the encoder's ranges.
    pub(super) fn new(memory: f64, beta: f64, spacing: Spacing) -> Result<Self> {
        let mut b = Self {
            theta_m: vec![],
            w: vec![],
            theta: vec![],
            omega: vec![],
        };
        for (t, om) in quadrature(memory, spacing) {
            let th = ((t * beta) * 2f64.powi(64)).floor();
            let wi = (om * beta * f64::from(1u32 << OMEGA_BITS)).round();
            if wi == 0.0 || th <= 0.0 {
                continue;
            }
            let m = th as u64;
            let gap = 2f64.powi(64) - th;
            if gap < 2f64.powi(64 + MIN_GAP_LOG2)
                || wi.abs() / f64::from(1u32 << OMEGA_BITS) >= MAX_OMEGA
            {
                return Err(Error::Numerical("factorization buffer out of range".into()));
            }
            b.theta_m.push(m);
            b.w.push(wi as i64);
            b.theta.push(m as f64 * 2f64.powi(-64));
            b.omega.push(wi / f64::from(1u32 << OMEGA_BITS));
        }
        Ok(b)
    }
}

/// The integer encoder's largest deviation per step from the exact mixture, in values (tests:
/// the reference the block encoder is held against):
/// each floor is at most one unit `2^-64` off, carried by `|omega_i| / (1 - theta_i)`.
#[cfg(test)]
pub(super) fn encoder_error(theta_m: &[u64], omega: &[f64]) -> f64 {
    theta_m
        .iter()
        .zip(omega)
        .map(|(&m, o)| o.abs() / ((2f64.powi(64) - m as f64) * 2f64.powi(-64)))
        .sum::<f64>()
        * 2f64.powi(-64)
}

/// `floor(m S / 2^64)` for `S < 2^88` (tests, as [`encoder_error`]).
#[cfg(test)]
pub(super) fn mul_theta(m: u64, s: u128) -> u128 {
    let (hi, lo) = (s >> 64, s & u128::from(u64::MAX));
    u128::from(m) * hi + ((u128::from(m) * lo) >> 64)
}

impl Fit {
    /// The buffers for `kind` over `horizon` steps with damping `beta`, and their stated
    /// sensitivity and variance.
    pub fn new(kind: Kind, horizon: u64, beta: f64) -> Result<Self> {
        if horizon == 0 || horizon > MAX_HORIZON {
            return Err(Error::param(
                "horizon",
                format!("the factorization needs a horizon of 1 to 2^32 steps, got {horizon}"),
            ));
        }
        let memory = if beta < 1.0 {
            (8.0 / (1.0 - beta)).min(horizon as f64)
        } else {
            horizon as f64
        };
        let Buffers {
            theta_m,
            #[cfg(test)]
            w,
            theta,
            omega,
            ..
        } = Buffers::new(memory, beta, Spacing::FINE)?;
        let norm = column_norm(&theta_m, &omega, horizon);
        let mix = BlockMix::new(&theta_m, &theta, &omega, Precision::Int64 { q_max: 1.0 });
        let enc_err = mix.enc_err();
        let mut fit = Self {
            beta,
            #[cfg(test)]
            theta_m,
            #[cfg(test)]
            w,
            theta,
            omega,
            norm,
            enc_err,
            mix,
            cum: Vec::new(),
            stride: 1,
        };
        fit.state_variance(kind, horizon)?;
        Ok(fit)
    }

    /// Buffers in the encoder.
    pub fn buffers(&self) -> usize {
        self.theta.len()
    }

    /// The stated variance per unit noise variance, sampled (see the field).
    fn state_variance(&mut self, kind: Kind, horizon: u64) -> Result<()> {
        self.stride = horizon.div_ceil(SAMPLES).max(1);
        let d = self.theta.len();
        let (mut r, mut prev) = (vec![0.0f64; d], 0.0f64);
        let (theta, omega) = (&self.theta, &self.omega);
        // Once the response and every buffer are below 1e-200 the rest of the response is
        // zero to within 1e-200 (it would only run into subnormal numbers, a hundred times
        // slower): it is taken as zero.
        let mut vanished = false;
        let impulse = (0..horizon).map(|t| {
            if vanished {
                return 0.0;
            }
            let x = if t == 0 { 1.0 } else { 0.0 };
            let dec = x - mix_step(theta, omega, &mut r, prev);
            prev = dec;
            if t % 1024 == 1023 && dec.abs() < TINY && r.iter().all(|v| v.abs() < TINY) {
                vanished = true;
            }
            dec
        });
        let (mut cum, mut k, mut out) = (0.0f64, 0u64, Vec::new());
        let stride = self.stride;
        let mut work = Workload::new(kind);
        for v in impulse {
            let g = work.push(v);
            cum += g * g;
            k += 1;
            if k % stride == 0 || k == horizon {
                out.push(cum);
            }
        }
        if !out.iter().all(|v| v.is_finite()) {
            return Err(Error::Numerical(
                "the factorization's inverse is unstable at this horizon".into(),
            ));
        }
        self.cum = out;
        Ok(())
    }

    /// Stated variance of the estimate at step `j` per unit noise variance (an upper bound
    /// within a sample's stride).
    pub fn variance_at(&self, j: u64) -> f64 {
        let s = (j / self.stride) as usize;
        self.cum[s.min(self.cum.len() - 1)]
    }

    /// The mean over the horizon of [`variance_at`](Self::variance_at).
    pub fn mean_variance(&self) -> f64 {
        self.cum.iter().sum::<f64>() / self.cum.len() as f64
    }
}

/// `||C e_0||_2` over `horizon` steps, `c_0 = 1`, `c_k = sum omega_i theta_i^(k-1)`:
/// `1 + sum_(i, j) omega_i omega_j (1 - (theta_i theta_j)^(T - 1)) / (1 - theta_i theta_j)`,
/// each `1 - theta` exact from its integer form, then a margin of `1e-9` relative for the
/// rounding of this sum (a few ulps per term) and the powers.
fn column_norm(theta_m: &[u64], omega: &[f64], horizon: u64) -> f64 {
    let gap: Vec<f64> = theta_m
        .iter()
        .map(|&m| (2f64.powi(64) - m as f64) * 2f64.powi(-64))
        .collect();
    let ln: Vec<f64> = gap.iter().map(|g| (-g).ln_1p()).collect();
    let mut s = 1.0;
    for i in 0..gap.len() {
        for j in 0..gap.len() {
            // 1 - theta_i theta_j = g_i + g_j - g_i g_j.
            let one_minus = gap[i] + gap[j] - gap[i] * gap[j];
            let pow = ((horizon - 1) as f64 * (ln[i] + ln[j])).exp();
            s += omega[i] * omega[j] * (1.0 - pow) / one_minus;
        }
    }
    s.sqrt() * (1.0 + 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadrature_reproduces_the_square_root_factor() {
        // The largest relative error of the fitted coefficients c_k, k < 200000.
        let worst = |spacing: Spacing| {
            let q = quadrature(1e6, spacing);
            let (mut c, mut worst) = (1.0f64, 0.0f64);
            for k in 1..200_000u64 {
                c *= (k as f64 - 0.5) / k as f64;
                let approx: f64 = q.iter().map(|(t, o)| o * t.powf(k as f64 - 1.0)).sum();
                worst = worst.max((approx / c - 1.0).abs());
            }
            worst
        };
        let fine = worst(Spacing::FINE);
        assert!(fine < 0.02, "{fine}");
        // The coarse spacing: a few per cent off (the square root's error barely moves).
        let coarse = worst(Spacing::COARSE);
        assert!(coarse < 0.06, "{coarse}");
    }

    #[test]
    fn the_column_norm_is_the_sum_of_squares() {
        let fit = Fit::new(Kind::Running { horizon: 5000 }, 5000, 1.0).expect("fit");
        let mut s = 1.0;
        for k in 1..5000 {
            let c: f64 = fit
                .theta
                .iter()
                .zip(&fit.omega)
                .map(|(t, o)| o * t.powi(k - 1))
                .sum();
            s += c * c;
        }
        assert!(
            (fit.norm / s.sqrt() - 1.0).abs() < 1e-8,
            "{} {}",
            fit.norm,
            s.sqrt()
        );
        // About sqrt(ln(T) / pi + 0.6): the square-root factorization's.
        assert!(fit.norm > 1.5 && fit.norm < 2.5, "{}", fit.norm);
        assert!(fit.enc_err < 1e-10, "{}", fit.enc_err);
    }

    #[test]
    fn the_search_finds_the_least_proxy() {
        // The early stop picks what the whole search picks, on the workloads in use.
        for (kind, h) in [
            (Kind::Window { w: 60 }, 3_000_000u64),
            (Kind::Window { w: 1440 }, 3_000_000),
            (Kind::Window { w: 1024 }, 30_000_000),
            (
                Kind::Exponential {
                    alpha: 0.99,
                    horizon: Some(3_000_000),
                },
                3_000_000,
            ),
            (
                Kind::Exponential {
                    alpha: 0.999,
                    horizon: Some(3_000_000),
                },
                3_000_000,
            ),
            (Kind::Running { horizon: 100_000 }, 100_000),
            (Kind::Running { horizon: 3_000_000 }, 3_000_000),
        ] {
            let cands = candidates(h);
            let values = proxies(kind, h, &cands);
            let (_, whole) = values
                .iter()
                .zip(&cands)
                .min_by(|a, b| a.0.total_cmp(b.0))
                .expect("candidates");
            assert_eq!(choose_beta(kind, h), *whole, "{kind:?}");
        }
    }

    #[test]
    fn the_damping_follows_the_workload() {
        // A short window wants a short memory; a running sum the whole horizon.
        let b = choose_beta(Kind::Window { w: 64 }, 100_000);
        assert!(b < 1.0 - 1.0 / 4096.0, "{b}");
        let r = choose_beta(Kind::Running { horizon: 100_000 }, 100_000);
        assert!(r > 1.0 - 1.0 / 16_384.0, "{r}");
    }
}

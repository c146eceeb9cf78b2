//! Keyed, counter-based Laplace noise for tree counters: the noise of counter `id` is a pure
//! function of (secret 256-bit key, stream, id), so the online path (one counter at a time)
//! and the bulk path (millions of counters in parallel) draw exactly the same values.
//!
//! Generator: ChaCha20 keyed by the secret key, nonce = `stream`, and counter `id` owns the
//! 8 keystream bytes at word position `2 id` (one little-endian u64). Bulk reads the
//! keystream sequentially, online seeks: the same bytes either way.
//!
//! Float safety (as `dp::laplace`): a counter is released on the grid `gamma Z`, `gamma = 2^k`
//! chosen from the scale only, as `gamma (round(v / gamma) + Z)` with `Z` a discrete Laplace.
//! Privacy map: if the true counters have L1 sensitivity `S` and one input touches at most
//! `h` counters, the rounded counters have integer L1 sensitivity at most `ceil(S / gamma) +
//! h` grid steps, and discrete Laplace with parameter `t` per counter is `(that) / t`-DP; so
//! `t = (ceil(S / gamma) + h) / eps`.
//!
//! Sampler: `U` in (0, 1] (53 bits) and a sign bit from the first word; `M = floor(-t ln U)` is
//! geometric with `P(M >= k) = q^k`, `q = e^(-1/t)`; `Z = +-M`, rejecting (-, 0) so zero is not
//! counted twice, which gives exactly `P(Z = z) = (1 - q)/(1 + q) q^|z|`. A rejection (rate
//! `(1 - q)/2`, about `2^-31` at the grids used) retries with words of stream `!stream` at
//! the same position: still a pure function of the id.

use crate::error::{Error, Result, check_epsilon};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// Bits of grid resolution below the per-counter noise scale.
pub const GRID_BITS_BELOW_SCALE: i32 = 30;

/// Noise for the counters of one mechanism instance.
#[derive(Clone)]
pub struct KeyedNoise {
    key: [u8; 32],
    stream: u64,
    /// Grid exponent: releases are multiples of 2^grid_exp.
    pub grid_exp: i32,
    /// Discrete Laplace parameter in grid steps.
    pub t: f64,
    gamma: f64,
    inv_gamma: f64,
}

impl std::fmt::Debug for KeyedNoise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyedNoise(stream {}, grid 2^{}, t {})",
            self.stream, self.grid_exp, self.t
        )
    }
}

impl KeyedNoise {
    /// Per-counter noise for L1 sensitivity `sensitivity` spread over at most `touched`
    /// counters per input, at privacy `epsilon`.
    pub fn new(
        key: [u8; 32],
        stream: u64,
        sensitivity: f64,
        touched: u32,
        epsilon: f64,
    ) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(Error::param(
                "sensitivity",
                format!("must be finite and > 0, got {sensitivity}"),
            ));
        }
        // 2^30 grid steps below the scale, and below the sensitivity when eps > 1 would put
        // the grid above it (then rounding, not the data, would dominate the sensitivity).
        let grid_exp =
            (sensitivity * (1.0 / epsilon).min(1.0)).log2().floor() as i32 - GRID_BITS_BELOW_SCALE;
        Ok(Self::on_grid(
            key,
            stream,
            sensitivity,
            touched,
            epsilon,
            grid_exp,
        ))
    }

    /// The calibration on grid `2^grid_exp`: `t = (ceil(S / gamma) + touched) / eps`.
    fn on_grid(
        key: [u8; 32],
        stream: u64,
        sensitivity: f64,
        touched: u32,
        epsilon: f64,
        grid_exp: i32,
    ) -> Self {
        let gamma = (grid_exp as f64).exp2();
        let t = ((sensitivity / gamma).ceil() + f64::from(touched)) / epsilon;
        Self {
            key,
            stream,
            grid_exp,
            t,
            gamma,
            inv_gamma: 1.0 / gamma,
        }
    }

    /// Like [`new`](Self::new), with a grid coarse enough that every sum of at most `terms`
    /// releases of counters whose true values are at most `max_value` is exact in f64 (so
    /// any summation order gives the same bits). `|Z| <= 37 t` always: `U >= 2^-53`.
    pub fn new_exact(
        key: [u8; 32],
        stream: u64,
        sensitivity: f64,
        touched: u32,
        epsilon: f64,
        max_value: f64,
        terms: u32,
    ) -> Result<Self> {
        let fine = Self::new(key, stream, sensitivity, touched, epsilon)?;
        let worst = f64::from(terms) * (max_value + 38.0 * fine.scale() * 2.0);
        let needed = worst.log2().ceil() as i32 - 51;
        if needed <= fine.grid_exp {
            return Ok(fine);
        }
        Ok(Self::on_grid(
            key,
            stream,
            sensitivity,
            touched,
            epsilon,
            needed,
        ))
    }

    /// The grid step.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The effective continuous scale `gamma t` (a hair above `S / eps`).
    pub fn scale(&self) -> f64 {
        self.gamma * self.t
    }

    /// Standard deviation of one counter's noise (`sqrt 2` times the scale, up to the grid).
    pub fn std_dev(&self) -> f64 {
        std::f64::consts::SQRT_2 * self.scale()
    }

    fn rng(&self, stream: u64) -> ChaCha20Rng {
        let mut r = ChaCha20Rng::from_seed(self.key);
        r.set_stream(stream);
        r
    }

    /// One attempt from one word; `None` is a rejection.
    fn attempt(&self, w: u64) -> Option<i64> {
        let negative = w >> 63 == 1;
        let u = ((w & ((1u64 << 53) - 1)) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
        // -t ln U >= 0, so truncation is the floor.
        let m = (-self.t * u.ln()) as i64;
        match (negative, m) {
            (true, 0) => None,
            (true, m) => Some(-m),
            (false, m) => Some(m),
        }
    }

    /// The raw keystream words of counters `first .. first + out.len()` (for mechanisms whose
    /// counters use different scales: each level's `draw` turns a word into noise).
    pub fn words(&self, first: u64, out: &mut [u64]) {
        let mut r = self.rng(self.stream);
        r.set_word_pos(u128::from(first) * 2);
        for o in out.iter_mut() {
            *o = r.next_u64();
        }
    }

    /// The discrete Laplace draw of counter `id` from its word.
    #[inline]
    pub fn draw(&self, id: u64, w0: u64) -> i64 {
        if let Some(z) = self.attempt(w0) {
            return z;
        }
        self.retry(id)
    }

    #[cold]
    fn retry(&self, id: u64) -> i64 {
        let mut r = self.rng(!self.stream);
        r.set_word_pos(u128::from(id) * 2);
        loop {
            if let Some(z) = self.attempt(r.next_u64()) {
                return z;
            }
        }
    }

    /// Noise of counter `id` (random access: the online path).
    pub fn z(&self, id: u64) -> i64 {
        let mut r = self.rng(self.stream);
        r.set_word_pos(u128::from(id) * 2);
        self.draw(id, r.next_u64())
    }

    /// Noise of counters `first .. first + out.len()` (sequential keystream: the bulk path).
    pub fn fill(&self, first: u64, out: &mut [i64]) {
        let mut r = self.rng(self.stream);
        r.set_word_pos(u128::from(first) * 2);
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.draw(first + i as u64, r.next_u64());
        }
    }

    /// The released value of a counter with true value `v` and noise `z`.
    #[inline]
    pub fn release(&self, v: f64, z: i64) -> f64 {
        // gamma is a power of two: multiplying by its inverse is exact.
        self.gamma * ((v * self.inv_gamma).round() + z as f64)
    }
}

/// A fresh secret key from the OS, or one derived from a user seed (recorded and warned
/// about by the caller, like every user seed).
pub fn key(seed: Option<u64>) -> [u8; 32] {
    let mut k = [0u8; 32];
    match seed {
        Some(s) => ChaCha20Rng::seed_from_u64(s).fill_bytes(&mut k),
        None => ChaCha20Rng::from_os_rng().fill_bytes(&mut k),
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::stattest::{ALPHA, chi_square_test};

    #[test]
    fn random_access_equals_sequential() {
        let n = KeyedNoise::new([7; 32], 3, 4.0, 4, 0.5).expect("ok");
        let mut seq = vec![0i64; 1000];
        n.fill(12_345, &mut seq);
        for (i, z) in seq.iter().enumerate() {
            assert_eq!(*z, n.z(12_345 + i as u64));
        }
        let other = KeyedNoise::new([7; 32], 4, 4.0, 4, 0.5).expect("ok");
        assert_ne!(other.z(12_345), seq[0], "streams are independent");
    }

    /// The draws follow the two-sided geometric law exactly; 30% less noise is rejected.
    #[test]
    fn discrete_laplace_law_and_power() {
        let n = KeyedNoise::new([1; 32], 0, 1.0, 1, 1.0).expect("ok");
        // Check the law in grid units with a small t so bins are populated.
        let small = KeyedNoise {
            t: 3.0,
            ..n.clone()
        };
        let mut z = vec![0i64; 200_000];
        small.fill(0, &mut z);
        let probs = |t: f64| -> Vec<f64> {
            let q = (-1.0 / t).exp();
            let c = (1.0 - q) / (1.0 + q);
            let mut p: Vec<f64> = (-15..=15)
                .map(|k: i64| c * q.powi(k.abs() as i32))
                .collect();
            let tail = (1.0 - p.iter().sum::<f64>()) / 2.0;
            p.insert(0, tail);
            p.push(tail);
            p
        };
        let hist = |z: &[i64]| -> Vec<u64> {
            let mut h = vec![0u64; 33];
            for &v in z {
                h[(v.clamp(-16, 16) + 16) as usize] += 1;
            }
            h
        };
        let expected: Vec<f64> = probs(3.0).iter().map(|p| p * z.len() as f64).collect();
        let (_, p) = chi_square_test(&hist(&z), &expected);
        assert!(p > ALPHA, "p = {p}");
        let weak = KeyedNoise { t: 2.1, ..n };
        weak.fill(0, &mut z);
        let (_, p) = chi_square_test(&hist(&z), &expected);
        assert!(p < ALPHA, "30% less noise must be detected, p = {p}");
    }

    #[test]
    fn calibration_accounts_for_rounding() {
        let n = KeyedNoise::new([0; 32], 0, 11.0, 11, 0.1).expect("ok");
        assert!(n.scale() >= 110.0 && n.scale() < 110.0 * (1.0 + 1e-6));
        assert_eq!(n.release(3.0, 0), 3.0);
        assert!(KeyedNoise::new([0; 32], 0, 1.0, 1, 0.0).is_err());
        assert!(KeyedNoise::new([0; 32], 0, f64::NAN, 1, 1.0).is_err());
        // Tiny eps (noise 10^17 x the sensitivity): the grid stays below the sensitivity, so
        // rounding does not inflate the scale.
        let tiny = KeyedNoise::new([0; 32], 0, 1e-16, 20, 1e-17).expect("ok");
        assert!((tiny.scale() / 10.0 - 1.0).abs() < 1e-6, "{}", tiny.scale());
        // A coarser grid when sums could lose bits; the scale stays the same.
        let e = KeyedNoise::new_exact([0; 32], 0, 11.0, 11, 0.1, 1e11, 64).expect("ok");
        assert!(e.grid_exp > n.grid_exp);
        assert!((e.scale() / n.scale() - 1.0).abs() < 1e-2);
    }
}

//! Keyed, counter-based discrete Gaussian noise for the zCDP mechanisms (`--privacy zcdp`):
//! the noise of counter `id` is a pure function of (secret 256-bit key, stream, id), so the
//! online path and the bulk path (counters drawn in parallel) draw the same values.
//!
//! Generator: a subkey `ChaCha20(key, nonce = 3 2^62 + stream)`'s first 32 bytes keys the
//! main keystream (nonce = `stream`), where counter `id` owns the 64-bit word at `id`; its
//! next 32 bytes key the extension streams (nonce = `id`), read when a draw needs more than
//! those 64 bits (about 6 draws in 1,000 at the sigmas in use: a rejected proposal or an
//! undecided first comparison). The subkey's nonce is outside the ranges [`super::noise`] uses,
//! so a Laplace and a Gaussian instance under one key never share a word.
//!
//! Law: [`DiscreteGaussian`], exact, table-driven (about one word and 10 ns a draw; it
//! replaced Canonne, Kamath & Steinke's Algorithm 3 and four words a counter on
//! 2026-11-29, so the draws of a key changed then). Float safety as in `kinsey_dp::gaussian`: a counter is released on the
//! grid `gamma Z` as `gamma (round(v / gamma) + Z)`. If the true counters have L2
//! sensitivity `S` and one input touches at most `h` counters, the rounded counters have
//! integer L2 sensitivity at most `Delta_int = S / gamma + sqrt(h)` (rounding to the
//! nearest moves each touched counter's difference by at most one step), and independent
//! discrete Gaussians of parameter `sigma^2` per counter are `Delta_int^2 / (2 sigma^2)`-zCDP
//! (CKS Theorem 14). `sigma` is set from `rho` in grid steps; the law's rational parameter
//! rounds it up.

use super::noise::KeyedNoise;
use kinsey_core::{Error, Result};
use kinsey_dp::dgauss::{DiscreteGaussian, UNDECIDED};
use kinsey_dp::exact::RandomBits;
use kinsey_kernels::chacha::ChaCha20;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

/// Keystream words each counter owns before its extension stream.
const WORDS: usize = 1;
// `KeyedGauss::fill` gives `sample_words` one word a counter.
const _: () = assert!(WORDS == 1);

/// Grid steps below the noise's standard deviation: the rounding adds `sqrt(h) 2^-24` of a
/// standard deviation to the sensitivity.
pub const GRID_BITS_BELOW_SIGMA: i32 = 24;

/// Counters per parallel piece of a fill.
const PIECE: usize = 1 << 12;

/// Discrete Gaussian noise for the counters of one mechanism instance.
#[derive(Clone)]
pub struct KeyedGauss {
    keystream: ChaCha20,
    ext_key: [u8; 32],
    stream: u64,
    /// Grid exponent: releases are multiples of `2^grid_exp`.
    pub grid_exp: i32,
    law: DiscreteGaussian,
    gamma: f64,
    inv_gamma: f64,
    /// The zCDP parameter this noise guarantees for the sensitivity it was set for.
    rho: f64,
}

impl std::fmt::Debug for KeyedGauss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyedGauss(stream {}, grid 2^{}, sigma {:.6e})",
            self.stream,
            self.grid_exp,
            self.std_dev()
        )
    }
}

/// One counter's random words: its keystream word, then its extension stream.
struct Bits<'a> {
    noise: &'a KeyedGauss,
    id: u64,
    words: [u64; WORDS],
    used: usize,
    ext: Option<ChaCha20Rng>,
}

impl RandomBits for Bits<'_> {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        if self.used < WORDS {
            self.used += 1;
            return self.words[self.used - 1];
        }
        super::noise::extension_word(&mut self.ext, self.noise.ext_key, self.id)
    }
}

/// The grid exponent for noise of standard deviation `sigma`: [`GRID_BITS_BELOW_SIGMA`]
/// binary digits below it.
pub fn grid_for(sigma: f64) -> i32 {
    sigma.log2().floor() as i32 - GRID_BITS_BELOW_SIGMA
}

/// `sigma` (value units) of `rho`-zCDP Gaussian noise for L2 sensitivity `l2` over `touched`
/// rounded counters on the grid `2^grid_exp`, and that grid's integer sensitivity.
fn sigma_steps(l2: f64, touched: f64, rho: f64, grid_exp: i32) -> (f64, f64) {
    let gamma = f64::from(grid_exp).exp2();
    let d_int = l2 / gamma + touched.sqrt();
    (d_int / (2.0 * rho).sqrt(), d_int)
}

/// Checks a zCDP parameter.
pub fn check_rho(rho: f64) -> Result<()> {
    if rho.is_finite() && rho > 0.0 && rho <= 1e6 {
        Ok(())
    } else {
        Err(Error::param(
            "rho",
            format!("the zCDP parameter must be in (0, 1e6], got {rho}"),
        ))
    }
}

impl KeyedGauss {
    /// Per-counter noise, `rho`-zCDP for counters of L2 sensitivity `l2` of which one input
    /// touches at most `touched` (their rounding counted), on the grid the noise's scale
    /// picks.
    pub fn new(key: [u8; 32], stream: u64, l2: f64, touched: u64, rho: f64) -> Result<Self> {
        check_rho(rho)?;
        if !(l2.is_finite() && l2 > 0.0) {
            return Err(Error::param(
                "sensitivity",
                format!("must be finite and > 0, got {l2}"),
            ));
        }
        let approx = l2 / (2.0 * rho).sqrt();
        Self::on_grid(key, stream, l2, touched, rho, grid_for(approx))
    }

    /// The calibration on grid `2^grid_exp`.
    pub(crate) fn on_grid(
        key: [u8; 32],
        stream: u64,
        l2: f64,
        touched: u64,
        rho: f64,
        grid_exp: i32,
    ) -> Result<Self> {
        if stream >= 1 << 62 {
            return Err(Error::param(
                "stream",
                "Gaussian noise streams are below 2^62",
            ));
        }
        let (sigma, _) = sigma_steps(l2, touched as f64, rho, grid_exp);
        let law = DiscreteGaussian::new(sigma)?;
        let mut sub = ChaCha20Rng::from_seed(key);
        sub.set_stream((3 << 62) | stream);
        let (mut main_key, mut ext_key) = ([0u8; 32], [0u8; 32]);
        sub.fill_bytes(&mut main_key);
        sub.fill_bytes(&mut ext_key);
        let gamma = f64::from(grid_exp).exp2();
        Ok(Self {
            keystream: ChaCha20::new(&main_key, stream),
            ext_key,
            stream,
            grid_exp,
            law,
            gamma,
            inv_gamma: 1.0 / gamma,
            rho,
        })
    }

    /// The zCDP parameter it was calibrated for.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// The grid step.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The law's parameter in grid steps (its variance is at most this squared).
    pub fn sigma_steps(&self) -> f64 {
        self.law.variance().sqrt()
    }

    /// Standard deviation of one counter's noise in value units (the law's parameter, which
    /// its variance approaches from below).
    pub fn std_dev(&self) -> f64 {
        self.gamma * self.sigma_steps()
    }

    /// The counter's draw from its word (random access: the online path).
    pub fn draw(&self, id: u64, words: [u64; WORDS]) -> i64 {
        let mut bits = Bits {
            noise: self,
            id,
            words,
            used: 0,
            ext: None,
        };
        self.law.sample(&mut bits)
    }

    /// Noise of counter `id`.
    pub fn z(&self, id: u64) -> i64 {
        let mut w = [0u64; WORDS];
        self.keystream.fill_u64(WORDS as u64 * id, &mut w);
        self.draw(id, w)
    }

    /// Noise of counters `first .. first + out.len()` (the bulk path: pieces in parallel,
    /// each one pass over its keystream words): the same draws as [`z`](Self::z).
    pub fn fill(&self, first: u64, out: &mut [i64]) -> Result<()> {
        // One word a counter: the batch the word decides first, then the rest drawn in full
        // from the same word (the same values as `z`).
        let piece = |at: u64, o: &mut [i64]| {
            let mut w = vec![0u64; WORDS * o.len()];
            self.keystream.fill_u64(WORDS as u64 * at, &mut w);
            self.law.sample_words(&w, o);
            for (i, (z, &w0)) in o.iter_mut().zip(&w).enumerate() {
                if *z == UNDECIDED {
                    *z = self.draw(at + i as u64, [w0]);
                }
            }
        };
        if out.len() <= PIECE {
            piece(first, out);
        } else {
            out.par_chunks_mut(PIECE)
                .enumerate()
                .for_each(|(i, o)| piece(first + (i * PIECE) as u64, o));
        }
        Ok(())
    }

    /// The released value of a counter whose true value is `v` and whose draw is `z`.
    #[inline]
    pub fn release(&self, v: f64, z: i64) -> f64 {
        ((v * self.inv_gamma).round() + z as f64) * self.gamma
    }

    /// The same key and grid with `factor` times the noise's sigma (tests: a mechanism with
    /// too little noise must be caught).
    #[cfg(test)]
    pub(crate) fn scaled(&self, factor: f64) -> Self {
        Self {
            law: DiscreteGaussian::new(self.sigma_steps() * factor).expect("valid test sigma"),
            ..self.clone()
        }
    }
}

/// Counters drawn at a time by [`Draws`].
const BATCH: usize = 4096;

/// The draws of consecutive counters of one noise stream, refilled a batch at a time by
/// `fill(first, out)` (a counter-keyed fill: any batching gives the same values).
#[derive(Debug, Clone, Default)]
pub(crate) struct Draws {
    first: u64,
    z: Vec<i64>,
}

impl Draws {
    /// Whether counters `first .. first + count` are drawn.
    fn covers(&self, first: u64, count: u64) -> bool {
        first >= self.first && first + count <= self.first + self.z.len() as u64
    }

    /// Counters `first .. first + count` from `ahead` when it drew them (swapped in), else
    /// drawn now.
    pub(crate) fn take_or_draw(
        &mut self,
        ahead: &mut Draws,
        fill: impl FnOnce(u64, &mut [i64]) -> Result<()>,
        first: u64,
        count: u64,
    ) -> Result<()> {
        if count > 0 && !self.covers(first, count) && ahead.covers(first, count) {
            std::mem::swap(self, ahead);
        }
        self.ensure(fill, first, count)
    }

    /// Draw counters `first .. first + count` now, in one fill (on every thread when it is
    /// long), unless they are drawn already.
    pub(crate) fn ensure(
        &mut self,
        fill: impl FnOnce(u64, &mut [i64]) -> Result<()>,
        first: u64,
        count: u64,
    ) -> Result<()> {
        if count == 0 || self.covers(first, count) {
            return Ok(());
        }
        self.z.resize((count as usize).max(BATCH), 0);
        self.first = first;
        fill(first, &mut self.z)
    }

    /// The draws of counters `first .. first + count` when they are all drawn.
    #[inline]
    pub(crate) fn slice(&self, first: u64, count: usize) -> Option<&[i64]> {
        let at = usize::try_from(first.checked_sub(self.first)?).ok()?;
        self.z.get(at..at.checked_add(count)?)
    }

    /// The draw of counter `id` when it is drawn.
    #[inline]
    pub(crate) fn peek(&self, id: u64) -> Option<i64> {
        self.z
            .get(usize::try_from(id.wrapping_sub(self.first)).ok()?)
            .copied()
    }

    /// The draw of counter `id` (a new batch from `id` when it is not drawn yet).
    #[inline]
    pub(crate) fn get(
        &mut self,
        fill: impl FnOnce(u64, &mut [i64]) -> Result<()>,
        id: u64,
    ) -> Result<i64> {
        let at = id.wrapping_sub(self.first);
        if at >= self.z.len() as u64 {
            self.z.resize(BATCH, 0);
            self.first = id;
            fill(id, &mut self.z)?;
            return Ok(self.z[0]);
        }
        Ok(self.z[at as usize])
    }
}

/// `work()` on this thread while `ahead()` runs on the others (`rayon::join`); on one
/// thread, in turn.
pub(crate) fn overlapped<T: Send, A: Send>(
    work: impl FnOnce() -> T + Send,
    ahead: impl FnOnce() -> A + Send,
) -> (T, A) {
    if rayon::current_num_threads() > 1 {
        rayon::join(work, ahead)
    } else {
        (work(), ahead())
    }
}

/// A tree level's counter noise: discrete Laplace (pure DP) or discrete Gaussian (zCDP),
/// with the interface the trees use. (A few levels per tree: the Laplace variant's size,
/// its keystream tables inline, costs nothing worth a box.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum CounterNoise {
    /// Pure DP ([`KeyedNoise`]).
    Laplace(KeyedNoise),
    /// zCDP ([`KeyedGauss`]).
    Gauss(KeyedGauss),
}

impl CounterNoise {
    /// Draws of counters `first .. first + out.len()`.
    pub fn fill(&self, first: u64, out: &mut [i64]) -> Result<()> {
        match self {
            Self::Laplace(n) => n.fill(first, out),
            Self::Gauss(n) => n.fill(first, out),
        }
    }

    /// The released value of a counter with true value `v` and draw `z`.
    #[inline]
    pub fn release(&self, v: f64, z: i64) -> f64 {
        match self {
            Self::Laplace(n) => n.release(v, z),
            Self::Gauss(n) => n.release(v, z),
        }
    }

    /// The grid step `gamma` and its inverse: [`release`](Self::release) is
    /// `(round(v / gamma) + z) gamma` for both laws (hoisted out of a level's loop).
    pub fn grid(&self) -> (f64, f64) {
        let gamma = match self {
            Self::Laplace(n) => n.gamma(),
            Self::Gauss(n) => n.gamma(),
        };
        (gamma, 1.0 / gamma)
    }

    /// Standard deviation of one counter's noise.
    pub fn std_dev(&self) -> f64 {
        match self {
            Self::Laplace(n) => n.std_dev(),
            Self::Gauss(n) => n.std_dev(),
        }
    }

    /// The Laplace scale, or the Gaussian's sigma.
    pub fn scale(&self) -> f64 {
        match self {
            Self::Laplace(n) => n.scale(),
            Self::Gauss(n) => n.std_dev(),
        }
    }

    /// `factor` times the noise (tests).
    #[cfg(test)]
    pub(crate) fn scaled(&self, factor: f64) -> Self {
        match self {
            Self::Laplace(n) => Self::Laplace(n.scaled(factor)),
            Self::Gauss(n) => Self::Gauss(n.scaled(factor)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_and_bulk_draw_the_same_counters() {
        let g = KeyedGauss::new([7; 32], 3, 2.0, 4, 0.5).expect("valid");
        let mut bulk = vec![0i64; 3 * PIECE + 17];
        g.fill(5, &mut bulk).expect("fill");
        for (i, &z) in bulk.iter().enumerate().step_by(97) {
            assert_eq!(z, g.z(5 + i as u64), "counter {i}");
        }
        // Another stream or key draws other values.
        let h = KeyedGauss::new([7; 32], 4, 2.0, 4, 0.5).expect("valid");
        assert_ne!(g.z(9), h.z(9));
    }

    #[test]
    fn sigma_follows_rho_and_the_sensitivity() {
        let g = KeyedGauss::new([1; 32], 0, 3.0, 9, 0.5).expect("valid");
        // sigma = (S + sqrt(h) gamma) / sqrt(2 rho), a hair above 3.
        let want = (3.0 + 3.0 * g.gamma()) / 1.0;
        assert!(
            g.std_dev() >= want && g.std_dev() < want * (1.0 + 1e-9),
            "{g:?}"
        );
        assert!(g.gamma() < 3.0 * 2f64.powi(-22));
        assert!(KeyedGauss::new([1; 32], 0, 3.0, 9, 0.0).is_err());
        assert!(KeyedGauss::new([1; 32], 0, 0.0, 9, 0.5).is_err());
        assert!(KeyedGauss::new([1; 32], 1 << 62, 1.0, 1, 0.5).is_err());
    }

    #[test]
    fn draws_have_the_stated_spread_and_a_thinner_law_is_rejected() {
        let g = KeyedGauss::new([9; 32], 0, 1.0, 1, 0.5).expect("valid");
        let mut z = vec![0i64; 200_000];
        g.fill(0, &mut z).expect("fill");
        let sd = |z: &[i64], g: &KeyedGauss| {
            let v: Vec<f64> = z.iter().map(|&k| k as f64 * g.gamma()).collect();
            let m = v.iter().sum::<f64>() / v.len() as f64;
            (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
        };
        let got = sd(&z, &g);
        assert!(
            (got / g.std_dev() - 1.0).abs() < 0.01,
            "{got} vs {}",
            g.std_dev()
        );
        let thin = g.scaled(0.7);
        thin.fill(0, &mut z).expect("fill");
        assert!(
            sd(&z, &thin) / g.std_dev() < 0.8,
            "a 30% thinner law must show"
        );
    }
}

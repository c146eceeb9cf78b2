//! Keyed, counter-based Laplace noise for tree counters: the noise of counter `id` is a pure
//! function of (secret 256-bit key, stream, id), so the online path (one counter at a time)
//! and the bulk path (millions of counters in parallel) draw exactly the same values.
//!
//! Generator: ChaCha20 keyed by the secret key, nonce = `stream` (below 2^63), and counter
//! `id` owns the 16 keystream bytes at 32-bit word position `4 id` (two little-endian u64).
//! Bulk reads the keystream sequentially, online seeks: the same bytes either way. A draw
//! that needs more than those 128 bits (a few percent of them) continues on the counter's
//! own extension stream: ChaCha20 keyed by `ChaCha20(key, nonce = 2^63 + stream)`'s first
//! 32 bytes, nonce = `id`; still a pure function of (key, stream, id).
//!
//! Float safety (as `dp::laplace`): a counter is released on the grid `gamma Z`, `gamma = 2^k`
//! chosen from public values only, as `gamma (round(v / gamma) + Z)` with `Z` a discrete
//! Laplace. Privacy map: if the true counters have L1 sensitivity `S` and one input touches
//! at most `h` counters, the rounded counters have integer L1 sensitivity at most
//! `Delta_int = ceil(S / gamma) + h` grid steps, and the discrete Laplace with parameter `t`
//! per counter is `Delta_int / t`-DP; `t = 2^k / r >= Delta_int / eps` is checked in
//! integers.
//!
//! Sampler: [`kinsey_dp::dyadic::DyadicLaplace`], an exact integer sampler of a two-sided
//! geometric law with dyadic probabilities (its privacy map is computed from its own
//! tables): two table lookups on the counter's 128 bits, no logarithm, no float, no loop in
//! all but about 1 draw in 2,000. It replaced the Canonne-Kamath-Steinke sampler
//! (62 ns a draw, a data-dependent branch per random bit), which replaced
//! `floor(-t ln U)` (not exact: it could not reach most integers beyond about 15 scales).
//!
//! Keystream: [`kinsey_kernels::chacha::ChaCha20`], eight blocks per AVX2 pass (the same
//! bytes as `rand_chacha`'s `ChaCha20Rng`, which the extension streams still use).

use kinsey_core::{Error, Result, check_epsilon};
use kinsey_dp::dyadic::{DyadicLaplace, MAX_EXTRA_WORDS};
use kinsey_dp::exact::RandomBits;
use kinsey_kernels::DevicePref;
use kinsey_kernels::chacha::ChaCha20;
use kinsey_kernels::dyadic::gpu::{DeviceDraws, GpuDyadic, PendingDraws};
use kinsey_kernels::dyadic::{SLOW, cpu};
use kinsey_kernels::gpu::stream::{self, Stage, timed};
use kinsey_kernels::window::gpu::GpuWindow;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

/// Bits of grid resolution below the sensitivity (and below the per-counter scale): the
/// rounding adds at most `(h + 1) 2^-16` to the noise scale (1.7e-4 for 10 levels).
pub const GRID_BITS_BELOW_SCALE: i32 = 16;

/// Counters per parallel piece of one fill (a multiple of the keystream's eight-block
/// batch; fills of up to this many counters, all but a long block's, stay on one thread).
const PAR_COUNTERS: usize = 1 << 16;

/// `fill(at, piece)` for the pieces of `out` (entry `i` is counter `first + i`, a piece's
/// first entry counter `at`): one call for up to [`PAR_COUNTERS`] entries, else pieces of
/// that many in parallel. A long block's counters (millions in one call, from a segment
/// that may be the only one running) then use every thread; each counter's words and draw
/// depend on its id alone, so the pieces give the same values.
fn in_pieces<T: Send>(first: u64, out: &mut [T], fill: impl Fn(u64, &mut [T]) + Sync) {
    if out.len() <= PAR_COUNTERS {
        fill(first, out);
    } else {
        out.par_chunks_mut(PAR_COUNTERS)
            .enumerate()
            .for_each(|(i, piece)| fill(first + (i * PAR_COUNTERS) as u64, piece));
    }
}

/// Extra words per counter (see `KeyedNoise::wide`).
const STRIDE: usize = MAX_EXTRA_WORDS;

/// Noise magnitudes beyond this many scales are treated as impossible when a grid is chosen
/// so that sums are exact in f64 (probability `e^-80` per counter; see `new_exact`).
const EXACT_SUM_SCALES: f64 = 80.0;

/// Noise for the counters of one mechanism instance.
#[derive(Clone)]
pub struct KeyedNoise {
    keystream: ChaCha20,
    /// The extra words of laws with more than two digits: counter `id` owns words
    /// `2 id .. 2 id + 2` of this stream ([`MAX_EXTRA_WORDS`]) and uses the first
    /// [`DyadicLaplace::extra_words`], so that the levels of one mechanism, which share the
    /// key and stream but not the law, never share a word.
    wide: ChaCha20,
    ext_key: [u8; 32],
    stream: u64,
    /// Grid exponent: releases are multiples of 2^grid_exp.
    pub grid_exp: i32,
    law: std::sync::Arc<DyadicLaplace>,
    gamma: f64,
    inv_gamma: f64,
    /// Where [`fill`](Self::fill) draws: the GPU twin of the table path, or the CPU.
    gpu: Option<GpuDyadic>,
}

impl std::fmt::Debug for KeyedNoise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyedNoise(stream {}, grid 2^{}, t {})",
            self.stream,
            self.grid_exp,
            self.t()
        )
    }
}

/// The random bits of one counter beyond its two keystream words: its extension stream.
struct Extension<'a> {
    noise: &'a KeyedNoise,
    id: u64,
    ext: Option<ChaCha20Rng>,
}

impl RandomBits for Extension<'_> {
    #[cold]
    fn next_u64(&mut self) -> u64 {
        extension_word(&mut self.ext, self.noise.ext_key, self.id)
    }
}

/// The next word of counter `id`'s extension stream (ChaCha20 keyed by `key`, nonce `id`),
/// the stream made on its first use; shared by the Laplace and Gaussian counters.
#[cold]
pub(crate) fn extension_word(ext: &mut Option<ChaCha20Rng>, key: [u8; 32], id: u64) -> u64 {
    ext.get_or_insert_with(|| {
        let mut r = ChaCha20Rng::from_seed(key);
        r.set_stream(id);
        r
    })
    .next_u64()
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
        Self::on_grid(
            key,
            stream,
            sensitivity,
            touched,
            epsilon,
            Self::grid_for(sensitivity, epsilon),
        )
    }

    /// The grid exponent [`new`](Self::new) takes: 2^16 grid steps below the sensitivity,
    /// and below the scale when eps > 1 would put the grid above it (then rounding, not the
    /// data, would dominate the sensitivity).
    pub(crate) fn grid_for(sensitivity: f64, epsilon: f64) -> i32 {
        (sensitivity * (1.0 / epsilon).min(1.0)).log2().floor() as i32 - GRID_BITS_BELOW_SCALE
    }

    /// The calibration on grid `2^grid_exp`: `t >= (ceil(S / gamma) + touched) / eps`.
    pub(crate) fn on_grid(
        key: [u8; 32],
        stream: u64,
        sensitivity: f64,
        touched: u32,
        epsilon: f64,
        grid_exp: i32,
    ) -> Result<Self> {
        if stream >= 1 << 63 {
            return Err(Error::param("stream", "noise streams are below 2^63"));
        }
        let gamma = (grid_exp as f64).exp2();
        let d_int = (sensitivity / gamma).ceil() + f64::from(touched);
        if !d_int.is_finite() || d_int >= 2f64.powi(50) {
            return Err(Error::param(
                "sensitivity",
                format!("sensitivity {sensitivity:e} is too fine for grid 2^{grid_exp}"),
            ));
        }
        let law = DyadicLaplace::shared(d_int as u64, epsilon)?;
        if law.extra_words() > STRIDE {
            return Err(Error::param(
                "epsilon",
                "the noise law needs more random words per counter than the keystream gives",
            ));
        }
        let (mut ext_key, mut wide_key) = ([0u8; 32], [0u8; 32]);
        let mut r = ChaCha20Rng::from_seed(key);
        r.set_stream((1 << 63) | stream);
        r.fill_bytes(&mut ext_key);
        r.fill_bytes(&mut wide_key);
        Ok(Self {
            keystream: ChaCha20::new(&key, stream),
            wide: ChaCha20::new(&wide_key, stream),
            ext_key,
            stream,
            grid_exp,
            law,
            gamma,
            inv_gamma: 1.0 / gamma,
            gpu: None,
        })
    }

    /// Like [`new`](Self::new), with a grid coarse enough that every sum of at most `terms`
    /// releases of counters whose true values are at most `max_value` is exact in f64 (so
    /// any summation order gives the same bits) unless some `|Z|` exceeds 80 scales, an
    /// event of probability `e^-80` per counter (then the orders may differ in the last
    /// bit; privacy is unaffected, as both are post-processing of the same releases).
    pub(crate) fn new_exact(
        key: [u8; 32],
        stream: u64,
        sensitivity: f64,
        touched: u32,
        epsilon: f64,
        max_value: f64,
        terms: u32,
    ) -> Result<Self> {
        let fine = Self::new(key, stream, sensitivity, touched, epsilon)?;
        let worst = fine.worst_sum(max_value, terms);
        let needed = worst.log2().ceil() as i32 - 51;
        if needed <= fine.grid_exp {
            return Ok(fine);
        }
        Self::on_grid(key, stream, sensitivity, touched, epsilon, needed)
    }

    /// The largest magnitude of a sum of `terms` releases of values of at most
    /// `max_value`, noise beyond [`EXACT_SUM_SCALES`] scales treated as impossible (what
    /// [`new_exact`](Self::new_exact) sizes its grid for, here at this noise's own scale).
    pub(crate) fn worst_sum(&self, max_value: f64, terms: u32) -> f64 {
        f64::from(terms) * (max_value + EXACT_SUM_SCALES * self.scale() * 2.0)
    }

    /// The grid step.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// Draw bulk noise ([`fill`](Self::fill)) on `device`: `cpu` the CPU, `gpu` the GPU or
    /// an error, `auto` a hardware GPU when there is one. The draws are the same bit for
    /// bit either way. Returns the GPU used, in words, or `None` for the CPU.
    pub fn use_device(&mut self, device: DevicePref) -> Result<Option<String>> {
        self.gpu = kinsey_kernels::dyadic::select(device, self.law.tables())?;
        Ok(self.gpu.as_ref().map(GpuDyadic::describe))
    }

    /// [`use_device`](Self::use_device), and the `window` kernel on the same GPU where it
    /// has 64-bit floats (for a mechanism that forms its tree sums there too): the GPU
    /// used, in words ("noise and sums", or "noise" and why not the sums), and the kernel.
    pub(crate) fn use_device_with_sums(
        &mut self,
        device: DevicePref,
    ) -> Result<(Option<String>, Option<GpuWindow>)> {
        let used = self.use_device(device)?;
        let Some(ctx) = self.gpu() else {
            return Ok((used, None));
        };
        Ok(match GpuWindow::new(ctx.clone()) {
            Ok(g) => (used.map(|u| format!("{u}: noise and sums")), Some(g)),
            Err(e) => (used.map(|u| format!("{u}: noise ({e})")), None),
        })
    }

    /// The GPU [`fill`](Self::fill) runs on, if any.
    pub fn gpu(&self) -> Option<&kinsey_kernels::gpu::GpuContext> {
        self.gpu.as_ref().map(GpuDyadic::context)
    }

    /// The noise parameter in grid steps: the Laplace scale with the same privacy map
    /// (`1 / L`, see [`DyadicLaplace::per_unit`]).
    pub fn t(&self) -> f64 {
        self.law.t()
    }

    /// The effective continuous scale `gamma t` (a hair above `S / eps`).
    pub fn scale(&self) -> f64 {
        self.gamma * self.t()
    }

    /// Standard deviation of one counter's noise (in value units).
    pub fn std_dev(&self) -> f64 {
        self.gamma * self.law.std_dev()
    }

    /// The same key and grid with `factor` times the noise parameter (tests: a mechanism
    /// with too little noise must be caught).
    #[cfg(test)]
    pub(crate) fn scaled(&self, factor: f64) -> Self {
        self.with_t(self.t() * factor)
    }

    /// A test law with parameter close to `t` (tests of the law in grid steps).
    #[cfg(test)]
    pub(crate) fn with_t(&self, t: f64) -> Self {
        Self {
            law: DyadicLaplace::shared(1, 1.0 / t).expect("valid test t"),
            ..self.clone()
        }
    }

    /// The raw keystream words of counters `first .. first + out.len()` (for mechanisms whose
    /// counters use different scales: each level's `draw` turns a pair into noise).
    pub fn words(&self, first: u64, out: &mut [[u64; 2]]) {
        in_pieces(first, out, |at, piece| {
            self.keystream.fill_u64(2 * at, piece.as_flattened_mut())
        });
    }

    /// The noise draw of counter `id` from its words (and, for laws with more than two
    /// digits, its extra words, fetched by random access).
    #[inline]
    pub fn draw(&self, id: u64, words: [u64; 2]) -> i64 {
        let e = self.law.extra_words();
        let wide = if e > 0 {
            self.wide.pair(STRIDE as u64 * id)
        } else {
            [0; 2]
        };
        let mut ext = Extension {
            noise: self,
            id,
            ext: None,
        };
        self.law.sample(words, &wide[..e], &mut ext)
    }

    /// The draws of counters whose words the caller gathered (`words[i]` of counter
    /// `id_of(i)`): the table path over all of them at once, the rare slow ones (and every
    /// draw of a law with wide words) by [`draw`](Self::draw). The same draws as `draw`.
    pub(crate) fn draw_gathered(
        &self,
        words: &[[u64; 2]],
        id_of: impl Fn(usize) -> u64,
        out: &mut [i64],
    ) {
        let all = !cpu::draws_from_words(self.law.tables(), words, out);
        for (i, (z, w)) in out.iter_mut().zip(words).enumerate() {
            if all || *z == SLOW {
                *z = self.draw(id_of(i), *w);
            }
        }
    }

    /// Noise of counter `id` (random access: the online path).
    pub fn z(&self, id: u64) -> i64 {
        self.draw(id, self.keystream.pair(2 * id))
    }

    /// Noise of counters `first .. first + out.len()` (the bulk path): the table path of
    /// every counter in one pass over the keystreams, on the GPU when
    /// [`use_device`](Self::use_device) chose one, then the rare draws it marks [`SLOW`]
    /// finished by the full sampler from the same words (random access).
    pub fn fill(&self, first: u64, out: &mut [i64]) -> Result<()> {
        match &self.gpu {
            Some(g) => {
                g.fill(&self.keystream, &self.wide, first, out)?;
                // The rare slow draws of millions of counters, on every core (one thread
                // in the serial way, for A/B runs).
                timed(Stage::SlowDraws, || {
                    if stream::serial() {
                        self.finish_slow(first, out);
                    } else {
                        in_pieces(first, out, |at, piece| self.finish_slow(at, piece));
                    }
                });
            }
            // Each piece finishes its own slow draws while they are in cache.
            None => in_pieces(first, out, |at, piece| {
                cpu::fill(&self.keystream, &self.wide, self.law.tables(), at, piece);
                self.finish_slow(at, piece);
            }),
        }
        Ok(())
    }

    /// The draws the table path marked [`SLOW`] in `out` (entry `i` is counter
    /// `first + i`), finished by the full sampler from the same words.
    fn finish_slow(&self, first: u64, out: &mut [i64]) {
        for (i, z) in out.iter_mut().enumerate() {
            if *z == SLOW {
                *z = self.z(first + i as u64);
            }
        }
    }

    /// [`fill`](Self::fill) with the draws left on the GPU (for a kernel that continues
    /// there): only the rare slow draws travel, back to be finished by the full sampler
    /// and up again. `None` without a GPU.
    pub fn fill_device(&self, first: u64, count: usize) -> Result<Option<DeviceDraws>> {
        self.submit_draws(first, count)?
            .map(|p| self.finish_draws(p))
            .transpose()
    }

    /// The first half of [`fill_device`](Self::fill_device): the draws of counters
    /// `first .. first + count` submitted to the GPU and not waited for, so that the device
    /// makes them while the host finishes earlier work. `None` without a GPU.
    pub fn submit_draws(&self, first: u64, count: usize) -> Result<Option<PendingDraws>> {
        let Some(g) = &self.gpu else {
            return Ok(None);
        };
        Ok(Some(g.submit_device(
            &self.keystream,
            &self.wide,
            first,
            count,
        )?))
    }

    /// The second half: waits for `p`'s list of slow draws, finishes them by the full
    /// sampler on every core (one thread in the serial way, for A/B runs) and patches them
    /// in with one upload.
    pub fn finish_draws(&self, p: PendingDraws) -> Result<DeviceDraws> {
        let Some(g) = &self.gpu else {
            return Err(Error::Numerical(
                "decay: draws on a GPU this noise does not have".into(),
            ));
        };
        let first = p.first();
        let slow = g.slow(&p)?;
        let fixed: Vec<i64> = timed(Stage::SlowDraws, || {
            if stream::serial() {
                slow.iter().map(|&i| self.z(first + u64::from(i))).collect()
            } else {
                slow.par_iter()
                    .with_min_len(64)
                    .map(|&i| self.z(first + u64::from(i)))
                    .collect()
            }
        });
        let d = g.draws(p, slow);
        g.patch(&d, &fixed)?;
        Ok(d)
    }

    /// Prepares counters `first .. first + count` for draws in any order into `b` (its
    /// buffers reused): their keystream words on the CPU (only the counters asked for are
    /// drawn), every draw on the GPU.
    pub(crate) fn refill(&self, b: &mut Batch, first: u64, count: usize) -> Result<()> {
        b.first = first;
        if self.gpu.is_some() {
            b.z.resize(count, 0);
            self.fill(first, &mut b.z)?;
            b.words.clear();
        } else {
            b.words.resize(count, [0; 2]);
            self.words(first, &mut b.words);
            b.z.clear();
        }
        Ok(())
    }

    /// The draw of counter `id` of a [`refill`](Self::refill)ed batch.
    #[inline]
    pub(crate) fn batch_z(&self, b: &Batch, id: u64) -> i64 {
        let i = (id - b.first) as usize;
        match b.z.get(i) {
            Some(&z) => z,
            None => self.draw(id, b.words[i]),
        }
    }

    /// The released value of a counter with true value `v` and noise `z`.
    #[inline]
    pub fn release(&self, v: f64, z: i64) -> f64 {
        // gamma is a power of two: multiplying by its inverse is exact.
        self.gamma * ((v * self.inv_gamma).round() + z as f64)
    }
}

/// Counters prepared for draws in any order ([`KeyedNoise::refill`]).
#[derive(Debug, Default)]
pub(crate) struct Batch {
    first: u64,
    /// The counters' keystream words (CPU), or empty.
    words: Vec<[u64; 2]>,
    /// Their draws (GPU), or empty.
    z: Vec<i64>,
}

/// A fresh secret key from the OS, or one derived from a user seed, the release's
/// description and a digest of the data it reads (`data`, called only with a seed; the seed
/// is recorded and warned about by the caller, like every user seed): two releases with
/// different descriptions, or of neighbouring series, never share a key.
pub fn key(
    seed: Option<u64>,
    release: &str,
    data: impl FnOnce() -> Result<kinsey_dp::DataDigest>,
) -> Result<[u8; 32]> {
    Ok(match seed {
        Some(s) => kinsey_dp::rng::derive_key(s, &kinsey_dp::rng::bound_label(release, &data()?)),
        None => {
            let mut k = [0u8; 32];
            ChaCha20Rng::from_os_rng().fill_bytes(&mut k);
            k
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_dp::stattest::{ALPHA, chi_square_test};

    #[test]
    fn random_access_equals_sequential() {
        let n = KeyedNoise::new([7; 32], 3, 4.0, 4, 0.5).expect("ok");
        let mut seq = vec![0i64; 1000];
        n.fill(12_345, &mut seq).expect("cpu");
        for (i, z) in seq.iter().enumerate() {
            assert_eq!(*z, n.z(12_345 + i as u64));
        }
        // A fill of several parallel pieces (a long block's), and its words, start to end.
        let mut long = vec![0i64; 2 * PAR_COUNTERS + 777];
        n.fill(99_999, &mut long).expect("cpu");
        let mut words = vec![[0u64; 2]; long.len()];
        n.words(99_999, &mut words);
        for (i, (z, w)) in long.iter().zip(&words).enumerate() {
            let id = 99_999 + i as u64;
            assert_eq!(*z, n.z(id), "counter {id}");
            assert_eq!(n.draw(id, *w), *z, "words of counter {id}");
        }
        let other = KeyedNoise::new([7; 32], 4, 4.0, 4, 0.5).expect("ok");
        assert_ne!(other.z(12_345), seq[0], "streams are independent");
        // A law with extra digits (small epsilon) reads its extra words the same way.
        let wide = KeyedNoise::new([7; 32], 3, 4.0, 4, 1e-3).expect("ok");
        assert!(wide.law.extra_words() > 0);
        wide.fill(777, &mut seq).expect("cpu");
        for (i, z) in seq.iter().enumerate() {
            assert_eq!(*z, wide.z(777 + i as u64));
        }
    }

    /// The draws follow the law of the sampler's tables exactly (through the keystream and
    /// the extension streams); 30% less noise is rejected.
    #[test]
    fn law_and_power() {
        let n = KeyedNoise::new([1; 32], 0, 1.0, 1, 1.0).expect("ok");
        // The law in grid units with a small t, so that the bins are populated.
        let small = n.with_t(10.0);
        let mut z = vec![0i64; 300_000];
        small.fill(0, &mut z).expect("cpu");
        let mut probs: Vec<f64> = (-39..=39).map(|k| small.law.pmf(k)).collect();
        let tail = (1.0 - probs.iter().sum::<f64>()) / 2.0;
        probs.insert(0, tail);
        probs.push(tail);
        let hist = |z: &[i64]| -> Vec<u64> {
            let mut h = vec![0u64; 81];
            for &v in z {
                h[(v.clamp(-40, 40) + 40) as usize] += 1;
            }
            h
        };
        let expected: Vec<f64> = probs.iter().map(|p| p * z.len() as f64).collect();
        let (_, p) = chi_square_test(&hist(&z), &expected);
        assert!(p > ALPHA, "p = {p}");
        let weak = n.with_t(7.0);
        assert!(weak.t() < small.t() * 0.72, "{} vs {}", weak.t(), small.t());
        weak.fill(0, &mut z).expect("cpu");
        let (_, p) = chi_square_test(&hist(&z), &expected);
        assert!(p < ALPHA, "30% less noise must be detected, p = {p}");
    }

    #[test]
    fn calibration_accounts_for_rounding() {
        let n = KeyedNoise::new([0; 32], 0, 11.0, 11, 0.1).expect("ok");
        // Rounding to the grid (1.7e-4) and to 12 significant bits of the block (4.9e-4).
        assert!(n.scale() >= 110.0 && n.scale() < 110.0 * (1.0 + 7e-4));
        assert_eq!(n.release(3.0, 0), 3.0);
        assert!(KeyedNoise::new([0; 32], 0, 1.0, 1, 0.0).is_err());
        assert!(KeyedNoise::new([0; 32], 0, f64::NAN, 1, 1.0).is_err());
        // Tiny eps (noise 10^6 x the sensitivity): the grid stays below the sensitivity, so
        // rounding does not inflate the scale.
        let tiny = KeyedNoise::new([0; 32], 0, 1e-10, 20, 1e-6).expect("ok");
        // (Plus the sampler's privacy-map rounding margin, 7e-4 at this block of 2^35.)
        assert!((tiny.scale() / 1e-4 - 1.0).abs() < 2e-3, "{}", tiny.scale());
        assert!(
            KeyedNoise::new([0; 32], 0, 1.0, 1, 1e-9).is_err(),
            "eps below the range"
        );
        // A coarser grid when sums could lose bits; the scale stays the same.
        let e = KeyedNoise::new_exact([0; 32], 0, 11.0, 11, 0.1, 1e11, 64).expect("ok");
        assert!(e.grid_exp > n.grid_exp);
        assert!((e.scale() / n.scale() - 1.0).abs() < 1e-2);
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    /// Not a test: `cargo test --release -p kinsey-stats --lib decay::noise::speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn sampler_speed() {
        let n = KeyedNoise::new([3; 32], 0, 11.0, 11, 1.0).expect("ok");
        let count = 2_000_000usize;
        let mut words = vec![[0u64; 2]; count];
        let t = std::time::Instant::now();
        n.words(0, &mut words);
        let tw = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let mut s = 0i64;
        for (i, w) in words.iter().enumerate() {
            s = s.wrapping_add(n.draw(i as u64, *w));
        }
        let td = t.elapsed().as_secs_f64();
        let mut ext = 0usize;
        for (i, w) in words.iter().enumerate().take(200_000) {
            let mut more = Extension {
                noise: &n,
                id: i as u64,
                ext: None,
            };
            n.law.sample(*w, &[], &mut more);
            ext += usize::from(more.ext.is_some());
        }
        println!(
            "t = {}, words {:.1} ns/counter, draw {:.1} ns/counter, extension rate {:.4} ({s})",
            n.t(),
            tw / count as f64 * 1e9,
            td / count as f64 * 1e9,
            ext as f64 / 200_000.0
        );
    }
}

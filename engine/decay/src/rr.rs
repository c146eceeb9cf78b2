//! Baseline for bits: randomized response. Each bit is flipped with probability exactly
//! `p = 1 / (1 + e^eps)` (`kinsey_dp::rr::FlipCoin`, integer arithmetic only, at every
//! accepted epsilon; eps-DP per step, and a step is in one report), debiased as
//! `(y - p) / (1 - 2p)`, and the window sums of the debiased values are released. The coins
//! read one keyed bit stream in turn (a few bits each, none wasted; the unread bits carry
//! over from step to step), so online, streamed and bulk runs flip the same bits.

use super::model::{CalibrationReport, DecayedSum, ModelParams, Public, Sliding, window_truth};
use kinsey_core::{Error, Result, check_epsilon};
use kinsey_dp::exact::{BitReader, RandomBits, Unread};
use kinsey_dp::release::{Guarantee, GuaranteeKind, NeighbourRelation};
use kinsey_dp::rr::FlipCoin;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Randomized response on a 0/1 series, summed over a window.
#[derive(Debug, Clone)]
pub struct RandomizedResponse {
    w: u64,
    p: f64,
    coin: FlipCoin,
    key: [u8; 32],
    epsilon: f64,
    /// Online and stream: the flip stream and the running window sum of the reports.
    flips: Flips,
    window: Sliding,
    /// Stream: the chunk's reports (reused from chunk to chunk).
    reports: Vec<f64>,
}

/// The flip stream: keyed ChaCha20 words read bit by bit, and the bits the last coin left.
#[derive(Debug, Clone)]
struct Flips {
    rng: ChaCha20Rng,
    unread: Unread,
}

impl Flips {
    fn new(key: [u8; 32]) -> Self {
        let mut rng = ChaCha20Rng::from_seed(key);
        rng.set_stream(3);
        Self {
            rng,
            unread: Unread::default(),
        }
    }

    /// Debiased reports of `xs`, in order, each coin reading where the last one stopped.
    fn reports(&mut self, coin: &FlipCoin, p: f64, xs: &[f64], mut put: impl FnMut(f64)) {
        let mut words = Words(&mut self.rng);
        let mut bits = BitReader::resume(&mut words, self.unread);
        for &x in xs {
            let y = if coin.sample_bits(&mut bits) {
                1.0 - x
            } else {
                x
            };
            put((y - p) / (1.0 - 2.0 * p));
        }
        self.unread = bits.unread();
    }
}

/// The flip stream's words as the exact samplers' bit source.
struct Words<'a>(&'a mut ChaCha20Rng);

impl RandomBits for Words<'_> {
    fn next_u64(&mut self) -> u64 {
        rand_core::RngCore::next_u64(self.0)
    }
}

fn not_bits() -> Error {
    // Names the problem, not the private step or value.
    Error::param(
        "model",
        "randomized response needs a series of bits (0 or 1); the input has other values",
    )
}

impl RandomizedResponse {
    /// The baseline over windows of `w` steps.
    pub fn new(w: u64, epsilon: f64, key: [u8; 32]) -> Result<Self> {
        check_epsilon("epsilon", epsilon)?;
        if w < 1 {
            return Err(Error::param("window", "the window must be >= 1 step"));
        }
        let coin = FlipCoin::new(epsilon)?;
        Ok(Self {
            w,
            p: coin.p(),
            coin,
            key,
            epsilon,
            flips: Flips::new(key),
            window: Sliding::new(w),
            reports: Vec::new(),
        })
    }

    /// Standard deviation of the estimate at step `j`.
    pub(crate) fn std_at(&self, j: u64) -> f64 {
        let n = (j + 1).min(self.w) as f64;
        (n * self.p * (1.0 - self.p)).sqrt() / (1.0 - 2.0 * self.p)
    }
}

/// `rr`: needs `--window`; the input must be bits.
pub(crate) fn build(p: &ModelParams, c: &Public) -> Result<Box<dyn DecayedSum>> {
    let w = p.need("rr", "window", &p.window)?;
    Ok(Box::new(RandomizedResponse::new(w, c.epsilon, c.key)?))
}

impl DecayedSum for RandomizedResponse {
    fn calibration(&self) -> CalibrationReport {
        CalibrationReport {
            model: format!("randomized response baseline (W = {})", self.w),
            epsilon: self.epsilon,
            bound: 1.0,
            levels: 1,
            sensitivity: 1.0,
            counter_scale: 0.0,
            counter_std: self.std_at(0),
            rho: None,
        }
    }

    fn noise_std(&self, _column: usize, j: u64) -> f64 {
        self.std_at(j)
    }

    fn push(&mut self, x: f64, out: &mut [f64]) -> Result<()> {
        if x != 0.0 && x != 1.0 {
            return Err(not_bits());
        }
        let mut v = 0.0;
        self.flips.reports(&self.coin, self.p, &[x], |r| v = r);
        out[0] = self.window.push(v);
        Ok(())
    }

    /// The same numbers as `push`, the window summed over a contiguous buffer.
    fn stream_into(&mut self, chunk: &[f64], out: &mut Vec<Vec<f64>>) -> Result<()> {
        if chunk.iter().any(|&x| x != 0.0 && x != 1.0) {
            return Err(not_bits());
        }
        self.reports.clear();
        let reports = &mut self.reports;
        self.flips
            .reports(&self.coin, self.p, chunk, |r| reports.push(r));
        let out = super::model::one_column(out, chunk.len());
        self.window.extend(&self.reports, |i, s| out[i] = s);
        Ok(())
    }

    fn bulk(&self, xs: &[f64]) -> Result<Vec<Vec<f64>>> {
        if xs.iter().any(|&x| x != 0.0 && x != 1.0) {
            return Err(not_bits());
        }
        let mut debiased = Vec::with_capacity(xs.len());
        Flips::new(self.key).reports(&self.coin, self.p, xs, |r| debiased.push(r));
        Ok(vec![window_truth(&debiased, self.w)])
    }

    fn truth(&self, xs: &[f64]) -> Vec<Vec<f64>> {
        vec![window_truth(xs, self.w)]
    }

    fn fresh(&self) -> Box<dyn DecayedSum> {
        let mut m = self.clone();
        m.flips = Flips::new(self.key);
        m.window = Sliding::new(self.w);
        Box::new(m)
    }

    fn guarantee(&self) -> Guarantee {
        Guarantee {
            kind: GuaranteeKind::Pure,
            epsilon: self.epsilon,
            delta: 0.0,
            neighbours: NeighbourRelation::ChangeOneBit,
            mechanism: format!(
                "randomized response (flip probability exactly 1 / (1 + e^eps), integer \
                 sampler), W = {}",
                self.w
            ),
            sensitivity: "1 (each step is in one report)".into(),
            sensitivity_value: Some(1.0),
            rho: None,
            noise_std: None,
        }
    }
}

//! The only source of randomness for privacy noise: ChaCha20, seeded from the OS.
//!
//! Architecture invariant: no noise is sampled outside `engine/src/dp`, and every sampler
//! takes a [`NoiseRng`], so a non-cryptographic generator cannot reach a mechanism.
//! A user seed is allowed for reproducible audits; it is recorded in the report and a
//! warning is printed, because the release is not private against whoever knows the seed.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

/// Where the generator's seed came from; recorded in every report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum SeedSource {
    /// 256 bits from the operating system: the only setting under which the release is private.
    Os,
    /// A user-given seed (reproducible, NOT private against anyone who knows it).
    User(u64),
}

/// What a report says about the randomness used.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RngRecord {
    pub generator: String,
    pub seed: SeedSource,
    pub warning: Option<String>,
}

/// The warning printed and recorded when a user seed is given.
pub const USER_SEED_WARNING: &str = "a user seed was given: the noise is reproducible, so the \
release is NOT differentially private against anyone who knows the seed";

/// A ChaCha20 CSPRNG used for every noise draw.
#[derive(Debug, Clone)]
pub struct NoiseRng {
    inner: ChaCha20Rng,
    source: SeedSource,
}

impl NoiseRng {
    /// OS-seeded generator: the default.
    pub fn from_os() -> Self {
        Self {
            inner: ChaCha20Rng::from_os_rng(),
            source: SeedSource::Os,
        }
    }

    /// Seeded generator; prints the warning once through `tracing` (the CLI also shows it).
    pub fn from_user_seed(seed: u64) -> Self {
        tracing::warn!("{USER_SEED_WARNING} (seed = {seed})");
        Self::from_seed_quiet(seed)
    }

    /// Seeded generator without the warning, for tests and for derived child streams.
    pub fn from_seed_quiet(seed: u64) -> Self {
        Self {
            inner: ChaCha20Rng::seed_from_u64(seed),
            source: SeedSource::User(seed),
        }
    }

    /// `Some(seed)` -> user seed, `None` -> OS.
    pub fn new(seed: Option<u64>) -> Self {
        match seed {
            Some(s) => Self::from_user_seed(s),
            None => Self::from_os(),
        }
    }

    /// The record written into reports.
    pub fn record(&self) -> RngRecord {
        RngRecord {
            generator: "ChaCha20 (rand_chacha)".into(),
            seed: self.source,
            warning: match self.source {
                SeedSource::Os => None,
                SeedSource::User(_) => Some(USER_SEED_WARNING.into()),
            },
        }
    }

    /// An independent child generator, keyed by 256 bits drawn from this one. Used to give
    /// parallel workers their own stream; the child inherits the parent's seed source.
    pub fn fork(&mut self) -> NoiseRng {
        let mut key = [0u8; 32];
        self.inner.fill_bytes(&mut key);
        NoiseRng {
            inner: ChaCha20Rng::from_seed(key),
            source: self.source,
        }
    }

    /// A child ChaCha20 generator for the crypto layer (keys, masks, encryption randomness);
    /// like [`fork`](Self::fork) it is keyed by 256 bits drawn from this one.
    pub fn crypto_rng(&mut self) -> ChaCha20Rng {
        let mut key = [0u8; 32];
        self.inner.fill_bytes(&mut key);
        ChaCha20Rng::from_seed(key)
    }

    /// Uniform in (0, 1]: 53 random bits, never 0 (so `ln` is finite).
    pub fn uniform_open0(&mut self) -> f64 {
        let bits = self.inner.next_u64() >> 11;
        ((bits + 1) as f64) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard exponential, Exp(1).
    pub fn exp1(&mut self) -> f64 {
        -self.uniform_open0().ln()
    }

    /// Standard normal (Box-Muller; one of the pair is discarded for simplicity).
    pub fn std_normal(&mut self) -> f64 {
        let u1 = self.uniform_open0();
        let u2 = self.uniform_open0();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// A fair random bit.
    pub fn bit(&mut self) -> bool {
        self.inner.next_u32() & 1 == 1
    }

    /// Raw 64 random bits (for shuffles and non-noise uses that still want a CSPRNG).
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform integer in [0, n) without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.inner.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_reproducible_and_recorded() {
        let mut a = NoiseRng::from_seed_quiet(7);
        let mut b = NoiseRng::from_seed_quiet(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let rec = a.record();
        assert_eq!(rec.seed, SeedSource::User(7));
        assert!(rec.warning.is_some());
        assert!(NoiseRng::from_os().record().warning.is_none());
    }

    #[test]
    fn os_seeded_generators_differ() {
        assert_ne!(
            NoiseRng::from_os().next_u64(),
            NoiseRng::from_os().next_u64()
        );
    }

    #[test]
    fn uniform_never_zero_and_below_is_in_range() {
        let mut r = NoiseRng::from_seed_quiet(1);
        for _ in 0..10_000 {
            let u = r.uniform_open0();
            assert!(u > 0.0 && u <= 1.0);
            assert!(r.below(7) < 7);
        }
    }

    #[test]
    fn forks_are_independent_streams() {
        let mut r = NoiseRng::from_seed_quiet(3);
        let mut c1 = r.fork();
        let mut c2 = r.fork();
        assert_ne!(c1.next_u64(), c2.next_u64());
    }
}

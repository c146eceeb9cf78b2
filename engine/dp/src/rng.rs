//! The only source of randomness for privacy noise: ChaCha20, seeded from the OS.
//!
//! Architecture invariant: no noise is sampled outside `engine/src/dp`, and every sampler
//! takes a [`NoiseRng`], so a non-cryptographic generator cannot reach a mechanism.
//!
//! Seeds: a user seed is allowed for reproducible audits, and a warning is printed, because
//! the release is not private against whoever knows the seed. A seed never keys a generator
//! directly: [`NoiseRng::for_release`] derives the key from the seed, the release's
//! canonical description (command, column, mechanism, epsilon, every public parameter) *and*
//! a [`DataDigest`] of the data it reads, so two releases that differ in anything (two
//! columns, two epsilons, two mechanisms, or neighbouring data) draw from unrelated streams
//! and their noise can neither cancel nor scale. A seed replays a release of the same data,
//! and nothing else. (Before the digest, one seed gave neighbouring data the same noise: two
//! releases differed by exactly the changed row's contribution.) The report says that a seed
//! was used, not which, unless the user asks for it (`--record-seed`).
//! Cryptographic keys, masks and permutations never come from here: they come from the OS
//! ([`os_crypto_rng`]) whatever the seed.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

/// Where the generator's seed came from; recorded in every report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum SeedSource {
    /// 256 bits from the operating system: the only setting under which the release is private.
    Os,
    /// A user-given seed (reproducible, NOT private against anyone who knows it); the value
    /// is recorded only when the user asked for it (`--record-seed`).
    User(Option<u64>),
}

/// What a report says about the randomness used.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RngRecord {
    /// The generator (`ChaCha20`, and how it was keyed).
    pub generator: String,
    /// Where the key came from.
    pub seed: SeedSource,
    /// Set when a user seed was used: the release is then not private against whoever knows it.
    pub warning: Option<String>,
}

impl RngRecord {
    /// The record of ChaCha20 generators keyed from `source`.
    pub fn of(source: SeedSource) -> Self {
        RngRecord {
            generator: "ChaCha20 (rand_chacha)".into(),
            seed: source,
            warning: match source {
                SeedSource::Os => None,
                SeedSource::User(_) => Some(USER_SEED_WARNING.into()),
            },
        }
    }
}

/// The warning printed and recorded when a user seed is given.
pub const USER_SEED_WARNING: &str = "a user seed was given: the noise is reproducible, so the \
release is NOT differentially private against anyone who knows the seed";

/// Whether a process has shown [`USER_SEED_WARNING`] yet.
static SEED_WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True for the first caller in this process, false after: every place that shows the seed
/// warning (the library's `tracing` line, a front door's own) asks first, so a run shows it
/// once, not once per layer. The reports still state it in every release.
pub fn first_seed_warning() -> bool {
    !SEED_WARNED.swap(true, std::sync::atomic::Ordering::SeqCst)
}

/// A 256-bit digest (SHA-256) of exactly the data a release reads, bound into a seeded
/// release's key (`kinsey_data::digest` computes it: every byte of the input files, or every
/// value of a party's data set). Only seeded runs compute one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataDigest(pub [u8; 32]);

impl DataDigest {
    /// Lower-case hexadecimal.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The description a seeded key is derived from: the release's public description and the
/// digest of its data, length-prefixed by [`derive_key`].
pub fn bound_label(release: &str, data: &DataDigest) -> String {
    format!("{release}|data={}", data.hex())
}

/// A ChaCha20 CSPRNG used for every noise draw.
#[derive(Debug, Clone)]
pub struct NoiseRng {
    inner: ChaCha20Rng,
    source: SeedSource,
}

/// A 256-bit key from a user seed and a release description: a PRF cascade over ChaCha20
/// (each step keys ChaCha20 with the previous key and takes 32 bytes at the nonce given by
/// the next 8 bytes of the input), over the length-prefixed description, so the inputs are
/// prefix-free. Different descriptions give unrelated keys.
pub fn derive_key(seed: u64, release: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut key);
    let bytes = release.as_bytes();
    let len = (bytes.len() as u64).to_le_bytes();
    for chunk in std::iter::once(&len[..]).chain(bytes.chunks(8)) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        let mut r = ChaCha20Rng::from_seed(key);
        r.set_stream(u64::from_le_bytes(word));
        r.fill_bytes(&mut key);
    }
    key
}

/// A generator for cryptographic keys, masks and permutations: always seeded by the OS.
pub fn os_crypto_rng() -> ChaCha20Rng {
    ChaCha20Rng::from_os_rng()
}

impl NoiseRng {
    /// OS-seeded generator: the default.
    pub fn from_os() -> Self {
        Self {
            inner: ChaCha20Rng::from_os_rng(),
            source: SeedSource::Os,
        }
    }

    /// Seeded generator without the warning, for tests (the seed is recorded).
    pub fn from_seed_quiet(seed: u64) -> Self {
        Self {
            inner: ChaCha20Rng::seed_from_u64(seed),
            source: SeedSource::User(Some(seed)),
        }
    }

    /// The generator of one release: from the OS without a seed; with a user seed, keyed by
    /// [`derive_key`]`(seed, `[`bound_label`]`(release, data()))` (and a warning through
    /// `tracing`). `release` must be the release's canonical description: every public
    /// parameter that distinguishes it; `data` digests exactly the data it reads (called only
    /// with a seed). The seed is not recorded unless [`record_seed`](Self::record_seed) is
    /// called.
    pub fn for_release(
        seed: Option<u64>,
        release: &str,
        data: impl FnOnce() -> kinsey_core::Result<DataDigest>,
    ) -> kinsey_core::Result<Self> {
        Ok(match seed {
            Some(s) => {
                if first_seed_warning() {
                    tracing::warn!("{USER_SEED_WARNING}");
                }
                Self::from_derived_key(derive_key(s, &bound_label(release, &data()?)))
            }
            None => Self::from_os(),
        })
    }

    /// [`for_release`](Self::for_release), with the seed's value written into reports when
    /// `record_seed` (`--record-seed`): what every seeded table release does.
    pub fn for_release_recorded(
        seed: Option<u64>,
        record_seed: bool,
        release: &str,
        data: impl FnOnce() -> kinsey_core::Result<DataDigest>,
    ) -> kinsey_core::Result<Self> {
        let mut rng = Self::for_release(seed, release, data)?;
        if record_seed {
            rng.record_seed(seed);
        }
        Ok(rng)
    }

    /// A generator keyed by a key derived from a user seed (the aggregate's per-party
    /// streams): reproducible, recorded as a user seed.
    pub fn from_derived_key(key: [u8; 32]) -> Self {
        Self {
            inner: ChaCha20Rng::from_seed(key),
            source: SeedSource::User(None),
        }
    }

    /// Record the user seed's value in reports (`--record-seed`).
    pub fn record_seed(&mut self, seed: Option<u64>) {
        if let (SeedSource::User(_), Some(s)) = (self.source, seed) {
            self.source = SeedSource::User(Some(s));
        }
    }

    /// The record written into reports.
    pub fn record(&self) -> RngRecord {
        RngRecord::of(self.source)
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

    /// Uniform in (0, 1]: 53 random bits, never 0 (so `ln` is finite).
    pub fn uniform_open0(&mut self) -> f64 {
        let bits = self.inner.next_u64() >> 11;
        ((bits + 1) as f64) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard exponential, Exp(1).
    pub(crate) fn exp1(&mut self) -> f64 {
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
        assert_eq!(rec.seed, SeedSource::User(Some(7)));
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

    /// Item 2 of the privacy audit: one seed, two releases that differ in epsilon or column,
    /// must not share (or scale) noise; the same release twice is reproducible; the seed is
    /// not in the record unless asked for.
    #[test]
    fn a_seed_gives_each_release_its_own_stream() {
        let data = || Ok(DataDigest([3; 32]));
        let a = |label: &str| {
            NoiseRng::for_release(Some(1), label, data)
                .expect("rng")
                .next_u64()
        };
        assert_eq!(
            a("histogram|col=delay|eps=1"),
            a("histogram|col=delay|eps=1")
        );
        assert_ne!(
            a("histogram|col=delay|eps=1"),
            a("histogram|col=delay|eps=2")
        );
        assert_ne!(
            a("histogram|col=delay|eps=1"),
            a("histogram|col=dist|eps=1")
        );
        let with = |seed: u64, d: u8| {
            NoiseRng::for_release(Some(seed), "x", || Ok(DataDigest([d; 32])))
                .expect("rng")
                .next_u64()
        };
        assert_ne!(with(1, 3), with(2, 3));
        // Item 2 of the second audit: one seed, neighbouring data: unrelated streams.
        assert_ne!(
            with(1, 3),
            with(1, 4),
            "the data digest is bound into the key"
        );
        assert_eq!(with(1, 3), with(1, 3));
        assert!(
            NoiseRng::for_release(None, "x", || Err(kinsey_core::Error::param("d", "unused")))
                .is_ok(),
            "an OS-keyed release never digests its data"
        );
        let mut r = NoiseRng::for_release(Some(5), "x", data).expect("rng");
        assert_eq!(r.record().seed, SeedSource::User(None));
        r.record_seed(Some(5));
        assert_eq!(r.record().seed, SeedSource::User(Some(5)));
        // prefix-free: a label and its extension by zero bytes differ
        assert_ne!(derive_key(1, "ab"), derive_key(1, "ab\0"));
        assert_ne!(os_crypto_rng().next_u64(), os_crypto_rng().next_u64());
    }

    #[test]
    fn forks_are_independent_streams() {
        let mut r = NoiseRng::from_seed_quiet(3);
        let mut c1 = r.fork();
        let mut c2 = r.fork();
        assert_ne!(c1.next_u64(), c2.next_u64());
    }
}

//! How the aggregate's noise generators are keyed: by the OS, or, for a reproducible trial,
//! by a user seed bound to everything that enters the computation.
//!
//! The published model carries the selected (smallest) party's noise only. If each party's
//! noise were bound to its own data, a row changed at another party would leave the
//! published noise unchanged, and two seeded releases would differ by exactly that party's
//! model change divided by K. So every party's noise is bound to every party's data:
//!
//! * party j's **tag** `t_j = derive_key(seed, job | K | d | j | digest(D_j))` (32 bytes;
//!   `digest` = `kinsey_data::digest::of_dataset`, the data set as read, before the row
//!   transform);
//! * party j's generator is keyed by `derive_key(seed, job | K | d | t_1 .. t_K | j)`.
//!
//! In one process the tags are computed side by side; in a network session each party sends
//! its tag to every other party (never to the curator) before drawing its noise, so both give
//! the same model. Without a seed a tag is 32 bytes from the OS (the exchange looks the same
//! on the wire) and every generator is keyed by the OS. A tag is a PRF of the data under the
//! seed: to anyone who knows the seed it is a test of a guess of the data set, as the noise
//! itself is (a seeded release is not private against whoever knows the seed).

use kinsey_data::Dataset;
use kinsey_dp::rng::{bound_label, derive_key, os_crypto_rng};
use kinsey_dp::{DataDigest, NoiseRng, RngRecord, SeedSource};
use rand_core::RngCore;

/// A party's 32-byte data tag.
pub type Tag = [u8; 32];

/// How the parties' noise generators are keyed.
#[derive(Debug, Clone)]
pub struct NoiseKeys {
    seed: Option<u64>,
    record_seed: bool,
    /// The job's public description (`pipeline::job_description`).
    job: String,
}

impl NoiseKeys {
    /// OS-keyed noise (the only private setting), or, with `seed`, reproducible noise bound
    /// to `job` and the data; `record_seed` writes the seed's value into the report.
    pub fn new(seed: Option<u64>, record_seed: bool, job: String) -> Self {
        if seed.is_some() && kinsey_dp::rng::first_seed_warning() {
            tracing::warn!("{}", kinsey_dp::rng::USER_SEED_WARNING);
        }
        Self {
            seed,
            record_seed,
            job,
        }
    }

    /// Whether a user seed keys the noise.
    pub fn seeded(&self) -> bool {
        self.seed.is_some()
    }

    /// Party `j`'s tag (of `k` parties, dimension `d`), from its data set as read.
    pub fn tag(&self, k: usize, d: usize, j: usize, data: &Dataset) -> Tag {
        self.tag_of(k, d, j, || kinsey_data::digest::of_dataset(data))
    }

    /// [`tag`](Self::tag) from the data set's digest (`kinsey_data::digest::of_dataset`,
    /// or the same digest taken a block at a time by `DatasetDigest`), computed only when a
    /// seed keys the noise.
    pub fn tag_of(&self, k: usize, d: usize, j: usize, digest: impl FnOnce() -> DataDigest) -> Tag {
        match self.seed {
            Some(s) => {
                let desc = format!("aggregate party|{}|K={k}|d={d}|party={j}", self.job);
                derive_key(s, &bound_label(&desc, &digest()))
            }
            None => {
                let mut t = [0u8; 32];
                os_crypto_rng().fill_bytes(&mut t);
                t
            }
        }
    }

    /// Party `j`'s noise generator, given every party's tag (in party order).
    pub fn party_rng(&self, d: usize, tags: &[Tag], j: usize) -> NoiseRng {
        match self.seed {
            Some(s) => {
                let all: Vec<String> = tags.iter().map(|t| DataDigest(*t).hex()).collect();
                let desc = format!(
                    "aggregate|{}|K={}|d={d}|tags={}|party={j}",
                    self.job,
                    tags.len(),
                    all.join(",")
                );
                let mut r = NoiseRng::from_derived_key(derive_key(s, &desc));
                if self.record_seed {
                    r.record_seed(self.seed);
                }
                r
            }
            None => NoiseRng::from_os(),
        }
    }

    /// What the report says about the keys.
    pub fn record(&self) -> RngRecord {
        RngRecord::of(match self.seed {
            None => SeedSource::Os,
            Some(s) => SeedSource::User(self.record_seed.then_some(s)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(v: f32) -> Dataset {
        Dataset {
            x: vec![v, 0.5],
            y: vec![1.0],
            d: 2,
            features: vec!["a".into(), "b".into()],
            source: "mem".into(),
        }
    }

    /// Item 2 of the second audit, for the aggregate: a row changed at *any* party changes
    /// *every* party's noise, so the selected noise never survives a change elsewhere.
    #[test]
    fn every_partys_noise_binds_every_partys_data() {
        let keys = NoiseKeys::new(Some(7), false, "job".into());
        let draw = |data: &[Dataset]| -> Vec<u64> {
            let tags: Vec<Tag> = data
                .iter()
                .enumerate()
                .map(|(j, p)| keys.tag(data.len(), 2, j, p))
                .collect();
            (0..data.len())
                .map(|j| keys.party_rng(2, &tags, j).next_u64())
                .collect()
        };
        let a = draw(&[ds(0.1), ds(0.2), ds(0.3)]);
        assert_eq!(a, draw(&[ds(0.1), ds(0.2), ds(0.3)]), "replayable");
        let b = draw(&[ds(0.1), ds(0.25), ds(0.3)]);
        assert!(a.iter().zip(&b).all(|(x, y)| x != y), "{a:?} {b:?}");
        let os = NoiseKeys::new(None, false, "job".into());
        assert_ne!(os.tag(3, 2, 0, &ds(0.1)), os.tag(3, 2, 0, &ds(0.1)));
        assert!(os.record().warning.is_none() && keys.record().warning.is_some());
    }
}

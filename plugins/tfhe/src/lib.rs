//! The `tfhe` backend: kinsey's secure protocol under TFHE (tfhe-rs 1.8.2, integer API),
//! whose security rests on (G)LWE, a post-quantum assumption.
//!
//! Plaintexts are integers mod 2^128 as radix ciphertexts of 64 blocks of 2 bits (parameter
//! set `PARAM_MESSAGE_2_CARRY_2_KS_PBS_TUNIFORM_2M128`: 128-bit security, failure
//! probability 2^-128 per bootstrap). Which key each participant holds, and why the server
//! key travels with the public key: `plugins/tfhe/README.md`.
//!
//! Where the time goes: additions, additions of plaintexts, the one-hot selection of
//! Stage 2 ([`ops::select`]) and re-randomisation (a fresh encryption of zero) are linear
//! maps of the LWE blocks (no bootstrapping); sanitisation bootstraps every block once (it
//! is what hides how a ciphertext was computed from the key holder who decrypts it: once
//! per Stage 2 sum, one bootstrap per bit, [`ops::sanitize_bits`], and on the curator's
//! masked Stage 1 values); Stage 1's comparisons are tfhe-rs's
//! encrypted `lt`. Every key and ciphertext is read through tfhe-rs's size-limited,
//! parameter-checked deserialization.

mod cipher;
mod compare;
mod keys;
mod ops;
mod params;

pub use compare::TfheComparison;

use cipher::{Ct, Kind};
use keys::{Keys, Public};
use kinsey_backend::registry::BackendOptions;
use kinsey_backend::{
    AdditiveHe, BackendError, BackendInfo, Ciphertext, KeyPair, PublicKey, Registry, Rng,
    SecretKey, SecureComparison, same_len,
};
use params::{BLOCKS, MSG_MAX, PARAMS_NAME, WIDTH};
use rayon::prelude::*;
use std::sync::Arc;
use tfhe::integer::IntegerRadixCiphertext;
use tfhe::shortint::ciphertext::Degree;

/// Register `tfhe` in a registry.
pub fn register(registry: &mut Registry) {
    registry.register("tfhe", create);
}

fn create(opts: &BackendOptions) -> Result<Arc<dyn AdditiveHe>, BackendError> {
    if let Some(bits) = opts.key_bits.filter(|&b| b != 2048) {
        return Err(BackendError::Other(format!(
            "the tfhe backend has one parameter set (128-bit security); key_bits = {bits} is \
             a Paillier setting and cannot be honoured"
        )));
    }
    Ok(Arc::new(Tfhe::new()))
}

/// The TFHE backend.
#[derive(Debug, Clone, Default)]
pub struct Tfhe {
    keys: Arc<Keys>,
}

impl Tfhe {
    /// A backend with an empty key cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn parse(&self, p: &Public, c: &[Ciphertext]) -> Result<Vec<Ct>, BackendError> {
        c.par_iter()
            .map(|c| cipher::decode(&p.fp, c, BLOCKS))
            .collect()
    }

    fn radix(
        &self,
        p: &Public,
        c: &[Ciphertext],
    ) -> Result<Vec<Vec<tfhe::shortint::Ciphertext>>, BackendError> {
        Ok(self
            .parse(p, c)?
            .into_iter()
            .map(|ct| ops::radix(p, ct))
            .collect())
    }

    fn out(
        &self,
        p: &Public,
        cts: Vec<Vec<tfhe::shortint::Ciphertext>>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        cts.into_par_iter()
            .map(|blocks| cipher::encode(&p.fp, &Ct::radix(blocks)))
            .collect()
    }

    fn out_cts(&self, p: &Public, cts: Vec<Ct>) -> Result<Vec<Ciphertext>, BackendError> {
        cts.par_iter().map(|c| cipher::encode(&p.fp, c)).collect()
    }

    /// Pairwise sum, `disjoint` when the caller promises one operand of each pair is zero.
    fn sum(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
        disjoint: bool,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), b.len())?;
        let p = self.keys.public(pk)?;
        let (a, b) = (self.parse(&p, a)?, self.parse(&p, b)?);
        // Selections summed as selections (no bootstrap while the budget lasts).
        if disjoint && a.iter().chain(&b).all(|c| c.kind == Kind::Bits) {
            let r = a
                .into_par_iter()
                .zip(b)
                .map(|(x, y)| ops::add_bits(&p, x, y))
                .collect::<Result<Vec<_>, _>>()?;
            return self.out_cts(&p, r);
        }
        let radix = |v: Vec<Ct>| -> Vec<Vec<tfhe::shortint::Ciphertext>> {
            v.into_iter().map(|ct| ops::radix(&p, ct)).collect()
        };
        let (a, b) = (radix(a), radix(b));
        let r = a
            .into_par_iter()
            .zip(b)
            .map(|(x, y)| ops::add(&p, x, y, disjoint))
            .collect();
        self.out(&p, r)
    }
}

impl AdditiveHe for Tfhe {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: "tfhe".into(),
            scheme: format!(
                "TFHE, tfhe-rs 1.8.2 integer API: radix integers of {BLOCKS} blocks x 2 bits \
                 (mod 2^{WIDTH}); parameter set {PARAMS_NAME} (128-bit security, failure \
                 probability 2^-128 per bootstrap); post-quantum (LWE)"
            ),
            key_bits: 2048,
            security_bits: 128,
            plaintext_bits: WIDTH - 1,
            insecure: false,
            notes: "post-quantum (LWE). Encryption under the compact public key derived from \
                    the client key (Joye 2023); sanitisation = fresh encryption of zero, \
                    one bootstrap per block, fresh encryption of zero (circuit privacy of the \
                    bootstrap is heuristic, as in tfhe-rs's re-randomisation); a selection's \
                    noise is budgeted by variance (independent terms), at most the 25 \
                    nominal units the parameter set's failure probability allows. Key material \
                    comes from tfhe-rs's seeder (OS entropy). Not constant-time against a \
                    co-resident attacker measuring cache timing of the FFT."
                .into(),
            ciphertext_bytes: u64::from(WIDTH) * (cipher::BLOCK_LIMIT + 6) + 32,
            public_key_bytes: keys::PUBLIC_KEY_LIMIT,
        }
    }

    fn bootstraps(&self) -> Option<u64> {
        Some(tfhe::get_pbs_count())
    }

    fn keygen(&self, _rng: Rng<'_>) -> Result<KeyPair, BackendError> {
        let (pk, sk) = keys::generate()?;
        Ok(KeyPair {
            public: PublicKey(pk),
            secret: SecretKey::new(sk),
        })
    }

    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
        self.keys.public(pk).map(|_| ())
    }

    fn public_key_of(&self, sk: &SecretKey) -> Result<PublicKey, BackendError> {
        let (ck, pk) = keys::parse_secret_parts(sk.as_bytes())?;
        let p = self.keys.public_bytes(pk)?;
        // The public half must belong to the client key: a zero encrypted under it decrypts.
        // The probe's randomness is irrelevant (a public constant, discarded).
        let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::from_seed([7; 32]);
        let probe = ops::encrypt(&p, &[0x5a5a], BLOCKS, &mut rng)?;
        if probe.first().map(|b| ops::decrypt(&ck, b)) != Some(0x5a5a) {
            return Err(BackendError::BadKey(
                "the TFHE secret key's public half belongs to another client key".into(),
            ));
        }
        Ok(PublicKey(pk.to_vec()))
    }

    fn comparison(&self) -> Arc<dyn SecureComparison> {
        Arc::new(TfheComparison {
            keys: self.keys.clone(),
        })
    }

    fn encrypt_with_secret_batch(
        &self,
        sk: &SecretKey,
        m: &[i128],
        _rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let (ck, p) = self.keys.secret(sk)?;
        let cts = m
            .par_iter()
            .map(|&v| {
                let mut blocks = ck.encrypt_radix(v as u128, BLOCKS).into_blocks();
                for b in &mut blocks {
                    b.degree = Degree::new(MSG_MAX);
                }
                blocks
            })
            .collect();
        self.out(&p, cts)
    }

    fn encrypt_indicator_with_secret_batch(
        &self,
        sk: &SecretKey,
        bits: &[bool],
        width: u32,
        _rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        if !(1..=WIDTH).contains(&width) {
            return Err(BackendError::Codec(format!(
                "indicator width {width} bits is outside 1..={WIDTH}"
            )));
        }
        let n = width as usize;
        let (ck, p) = self.keys.secret(sk)?;
        let key: &tfhe::shortint::ClientKey = ck.as_ref();
        bits.par_iter()
            .map(|&b| {
                let blocks = (0..n)
                    .map(|_| {
                        let mut c = key.encrypt(u64::from(b));
                        c.degree = Degree::new(1);
                        c
                    })
                    .collect();
                cipher::encode(
                    &p.fp,
                    &Ct {
                        kind: Kind::Selector,
                        blocks,
                        units: 0,
                    },
                )
            })
            .collect()
    }

    fn encrypt_batch(
        &self,
        pk: &PublicKey,
        m: &[i128],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let p = self.keys.public(pk)?;
        let m: Vec<u128> = m.iter().map(|&v| v as u128).collect();
        let cts = ops::encrypt(&p, &m, BLOCKS, rng)?;
        self.out(&p, cts)
    }

    fn decrypt_batch(&self, sk: &SecretKey, c: &[Ciphertext]) -> Result<Vec<i128>, BackendError> {
        let (ck, p) = self.keys.secret(sk)?;
        self.parse(&p, c)?
            .par_iter()
            .map(|ct| match ct.kind {
                Kind::Radix => Ok(ops::decrypt(&ck, &ct.blocks)),
                Kind::Selector => ops::decrypt_selector(&ck, &ct.blocks),
                Kind::Bits => Ok(ops::decrypt_bits(&ck, &ct.blocks)),
            })
            .collect()
    }

    fn add_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        self.sum(pk, a, b, false)
    }

    fn add_disjoint_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        self.sum(pk, a, b, true)
    }

    fn add_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        m: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), m.len())?;
        let p = self.keys.public(pk)?;
        let r = self
            .radix(&p, a)?
            .into_par_iter()
            .zip(m)
            .map(|(x, &v)| ops::add_plain(&p, x, v))
            .collect::<Result<Vec<_>, _>>()?;
        self.out(&p, r)
    }

    fn mul_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        k: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), k.len())?;
        let p = self.keys.public(pk)?;
        let r = self
            .radix(&p, a)?
            .into_iter()
            .zip(k)
            .map(|(x, &v)| ops::mul_plain(&p, x, v))
            .collect::<Result<Vec<_>, _>>()?;
        self.out(&p, r)
    }

    fn mul_plain_one_batch(
        &self,
        pk: &PublicKey,
        a: &Ciphertext,
        k: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let p = self.keys.public(pk)?;
        let ct = cipher::decode(&p.fp, a, BLOCKS)?;
        if ct.kind == Kind::Selector {
            let r = k
                .par_iter()
                .map(|&v| ops::select(&ct, v))
                .collect::<Result<Vec<_>, _>>()?;
            return self.out_cts(&p, r);
        }
        let x = ops::radix(&p, ct);
        let r = k
            .iter()
            .map(|&v| ops::mul_plain(&p, x.clone(), v))
            .collect::<Result<Vec<_>, _>>()?;
        self.out(&p, r)
    }

    fn rerandomize_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        // A fresh encryption of zero on every block: unlinkable for anyone without the
        // key. What the key holder could read in the noise is removed by `sanitize_batch`.
        self.by_kind(pk, a, rng, ops::add_zero_bits_owned, ops::rerandomize)
    }

    fn sanitize_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        self.by_kind(pk, a, rng, ops::sanitize_bits_ct, ops::sanitize)
    }
}

/// What an operation does to a batch of selections, and to a batch of integers.
type OnBits = fn(&Public, Vec<Ct>, Rng<'_>) -> Result<Vec<Ct>, BackendError>;
type OnRadix = fn(
    &Public,
    Vec<Vec<tfhe::shortint::Ciphertext>>,
    Rng<'_>,
) -> Result<Vec<Vec<tfhe::shortint::Ciphertext>>, BackendError>;

impl Tfhe {
    /// Apply `bits` to a batch of selections, or `radix` to anything else (selections in a
    /// mixed batch are first bootstrapped into integers).
    fn by_kind(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
        bits: OnBits,
        radix: OnRadix,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let p = self.keys.public(pk)?;
        let cts = self.parse(&p, a)?;
        if cts.iter().all(|c| c.kind == Kind::Bits) {
            let r = bits(&p, cts, rng)?;
            return self.out_cts(&p, r);
        }
        let cts = cts.into_iter().map(|c| ops::radix(&p, c)).collect();
        let r = radix(&p, cts, rng)?;
        self.out(&p, r)
    }
}

#[cfg(test)]
mod tests;

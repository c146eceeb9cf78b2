//! The additively homomorphic encryption interface and what a backend says about itself.

use crate::compare::SecureComparison;
use crate::error::BackendError;
use crate::keys::{Ciphertext, KeyPair, PublicKey, Rng, SecretKey};
use serde::{Deserialize, Serialize};

/// What a backend says about itself; recorded in every report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// The name in the registry (`paillier`, `mock`).
    pub name: String,
    /// The scheme and its parameters, in words.
    pub scheme: String,
    /// Key size in bits.
    pub key_bits: u32,
    /// Estimated classical security in bits (0 for insecure backends).
    pub security_bits: u32,
    /// Largest plaintext magnitude (exclusive), as bits: |m| < 2^plaintext_bits.
    pub plaintext_bits: u32,
    /// Whether the backend does not encrypt at all (refused unless `allow_insecure`).
    pub insecure: bool,
    /// What a user should know (assumptions, side channels).
    pub notes: String,
    /// Largest serialized ciphertext in bytes (transports bound their frames with it).
    #[serde(default)]
    pub ciphertext_bytes: u64,
    /// Largest serialized public key in bytes.
    #[serde(default)]
    pub public_key_bytes: u64,
}

impl BackendInfo {
    /// The keys in words for summaries: `2048-bit keys` for Paillier; for a lattice scheme
    /// (its scheme names LWE), whose key length says little, its security level.
    pub fn key_words(&self) -> String {
        if self.scheme.contains("LWE") {
            format!("LWE, {}-bit security", self.security_bits)
        } else {
            format!("{}-bit keys", self.key_bits)
        }
    }
}

/// An additively homomorphic encryption scheme over signed integers (fixed-point encoded
/// reals). The batch forms are what the protocol uses; the single forms default to them.
pub trait AdditiveHe: Send + Sync {
    /// What the backend says about itself.
    fn info(&self) -> BackendInfo;
    /// Where its batches run, in words (a backend with a GPU path says which device and
    /// when); the device changes no byte of a key or ciphertext.
    fn device(&self) -> String {
        "CPU".into()
    }
    /// A fresh key pair.
    fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError>;
    /// Check a serialized public key (size, structure).
    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError>;
    /// The public key that belongs to a secret key.
    fn public_key_of(&self, sk: &SecretKey) -> Result<PublicKey, BackendError>;
    /// Programmable bootstraps this process has run so far (backends that bootstrap:
    /// TFHE), so a report can count a run's; `None` for the others.
    fn bootstraps(&self) -> Option<u64> {
        None
    }
    /// The secure two-party comparison that goes with this backend (Stage 1).
    fn comparison(&self) -> std::sync::Arc<dyn SecureComparison>;

    /// Encryption by a holder of the secret key; backends override it with a faster path
    /// (CRT for Paillier). The ciphertexts are indistinguishable from `encrypt_batch`'s.
    fn encrypt_with_secret_batch(
        &self,
        sk: &SecretKey,
        m: &[i128],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let pk = self.public_key_of(sk)?;
        self.encrypt_batch(&pk, m, rng)
    }

    /// Encryptions of the bits of a one-hot indicator by the key holder, in the form
    /// [`AdditiveHe::mul_plain_one_batch`] multiplies fastest (TFHE: every block encrypts the
    /// bit, so the multiplication is linear). `width` is public: the plaintexts an indicator
    /// will be multiplied by lie in `[0, 2^width)` (a backend may refuse others). They
    /// decrypt to 0 or 1 and take part in every operation like any ciphertext.
    fn encrypt_indicator_with_secret_batch(
        &self,
        sk: &SecretKey,
        bits: &[bool],
        width: u32,
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let _ = width;
        let m: Vec<i128> = bits.iter().map(|&b| i128::from(b)).collect();
        self.encrypt_with_secret_batch(sk, &m, rng)
    }

    /// `E(m_i)` under `pk`, each with fresh randomness.
    fn encrypt_batch(
        &self,
        pk: &PublicKey,
        m: &[i128],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError>;
    /// `D(c_i)`; every ciphertext is validated first.
    fn decrypt_batch(&self, sk: &SecretKey, c: &[Ciphertext]) -> Result<Vec<i128>, BackendError>;
    /// `E(a_i + b_i)`.
    fn add_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
    ) -> Result<Vec<Ciphertext>, BackendError>;
    /// `E(a_i + b_i)` where the caller guarantees that `a_i = 0` or `b_i = 0` (Stage 2 sums
    /// selections of a one-hot indicator); the sum is exact either way, but a backend that
    /// tracks bounds (TFHE) keeps the tighter one and saves a carry propagation.
    fn add_disjoint_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        self.add_batch(pk, a, b)
    }
    /// `E(a_i + m_i)`.
    fn add_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        m: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError>;
    /// `E(k_i a_i)`.
    fn mul_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        k: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError>;
    /// `E(k_i a)` for one ciphertext `a` and many plaintexts (Stage 2 multiplies one
    /// indicator by a whole noise vector); backends override it with a fixed-base table.
    fn mul_plain_one_batch(
        &self,
        pk: &PublicKey,
        a: &Ciphertext,
        k: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        self.mul_plain_batch(pk, &vec![a.clone(); k.len()], k)
    }
    /// Fresh randomness, same plaintext. A backend may defer part of what hides a
    /// ciphertext's history from the key holder to [`AdditiveHe::sanitize_batch`] (TFHE
    /// re-randomises a selection with a fresh encryption of zero and bootstraps it once, when
    /// it is sanitised); the result is unlinkable to its input for anyone without the key.
    fn rerandomize_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError>;
    /// Circuit privacy before a key holder decrypts: the same plaintext in a ciphertext
    /// whose distribution depends on nothing else (how it was computed, from what). The
    /// protocol calls it once on Stage 2's sum before it goes towards the curator.
    /// The default returns the ciphertexts as they are: right for a backend whose
    /// [`AdditiveHe::rerandomize_batch`] already gives that, and whose sums of such
    /// ciphertexts keep it (Paillier and DGK: `c r^N` is uniform among the encryptions of
    /// its plaintext).
    fn sanitize_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let _ = (pk, rng);
        Ok(a.to_vec())
    }

    /// `E(m)`.
    fn encrypt(&self, pk: &PublicKey, m: i128, rng: Rng<'_>) -> Result<Ciphertext, BackendError> {
        one(self.encrypt_batch(pk, &[m], rng)?)
    }
    /// `D(c)`.
    fn decrypt(&self, sk: &SecretKey, c: &Ciphertext) -> Result<i128, BackendError> {
        one(self.decrypt_batch(sk, std::slice::from_ref(c))?)
    }
    /// `E(a + b)`.
    fn add(
        &self,
        pk: &PublicKey,
        a: &Ciphertext,
        b: &Ciphertext,
    ) -> Result<Ciphertext, BackendError> {
        one(self.add_batch(pk, std::slice::from_ref(a), std::slice::from_ref(b))?)
    }
    /// `E(a + m)`.
    fn add_plain(
        &self,
        pk: &PublicKey,
        a: &Ciphertext,
        m: i128,
    ) -> Result<Ciphertext, BackendError> {
        one(self.add_plain_batch(pk, std::slice::from_ref(a), &[m])?)
    }
    /// `E(k a)`.
    fn mul_plain(
        &self,
        pk: &PublicKey,
        a: &Ciphertext,
        k: i128,
    ) -> Result<Ciphertext, BackendError> {
        one(self.mul_plain_batch(pk, std::slice::from_ref(a), &[k])?)
    }
    /// The same plaintext under fresh randomness.
    fn rerandomize(
        &self,
        pk: &PublicKey,
        a: &Ciphertext,
        rng: Rng<'_>,
    ) -> Result<Ciphertext, BackendError> {
        one(self.rerandomize_batch(pk, std::slice::from_ref(a), rng)?)
    }
}

fn one<T>(mut v: Vec<T>) -> Result<T, BackendError> {
    v.pop()
        .ok_or_else(|| BackendError::Other("empty batch result".into()))
}

/// Error unless two batches have the same length.
pub fn same_len(a: usize, b: usize) -> Result<(), BackendError> {
    if a == b {
        Ok(())
    } else {
        Err(BackendError::Length(a, b))
    }
}

//! Keys, ciphertexts and the randomness type every backend uses (bytes, bound to their key).

use serde::{Deserialize, Serialize};

/// Serialized public key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicKey(pub Vec<u8>);
/// Serialized secret key. Its bytes are private and overwritten with zeros when it is
/// dropped (`zeroize`); read them with [`as_bytes`](Self::as_bytes).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretKey(Vec<u8>);

impl SecretKey {
    /// A secret key's serialized bytes (taken over: the caller keeps no copy).
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The serialized bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}
/// Serialized ciphertext. Every backend binds its ciphertexts to the key they were made
/// under (a key fingerprint in the bytes), so one made under another key is rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ciphertext(pub Vec<u8>);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey(<{} bytes, redacted>)", self.0.len())
    }
}

/// A key pair.
#[derive(Debug, Clone)]
pub struct KeyPair {
    /// The public key.
    pub public: PublicKey,
    /// The secret key.
    pub secret: SecretKey,
}

/// Randomness for key generation, encryption and re-randomisation: always a CSPRNG.
pub type Rng<'a> = &'a mut dyn rand_core::CryptoRng;

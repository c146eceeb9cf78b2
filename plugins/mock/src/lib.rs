//! The `mock` backend: the backend interface with NO encryption, so protocol tests run in
//! milliseconds. A "ciphertext" is the plaintext in the clear plus the key fingerprint and a
//! nonce. The registry refuses it unless the options say `allow_insecure`, and its
//! [`BackendInfo`] says `insecure: true` (every report made with it says so).
//!
//! It keeps the real backends' rules so that tests catch protocol bugs: plaintexts live in
//! a modular space (signed integers mod 2^125, wrapping like Paillier's mod N), ciphertexts
//! are bound to their key, re-randomisation changes the bytes, and malformed bytes are
//! rejected.

use kinsey_backend::SecureComparison;
use kinsey_backend::compare::{Duplex, check_bits};
use kinsey_backend::registry::BackendOptions;
use kinsey_backend::{
    AdditiveHe, BackendError, BackendInfo, Ciphertext, KeyPair, PublicKey, Registry, Rng,
    SecretKey, same_len,
};
use std::sync::Arc;

const CT_MAGIC: &[u8; 4] = b"MKCT";
const PK_MAGIC: &[u8; 4] = b"MKPK";
const SK_MAGIC: &[u8; 4] = b"MKSK";
const CT_LEN: usize = 4 + 8 + 16 + 8;
/// Plaintexts are integers mod 2^PLAIN_MOD_BITS, read as signed.
const PLAIN_MOD_BITS: u32 = 125;

/// Register `mock` in a registry.
pub fn register(registry: &mut Registry) {
    registry.register("mock", create);
}

fn create(opts: &BackendOptions) -> Result<Arc<dyn AdditiveHe>, BackendError> {
    if !opts.allow_insecure {
        return Err(BackendError::Insecure {
            name: "allow_insecure".into(),
            msg: "the 'mock' backend does not encrypt anything; set allow_insecure = true in \
                  [crypto] to use it (tests only)"
                .into(),
        });
    }
    Ok(Arc::new(Mock))
}

/// The insecure mock backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mock;

/// Reduce into the signed range [-2^124, 2^124).
fn wrap(v: i128) -> i128 {
    let shift = 128 - PLAIN_MOD_BITS;
    (v << shift) >> shift
}

fn key_id(bytes: &[u8], magic: &[u8; 4], what: &str) -> Result<u64, BackendError> {
    if bytes.len() != 12 || &bytes[..4] != magic {
        return Err(BackendError::BadKey(format!(
            "not a mock {what} ({} bytes)",
            bytes.len()
        )));
    }
    let mut id = [0u8; 8];
    id.copy_from_slice(&bytes[4..12]);
    Ok(u64::from_le_bytes(id))
}

fn encode(key: u64, m: i128, nonce: u64) -> Ciphertext {
    let mut b = Vec::with_capacity(CT_LEN);
    b.extend_from_slice(CT_MAGIC);
    b.extend_from_slice(&key.to_le_bytes());
    b.extend_from_slice(&wrap(m).to_le_bytes());
    b.extend_from_slice(&nonce.to_le_bytes());
    Ciphertext(b)
}

fn decode(key: u64, c: &Ciphertext) -> Result<(i128, u64), BackendError> {
    let b = &c.0;
    if b.len() != CT_LEN {
        return Err(BackendError::BadCiphertext(format!(
            "{} bytes, expected {CT_LEN}",
            b.len()
        )));
    }
    if &b[..4] != CT_MAGIC {
        return Err(BackendError::BadCiphertext("not a mock ciphertext".into()));
    }
    let mut k = [0u8; 8];
    k.copy_from_slice(&b[4..12]);
    if u64::from_le_bytes(k) != key {
        return Err(BackendError::BadCiphertext("made under another key".into()));
    }
    let mut m = [0u8; 16];
    m.copy_from_slice(&b[12..28]);
    let m = i128::from_le_bytes(m);
    if wrap(m) != m {
        return Err(BackendError::BadCiphertext("plaintext out of range".into()));
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&b[28..36]);
    Ok((m, u64::from_le_bytes(n)))
}

/// The mock's comparison: the helper sends its share in the clear (INSECURE, tests only).
#[derive(Debug, Clone, Copy, Default)]
pub struct MockComparison;

impl SecureComparison for MockComparison {
    fn describe(&self) -> String {
        "mock comparison (INSECURE: the helper's share is sent in the clear)".into()
    }
    fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError> {
        Mock.keygen(rng)
    }
    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
        Mock.check_public_key(pk)
    }
    fn learn(
        &self,
        _keys: &KeyPair,
        y: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        _rng: Rng<'_>,
    ) -> Result<bool, BackendError> {
        check_bits(bits)?;
        ch.send(b"go".to_vec())?;
        let m = ch.recv()?;
        let x: [u8; 16] = m.as_slice().try_into().map_err(|_| {
            BackendError::Other(format!("mock comparison: {} bytes, expected 16", m.len()))
        })?;
        let s = i128::from_le_bytes(x).wrapping_add(y);
        if s.unsigned_abs() >= 1u128 << bits {
            return Err(BackendError::Other(format!(
                "mock comparison: |x + y| is not below 2^{bits}"
            )));
        }
        Ok(s >= 0)
    }
    fn help(
        &self,
        pk: &PublicKey,
        x: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        _rng: Rng<'_>,
    ) -> Result<(), BackendError> {
        check_bits(bits)?;
        self.check_public_key(pk)?;
        ch.recv()?;
        ch.send(x.to_le_bytes().to_vec())
    }
}

impl Mock {
    fn map2(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        f: impl Fn(usize, i128, u64) -> (i128, u64),
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let key = key_id(&pk.0, PK_MAGIC, "public key")?;
        a.iter()
            .enumerate()
            .map(|(i, c)| {
                let (m, n) = decode(key, c)?;
                let (m2, n2) = f(i, m, n);
                Ok(encode(key, m2, n2))
            })
            .collect()
    }
}

impl AdditiveHe for Mock {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: "mock".into(),
            scheme: "none (plaintext in the clear)".into(),
            key_bits: 64,
            security_bits: 0,
            plaintext_bits: PLAIN_MOD_BITS - 1,
            insecure: true,
            notes: "INSECURE: no encryption; for protocol tests only".into(),
            ciphertext_bytes: 0,
            public_key_bytes: 0,
        }
    }

    fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError> {
        let id = rng.next_u64();
        let mut pk = PK_MAGIC.to_vec();
        pk.extend_from_slice(&id.to_le_bytes());
        let mut sk = SK_MAGIC.to_vec();
        sk.extend_from_slice(&id.to_le_bytes());
        Ok(KeyPair {
            public: PublicKey(pk),
            secret: SecretKey::new(sk),
        })
    }

    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
        key_id(&pk.0, PK_MAGIC, "public key").map(|_| ())
    }

    fn public_key_of(&self, sk: &SecretKey) -> Result<PublicKey, BackendError> {
        let id = key_id(sk.as_bytes(), SK_MAGIC, "secret key")?;
        let mut pk = PK_MAGIC.to_vec();
        pk.extend_from_slice(&id.to_le_bytes());
        Ok(PublicKey(pk))
    }

    fn comparison(&self) -> Arc<dyn SecureComparison> {
        Arc::new(MockComparison)
    }

    fn encrypt_batch(
        &self,
        pk: &PublicKey,
        m: &[i128],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let key = key_id(&pk.0, PK_MAGIC, "public key")?;
        m.iter()
            .map(|&v| {
                if wrap(v) != v {
                    return Err(BackendError::Codec(format!(
                        "plaintext {v} exceeds 2^{}",
                        PLAIN_MOD_BITS - 1
                    )));
                }
                Ok(encode(key, v, rng.next_u64()))
            })
            .collect()
    }

    fn decrypt_batch(&self, sk: &SecretKey, c: &[Ciphertext]) -> Result<Vec<i128>, BackendError> {
        let key = key_id(sk.as_bytes(), SK_MAGIC, "secret key")?;
        c.iter().map(|c| decode(key, c).map(|(m, _)| m)).collect()
    }

    fn add_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), b.len())?;
        let key = key_id(&pk.0, PK_MAGIC, "public key")?;
        let bs = b
            .iter()
            .map(|c| decode(key, c))
            .collect::<Result<Vec<_>, _>>()?;
        self.map2(pk, a, |i, m, n| {
            (wrap(m.wrapping_add(bs[i].0)), n ^ bs[i].1)
        })
    }

    fn add_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        m: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), m.len())?;
        self.map2(pk, a, |i, v, n| (wrap(v.wrapping_add(m[i])), n))
    }

    fn mul_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        k: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), k.len())?;
        self.map2(pk, a, |i, v, n| (wrap(v.wrapping_mul(k[i])), n))
    }

    fn rerandomize_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let fresh: Vec<u64> = a.iter().map(|_| rng.next_u64() | 1).collect();
        self.map2(pk, a, |i, v, n| (v, n ^ fresh[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn mock_passes_the_conformance_suite() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        kinsey_backend::conformance::run(&Mock, &mut rng).expect("conformance");
    }

    #[test]
    fn fuzz_mock_keys_and_ciphertexts() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        kinsey_backend::fuzzing::decoders(&Mock, u32::MAX, u32::MAX, &mut rng);
    }

    #[test]
    fn registry_refuses_mock_unless_insecure_is_allowed_and_lists_names() {
        let mut r = Registry::new();
        register(&mut r);
        r.register_disabled("tfhe", "tfhe");
        let e = r
            .create("mock", &BackendOptions::default())
            .err()
            .expect("refused");
        assert!(e.to_string().contains("allow_insecure"), "{e}");
        let ok = r
            .create(
                "mock",
                &BackendOptions {
                    allow_insecure: true,
                    ..Default::default()
                },
            )
            .expect("allowed");
        assert!(ok.info().insecure);
        let e = r
            .create("pailier", &BackendOptions::default())
            .err()
            .expect("unknown");
        assert!(
            e.to_string().contains("pailier") && e.to_string().contains("mock"),
            "{e}"
        );
        let e = r
            .create("tfhe", &BackendOptions::default())
            .err()
            .expect("disabled");
        assert!(e.to_string().contains("cargo feature 'tfhe'"), "{e}");
        assert_eq!(r.names(), vec!["mock"]);
    }

    /// A mock with one property broken, to show the suite can fail.
    struct Broken(&'static str);

    impl AdditiveHe for Broken {
        fn info(&self) -> BackendInfo {
            Mock.info()
        }
        fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError> {
            Mock.keygen(rng)
        }
        fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
            Mock.check_public_key(pk)
        }
        fn public_key_of(&self, sk: &SecretKey) -> Result<PublicKey, BackendError> {
            Mock.public_key_of(sk)
        }
        fn comparison(&self) -> Arc<dyn SecureComparison> {
            if self.0 == "compare" {
                return Arc::new(OffByOne);
            }
            Mock.comparison()
        }
        fn encrypt_batch(
            &self,
            pk: &PublicKey,
            m: &[i128],
            rng: Rng<'_>,
        ) -> Result<Vec<Ciphertext>, BackendError> {
            Mock.encrypt_batch(pk, m, rng)
        }
        fn decrypt_batch(
            &self,
            sk: &SecretKey,
            c: &[Ciphertext],
        ) -> Result<Vec<i128>, BackendError> {
            Mock.decrypt_batch(sk, c)
        }
        fn add_batch(
            &self,
            pk: &PublicKey,
            a: &[Ciphertext],
            b: &[Ciphertext],
        ) -> Result<Vec<Ciphertext>, BackendError> {
            if self.0 == "add" {
                return Mock.add_plain_batch(pk, a, &vec![1; a.len()]);
            }
            Mock.add_batch(pk, a, b)
        }
        fn add_plain_batch(
            &self,
            pk: &PublicKey,
            a: &[Ciphertext],
            m: &[i128],
        ) -> Result<Vec<Ciphertext>, BackendError> {
            Mock.add_plain_batch(pk, a, m)
        }
        fn mul_plain_batch(
            &self,
            pk: &PublicKey,
            a: &[Ciphertext],
            k: &[i128],
        ) -> Result<Vec<Ciphertext>, BackendError> {
            if self.0 == "mul" {
                let abs: Vec<i128> = k.iter().map(|v| v.abs()).collect();
                return Mock.mul_plain_batch(pk, a, &abs);
            }
            Mock.mul_plain_batch(pk, a, k)
        }
        fn rerandomize_batch(
            &self,
            pk: &PublicKey,
            a: &[Ciphertext],
            rng: Rng<'_>,
        ) -> Result<Vec<Ciphertext>, BackendError> {
            if self.0 == "rerandomize" {
                return Ok(a.to_vec());
            }
            Mock.rerandomize_batch(pk, a, rng)
        }
    }

    /// A comparison that answers `[x + y > 0]`: wrong only on equality.
    struct OffByOne;

    impl SecureComparison for OffByOne {
        fn describe(&self) -> String {
            "broken".into()
        }
        fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError> {
            Mock.keygen(rng)
        }
        fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
            Mock.check_public_key(pk)
        }
        fn learn(
            &self,
            keys: &KeyPair,
            y: i128,
            bits: u32,
            ch: &mut dyn Duplex,
            rng: Rng<'_>,
        ) -> Result<bool, BackendError> {
            MockComparison.learn(keys, y - 1, bits, ch, rng)
        }
        fn help(
            &self,
            pk: &PublicKey,
            x: i128,
            bits: u32,
            ch: &mut dyn Duplex,
            rng: Rng<'_>,
        ) -> Result<(), BackendError> {
            MockComparison.help(pk, x, bits, ch, rng)
        }
    }

    #[test]
    fn the_suite_catches_broken_backends() {
        for (what, needle) in [
            ("compare", "x + y = 0"),
            ("add", "a + b"),
            ("mul", "k a"),
            ("rerandomize", "re-randomisation"),
        ] {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
            let e = kinsey_backend::conformance::run(&Broken(what), &mut rng).expect_err(what);
            assert!(e.contains(needle), "{what}: {e}");
        }
    }

    #[test]
    fn plaintexts_wrap_like_a_modular_space() {
        assert_eq!(wrap(1i128 << 124), -(1i128 << 124));
        assert_eq!(wrap(-1), -1);
    }
}

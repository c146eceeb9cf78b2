//! Paillier encryption (Paillier 1999) on GMP through rug, behind kinsey's `AdditiveHe`.
//!
//! * Keys: n = p q with p, q random primes of equal size, gcd(n, (p-1)(q-1)) = 1 checked;
//!   g = n + 1. 2048-bit n by default (3072 and 4096 available); smaller keys are refused
//!   unless `allow_insecure_test_keys` is set (tests only).
//! * Encryption: `(1 + m n) r^n mod n^2`, r uniform in [1, n) with gcd(r, n) = 1.
//! * Decryption: CRT over p^2 and q^2; the exponents p - 1 and q - 1 are secret, so the
//!   modular exponentiations use GMP's constant-time `secure_pow_mod`.
//! * Multiplication by a plaintext constant uses `secure_pow_mod` too: in the protocol the
//!   constant can be secret noise (Stage 2).
//! * Plaintexts are signed integers mod n (values above n/2 decode as negative); the
//!   interface carries them as i128, so |m| < 2^126.
//! * Every incoming ciphertext is validated: right length, bound to this key, 0 < c < n^2
//!   and gcd(c, n) = 1.
//! * Batches run in parallel with rayon; randomness is drawn from the caller's CSPRNG first.

use kinsey_backend::registry::BackendOptions;
use kinsey_backend::{
    AdditiveHe, BackendError, BackendInfo, Ciphertext, KeyPair, PublicKey, Registry, Rng,
    SecretKey, same_len,
};
use rayon::prelude::*;
use rug::integer::{IsPrime, Order};
use rug::{Complete, Integer};
use std::sync::Arc;

/// Smallest key accepted without `allow_insecure_test_keys`.
pub const MIN_KEY_BITS: u32 = 2048;
const PK_MAGIC: &[u8; 4] = b"PLPK";
const SK_MAGIC: &[u8; 4] = b"PLSK";

/// Register `paillier` in a registry.
pub fn register(registry: &mut Registry) {
    registry.register("paillier", create);
}

fn create(opts: &BackendOptions) -> Result<Arc<dyn AdditiveHe>, BackendError> {
    Ok(Arc::new(Paillier::new(
        opts.key_bits.unwrap_or(MIN_KEY_BITS),
        opts.allow_insecure_test_keys,
    )?))
}

/// NIST SP 800-57 estimate of classical security for an RSA-type modulus.
pub fn security_bits(key_bits: u32) -> u32 {
    match key_bits {
        b if b >= 15360 => 256,
        b if b >= 7680 => 192,
        b if b >= 3072 => 128,
        b if b >= 2048 => 112,
        b if b >= 1024 => 80,
        _ => 0,
    }
}

/// The Paillier backend for one key size.
#[derive(Debug, Clone, Copy)]
pub struct Paillier {
    key_bits: u32,
}

impl Paillier {
    pub fn new(key_bits: u32, allow_insecure_test_keys: bool) -> Result<Self, BackendError> {
        if !key_bits.is_multiple_of(2) || key_bits < 128 {
            return Err(BackendError::BadKey(format!(
                "key size must be an even number of bits >= 128, got {key_bits}"
            )));
        }
        if key_bits < MIN_KEY_BITS && !allow_insecure_test_keys {
            return Err(BackendError::WeakKey {
                bits: key_bits,
                min: MIN_KEY_BITS,
            });
        }
        Ok(Self { key_bits })
    }
}

/// Parsed public key.
struct Pk {
    n: Integer,
    n2: Integer,
    /// Bytes of one ciphertext value (n^2, big-endian, fixed width).
    width: usize,
    fingerprint: [u8; 8],
}

fn fingerprint(n: &Integer) -> [u8; 8] {
    let d = n.to_digits::<u8>(Order::Lsf);
    let mut f = [0u8; 8];
    for (i, b) in d.iter().take(8).enumerate() {
        f[i] = *b;
    }
    f
}

fn be_fixed(x: &Integer, width: usize) -> Vec<u8> {
    let d = x.to_digits::<u8>(Order::Msf);
    let mut out = vec![0u8; width.saturating_sub(d.len())];
    out.extend_from_slice(&d);
    out
}

fn parse_pk(pk: &PublicKey) -> Result<Pk, BackendError> {
    let b = &pk.0;
    if b.len() < 8 || &b[..4] != PK_MAGIC {
        return Err(BackendError::BadKey(
            "not a kinsey Paillier public key".into(),
        ));
    }
    let bits = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let n = Integer::from_digits(&b[8..], Order::Msf);
    if n.significant_bits() != bits || bits < 128 || n.is_even() {
        return Err(BackendError::BadKey(format!(
            "public key modulus does not have the declared {bits} bits or is even"
        )));
    }
    let n2 = n.clone().square();
    let width = (n2.significant_bits() as usize).div_ceil(8);
    let fingerprint = fingerprint(&n);
    Ok(Pk {
        n,
        n2,
        width,
        fingerprint,
    })
}

/// Parsed secret key with CRT constants.
struct Sk {
    pk: Pk,
    p: Integer,
    q: Integer,
    p2: Integer,
    q2: Integer,
    pm1: Integer,
    qm1: Integer,
    hp: Integer,
    hq: Integer,
    q_inv_p: Integer,
}

fn l_function(x: Integer, d: &Integer) -> Integer {
    (x - 1u32) / d
}

fn parse_sk(sk: &SecretKey) -> Result<Sk, BackendError> {
    let b = &sk.0;
    let bad = || BackendError::BadKey("not a kinsey Paillier secret key".into());
    if b.len() < 8 || &b[..4] != SK_MAGIC {
        return Err(bad());
    }
    let plen = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
    if b.len() < 8 + plen + 1 {
        return Err(bad());
    }
    let p = Integer::from_digits(&b[8..8 + plen], Order::Msf);
    let q = Integer::from_digits(&b[8 + plen..], Order::Msf);
    if p <= 2 || q <= 2 || p == q {
        return Err(bad());
    }
    let n = (&p * &q).complete();
    let mut pkb = PK_MAGIC.to_vec();
    pkb.extend_from_slice(&n.significant_bits().to_le_bytes());
    pkb.extend_from_slice(&n.to_digits::<u8>(Order::Msf));
    let pk = parse_pk(&PublicKey(pkb))?;
    let p2 = p.clone().square();
    let q2 = q.clone().square();
    let pm1 = (&p - 1u32).complete();
    let qm1 = (&q - 1u32).complete();
    // With g = n + 1: g^(p-1) = 1 + (p-1) n (mod p^2), so L_p(g^(p-1) mod p^2) = (p-1) q
    // = -q (mod p) and h_p = (-q)^-1 mod p; likewise h_q = (-p)^-1 mod q. No exponentiation
    // with the secret p - 1 is needed to derive them.
    let hp = (p.clone() - (&q % &p).complete())
        .invert(&p)
        .map_err(|_| bad())?;
    let hq = (q.clone() - (&p % &q).complete())
        .invert(&q)
        .map_err(|_| bad())?;
    let q_inv_p = q.clone().invert(&p).map_err(|_| bad())?;
    Ok(Sk {
        pk,
        p,
        q,
        p2,
        q2,
        pm1,
        qm1,
        hp,
        hq,
        q_inv_p,
    })
}

impl Pk {
    fn to_ct(&self, c: &Integer) -> Ciphertext {
        let mut b = self.fingerprint.to_vec();
        b.extend_from_slice(&be_fixed(c, self.width));
        Ciphertext(b)
    }

    /// Parse and validate: length, key binding, 0 < c < n^2, gcd(c, n) = 1.
    fn parse_ct(&self, c: &Ciphertext) -> Result<Integer, BackendError> {
        let b = &c.0;
        if b.len() != 8 + self.width {
            return Err(BackendError::BadCiphertext(format!(
                "{} bytes, expected {}",
                b.len(),
                8 + self.width
            )));
        }
        if b[..8] != self.fingerprint {
            return Err(BackendError::BadCiphertext("made under another key".into()));
        }
        let v = Integer::from_digits(&b[8..], Order::Msf);
        if v <= 0 || v >= self.n2 {
            return Err(BackendError::BadCiphertext("value outside (0, n^2)".into()));
        }
        if v.gcd_ref(&self.n).complete() != 1 {
            return Err(BackendError::BadCiphertext(
                "value not invertible mod n".into(),
            ));
        }
        Ok(v)
    }

    fn parse_cts(&self, cs: &[Ciphertext]) -> Result<Vec<Integer>, BackendError> {
        cs.par_iter().map(|c| self.parse_ct(c)).collect()
    }

    /// Signed plaintext -> residue mod n.
    fn residue(&self, m: i128) -> Integer {
        let v = Integer::from(m);
        if v < 0 { v + &self.n } else { v }
    }

    /// Residue mod n -> signed plaintext (values above n/2 are negative).
    fn signed(&self, r: Integer) -> Result<i128, BackendError> {
        let half = (&self.n >> 1u32).complete();
        let v = if r > half { r - &self.n } else { r };
        v.to_i128().ok_or_else(|| {
            BackendError::Codec("decrypted value does not fit 127 bits: a sum overflowed".into())
        })
    }

    /// `g^m = 1 + m n mod n^2` (g = n + 1).
    fn g_pow(&self, m: i128) -> Integer {
        (self.residue(m) * &self.n + 1u32) % &self.n2
    }

    /// `r^n mod n^2` for a fresh r.
    fn noise(&self, r: &Integer) -> Integer {
        // The exponent n is public; r is secret but random and used once.
        r.clone().secure_pow_mod(&self.n, &self.n2)
    }
}

/// Uniform r in [1, n) with gcd(r, n) = 1, from the caller's CSPRNG.
fn random_unit(n: &Integer, rng: &mut dyn rand_core::CryptoRng) -> Integer {
    let bytes = (n.significant_bits() as usize).div_ceil(8) + 16;
    loop {
        let mut buf = vec![0u8; bytes];
        rng.fill_bytes(&mut buf);
        let r = Integer::from_digits(&buf, Order::Lsf) % n;
        if r > 0 && r.gcd_ref(n).complete() == 1 {
            return r;
        }
    }
}

fn random_prime(bits: u32, rng: &mut dyn rand_core::CryptoRng) -> Integer {
    loop {
        let mut buf = vec![0u8; (bits as usize).div_ceil(8)];
        rng.fill_bytes(&mut buf);
        let mut x = Integer::from_digits(&buf, Order::Lsf);
        x.keep_bits_mut(bits);
        x.set_bit(bits - 1, true);
        x.set_bit(bits - 2, true); // p q has exactly 2 * bits bits
        x.set_bit(0, true);
        let p = x.next_prime();
        if p.significant_bits() == bits && p.is_probably_prime(40) != IsPrime::No {
            return p;
        }
    }
}

impl AdditiveHe for Paillier {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: "paillier".into(),
            scheme: "Paillier, g = n + 1, CRT decryption (GMP secure_pow_mod)".into(),
            key_bits: self.key_bits,
            security_bits: security_bits(self.key_bits),
            plaintext_bits: 126,
            insecure: self.key_bits < MIN_KEY_BITS,
            notes: if self.key_bits < MIN_KEY_BITS {
                format!(
                    "TEST KEY: {} bits is below the {MIN_KEY_BITS}-bit minimum",
                    self.key_bits
                )
            } else {
                String::new()
            },
        }
    }

    fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError> {
        let half = self.key_bits / 2;
        loop {
            let p = random_prime(half, rng);
            let q = random_prime(half, rng);
            if p == q {
                continue;
            }
            let n = (&p * &q).complete();
            let phi = ((&p - 1u32).complete()) * ((&q - 1u32).complete());
            if n.significant_bits() != self.key_bits || n.gcd_ref(&phi).complete() != 1 {
                continue;
            }
            let mut pk = PK_MAGIC.to_vec();
            pk.extend_from_slice(&self.key_bits.to_le_bytes());
            pk.extend_from_slice(&n.to_digits::<u8>(Order::Msf));
            let pd = p.to_digits::<u8>(Order::Msf);
            let mut sk = SK_MAGIC.to_vec();
            sk.extend_from_slice(&(pd.len() as u32).to_le_bytes());
            sk.extend_from_slice(&pd);
            sk.extend_from_slice(&q.to_digits::<u8>(Order::Msf));
            return Ok(KeyPair {
                public: PublicKey(pk),
                secret: SecretKey(sk),
            });
        }
    }

    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
        let k = parse_pk(pk)?;
        if k.n.significant_bits() != self.key_bits {
            return Err(BackendError::BadKey(format!(
                "public key has {} bits, this backend is configured for {}",
                k.n.significant_bits(),
                self.key_bits
            )));
        }
        Ok(())
    }

    fn encrypt_batch(
        &self,
        pk: &PublicKey,
        m: &[i128],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let k = parse_pk(pk)?;
        let rs: Vec<Integer> = m.iter().map(|_| random_unit(&k.n, rng)).collect();
        Ok(m.par_iter()
            .zip(rs.par_iter())
            .map(|(&v, r)| k.to_ct(&((k.g_pow(v) * k.noise(r)) % &k.n2)))
            .collect())
    }

    fn decrypt_batch(&self, sk: &SecretKey, c: &[Ciphertext]) -> Result<Vec<i128>, BackendError> {
        let s = parse_sk(sk)?;
        let cs = s.pk.parse_cts(c)?;
        cs.par_iter()
            .map(|c| {
                let mp = (l_function(c.clone().secure_pow_mod(&s.pm1, &s.p2), &s.p) * &s.hp) % &s.p;
                let mq = (l_function(c.clone().secure_pow_mod(&s.qm1, &s.q2), &s.q) * &s.hq) % &s.q;
                // CRT: m = mq + q ((mp - mq) q^-1 mod p)
                let mut t = ((mp - &mq) * &s.q_inv_p) % &s.p;
                if t < 0 {
                    t += &s.p;
                }
                s.pk.signed(mq + t * &s.q)
            })
            .collect()
    }

    fn add_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        b: &[Ciphertext],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), b.len())?;
        let k = parse_pk(pk)?;
        let (x, y) = (k.parse_cts(a)?, k.parse_cts(b)?);
        Ok(x.par_iter()
            .zip(y.par_iter())
            .map(|(x, y)| k.to_ct(&((x * y).complete() % &k.n2)))
            .collect())
    }

    fn add_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        m: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), m.len())?;
        let k = parse_pk(pk)?;
        let x = k.parse_cts(a)?;
        Ok(x.par_iter()
            .zip(m.par_iter())
            .map(|(x, &v)| k.to_ct(&((k.g_pow(v) * x) % &k.n2)))
            .collect())
    }

    fn mul_plain_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        s: &[i128],
    ) -> Result<Vec<Ciphertext>, BackendError> {
        same_len(a.len(), s.len())?;
        let k = parse_pk(pk)?;
        let x = k.parse_cts(a)?;
        x.par_iter()
            .zip(s.par_iter())
            .map(|(x, &v)| {
                if v == 0 {
                    // E(0) with r = 1; the protocol re-randomises before anything leaves a party.
                    return Ok(k.to_ct(&Integer::from(1)));
                }
                let base = if v < 0 {
                    x.clone()
                        .invert(&k.n2)
                        .map_err(|_| BackendError::BadCiphertext("not invertible".into()))?
                } else {
                    x.clone()
                };
                let e = Integer::from(v.unsigned_abs());
                Ok(k.to_ct(&base.secure_pow_mod(&e, &k.n2)))
            })
            .collect()
    }

    fn rerandomize_batch(
        &self,
        pk: &PublicKey,
        a: &[Ciphertext],
        rng: Rng<'_>,
    ) -> Result<Vec<Ciphertext>, BackendError> {
        let k = parse_pk(pk)?;
        let x = k.parse_cts(a)?;
        let rs: Vec<Integer> = a.iter().map(|_| random_unit(&k.n, rng)).collect();
        Ok(x.par_iter()
            .zip(rs.par_iter())
            .map(|(x, r)| k.to_ct(&((k.noise(r) * x) % &k.n2)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn paillier_passes_the_conformance_suite() {
        // 1024-bit test keys keep the suite fast; the arithmetic is the same at 2048.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let backend = Paillier::new(1024, true).expect("test key size");
        kinsey_backend::conformance::run(&backend, &mut rng).expect("conformance");
    }

    #[test]
    fn key_sizes_are_enforced_and_described() {
        let e = Paillier::new(1024, false).expect_err("weak");
        assert!(e.to_string().contains("allow_insecure_test_keys"), "{e}");
        assert!(Paillier::new(1023, true).is_err());
        let p = Paillier::new(3072, false).expect("ok");
        assert_eq!(p.info().security_bits, 128);
        assert!(!p.info().insecure);
        assert!(Paillier::new(512, true).expect("test").info().insecure);
        let mut r = Registry::new();
        register(&mut r);
        let e = r.create(
            "paillier",
            &BackendOptions {
                key_bits: Some(1024),
                ..Default::default()
            },
        );
        assert!(e.is_err());
    }

    #[test]
    fn ciphertexts_outside_the_group_are_rejected() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
        let b = Paillier::new(512, true).expect("test");
        let kp = b.keygen(&mut rng).expect("keygen");
        let k = parse_pk(&kp.public).expect("pk");
        // c = n (not invertible) and c = n^2 (out of range), correctly framed.
        for v in [k.n.clone(), k.n2.clone()] {
            let c = k.to_ct(&v);
            let e = b.decrypt(&kp.secret, &c).expect_err("rejected");
            assert!(matches!(e, BackendError::BadCiphertext(_)), "{e}");
        }
    }
}

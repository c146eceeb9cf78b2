//! Key formats: the public key (n, h_s) and the secret key (p, q) as bytes, parsed and
//! checked before use, and the precomputations each key gets.

use crate::arith::*;
use crate::fixed_base::FixedBase;
use kinsey_backend::{BackendError, Ciphertext, KeyPair, PublicKey, SecretKey};
use rug::integer::Order;
use rug::{Complete, Integer};

/// Magic bytes of a serialized public key.
pub(crate) const PK_MAGIC: &[u8; 4] = b"PLP2";
/// Magic bytes of a serialized secret key.
pub(crate) const SK_MAGIC: &[u8; 4] = b"PLS2";

/// Parsed public key.
pub(crate) struct Pk {
    pub(crate) bits: u32,
    pub(crate) n: Integer,
    pub(crate) n2: Integer,
    /// `h_s`, a random n-th residue: the base of the encryption randomness.
    pub(crate) hs: Integer,
    /// Bytes of one value mod n^2 (big-endian, fixed width).
    pub(crate) width: usize,
    pub(crate) fingerprint: [u8; 8],
}

pub(crate) struct PkCtx {
    pub(crate) pk: Pk,
    pub(crate) table: FixedBase,
    /// `n^2` and the table in the GPU's form, built on the first GPU batch.
    pub(crate) gpu: crate::gpu::Lazy<crate::gpu::GpuPk>,
}

impl PkCtx {
    /// The key's GPU form (built on first use).
    pub(crate) fn gpu(&self) -> Result<&crate::gpu::GpuPk, BackendError> {
        self.gpu
            .get(|| crate::gpu::GpuPk::new(self.pk.bits, &self.pk.n2, &self.table))
    }
}

impl SkCtx {
    /// The key's GPU form (built on first use).
    pub(crate) fn gpu(&self) -> Result<&crate::gpu::GpuSk, BackendError> {
        self.gpu.get(|| {
            crate::gpu::GpuSk::new(crate::gpu::SecretParts {
                bits: self.sk.pk.bits,
                p2: &self.sk.p2,
                q2: &self.sk.q2,
                pm1: &self.sk.pm1,
                qm1: &self.sk.qm1,
            })
        })
    }
}

pub(crate) fn fingerprint(n: &Integer) -> [u8; 8] {
    let d = n.to_digits::<u8>(Order::Lsf);
    let mut f = [0u8; 8];
    for (i, b) in d.iter().take(8).enumerate() {
        f[i] = *b;
    }
    f
}

pub(crate) fn n_bytes(bits: u32) -> usize {
    (bits as usize).div_ceil(8)
}

pub(crate) fn sq_bytes(bits: u32) -> usize {
    (2 * bits as usize).div_ceil(8)
}

/// Serialize a public key: magic, bits, n, h_s.
pub(crate) fn write_pk(n: &Integer, hs: &Integer) -> PublicKey {
    let bits = n.significant_bits();
    let mut b = PK_MAGIC.to_vec();
    b.extend_from_slice(&bits.to_le_bytes());
    b.extend_from_slice(&be_fixed(n, n_bytes(bits)));
    b.extend_from_slice(&be_fixed(hs, sq_bytes(bits)));
    PublicKey(b)
}

/// A public key for modulus `n` with a fresh `h_s = (-y^2)^n mod n^2`.
pub(crate) fn public_key_for(n: &Integer, rng: &mut dyn rand_core::CryptoRng) -> PublicKey {
    let y = random_unit(n, rng);
    let h = n - (&y * &y).complete() % n;
    let n2 = n.clone().square();
    let hs = h.secure_pow_mod(n, &n2);
    write_pk(n, &hs)
}

pub(crate) fn parse_pk(pk: &PublicKey) -> Result<Pk, BackendError> {
    let b = &pk.0;
    let bad = |why: &str| BackendError::BadKey(format!("not a kinsey Paillier public key: {why}"));
    if b.len() < 8 || &b[..4] != PK_MAGIC {
        return Err(bad("wrong header"));
    }
    let bits = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    if !(128..=65536).contains(&bits) || b.len() != 8 + n_bytes(bits) + sq_bytes(bits) {
        return Err(bad("wrong length"));
    }
    let n = Integer::from_digits(&b[8..8 + n_bytes(bits)], Order::Msf);
    if n.significant_bits() != bits || n.is_even() {
        return Err(bad("modulus does not have the declared size or is even"));
    }
    let hs = Integer::from_digits(&b[8 + n_bytes(bits)..], Order::Msf);
    let n2 = n.clone().square();
    if hs <= 1 || hs >= n2 || hs.gcd_ref(&n).complete() != 1 {
        return Err(bad("h_s is not a unit mod n^2"));
    }
    Ok(Pk {
        bits,
        width: sq_bytes(bits),
        fingerprint: fingerprint(&n),
        n,
        n2,
        hs,
    })
}

/// Parsed secret key with CRT constants.
pub(crate) struct Sk {
    pub(crate) pk: Pk,
    pub(crate) p: Integer,
    pub(crate) q: Integer,
    pub(crate) p2: Integer,
    pub(crate) q2: Integer,
    pub(crate) pm1: Integer,
    pub(crate) qm1: Integer,
    pub(crate) hp: Integer,
    pub(crate) hq: Integer,
    pub(crate) q_inv_p: Integer,
    /// `p^-1 mod 2^bits(p)` and `q^-1 mod 2^bits(q)`: the L function's exact division by
    /// a secret prime as a multiplication and a truncation (no GMP division by a secret).
    pub(crate) p_inv_2k: Integer,
    pub(crate) q_inv_2k: Integer,
}

/// `L(x) = (x - 1) / d` for `x = 1 (mod d)`, `0 <= L < d`: `(x - 1) d^-1 mod 2^bits(d)`
/// (exact division by a 2-adic inverse; `d_inv_2k` precomputed).
pub(crate) fn l_secret(x: Integer, d: &Integer, d_inv_2k: &Integer) -> Integer {
    ((x - 1u32) * d_inv_2k).keep_bits(d.significant_bits())
}

/// `d^-1 mod 2^bits(d)` for odd `d`.
pub(crate) fn inv_2k(d: &Integer) -> Option<Integer> {
    let m = Integer::from(1) << d.significant_bits();
    d.clone().invert(&m).ok()
}

pub(crate) struct SkCtx {
    pub(crate) sk: Sk,
    /// `p^2`, `q^2` and the decryption exponents in the GPU's form, built on first use.
    pub(crate) gpu: crate::gpu::Lazy<crate::gpu::GpuSk>,
}

/// Serialize a secret key: magic, public key, p, q.
pub(crate) fn write_sk(pk: &PublicKey, p: &Integer, q: &Integer) -> SecretKey {
    let mut b = SK_MAGIC.to_vec();
    b.extend_from_slice(&(pk.0.len() as u32).to_le_bytes());
    b.extend_from_slice(&pk.0);
    let pd = p.to_digits::<u8>(Order::Msf);
    b.extend_from_slice(&(pd.len() as u32).to_le_bytes());
    b.extend_from_slice(&pd);
    b.extend_from_slice(&q.to_digits::<u8>(Order::Msf));
    SecretKey::new(b)
}

/// The public key bytes inside a secret key.
pub(crate) fn sk_public(b: &[u8]) -> Result<(&[u8], &[u8]), BackendError> {
    let bad = || BackendError::BadKey("not a kinsey Paillier secret key".into());
    if b.len() < 8 || &b[..4] != SK_MAGIC {
        return Err(bad());
    }
    let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
    let pk = b.get(8..8 + len).ok_or_else(bad)?;
    Ok((pk, &b[8 + len..]))
}

pub(crate) fn parse_sk(sk: &SecretKey) -> Result<Sk, BackendError> {
    let bad = || BackendError::BadKey("not a kinsey Paillier secret key".into());
    let (pkb, rest) = sk_public(sk.as_bytes())?;
    let pk = parse_pk(&PublicKey(pkb.to_vec()))?;
    if rest.len() < 5 {
        return Err(bad());
    }
    let plen = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
    if rest.len() < 4 + plen + 1 {
        return Err(bad());
    }
    let p = Integer::from_digits(&rest[4..4 + plen], Order::Msf);
    let q = Integer::from_digits(&rest[4 + plen..], Order::Msf);
    if p <= 2 || q <= 2 || p == q || (&p * &q).complete() != pk.n {
        return Err(BackendError::BadKey(
            "secret key primes do not multiply to the public modulus".into(),
        ));
    }
    let p2 = p.clone().square();
    let q2 = q.clone().square();
    let pm1 = (&p - 1u32).complete();
    let qm1 = (&q - 1u32).complete();
    // With g = n + 1: g^(p-1) = 1 + (p-1) n (mod p^2), so L_p(g^(p-1) mod p^2) = (p-1) q
    // = -q (mod p) and h_p = (-q)^-1 mod p; likewise h_q = (-p)^-1 mod q. No exponentiation
    // with the secret p - 1 is needed to derive them.
    let hp = (p.clone() - sec_mod(&q, &p))
        .invert(&p)
        .map_err(|_| bad())?;
    let hq = (q.clone() - sec_mod(&p, &q))
        .invert(&q)
        .map_err(|_| bad())?;
    let q_inv_p = q.clone().invert(&p).map_err(|_| bad())?;
    let p_inv_2k = inv_2k(&p).ok_or_else(bad)?;
    let q_inv_2k = inv_2k(&q).ok_or_else(bad)?;
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
        p_inv_2k,
        q_inv_2k,
    })
}

/// A key pair from two primes (fresh h_s).
pub(crate) fn key_pair_from_primes(
    p: &Integer,
    q: &Integer,
    rng: &mut dyn rand_core::CryptoRng,
) -> KeyPair {
    let n = (p * q).complete();
    let public = public_key_for(&n, rng);
    let secret = write_sk(&public, p, q);
    KeyPair { public, secret }
}

/// A key pair from two primes and a given public key (which must have modulus p q).
pub(crate) fn key_pair_with_public(public: PublicKey, p: &Integer, q: &Integer) -> KeyPair {
    let secret = write_sk(&public, p, q);
    KeyPair { public, secret }
}

/// The `h_s` of a kinsey Paillier public key.
pub(crate) fn hs_of(pk: &PublicKey) -> Result<Integer, BackendError> {
    parse_pk(pk).map(|k| k.hs)
}

/// A public key from its parts, validated.
pub(crate) fn public_key_from_parts(n: &Integer, hs: &Integer) -> Result<PublicKey, BackendError> {
    let pk = write_pk(n, hs);
    parse_pk(&pk)?;
    Ok(pk)
}

/// Key size of a serialized public key.
pub fn public_key_bits(pk: &PublicKey) -> Result<u32, BackendError> {
    parse_pk(pk).map(|k| k.bits)
}

/// The modulus of a kinsey Paillier public key.
pub(crate) fn modulus_of(pk: &PublicKey) -> Result<Integer, BackendError> {
    parse_pk(pk).map(|k| k.n)
}

/// The primes of a kinsey Paillier secret key.
pub(crate) fn primes_of(sk: &SecretKey) -> Result<(Integer, Integer), BackendError> {
    parse_sk(sk).map(|k| (k.p, k.q))
}

/// Ciphertext value (as an integer mod n^2) and back, for the python-paillier format.
pub(crate) fn ciphertext_value(pk: &PublicKey, c: &Ciphertext) -> Result<Integer, BackendError> {
    parse_pk(pk)?.parse_ct(c)
}

pub(crate) fn ciphertext_from_value(
    pk: &PublicKey,
    v: Integer,
) -> Result<Ciphertext, BackendError> {
    let k = parse_pk(pk)?;
    let v = k.check_value(v)?;
    Ok(k.to_ct(&v))
}

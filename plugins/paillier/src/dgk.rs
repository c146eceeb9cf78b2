//! DGK comparison (Damgard, Geisler and Kroigaard 2007/2009) with Veugen's correction, the
//! secure two-party comparison that goes with Paillier in Stage 1.
//!
//! **Scheme.** n = p q with `u | p - 1`, `v_p | p - 1`, `u | q - 1`, `v_q | q - 1`, where `u`
//! is a small prime (the plaintext space Z_u) and `v_p`, `v_q` are `t`-bit primes. `g` has
//! order `u v_p v_q`, `h` order `v_p v_q`. `E(m) = g^m h^r mod n` with `r` of `2.5 t` bits
//! (constant-time fixed-base table). The key holder tests `m = 0` by `E(m)^(v_p) mod p = 1`
//! (constant-time `secure_pow_mod`: `p` and `v_p` are secret). `t = 2 x security` bits.
//!
//! **Comparison.** After the reduction in `kinsey_backend::compare`, the helper holds
//! `X < 2^l` and the learner `Y <= 2^l`, `L = l + 1` bits each.
//! 1. Learner -> helper: `E(Y_i)` for every bit.
//! 2. Helper draws `delta_A` in {0, 1}, `s = 1 - 2 delta_A`, and forms
//!    `c_i = s + X_i - Y_i + 3 sum_{j > i} (X_j xor Y_j)` for every bit `i`, plus Veugen's
//!    extra term `c_-1 = (1 - delta_A) + sum_j (X_j xor Y_j)`, which is zero exactly when
//!    `delta_A = 1` and `X = Y` (without it, equal inputs give the wrong bit half the time).
//!    Each `c` is multiplied by a random nonzero `r in Z_u` (a nonzero value becomes uniform
//!    nonzero, zero stays zero), re-randomised, and the list is shuffled. The helper sends
//!    them with its masked top bit `delta_A xor top(x')`.
//! 3. Learner: `delta_B = [some c decrypts to 0]`. For `delta_A = 0` that is `[X < Y]`; for
//!    `delta_A = 1` it is `[X > Y] or [X = Y]` = `not [X < Y]`. So `[X < Y] = delta_A xor
//!    delta_B` and the learner's output is computed by `learner_output`.
//!
//! The learner sees only zero/nonzero of shuffled blinded values and a uniformly masked
//! bit; the helper sees only semantically secure ciphertexts.

use crate::arith::{
    Cache, be_fixed, random_below, random_prime, random_unit, sec_mod, security_bits,
};
use crate::fixed_base::FixedBase;
use kinsey_backend::compare::{
    Duplex, check_bits, frame, helper_share, learner_output, learner_share, unframe,
};
use kinsey_backend::{BackendError, KeyPair, PublicKey, Rng, SecretKey, SecureComparison};
use rayon::prelude::*;
use rug::integer::{IsPrime, Order};
use rug::{Complete, Integer};
use std::sync::Arc;

/// The plaintext modulus: a prime larger than any `c_i` (at most 3 * 121 + 2).
pub const U: u32 = 65537;
const PK_MAGIC: &[u8; 4] = b"DGKP";
const SK_MAGIC: &[u8; 4] = b"DGKS";

/// DGK for one modulus size.
#[derive(Clone)]
pub struct Dgk {
    key_bits: u32,
    public: Arc<Cache<PkCtx>>,
    secret: Arc<Cache<SkCtx>>,
}

impl std::fmt::Debug for Dgk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dgk({} bits)", self.key_bits)
    }
}

fn t_bits(key_bits: u32) -> u32 {
    (2 * security_bits(key_bits)).max(160)
}

struct PkCtx {
    n: Integer,
    g: Integer,
    width: usize,
    h_table: FixedBase,
}

struct SkCtx {
    pk: Arc<PkCtx>,
    p: Integer,
    vp: Integer,
}

fn bad_key(why: &str) -> BackendError {
    BackendError::BadKey(format!("DGK key: {why}"))
}

fn bad_msg(why: impl std::fmt::Display) -> BackendError {
    BackendError::BadCiphertext(format!("DGK comparison: {why}"))
}

impl Dgk {
    /// DGK comparison with keys of `key_bits` bits.
    pub fn new(key_bits: u32) -> Self {
        Self {
            key_bits,
            public: Arc::default(),
            secret: Arc::default(),
        }
    }

    fn pk_ctx(&self, pk: &PublicKey) -> Result<Arc<PkCtx>, BackendError> {
        self.public.get_or_build(&pk.0, || parse_pk(&pk.0))
    }

    fn sk_ctx(&self, sk: &SecretKey) -> Result<Arc<SkCtx>, BackendError> {
        self.secret.get_or_build(sk.as_bytes(), || {
            let b = sk.as_bytes();
            if b.len() < 8 || &b[..4] != SK_MAGIC {
                return Err(bad_key("not a DGK secret key"));
            }
            let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
            let pkb = b.get(8..8 + len).ok_or_else(|| bad_key("truncated"))?;
            let pk = self.pk_ctx(&PublicKey(pkb.to_vec()))?;
            let rest = &b[8 + len..];
            let half = pk.width / 2;
            if rest.len() <= half {
                return Err(bad_key("truncated"));
            }
            let p = Integer::from_digits(&rest[..half], Order::Msf);
            let vp = Integer::from_digits(&rest[half..], Order::Msf);
            if p <= 2 || !pk.n.is_divisible(&p) || vp <= 1 {
                return Err(bad_key("secret prime does not divide n"));
            }
            Ok(SkCtx { pk, p, vp })
        })
    }
}

fn parse_pk(b: &[u8]) -> Result<PkCtx, BackendError> {
    if b.len() < 12 || &b[..4] != PK_MAGIC {
        return Err(bad_key("not a DGK public key"));
    }
    let bits = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let t = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
    let width = (bits as usize).div_ceil(8);
    if !(128..=65536).contains(&bits) || b.len() != 12 + 3 * width || !(64..=512).contains(&t) {
        return Err(bad_key("wrong length"));
    }
    let part =
        |i: usize| Integer::from_digits(&b[12 + i * width..12 + (i + 1) * width], Order::Msf);
    let (n, g, h) = (part(0), part(1), part(2));
    if n.significant_bits() != bits || n.is_even() {
        return Err(bad_key("modulus does not have the declared size"));
    }
    for x in [&g, &h] {
        if *x <= 1 || *x >= n || x.gcd_ref(&n).complete() != 1 {
            return Err(bad_key("generator is not a unit mod n"));
        }
    }
    let h_table = FixedBase::new(&h, &n, t * 5 / 2).ok_or_else(|| bad_key("h not invertible"))?;
    Ok(PkCtx {
        n,
        g,
        width,
        h_table,
    })
}

impl PkCtx {
    fn parse_ct(&self, b: &[u8]) -> Result<Integer, BackendError> {
        if b.len() != self.width {
            return Err(bad_msg(format!(
                "ciphertext of {} bytes, expected {}",
                b.len(),
                self.width
            )));
        }
        let v = Integer::from_digits(b, Order::Msf);
        if v <= 0 || v >= self.n || v.gcd_ref(&self.n).complete() != 1 {
            return Err(bad_msg("ciphertext outside the unit group mod n"));
        }
        Ok(v)
    }

    fn noise(&self, rng: &mut dyn rand_core::CryptoRng) -> Vec<u8> {
        let mut e = vec![0u8; self.h_table.exp_bytes()];
        rng.fill_bytes(&mut e);
        e
    }

    /// `g^(e mod u)` for a secret small `e` (shifted by u so the exponent is positive).
    fn g_pow_secret(&self, e: i64) -> Integer {
        let e = e.rem_euclid(i64::from(U)) + i64::from(U);
        self.g.clone().secure_pow_mod(&Integer::from(e), &self.n)
    }
}

/// `if bit { b } else { a }` on fixed-width limbs, without a branch on `bit`.
fn ct_choose(a: &Integer, b: &Integer, bit: bool, limbs: usize) -> Integer {
    let mut x = a.to_digits::<u64>(Order::Lsf);
    let mut y = b.to_digits::<u64>(Order::Lsf);
    x.resize(limbs, 0);
    y.resize(limbs, 0);
    let mask = std::hint::black_box(0u64.wrapping_sub(u64::from(bit)));
    let z: Vec<u64> = x
        .iter()
        .zip(&y)
        .map(|(p, q)| p ^ ((p ^ q) & mask))
        .collect();
    Integer::from_digits(&z, Order::Lsf)
}

fn bit_of(v: u128, i: u32) -> bool {
    (v >> i) & 1 == 1
}

/// A prime `p = 2 u v k + 1` of exactly `bits` bits.
fn structured_prime(bits: u32, v: &Integer, rng: &mut dyn rand_core::CryptoRng) -> Integer {
    let uv = (v * U).complete() * 2u32;
    let kbits = bits - uv.significant_bits();
    loop {
        let mut buf = vec![0u8; (kbits as usize).div_ceil(8)];
        rng.fill_bytes(&mut buf);
        let mut k = Integer::from_digits(&buf, Order::Lsf);
        k.keep_bits_mut(kbits);
        k.set_bit(kbits - 1, true);
        let p = (&uv * &k).complete() + 1u32;
        if p.significant_bits() == bits && p.is_probably_prime(40) != IsPrime::No {
            return p;
        }
    }
}

/// An element of order exactly the product of the distinct primes `factors` mod prime `p`.
fn element_of_order(
    p: &Integer,
    factors: &[&Integer],
    rng: &mut dyn rand_core::CryptoRng,
) -> Integer {
    let order = factors.iter().fold(Integer::from(1), |acc, f| acc * *f);
    let cofactor = (p - 1u32).complete() / &order;
    loop {
        let y = random_unit(p, rng).secure_pow_mod(&cofactor, p);
        if factors
            .iter()
            .all(|f| y.clone().secure_pow_mod(&(&order / *f).complete(), p) != 1)
        {
            return y;
        }
    }
}

fn crt(ap: &Integer, p: &Integer, aq: &Integer, q: &Integer) -> Integer {
    // a = aq + q ((ap - aq) q^-1 mod p)
    let qinv = q.clone().invert(p).unwrap_or_default();
    let t = sec_mod(&((ap - aq).complete() * qinv), p);
    aq + t * q
}

impl SecureComparison for Dgk {
    fn describe(&self) -> String {
        format!(
            "DGK with Veugen's correction, {}-bit n, u = {U}, t = {} ({} bits of security)",
            self.key_bits,
            t_bits(self.key_bits),
            security_bits(self.key_bits)
        )
    }

    fn keygen(&self, rng: Rng<'_>) -> Result<KeyPair, BackendError> {
        let half = self.key_bits / 2;
        let t = t_bits(self.key_bits);
        if half < t + 40 {
            return Err(bad_key("modulus too small for the subgroup sizes"));
        }
        let u = Integer::from(U);
        let (p, q, vp, vq) = loop {
            let vp = random_prime(t, rng);
            let vq = random_prime(t, rng);
            if vp == vq {
                continue;
            }
            let p = structured_prime(half, &vp, rng);
            let q = structured_prime(half, &vq, rng);
            if p != q && (&p * &q).complete().significant_bits() == self.key_bits {
                break (p, q, vp, vq);
            }
        };
        let n = (&p * &q).complete();
        let g = crt(
            &element_of_order(&p, &[&u, &vp], rng),
            &p,
            &element_of_order(&q, &[&u, &vq], rng),
            &q,
        );
        let h = crt(
            &element_of_order(&p, &[&vp], rng),
            &p,
            &element_of_order(&q, &[&vq], rng),
            &q,
        );
        let width = (self.key_bits as usize).div_ceil(8);
        let mut pk = PK_MAGIC.to_vec();
        pk.extend_from_slice(&self.key_bits.to_le_bytes());
        pk.extend_from_slice(&t.to_le_bytes());
        for x in [&n, &g, &h] {
            pk.extend_from_slice(&be_fixed(x, width));
        }
        let mut sk = SK_MAGIC.to_vec();
        sk.extend_from_slice(&(pk.len() as u32).to_le_bytes());
        sk.extend_from_slice(&pk);
        sk.extend_from_slice(&be_fixed(&p, width / 2));
        sk.extend_from_slice(&vp.to_digits::<u8>(Order::Msf));
        Ok(KeyPair {
            public: PublicKey(pk),
            secret: SecretKey::new(sk),
        })
    }

    fn check_public_key(&self, pk: &PublicKey) -> Result<(), BackendError> {
        let k = self.pk_ctx(pk)?;
        if k.n.significant_bits() != self.key_bits {
            return Err(bad_key(&format!(
                "{} bits, expected {}",
                k.n.significant_bits(),
                self.key_bits
            )));
        }
        Ok(())
    }

    fn learn(
        &self,
        keys: &KeyPair,
        y: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        rng: Rng<'_>,
    ) -> Result<bool, BackendError> {
        check_bits(bits)?;
        let width = bits + 1;
        let sk = self.sk_ctx(&keys.secret)?;
        let pk = &sk.pk;
        let (big_y, y_top) = learner_share(y, bits);
        let limbs = pk.width.div_ceil(8);
        let noise: Vec<Vec<u8>> = (0..width).map(|_| pk.noise(rng)).collect();
        let enc: Vec<Vec<u8>> = (0..width)
            .into_par_iter()
            .map(|i| {
                let hr = pk.h_table.pow(&noise[i as usize]);
                let ghr = (&hr * &pk.g).complete() % &pk.n;
                be_fixed(&ct_choose(&hr, &ghr, bit_of(big_y, i), limbs), pk.width)
            })
            .collect();
        let parts: Vec<&[u8]> = enc.iter().map(Vec::as_slice).collect();
        ch.send(frame(&parts))?;

        let reply = ch.recv()?;
        let parts = unframe(&reply, width as usize + 2).map_err(bad_msg)?;
        let (cts, masked) = parts.split_at(width as usize + 1);
        let masked = match masked.first().copied() {
            Some([b]) if *b <= 1 => *b == 1,
            _ => return Err(bad_msg("masked bit is not one byte 0 or 1")),
        };
        let cs = cts
            .par_iter()
            .map(|b| pk.parse_ct(b))
            .collect::<Result<Vec<_>, _>>()?;
        // Decide every value (no early exit): E(m)^(v_p) mod p = 1 iff m = 0 mod u.
        let zeros = cs
            .par_iter()
            .map(|c| {
                // powm_sec reduces the base by the secret p itself (mpn_sec_div_r)
                u8::from(Integer::from(c.secure_pow_mod_ref(&sk.vp, &sk.p)) == 1)
            })
            .reduce(|| 0, |a, b| a | b);
        Ok(learner_output(zeros == 1, masked, y_top))
    }

    fn help(
        &self,
        pk: &PublicKey,
        x: i128,
        bits: u32,
        ch: &mut dyn Duplex,
        rng: Rng<'_>,
    ) -> Result<(), BackendError> {
        check_bits(bits)?;
        let width = bits + 1;
        let k = self.pk_ctx(pk)?;
        let limbs = k.width.div_ceil(8);
        let (big_x, x_top) = helper_share(x, bits);
        let msg = ch.recv()?;
        let parts = unframe(&msg, width as usize).map_err(bad_msg)?;
        let ey = parts
            .par_iter()
            .map(|b| k.parse_ct(b))
            .collect::<Result<Vec<_>, _>>()?;
        let ey_inv = ey
            .par_iter()
            .map(|c| {
                c.clone()
                    .invert(&k.n)
                    .map_err(|_| bad_msg("ciphertext not invertible"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // E(X_i xor Y_i) = X_i ? E(1 - Y_i) : E(Y_i)
        let xor: Vec<Integer> = (0..width as usize)
            .into_par_iter()
            .map(|i| {
                let flipped = (&k.g * &ey_inv[i]).complete() % &k.n;
                ct_choose(&ey[i], &flipped, bit_of(big_x, i as u32), limbs)
            })
            .collect();
        // suffix[i] = E(sum_{j > i} xor_j); suffix[width] = E(0) = 1
        let mut suffix = vec![Integer::from(1); width as usize + 1];
        for i in (0..width as usize).rev() {
            suffix[i] = (&suffix[i + 1] * &xor[i]).complete() % &k.n;
        }
        let delta_a = rng.next_u32() & 1 == 1;
        let s = 1 - 2 * i64::from(delta_a);
        let mut terms: Vec<Integer> = (0..width as usize)
            .into_par_iter()
            .map(|i| {
                let gx = k.g_pow_secret(s + i64::from(bit_of(big_x, i as u32)));
                let sq = (&suffix[i + 1] * &suffix[i + 1]).complete() % &k.n;
                let cube = sq * &suffix[i + 1] % &k.n;
                (gx * &ey_inv[i] % &k.n) * cube % &k.n
            })
            .collect();
        // Veugen's correction term.
        terms.push(k.g_pow_secret(1 - i64::from(delta_a)) * &suffix[0] % &k.n);
        let blinds: Vec<(Integer, Vec<u8>)> = terms
            .iter()
            .map(|_| {
                let r = random_below(&Integer::from(U - 1), rng) + 1u32;
                (r, k.noise(rng))
            })
            .collect();
        let mut out: Vec<Vec<u8>> = terms
            .into_par_iter()
            .zip(blinds.par_iter())
            .map(|(c, (r, e))| {
                let blinded = c.secure_pow_mod(r, &k.n) * k.h_table.pow(e) % &k.n;
                be_fixed(&blinded, k.width)
            })
            .collect();
        // Fisher-Yates shuffle so the position of a zero says nothing.
        for i in (1..out.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            out.swap(i, j);
        }
        let masked = [u8::from(delta_a ^ x_top)];
        let mut parts: Vec<&[u8]> = out.iter().map(Vec::as_slice).collect();
        parts.push(&masked);
        ch.send(frame(&parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kinsey_backend::compare::run_pair;
    use rand_core::SeedableRng;

    #[test]
    fn fuzz_dgk_keys_and_messages() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(12);
        kinsey_backend::fuzzing::comparison(&Dgk::new(1024), &mut rng);
    }

    #[test]
    fn dgk_passes_the_comparison_suite() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
        let dgk = Dgk::new(1024);
        kinsey_backend::conformance::run_comparison(&dgk, &mut rng).expect("suite");
    }

    #[test]
    fn dgk_on_equal_values_and_extremes_at_every_width() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(12);
        let dgk = Dgk::new(1024);
        let keys = dgk.keygen(&mut rng).expect("keygen");
        for bits in [1u32, 2, 8, 41] {
            let top = (1i128 << bits) - 1;
            for d in [0, 1, -1, top, -top] {
                // Equal values (d = 0) many times: Veugen's term must make every run right.
                for x in [0i128, 77, -(1 << 90)] {
                    let bit = run_pair(&dgk, &keys, x, d - x, bits, &mut rng).expect("run");
                    assert_eq!(bit, d >= 0, "bits={bits} d={d} x={x}");
                }
            }
        }
    }

    #[test]
    fn keys_have_the_promised_structure() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(13);
        let dgk = Dgk::new(1024);
        let keys = dgk.keygen(&mut rng).expect("keygen");
        dgk.check_public_key(&keys.public).expect("own key");
        let sk = dgk.sk_ctx(&keys.secret).expect("sk");
        let pm1 = (&sk.p - 1u32).complete();
        assert!(pm1.is_divisible(&Integer::from(U)));
        assert!(pm1.is_divisible(&sk.vp));
        assert_eq!(sk.vp.significant_bits(), t_bits(1024));
        assert!(Dgk::new(2048).check_public_key(&keys.public).is_err());
    }
}

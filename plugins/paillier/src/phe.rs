//! python-paillier (`phe`) interchange: `pheutil`'s JSON Web Key files and its serialized
//! encrypted numbers, so keys and ciphertexts move between kinsey and python-paillier.
//!
//! * Public key: `{"kty": "DAJ", "alg": "PAI-GN1", "key_ops": ["encrypt"], "n": b64, "kid": ..}`
//!   with integers as unpadded base64url of their big-endian bytes (`phe.util.int_to_base64`).
//! * Private key: `{"kty": "DAJ", "key_ops": ["decrypt"], "lambda": b64, "mu": b64,
//!   "pub": {public key}, "kid": ..}` as `pheutil genpkey` writes it (lambda = (p-1)(q-1),
//!   mu = lambda^-1 mod n). kinsey also writes `"p"` and `"q"` (python-paillier >= 1.4 builds
//!   `PaillierPrivateKey(pub, p, q)` from them; pheutil ignores extra members). On import the
//!   primes are taken from `p`/`q` when present, else recovered from `n` and `lambda` (any
//!   multiple of Carmichael's function factors n).
//! * Encrypted number: `{"v": "<ciphertext in decimal>", "e": exponent}`, value = m 16^e
//!   (python-paillier's `EncodedNumber.BASE` is 16), so kinsey's 2^-32 fixed point is e = -8.
//!
//! kinsey's public keys also carry `h_s` (the base of its short-exponent randomness); a key
//! imported from python-paillier gets a fresh one.

use crate::arith::random_below;
use crate::keys::{
    ciphertext_from_value, ciphertext_value, hs_of, key_pair_with_public, modulus_of, primes_of,
    public_key_for, public_key_from_parts,
};
use kinsey_backend::{BackendError, Ciphertext, KeyPair, PublicKey, SecretKey};
use rug::integer::{IsPrime, Order};
use rug::{Complete, Integer};
use serde_json::{Value, json};

fn bad(why: impl std::fmt::Display) -> BackendError {
    BackendError::BadKey(format!("python-paillier key: {why}"))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `phe.util.int_to_base64`: unpadded base64url of the big-endian bytes.
pub(crate) fn int_to_base64(x: &Integer) -> String {
    let bytes = x.to_digits::<u8>(Order::Msf);
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(B64[((v >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// `phe.util.base64_to_int` (padding optional).
pub(crate) fn base64_to_int(s: &str) -> Result<Integer, BackendError> {
    let s = s.trim_end_matches('=');
    let mut bits = 0u32;
    let mut acc = 0u32;
    let mut bytes = Vec::with_capacity(s.len() * 3 / 4);
    for c in s.bytes() {
        let v = B64
            .iter()
            .position(|&b| b == c)
            .or(match c {
                b'+' => Some(62),
                b'/' => Some(63),
                _ => None,
            })
            .ok_or_else(|| bad(format!("'{}' is not base64url", c as char)))?;
        acc = acc << 6 | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if s.len() % 4 == 1 {
        return Err(bad("truncated base64url"));
    }
    Ok(Integer::from_digits(&bytes, Order::Msf))
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a str, BackendError> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("member \"{name}\" is missing or not a string")))
}

fn check_kind(v: &Value, op: &str) -> Result<(), BackendError> {
    if field(v, "kty")? != "DAJ" {
        return Err(bad("\"kty\" is not \"DAJ\""));
    }
    let ops = v
        .get("key_ops")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("member \"key_ops\" is missing"))?;
    if !ops.iter().any(|o| o.as_str() == Some(op)) {
        return Err(bad(format!("\"key_ops\" does not contain \"{op}\"")));
    }
    Ok(())
}

/// Member of a public JWK that carries kinsey's `h_s` (python-paillier ignores it).
pub(crate) const HS_MEMBER: &str = "kinsey_hs";

fn public_json(pk: &PublicKey, kid: &str, with_hs: bool) -> Result<Value, BackendError> {
    let mut v = json!({
        "kty": "DAJ",
        "alg": "PAI-GN1",
        "key_ops": ["encrypt"],
        "n": int_to_base64(&modulus_of(pk)?),
        "kid": kid,
    });
    if with_hs {
        v[HS_MEMBER] = Value::from(int_to_base64(&hs_of(pk)?));
    }
    Ok(v)
}

/// A kinsey Paillier public key as a pheutil public JWK; `with_hs` keeps kinsey's `h_s`
/// (kinsey's own key files) or drops it (a file for python-paillier).
pub fn public_key_to_jwk(pk: &PublicKey, kid: &str, with_hs: bool) -> Result<String, BackendError> {
    Ok(public_json(pk, kid, with_hs)?.to_string())
}

/// A kinsey Paillier key pair as a pheutil private JWK (with `p` and `q` added).
pub fn private_key_to_jwk(
    pk: &PublicKey,
    sk: &SecretKey,
    kid: &str,
    with_hs: bool,
) -> Result<String, BackendError> {
    let (p, q) = primes_of(sk)?;
    let n = (&p * &q).complete();
    let lambda = (&p - 1u32).complete() * (&q - 1u32).complete();
    let mu = lambda
        .clone()
        .invert(&n)
        .map_err(|_| bad("lambda not invertible mod n"))?;
    Ok(json!({
        "kty": "DAJ",
        "key_ops": ["decrypt"],
        "lambda": int_to_base64(&lambda),
        "mu": int_to_base64(&mu),
        "p": int_to_base64(&p),
        "q": int_to_base64(&q),
        "pub": public_json(pk, kid, with_hs)?,
        "kid": kid,
    })
    .to_string())
}

fn parse(text: &str) -> Result<Value, BackendError> {
    serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))
}

fn public_modulus(v: &Value) -> Result<Integer, BackendError> {
    check_kind(v, "encrypt")?;
    if field(v, "alg")? != "PAI-GN1" {
        return Err(bad("\"alg\" is not \"PAI-GN1\" (g = n + 1)"));
    }
    let n = base64_to_int(field(v, "n")?)?;
    if n.significant_bits() < 128 || n.is_even() {
        return Err(bad("modulus n is too small or even"));
    }
    Ok(n)
}

fn public_from_value(
    v: &Value,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<PublicKey, BackendError> {
    let n = public_modulus(v)?;
    match v.get(HS_MEMBER) {
        Some(h) => {
            let h = h
                .as_str()
                .ok_or_else(|| bad(format!("member \"{HS_MEMBER}\" is not a string")))?;
            public_key_from_parts(&n, &base64_to_int(h)?)
        }
        None => Ok(public_key_for(&n, rng)),
    }
}

/// Import a pheutil public JWK; without kinsey's `h_s` member, `rng` draws a fresh one.
pub fn public_key_from_jwk(
    text: &str,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<PublicKey, BackendError> {
    public_from_value(&parse(text)?, rng)
}

/// Import a pheutil private JWK (with `p`/`q`, or with `lambda` only).
pub fn private_key_from_jwk(
    text: &str,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<KeyPair, BackendError> {
    let v = parse(text)?;
    check_kind(&v, "decrypt")?;
    let public = public_from_value(
        v.get("pub")
            .ok_or_else(|| bad("member \"pub\" is missing"))?,
        rng,
    )?;
    let n = modulus_of(&public)?;
    let (p, q) = match (v.get("p"), v.get("q")) {
        (Some(_), Some(_)) => (
            base64_to_int(field(&v, "p")?)?,
            base64_to_int(field(&v, "q")?)?,
        ),
        _ => factor_with_lambda(&n, &base64_to_int(field(&v, "lambda")?)?, rng)?,
    };
    if (&p * &q).complete() != n || p == q || p <= 2 || q <= 2 {
        return Err(bad("p q does not equal the public modulus"));
    }
    for f in [&p, &q] {
        if f.is_probably_prime(30) == IsPrime::No {
            return Err(bad("a factor of n is not prime"));
        }
    }
    Ok(key_pair_with_public(public, &p, &q))
}

/// Factor n = p q given a multiple of lambda(n): first as phi(n) (p + q = n - phi + 1), then
/// by the randomized square-root-of-one method.
fn factor_with_lambda(
    n: &Integer,
    lambda: &Integer,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<(Integer, Integer), BackendError> {
    let s = (n - lambda).complete() + 1u32;
    let disc = (&s * &s).complete() - (n * 4u32).complete();
    if disc > 0 && disc.is_perfect_square() {
        let r = disc.sqrt();
        let p = (&s - &r).complete() / 2u32;
        let q = (&s + &r).complete() / 2u32;
        if (&p * &q).complete() == *n {
            return Ok((p, q));
        }
    }
    if *lambda <= 1 || lambda.is_odd() {
        return Err(bad(
            "\"lambda\" is not a multiple of Carmichael's function of n",
        ));
    }
    let k = lambda.find_one(0).unwrap_or(0);
    let t = (lambda >> k).complete();
    for _ in 0..64 {
        let a = random_below(n, rng);
        if a <= 1 {
            continue;
        }
        let mut x = match a.pow_mod_ref(&t, n) {
            Some(x) => Integer::from(x),
            None => continue,
        };
        for _ in 0..k {
            let y = (&x * &x).complete() % n;
            if y == 1 && x != 1 && x != (n - 1u32).complete() {
                let p = (&x - 1u32).complete().gcd(n);
                let q = (n / &p).complete();
                return Ok((p, q));
            }
            x = y;
        }
    }
    Err(bad("could not factor n from \"lambda\""))
}

/// A ciphertext as python-paillier's serialized `EncryptedNumber`; `exponent` is the base-16
/// exponent (-8 for kinsey's 2^-32 fixed point).
pub fn encrypted_to_json(
    pk: &PublicKey,
    c: &Ciphertext,
    exponent: i32,
) -> Result<String, BackendError> {
    let v = ciphertext_value(pk, c)?;
    Ok(json!({"v": v.to_string(), "e": exponent, "kinsey_key": key_id(pk)?}).to_string())
}

/// The key fingerprint kinsey adds to the numbers it writes (`kinsey_key`, ignored by
/// python-paillier): the low 64 bits of n, in hex.
fn key_id(pk: &PublicKey) -> Result<String, BackendError> {
    let n = modulus_of(pk)?;
    Ok(crate::keys::fingerprint(&n)
        .iter()
        .rev()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Parse a serialized `EncryptedNumber`; returns the ciphertext (validated under `pk`) and
/// its base-16 exponent.
pub fn encrypted_from_json(pk: &PublicKey, text: &str) -> Result<(Ciphertext, i32), BackendError> {
    let badc = |why: &str| BackendError::BadCiphertext(format!("python-paillier number: {why}"));
    let v: Value = serde_json::from_str(text).map_err(|e| badc(&format!("not JSON: {e}")))?;
    let digits = v
        .get("v")
        .and_then(Value::as_str)
        .ok_or_else(|| badc("member \"v\" is missing or not a string"))?;
    let e = v
        .get("e")
        .and_then(Value::as_i64)
        .and_then(|e| i32::try_from(e).ok())
        .ok_or_else(|| badc("member \"e\" is missing or not an integer"))?;
    if let Some(k) = v.get("kinsey_key") {
        let mine = key_id(pk)?;
        match k.as_str() {
            Some(k) if k == mine => {}
            Some(k) => {
                return Err(badc(&format!(
                    "made under another key (its key fingerprint is {k}, this key's is {mine})"
                )));
            }
            None => return Err(badc("member \"kinsey_key\" is not a string")),
        }
    }
    let value =
        Integer::from_str_radix(digits, 10).map_err(|_| badc("\"v\" is not a decimal integer"))?;
    Ok((ciphertext_from_value(pk, value)?, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Paillier;
    use kinsey_backend::AdditiveHe;
    use rand_core::SeedableRng;

    // Made by python-paillier 1.5.0 (phe.generate_paillier_keypair(n_length=512)), serialized
    // the way pheutil does, and `pheutil encrypt`-style numbers: 1.5 at e = -8 and -7 at e = 0.
    const PHE_PRIVATE: &str = include_str!("../testdata/phe_private.json");
    const PHE_PUBLIC: &str = include_str!("../testdata/phe_public.json");
    const PHE_NUMBER: &str = include_str!("../testdata/phe_number.json");
    const PHE_NEGATIVE: &str = include_str!("../testdata/phe_negative.json");

    /// pheutil's JSON: mutated keys and numbers are refused or parse to something that
    /// validates (a number accepted under the key is in its group); nothing panics.
    #[test]
    fn fuzz_phe_json() {
        let mut r = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let pk = public_key_from_jwk(PHE_PUBLIC, &mut r).expect("public");
        let r = std::cell::RefCell::new(r);
        kinsey_fuzz::fuzz_text("pheutil keys", &[PHE_PUBLIC, PHE_PRIVATE], |t| {
            let mut r = r.borrow_mut();
            if let Ok(p) = public_key_from_jwk(t, &mut *r) {
                crate::keys::parse_pk(&p).map_err(|e| format!("accepted a bad public key: {e}"))?;
            }
            let _ = private_key_from_jwk(t, &mut *r);
            Ok(())
        });
        kinsey_fuzz::fuzz_text("pheutil numbers", &[PHE_NUMBER, PHE_NEGATIVE], |t| {
            if let Ok((c, _)) = encrypted_from_json(&pk, t) {
                crate::keys::ciphertext_value(&pk, &c)
                    .map_err(|e| format!("accepted a bad number: {e}"))?;
            }
            Ok(())
        });
    }

    #[test]
    fn base64url_matches_phe() {
        for v in [1u64, 255, 256, 65535, 1 << 40, u64::MAX] {
            let x = Integer::from(v);
            assert_eq!(base64_to_int(&int_to_base64(&x)).expect("ok"), x);
        }
        // phe.util.int_to_base64(65537) == "AQAB"
        assert_eq!(int_to_base64(&Integer::from(65537)), "AQAB");
        assert!(base64_to_int("A*B").is_err());
    }

    #[test]
    fn python_paillier_keys_and_numbers_import() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let kp = private_key_from_jwk(PHE_PRIVATE, &mut rng).expect("private key");
        let b = Paillier::new(512, true).expect("test key size");
        let (c, e) = encrypted_from_json(&kp.public, PHE_NUMBER).expect("number");
        assert_eq!(e, -8);
        // 1.5 * 16^8
        assert_eq!(b.decrypt(&kp.secret, &c).expect("decrypt"), 3i128 << 31);
        let (c, e) = encrypted_from_json(&kp.public, PHE_NEGATIVE).expect("number");
        assert_eq!((b.decrypt(&kp.secret, &c).expect("decrypt"), e), (-7, 0));
        // The public file gives the same modulus.
        let pk = public_key_from_jwk(PHE_PUBLIC, &mut rng).expect("public key");
        assert_eq!(
            modulus_of(&pk).expect("n"),
            modulus_of(&kp.public).expect("n")
        );
        // Without p and q the primes come from lambda.
        let mut v: Value = serde_json::from_str(PHE_PRIVATE).expect("json");
        if let Some(o) = v.as_object_mut() {
            o.remove("p");
            o.remove("q");
        }
        let kp2 = private_key_from_jwk(&v.to_string(), &mut rng).expect("from lambda");
        assert_eq!(
            primes_of(&kp2.secret).expect("pq"),
            primes_of(&kp.secret).expect("pq")
        );
    }

    #[test]
    fn round_trip_through_the_phe_formats() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(6);
        let b = Paillier::new(512, true).expect("test key size");
        let kp = b.keygen(&mut rng).expect("keygen");
        let sk_json = private_key_to_jwk(&kp.public, &kp.secret, "test", true).expect("export");
        let back = private_key_from_jwk(&sk_json, &mut rng).expect("import");
        assert_eq!(back.public, kp.public, "kinsey's own files keep h_s");
        let plain = private_key_to_jwk(&kp.public, &kp.secret, "test", false).expect("export");
        assert!(!plain.contains(HS_MEMBER));
        let pk_json = public_key_to_jwk(&kp.public, "test", false).expect("public");
        let pk2 = public_key_from_jwk(&pk_json, &mut rng).expect("import public");
        assert_eq!(
            modulus_of(&pk2).expect("n"),
            modulus_of(&kp.public).expect("n")
        );
        let c = b.encrypt(&kp.public, -123456, &mut rng).expect("enc");
        let text = encrypted_to_json(&kp.public, &c, -8).expect("json");
        let (c2, e) = encrypted_from_json(&back.public, &text).expect("parse");
        assert_eq!(e, -8);
        assert_eq!(b.decrypt(&back.secret, &c2).expect("dec"), -123456);
        // lambda-only recovery (the shape pheutil writes) factors any phi.
        let (p, q) = primes_of(&kp.secret).expect("pq");
        let n = (&p * &q).complete();
        let phi = (&p - 1u32).complete() * (&q - 1u32).complete();
        let lcm = phi.clone() / (&p - 1u32).complete().gcd(&(&q - 1u32).complete());
        for l in [phi, lcm] {
            let (a, b2) = factor_with_lambda(&n, &l, &mut rng).expect("factor");
            assert_eq!((&a * &b2).complete(), n);
            assert!(a > 1 && b2 > 1);
        }
    }

    #[test]
    fn bad_files_name_the_problem() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let e = private_key_from_jwk("{", &mut rng).expect_err("not json");
        assert!(e.to_string().contains("not JSON"), "{e}");
        let e = public_key_from_jwk(r#"{"kty":"RSA","key_ops":["encrypt"]}"#, &mut rng)
            .expect_err("kty");
        assert!(e.to_string().contains("DAJ"), "{e}");
        let e = public_key_from_jwk(
            r#"{"kty":"DAJ","alg":"PAI-GN2","key_ops":["encrypt"],"n":"AQAB"}"#,
            &mut rng,
        )
        .expect_err("alg");
        assert!(e.to_string().contains("PAI-GN1"), "{e}");
        let kp = private_key_from_jwk(PHE_PRIVATE, &mut rng).expect("key");
        let mut v: Value = serde_json::from_str(PHE_PRIVATE).expect("json");
        v["p"] = Value::from("AQAB");
        assert!(private_key_from_jwk(&v.to_string(), &mut rng).is_err());
        let e = encrypted_from_json(&kp.public, r#"{"v": "0", "e": -8}"#).expect_err("zero");
        assert!(e.to_string().contains("outside"), "{e}");
        let e = encrypted_from_json(&kp.public, r#"{"v": "12x", "e": -8}"#).expect_err("digits");
        assert!(e.to_string().contains("decimal"), "{e}");
    }
}

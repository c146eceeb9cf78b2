//! Arithmetic helpers shared by Paillier and DGK: security levels, per-key table caches,
//! random units, values and primes below a bound, fixed-width encoding, and the
//! constant-time reduction by a secret modulus.

use kinsey_backend::BackendError;
use rug::integer::{IsPrime, Order};
use rug::{Complete, Integer};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

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

/// Bits of the secret encryption exponent: four times the security level (DJN's choice of
/// twice, doubled), at least 256.
pub fn randomness_bits(key_bits: u32) -> u32 {
    (4 * security_bits(key_bits)).max(256)
}

/// Cache of per-key tables (building one costs about 1,800 multiplications, and a key
/// holder's secret-modulus tables as many constant-time reductions). A key's tables are
/// built once even when many threads ask at the same time (the parties of an in-process
/// run all encrypt under `xi` at once): the first builds, the others wait for it.
pub(crate) struct Cache<T> {
    map: Mutex<HashMap<Vec<u8>, Arc<T>>>,
    /// Keys whose tables a thread is building now.
    building: Mutex<HashSet<Vec<u8>>>,
    /// Signalled (under `building`) when a build ends.
    built: Condvar,
}

impl<T> Default for Cache<T> {
    fn default() -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            building: Mutex::new(HashSet::new()),
            built: Condvar::new(),
        }
    }
}

/// Clears a key's "building" mark when its build ends, however it ends (an error or a
/// panic included), and wakes the threads waiting for it.
struct Building<'a, T> {
    cache: &'a Cache<T>,
    key: &'a [u8],
}

impl<T> Drop for Building<'_, T> {
    fn drop(&mut self) {
        let mut b = self
            .cache
            .building
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        b.remove(self.key);
        self.cache.built.notify_all();
    }
}

impl<T> Cache<T> {
    fn get(&self, key: &[u8]) -> Result<Option<Arc<T>>, BackendError> {
        Ok(self.map.lock().map_err(poisoned)?.get(key).cloned())
    }

    pub(crate) fn get_or_build(
        &self,
        key: &[u8],
        build: impl FnOnce() -> Result<T, BackendError>,
    ) -> Result<Arc<T>, BackendError> {
        if let Some(v) = self.get(key)? {
            return Ok(v);
        }
        // Lock order: `building`, then `map`. A builder inserts into `map` before it clears
        // its mark under `building`, so a woken waiter finds the tables.
        let mut b = self.building.lock().map_err(poisoned)?;
        loop {
            if let Some(v) = self.get(key)? {
                return Ok(v);
            }
            if b.insert(key.to_vec()) {
                break;
            }
            b = self.built.wait(b).map_err(poisoned)?;
        }
        drop(b);
        let _mark = Building { cache: self, key };
        let v = Arc::new(build()?);
        let mut m = self.map.lock().map_err(poisoned)?;
        if m.len() >= 32 {
            m.clear();
        }
        m.insert(key.to_vec(), v.clone());
        Ok(v)
    }
}

pub(crate) fn poisoned<E>(_: E) -> BackendError {
    BackendError::Other("key cache lock poisoned".into())
}

/// `count` secret exponents of `bytes` bytes each, from the caller's CSPRNG.
pub(crate) fn exponents(
    count: usize,
    bytes: usize,
    rng: &mut dyn rand_core::CryptoRng,
) -> Vec<Vec<u8>> {
    (0..count)
        .map(|_| {
            let mut e = vec![0u8; bytes];
            rng.fill_bytes(&mut e);
            e
        })
        .collect()
}

/// Uniform r in [1, n) with gcd(r, n) = 1, from the caller's CSPRNG.
pub(crate) fn random_unit(n: &Integer, rng: &mut dyn rand_core::CryptoRng) -> Integer {
    loop {
        let r = random_below(n, rng);
        if r > 0 && r.gcd_ref(n).complete() == 1 {
            return r;
        }
    }
}

/// Uniform in [0, n) up to 2^-128 statistical distance.
pub(crate) fn random_below(n: &Integer, rng: &mut dyn rand_core::CryptoRng) -> Integer {
    let bytes = (n.significant_bits() as usize).div_ceil(8) + 16;
    let mut buf = vec![0u8; bytes];
    rng.fill_bytes(&mut buf);
    Integer::from_digits(&buf, Order::Lsf) % n
}

/// A random prime of exactly `bits` bits with the top two bits set (so p q has 2 bits bits).
pub(crate) fn random_prime(bits: u32, rng: &mut dyn rand_core::CryptoRng) -> Integer {
    loop {
        let mut buf = vec![0u8; (bits as usize).div_ceil(8)];
        rng.fill_bytes(&mut buf);
        let mut x = Integer::from_digits(&buf, Order::Lsf);
        x.keep_bits_mut(bits);
        x.set_bit(bits - 1, true);
        x.set_bit(bits - 2, true);
        x.set_bit(0, true);
        let p = x.next_prime();
        if p.significant_bits() == bits && p.is_probably_prime(40) != IsPrime::No {
            return p;
        }
    }
}

pub(crate) fn be_fixed(x: &Integer, width: usize) -> Vec<u8> {
    let d = x.to_digits::<u8>(Order::Msf);
    let mut out = vec![0u8; width.saturating_sub(d.len())];
    out.extend_from_slice(&d);
    out
}

/// `x mod m` for a secret odd modulus `m`, through GMP's side-channel silent
/// `mpz_powm_sec` (its base reduction is `mpn_sec_div_r`); the result is in `[0, m)`
/// whatever the sign of `x`. Plain `%` is a GMP division whose running time depends on the
/// values, which a secret modulus must not meet.
pub(crate) fn sec_mod(x: &Integer, m: &Integer) -> Integer {
    Integer::from(x.secure_pow_mod_ref(&Integer::from(1), m))
}

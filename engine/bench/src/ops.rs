//! Per-operation timing of any backend (`kinsey bench backend`): the operations the
//! protocol runs, each on a batch, with the bootstraps each one costs where the backend
//! counts them (TFHE).

use kinsey_backend::{AdditiveHe, Ciphertext, compare::run_pair};
use kinsey_core::{Error, Result};
use kinsey_protocol::KEY_BITS;
use serde::Serialize;
use std::time::Instant;

/// One operation's cost.
#[derive(Debug, Clone, Serialize)]
pub struct OpCost {
    /// What was measured.
    pub op: String,
    /// Elements in the batch.
    pub count: usize,
    /// Seconds per element (wall clock, all cores).
    pub seconds_each: f64,
    /// Bootstraps per element, where the backend counts them.
    pub bootstraps_each: Option<f64>,
}

/// Every operation's cost, and the sizes of what travels.
#[derive(Debug, Clone, Serialize)]
pub struct OpTable {
    /// The backend's description.
    pub backend: String,
    /// Serialized public key, bytes.
    pub public_key_bytes: usize,
    /// Serialized secret key, bytes.
    pub secret_key_bytes: usize,
    /// Serialized ciphertext, bytes.
    pub ciphertext_bytes: usize,
    /// Per operation.
    pub ops: Vec<OpCost>,
}

fn be(e: kinsey_backend::BackendError) -> Error {
    Error::Numerical(format!("backend operation failed: {e}"))
}

/// Time each operation on `count` elements (general multiplication and the comparison on
/// at most 2), checking every result against the plaintext.
pub fn operations(
    he: &dyn AdditiveHe,
    count: usize,
    rng: &mut dyn rand_core::CryptoRng,
) -> Result<OpTable> {
    let count = count.max(1);
    let mut ops = Vec::new();
    let mut time = |op: &str, n: usize, f: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let b0 = he.bootstraps();
        let t = Instant::now();
        f()?;
        let s = t.elapsed().as_secs_f64() / n as f64;
        let boot = he
            .bootstraps()
            .zip(b0)
            .map(|(a, b)| a.saturating_sub(b) as f64 / n as f64);
        ops.push(OpCost {
            op: op.into(),
            count: n,
            seconds_each: s,
            bootstraps_each: boot,
        });
        Ok(())
    };
    let mut kp = None;
    time("keygen", 1, &mut || {
        kp = Some(he.keygen(rng).map_err(be)?);
        Ok(())
    })?;
    let kp = kp.ok_or_else(|| Error::Numerical("no key".into()))?;
    let (pk, sk) = (&kp.public, &kp.secret);
    let m: Vec<i128> = (0..count as i128)
        .map(|i| (i - 3) * 0x1234_5678_9abc)
        .collect();
    let mut c = Vec::new();
    time("encrypt (public key)", count, &mut || {
        c = he.encrypt_batch(pk, &m, rng).map_err(be)?;
        Ok(())
    })?;
    let mut h = Vec::new();
    time("encrypt (key holder)", count, &mut || {
        h = he.encrypt_with_secret_batch(sk, &m, rng).map_err(be)?;
        Ok(())
    })?;
    time("decrypt", count, &mut || {
        check(he.decrypt_batch(sk, &c).map_err(be)?, &m, "decrypt")
    })?;
    let twice: Vec<i128> = m.iter().map(|v| 2 * v).collect();
    let mut s = Vec::new();
    time("add", count, &mut || {
        s = he.add_batch(pk, &c, &h).map_err(be)?;
        Ok(())
    })?;
    check(he.decrypt_batch(sk, &s).map_err(be)?, &twice, "add")?;
    time("add plaintext", count, &mut || {
        let p = he.add_plain_batch(pk, &c, &m).map_err(be)?;
        check(
            he.decrypt_batch(sk, &p).map_err(be)?,
            &twice,
            "add plaintext",
        )
    })?;
    let few = count.min(2);
    time(
        "multiply by 40-bit plaintext (any ciphertext)",
        few,
        &mut || {
            let k: Vec<i128> = (0..few as i128).map(|i| (1 << 39) + i).collect();
            let p = he.mul_plain_batch(pk, &c[..few], &k).map_err(be)?;
            let want: Vec<i128> = m.iter().zip(&k).map(|(a, b)| a * b).collect();
            check(he.decrypt_batch(sk, &p).map_err(be)?, &want, "multiply")
        },
    )?;
    selection(he, pk, sk, count, rng, &mut time)?;
    let cmp = he.comparison();
    let mut ck = None;
    time("comparison keygen", 1, &mut || {
        ck = Some(cmp.keygen(rng).map_err(be)?);
        Ok(())
    })?;
    let ck = ck.ok_or_else(|| Error::Numerical("no key".into()))?;
    time(
        &format!("compare ({KEY_BITS}-bit, both roles)"),
        few,
        &mut || {
            for i in 0..few as i128 {
                let bit = run_pair(
                    cmp.as_ref(),
                    &ck,
                    1 << 70,
                    -(1 << 70) + i - 1,
                    KEY_BITS,
                    rng,
                )
                .map_err(be)?;
                if bit != (i >= 1) {
                    return Err(Error::Numerical("comparison: wrong bit".into()));
                }
            }
            Ok(())
        },
    )?;
    Ok(OpTable {
        backend: he.info().scheme,
        public_key_bytes: pk.0.len(),
        secret_key_bytes: sk.as_bytes().len(),
        ciphertext_bytes: c.first().map_or(0, |x| x.0.len()),
        ops,
    })
}

/// A timing hook: `(operation, elements, work)`.
type Time<'a> = dyn FnMut(&str, usize, &mut dyn FnMut() -> Result<()>) -> Result<()> + 'a;

fn check(got: Vec<i128>, want: &[i128], what: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::Numerical(format!("{what}: wrong result")))
    }
}

/// Stage 2's operations: the indicator, the selection, its re-randomisation, the chain's
/// disjoint sum and the one sanitisation of the sum.
fn selection(
    he: &dyn AdditiveHe,
    pk: &kinsey_backend::PublicKey,
    sk: &kinsey_backend::SecretKey,
    count: usize,
    rng: &mut dyn rand_core::CryptoRng,
    time: &mut Time<'_>,
) -> Result<()> {
    let mut ind = Vec::new();
    time("encrypt indicator bit (key holder)", 1, &mut || {
        ind = he
            .encrypt_indicator_with_secret_batch(sk, &[true], kinsey_protocol::NOISE_BITS + 1, rng)
            .map_err(be)?;
        Ok(())
    })?;
    let other = he
        .encrypt_indicator_with_secret_batch(sk, &[false], kinsey_protocol::NOISE_BITS + 1, rng)
        .map_err(be)?;
    // Stage 2's values: noise offset into [0, 2^81).
    let noise: Vec<i128> = (0..count as i128)
        .map(|i| kinsey_protocol::NOISE_OFFSET - (1 << 79) + 977 * i)
        .collect();
    let first = |v: &[Ciphertext]| -> Result<Ciphertext> {
        v.first()
            .cloned()
            .ok_or_else(|| Error::Numerical("no indicator".into()))
    };
    let (i1, i0) = (first(&ind)?, first(&other)?);
    let mut sel = Vec::new();
    time("select (indicator x 81-bit plaintext)", count, &mut || {
        sel = he.mul_plain_one_batch(pk, &i1, &noise).map_err(be)?;
        Ok(())
    })?;
    let mut rr = Vec::new();
    time("re-randomise (a selection)", count, &mut || {
        rr = he.rerandomize_batch(pk, &sel, rng).map_err(be)?;
        Ok(())
    })?;
    check(he.decrypt_batch(sk, &rr).map_err(be)?, &noise, "select")?;
    let z = he.mul_plain_one_batch(pk, &i0, &noise).map_err(be)?;
    let z = he.rerandomize_batch(pk, &z, rng).map_err(be)?;
    let mut d = Vec::new();
    time("add (disjoint, Stage 2 chain)", count, &mut || {
        d = he.add_disjoint_batch(pk, &rr, &z).map_err(be)?;
        Ok(())
    })?;
    check(
        he.decrypt_batch(sk, &d).map_err(be)?,
        &noise,
        "disjoint add",
    )?;
    time("sanitise (Stage 2 sum, once)", count, &mut || {
        let s = he.sanitize_batch(pk, &d, rng).map_err(be)?;
        check(he.decrypt_batch(sk, &s).map_err(be)?, &noise, "sanitise")
    })?;
    Ok(())
}
